//! The release pipeline as code: both GitHub workflows pass actionlint (built from Go modules by
//! tools/actionlint/build.sh; `tools/test.sh` exports `ACTIONLINT`), and the release workflow,
//! the krew-release-bot template `.krew.yaml` and `tools/package.sh` name exactly the archives and
//! platforms `krew-manifest.yaml` names. Everything is parsed, not grepped.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use support::repo_root;

const VERSION: &str = concat!("v", env!("CARGO_PKG_VERSION"));
const WORKFLOWS: [&str; 2] = [".github/workflows/ci.yml", ".github/workflows/release.yml"];

/// `ACTIONLINT`: the binary tools/actionlint/build.sh built. Unset fails the test, never skips it.
fn actionlint() -> PathBuf {
    match std::env::var_os("ACTIONLINT") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!(
            "ACTIONLINT is not set: run `ACTIONLINT=$(tools/actionlint/build.sh) cargo test --test integration release::`, or tools/test.sh"
        ),
    }
}

/// actionlint on `files` inside `dir`. Its shellcheck and pyflakes integrations are off: they
/// would make the result depend on what else is installed.
fn run_actionlint(dir: &Path, files: &[&str]) -> Output {
    Command::new(actionlint())
        .args(["-no-color", "-shellcheck=", "-pyflakes="])
        .args(files)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run actionlint")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn yaml(relative: &str) -> Value {
    let path = repo_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    parse_yaml(&text, relative)
}

fn parse_yaml(text: &str, what: &str) -> Value {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("{what} is not YAML: {e}"))
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or_else(|| panic!("no string at {pointer} in {value}"))
}

#[test]
fn both_workflows_pass_actionlint() {
    let output = run_actionlint(repo_root(), &WORKFLOWS);
    assert!(output.status.success(), "actionlint found problems ({}):\n{}{}", output.status, text(&output.stdout), text(&output.stderr));
}

/// The linter really reads workflows: an undefined context property and an unknown runner
/// label are reported, with exit 1.
#[test]
fn actionlint_rejects_a_broken_workflow() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join(".github/workflows")).expect("mkdir");
    std::fs::write(
        dir.path().join(".github/workflows/broken.yml"),
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: echo ${{ github.no_such_property }}\n",
    )
    .expect("write workflow");
    let output = run_actionlint(dir.path(), &[".github/workflows/broken.yml"]);
    let report = text(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "actionlint accepted a broken workflow:\n{report}{}", text(&output.stderr));
    assert!(report.contains("no_such_property"), "{report}");
}

/// One krew platform: selector, archive file name, what the archive must hold.
#[derive(Debug, PartialEq)]
struct Platform {
    os: String,
    arch: String,
    archive: String,
    bin: String,
    files: Vec<String>,
}

fn manifest_platforms(manifest: &Value) -> Vec<Platform> {
    let platforms = manifest.pointer("/spec/platforms").and_then(Value::as_array).expect("spec.platforms");
    platforms
        .iter()
        .map(|platform| {
            let uri = str_at(platform, "/uri");
            let prefix = format!("https://github.com/kubectl-ciliumpool/kubectl-ciliumpool/releases/download/{VERSION}/");
            let archive = uri.strip_prefix(&prefix).unwrap_or_else(|| panic!("uri {uri} is not a release asset of {VERSION}"));
            Platform {
                os: str_at(platform, "/selector/matchLabels/os").to_string(),
                arch: str_at(platform, "/selector/matchLabels/arch").to_string(),
                archive: archive.to_string(),
                bin: str_at(platform, "/bin").to_string(),
                files: platform["files"].as_array().expect("files").iter().map(|f| str_at(f, "/from").to_string()).collect(),
            }
        })
        .collect()
}

/// `tools/package.sh --list-targets`: target triple -> archive file name.
fn package_sh_targets() -> BTreeMap<String, String> {
    let output =
        Command::new(repo_root().join("tools/package.sh")).arg("--list-targets").stdin(Stdio::null()).output().expect("run package.sh");
    assert!(output.status.success(), "package.sh --list-targets failed: {}", text(&output.stderr));
    text(&output.stdout)
        .lines()
        .map(|line| {
            let (target, archive) = line.split_once(' ').unwrap_or_else(|| panic!("package.sh --list-targets printed {line:?}"));
            (target.to_string(), archive.to_string())
        })
        .collect()
}

