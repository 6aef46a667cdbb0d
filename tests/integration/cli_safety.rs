//! Reliability and security of the offline commands (issue #15): inputs that must be refused or
//! reported, files that must not be lost, text that must not reach the terminal raw. Each test
//! reproduces a defect found on an earlier version.

use crate::support;

use std::path::{Path, PathBuf};
use support::cli::{output, plugin};
use support::files_under;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn pool(api_version: &str, name: &str, cidr: &str, team: &str) -> String {
    format!(
        "apiVersion: {api_version}\nkind: CiliumPodIPPool\nmetadata:\n  name: {name}\n  labels: {{team: {team}}}\nspec:\n  ipv4:\n    cidrs: [{cidr}]\n    maskSize: 24\n"
    )
}

/// Every file under `dir` with its content, to prove nothing was written.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    files_under(dir).into_iter().map(|file| (file.clone(), std::fs::read(dir.join(file)).unwrap())).collect()
}

// Defect 1: a pool defined twice (kustomize base + overlay) had the overlay's copy analysed and
// the base's document overwritten with it.
#[test]
fn a_pool_defined_twice_is_reported_and_never_edited_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let base = repo.join("base/pool.yaml");
    let overlay = repo.join("overlays/prod/pool.yaml");
    write(&base, &pool("cilium.io/v2", "blue", "10.40.0.0/16", "base"));
    write(&overlay, &pool("cilium.io/v2", "blue", "10.41.0.0/16", "prod"));
    let before = tree(repo);

    let (code, _, stderr) = output(plugin().args(["reserve-range", "blue", "10.41.0.1", "--in-place", "--yes", "-f"]).arg(repo));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("CiliumPodIPPool blue is defined 2 times")
            && stderr.contains("base/pool.yaml")
            && stderr.contains("overlays/prod/pool.yaml"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(tree(repo), before, "no file changed");

    // Reads go on, with a warning naming both files.
    let (code, _, stderr) = output(plugin().args(["usage", "-f"]).arg(repo));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("warning: CiliumPodIPPool blue is defined 2 times")
            && stderr.contains("base/pool.yaml")
            && stderr.contains("overlays/prod/pool.yaml"),
        "{stderr}"
    );

    // Within one file: the first document must not be replaced by the second.
    let one = repo.join("one/pools.yaml");
    write(&one, &format!("{}---\n{}", pool("cilium.io/v2", "red", "10.50.0.0/16", "a"), pool("cilium.io/v2", "red", "10.51.0.0/16", "b")));
    let text = std::fs::read_to_string(&one).unwrap();
    let (code, _, stderr) = output(plugin().args(["reserve-range", "red", "10.51.0.1", "--in-place", "-f"]).arg(&one));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("red is defined 2 times") && stderr.contains("(2 documents)"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&one).unwrap(), text);

    // migrate --in-place refuses the same way; printing converts with a warning.
    let legacy = tempfile::tempdir().unwrap();
    write(&legacy.path().join("base/pool.yaml"), &pool("cilium.io/v2alpha1", "blue", "10.40.0.0/16", "base"));
    write(&legacy.path().join("overlays/prod/pool.yaml"), &pool("cilium.io/v2alpha1", "blue", "10.41.0.0/16", "prod"));
    let before = tree(legacy.path());
    let (code, _, stderr) = output(plugin().args(["migrate", "--in-place", "-f"]).arg(legacy.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("blue is defined 2 times") && stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(tree(legacy.path()), before);
    let (code, stdout, stderr) = output(plugin().args(["migrate", "-f"]).arg(legacy.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning: CiliumPodIPPool blue is defined 2 times"), "{stderr}");
    assert_eq!(stdout.matches("apiVersion: cilium.io/v2\n").count(), 2, "{stdout}");
}

const V2_POOL: &str = "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec:\n  ipv4:\n    cidrs: [10.40.0.0/16]\n    maskSize: 24\n";

// Defect 3: escape sequences from the data reached the terminal raw.
#[test]
fn control_sequences_from_the_data_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    // YAML escapes: the parser turns them into the raw control characters.
    let osc52 = "\\e]52;c;ZWNobyBwd25lZA==\\a";
    let text = format!(
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata:\n  name: \"blue{osc52}\"\n  annotations: {{note: \"\\e[2J\"}}\nspec:\n  ipv4:\n    cidrs: [10.40.0.0/16]\n    maskSize: 24\n    pool:\n    - cidr: 10.40.0.0/16\n      reservedRanges: [{{start: \"10.40.0.1\\e[31m\", end: 10.40.0.2}}]\n---\napiVersion: cilium.io/v2\nkind: CiliumNode\nmetadata: {{name: \"node\\e[1A\"}}\nspec:\n  ipam:\n    pools:\n      allocated: [{{pool: \"evil\\e]0;title\\a\", cidrs: [10.40.1.0/24]}}]\n"
    );
    write(&dir.path().join("pools.yaml"), &text);
    let path = dir.path().join("pools.yaml");
    let runs: Vec<Vec<&str>> = vec![
        vec!["usage"],
        vec!["usage", "-o", "wide"],
        vec!["usage", "--by", "node"],
        vec!["usage", "--show-blocks"],
        vec!["usage", "-o", "name"],
        vec!["check"],
        vec!["inspect"],
        vec!["reserve-range", "--list"],
        vec!["migrate", "--check"],
    ];
    for args in runs {
        for colour in ["never", "always"] {
            let (code, stdout, stderr) = output(plugin().args(&args).args(["--color", colour, "-f"]).arg(&path));
            assert!(code <= 2, "{args:?}: {stderr}");
            for (stream, out) in [("stdout", &stdout), ("stderr", &stderr)] {
                // With colour on, the only ESC bytes are the plugin's own SGR colours.
                let stripped = out
                    .replace("\x1b[32m", "")
                    .replace("\x1b[33m", "")
                    .replace("\x1b[31m", "")
                    .replace("\x1b[2m", "")
                    .replace("\x1b[1m", "")
                    .replace("\x1b[39m", "")
                    .replace("\x1b[22m", "")
                    .replace("\x1b[0m", "");
                let stripped = if colour == "never" { out.clone() } else { stripped };
                assert!(
                    !stripped.contains('\x1b') && !stripped.contains('\x07'),
                    "{args:?} --color {colour}: raw control character on {stream}: {out:?}"
                );
            }
        }
    }
    // Visible instead: the escaped name is shown.
    let (_, stdout, _) = output(plugin().args(["usage", "-f"]).arg(&path));
    assert!(stdout.contains("blue\\x1b]52;c;ZWNobyBwd25lZA==\\x07"), "{stdout}");
    // JSON keeps the value, escaped as JSON.
    let (_, stdout, _) = output(plugin().args(["usage", "-o", "json", "-f"]).arg(&path));
    assert!(!stdout.contains('\x1b') && stdout.contains("\\u001b]52"), "{stdout}");
}

// Defect 5: a symlinked manifest was replaced by a plain file; hard links were split.
#[test]
fn in_place_writes_through_symlinks_and_refuses_hard_links() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real/pools.yaml");
    write(&real, V2_POOL);
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let link = repo.join("pools.yaml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let (code, stdout, stderr) = output(plugin().args(["reserve-range", "blue", "10.40.0.1", "--in-place", "-f"]).arg(&link));
    assert_eq!(code, 0, "{stderr}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert!(std::fs::read_to_string(&real).unwrap().contains("10.40.0.1"), "the target is edited");
    assert!(stdout.contains("(symlink to "), "{stdout}");
    assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);

    let hard = dir.path().join("hard.yaml");
    std::fs::hard_link(&real, &hard).unwrap();
    let before = std::fs::read_to_string(&real).unwrap();
    let (code, _, stderr) = output(plugin().args(["reserve-range", "blue", "10.40.0.9", "--in-place", "-f"]).arg(&hard));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("hard links"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), before);
    assert_eq!(std::fs::metadata(&hard).unwrap().ino(), std::fs::metadata(&real).unwrap().ino(), "links not split");
}

// Defect 6: a killed run left `.ciliumpool-XXXXXX` files beside the manifest.
#[test]
fn stale_temporary_files_are_removed_by_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pools.yaml");
    write(&path, V2_POOL);
    write(&dir.path().join(".ciliumpool-AbC123"), "apiVersion: cilium.io/v2\nkind: CiliumPo");
    let (code, _, stderr) = output(plugin().args(["reserve-range", "blue", "10.40.0.1", "--in-place", "-f"]).arg(&path));
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names, vec!["pools.yaml".to_string()]);
}

