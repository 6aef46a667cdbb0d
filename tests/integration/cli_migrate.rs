//! Offline `migrate -f`: GitOps manifest conversion, the changed documents, `--diff`, `--dry-run`,
//! `--check`, `--in-place` (no cluster).

use assert_cmd::Command;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const EXAMPLE: &str = "examples/snapshot/pools.yaml";

fn plugin() -> Command {
    let mut command = assert_cmd::cargo::cargo_bin_cmd!("kubectl-ciliumpool");
    command.env("NO_COLOR", "1").env_remove("KUBECONFIG");
    command
}

/// Splits a YAML stream on `---` lines (what the converter guarantees to keep).
fn chunks(text: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.starts_with("---") && !out.last().unwrap().is_empty() {
            out.push(String::new());
        }
        out.last_mut().unwrap().push_str(line);
    }
    out
}

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("YAML document")
}

#[test]
fn prints_only_the_documents_that_change() {
    let input = std::fs::read_to_string(EXAMPLE).unwrap();
    let assert = plugin().args(["migrate", "-f", EXAMPLE]).assert().success();
    let output = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let printed: Vec<String> = chunks(&output).into_iter().filter(|c| !c.trim().is_empty()).collect();
    let sources: Vec<&str> = printed.iter().map(|c| c.lines().nth(1).unwrap()).collect();
    // blue (already upstream v2) does not change and is not printed; each document names its
    // file and place.
    assert_eq!(
        sources,
        [
            "# Source: examples/snapshot/pools.yaml, document 1 of 4 (line 1)",
            "# Source: examples/snapshot/pools.yaml, document 3 of 4 (line 51)",
            "# Source: examples/snapshot/pools.yaml, document 4 of 4 (line 78)",
        ]
    );
    let before = chunks(&input);
    for (chunk, index) in printed.iter().zip([0, 2, 3]) {
        let (old, new) = (yaml(&before[index]), yaml(chunk));
        assert_eq!(new["apiVersion"], "cilium.io/v2");
        assert_eq!(new["metadata"]["annotations"]["cilium.io/migrated-to-v2"], "true");
        assert_eq!(new["metadata"]["name"], old["metadata"]["name"]);
        if old["apiVersion"] == "cilium.io/v2alpha1" {
            let mut expected = old.clone();
            expected["apiVersion"] = "cilium.io/v2".into();
            expected["metadata"]["annotations"] = serde_json::json!({"cilium.io/migrated-to-v2": "true"});
            assert_eq!(new, expected, "only apiVersion and the migration mark change");
        }
    }
    // The printed documents need nothing more: converting them again prints nothing.
    let tmp = tempfile::tempdir().unwrap();
    let converted = tmp.path().join("pools.yaml");
    std::fs::write(&converted, &output).unwrap();
    let again = plugin().args(["migrate", "-f"]).arg(&converted).assert().success();
    assert_eq!(again.get_output().stdout, b"");
    assert_eq!(String::from_utf8_lossy(&again.get_output().stderr), "nothing to convert in 1 file(s)\n");
    // The converted documents still make a valid snapshot.
    plugin().args(["usage", "-o", "json", "-f"]).arg(&converted).assert().success();
}

/// The CFP pool green (`cidrs[].reservedRange`) becomes upstream `pool[].reservedRanges`, and
/// the upstream pool blue becomes CFP: after `--in-place`, `--check` passes for either target.
#[test]
fn in_place_then_check_passes_for_both_dialects() {
    for (schema, green_cidrs) in [("upstream", serde_json::json!(["10.60.0.0/20", "10.61.0.0/20"])), ("cfp", Value::Null)] {
        let tmp = tempfile::tempdir().unwrap();
        let pools = tmp.path().join("pools.yaml");
        std::fs::copy(EXAMPLE, &pools).unwrap();
        plugin().args(["migrate", "--check", "--schema", schema, "-f"]).arg(&pools).assert().code(1);
        plugin().args(["migrate", "--in-place", "--schema", schema, "-f"]).arg(&pools).assert().success();
        let check = plugin().args(["migrate", "--check", "--schema", schema, "-f"]).arg(&pools).assert().code(0);
        assert!(String::from_utf8_lossy(&check.get_output().stdout).starts_with("All CiliumPodIPPool manifests use cilium.io/v2"));
        let text = std::fs::read_to_string(&pools).unwrap();
        let docs = chunks(&text);
        let (blue, green) = (yaml(&docs[1]), yaml(&docs[2]));
        if schema == "upstream" {
            assert_eq!(green["spec"]["ipv4"]["cidrs"], green_cidrs);
            assert_eq!(
                green["spec"]["ipv4"]["pool"],
                serde_json::json!([{"cidr": "10.60.0.0/20", "reservedRanges": [{"start": "10.60.0.0", "end": "10.60.0.31"}]}])
            );
        } else {
            assert_eq!(
                blue["spec"]["ipv4"]["cidrs"],
                serde_json::json!([{"cidr": "10.40.0.0/16", "reservedRange": "10.40.255.254-10.40.255.254"},
                                   {"cidr": "10.41.0.0/16", "reservedRange": "10.41.0.0-10.41.255.255"}])
            );
            assert!(blue["spec"]["ipv4"].get("pool").is_none());
        }
        // The same reservations are seen before and after (nothing lost in either direction).
        let reserved = |path: &Path| {
            let out =
                plugin().args(["reserve-range", "--list", "-o", "json", "-f"]).arg(path).assert().success().get_output().stdout.clone();
            serde_json::from_slice::<Value>(&out).unwrap()["reservedRanges"].clone()
        };
        assert_eq!(reserved(&pools), reserved(Path::new(EXAMPLE)), "{schema}");
    }
}

