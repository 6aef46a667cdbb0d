//! Distribution: the krew manifest, the archive `tools/package.sh` makes, its installation by the
//! real krew (offline) and the plugin reached through the real kubectl's plugin dispatch, shell
//! completion through kubectl's plugin completion (`kubectl_complete-ciliumpool`), the
//! `completion` scripts, and the crate `cargo package` makes, built and installed the way
//! `cargo install` does. The krew and kubectl tests need `TESTENV_BIN` (tools/testenv/build.sh)
//! and fail without it.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;
use support::{Dialect, PLUGIN, TestCluster, files_under, repo_root, testenv_bin};

fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Requires success; shows both streams otherwise.
fn succeeded(what: &str, output: Output) -> String {
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstderr:\n{}\nstdout:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
        stdout_of(&output)
    );
    stdout_of(&output)
}

/// `validate-krew-manifest -skip-install` on a copy named `ciliumpool.yaml`: it takes the plugin's
/// name from the file name, as krew-index does.
fn validate_manifest(manifest: &Path) {
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("ciliumpool.yaml");
    std::fs::copy(manifest, &copy).expect("copy manifest");
    let output = Command::new(testenv_bin().join("validate-krew-manifest"))
        .arg("-manifest")
        .arg(&copy)
        .arg("-skip-install")
        .stdin(Stdio::null())
        .output()
        .expect("run validate-krew-manifest");
    succeeded(&format!("validate-krew-manifest of {}", manifest.display()), output);
}

/// The completion candidates (without descriptions) and the directive of a `__complete` answer.
fn candidates(protocol: &str) -> (Vec<String>, String) {
    let mut lines: Vec<&str> = protocol.lines().collect();
    let directive = lines.pop().filter(|line| line.starts_with(':')).unwrap_or_else(|| panic!("no :<directive> line in {protocol:?}"));
    (lines.iter().map(|line| line.split('\t').next().unwrap_or_default().to_string()).collect(), directive.to_string())
}

#[test]
fn checked_in_krew_manifest_validates_and_matches_the_crate_version() {
    let manifest = repo_root().join("krew-manifest.yaml");
    validate_manifest(&manifest);
    let text = std::fs::read_to_string(&manifest).expect("read krew-manifest.yaml");
    assert!(text.contains(&format!("\n  version: v{}\n", env!("CARGO_PKG_VERSION"))), "spec.version is not v{}", env!("CARGO_PKG_VERSION"));
    for platform in ["linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"] {
        let archive = format!("/kubectl-ciliumpool_v{}_{platform}.tar.gz", env!("CARGO_PKG_VERSION"));
        assert!(text.contains(&archive), "no uri ending in {archive}");
    }
}

/// A krew root holding the plugin installed from the archive `tools/package.sh` made, the way a
/// user installs it (`kubectl krew install --manifest --archive`, no index, no network), with the
/// completion helper linked into `$KREW_ROOT/bin` as the manifest's caveats say.
struct Installed {
    root: tempfile::TempDir,
}