// Defect 7: `migrate -f DIR --in-place` converted some files, then failed on another.
#[test]
fn multi_file_in_place_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let alpha = |name: &str| {
        format!(
            "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {{name: {name}}}\nspec: {{ipv4: {{cidrs: [10.0.0.0/16], maskSize: 24}}}}\n"
        )
    };
    write(&dir.path().join("a/pool.yaml"), &alpha("a"));
    write(&dir.path().join("z/pool.yaml"), &alpha("z"));
    // The second file cannot be replaced safely (a hard link elsewhere; as root, permission
    // bits would not stop a write).
    let outside = tempfile::tempdir().unwrap();
    std::fs::hard_link(dir.path().join("z/pool.yaml"), outside.path().join("link.yaml")).unwrap();
    let before = tree(dir.path());
    let (code, _, stderr) = output(plugin().args(["migrate", "--in-place", "-f"]).arg(dir.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("z/pool.yaml") && stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(tree(dir.path()), before, "the first file was not converted either");
    assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 1, "no staged file left");
}

// Defect 8: symlink loops hung the walk, FIFOs blocked it, /dev/zero was read for gigabytes.
#[test]
fn walks_and_reads_are_bounded() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("pools.yaml"), V2_POOL);
    std::os::unix::fs::symlink(".", dir.path().join("loop1")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("sub/loop2")).unwrap();
    std::os::unix::fs::symlink("pools.yaml", dir.path().join("same.yaml")).unwrap();
    let fifo = dir.path().join("pipe.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Finishes (a loop or a FIFO would block forever; the harness's timeout is the failure).
    let (code, stdout, stderr) =
        output(plugin().args(["usage", "-o", "name", "-f"]).arg(dir.path()).timeout(std::time::Duration::from_secs(60)));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "ciliumpodippool.cilium.io/blue\n");
    assert!(!stderr.contains("defined"), "the symlinked copy is the same file, not a duplicate: {stderr}");

    let (code, _, stderr) = output(plugin().args(["usage", "-f", "/dev/zero"]).timeout(std::time::Duration::from_secs(60)));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("/dev/zero: binary data"), "{stderr}");
}