/// The release workflow's build matrix, with each entry's archive name: the job's `ARCHIVE`
/// expression evaluated for the tag `VERSION`.
fn workflow_targets(workflow: &Value) -> Vec<(String, String, String, String)> {
    let build = &workflow["jobs"]["build"];
    let template = str_at(build, "/env/ARCHIVE");
    let include = build.pointer("/strategy/matrix/include").and_then(Value::as_array).expect("jobs.build.strategy.matrix.include");
    include
        .iter()
        .map(|entry| {
            let (target, os, arch) = (str_at(entry, "/target"), str_at(entry, "/os"), str_at(entry, "/arch"));
            let archive =
                template.replace("${{ github.ref_name }}", VERSION).replace("${{ matrix.os }}", os).replace("${{ matrix.arch }}", arch);
            assert!(!archive.contains("${{"), "ARCHIVE uses an expression this test does not know: {template}");
            (target.to_string(), os.to_string(), arch.to_string(), archive)
        })
        .collect()
}

/// `.krew.yaml` rendered the way krew-release-bot renders it for the tag `VERSION`, with the
/// placeholder sha256 of krew-manifest.yaml where the bot puts the real one.
fn render_krew_template(template: &str) -> String {
    let placeholder = "0".repeat(64);
    let mut rendered = String::new();
    for line in template.lines() {
        let indent = &line[..line.len() - line.trim_start().len()];
        match line.trim_start().strip_prefix("{{addURIAndSha \"").and_then(|rest| rest.strip_suffix("\" .TagName }}")) {
            Some(uri) => rendered.push_str(&format!("{indent}uri: {uri}\n{indent}sha256: \"{placeholder}\"\n")),
            None => rendered.push_str(&format!("{line}\n")),
        }
    }
    let rendered = rendered.replace("{{ .TagName }}", VERSION);
    assert!(!rendered.contains("{{"), "a template action this test does not render:\n{rendered}");
    rendered
}

#[test]
fn release_workflow_krew_template_and_package_sh_name_the_manifests_archives() {
    let manifest = yaml("krew-manifest.yaml");
    let platforms = manifest_platforms(&manifest);
    let pairs: Vec<(&str, &str)> = platforms.iter().map(|p| (p.os.as_str(), p.arch.as_str())).collect();
    assert_eq!(pairs, [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64"), ("windows", "amd64")]);
    for platform in &platforms {
        assert_eq!(platform.archive, format!("kubectl-ciliumpool_{VERSION}_{}_{}.tar.gz", platform.os, platform.arch));
        let exe = if platform.os == "windows" { ".exe" } else { "" };
        assert_eq!(platform.bin, format!("kubectl-ciliumpool{exe}"));
        assert_eq!(platform.files, [format!("kubectl-ciliumpool{exe}").as_str(), "kubectl_complete-ciliumpool", "LICENSE"]);
    }

    let package_sh = package_sh_targets();
    let workflow = yaml(".github/workflows/release.yml");
    let targets = workflow_targets(&workflow);
    assert_eq!(targets.len(), platforms.len(), "the release matrix builds {targets:?}");
    for (target, os, arch, archive) in &targets {
        let platform = platforms
            .iter()
            .find(|p| &p.archive == archive)
            .unwrap_or_else(|| panic!("release.yml builds {archive}, krew-manifest.yaml has no such uri"));
        assert_eq!((&platform.os, &platform.arch), (os, arch), "{target}");
        assert_eq!(package_sh.get(target), Some(archive), "tools/package.sh --target {target} names another archive");
    }
    assert_eq!(package_sh.len(), targets.len(), "package.sh knows targets the release does not build: {package_sh:?}");
    // Triggered by version tags; the uploaded files are the archive package.sh wrote and its sum.
    assert_eq!(workflow.pointer("/on/push/tags").or_else(|| workflow.pointer("/true/push/tags")), Some(&json!(["v*"])));
    let upload = workflow["jobs"]["build"]["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact@")))
        .expect("an upload-artifact step");
    assert_eq!(
        str_at(upload, "/with/path").lines().map(str::trim).collect::<Vec<_>>(),
        ["dist/${{ env.ARCHIVE }}", "dist/${{ env.ARCHIVE }}.sha256"]
    );

    let template = std::fs::read_to_string(repo_root().join(".krew.yaml")).expect("read .krew.yaml");
    let rendered = parse_yaml(&render_krew_template(&template), ".krew.yaml rendered");
    assert_eq!(rendered, manifest, ".krew.yaml rendered for {VERSION} differs from krew-manifest.yaml");
    let steps = workflow["jobs"]["release"]["steps"].as_array().expect("release steps");
    assert!(
        steps.iter().any(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("rajatjindal/krew-release-bot@"))),
        "no krew-release-bot step"
    );
}