impl Installed {
    /// `tools/package.sh --binary` packages the debug binary cargo built for this test run instead
    /// of running `cargo build --release` (minutes on 2 cores); everything after the build line —
    /// archive, sha256, rendered manifest — is the release flow itself.
    fn new() -> Installed {
        let root = tempfile::tempdir().expect("temp dir");
        let out = root.path().join("dist");
        let started = Instant::now();
        let output = Command::new(repo_root().join("tools/package.sh"))
            .arg("--out")
            .arg(&out)
            .arg("--binary")
            .arg(PLUGIN)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .output()
            .expect("run tools/package.sh");
        let printed = succeeded("tools/package.sh", output);
        eprintln!("[packaging] tools/package.sh: {:.1} s", started.elapsed().as_secs_f64());
        let paths: Vec<PathBuf> = printed.lines().map(PathBuf::from).collect();
        let [archive, manifest] = paths.as_slice() else { panic!("package.sh printed {printed:?}, not the archive and the manifest") };
        assert_eq!(manifest, &out.join("krew-manifest.yaml"));
        let expected_archive = format!("kubectl-ciliumpool_v{}_{}_{}.tar.gz", env!("CARGO_PKG_VERSION"), krew_os(), krew_arch());
        assert_eq!(archive.file_name().and_then(|n| n.to_str()), Some(expected_archive.as_str()));
        validate_manifest(manifest);

        let installed = Installed { root };
        let started = Instant::now();
        let install = installed
            .kubectl()
            .arg("krew")
            .arg("install")
            .arg(format!("--manifest={}", manifest.display()))
            .arg(format!("--archive={}", archive.display()))
            .output()
            .expect("run kubectl krew");
        succeeded("kubectl krew install --manifest --archive", install);
        eprintln!("[packaging] kubectl krew install: {:.1} s", started.elapsed().as_secs_f64());

        let store = installed.krew_root().join("store/ciliumpool").join(format!("v{}", env!("CARGO_PKG_VERSION")));
        for file in ["kubectl-ciliumpool", "kubectl_complete-ciliumpool", "LICENSE"] {
            assert!(store.join(file).is_file(), "krew did not install {file} into {}", store.display());
        }
        std::os::unix::fs::symlink(
            store.join("kubectl_complete-ciliumpool"),
            installed.krew_root().join("bin/kubectl_complete-ciliumpool"),
        )
        .expect("link the completion helper");
        installed
    }

    fn krew_root(&self) -> PathBuf {
        self.root.path().join("krew")
    }

    /// The real kubectl with PATH = `$KREW_ROOT/bin` + `TESTENV_BIN` only (nothing else can
    /// provide the plugin) and a HOME without any kubeconfig.
    fn kubectl(&self) -> Command {
        let path = std::env::join_paths([self.krew_root().join("bin"), testenv_bin()]).expect("PATH");
        let mut command = Command::new(testenv_bin().join("kubectl"));
        command
            .env_clear()
            .env("PATH", path)
            .env("HOME", self.root.path())
            .env("KREW_ROOT", self.krew_root())
            .env("KREW_NO_UPGRADE_CHECK", "1")
            .env("NO_COLOR", "1")
            .current_dir(repo_root())
            .stdin(Stdio::null());
        command
    }

    /// `kubectl __complete ciliumpool WORDS...`: candidates and directive.
    fn complete(&self, words: &[&str]) -> (Vec<String>, String) {
        let output = self.kubectl().arg("__complete").arg("ciliumpool").args(words).output().expect("run kubectl __complete");
        candidates(&succeeded(&format!("kubectl __complete ciliumpool {}", words.join(" ")), output))
    }
}

fn krew_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        os => os,
    }
}

fn krew_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        arch => arch,
    }
}

/// The whole distribution path in one test, because packaging and installing happen once:
/// package.sh → validate-krew-manifest → krew install → `kubectl ciliumpool` → `kubectl __complete`.
#[test]
fn packaged_archive_installs_with_krew_and_runs_and_completes_through_kubectl() {
    let installed = Installed::new();

    let version =
        succeeded("kubectl ciliumpool version", installed.kubectl().args(["ciliumpool", "version"]).output().expect("run kubectl"));
    assert!(version.contains(&format!("Plugin version: {}", env!("CARGO_PKG_VERSION"))), "{version}");

    let usage = succeeded(
        "kubectl ciliumpool usage -f examples/snapshot",
        installed.kubectl().args(["ciliumpool", "usage", "-f", "examples/snapshot", "--no-headers"]).output().expect("run kubectl"),
    );
    let pools: Vec<&str> = usage.lines().filter_map(|line| line.split_whitespace().next()).collect();
    for pool in ["batch", "blue", "default", "green"] {
        assert!(pools.contains(&pool), "no row for pool {pool}:\n{usage}");
    }

    assert_eq!(installed.complete(&["us"]), (vec!["usage".to_string()], ":4".to_string()));
    let (subcommands, _) = installed.complete(&[""]);
    for name in ["usage", "inspect", "check", "reserve-range", "migrate", "completion", "version"] {
        assert!(subcommands.contains(&name.to_string()), "{name} missing from {subcommands:?}");
    }
    assert!(!subcommands.iter().any(|c| c.starts_with("__")), "hidden subcommand offered: {subcommands:?}");
    let (outputs, directive) = installed.complete(&["usage", "-o", ""]);
    for format in ["json", "yaml", "wide"] {
        assert!(outputs.contains(&format.to_string()), "{format} missing from {outputs:?}");
    }
    assert_eq!(directive, ":4");
    let (flags, _) = installed.complete(&["usage", "--fail"]);
    assert_eq!(flags, ["--fail-above"]);
    assert_eq!(installed.complete(&["inspect", "-f", "examples/snapshot", "b"]).0, ["batch", "blue"]);
    // -f takes file names: the shell completes them (directive 0), the plugin offers nothing.
    assert_eq!(installed.complete(&["usage", "-f", "exa"]), (vec![], ":0".to_string()));
    // No cluster configured: no pool names, and no error either.
    assert_eq!(installed.complete(&["inspect", ""]), (vec![], ":4".to_string()));
}