// Defect 9: inputs kubectl accepts were rejected.
#[test]
fn inputs_kubectl_accepts_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("flow.yaml");
    write(
        &flow,
        "{apiVersion: cilium.io/v2, kind: CiliumPodIPPool, metadata: {name: blue}, spec: {ipv4: {cidrs: [10.40.0.0/16], maskSize: 24}}}\n",
    );
    let docs = dir.path().join("docs.json");
    write(
        &docs,
        "{\"apiVersion\": \"cilium.io/v2\", \"kind\": \"CiliumPodIPPool\", \"metadata\": {\"name\": \"red\"}, \"spec\": {\"ipv4\": {\"cidrs\": [\"10.50.0.0/16\"], \"maskSize\": 24}}}\n---\n{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"x\"}}\n",
    );
    let big = dir.path().join("big.json");
    write(
        &big,
        "{\"apiVersion\": \"cilium.io/v2\", \"kind\": \"CiliumPodIPPool\", \"metadata\": {\"name\": \"green\", \"annotations\": {\"x\": 1e400}}, \"spec\": {\"ipv4\": {\"cidrs\": [\"10.60.0.0/16\"], \"maskSize\": 24}}}\n",
    );
    for (path, pool) in [(&flow, "blue"), (&docs, "red"), (&big, "green")] {
        let (code, stdout, stderr) = output(plugin().args(["usage", "-o", "name", "-f"]).arg(path));
        assert_eq!((code, stdout.as_str()), (0, format!("ciliumpodippool.cilium.io/{pool}\n").as_str()), "{}: {stderr}", path.display());
    }
    // The flow-style file is edited in place too.
    let (code, _, stderr) = output(plugin().args(["reserve-range", "blue", "10.40.0.1", "--in-place", "-f"]).arg(&flow));
    assert_eq!(code, 0, "{stderr}");
    assert!(std::fs::read_to_string(&flow).unwrap().contains("10.40.0.1"));
}

