//! `usage --watch` on a terminal smaller than its output (issue #12 point 4), against the real
//! apiserver: the byte stream the plugin writes to a 20-row pseudo-terminal is replayed through a
//! terminal emulator (vt100), and the screen it leaves must be one whole, correct frame: the
//! status line naming what changed, the table header, as many rows as fit, and a line saying how
//! many did not — never frames glued together or a header scrolled away. And a control plane
//! that stalls under a running `--watch` (issue 28): said once on stderr, followed again after.

use crate::support;

use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::cli::{finish, press, terminal};
use support::{Dialect, KillOnDrop, LineReader, TestCluster, cilium_node};

const ROWS: u16 = 20;
const COLUMNS: u16 = 160;
const NODES: usize = 70;

#[test]
fn a_frame_taller_than_the_terminal_is_cut_to_fit_and_redrawn_in_place() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    let mut objects = vec![json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "default"},
                                  "spec": {"ipv4": {"cidrs": ["10.10.0.0/16"], "maskSize": 24}}})];
    for i in 0..NODES {
        let block = format!("10.10.{i}.0/24");
        objects.push(cilium_node(&format!("node-{i:03}"), &[("default", &[block.as_str()])], 16));
    }
    cluster.create_objects(objects);

    let mut term = on_terminal(&cluster, ROWS, COLUMNS, &["usage", "--watch", "--by", "node"]);

    // Everything the plugin wrote, in order, up to and including each awaited text.
    let mut written = String::new();
    let mut wait_for = |term: &mut rexpect::session::PtySession, text: &str| wait_for(term, &mut written, text);
    wait_for(&mut term, "do not fit this terminal");
    // Another block for node-000: 70 -> 71 allocated, and its row shows 2 blocks.
    cluster.kubectl(&[
        "patch",
        "ciliumnode",
        "node-000",
        "--type=merge",
        "-p",
        r#"{"spec":{"ipam":{"pools":{"allocated":[{"pool":"default","cidrs":["10.10.0.0/24","10.10.200.0/24"]}]}}}}"#,
    ]);
    wait_for(&mut term, "allocated 70->71");
    wait_for(&mut term, "do not fit this terminal");

    let mut screen = vt100::Parser::new(ROWS, COLUMNS, 0);
    screen.process(written.as_bytes());
    let screen = screen.screen();
    assert!(screen.alternate_screen(), "frames are drawn on the alternate screen");
    let lines: Vec<String> = screen.rows(0, COLUMNS).collect();
    assert_eq!(lines.len(), ROWS as usize);
    assert!(lines[0].contains("default ipv4 allocated 70->71"), "the status line says what changed: {lines:#?}");
    assert!(lines[0].starts_with("20") && lines[0].contains('T') && lines[0].contains('Z'), "and when: {}", lines[0]);
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header, ["NODE", "POOL", "FAMILY", "BLOCKS", "USABLE", "USED", "NEEDED", "IDLE", "NOTE"], "{lines:#?}");
    // Rows 2..=17: the first 16 nodes in order, node-000 with its two blocks (2 × 254 usable).
    for (i, line) in lines[2..18].iter().enumerate() {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let blocks = if i == 0 { "2" } else { "1" };
        let usable = if i == 0 { "508" } else { "254" };
        assert_eq!(
            cells,
            [format!("node-{i:03}").as_str(), "default", "ipv4", blocks, usable, "0", "16", usable, "-"],
            "row {i}: {lines:#?}"
        );
    }
    // 1 header + 70 rows, 17 of them shown: 54 left out, said on the last line used.
    assert!(lines[18].starts_with("... 54 more line(s) do not fit this terminal"), "{lines:#?}");
    assert_eq!(lines[19].trim(), "", "the last row stays empty so the screen never scrolls");

    // Ctrl-C: exit 0, back on the normal screen, where the last frame stays.
    press(&mut term, "\x03");
    let (code, _) = finish(term);
    assert_eq!(code, 0, "Ctrl-C ends --watch with exit 0");
}

