//! Interactive flows end to end, in a real pseudo-terminal.

use rexpect::session::spawn_command;
use std::path::PathBuf;
use std::process::Command;

#[test]
fn inspect_without_a_pool_offers_a_picker_on_a_terminal() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin!("kubectl-ciliumpool"));
    cmd.args(["inspect", "--color", "never", "-f"]).arg(&example).env("TERM", "xterm");
    let mut session = spawn_command(cmd, Some(20_000)).unwrap();
    session.exp_string("Pool to inspect").unwrap();
    session.exp_string("batch").unwrap();
    // The list is in snapshot order: default, blue, ...; one step down picks blue.
    session.send("\x1b[B").unwrap();
    session.send("\r").unwrap();
    session.flush().unwrap();
    session.exp_string("Pool:          blue").unwrap();
    session.exp_string("Next block (prediction").unwrap();
    session.exp_eof().unwrap();
}