// Defect 10: an empty directory, a text file or a mistyped CIDR passed `check`.
#[test]
fn check_refuses_foreign_input_and_reports_cidrs_the_operator_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let text = dir.path().join("notes.txt");
    write(&text, "just some notes\n");
    for input in [&empty, &text] {
        let (code, stdout, stderr) = output(plugin().args(["check", "-f"]).arg(input));
        assert_eq!(code, 2, "{}: {stdout}{stderr}", input.display());
        assert!(stderr.contains("no Cilium object in the input"), "{stderr}");
    }
    let pools = dir.path().join("pools.yaml");
    write(
        &pools,
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec:\n  ipv4:\n    cidrs: [\" 10.1.0.0/16\", 10.2.0.0/16]\n    maskSize: 24\n---\napiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: red}\nspec:\n  ipv4:\n    cidrs: [010.0.0.0/16]\n    maskSize: 24\n",
    );
    let (code, stdout, stderr) = output(plugin().args(["check", "-f"]).arg(&pools));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("\" 10.1.0.0/16\"") || stdout.contains("' 10.1.0.0/16'") || stdout.contains(" 10.1.0.0/16"), "{stdout}");
    assert!(stdout.contains("010.0.0.0/16"), "{stdout}");
    let (_, stdout, _) = output(plugin().args(["usage", "-o", "json", "-f"]).arg(&pools));
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["pools"][0]["families"][0]["totalAddresses"], 65536, "only 10.2.0.0/16 counts: {stdout}");
}

// Defect 11: `migrate --check` certified a CFP-shaped pool as upstream v2; `--in-place` wrote a
// directory holding an invalid pool.
#[test]
fn gitops_checks_validate_every_pool() {
    let dir = tempfile::tempdir().unwrap();
    let cfp = dir.path().join("cfp.yaml");
    write(
        &cfp,
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: cfp}\nspec:\n  ipv4:\n    cidrs:\n    - cidr: 10.20.0.0/16\n      reservedRange: 10.20.0.1-10.20.0.9\n    maskSize: 24\n",
    );
    // For an upstream target the CFP pool is converted (its reservedRange moves to pool[]), so
    // --check names it as pending until --in-place ran.
    let (code, stdout, stderr) = output(plugin().args(["migrate", "--check", "-f"]).arg(&cfp));
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("1 CiliumPodIPPool(s) to convert") && !stdout.contains("All CiliumPodIPPool manifests"), "{stdout}");
    let (code, _, _) = output(plugin().args(["migrate", "--check", "--schema", "cfp", "-f"]).arg(&cfp));
    assert_eq!(code, 0);

    let repo = dir.path().join("repo");
    write(
        &repo.join("a.yaml"),
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: a}\nspec: {ipv4: {cidrs: [10.0.0.0/16], maskSize: 24}}\n",
    );
    write(&repo.join("b.yaml"), "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: nospec}\n");
    let before = tree(&repo);
    let (code, _, stderr) = output(plugin().args(["migrate", "--in-place", "-f"]).arg(&repo));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("b.yaml") && stderr.contains("nospec") && stderr.contains("spec is missing"), "{stderr}");
    assert_eq!(tree(&repo), before);
}