/// The plugin with `args` in a pseudo-terminal of `rows` × `columns`: the size is set before the
/// plugin starts, as a real terminal has one.
fn on_terminal(cluster: &TestCluster, rows: u16, columns: u16, args: &[&str]) -> rexpect::session::PtySession {
    let plugin = cluster.plugin_process();
    let mut script = format!("stty rows {rows} cols {columns} && exec {}", shell_quote(plugin.get_program().to_str().unwrap()));
    for arg in plugin.get_args().map(|a| a.to_str().unwrap()).chain(args.iter().copied()) {
        script.push(' ');
        script.push_str(&shell_quote(arg));
    }
    let mut shell = Command::new("sh");
    shell.args(["-c", &script]);
    for (key, value) in plugin.get_envs() {
        match value {
            Some(value) => shell.env(key, value),
            None => shell.env_remove(key),
        };
    }
    terminal(shell, Duration::from_secs(60))
}

/// Waits for `text` in the terminal, everything shown up to and including it added to `written`.
fn wait_for(term: &mut rexpect::session::PtySession, written: &mut String, text: &str) {
    let before = term.exp_string(text).unwrap_or_else(|e| panic!("waiting for {text:?}: {e}; so far:\n{written}"));
    written.push_str(&before);
    written.push_str(text);
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Sends SIGCONT to the API server when dropped, so that a failing assertion never leaves it stopped.
struct Resumed<'a>(&'a TestCluster);

impl Drop for Resumed<'_> {
    fn drop(&mut self) {
        self.0.signal_apiserver("CONT");
    }
}

/// The API server stopped (SIGSTOP) under `usage --watch` with the default deadlines: the stall
/// is said in one line on stderr (serve's detection: a watch silent for 35 s, then a re-watch
/// that gets no answer), and after SIGCONT the same process prints the next change.
#[test]
fn a_stalled_api_server_is_said_once_and_followed_again_after() {
    let cluster = one_node_with_one_block();
    let mut child = cluster
        .plugin_process()
        .args(["usage", "--watch", "--no-headers"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the plugin");
    let (stdout, stderr) = (LineReader::new(child.stdout.take().unwrap()), LineReader::new(child.stderr.take().unwrap()));
    let mut child = KillOnDrop(child);
    let blocks = |line: &str| line.split_whitespace().nth(3).map(str::to_string);
    let first = stdout.read_until(Duration::from_secs(30), "the first frame", |l| l.starts_with("default"));
    assert_eq!(blocks(first.last().unwrap()).as_deref(), Some("1/256"), "{first:?}");
    // The watch's own listing is done once a change is followed: make one before the outage.
    give_node_a(&cluster, &["10.10.0.0/24", "10.10.1.0/24"]);
    let next = stdout.read_until(Duration::from_secs(30), "a frame with 2 blocks", |l| l.starts_with("default"));
    assert_eq!(blocks(next.last().unwrap()).as_deref(), Some("2/256"), "{next:?}");

    let stopped = Instant::now();
    let said = {
        let _resume = Resumed(&cluster);
        cluster.signal_apiserver("STOP");
        let said = stderr.read_until(Duration::from_secs(150), "a line saying the watch stalled", |l| l.contains("stalled or failed"));
        // Retries go on while it is stopped; none of them says it again.
        std::thread::sleep(Duration::from_secs(20));
        said
    };
    let waited = stopped.elapsed();
    assert!(said.last().unwrap().starts_with("warning: the watch of "), "{said:?}");
    assert!(child.0.try_wait().unwrap().is_none(), "the watch still runs");

    give_node_a(&cluster, &["10.10.0.0/24", "10.10.1.0/24", "10.10.2.0/24"]);
    let after = stdout.read_until(Duration::from_secs(60), "a frame with 3 blocks after SIGCONT", |l| {
        l.starts_with("default") && blocks(l).as_deref() == Some("3/256")
    });
    assert!(after.iter().all(|l| !l.contains("stalled or failed")), "{after:?}");
    let again =
        stderr.read_until(Duration::from_secs(30), "the note that the watch follows again", |l| l.contains("follows the cluster again"));
    let stalls = said.iter().chain(&again).filter(|l| l.contains("stalled or failed")).count();
    assert_eq!(stalls, 1, "one line for the stall (stopped for {waited:?}): {said:?} {again:?}");
    assert!(child.0.try_wait().unwrap().is_none(), "the same process throughout");
}

/// A control plane with pool `default` (10.10.0.0/16 in /24 blocks) and node-a holding its first block.
fn one_node_with_one_block() -> TestCluster {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "default"},
               "spec": {"ipv4": {"cidrs": ["10.10.0.0/16"], "maskSize": 24}}}),
        cilium_node("node-a", &[("default", &["10.10.0.0/24"])], 16),
    ]);
    cluster
}

