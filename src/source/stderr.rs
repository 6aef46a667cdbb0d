//! The one route to stderr for everything the plugin says beside its output: warnings, notes,
//! previews shown next to a document, and the final error line. Each passes [`secrets::redact`]
//! (error text can quote a kubeconfig) and the escape policy (it can quote cluster or file data),
//! so no caller can forget either. Prompts are drawn by `terminal`, and `interrupt` restores the
//! cursor: those write the plugin's own control sequences, never data.

use super::secrets;
use crate::escape;

/// One line: every unsafe character visible, newlines included, so it stays one line.
pub fn line(text: &str) {
    eprintln!("{}", escape::field(&secrets::redact(text)));
}

/// A block of the plugin's own lines (notes, a preview): newlines kept, the plugin's colours kept
/// when `colour`, every other unsafe character escaped.
pub fn block(text: &str, colour: bool) {
    if !text.is_empty() {
        eprint!("{}", escape::block(&secrets::redact(text), colour));
    }
}
