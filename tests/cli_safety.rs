//! Reliability and security of the offline commands (issue #15): inputs that must be refused or
//! reported, files that must not be lost, text that must not reach the terminal raw. Each test
//! reproduces a defect found on an earlier version.

use assert_cmd::Command;
use std::path::Path;

fn plugin() -> Command {
    let mut command = assert_cmd::cargo::cargo_bin_cmd!("kubectl-ciliumpool");
    command.env("NO_COLOR", "1").env_remove("KUBECONFIG");
    command
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// (stdout, stderr, exit code).
fn run(command: &mut Command) -> (String, String, i32) {
    let out = command.output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned(), out.status.code().unwrap_or(-1))
}

fn pool(api_version: &str, name: &str, cidr: &str, team: &str) -> String {
    format!("apiVersion: {api_version}\nkind: CiliumPodIPPool\nmetadata:\n  name: {name}\n  labels: {{team: {team}}}\nspec:\n  ipv4:\n    cidrs: [{cidr}]\n    maskSize: 24\n")
}

/// Every file under `dir` with its content, to prove nothing was written.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in walkdir(dir) {
        out.push((entry.display().to_string(), std::fs::read(&entry).unwrap()));
    }
    out.sort();
    out
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walkdir(&path)) } else { out.push(path) }
    }
    out
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

    let (_, stderr, code) = run(plugin().args(["reserve-range", "blue", "10.41.0.1", "--in-place", "--yes", "-f"]).arg(repo));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("CiliumPodIPPool blue is defined 2 times") && stderr.contains("base/pool.yaml") && stderr.contains("overlays/prod/pool.yaml"), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(tree(repo), before, "no file changed");

    // Reads go on, with a warning naming both files.
    let (_, stderr, code) = run(plugin().args(["usage", "-f"]).arg(repo));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning: CiliumPodIPPool blue is defined 2 times") && stderr.contains("base/pool.yaml") && stderr.contains("overlays/prod/pool.yaml"), "{stderr}");

    // Within one file: the first document must not be replaced by the second.
    let one = repo.join("one/pools.yaml");
    write(&one, &format!("{}---\n{}", pool("cilium.io/v2", "red", "10.50.0.0/16", "a"), pool("cilium.io/v2", "red", "10.51.0.0/16", "b")));
    let text = std::fs::read_to_string(&one).unwrap();
    let (_, stderr, code) = run(plugin().args(["reserve-range", "red", "10.51.0.1", "--in-place", "-f"]).arg(&one));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("red is defined 2 times") && stderr.contains("(2 documents)"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&one).unwrap(), text);

    // migrate --in-place refuses the same way; printing converts with a warning.
    let legacy = tempfile::tempdir().unwrap();
    write(&legacy.path().join("base/pool.yaml"), &pool("cilium.io/v2alpha1", "blue", "10.40.0.0/16", "base"));
    write(&legacy.path().join("overlays/prod/pool.yaml"), &pool("cilium.io/v2alpha1", "blue", "10.41.0.0/16", "prod"));
    let before = tree(legacy.path());
    let (_, stderr, code) = run(plugin().args(["migrate", "--in-place", "-f"]).arg(legacy.path()));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("blue is defined 2 times") && stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(tree(legacy.path()), before);
    let (stdout, stderr, code) = run(plugin().args(["migrate", "-f"]).arg(legacy.path()));
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("warning: CiliumPodIPPool blue is defined 2 times"), "{stderr}");
    assert_eq!(stdout.matches("apiVersion: cilium.io/v2\n").count(), 2, "{stdout}");
}