/// Patches node-a to hold `cidrs` of pool `default`.
fn give_node_a(cluster: &TestCluster, cidrs: &[&str]) {
    cluster.kubectl(&["patch", "ciliumnode", "node-a", "--type=merge", "-p", &allocated(cidrs)]);
}

fn allocated(cidrs: &[&str]) -> String {
    json!({"spec": {"ipam": {"pools": {"allocated": [{"pool": "default", "cidrs": cidrs}]}}}}).to_string()
}

/// `usage POOL --map --watch` (issue 42): a block allocated to a CiliumNode under a running
/// watch. On an 80×40 pseudo-terminal (replayed through vt100) the map is redrawn in place with
/// that one cell in reverse video and a `^` under it, the legend counting it; in a pipe with
/// `--color never` the new frame follows a blank line and a `#` status line, with the same `^`
/// and no escape sequence — and an event that changes nothing of the map prints no frame.
#[test]
fn a_watched_map_marks_the_cell_of_a_new_block() {
    const MAP_ROWS: u16 = 40;
    const MAP_COLUMNS: u16 = 80;
    let cluster = one_node_with_one_block();
    let watch = ["usage", "default", "--map", "--watch"];
    let mut piped = cluster.plugin_process().args(watch).args(["--color", "never"]).stdout(Stdio::piped()).spawn().expect("spawn");
    let stdout = LineReader::new(piped.stdout.take().unwrap());
    let _piped = KillOnDrop(piped);
    let mut term = on_terminal(&cluster, MAP_ROWS, MAP_COLUMNS, &[&watch[..], &["--color", "always"]].concat());
    let mut written = String::new();
    let mut wait_for = |term: &mut rexpect::session::PtySession, text: &str| wait_for(term, &mut written, text);
    // The first frames, whole: the map's legend, then the end of the screen.
    wait_for(&mut term, " next block ");
    wait_for(&mut term, "\x1b[J");
    let first = stdout.read_until(Duration::from_secs(30), "the first piped frame", |l| l.contains(" next block "));
    // A change the map does not show (an annotation), given time to be followed on its own.
    cluster.kubectl(&["annotate", "ciliumnode", "node-a", "example.com/touched=yes"]);
    std::thread::sleep(Duration::from_secs(3));
    give_node_a(&cluster, &["10.10.0.0/24", "10.10.5.0/24"]);
    wait_for(&mut term, "cell(s) changed since the previous frame");
    wait_for(&mut term, "\x1b[J");
    let next = stdout.read_until(Duration::from_secs(30), "the marked piped frame", |l| l.contains("cell(s) changed"));

    let mut parser = vt100::Parser::new(MAP_ROWS, MAP_COLUMNS, 0);
    // rexpect hands each byte over as one char: the map's UTF-8 glyphs are bytes again here.
    parser.process(&written.chars().map(|c| u8::try_from(c).expect("one byte a char")).collect::<Vec<u8>>());
    let screen = parser.screen();
    let lines: Vec<String> = screen.rows(0, MAP_COLUMNS).collect();
    assert!(screen.alternate_screen() && lines[0].contains("default ipv4 allocated 1->2"), "{lines:#?}");
    let row = lines.iter().position(|l| l.trim_start().starts_with("10.10.0.0 ")).unwrap_or_else(|| panic!("{lines:#?}"));
    // Cell 5 (10.10.5.0/24): allocated now, reversed, a ^ under it and nowhere else.
    let at = (lines[row].find("10.10.0.0 ").unwrap() + "10.10.0.0 ".len()) as u16 + 5;
    let cell = |r: usize, c: u16| screen.cell(r as u16, c).unwrap();
    assert!(cell(row, at).inverse() && cell(row, at).contents() != "·", "{lines:#?}");
    assert!(!cell(row, at - 1).inverse() && !cell(row, at + 1).inverse(), "{lines:#?}");
    assert_eq!(lines[row + 1], format!("{}^", " ".repeat(at.into())), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("^ 1 cell(s) changed since the previous frame")), "{lines:#?}");
    press(&mut term, "\x03");
    assert_eq!(finish(term).0, 0, "Ctrl-C ends --watch with exit 0");

    // Piped: the first frame, then only the changed one, after a blank line and its status.
    let all: Vec<&String> = first.iter().chain(&next).collect();
    assert!(all.iter().all(|l| !l.contains('\x1b')), "{all:#?}");
    let status: Vec<usize> = (0..all.len()).filter(|&i| all[i].starts_with("# ")).collect();
    assert_eq!(status.len(), 2, "one frame for the annotation-free start, one for the block: {all:#?}");
    assert!(all[status[1] - 1].is_empty() && all[status[1]].contains("default ipv4 allocated 1->2"), "{all:#?}");
    let row = (status[1]..all.len()).find(|&i| all[i].trim_start().starts_with("10.10.0.0 ")).unwrap();
    assert_eq!(all[row + 1].as_str(), format!("{}^", " ".repeat(at.into())), "{all:#?}");
    assert!(all.last().unwrap().contains("^ 1 cell(s) changed since the previous frame"), "{all:#?}");
}