/// Only the host target can really be built here; the others fail at once with one line that
/// says what is missing, and write nothing.
#[test]
fn package_sh_refuses_a_target_it_cannot_build_in_one_line() {
    let out = tempfile::tempdir().expect("temp dir");
    let foreign = if cfg!(target_os = "macos") { "x86_64-pc-windows-msvc" } else { "aarch64-apple-darwin" };
    for (target, says) in [(foreign, "cannot build"), ("riscv64gc-unknown-linux-gnu", "unknown target")] {
        let output = Command::new(repo_root().join("tools/package.sh"))
            .args(["--target", target, "--out"])
            .arg(out.path())
            .stdin(Stdio::null())
            .output()
            .expect("run package.sh");
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "package.sh --target {target}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
        assert!(stderr.starts_with(&format!("package.sh: {says} {target}")), "{stderr}");
        assert!(text(&output.stdout).is_empty());
    }
    assert_eq!(std::fs::read_dir(out.path()).expect("read out dir").count(), 0, "package.sh wrote something");
}

#[test]
fn krew_template_rendering_is_checked_line_by_line() {
    let rendered = render_krew_template(
        "spec:\n  version: {{ .TagName }}\n  - x\n    {{addURIAndSha \"https://h/{{ .TagName }}/a.tar.gz\" .TagName }}\n",
    );
    assert_eq!(
        rendered,
        format!("spec:\n  version: {VERSION}\n  - x\n    uri: https://h/{VERSION}/a.tar.gz\n    sha256: \"{}\"\n", "0".repeat(64))
    );
}

/// The `image` job pushes the image deploy/deployment.yaml runs: the workflow's `IMAGE` tagged with
/// the release tag (the `build` job checks the tag is Cargo.toml's version), built from
/// deploy/image/Dockerfile for exactly the Linux platforms the matrix builds, out of the directory
/// the job extracts their archives into; the Dockerfile's non-root user is the Deployment's, and
/// the release waits for the image.
#[test]
fn the_release_image_is_the_one_the_deployment_runs() {
    let workflow = yaml(".github/workflows/release.yml");
    let image = str_at(&workflow, "/env/IMAGE");
    let job = &workflow["jobs"]["image"];
    let steps = job["steps"].as_array().expect("image job steps");
    let uses = |prefix: &str| {
        steps
            .iter()
            .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(prefix)))
            .unwrap_or_else(|| panic!("no {prefix} step in the image job"))
    };
    let build = uses("docker/build-push-action@");
    assert_eq!(str_at(build, "/with/tags"), "${{ env.IMAGE }}:${{ github.ref_name }}");
    assert_eq!(build["with"]["push"], json!(true));
    assert_eq!(str_at(build, "/with/file"), "deploy/image/Dockerfile");
    assert_eq!(str_at(uses("docker/login-action@"), "/with/registry"), "ghcr.io");
    assert_eq!(image.split('/').next(), Some("ghcr.io"));
    assert_eq!(str_at(job, "/permissions/packages"), "write");
    let linux: Vec<String> =
        workflow_targets(&workflow).iter().filter(|(_, os, _, _)| os == "linux").map(|(_, os, arch, _)| format!("{os}/{arch}")).collect();
    assert_eq!(str_at(build, "/with/platforms").split(',').collect::<Vec<_>>(), linux);
    assert_eq!(str_at(uses("actions/download-artifact@"), "/with/pattern"), "archive-linux-*");
    let context = str_at(build, "/with/context");
    let extract = steps.iter().filter_map(|s| s["run"].as_str()).find(|r| r.contains("tar -xzf")).expect("a step extracting the archives");
    assert!(extract.contains(&format!("-C \"{context}/linux-$arch\" kubectl-ciliumpool")), "{extract}");
    assert!(
        workflow["jobs"]["release"]["needs"].as_array().is_some_and(|n| n.contains(&json!("image"))),
        "the release does not wait for the image"
    );

    let dockerfile = std::fs::read_to_string(repo_root().join("deploy/image/Dockerfile")).expect("read deploy/image/Dockerfile");
    let instructions: Vec<(&str, &str)> =
        dockerfile.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).map(|l| l.split_once(' ').unwrap_or((l, ""))).collect();
    let instruction = |name: &str| instructions.iter().find(|(n, _)| *n == name).map(|(_, rest)| *rest).unwrap_or_default();
    assert!(["scratch", "gcr.io/distroless/static"].iter().any(|base| instruction("FROM").starts_with(base)), "{dockerfile}");
    assert!(instruction("COPY").contains("linux-${TARGETARCH}/kubectl-ciliumpool "), "{dockerfile}");
    let user = instruction("USER");

    let deployment = yaml("deploy/deployment.yaml");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(str_at(container, "/image"), format!("{image}:{VERSION}"), "deploy/deployment.yaml runs another image");
    let security = &deployment["spec"]["template"]["spec"]["securityContext"];
    let (uid, gid) = (security["runAsUser"].as_u64().expect("runAsUser"), security["runAsGroup"].as_u64().expect("runAsGroup"));
    assert_ne!(uid, 0);
    assert_eq!(user, format!("{uid}:{gid}"), "the image's user is not the Deployment's");
    assert_eq!(container["args"][0], "serve");
}
