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
//! A backslash in a value is written `\\`, so `a\nb` is a name with a newline and `a\\nb` one with
//! a backslash: a value is escaped once, where it is written ([`field`], [`word`], [`cell`]); the
//! nets over the plugin's own lines ([`block`], [`net`]) keep backslashes, which by then are
//! escapes.

use std::borrow::Cow;
use std::fmt;

/// The SGR sequences `render::Style::paint` emits (owo-colors: green, yellow, red, dim, bold and
/// their resets), the six xterm-256 colours of `render::map` (the Okabe–Ito palette) and the
/// reverse video of its changed cells. With colour on, [`block`] and [`cell`] let exactly these through.
const OWN_SGR: [&str; 15] = [
    "\x1b[32m",
    "\x1b[33m",
    "\x1b[31m",
    "\x1b[2m",
    "\x1b[1m",
    "\x1b[39m",
    "\x1b[22m",
    "\x1b[0m",
    "\x1b[38;5;74m",
    "\x1b[38;5;214m",
    "\x1b[38;5;221m",
    "\x1b[38;5;166m",
    "\x1b[38;5;175m",
    "\x1b[38;5;36m",
    "\x1b[7m",
];

/// The most a table cell shows of a value: 253 characters, the longest legal Kubernetes object
/// name; longer values end in `…` (the whole value is in `-o json`).
pub const CELL_CAP: usize = 253;

/// Whether `c` must not reach a terminal raw: C0 controls (newline and tab included), DEL, C1
/// controls, and the format characters (Unicode category Cf): the bidirectional marks, overrides
/// and isolates that reorder what is shown, and the invisible ones (zero-width space and joiners,
/// word joiner, byte order mark, soft hyphen, tag characters) that make two names look the same.
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_format(c)
}

/// Unicode's general category Cf (format characters), as of Unicode 16.
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
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
    /// A backslash kept as it is: a net over text whose values were escaped already (their
    /// backslashes are escapes by then). Otherwise a backslash is written `\\`.
    pub backslashes: bool,
    /// At most this many characters shown, the last one `…`.
    pub cap: Option<usize>,
}

/// The one escape function: `text` with every unsafe character (and what `rules` add) written
/// out visibly. Borrowed when nothing changes. Its output holds no unsafe character (but the
/// colours `rules` keep, and newlines when kept); with `backslashes` kept it is escaped again
/// unchanged (a net), otherwise each backslash doubles again (a value is escaped once).
pub fn visible(text: &str, rules: Rules) -> Cow<'_, str> {
    let escaped =
        |c: char| (is_unsafe(c) && !(rules.newlines && c == '\n')) || (rules.spaces && c == ' ') || (!rules.backslashes && c == '\\');
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
        '\\' => Cow::Borrowed("\\\\"),
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
    visible(text, Rules { colour, spaces: words, cap: Some(CELL_CAP), newlines: false, backslashes: false })
}

/// A whole output of the plugin's own lines (a table, a report, notes): newlines kept, every
/// other unsafe character escaped, the plugin's own colours kept when `colour`. The data inside
/// was escaped as [`field`]s where it was written; this is the net under them (backslashes kept).
pub fn block(text: &str, colour: bool) -> Cow<'_, str> {
    visible(text, Rules { newlines: true, colour, backslashes: true, ..Rules::default() })
}

/// One line of the plugin's own text whose values were escaped already (painted text inside a
/// cell or a line that escapes it again): every unsafe character visible, backslashes kept.
pub fn net(text: &str) -> Cow<'_, str> {
    visible(text, Rules { backslashes: true, ..Rules::default() })
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
    json_laid_out(value, "  ")
}

/// [`json_pretty`] indented by `indent` per level, or on one line when `indent` is empty (the
/// layout of a file an edit writes into).
pub fn json_laid_out<T: serde::Serialize + ?Sized>(value: &T, indent: &str) -> serde_json::Result<String> {
    let text = if indent.is_empty() {
        serde_json::to_string(value)?
    } else {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        value.serialize(&mut serde_json::Serializer::with_formatter(&mut out, formatter))?;
        String::from_utf8(out).expect("serde_json writes UTF-8")
    };
    if !text.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c != '\n' && is_unsafe(c) {
            // A character past U+FFFF (the tag characters) is a surrogate pair in JSON.
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// `text` as a YAML double-quoted scalar that reads back to it, every [unsafe](is_unsafe)
/// character escaped (`\uXXXX`, `\UXXXXXXXX` past U+FFFF: YAML has no surrogate pairs).
pub fn yaml_quoted(text: &str) -> String {
    let json = serde_json::to_string(text).expect("strings serialize");
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c as u32 {
            _ if !is_unsafe(c) => out.push(c),
            code @ 0x10000.. => out.push_str(&format!("\\U{code:08x}")),
            code => out.push_str(&format!("\\u{code:04x}")),
        }
    }
    out
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
    fn a_net_escapes_twice_without_change() {
        let text = "a\n\x1b[31m\u{202e} b\u{9b}\\";
        let kept = Rules { backslashes: true, ..Rules::default() };
        for rules in [kept, Rules { spaces: true, ..kept }, Rules { newlines: true, colour: true, ..kept }] {
            let once = visible(text, rules).into_owned();
            assert_eq!(visible(&once, rules), once);
        }
        // What a value's escape writes, a net leaves as it is.
        let value = field(text).into_owned();
        assert_eq!(block(&value, false), value);
        assert_eq!(net(&value), value);
    }

    #[test]
    fn a_backslash_in_a_value_is_doubled_so_no_name_reads_like_another() {
        // A name holding a newline and one holding a backslash and an `n` no longer look alike.
        assert_eq!(field("a\nb"), "a\\nb");
        assert_eq!(field("a\\nb"), "a\\\\nb");
        assert_ne!(field("a\nb"), field("a\\nb"));
        assert_eq!(word("c:\\x y"), "c:\\\\x\\x20y");
        assert_eq!(cell("\\u{202e}", false, false), "\\\\u{202e}");
        assert_eq!(Field("\\").to_string(), "\\\\");
        // The nets over the plugin's own lines keep a backslash: it is an escape by then.
        assert_eq!(block("x\\ny\n", false), "x\\ny\n");
    }

    #[test]
    fn invisible_format_characters_become_visible() {
        for c in ['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}', '\u{180e}', '\u{2064}', '\u{e0041}', '\u{e0001}'] {
            assert!(is_unsafe(c), "{c:?}");
            let name = format!("ad{c}min");
            let shown = field(&name);
            assert!(!shown.chars().any(is_unsafe) && shown != "admin", "{c:?}: {shown}");
        }
        assert_eq!(field("ad\u{200b}min"), "ad\\u{200b}min");
        assert_eq!(field("\u{feff}x"), "\\u{feff}x");
        // JSON writes a tag character as a surrogate pair; YAML as one \U escape.
        let text = json_pretty("a\u{e0041}\u{200d}").unwrap();
        assert_eq!(text, "\"a\\udb40\\udc41\\u200d\"");
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), "a\u{e0041}\u{200d}");
        let quoted = yaml_quoted("a\u{e0041}\u{200d}\\\n\"");
        assert_eq!(quoted, "\"a\\U000e0041\\u200d\\\\\\n\\\"\"");
        assert_eq!(serde_saphyr::from_str::<String>(&quoted).unwrap(), "a\u{e0041}\u{200d}\\\n\"");
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
