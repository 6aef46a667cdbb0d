//! The one escape policy (docs/design/escaping.md): text from the cluster or a file never reaches
//! a terminal as control characters. An escape sequence in a pool name or an annotation could move
//! the cursor, retitle the window or (OSC 52) write the clipboard; a raw newline or TAB in a name
//! forges a record of `-o name`, a line of a report or a completion candidate; a bidirectional
//! override shows text in another order than it is. The ground floor: `source`, `render`,
//! `terminal`, `commands` and `main` all escape through [`visible`].
//!
//! * Text: every [unsafe](is_unsafe) character is written as a visible escape (`\n`, `\x1b`,
//!   `\u{202e}`); a value is one line ([`field`]), one word under `--no-headers` and `-o name`
//!   ([`word`], a space is `\x20`), at most [`CELL_CAP`] characters in a table cell ([`cell`]).
//! * JSON ([`json_pretty`]) and YAML (`manifest::to_yaml`): valid documents whose strings are the
//!   exact input, the unsafe characters written as `\uXXXX`.
//!
//! A backslash is not escaped, so `a\nb` may be a name with a newline or with a backslash: the
//! text formats are for reading, `-o json` gives the exact value.

use std::borrow::Cow;
use std::fmt;

/// The SGR sequences `render::Style::paint` emits (owo-colors: green, yellow, red, dim, bold and
/// their resets). With colour on, [`block`] and [`cell`] let exactly these through.
const OWN_SGR: [&str; 8] = ["\x1b[32m", "\x1b[33m", "\x1b[31m", "\x1b[2m", "\x1b[1m", "\x1b[39m", "\x1b[22m", "\x1b[0m"];

/// The most a table cell shows of a value: 253 characters, the longest legal Kubernetes object
/// name; longer values end in `…` (the whole value is in `-o json`).
pub const CELL_CAP: usize = 253;

/// Whether `c` must not reach a terminal raw: C0 controls (newline and tab included), DEL, C1
/// controls, and the bidirectional marks, overrides and isolates that reorder what is shown.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{061c}')
}

/// Whether `text` holds a character [`is_unsafe`] (it cannot be shown as it is).
pub fn has_unsafe(text: &str) -> bool {
    text.chars().any(is_unsafe)
}

/// What [`visible`] keeps and changes besides the unsafe characters, which it always escapes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Rules {
    /// Raw newlines kept: a block of the plugin's own lines, whose data was escaped as fields.
    pub newlines: bool,
    /// The plugin's own colour sequences ([`OWN_SGR`]) kept (colour on).
    pub colour: bool,
    /// A space written `\x20`: one word per value for `awk` and `xargs`.
    pub spaces: bool,
    /// At most this many characters shown, the last one `…`.
    pub cap: Option<usize>,
}

/// The one escape function: `text` with every unsafe character (and what `rules` add) written
/// out visibly. Borrowed when nothing changes. Its output holds no unsafe character (but the
/// colours `rules` keep, and newlines when kept) and is escaped again unchanged.
pub fn visible(text: &str, rules: Rules) -> Cow<'_, str> {
    let escaped = |c: char| (is_unsafe(c) && !(rules.newlines && c == '\n')) || (rules.spaces && c == ' ');
    let long = rules.cap.is_some_and(|cap| text.chars().nth(cap).is_some());
    if !long && !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    // Characters shown so far, and where a cut would put its `…` (past cap - 1 characters).
    let (mut shown, mut cut) = (0, None);
    let mut coloured = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b'
            && rules.colour
            && let Some(sgr) = OWN_SGR.iter().find(|s| rest.starts_with(**s))
        {
            out.push_str(sgr);
            coloured = true;
            rest = &rest[sgr.len()..];
            continue;
        }
        let piece = if escaped(c) { escape_char(c) } else { Cow::Owned(c.to_string()) };
        shown += piece.chars().count();
        if cut.is_none() && rules.cap.is_some_and(|cap| shown > cap - 1) {
            cut = Some(out.len());
        }
        out.push_str(&piece);
        rest = &rest[c.len_utf8()..];
    }
    if let (Some(cap), Some(at)) = (rules.cap, cut)
        && shown > cap
    {
        out.truncate(at);
        out.push('…');
        if coloured {
            out.push_str("\x1b[0m");
        }
    }
    Cow::Owned(out)
}

/// How one character is shown: `\n`, `\t`, `\r`, `\xNN` below U+0100, else `\u{NNNN}`.
fn escape_char(c: char) -> Cow<'static, str> {
    match c {
        '\n' => Cow::Borrowed("\\n"),
        '\t' => Cow::Borrowed("\\t"),
        '\r' => Cow::Borrowed("\\r"),
        c if (c as u32) < 0x100 => Cow::Owned(format!("\\x{:02x}", c as u32)),
        c => Cow::Owned(format!("\\u{{{:x}}}", c as u32)),
    }
}

/// One value or one line of a message: every unsafe character visible, newlines included.
pub fn field(text: &str) -> Cow<'_, str> {
    visible(text, Rules::default())
}

/// One value that must be one word (`-o name`, a `--no-headers` cell): a [`field`] with spaces as `\x20`.
pub fn word(text: &str) -> Cow<'_, str> {
    visible(text, Rules { spaces: true, ..Rules::default() })
}

