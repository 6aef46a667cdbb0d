//! Text from the cluster or a file must never reach a terminal as control sequences: an escape
//! sequence in a pool name or an annotation could move the cursor, retitle the window or (OSC 52)
//! write the user's clipboard. Every human output goes through [`escape`] (via
//! [`crate::render::Style::paint`], `Context::print` and the error printer); JSON escapes control
//! characters itself.

use std::borrow::Cow;
use std::fmt;

/// The SGR sequences [`crate::render::Style::paint`] emits (owo-colors: green, yellow, red, dim,
/// bold and their resets). With colour on, [`terminal_safe`] lets exactly these through.
const OWN_SGR: [&str; 8] = ["\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[1m", "\x1b[39m", "\x1b[22m", "\x1b[0m"];

/// Whether `c` must not reach a terminal raw: C0 controls but newline and tab, DEL, C1
/// controls, and the bidirectional overrides and isolates that reorder what is shown.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\x1b' => out.push_str("\\e"),
        '\r' => out.push_str("\\r"),
        c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `text` with every unsafe character written out visibly (`\e`, `\x07`, `\u{202e}`); newlines
/// and tabs kept. Borrowed when nothing needed escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_keeping(text, &[], false)
}

/// For a single-line field (a name in a message): newlines and tabs are escaped too.
pub fn escape_line(text: &str) -> Cow<'_, str> {
    escape_keeping(text, &[], true)
}

/// A whole human output: escaped, except (when `colour`) the plugin's own SGR sequences.
pub fn terminal_safe(text: &str, colour: bool) -> Cow<'_, str> {
    escape_keeping(text, if colour { &OWN_SGR } else { &[] }, false)
}

/// A table cell: one line, the plugin's own colours kept when `colour`.
pub fn cell(text: &str, colour: bool) -> Cow<'_, str> {
    escape_keeping(text, if colour { &OWN_SGR } else { &[] }, true)
}

fn escape_keeping<'a>(text: &'a str, allowed: &[&str], single_line: bool) -> Cow<'a, str> {
    let needs = |c: char| is_unsafe(c) || (single_line && (c == '\n' || c == '\t'));
    if !text.chars().any(needs) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && let Some(sgr) = allowed.iter().find(|s| rest.starts_with(**s))
        {
            out.push_str(sgr);
            rest = &rest[sgr.len()..];
            continue;
        }
        match c {
            '\n' if single_line => out.push_str("\\n"),
            '\t' if single_line => out.push_str("\\t"),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Cow::Owned(out)
}

/// `format!("{}", Escaped(name))`: a field of cluster or file data inside a message.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape_line(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_become_visible() {
        assert_eq!(escape("pool\x1b]52;c;aGk=\x07x"), "pool\\e]52;c;aGk=\\x07x");
        assert_eq!(escape("a\nb\tc\r\u{9b}\u{7f}\u{202e}"), "a\nb\tc\\r\\x9b\\x7f\\u{202e}");
        assert!(matches!(escape("plain ünïcode"), Cow::Borrowed(_)));
        assert_eq!(escape_line("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(Escaped("x\x1b[2J").to_string(), "x\\e[2J");
    }

    #[test]
    fn only_the_plugins_own_colours_pass() {
        let painted = "\x1b[31mfull\x1b[39m \x1b[2J\x1b]0;title\x07";
        assert_eq!(terminal_safe(painted, true), "\x1b[31mfull\x1b[39m \\e[2J\\e]0;title\\x07");
        assert_eq!(terminal_safe(painted, false), "\\e[31mfull\\e[39m \\e[2J\\e]0;title\\x07");
    }
}