#[test]
fn diff_is_a_unified_diff_with_kubectl_diff_exit_codes() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("sub")).unwrap();
    std::fs::copy(EXAMPLE, tmp.path().join("sub/pools.yaml")).unwrap();
    std::fs::copy("examples/snapshot/ciliumnodes.yaml", tmp.path().join("nodes.yaml")).unwrap();
    let before = snapshot_dir(&tmp.path().join("sub"));
    let assert = plugin().current_dir(tmp.path()).args(["migrate", "--diff", "-f", "."]).assert().code(1);
    let diff = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    assert!(
        diff.starts_with(
            // The first hunk reaches the annotation added after `name:` (line 6 of the example).
            "--- a/sub/pools.yaml\n+++ b/sub/pools.yaml\n@@ -1,9 +1,11 @@\n-apiVersion: cilium.io/v2alpha1\n+apiVersion: cilium.io/v2\n"
        ),
        "{diff}"
    );
    assert_eq!(diff.matches("\n--- a/").count(), 0, "one file changes, one diff");
    assert_eq!(String::from_utf8_lossy(&assert.get_output().stderr), "1 file(s) unchanged (nothing to convert), not shown\n");
    assert_eq!(snapshot_dir(&tmp.path().join("sub")), before, "--diff writes nothing");
    // The diff is what --in-place writes: applied with `patch`, it gives the same bytes.
    let patched = std::process::Command::new("patch")
        .current_dir(tmp.path())
        .args(["-s", "-p1"])
        .stdin(
            std::fs::File::open({
                let path = tmp.path().join("d.patch");
                std::fs::write(&path, &diff).unwrap();
                path
            })
            .unwrap(),
        )
        .status()
        .unwrap();
    assert!(patched.success());
    let applied = std::fs::read(tmp.path().join("sub/pools.yaml")).unwrap();
    std::fs::copy(EXAMPLE, tmp.path().join("sub/pools.yaml")).unwrap();
    plugin().current_dir(tmp.path()).args(["migrate", "--in-place", "-f", "sub"]).assert().success();
    assert_eq!(std::fs::read(tmp.path().join("sub/pools.yaml")).unwrap(), applied);
    // Nothing left to change: no output, exit 0; a bad input: exit 2.
    plugin().current_dir(tmp.path()).args(["migrate", "--diff", "-f", "sub"]).assert().code(0).stdout("");
    std::fs::write(
        tmp.path().join("sub/bad.yaml"),
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: z}\nspec: {ipv4: {cidrs: [nope], maskSize: 24}}\n",
    )
    .unwrap();
    plugin().current_dir(tmp.path()).args(["migrate", "--diff", "-f", "sub"]).assert().code(2).stdout("");
}

#[test]
fn dry_run_with_files_shows_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(EXAMPLE, tmp.path().join("pools.yaml")).unwrap();
    let before = snapshot_dir(tmp.path());
    let shown = plugin().args(["migrate", "-f"]).arg(tmp.path()).assert().success().get_output().stdout.clone();
    // A dry run exits as `kubectl diff` does: 1 when something would change.
    for extra in [&["--dry-run"][..], &["--in-place", "--dry-run"]] {
        let assert = plugin().arg("migrate").args(extra).arg("-f").arg(tmp.path()).assert().code(1);
        assert_eq!(assert.get_output().stdout, shown, "{extra:?} shows the changed documents");
        assert_eq!(snapshot_dir(tmp.path()), before, "{extra:?} writes nothing");
    }
    let diff = plugin().args(["migrate", "--in-place", "--dry-run", "--diff", "-f"]).arg(tmp.path()).assert().code(1);
    assert!(String::from_utf8_lossy(&diff.get_output().stdout).starts_with("--- a/"));
    assert!(String::from_utf8_lossy(&diff.get_output().stderr).contains("dry run: nothing was written"));
    plugin().args(["migrate", "--dry-run", "--exit-code", "-f"]).arg(tmp.path()).assert().code(1);
    assert_eq!(snapshot_dir(tmp.path()), before);
    plugin().args(["migrate", "--dry-run=server", "-f"]).arg(tmp.path()).assert().code(2).stdout("");
    // Converted: nothing left to show, exit 0.
    plugin().args(["migrate", "--in-place", "-f"]).arg(tmp.path()).assert().success();
    plugin().args(["migrate", "--dry-run", "-f"]).arg(tmp.path()).assert().success().stdout("");
}