/// A kubeconfig for a server nobody listens on, with `user` as its credentials.
fn kubeconfig(dir: &Path, server: &str, user: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    write(
        &path,
        &format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers:\n- name: u\n  user:\n{user}"
        ),
    );
    path
}

fn assert_no_secret(out: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!out.contains(secret), "secret {secret:?} in output: {out}");
    }
}

// Defect 2: kube-rs error text quoted credentials.
#[test]
fn no_credential_in_error_messages() {
    let dir = tempfile::tempdir().unwrap();
    // A YAML error next to a token: the parser's message quotes the lines around it.
    let broken = dir.path().join("broken");
    write(&broken, "apiVersion: v1\nusers:\n- name: u\n  user:\n    token: tok-SECRET-yaml\n    password: [unclosed\n");
    let (code, stdout, stderr) = output(plugin().args(["usage", "--kubeconfig"]).arg(&broken));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line"), "{stderr}");
    assert_no_secret(&(stdout + &stderr), &["tok-SECRET-yaml", "unclosed"]);

    // A failing exec plugin: its arguments, environment and output.
    let plugin_path = dir.path().join("get-token");
    write(&plugin_path, "#!/bin/sh\necho \"stdout-SECRET-out $1 $PLUGIN_KEY\"\necho \"stderr-SECRET-err\" >&2\nexit 1\n");
    std::fs::set_permissions(&plugin_path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let exec = format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [arg-SECRET-arg]\n      env: [{{name: PLUGIN_KEY, value: env-SECRET-env}}]\n      interactiveMode: Never\n",
        plugin_path.display()
    );
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1", &exec);
    for verbosity in [&[][..], &["-v"][..]] {
        let (code, stdout, stderr) =
            output(plugin().args(["usage", "--request-timeout", "5s"]).args(verbosity).arg("--kubeconfig").arg(&config));
        assert_eq!(code, 3, "{stderr}");
        assert!(stderr.contains("exec credential plugin"), "{stderr}");
        assert_no_secret(&(stdout + &stderr), &["SECRET"]);
    }

    // Userinfo and access_token in the server URL; a token.
    let config =
        kubeconfig(dir.path(), "https://admin:pw-SECRET-url@127.0.0.1:1/?access_token=qs-SECRET-qs", "    token: tok-SECRET-tok\n");
    let (code, stdout, stderr) = output(plugin().args(["usage", "--request-timeout", "5s", "--kubeconfig"]).arg(&config));
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("https://127.0.0.1:1"), "{stderr}");
    assert_no_secret(&(stdout + &stderr), &["SECRET", "admin:"]);
}

// Defect 9: KUBECONFIG=good:/missing failed every live command; kubectl skips the missing entry.
#[test]
fn missing_kubeconfig_entries_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let good = kubeconfig(dir.path(), "https://127.0.0.1:1", "    token: t0ken-value\n");
    let list = format!("{}:{}", good.display(), dir.path().join("missing").display());
    let (code, _, stderr) = output(plugin().args(["usage", "--request-timeout", "5s"]).env("KUBECONFIG", &list));
    assert_eq!(code, 3, "the good entry is used: the request reaches for its server: {stderr}");
    assert!(stderr.contains("cannot reach the API server https://127.0.0.1:1"), "{stderr}");
}

