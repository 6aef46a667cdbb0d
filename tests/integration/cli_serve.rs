//! `serve` without a cluster (issue 40): a kubeconfig whose server is a closed loopback port keeps
//! `serve` unready, retrying its first read, while its HTTP server answers. What the HTTP server
//! does when clients misbehave (finding 4) and how a fleet's cluster with a name no label value
//! can show is served (finding 7).

#![cfg(target_os = "linux")]

use crate::support;

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::prometheus::{free_port, get, get_within};
use support::{KillOnDrop, LineReader};

const BOUND: Duration = Duration::from_secs(60);

/// A kubeconfig with one context per name, each pointing at a closed loopback port.
fn kubeconfig(dir: &Path, contexts: &[&str]) -> std::path::PathBuf {
    // A closed port of its own per context: contexts of one server are one cluster (docs/fleet.md).
    let cluster = |c: &str| serde_json::json!({"name": c, "cluster": {"server": format!("https://127.0.0.1:{}", free_port()), "insecure-skip-tls-verify": true}});
    let config = serde_json::json!({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": contexts.iter().map(|c| cluster(c)).collect::<Vec<_>>(),
        "users": [{"name": "nobody", "user": {"token": "not-a-real-token"}}],
        "contexts": contexts.iter().map(|c| serde_json::json!({"name": c, "context": {"cluster": c, "user": "nobody"}})).collect::<Vec<_>>(),
    });
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).unwrap()).unwrap();
    path
}

/// `serve` started through `sh` with `ulimit -n` first when `files` is given; its address, its
/// stderr up to the listening line and after, and the process.
fn serve(kubeconfig: &Path, files: Option<u64>, extra: &[&str]) -> (String, Vec<String>, LineReader, KillOnDrop) {
    let address = format!("127.0.0.1:{}", free_port());
    let limit = files.map_or(String::new(), |n| format!("ulimit -n {n} && "));
    let plugin = support::cli::plugin_process();
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{limit}exec \"$0\" \"$@\""))
        .arg(plugin.get_program())
        .args(["serve", "--listen", &address, "--request-timeout", "2s", "--kubeconfig"])
        .arg(kubeconfig)
        .args(extra)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("start serve");
    let stderr = LineReader::new(child.stderr.take().unwrap());
    let started = stderr.read_until(BOUND, "serve's listening line", |l| l.contains("serving /metrics"));
    (address, started, stderr, KillOnDrop(child))
}

/// User plus system CPU time of a process so far (/proc/PID/stat, in clock ticks of 10 ms).
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// Finding 4: at a file-descriptor limit of 128, 150 connections that send half a request head
/// once spun `accept()` (EMFILE in a loop: a core at 100 %) and left `/readyz` unanswered for
/// as long as they stayed open. Now the connection cap fits the limit (32 + 32), the excess waits
/// in the kernel's queue, and probes are answered within seconds (the second lane's 1 s head
/// timeout drains it), the CPU idle.
#[test]
fn probes_are_answered_and_the_cpu_idle_while_half_sent_requests_hold_every_file_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let (address, _, _stderr, process) = serve(&kubeconfig(dir.path(), &["only"]), Some(128), &[]);
    let held: Vec<TcpStream> = (0..150)
        .map(|_| {
            let mut stream = TcpStream::connect(&address).expect("the kernel queues the connection");
            stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n").unwrap();
            stream
        })
        .collect();
    let start = Instant::now();
    let answered = loop {
        if let Ok((503, _)) = get_within(&address, "/readyz", None, Duration::from_secs(2)) {
            break start.elapsed();
        } else {
            assert!(start.elapsed() < Duration::from_secs(8), "/readyz unanswered for 8 s (the first lane's head timeout is 10 s)");
        }
    };
    let before = cpu_time(process.0.id());
    std::thread::sleep(Duration::from_secs(3));
    let spent = cpu_time(process.0.id()) - before;
    assert!(spent < Duration::from_secs(1), "serve spent {spent:?} of CPU in 3 s with the idle connections open");
    let (code, _) = get(&address, "/healthz", None).unwrap();
    assert_eq!(code, 200);
    eprintln!("[cli_serve] /readyz answered after {answered:?}; {spent:?} of CPU in 3 s");
    drop(held);
}

/// Finding 7: a fleet's context whose name holds a character no label value may show (U+202E)
/// lost every series of its cluster, exporter series included, without a word. Now its series
/// carry the name escaped as tables show it, a warning says so at the start, and `/readyz` names
/// it escaped.
#[test]
fn a_context_whose_name_a_label_cannot_show_is_served_escaped_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let (address, started, _stderr, _process) = serve(&kubeconfig(dir.path(), &["east", "we\u{202e}st"]), None, &["--all-contexts"]);
    let warning = started.iter().find(|l| l.starts_with("warning: context ")).expect("a warning naming the context");
    assert!(warning.contains("warning: context we\\u{202e}st: ") && warning.contains("cluster=\"we\\\\u{202e}st\""), "{warning}");
    assert!(!warning.contains('\u{202e}'), "escaped: {warning}");
    let (_, metrics) = get(&address, "/metrics", None).unwrap();
    assert!(metrics.contains("ciliumpool_exporter_ready{cluster=\"east\"} 0"), "{metrics}");
    assert!(metrics.contains("ciliumpool_exporter_ready{cluster=\"we\\\\u{202e}st\"} 0"), "the cluster is served: {metrics}");
    let (code, reason) = get(&address, "/readyz", None).unwrap();
    assert_eq!(code, 503);
    assert!(reason.contains("cluster we\\u{202e}st: ") && !reason.contains('\u{202e}'), "{reason}");
}
