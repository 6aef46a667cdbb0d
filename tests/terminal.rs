//! Interactive flows end to end, in a real pseudo-terminal.

mod support;

use std::path::PathBuf;
use std::time::Duration;
use support::cli::{self, press};

#[test]
fn inspect_without_a_pool_offers_a_picker_on_a_terminal() {
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot");
    let mut cmd = cli::plugin_process();
    cmd.args(["inspect", "--color", "never", "-f"]).arg(&example);
    let mut session = cli::terminal(cmd, Duration::from_secs(20));
    session.exp_string("Pool to inspect").unwrap();
    session.exp_string("batch").unwrap();
    // Pools are listed by name: batch, blue, ...; one step down picks blue.
    press(&mut session, "\x1b[B");
    press(&mut session, "\r");
    session.exp_string("Pool:          blue").unwrap();
    session.exp_string("Next block (prediction").unwrap();
    session.exp_eof().unwrap();
}
