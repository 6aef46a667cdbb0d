//! Interactive flows end to end, in a real pseudo-terminal: pickers, the `[y/N]` question and
//! the range prompt; the terminal left as it was on every way out (Esc, n, Ctrl-C); one exit code
//! for "declined" (docs/design/exit-codes.md). And tables on a 60-, 80- and 100-column terminal:
//! counts, addresses, CIDRs, ranges and KIND never cut (docs/usage.md, "How the output is laid out").

use crate::support;

use rexpect::session::PtySession;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::cli::{self, press};

/// Exit code of a declined question or a cancelled picker or prompt (`error::DECLINED`).
const DECLINED: i32 = 1;
/// Exit code after Ctrl-C: 128 + SIGINT.
const INTERRUPTED: i32 = 130;

const HIDE_CURSOR: &str = "\x1b[?25l";
const SHOW_CURSOR: &str = "\x1b[?25h";

/// A session and everything the program showed so far, escape sequences included.
struct Screen {
    session: PtySession,
    shown: String,
}

impl Screen {
    fn start(command: std::process::Command) -> Screen {
        Screen { session: cli::terminal(command, Duration::from_secs(30)), shown: String::new() }
    }

    /// Waits for `text`, keeping what came before it.
    fn expect(&mut self, text: &str) {
        let before = self.session.exp_string(text).unwrap_or_else(|e| panic!("waiting for {text:?}: {e}; shown so far: {:?}", self.shown));
        self.shown.push_str(&before);
        self.shown.push_str(text);
    }

    fn press(&mut self, keys: &str) {
        press(&mut self.session, keys);
    }

    /// The exit code and the whole transcript once the program ended.
    fn finish(self) -> (i32, String) {
        let (code, rest) = cli::finish(self.session);
        (code, self.shown + &rest)
    }
}

/// Whether the last cursor command in `shown` makes the cursor visible (none at all counts: a
/// prompt that never hid it).
fn cursor_visible(shown: &str) -> bool {
    match (shown.rfind(HIDE_CURSOR), shown.rfind(SHOW_CURSOR)) {
        (Some(hidden), Some(visible)) => visible > hidden,
        (Some(_), None) => false,
        (None, _) => true,
    }
}

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot")
}

const POOLS: &str = "\
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata:
  name: blue
spec:
  ipv4:
    cidrs:
    - \"10.40.0.0/16\"   # quoted on purpose
    maskSize: 24
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: legacy}
spec: {ipv4: {cidrs: [10.70.0.0/16], maskSize: 24}}
";

/// A directory with `pools.yaml` (blue in v2, legacy in v2alpha1).
fn manifests() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pools.yaml"), POOLS).unwrap();
    dir
}

/// The guided `reserve-range -f DIR --in-place` up to its `[y/N]` question for 10.40.0.0/28.
fn guided_up_to_the_question(dir: &Path) -> Screen {
    let mut cmd = cli::plugin_process();
    cmd.args(["reserve-range", "--color", "never", "-f", ".", "--in-place"]).current_dir(dir);
    let mut screen = Screen::start(cmd);
    // Said before the first question: legacy cannot be edited, so it is not offered.
    screen.expect("not offered: legacy (cilium.io/v2alpha1");
    // blue is then the only pool and its only CIDR: no picker, straight to the range.
    screen.expect("Range to reserve in 10.40.0.0/16");
    screen.press("10.40.0.x\r");
    screen.expect("invalid: \"10.40.0.x\" is not an IP address");
    screen.press("10.40.0.0/28\r");
    screen.expect("blocks");
    screen.expect("Rewrite ./pools.yaml with this change to ciliumpodippool blue? [y/N]");
    screen
}

/// `inspect` without a pool, its picker up.
fn inspect_picker() -> Screen {
    let mut cmd = cli::plugin_process();
    cmd.args(["inspect", "--color", "never", "-f"]).arg(example());
    let mut screen = Screen::start(cmd);
    screen.expect("Pool to inspect");
    screen.expect("batch");
    screen
}

#[test]
fn inspect_without_a_pool_offers_a_picker_on_a_terminal() {
    let mut screen = inspect_picker();
    // Pools are listed by name: batch, blue, ...; one step down picks blue.
    screen.press("\x1b[B");
    screen.press("\r");
    screen.expect("Pool:          blue");
    screen.expect("Next block (prediction");
    let (code, shown) = screen.finish();
    assert_eq!(code, 0);
    assert!(cursor_visible(&shown), "the picker's cursor is shown again: {shown:?}");
}

