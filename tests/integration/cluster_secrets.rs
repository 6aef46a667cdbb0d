//! No credential ever reaches the output (issue #15): every command, at every verbosity, with
//! kubeconfigs holding each kind of credential — token, client key and certificate data, basic
//! auth, an exec plugin with arguments and environment, an auth-provider — against the real
//! kube-apiserver (which rejects them: 401), a server nobody listens on, and broken configs.

use crate::support;

use serde_json::json;
use std::path::{Path, PathBuf};
use support::{Dialect, TestCluster};

/// Every command the plugin has that talks to a cluster.
const COMMANDS: &[&[&str]] = &[
    &["usage"],
    &["usage", "-o", "json"],
    &["inspect", "blue"],
    &["check"],
    &["reserve-range", "--list"],
    &["reserve-range", "blue", "10.40.0.1", "--yes"],
    &["migrate", "--dry-run"],
    &["migrate", "--status"],
    &["migrate", "--yes"],
    &["migrate", "--finalize", "--yes"],
    &["version"],
];

/// (name, the `user:` entry, the secret values it holds).
fn credentials(dir: &Path) -> Vec<(&'static str, String, Vec<String>)> {
    // A throwaway key and certificate, only for their secrecy: the server does not trust them.
    let key = dir.join("key.pem");
    let cert = dir.join("cert.pem");
    let ok = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=secret-user", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(ok.status.success(), "openssl: {}", String::from_utf8_lossy(&ok.stderr));
    let b64 = |path: &PathBuf| {
        let out = std::process::Command::new("base64").arg("-w0").arg(path).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let (key_data, cert_data) = (b64(&key), b64(&cert));
    let plugin = dir.join("get-token");
    std::fs::write(&plugin, "#!/bin/sh\n# Prints a credential the server will reject; its arguments and environment are secret too.\nprintf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"exectok-SECRET-%s\"}}' \"$PLUGIN_KEY\"\n").unwrap();
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let failing = dir.join("fail-token");
    std::fs::write(&failing, "#!/bin/sh\necho \"out-SECRET-fail $1 $PLUGIN_KEY\"\necho err-SECRET-fail >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&failing, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let exec = |command: &Path| {
        format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      args: [arg-SECRET-exec]\n      env: [{{name: PLUGIN_KEY, value: env-SECRET-exec}}]\n      interactiveMode: Never\n",
            command.display()
        )
    };
    vec![
        ("token", "    token: tok-SECRET-token\n".to_string(), vec!["tok-SECRET-token".into()]),
        ("client key and certificate data", format!("    client-certificate-data: {cert_data}\n    client-key-data: {key_data}\n"), vec![key_data[40..100].to_string(), cert_data[40..100].to_string()]),
        ("basic auth", "    username: user-SECRET-basic\n    password: pw-SECRET-basic\n".to_string(), vec!["pw-SECRET-basic".into()]),
        ("exec plugin", exec(&plugin), vec!["SECRET-exec".into(), "exectok-SECRET".into()]),
        ("failing exec plugin", exec(&failing), vec!["SECRET-exec".into(), "SECRET-fail".into()]),
        ("auth-provider", "    auth-provider:\n      name: oidc\n      config: {id-token: idtok-SECRET-ap, refresh-token: ref-SECRET-ap, client-secret: cs-SECRET-ap}\n".to_string(), vec!["SECRET-ap".into()]),
    ]
}

fn kubeconfig(path: &Path, server: &str, ca: &str, user: &str) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: {{server: '{server}', certificate-authority-data: {ca}}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers:\n- name: u\n  user:\n{user}"
        ),
    )
    .unwrap();
}

#[test]
fn no_secret_in_any_output() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.create_objects(vec![json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}}})]);
    let admin: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&cluster.kubeconfig).unwrap()).unwrap();
    let ca = admin["clusters"][0]["cluster"]["certificate-authority-data"].as_str().map(str::to_string).unwrap_or_else(|| {
        let path = admin["clusters"][0]["cluster"]["certificate-authority"].as_str().expect("a CA");
        let out = std::process::Command::new("base64").arg("-w0").arg(path).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    });
    let dir = tempfile::tempdir().unwrap();
    let url_secret = cluster.server.replacen("https://", "https://admin:url-SECRET-pw@", 1) + "/?access_token=qs-SECRET-token";
    let servers = [
        ("the real apiserver", cluster.server.clone()),
        ("userinfo and access_token in the URL", url_secret),
        ("nobody listening", "https://127.0.0.1:1".to_string()),
    ];
    let mut runs = 0;
    for (kind, user, secrets) in credentials(dir.path()) {
        for (where_, server) in &servers {
            let config = dir.path().join("kubeconfig");
            kubeconfig(&config, server, &ca, &user);
            for command in COMMANDS {
                for verbosity in [&[][..], &["-v"][..]] {
                    let out = cluster
                        .plugin_process()
                        .current_dir(dir.path())
                        .args(*command)
                        .args(verbosity)
                        .args(["--kubeconfig"])
                        .arg(&config)
                        .args(["--request-timeout", "5s"])
                        .stdin(std::process::Stdio::null())
                        .output()
                        .unwrap();
                    runs += 1;
                    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                    assert!(out.status.code().is_some(), "{kind} / {where_} / {command:?}: ended by a signal");
                    for secret in secrets.iter().map(String::as_str).chain(["url-SECRET-pw", "qs-SECRET-token"]) {
                        assert!(!text.contains(secret), "{kind} / {where_} / {command:?} {verbosity:?}: {secret:?} in:\n{text}");
                    }
                }
            }
        }
    }
    // Broken configs: a YAML error next to the token, a token file that cannot be read.
    for (name, text) in [
        ("yaml error", "apiVersion: v1\nusers:\n- name: u\n  user:\n    token: tok-SECRET-broken\n    password: [oops\n".to_string()),
        (
            "bad header",
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: {{server: '{}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers: [{{name: u, user: {{token: \"tok-SECRET-broken\\nX\"}}}}]\n",
                cluster.server
            ),
        ),
    ] {
        let config = dir.path().join("broken");
        std::fs::write(&config, text).unwrap();
        for command in COMMANDS {
            let out = cluster
                .plugin_process()
                .args(*command)
                .arg("--kubeconfig")
                .arg(&config)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            runs += 1;
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(!text.contains("SECRET"), "{name} / {command:?}: {text}");
        }
    }
    eprintln!(
        "[measure] secrets: {runs} runs (6 credential kinds x 3 servers x {} commands x 2 verbosities, + broken configs): no secret in any output",
        COMMANDS.len()
    );
}