#[test]
fn check_exit_codes() {
    plugin()
        .args(["migrate", "--check", "-f", EXAMPLE])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("3 CiliumPodIPPool(s) to convert"));
    let tmp = tempfile::tempdir().unwrap();
    let v2 = tmp.path().join("v2.yaml");
    std::fs::write(
        &v2,
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: a}\nspec: {ipv4: {cidrs: [10.0.0.0/16], maskSize: 24}}\n",
    )
    .unwrap();
    plugin().args(["migrate", "--check", "-f"]).arg(&v2).assert().code(0);
    // With the CFP schema, string cidrs in a v2 manifest still need converting.
    plugin().args(["migrate", "--check", "--schema", "cfp", "-f"]).arg(&v2).assert().code(1);
    let broken = tmp.path().join("broken.yaml");
    std::fs::write(&broken, "a: [unclosed\n").unwrap();
    plugin().args(["migrate", "--check", "-f"]).arg(&broken).assert().code(2);
}

fn snapshot_dir(dir: &Path) -> Vec<(String, Vec<u8>, u32)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap(), mode)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn in_place_converts_a_repository_and_keeps_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["pools.yaml", "ciliumnodes.yaml", "crd-ciliumpodippools.yaml"] {
        std::fs::copy(Path::new("examples/snapshot").join(name), tmp.path().join(name)).unwrap();
    }
    let pools = tmp.path().join("pools.yaml");
    std::fs::set_permissions(&pools, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mixed = tmp.path().join("mixed.yaml");
    let configmap = "# a comment that stays\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}   # and this one\ndata: {k: v}\n";
    std::fs::write(&mixed, format!("{configmap}---\napiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {{name: m}}\nspec: {{ipv4: {{cidrs: [10.9.0.0/16], maskSize: 24}}}}\n")).unwrap();
    let before = snapshot_dir(tmp.path());

    plugin().args(["migrate", "--in-place", "--schema", "upstream", "-f"]).arg(tmp.path()).assert().success();
    let after = snapshot_dir(tmp.path());
    assert_eq!(after.len(), before.len(), "no temporary file left behind");
    for ((name, old, old_mode), (_, new, new_mode)) in before.iter().zip(&after) {
        assert_eq!(old_mode, new_mode, "{name}: mode kept");
        match name.as_str() {
            "pools.yaml" | "mixed.yaml" => assert_ne!(old, new, "{name} converted"),
            _ => assert_eq!(old, new, "{name} untouched"),
        }
    }
    let mixed_text = std::fs::read_to_string(&mixed).unwrap();
    assert!(mixed_text.starts_with(configmap), "the other document keeps its bytes and comments:\n{mixed_text}");
    // Every pool converted, green from the CFP dialect too: the repository passes --check.
    plugin().args(["migrate", "--check", "-f"]).arg(tmp.path()).assert().code(0);
}

#[test]
fn in_place_writes_nothing_when_a_later_document_is_invalid() {
    let tmp = tempfile::tempdir().unwrap();
    let pool = |name: &str, cidr: &str| {
        format!(
            "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {{name: {name}}}\nspec: {{ipv4: {{cidrs: [{cidr}], maskSize: 24}}}}\n"
        )
    };
    std::fs::write(tmp.path().join("a.yaml"), pool("a", "10.1.0.0/16")).unwrap();
    std::fs::write(tmp.path().join("b.yaml"), format!("{}---\n{}", pool("b", "10.2.0.0/16"), pool("c", "not-a-cidr"))).unwrap();
    let before = snapshot_dir(tmp.path());
    let assert = plugin().args(["migrate", "--in-place", "-f"]).arg(tmp.path()).assert().code(2);
    let err = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(err.contains("b.yaml:6") && err.contains("not-a-cidr"), "names the file, line and value: {err}");
    assert_eq!(snapshot_dir(tmp.path()), before, "no file was rewritten, none truncated");
}

