//! Helpers for tests that run the plugin binary, offline or against a cluster: its output, its
//! JSON, the figures in it, the pseudo-terminal, and the table of invalid ranges every write path
//! must refuse.

use rexpect::session::PtySession;
use serde_json::Value;
use std::process::Command;

/// The plugin with colour off and no kubeconfig from the environment.
pub fn plugin_process() -> Command {
    let mut command = Command::new(super::PLUGIN);
    command.env("NO_COLOR", "1").env_remove("KUBECONFIG");
    command
}

/// Starts the command of its arguments, waits for it, writes its exit code (-1 when a signal
/// ended it) and `ru_maxrss` into the file of its first argument, and exits with that code.
const MEASURING_PARENT: &str = r#"
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
with open(sys.argv[1], "w") as out:
    out.write(f"{code} {usage.ru_maxrss}")
"#;

/// Exit code, stderr and peak RSS (KiB) of the plugin run with `args` (stdout is dropped).
/// A child's `ru_maxrss` starts from the resident memory of the process it was spawned from
/// (Linux carries the peak over at exec, and `fork` and `vfork` both start from the parent's
/// memory): spawned by this test process, the plugin would report the test process's own peak
/// (350 MiB once another test's backtrace was symbolized). A small Python process spawns it
/// instead and reports the plugin's figure.
pub fn measured(args: &[&str]) -> (i32, String, i64) {
    let (code, _, stderr, rss) = measured_output(args);
    (code, stderr, rss)
}

/// [`measured`] with stdout: exit code, stdout, stderr and peak RSS (KiB).
pub fn measured_output(args: &[&str]) -> (i32, String, String, i64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().join("rusage");
    let mut parent = Command::new("python3");
    parent.args(["-c", MEASURING_PARENT]).arg(&report).arg(super::PLUGIN).args(args);
    // The plugin's environment, as `plugin_process` sets it.
    for (name, value) in plugin_process().get_envs() {
        match value {
            Some(value) => parent.env(name, value),
            None => parent.env_remove(name),
        };
    }
    let output = parent.output().expect("python3 starts the plugin");
    let report = std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("the plugin's rusage ({e}): {output:?}"));
    let (code, rss) = report.split_once(' ').expect("code and ru_maxrss");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (code.parse().expect("an exit code"), text(&output.stdout), text(&output.stderr), rss.parse().expect("ru_maxrss"))
}

/// [`plugin_process`] as an `assert_cmd` command.
pub fn plugin() -> assert_cmd::Command {
    assert_cmd::Command::from_std(plugin_process())
}

/// Exit code, stdout and stderr of a finished command.
pub fn output(command: &mut assert_cmd::Command) -> (i32, String, String) {
    let out = command.output().expect("the command runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8 stdout"),
        String::from_utf8(out.stderr).expect("UTF-8 stderr"),
    )
}

/// Runs the plugin offline with `args`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    output(plugin().args(args))
}

/// Parses a document, showing it when it is not JSON.
pub fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// The report of `pool` / `family` in a `usage -o json` document.
pub fn family<'a>(doc: &'a Value, pool: &str, family: &str) -> &'a Value {
    doc["pools"]
        .as_array()
        .and_then(|pools| pools.iter().find(|p| p["name"] == pool))
        .and_then(|p| p["families"].as_array())
        .and_then(|families| families.iter().find(|f| f["family"] == family))
        .unwrap_or_else(|| panic!("no {pool}/{family} in {doc:#}"))
}

/// `command` in a real pseudo-terminal (rexpect): the one way tests drive pickers and prompts.
pub fn terminal(mut command: Command, timeout: std::time::Duration) -> PtySession {
    command.env("TERM", "xterm").env("NO_COLOR", "1");
    rexpect::session::spawn_command(command, Some(timeout.as_millis() as u64)).expect("the plugin starts in a pseudo-terminal")
}

/// Types keys into the terminal (rexpect buffers writes until flushed).
pub fn press(term: &mut PtySession, keys: &str) {
    term.send(keys).unwrap();
    term.flush().unwrap();
}

