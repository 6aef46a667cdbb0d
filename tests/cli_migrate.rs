//! Offline `migrate -f`: GitOps manifest conversion, `--check`, `--in-place` (no cluster).

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
fn converts_the_example_and_round_trips() {
    let input = std::fs::read_to_string(EXAMPLE).unwrap();
    let output = plugin().args(["migrate", "-f", EXAMPLE]).assert().success().get_output().stdout.clone();
    let output = String::from_utf8(output).unwrap();
    let (before, after) = (chunks(&input), chunks(&output));
    assert_eq!(before.len(), after.len(), "document order and count kept");
    for (old, new) in before.iter().zip(&after) {
        let old_doc = yaml(old);
        if old_doc["apiVersion"] == "cilium.io/v2" {
            assert_eq!(old, new, "v2 documents are copied byte for byte");
            continue;
        }
        let mut expected = old_doc.clone();
        expected["apiVersion"] = "cilium.io/v2".into();
        expected["metadata"]["annotations"] = serde_json::json!({"cilium.io/migrated-to-v2": "true"});
        assert_eq!(yaml(new), expected, "only apiVersion and the migration mark change");
    }
    // The converted stream needs nothing more, and converting it again is the identity.
    let tmp = tempfile::tempdir().unwrap();
    let converted = tmp.path().join("pools.yaml");
    std::fs::write(&converted, &output).unwrap();
    // Nothing left to convert, but the example's CFP-shaped pool (green) is no upstream v2
    // object: --check does not certify the set (an upstream v2 CRD would reject green).
    let check = plugin().args(["migrate", "--check", "-f"]).arg(&converted).assert().code(1).get_output().stdout.clone();
    let check = String::from_utf8(check).unwrap();
    assert_eq!(check.lines().count(), 1, "{check}");
    assert!(check.contains("CiliumPodIPPool green is in the cfp-v2 dialect"), "{check}");
    let again = plugin().args(["migrate", "-f"]).arg(&converted).assert().success().get_output().stdout.clone();
    assert_eq!(String::from_utf8(again).unwrap(), output);
    // The converted manifests still make a valid snapshot with the same pools.
    plugin().args(["usage", "-o", "json", "-f"]).arg(&converted).assert().success();
}

#[test]
fn check_exit_codes() {
    plugin()
        .args(["migrate", "--check", "-f", EXAMPLE])
        .assert()
        .code(1)
        .stdout(predicates::str::contains("2 CiliumPodIPPool(s) to convert"));
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
    // Converted, but green (CFP-shaped) is still no upstream v2 object.
    let check = plugin().args(["migrate", "--check", "-f"]).arg(tmp.path()).assert().code(1).get_output().stdout.clone();
    assert!(String::from_utf8(check).unwrap().contains("green is in the cfp-v2 dialect"));
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