/// Issue 54: on a terminal, `usage --watch` says on its status line when its figures are behind
/// the cluster (a watch failing: the API server stopped), for how long, and which watch; the age
/// grows while it lasts; once the watches follow again the line says so no more, and the next
/// change is drawn.
#[test]
fn a_watch_on_a_terminal_says_when_its_figures_are_behind() {
    let cluster = one_node_with_one_block();
    // Short deadlines, so that a silent watch is taken for a stall within seconds.
    let mut term = on_terminal(&cluster, ROWS, COLUMNS, &["usage", "--watch", "--request-timeout", "3s"]);
    let mut written = String::new();
    wait_for(&mut term, &mut written, "watching; Ctrl-C to stop");
    // The watch's own listing is done once a change is followed: make one before the outage.
    give_node_a(&cluster, &["10.10.0.0/24", "10.10.1.0/24"]);
    wait_for(&mut term, &mut written, "allocated 1->2");
    let status = |written: &str| {
        let mut screen = vt100::Parser::new(ROWS, COLUMNS, 0);
        screen.process(written.as_bytes());
        screen.screen().rows(0, COLUMNS).next().unwrap()
    };
    {
        let _resume = Resumed(&cluster);
        cluster.signal_apiserver("STOP");
        // A whole status line: from its start to the frame's status at its end.
        let mut next_status = |written: &mut String| {
            for text in ["BEHIND ", "allocated 1->2", " | watches failing: "] {
                wait_for(&mut term, written, text);
            }
            status(written)
        };
        let age = |line: &str| -> u64 {
            let rest = line.strip_prefix("BEHIND ").unwrap_or_else(|| panic!("the status line starts so: {line:?}"));
            rest.split('s').next().unwrap().parse().unwrap()
        };
        let first = next_status(&mut written);
        // Redrawn while it lasts, older each time.
        let later = loop {
            let later = next_status(&mut written);
            if age(&later) > age(&first) {
                break later;
            }
        };
        assert!(age(&later) <= age(&first) + 5, "{first:?} then {later:?}");
        assert!(first.contains("s | 20") && first.contains("Z  default ipv4 allocated 1->2 | watches failing: "), "{first:?}");
    }
    give_node_a(&cluster, &["10.10.0.0/24", "10.10.1.0/24", "10.10.2.0/24"]);
    wait_for(&mut term, &mut written, "allocated 2->3");
    let after = status(&written);
    assert!(!after.contains("BEHIND") && after.contains("default ipv4 allocated 2->3"), "{after:?}");
    press(&mut term, "\x03");
    let (code, _) = finish(term);
    assert_eq!(code, 0);
}
