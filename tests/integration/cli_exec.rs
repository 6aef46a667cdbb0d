//! Exec credential plugins run as client-go runs them, within bounds (issue 53): the token a
//! plugin returns is never printed, even when the server echoes it; a plugin that never returns
//! ends the command within the deadline with nothing of it left running; one that writes without
//! end costs no memory; SIGTERM and SIGINT end it with the command. Against a hostile fake API
//! server on loopback that echoes the Authorization header it was sent into its error message.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::cli::{measured, plugin_process};

/// A server that answers every request 403 with the `Authorization` header it received quoted in
/// the message (the plugin prints a 403's message); its URL and the headers it received.
fn echo_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = kept.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut authorization = String::new();
                let mut line = String::new();
                let mut complete = false;
                while reader.read_line(&mut line).is_ok_and(|n| n > 0 && line.len() < 65536) {
                    if line == "\r\n" {
                        complete = true;
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("authorization")
                    {
                        authorization = value.trim().to_string();
                    }
                    line.clear();
                }
                // A request cut off as the plugin exits (others of its reads were answered) is no request.
                if !complete {
                    return;
                }
                kept.lock().unwrap().push(authorization.clone());
                let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
                    "message": format!("forbidden: the request carried Authorization: {authorization} and {{\"token\":\"{}\"}}", authorization.trim_start_matches("Bearer "))})
                .to_string();
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (url, seen)
}

/// A kubeconfig for `server` whose user is `user` (YAML lines under `user:`).
fn kubeconfig(dir: &Path, server: &str, user: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: u}}}}]\nusers:\n- name: u\n  user:\n{user}"),
    )
    .unwrap();
    path
}

/// An executable script `name` in `dir`.
fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{text}")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// The `user:` lines of an exec plugin.
fn exec_user(command: &Path) -> String {
    format!(
        "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n      interactiveMode: Never\n",
        command.display()
    )
}

const EXEC_TOKEN: &str = "exectok-SECRET-0123456789";

/// A plugin that returns [`EXEC_TOKEN`], expiring at `expires` (RFC 3339) when given, and counts its runs in `runs`.
fn token_plugin(dir: &Path, expires: Option<&str>) -> PathBuf {
    let expiry = expires.map(|t| format!(",\"expirationTimestamp\":\"{t}\"")).unwrap_or_default();
    script(
        dir,
        "get-token",
        &format!(
            "echo run >> '{}'\nprintf '%s' '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{EXEC_TOKEN}\"{expiry}}}}}'\n",
            dir.join("runs").display()
        ),
    )
}

#[test]
fn no_credential_is_printed_at_any_verbosity_when_the_server_echoes_it() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = token_plugin(dir.path(), None);
    let users = [
        ("static token", "    token: tok-SECRET-static-0123\n".to_string(), "tok-SECRET-static-0123"),
        ("exec plugin", exec_user(&plugin), EXEC_TOKEN),
        (
            "auth-provider",
            "    auth-provider:\n      name: oidc\n      config: {id-token: idtok-SECRET-0123456, client-id: x}\n".to_string(),
            "idtok-SECRET-0123456",
        ),
    ];
    let mut runs = 0;
    for (kind, user, secret) in users {
        let (server, seen) = echo_server();
        let config = kubeconfig(dir.path(), &server, &user);
        for verbosity in 0..=9 {
            let out = plugin_process()
                .args(["usage", "--request-timeout", "10s", &format!("-v={verbosity}"), "--kubeconfig"])
                .arg(&config)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            runs += 1;
            let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert_eq!(out.status.code(), Some(3), "{kind} -v={verbosity}: {text}");
            assert!(!text.contains("SECRET"), "{kind} -v={verbosity}: a credential in:\n{text}");
            assert!(text.contains("[redacted]"), "{kind} -v={verbosity}: the server's echo is shown, redacted:\n{text}");
        }
        let seen = seen.lock().unwrap();
        assert!(
            !seen.is_empty() && seen.iter().all(|header| header == &format!("Bearer {secret}")),
            "{kind}: the server was sent {seen:?}"
        );
    }
    eprintln!("[measure] exec secrets: {runs} runs (3 credential kinds x -v=0..9) against an echoing server: no credential in any output");
}

/// Waits (at most 60 s) for `child` to end; its exit code, stderr and how long it ran.
/// `usage` started with `config` and a `--request-timeout`, its stderr piped.
fn usage_with(config: &Path, request_timeout: &str) -> Child {
    let mut command = plugin_process();
    command.args(["usage", "--request-timeout", request_timeout, "--kubeconfig"]).arg(config);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("start the plugin")
}