#[test]
fn esc_in_a_read_only_picker_cancels_and_shows_the_cursor() {
    let mut screen = inspect_picker();
    assert!(!cursor_visible(&screen.shown), "the picker hides the cursor while it is up");
    screen.press("\x1b");
    let (code, shown) = screen.finish();
    assert_eq!(code, DECLINED, "{shown:?}");
    assert!(shown.contains("cancelled") && !shown.contains("nothing was written"), "inspect writes nothing: {shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
}

#[test]
fn a_picker_of_many_pools_filters_as_the_user_types() {
    // Twelve pools: more than a screen of items, so typing narrows the list.
    let dir = tempfile::tempdir().unwrap();
    let pools: Vec<String> = (0..12)
        .map(|i| {
            format!(
                "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {{name: pool-{i:02}}}\nspec: {{ipv4: {{cidrs: [10.{i}.0.0/16], maskSize: 24}}}}\n"
            )
        })
        .collect();
    std::fs::write(dir.path().join("pools.yaml"), pools.join("---\n")).unwrap();
    let mut cmd = cli::plugin_process();
    cmd.args(["inspect", "--color", "never", "-f"]).arg(dir.path());
    let mut screen = Screen::start(cmd);
    screen.expect("type to filter");
    screen.press("07");
    screen.press("\r");
    screen.expect("Pool:          pool-07");
    let (code, shown) = screen.finish();
    assert_eq!(code, 0, "{shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
}

#[test]
fn a_short_picker_filters_as_a_long_one_does() {
    // A handful of pools: typing filters here too (a `q` or a name is never taken as a command).
    let mut screen = inspect_picker();
    assert!(screen.shown.contains("(type to filter, Esc cancels)"), "{:?}", screen.shown);
    screen.press("gree");
    screen.press("\r");
    screen.expect("Pool:          green");
    let (code, shown) = screen.finish();
    assert_eq!(code, 0, "{shown:?}");
}

#[test]
fn ctrl_c_in_a_picker_exits_130_with_the_cursor_shown() {
    let mut screen = inspect_picker();
    screen.press("\x03");
    let (code, shown) = screen.finish();
    assert_eq!(code, INTERRUPTED, "{shown:?}");
    assert!(shown.rfind(SHOW_CURSOR) > shown.rfind(HIDE_CURSOR), "the last cursor command shows it: {shown:?}");
    assert!(!shown.contains("error:"), "Ctrl-C is not reported as an error: {shown:?}");
}

/// Issue 53: a SIGINT that does not come from the keyboard (`kill -INT`, `timeout -s INT`) ends
/// a picker as Ctrl-C does, without waiting for a key.
#[test]
fn a_sigint_from_outside_ends_a_picker_with_130() {
    let screen = inspect_picker();
    let pid = screen.session.process.child_pid.as_raw();
    // SAFETY: signals our own child, alive at its picker.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let (code, shown) = screen.finish();
    assert_eq!(code, INTERRUPTED, "{shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
}

/// Started in the background of a terminal (`timeout` runs its command in a process group of its
/// own), the plugin asks nothing: a picker would be stopped by SIGTTIN at its first read, and
/// `timeout -s INT` could never end it. It prints every pool, as off a terminal.
#[test]
fn in_the_background_of_a_terminal_no_picker_is_shown() {
    let command = format!("timeout -s INT 5 {} inspect --color never -f {}; echo exit=$?", support::PLUGIN, example().display());
    let mut bash = std::process::Command::new("bash");
    bash.args(["-c", &command]);
    let mut screen = Screen::start(bash);
    screen.expect("exit=");
    let (_, shown) = screen.finish();
    let code = shown.rsplit("exit=").next().unwrap_or_default();
    assert!(code.starts_with('0'), "the plugin's own exit code: {shown:?}");
    assert!(!shown.contains("Pool to inspect") && shown.contains("Pool:") && shown.contains("batch"), "{shown:?}");
}

#[test]
fn offline_guided_in_place_asks_and_writes_only_on_yes() {
    let dir = manifests();
    let mut screen = guided_up_to_the_question(dir.path());
    // Other keys are not swallowed: they show, and the question is asked again.
    screen.press("x\r");
    screen.expect("please answer y or n (not x)");
    screen.expect("[y/N]");
    screen.press("y\r");
    screen.expect("edited in ./pools.yaml: reserved 10.40.0.0-10.40.0.15 in 10.40.0.0/16");
    let (code, shown) = screen.finish();
    assert_eq!(code, 0, "{shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
    let text = std::fs::read_to_string(dir.path().join("pools.yaml")).unwrap();
    assert!(text.contains("reservedRanges"), "{text}");
    assert!(text.contains("- \"10.40.0.0/16\"   # quoted on purpose"), "untouched values keep their spelling: {text}");
}

#[test]
fn no_and_esc_at_the_question_decline_with_one_exit_code() {
    for keys in ["n\r", "\r", "\x1b"] {
        let dir = manifests();
        let mut screen = guided_up_to_the_question(dir.path());
        screen.press(keys);
        let (code, shown) = screen.finish();
        assert_eq!(code, DECLINED, "{keys:?}: {shown:?}");
        assert!(shown.contains("aborted; nothing was written"), "{keys:?}: {shown:?}");
        assert!(cursor_visible(&shown), "{keys:?}: {shown:?}");
        assert_eq!(std::fs::read_to_string(dir.path().join("pools.yaml")).unwrap(), POOLS, "{keys:?}: nothing written");
    }
}

#[test]
fn esc_at_the_range_prompt_declines() {
    let dir = manifests();
    let mut cmd = cli::plugin_process();
    cmd.args(["reserve-range", "--color", "never", "-f", ".", "--in-place"]).current_dir(dir.path());
    let mut screen = Screen::start(cmd);
    screen.expect("Range to reserve in 10.40.0.0/16");
    screen.press("10.40");
    screen.expect("10.40");
    screen.press("\x1b");
    let (code, shown) = screen.finish();
    assert_eq!(code, DECLINED, "{shown:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("pools.yaml")).unwrap(), POOLS);
}

#[test]
fn ctrl_c_at_the_question_exits_130_and_writes_nothing() {
    let dir = manifests();
    let mut screen = guided_up_to_the_question(dir.path());
    screen.press("\x03");
    let (code, shown) = screen.finish();
    assert_eq!(code, INTERRUPTED, "{shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("pools.yaml")).unwrap(), POOLS);
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 1, "no staged file left behind: {left:?}");
}

/// Issue 42: SIGTERM at the question exits 143 (128 + SIGTERM, docs/design/exit-codes.md), not
/// the 130 of the SIGINT the terminal library raises when the signal interrupts its read.
#[test]
fn sigterm_at_the_question_exits_143_and_writes_nothing() {
    let dir = manifests();
    let screen = guided_up_to_the_question(dir.path());
    let pid = screen.session.process.child_pid.as_raw();
    // SAFETY: signals our own child, alive at its question.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let (code, shown) = screen.finish();
    assert_eq!(code, 128 + libc::SIGTERM, "{shown:?}");
    assert!(cursor_visible(&shown), "{shown:?}");
    assert_eq!(std::fs::read_to_string(dir.path().join("pools.yaml")).unwrap(), POOLS);
}

#[test]
fn a_v2alpha1_only_input_is_refused_before_any_question() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pools.yaml"), POOLS.split("---\n").nth(1).unwrap()).unwrap();
    let mut cmd = cli::plugin_process();
    cmd.args(["reserve-range", "--color", "never", "-f", ".", "--in-place"]).current_dir(dir.path());
    let screen = Screen::start(cmd);
    let (code, shown) = screen.finish();
    assert_eq!(code, 2, "{shown:?}");
    assert!(shown.contains("pool legacy is a cilium.io/v2alpha1 manifest and cannot hold reserved ranges"), "{shown:?}");
    assert!(!shown.contains("Range to reserve"), "{shown:?}");
}

/// Headers of the columns that must never be cut on a narrow terminal: counts, addresses, CIDRs,
/// ranges and identifiers (a problem's KIND). Written out here, not taken from the renderer.
const WHOLE: &[&str] = &[
    "ADDRESS",
    "ADDRESSES",
    "ALLOCATED",
    "BLOCK",
    "BLOCKS",
    "CIDR",
    "FAMILY",
    "FREE",
    "IDLE",
    "KIND",
    "MASK",
    "NEEDED",
    "RANGE",
    "RESERVED",
    "SEVERITY",
    "TOTAL",
    "USABLE",
    "USED",
    "UTIL",
    "WITHHELD",
    "WITHHOLDS",
];

/// The first table in `text` whose header starts with `first`: its lines, `lines` of them, or
/// up to the first blank line.
fn table_in(text: &str, first: &str, lines: Option<usize>) -> Vec<String> {
    let start = text.lines().position(|l| l.trim_start().starts_with(first)).unwrap_or_else(|| panic!("no {first} table in:\n{text}"));
    let rest = text.lines().skip(start);
    match lines {
        Some(n) => rest.take(n).map(String::from).collect(),
        None => rest.take_while(|l| !l.trim().is_empty()).map(String::from).collect(),
    }
}

/// A laid-out table as (header, cells) per column: columns are where some line has text, split
/// at runs of two blanks or more on every line (a cell holds single spaces at most).
fn columns(table: &[String]) -> Vec<(String, Vec<String>)> {
    let lines: Vec<Vec<char>> = table.iter().map(|l| l.chars().collect()).collect();
    let width = lines.iter().map(Vec::len).max().unwrap_or(0);
    let blank = |at: usize| lines.iter().all(|l| l.get(at).is_none_or(|c| *c == ' '));
    let mut spans = Vec::new();
    let mut at = 0;
    while at < width {
        if blank(at) {
            at += 1;
            continue;
        }
        let start = at;
        while at < width && !(blank(at) && (at + 1 >= width || blank(at + 1))) {
            at += 1;
        }
        spans.push((start, at));
    }
    let cell = |line: &Vec<char>, (start, end): (usize, usize)| -> String {
        line.iter().skip(start).take(end - start).collect::<String>().trim().to_string()
    };
    spans.into_iter().map(|span| (cell(&lines[0], span), lines[1..].iter().map(|l| cell(l, span)).collect())).collect()
}

#[test]
fn on_a_narrow_terminal_counts_addresses_and_kinds_are_never_cut() {
    let snapshot = example().display().to_string();
    // (arguments, the first header of its table, its lines when the table is not followed by a blank line)
    let views: [(&[&str], &str, Option<usize>); 7] = [
        (&["usage"], "POOL", None),
        (&["usage", "--by", "node"], "NODE", None),
        (&["usage", "--show-blocks"], "BLOCK", None),
        (&["check"], "SEVERITY", None),
        (&["ip", "10.40.255.2", "10.40.0.1", "10.60.0.5"], "ADDRESS", None),
        (&["reserve-range", "--list"], "POOL", None),
        // blue's two CIDRs, then its reserved ranges.
        (&["inspect", "blue"], "CIDR", Some(3)),
    ];
    let mut failed = Vec::new();
    for (args, first, lines) in views {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.extend(["--color".into(), "never".into(), "-f".into(), snapshot.clone()]);
        // The full table, in a pipe: what every whole cell must equal.
        let (code, piped, _) = cli::output(cli::plugin().args(&args));
        assert!(code <= 1, "{args:?}: exit {code}");
        let full = table_in(&piped, first, lines);
        let full: std::collections::BTreeMap<String, Vec<String>> = columns(&full).into_iter().collect();
        for width in [60u16, 80, 100] {
            let shown = cli::on_terminal(&args, width);
            let table = table_in(&shown, first, Some(full.values().next().map_or(0, Vec::len) + 1));
            let what = format!("{args:?} on {width} columns:\n{}", table.join("\n"));
            if let Some(line) = table.iter().find(|l| l.chars().count() > usize::from(width)) {
                failed.push(format!("{what}\n  a line wider than the terminal: {line}"));
            }
            for (header, cells) in columns(&table) {
                if header == "…" {
                    // Columns left out: every row says so.
                    if cells.iter().any(|c| c != "…") {
                        failed.push(format!("{what}\n  the left-out marker is missing on a row"));
                    }
                } else if header.contains('…') {
                    failed.push(format!("{what}\n  a header cut: {header}"));
                } else if WHOLE.contains(&header.as_str()) && full.get(&header) != Some(&cells) {
                    failed.push(format!("{what}\n  {header} is not whole: {cells:?}, in a pipe {:?}", full.get(&header)));
                }
            }
        }
    }
    assert!(failed.is_empty(), "{} cut:\n{}", failed.len(), failed.join("\n\n"));
    // What is left out first is what the view can best spare: at 60 columns `usage` keeps the
    // utilization and free space, and leaves out the CIDRs' size and the mask.
    let args: Vec<String> = ["usage", "--color", "never", "-f", &snapshot].map(String::from).to_vec();
    let shown = cli::on_terminal(&args, 60);
    let header: Vec<&str> = shown.lines().find(|l| l.starts_with("POOL")).unwrap_or_default().split_whitespace().collect();
    assert_eq!(header, ["POOL", "FAMILY", "BLOCKS", "ALLOCATED", "USED", "FREE", "UTIL", "…"], "{shown}");
}