/// A table cell: one line of at most [`CELL_CAP`] characters, one word when `words`
/// (`--no-headers`), the plugin's own colours kept when `colour`.
pub fn cell(text: &str, colour: bool, words: bool) -> Cow<'_, str> {
    visible(text, Rules { colour, spaces: words, cap: Some(CELL_CAP), newlines: false })
}

/// A whole output of the plugin's own lines (a table, a report, notes): newlines kept, every
/// other unsafe character escaped, the plugin's own colours kept when `colour`. The data inside
/// was escaped as [`field`]s where it was written; this is the net under them.
pub fn block(text: &str, colour: bool) -> Cow<'_, str> {
    visible(text, Rules { newlines: true, colour, ..Rules::default() })
}

/// `format!("{}", Field(name))`: a value of cluster or file data inside a line.
pub struct Field<'a>(pub &'a str);

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&field(self.0))
    }
}

/// Pretty JSON (serde_json's layout) whose strings also write the characters [`is_unsafe`] that
/// JSON allows raw (DEL, C1 controls, bidirectional marks) as `\uXXXX`: the same document for
/// every JSON parser, nothing a terminal would act on. serde_json escapes every C0 control inside
/// strings and writes only newlines and spaces between tokens, so any other unsafe character of
/// its output stands inside a string, where `\uXXXX` means the same character.
pub fn json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c != '\n' && is_unsafe(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unsafe_character_becomes_visible() {
        assert_eq!(field("pool\x1b]52;c;aGk=\x07x"), "pool\\x1b]52;c;aGk=\\x07x");
        assert_eq!(field("a\nb\tc\r\u{9b}\u{7f}\u{202e}\u{2066}"), "a\\nb\\tc\\r\\x9b\\x7f\\u{202e}\\u{2066}");
        assert!(matches!(field("plain ünïcode 名前"), Cow::Borrowed(_)));
        assert_eq!(Field("x\x1b[2J").to_string(), "x\\x1b[2J");
        for c in ['\0', '\x1f', '\x7f', '\u{80}', '\u{9f}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}'] {
            assert!(is_unsafe(c), "{c:?}");
            assert!(!field(&c.to_string()).chars().any(is_unsafe), "{c:?}");
        }
        for c in [' ', 'a', '\u{a0}', '\u{2070}', '\u{2000}'] {
            assert!(!is_unsafe(c), "{c:?}");
        }
    }

    #[test]
    fn a_block_keeps_its_lines_and_only_the_plugins_own_colours() {
        assert_eq!(block("a\nb\tc", false), "a\nb\\tc");
        let painted = "\x1b[31mfull\x1b[39m \x1b[2J\x1b]0;title\x07";
        assert_eq!(block(painted, true), "\x1b[31mfull\x1b[39m \\x1b[2J\\x1b]0;title\\x07");
        assert_eq!(block(painted, false), "\\x1b[31mfull\\x1b[39m \\x1b[2J\\x1b]0;title\\x07");
    }

    #[test]
    fn words_and_cells() {
        assert_eq!(word("a b\nc"), "a\\x20b\\nc");
        assert_eq!(cell("a b", false, false), "a b");
        assert_eq!(cell("a b", false, true), "a\\x20b");
        let long = "x".repeat(5000);
        let shown = cell(&long, false, false);
        assert_eq!(shown.chars().count(), CELL_CAP);
        assert!(shown.ends_with('…'));
        // Exactly the cap fits uncut; an escape is never cut in half.
        assert_eq!(cell(&"y".repeat(CELL_CAP), false, false), "y".repeat(CELL_CAP));
        let many = "\x1b".repeat(100);
        let escapes = cell(&many, false, false);
        assert!(escapes.chars().count() <= CELL_CAP && escapes.ends_with("\\x1b…"), "{escapes}");
        // A cut coloured cell resets its colour.
        assert!(cell(&format!("\x1b[31m{long}\x1b[39m"), true, false).ends_with("…\x1b[0m"));
    }

    #[test]
    fn escaping_twice_changes_nothing() {
        let text = "a\n\x1b[31m\u{202e} b\u{9b}";
        for rules in
            [Rules::default(), Rules { spaces: true, ..Rules::default() }, Rules { newlines: true, colour: true, ..Rules::default() }]
        {
            let once = visible(text, rules).into_owned();
            assert_eq!(visible(&once, rules), once);
        }
    }

    #[test]
    fn json_strings_round_trip_and_show_nothing_raw() {
        let value = serde_json::json!({"name": "a\u{7f}\u{9b}\u{202e}\u{2066}\n\"\\ ü", "list": [1, "x"]});
        let text = json_pretty(&value).unwrap();
        assert!(!text.chars().any(|c| is_unsafe(c) && c != '\n'), "{text}");
        assert!(text.contains("\\u007f\\u009b\\u202e\\u2066\\n"), "{text}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
        // The layout is serde_json's own.
        assert_eq!(
            text,
            serde_json::to_string_pretty(&value).unwrap().replace("\u{7f}\u{9b}\u{202e}\u{2066}", "\\u007f\\u009b\\u202e\\u2066")
        );
    }
}
