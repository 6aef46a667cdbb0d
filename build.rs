//! Build facts for `kubectl ciliumpool version` (docs/install.md, "What `version` reports"):
//! the git commit, the build date and the target. The packaged crate (`cargo install`, crates.io)
//! has no `.git`, so the commit is then "unknown" — never the commit of a repository that merely
//! contains the unpacked crate. The date is `SOURCE_DATE_EPOCH` when set (reproducible builds;
//! the release workflow sets it to the commit's date), else the time this script ran.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let commit = git_commit(&root).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=CILIUMPOOL_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=CILIUMPOOL_BUILD_DATE={}", humantime::format_rfc3339_seconds(build_time()));
    println!("cargo:rustc-env=CILIUMPOOL_TARGET={}", std::env::var("TARGET").expect("cargo sets TARGET"));
}

fn build_time() -> SystemTime {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(text) => {
            let seconds: u64 =
                text.trim().parse().unwrap_or_else(|_| panic!("SOURCE_DATE_EPOCH={text:?} is not a number of seconds since 1970"));
            UNIX_EPOCH + Duration::from_secs(seconds)
        }
        Err(_) => SystemTime::now(),
    }
}

/// HEAD of the repository whose top level is the crate itself; `None` without git or `.git`.
fn git_commit(root: &Path) -> Option<String> {
    let toplevel = PathBuf::from(git(root, &["rev-parse", "--show-toplevel"])?);
    if toplevel.canonicalize().ok()? != root.canonicalize().ok()? {
        return None;
    }
    let commit = git(root, &["rev-parse", "HEAD"])?;
    // Re-run when HEAD moves: HEAD itself (checkout), the branch it names (commit), packed refs.
    // Only existing files: cargo re-runs a script on every build while a watched file is missing.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(root, &["symbolic-ref", "-q", "HEAD"]));
    for name in &watched {
        let Some(path) = git(root, &["rev-parse", "--git-path", name]) else { continue };
        let path = root.join(path);
        if path.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    Some(commit)
}

/// Trimmed stdout of a successful git command.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}