/// Pool names come from the live cluster when no -f is given (through the plugin's own
/// `__complete`, as the helper calls it), and an unreachable server yields none — never an error.
#[test]
fn completion_offers_pool_names_from_the_cluster() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.apply_yaml(
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec: {ipv4: {cidrs: [10.40.0.0/16], maskSize: 24}}\n---\n\
         apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: green}\nspec: {ipv4: {cidrs: [10.60.0.0/16], maskSize: 24}}\n",
    );
    // kubectl hands the helper its environment: KUBECONFIG, or kubectl's flags among the words.
    let complete = |kubeconfig_env: Option<&Path>, words: &[&str]| {
        let mut command = Command::new(PLUGIN);
        command.env_remove("KUBECONFIG").arg("__complete").arg("--").args(words).stdin(Stdio::null());
        if let Some(kubeconfig) = kubeconfig_env {
            command.env("KUBECONFIG", kubeconfig);
        }
        candidates(&succeeded(&format!("kubectl-ciliumpool __complete -- {}", words.join(" ")), command.output().expect("run plugin")))
    };
    let kubeconfig = cluster.kubeconfig.to_str().expect("UTF-8 path");
    assert_eq!(complete(Some(&cluster.kubeconfig), &["usage", ""]), (vec!["blue".to_string(), "green".to_string()], ":4".to_string()));
    assert_eq!(complete(None, &["reserve-range", "--kubeconfig", kubeconfig, "g"]).0, ["green"]);
    assert_eq!(complete(None, &["inspect", "--kubeconfig", kubeconfig, "--context", "nope", ""]).0, Vec::<String>::new());

    let unreachable = tempfile::tempdir().expect("temp dir");
    let kubeconfig = unreachable.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\nusers:\n- name: u\n  user: {token: t}\n\
         contexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n",
    )
    .expect("write kubeconfig");
    let output = Command::new(PLUGIN).args(["__complete", "--", "usage", ""]).env("KUBECONFIG", &kubeconfig).output().expect("run plugin");
    assert_eq!(candidates(&succeeded("__complete against an unreachable server", output)), (vec![], ":4".to_string()));
}