#[test]
fn stdin_and_cluster_only_flags() {
    let input = "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: s}\nspec: {ipv6: {cidrs: [\"fd00::/104\"], maskSize: 120}}\n";
    let out = plugin().args(["migrate", "--schema", "cfp", "-f", "-"]).write_stdin(input).assert().success().get_output().stdout.clone();
    let doc = yaml(&String::from_utf8(out).unwrap());
    assert_eq!(doc["spec"]["ipv6"]["cidrs"][0]["cidr"], "fd00::/104");
    plugin().args(["migrate", "--in-place", "-f", "-"]).write_stdin(input).assert().code(2);
    plugin().args(["migrate", "--status", "-f", EXAMPLE]).assert().code(2);
}

/// The migrated-to-v2 annotation goes where a person writes it: into `annotations:` when the pool
/// has them, else right after `name:` (not after `uid:` at the end of metadata), in the file's
/// own indentation.
#[test]
fn the_new_annotation_stands_after_the_name_or_in_annotations() {
    let tmp = tempfile::tempdir().unwrap();
    let pools = "\
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata:
    name: plain
    resourceVersion: \"7\"
    uid: 1f0c
spec:
    ipv4: {cidrs: [10.1.0.0/16], maskSize: 24}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata:
  annotations:
    team: net
  name: annotated
  uid: 2e0d
spec:
  ipv4: {cidrs: [10.2.0.0/16], maskSize: 24}
";
    std::fs::write(tmp.path().join("pools.yaml"), pools).unwrap();
    let assert = plugin().current_dir(tmp.path()).args(["migrate", "--diff", "-f", "pools.yaml"]).assert().code(1);
    let diff = String::from_utf8(assert.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = diff.lines().collect();
    let at = |line: &str| lines.iter().position(|l| *l == line).unwrap_or_else(|| panic!("{line:?} not in\n{diff}"));
    assert_eq!(at("+    annotations:"), at("     name: plain") + 1, "{diff}");
    assert_eq!(at("+        cilium.io/migrated-to-v2: \"true\""), at("+    annotations:") + 1, "{diff}");
    assert_eq!(at("+    cilium.io/migrated-to-v2: \"true\""), at("     team: net") + 1, "{diff}");
    assert!(!diff.contains("+  annotations:"), "the annotated pool keeps its one annotations map: {diff}");
}

/// Issue 40, finding 7: `%YAML 1.1` / `%YAML 1.2` directives were split off as documents of their
/// own and the file refused; the converted file keeps them byte for byte, and the printed stream
/// stays valid YAML (a directive after another document follows a `...` end marker).
#[test]
fn yaml_directives_are_kept_by_the_conversion() {
    let dir = tempfile::tempdir().unwrap();
    let pool = |name: &str| {
        format!(
            "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {{name: {name}}}\nspec: {{ipv4: {{cidrs: [10.1.0.0/16], maskSize: 24}}}}\n"
        )
    };
    let text = format!("%YAML 1.1\n---\n{}...\n%YAML 1.2\n--- # second\n{}", pool("a"), pool("b"));
    let file = dir.path().join("pools.yaml");
    std::fs::write(&file, &text).unwrap();
    let printed = plugin().args(["migrate", "-f"]).arg(&file).assert().success().get_output().stdout.clone();
    let printed = String::from_utf8(printed).unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&printed).unwrap_or_else(|e| panic!("{e}: {printed}"));
    assert_eq!(docs.iter().filter(|d| d["apiVersion"] == "cilium.io/v2").count(), 2, "{printed}");
    plugin().args(["migrate", "--in-place", "-f"]).arg(&file).assert().success();
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with("%YAML 1.1\n---\napiVersion: cilium.io/v2\n"), "{after}");
    assert!(after.contains("...\n%YAML 1.2\n--- # second\napiVersion: cilium.io/v2\n"), "{after}");
}

/// Issue 40, finding 7: a pool document with an alias cannot be patched in place and is written
/// whole; its comments were dropped without a word. One note names the file and the line.
#[test]
fn a_converted_document_written_whole_says_its_comments_were_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: a}\nspec:\n  ipv4: &v4 {cidrs: [10.1.0.0/16], maskSize: 24}  # the range of team a\n  extra: *v4\n";
    let file = dir.path().join("pools.yaml");
    std::fs::write(&file, text).unwrap();
    let out = plugin().args(["migrate", "--in-place", "-f"]).arg(&file).assert().success().get_output().clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let note = format!(
        "note: {}: the document at line 5 was written whole (anchors, aliases or tags cannot be edited in place), without the comments inside it",
        file.display()
    );
    assert!(stderr.lines().any(|l| l == note), "{stderr}");
    assert!(!std::fs::read_to_string(&file).unwrap().contains("# the range"));
}