fn waited(mut child: Child, started: Instant) -> (Option<i32>, String, Duration) {
    for _ in 0..600 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return (status.code(), err, started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("the command did not end within 60 s");
}

/// The process ids a hanging plugin wrote into `pids` (itself and the child it started), once
/// both are written (the barrier that the plugin is running).
fn plugin_pids(pids: &Path) -> Vec<i32> {
    for _ in 0..600 {
        let text = std::fs::read_to_string(pids).unwrap_or_default();
        if text.lines().count() >= 2 {
            return text.lines().map(|l| l.trim().parse().unwrap()).collect();
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the plugin never started");
}

/// Whether the process `pid` still exists (a zombie counts as gone: it runs nothing).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.rsplit(") ").next().unwrap_or("").starts_with('Z'))
}

/// A plugin that starts a child, writes both pids into `pids` and never returns.
fn hanging_plugin(dir: &Path) -> (PathBuf, PathBuf) {
    let pids = dir.join("pids");
    let plugin = script(dir, "hang", &format!("sleep 600 &\necho $! >> '{0}'\necho $$ >> '{0}'\nwait\n", pids.display()));
    (plugin, pids)
}

/// Every process the plugin was is gone within 5 s of the command's end.
fn assert_gone(pids: &[i32], what: &str) {
    for _ in 0..50 {
        if !pids.iter().any(|&pid| alive(pid)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{what}: the plugin's processes {pids:?} outlived the command");
}

#[test]
fn a_plugin_that_never_returns_ends_the_command_within_the_deadline_and_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = echo_server();
    let (hang, pids) = hanging_plugin(dir.path());
    let config = kubeconfig(dir.path(), &server, &exec_user(&hang));
    let started = Instant::now();
    let (code, err, took) = waited(usage_with(&config, "2s"), started);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("the exec credential plugin") && err.contains("did not finish within --request-timeout 2s"), "{err}");
    // Generous: the bound is the deadline, the slack is for a loaded machine.
    assert!(took < Duration::from_secs(15), "ended after {took:?}");
    assert_gone(&plugin_pids(&pids), "deadline");
}

#[test]
fn sigterm_and_sigint_end_the_plugin_with_the_command() {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let dir = tempfile::tempdir().unwrap();
        let (server, _) = echo_server();
        let (hang, pids) = hanging_plugin(dir.path());
        let config = kubeconfig(dir.path(), &server, &exec_user(&hang));
        let started = Instant::now();
        let child = usage_with(&config, "0");
        let pid = child.id() as i32;
        let running = plugin_pids(&pids);
        // SAFETY: signals our own child, alive while its exec plugin runs.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let (code, err, _) = waited(child, started);
        assert_ne!(code, Some(0), "signal {signal}: {err}");
        assert_gone(&running, &format!("signal {signal}"));
    }
}

#[test]
fn a_plugin_writing_512_mib_is_refused_within_256_mib() {
    let dir = tempfile::tempdir().unwrap();
    let (server, _) = echo_server();
    let flood = script(dir.path(), "flood", "exec head -c 536870912 /dev/zero\n");
    let config = kubeconfig(dir.path(), &server, &exec_user(&flood));
    let config = config.display().to_string();
    let (code, err, rss_kib) = measured(&["usage", "--request-timeout", "20s", "--kubeconfig", &config]);
    eprintln!("[measure] exec plugin writing 512 MiB: exit {code}, peak RSS {} MiB", rss_kib >> 10);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("wrote more than 1Mi"), "{err}");
    assert!(rss_kib <= 256 << 10, "peak RSS {} MiB", rss_kib >> 10);
}

#[test]
fn an_expired_token_runs_the_plugin_again_before_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let (server, seen) = echo_server();
    let plugin = token_plugin(dir.path(), Some("2000-01-01T00:00:00Z"));
    let config = kubeconfig(dir.path(), &server, &exec_user(&plugin));
    let out =
        plugin_process().args(["version", "--request-timeout", "10s", "--kubeconfig"]).arg(&config).stdin(Stdio::null()).output().unwrap();
    let runs = std::fs::read_to_string(dir.path().join("runs")).unwrap().lines().count();
    let requests = seen.lock().unwrap().len();
    assert!(requests >= 1, "{out:?}");
    // Once to connect, then once before each request: the token had always expired.
    assert_eq!(runs, requests + 1, "{out:?}");
}