/// `completion bash|zsh|fish` ask the plugin (`__complete`) at each TAB, so they complete what
/// kubectl's completion does, pool names and a pool's CIDRs included: each is sourced into the
/// real shell in a pseudo-terminal, a line is completed with TAB and then printed word by word.
/// bash always runs; zsh and fish where they are installed (the test says when one is not).
/// PowerShell gets clap's static script.
#[test]
fn completion_scripts_complete_pool_names_in_the_real_shells() {
    let script = succeeded("completion powershell", Command::new(PLUGIN).args(["completion", "powershell"]).output().expect("run plugin"));
    assert!(script.contains("Register-ArgumentCompleter") && script.contains("reserve-range"), "{}", &script[..script.len().min(400)]);
    assert!(!script.contains("__complete"), "the static script offers the hidden __complete");

    let cases = [
        ("inspect -f examples/snapshot bl", "<inspect><-f><examples/snapshot><blue>"),
        (
            "reserve-range default -f examples/snapshot --drain fd00:",
            "<reserve-range><default><-f><examples/snapshot><--drain><fd00:10::/104>",
        ),
        ("usage --output=ya", "<usage><--output=yaml>"),
    ];
    let shells: [(&str, &[&str], &str); 3] = [
        ("bash", &["--norc", "--noprofile", "-i"], "source <(kubectl-ciliumpool completion bash)"),
        ("zsh", &["-f", "-i"], "autoload -U compinit && compinit -u && source <(kubectl-ciliumpool completion zsh)"),
        ("fish", &["--no-config", "-i"], "kubectl-ciliumpool completion fish | source"),
    ];
    let bin_dir = Path::new(PLUGIN).parent().expect("the plugin's directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for (shell, flags, setup) in shells {
        if shell != "bash" && Command::new(shell).arg("-c").arg("exit 0").status().map(|s| !s.success()).unwrap_or(true) {
            eprintln!("skipped the {shell} script: {shell} is not installed");
            continue;
        }
        for (typed, printed) in cases {
            let home = tempfile::tempdir().expect("temp home");
            let mut command = Command::new(shell);
            command.args(flags).current_dir(repo_root()).env("PATH", &path).env("HOME", home.path());
            command.env("XDG_CONFIG_HOME", home.path()).env("XDG_DATA_HOME", home.path()).env("PS1", "$ ").env("TERM", "xterm");
            let mut term = rexpect::session::spawn_command(command, Some(30_000)).expect("the shell starts in a pseudo-terminal");
            term.send_line(setup).expect("type");
            // The completion runs the plugin: give it time, then print the completed line's words.
            term.send(&format!("kubectl-ciliumpool {typed}\t")).expect("type");
            term.flush().expect("flush");
            std::thread::sleep(std::time::Duration::from_secs(3));
            term.send("\x01printf '<%s>' \r").expect("type");
            term.flush().expect("flush");
            term.exp_string(printed)
                .unwrap_or_else(|e| panic!("{shell}: `kubectl-ciliumpool {typed}<TAB>` did not complete to {printed}: {e}"));
            term.send_line("exit").expect("type");
        }
    }
}

/// Makes `to` hold exactly the files of `from`, rewriting only those whose content differs. A
/// `.crate` stores one fixed mtime for every file, so unpacking over an earlier copy would leave
/// cargo's mtime-based fingerprints unaware of changed sources: here a changed file is new.
fn sync_by_content(from: &Path, to: &Path) {
    let wanted = files_under(from);
    for path in &wanted {
        let content = std::fs::read(from.join(path)).expect("read unpacked file");
        let target = to.join(path);
        if std::fs::read(&target).ok().as_ref() != Some(&content) {
            std::fs::create_dir_all(target.parent().expect("parent")).expect("mkdir");
            std::fs::write(&target, &content).expect("write unpacked file");
        }
    }
    for path in files_under(to).into_iter().filter(|p| wanted.binary_search(p).is_err()) {
        std::fs::remove_file(to.join(path)).expect("remove a file the crate no longer has");
    }
}