/// What another writer does to a manifest while an edit of it waits (issue 40, finding 5).
#[derive(Clone, Copy, Debug)]
enum Meddling {
    /// Appends a document.
    Append,
    /// Renames a new version over it.
    RenameOver,
    /// Deletes it.
    Delete,
    /// Replaces it with a symlink to another file.
    SymlinkSwap,
    /// The manifest named is a symlink; it is pointed at another file.
    Retarget,
}

const MEDDLINGS: [Meddling; 5] = [Meddling::Append, Meddling::RenameOver, Meddling::Delete, Meddling::SymlinkSwap, Meddling::Retarget];

/// `dir/pools.yaml` holding `text` (for `Retarget` a symlink to `dir/real.yaml` holding it).
fn manifest_for(dir: &Path, meddling: Meddling, text: &str) -> PathBuf {
    let path = dir.join("pools.yaml");
    if let Meddling::Retarget = meddling {
        write(&dir.join("real.yaml"), text);
        std::os::unix::fs::symlink("real.yaml", &path).unwrap();
    } else {
        write(&path, text);
    }
    path
}

fn meddle(path: &Path, meddling: Meddling) {
    use std::io::Write;
    let dir = path.parent().unwrap();
    match meddling {
        Meddling::Append => std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .write_all(b"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: appended}\n")
            .unwrap(),
        Meddling::RenameOver => {
            let newer = std::fs::read_to_string(path).unwrap().replace("maskSize: 24", "maskSize: 25");
            write(&dir.join("newer.yaml"), &newer);
            std::fs::rename(dir.join("newer.yaml"), path).unwrap();
        }
        Meddling::Delete => std::fs::remove_file(path).unwrap(),
        Meddling::SymlinkSwap | Meddling::Retarget => {
            write(&dir.join("other.yaml"), "# another file, not to be written\n");
            std::fs::remove_file(path).unwrap();
            std::os::unix::fs::symlink("other.yaml", path).unwrap();
        }
    }
}

/// Every entry under `dir`: a symlink's target, a file's bytes.
fn entries(dir: &Path) -> Vec<(PathBuf, Result<PathBuf, Vec<u8>>)> {
    let state = |file: &Path| std::fs::read_link(dir.join(file)).map_err(|_| std::fs::read(dir.join(file)).unwrap());
    files_under(dir).into_iter().map(|file| (file.clone(), state(&file))).collect()
}

/// After the race: exit 1, the one line, and the other writer's change as it left it.
fn assert_refused(meddling: Meddling, path: &Path, after_meddling: &[(PathBuf, Result<PathBuf, Vec<u8>>)], code: i32, shown: &str) {
    assert_eq!(code, 1, "{meddling:?}: {shown}");
    let line = format!("error: {} changed since it was read: run again", path.display());
    // (In a terminal the line follows the prompt's cursor-show sequence.)
    let errors: Vec<&str> = shown.lines().filter_map(|l| l.find("error:").map(|at| l[at..].trim_end())).collect();
    assert_eq!(errors, [line], "{meddling:?}: {shown}");
    assert_eq!(
        entries(path.parent().unwrap()),
        after_meddling,
        "{meddling:?}: the other writer's change survives, nothing else is written"
    );
}

// Issue 40, finding 5: while `reserve-range --in-place` waited at its question, another
// writer's change was overwritten (an appended document lost, a new version reverted, a deleted
// file recreated, a symlink's new target written).
#[test]
fn reserve_in_place_never_overwrites_a_change_made_at_the_prompt() {
    for meddling in MEDDLINGS {
        let dir = tempfile::tempdir().unwrap();
        let path = manifest_for(dir.path(), meddling, V2_POOL);
        let mut command = support::cli::plugin_process();
        command.args(["reserve-range", "blue", "10.40.0.1", "--in-place", "-f"]).arg(&path);
        let mut term = support::cli::terminal(command, std::time::Duration::from_secs(30));
        term.exp_string("[y/N]").unwrap();
        meddle(&path, meddling);
        let after_meddling = entries(dir.path());
        support::cli::press(&mut term, "y\r");
        let (code, shown) = support::cli::finish(term);
        assert_refused(meddling, &path, &after_meddling, code, &shown);
    }
}

