//! Error lines and exit codes of the everyday mistakes (docs/design/exit-codes.md): a context that
//! does not exist, `--fail-above 95%`, archives that cannot be read, a server that accepts
//! connections and never answers; and `migrate -f DIR` marking each file it prints.

use crate::support;

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;
use support::cli::{output, plugin, run};

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").display().to_string()
}

/// A kubeconfig with two contexts whose server is `server`.
fn kubeconfig(dir: &std::path::Path, server: &str) -> String {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: \"{server}\", insecure-skip-tls-verify: true}}\n\
             contexts:\n- name: staging\n  context: {{cluster: c, user: u}}\n- name: prod-eu1\n  context: {{cluster: c, user: u}}\n\
             current-context: staging\nusers:\n- name: u\n  user: {{token: not-a-secret}}\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// A TCP listener that accepts every connection and never answers (nor closes); its address.
fn silent_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for connection in listener.incoming() {
            held.push(connection);
        }
    });
    format!("https://{address}")
}

#[test]
fn an_unknown_context_lists_the_contexts_that_exist() {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:1");
    let (code, out, err) = run(&["usage", "--kubeconfig", &config, "--context", "nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert_eq!(
        err.trim_end(),
        "error: --context \"nope\": the kubeconfig has no such context; its contexts: staging, prod-eu1 (kubectl config get-contexts)"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(!err.contains("not-a-secret"));
}

#[test]
fn fail_above_takes_a_percent_sign() {
    let ex = example();
    let plain = run(&["usage", "--fail-above", "95", "-f", &ex]);
    let with_sign = run(&["usage", "--fail-above", "95%", "-f", &ex]);
    assert_ne!(plain.0, 2, "{}", plain.2);
    assert_eq!(plain, with_sign, "95% means 95");
    let (code, _, err) = run(&["usage", "--fail-above", "101%", "-f", &ex]);
    assert_eq!(code, 2);
    assert!(err.contains("not a percentage between 0 and 100"), "{err}");
}

#[test]
fn a_bad_flag_value_is_one_error_line_and_exit_2() {
    let ex = example();
    for args in [
        &["usage", "--fail-above", "abc", "-f", &ex][..],
        &["usage", "-o", "bogus", "-f", &ex],
        &["usage", "--bogus", "-f", &ex],
        &["check", "--timeout", "soon", "-f", &ex],
    ] {
        let (code, out, err) = run(args);
        assert_eq!((code, out.as_str()), (2, ""), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.ends_with('\n') && err.lines().count() == 1, "{args:?}: one line: {err:?}");
    }
    let (_, _, err) = run(&["usage", "--fail-above", "abc"]);
    assert_eq!(err, "error: invalid value 'abc' for '--fail-above <PCT>': not a percentage; use e.g. 90 or 90%; try '--help'\n");
    // --help itself is still clap's page, on stdout, exit 0.
    let (code, out, _) = run(&["usage", "--help"]);
    assert_eq!(code, 0);
    assert!(out.lines().count() > 10, "{out}");
}

#[test]
fn archives_that_cannot_be_read_say_so() {
    let dir = tempfile::tempdir().unwrap();
    // Starts like a zip, but the rest is missing (an interrupted download).
    let truncated = dir.path().join("cilium-sysdump.zip");
    std::fs::write(&truncated, b"PK\x03\x04\x14\x00\x00\x00truncated").unwrap();
    let (code, out, err) = run(&["usage", "-f", truncated.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(
        err.contains("not a readable zip archive") && err.contains("truncated or corrupt?") && err.contains("pass the directory with -f"),
        "{err}"
    );
    // Named like an archive, but text: not parsed as YAML (which would say "no Cilium object").
    let html = dir.path().join("sysdump.zip");
    std::fs::write(&html, "<html>login required</html>\n").unwrap();
    let (code, _, err) = run(&["check", "-f", html.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("named like an archive but it is not a zip or tar archive"), "{err}");
}

/// The plugin with `args` against a server that never answers: exit code, stdout, stderr. The
/// bound only ends the test if the plugin hangs.
fn against_a_silent_server(args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), &silent_server());
    output(plugin().args(args).args(["--kubeconfig", &config]).timeout(Duration::from_secs(300)))
}

#[test]
fn a_server_that_never_answers_ends_usage_with_exit_3_within_the_request_timeout() {
    let (code, out, err) = against_a_silent_server(&["usage", "--request-timeout", "2s"]);
    assert_eq!(code, 3, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("cannot reach the API server") && err.contains("no answer within --request-timeout 2s"), "{err}");
}

#[test]
fn without_request_timeout_the_default_deadline_ends_the_wait() {
    let (code, _, err) = against_a_silent_server(&["usage"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("no answer within 30s (the default deadline"), "{err}");
}

#[test]
fn version_answers_even_when_the_server_does_not() {
    let (code, out, err) = against_a_silent_server(&["version"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Plugin version: "), "{out}");
    assert!(out.contains("server: no answer within 2s"), "{out}");
}

#[test]
fn migrate_marks_each_file_of_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let pool = |name: &str| {
        format!(
            "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {{name: {name}}}\nspec: {{ipv4: {{cidrs: [\"10.9.0.0/16\"], maskSize: 24}}}}\n"
        )
    };
    std::fs::write(dir.path().join("a.yaml"), pool("a")).unwrap();
    std::fs::write(dir.path().join("b.yaml"), format!("---\n{}", pool("b"))).unwrap();
    let (code, out, err) = output(plugin().args(["migrate", "-f", "."]).current_dir(dir.path()));
    assert_eq!(code, 0, "{err}");
    let sources: Vec<&str> = out.lines().filter(|l| l.starts_with("# Source: ")).collect();
    assert_eq!(sources, ["# Source: ./a.yaml", "# Source: ./b.yaml"], "{out}");
    assert_eq!(out.matches("---\n").count(), 2, "one marker per file, none doubled: {out}");
    // Each converted value is the only change: the quoted CIDR keeps its quotes.
    assert!(out.contains("spec: {ipv4: {cidrs: [\"10.9.0.0/16\"], maskSize: 24}}"), "{out}");
    assert!(out.contains("apiVersion: cilium.io/v2\n"), "{out}");
}

/// No kubeconfig at all and a `--kubeconfig` file that does not exist are the same mistake, a
/// configuration to fix before any cluster is asked: both exit 2 (docs/design/exit-codes.md).
#[test]
fn no_kubeconfig_and_a_missing_kubeconfig_file_both_exit_2() {
    let home = tempfile::tempdir().unwrap();
    let no_config = || {
        let mut command = plugin();
        command.env("HOME", home.path()).env_remove("KUBERNETES_SERVICE_HOST").env_remove("KUBERNETES_SERVICE_PORT");
        command
    };
    let (code, stdout, stderr) = output(no_config().arg("usage"));
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.starts_with("error: no cluster configured") && stderr.contains("-f FILE"), "{stderr}");
    let missing = home.path().join("nonexistent");
    let (code, _, stderr) = output(no_config().arg("usage").arg("--kubeconfig").arg(&missing));
    assert_eq!(code, 2, "{stderr}");
}