/// The cargo this test runs under (cargo sets `CARGO` for tests), else the one on PATH.
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo package` ships what building needs and nothing else, and `cargo install` of the unpacked
/// crate — no .git, offline, from the local registry cache — builds a plugin that runs and says
/// its commit is unknown and its build date is SOURCE_DATE_EPOCH. Cargo runs in its own target
/// directory (`target/packaged-crate`, kept between runs so only the crate itself is rebuilt):
/// the `cargo test` running this holds the lock on the default one.
#[test]
fn packaged_crate_ships_only_what_it_needs_and_installs_offline() {
    let target_dir = Path::new(PLUGIN).parent().and_then(Path::parent).expect("target dir").join("packaged-crate");
    let package = |flag: &str| {
        let output = cargo()
            .args(["package", flag, "--locked", "--offline", "--allow-dirty"])
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .output()
            .expect("run cargo package");
        succeeded(&format!("cargo package {flag}"), output)
    };
    let started = Instant::now();
    let list = package("--list");
    let files: Vec<&str> = list.lines().collect();
    for needed in
        ["Cargo.toml", "Cargo.lock", "build.rs", "LICENSE", "README.md", "src/main.rs", "src/lib.rs", "kubectl_complete-ciliumpool"]
    {
        assert!(files.contains(&needed), "the package lacks {needed}: {files:?}");
    }
    let extra: Vec<&&str> = files
        .iter()
        .filter(|f| {
            !f.starts_with("src/")
                && ![
                    "Cargo.toml",
                    "Cargo.toml.orig",
                    "Cargo.lock",
                    "build.rs",
                    "LICENSE",
                    "README.md",
                    "kubectl_complete-ciliumpool",
                    ".cargo_vcs_info.json",
                ]
                .contains(f)
        })
        .collect();
    assert!(extra.is_empty(), "the package ships files it does not need: {extra:?}");
    // Under src/ only Rust sources, and the completion scripts `include_str!` embeds.
    let not_source: Vec<&&str> =
        files.iter().filter(|f| f.starts_with("src/") && !f.ends_with(".rs") && !f.starts_with("src/commands/completion/")).collect();
    assert!(not_source.is_empty(), "the package ships files under src/ that are not sources: {not_source:?}");
    for script in ["bash", "zsh", "fish"] {
        let needed = format!("src/commands/completion/kubectl-ciliumpool.{script}");
        assert!(files.contains(&needed.as_str()), "the package lacks {needed}, which completion.rs embeds");
    }

    // --no-verify: the build below is the verification, in a place that is kept between runs.
    package("--no-verify");
    let name = format!("kubectl-ciliumpool-{}", env!("CARGO_PKG_VERSION"));
    let crate_file = target_dir.join("package").join(format!("{name}.crate"));
    eprintln!("[packaging] cargo package: {:.1} s", started.elapsed().as_secs_f64());

    // Unpacked into a fixed place, so the build's fingerprints stay valid from one run to the next.
    let staging = tempfile::tempdir().expect("temp dir");
    succeeded(
        "tar -xzf the .crate",
        Command::new("tar").arg("-xzf").arg(&crate_file).arg("-C").arg(staging.path()).output().expect("run tar"),
    );
    let unpacked = target_dir.join("unpacked");
    sync_by_content(staging.path(), &unpacked);
    let root = tempfile::tempdir().expect("temp dir");
    let started = Instant::now();
    let install = cargo()
        .args(["install", "--locked", "--offline", "--debug", "--path"])
        .arg(unpacked.join(&name))
        .arg("--root")
        .arg(root.path())
        .env("CARGO_TARGET_DIR", &target_dir)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .stdin(Stdio::null())
        .output()
        .expect("run cargo install");
    succeeded("cargo install --path <unpacked crate>", install);
    eprintln!("[packaging] cargo install of the packaged crate: {:.1} s", started.elapsed().as_secs_f64());

    let installed = root.path().join("bin/kubectl-ciliumpool");
    let version = succeeded(
        "installed version -o json",
        Command::new(&installed)
            .args(["version", "-o", "json", "-f", "examples/snapshot"])
            .current_dir(repo_root())
            .output()
            .expect("run the installed plugin"),
    );
    let version: serde_json::Value = serde_json::from_str(&version).expect("version JSON");
    assert_eq!(version["plugin"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(version["plugin"]["gitCommit"], "unknown", "the packaged crate has no .git");
    assert_eq!(version["plugin"]["buildDate"], "2023-11-14T22:13:20Z", "SOURCE_DATE_EPOCH=1700000000");
    // Built from the same sources as the binary under test, so it answers the same (a stale
    // build of an older package would not).
    let run = |binary: &Path, args: &[&str]| {
        let output = Command::new(binary).args(args).current_dir(repo_root()).output().expect("run the plugin");
        (output.status.code(), stdout_of(&output))
    };
    for args in [&["usage", "-f", "examples/snapshot", "-o", "json"][..], &["check", "-f", "examples/snapshot", "-o", "json"], &["--help"]]
    {
        assert_eq!(run(&installed, args), run(Path::new(PLUGIN), args), "the installed plugin and the one under test differ on {args:?}");
    }
    let ours: serde_json::Value =
        serde_json::from_str(&run(Path::new(PLUGIN), &["version", "-o", "json", "-f", "examples/snapshot"]).1).expect("version JSON");
    assert_eq!(version.as_object().map(|o| o.keys().collect::<Vec<_>>()), ours.as_object().map(|o| o.keys().collect::<Vec<_>>()));
}