/// Waits for the program in the terminal to end; its exit code and the rest of what it showed.
pub fn finish(mut term: PtySession) -> (i32, String) {
    let rest = term.exp_eof().expect("the program ends");
    match term.process.wait().expect("the program is waited for") {
        rexpect::process::wait::WaitStatus::Exited(_, code) => (code, rest),
        other => panic!("the program did not exit normally: {other:?}; it showed {rest}"),
    }
}

/// `reserve-range` arguments every write path must refuse (exit 2, one line, nothing written) on
/// the pool `blue` with CIDRs 10.40.0.0/16 and 10.41.0.0/16 once 10.40.255.240-10.40.255.254 is
/// reserved, and what the error line says.
pub const INVALID_RANGES: &[(&[&str], &str)] = &[
    (&["blue", "10.40.0.x"], "invalid range: \"10.40.0.x\" is not an IP address"),
    (&["blue", "10.40.0.1-fd00::1"], "mixes IPv4 and IPv6"),
    (&["blue", "10.40.0.9-10.40.0.1"], "starts after it ends"),
    (&["blue", "10.50.0.1"], "is not inside any CIDR of pool blue"),
    (&["blue", "10.40.255.0-10.41.0.5"], "spans more than one CIDR"),
    (&["blue", "10.40.255.240..10.40.255.254"], "already reserved"),
    (&["blue", "10.40.255.250-10.40.255.255"], "overlaps the reserved range(s) 10.40.255.240-10.40.255.254"),
    (&["blu", "10.40.0.1"], "pool \"blu\" not found; did you mean blue?"),
    (&["blue", "10.40.0.0/16", "--cidr", "10.41.0.0/16"], "not inside the chosen CIDR"),
    (&["blue", "--remove", "10.40.0.1"], "has no reserved range"),
];

/// Per pool and family, the metric of `-o openmetrics` and `serve` and the `usage -o json` field
/// it carries: written here from the docs (docs/metrics.md), not from the code under test.
pub const METRIC_FIELDS: [(&str, &str); 12] = [
    ("ciliumpool_capacity_blocks", "capacityBlocks"),
    ("ciliumpool_allocated_blocks", "allocatedBlocks"),
    ("ciliumpool_withheld_blocks", "withheldBlocks"),
    ("ciliumpool_free_blocks", "freeBlocks"),
    ("ciliumpool_orphan_blocks", "orphanBlocks"),
    ("ciliumpool_total_addresses", "totalAddresses"),
    ("ciliumpool_reserved_addresses", "reservedAddresses"),
    ("ciliumpool_allocated_addresses", "allocatedAddresses"),
    ("ciliumpool_used_addresses", "usedAddresses"),
    ("ciliumpool_idle_addresses", "idleAddresses"),
    ("ciliumpool_free_addresses", "freeAddresses"),
    ("ciliumpool_block_mask_size", "maskSize"),
];

/// What `args` show on a terminal of `columns` columns, stdout and stderr (both are the terminal).
pub fn on_terminal(args: &[String], columns: u16) -> String {
    let quote = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let plugin = plugin_process();
    let mut script = format!("stty rows 50 cols {columns} && exec {}", quote(plugin.get_program().to_str().unwrap()));
    for arg in args {
        script.push(' ');
        script.push_str(&quote(arg));
    }
    // No keyboard: a picker or a question would wait for it.
    script.push_str(" </dev/null");
    let mut shell = std::process::Command::new("sh");
    shell.args(["-c", &script]).env("NO_COLOR", "1").env_remove("KUBECONFIG");
    let mut term = terminal(shell, std::time::Duration::from_secs(30));
    let shown = term.exp_eof().expect("the command ends").replace('\r', "");
    // rexpect hands over each byte as a char: put UTF-8 (`…`, `—`) back together to count columns.
    if shown.chars().all(|c| u32::from(c) <= 0xff) {
        String::from_utf8_lossy(&shown.chars().map(|c| c as u8).collect::<Vec<u8>>()).into_owned()
    } else {
        shown
    }
}
