//! The one route to stderr for everything the plugin says beside its output: warnings, notes,
//! previews shown next to a document, and the final error line. Each passes [`secrets::redact`]
//! (error text can quote a kubeconfig) and the escape policy (it can quote cluster or file data),
//! so no caller can forget either. Prompts are drawn by `terminal`, and `interrupt` restores the
//! cursor: those write the plugin's own control sequences, never data.
//!
//! A write that fails (stderr a pipe whose reader is gone: `2>&1 | head`) is dropped and the
//! command goes on to its own end and exit code: what goes here describes the work, and stopping
//! the work because nobody reads about it could cut a write between two pools. A closed stdout
//! ends the command (exit 0, `main`). docs/design/exit-codes.md.

use crate::escape;
use crate::secrets;
use std::io::Write;

/// One line: every unsafe character visible, newlines included, so it stays one line.
pub fn line(text: &str) {
    write(&format!("{}\n", escape::field(&secrets::redact(text))));
}

/// A block of the plugin's own lines (notes, a preview): newlines kept, the plugin's colours kept
/// when `colour`, every other unsafe character escaped.
pub fn block(text: &str, colour: bool) {
    if !text.is_empty() {
        write(&escape::block(&secrets::redact(text), colour));
    }
}

/// Writes `text` whole or not at all as far as the caller knows: an error (a closed pipe) is
/// dropped, never a panic as `eprint!` would.
fn write(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush());
}
