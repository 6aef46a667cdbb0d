//! Closed pipes (issue 42): `cmd 2>&1 | head` must end quietly, never with a panic (exit 101,
//! "failed printing to stderr: Broken pipe"). The matrix is the CLI definition's (every command ×
//! its offline views × every `-o`, tests/integration/support/hostile.rs) on
//! examples/snapshot, plus error paths, each run with stdout and stderr into a pipe whose reader
//! closed before the plugin started: both streams, stdout only and stderr only.
//! docs/design/exit-codes.md: a closed stdout ends the command with exit 0; a closed stderr drops
//! what is written there and the command ends as it would have (same stdout, same exit code).

use crate::support;

use std::io::PipeWriter;
use std::process::{Child, Stdio};
use std::time::Duration;
use support::cli::plugin_process;
use support::hostile::{Names, invocations};

/// The write end of a pipe whose read end is already closed: every write fails with EPIPE.
fn closed_pipe() -> PipeWriter {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    writer
}

/// Waits for `child` (reading what it writes) at most a generous minute: a command that hangs on
/// a closed pipe fails.
fn wait(child: Child, what: &str) -> (i32, String, String) {
    let pid = child.id() as i32;
    let (sent, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || sent.send(child.wait_with_output().expect("the output")));
    let out = received.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|_| {
        // SAFETY: signals our own child, still unreaped (its waiter has not returned).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("{what}: still running after 60 s")
    });
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// How the two streams are connected for one run.
#[derive(Clone, Copy, Debug)]
enum Closed {
    Neither,
    Both,
    Stdout,
    Stderr,
}

fn run(args: &[String], closed: Closed) -> (i32, String, String) {
    let mut command = plugin_process();
    command.args(args).stdin(Stdio::null());
    let (stdout, stderr) = match closed {
        Closed::Neither => (Stdio::piped(), Stdio::piped()),
        Closed::Both => {
            let pipe = closed_pipe();
            (Stdio::from(pipe.try_clone().unwrap()), Stdio::from(pipe))
        }
        Closed::Stdout => (Stdio::from(closed_pipe()), Stdio::piped()),
        Closed::Stderr => (Stdio::piped(), Stdio::from(closed_pipe())),
    };
    let child = command.stdout(stdout).stderr(stderr).spawn().expect("the plugin starts");
    wait(child, &format!("{args:?} ({closed:?} closed)"))
}

/// Every command line of the matrix on examples/snapshot, and lines that end in an error.
fn command_lines() -> Vec<Vec<String>> {
    let snapshot = support::repo_root().join("examples/snapshot");
    let mut lines: Vec<Vec<String>> = invocations(&Names { v2_pool: "blue" })
        .iter()
        // `--no-headers` changes no write path: left out, it halves the time.
        .filter(|i| !i.no_headers)
        .map(|i| i.command_line(&snapshot))
        .collect();
    let dir = snapshot.display().to_string();
    let extra: &[&[&str]] = &[
        &["reserve-range", "blue", "10.41.255.0/28", "-f", &dir],
        &["ip", "10.40.5.128", "10.0.0.215", "10.10.0.0", "-f", &dir],
        &["usage", "--fail-above", "1", "-f", &dir],
        &["serve", "-f", &dir],
        &["usage", "-f", "/nonexistent/pools.yaml"],
        &["usage", "--no-such-flag"],
        &["--help"],
        &["usage", "--help"],
    ];
    lines.extend(extra.iter().map(|l| l.iter().map(|w| w.to_string()).collect()));
    lines
}

/// One command line's failures, if any.
fn failures(args: &[String]) -> Vec<String> {
    let (code, stdout, _) = run(args, Closed::Neither);
    let mut failed = Vec::new();
    let mut fail = |closed: Closed, why: String| failed.push(format!("kubectl-ciliumpool {} ({closed:?} closed): {why}", args.join(" ")));
    let (both, _, _) = run(args, Closed::Both);
    if both == 101 || (both != 0 && both != code) {
        fail(Closed::Both, format!("exit {both}, not 0 or the command's own {code}"));
    }
    let (out_closed, _, stderr) = run(args, Closed::Stdout);
    if out_closed == 101 || stderr.contains("panicked") || stderr.contains("Broken pipe") || (out_closed != 0 && out_closed != code) {
        fail(Closed::Stdout, format!("exit {out_closed} (the command's own: {code}): {stderr}"));
    }
    let (err_closed, err_stdout, _) = run(args, Closed::Stderr);
    if err_closed != code || err_stdout != stdout {
        fail(Closed::Stderr, format!("exit {err_closed} (the command's own: {code}), stdout the same: {}", err_stdout == stdout));
    }
    failed
}

#[test]
fn every_command_ends_quietly_on_a_closed_pipe() {
    let lines = command_lines();
    // Two workers: the machine is shared.
    let (left, right) = lines.split_at(lines.len() / 2);
    let failed: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = [left, right].map(|part| s.spawn(move || part.iter().flat_map(|l| failures(l)).collect::<Vec<_>>())).into();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    assert!(failed.is_empty(), "{} of {} command lines broke on a closed pipe:\n{}", failed.len(), lines.len(), failed.join("\n"));
}