// The same for `migrate -f --in-place`, which does not ask: the run is held between reading the
// manifest and writing it by a FIFO named after it (read in order, it blocks until the test
// opens it for writing).
#[test]
fn migrate_in_place_never_overwrites_a_change_made_after_the_read() {
    use std::io::Write;
    let alpha = pool("cilium.io/v2alpha1", "blue", "10.40.0.0/16", "blue");
    for meddling in MEDDLINGS {
        let (dir, held) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let path = manifest_for(dir.path(), meddling, &alpha);
        let fifo = held.path().join("later.yaml");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let mut command = support::cli::plugin_process();
        command.args(["migrate", "--in-place", "-f"]).arg(&path).arg("-f").arg(&fifo);
        let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        // Opening the FIFO's write end returns once the plugin opened it: the manifest is read.
        let (opened, writer) = std::sync::mpsc::channel();
        let fifo_path = fifo.clone();
        std::thread::spawn(move || opened.send(std::fs::OpenOptions::new().write(true).open(fifo_path).unwrap()).unwrap());
        let mut writer = writer.recv_timeout(std::time::Duration::from_secs(60)).expect("the plugin opens the FIFO");
        meddle(&path, meddling);
        let after_meddling = entries(dir.path());
        writer.write_all(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated}\n").unwrap();
        drop(writer);
        let out = child.wait_with_output().unwrap();
        let shown = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
        assert_refused(meddling, &path, &after_meddling, out.status.code().unwrap_or(-1), &shown);
    }
}

// A symlink present when the manifest is read and unchanged at the prompt: the file it resolved
// to is edited and the link kept.
#[test]
fn in_place_through_an_unchanged_symlink_after_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let path = manifest_for(dir.path(), Meddling::Retarget, V2_POOL);
    let mut command = support::cli::plugin_process();
    command.args(["reserve-range", "blue", "10.40.0.1", "--in-place", "-f"]).arg(&path);
    let mut term = support::cli::terminal(command, std::time::Duration::from_secs(30));
    term.exp_string("[y/N]").unwrap();
    support::cli::press(&mut term, "y\r");
    let (code, shown) = support::cli::finish(term);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(std::fs::read_link(&path).unwrap(), Path::new("real.yaml"), "the link is kept");
    assert!(std::fs::read_to_string(dir.path().join("real.yaml")).unwrap().contains("10.40.0.1"), "the target is edited");
    assert_eq!(files_under(dir.path()), [PathBuf::from("pools.yaml"), PathBuf::from("real.yaml")], "no staged file left");
}

// The guided flow reads the snapshot before the questions and the file to edit after them: a
// change to the pool made while the range was being typed was reverted by the edit.
#[test]
fn reserve_guided_flow_never_reverts_a_change_made_during_the_questions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pools.yaml");
    write(&path, V2_POOL);
    let mut command = support::cli::plugin_process();
    command.args(["reserve-range", "--in-place", "-f"]).arg(&path);
    let mut term = support::cli::terminal(command, std::time::Duration::from_secs(30));
    term.exp_string("Range to reserve in 10.40.0.0/16").unwrap();
    let newer = V2_POOL.replace("maskSize: 24", "maskSize: 25");
    write(&dir.path().join("newer.yaml"), &newer);
    std::fs::rename(dir.path().join("newer.yaml"), &path).unwrap();
    // Refused as soon as the file is read for the edit, before the question is asked.
    support::cli::press(&mut term, "10.40.0.1\r");
    let (code, shown) = support::cli::finish(term);
    assert_refused(Meddling::RenameOver, &path, &[(PathBuf::from("pools.yaml"), Err(newer.into_bytes()))], code, &shown);
}
