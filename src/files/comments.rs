//! Runs of YAML comment lines collapsed before the parser sees them. The YAML parser reads about
//! 35 MB of comment lines a second, so a gigabyte of `#` lines (legal input, below every size
//! bound) took half a minute to answer. A run of lines that YAML certainly reads as comments
//! means what its first line means, so [`CommentRuns`] passes that line and drops the rest of the
//! run, at memory speed. Only the streaming reader uses it: its errors are never shown (the
//! whole text is read again for the error line), so the lines it drops shift no line number.
//!
//! Certainly a comment: a line whose first byte is `#`, before a document's first content line
//! (at the start of the stream or after a bare `---` / `...`), or in a document whose root is a
//! block mapping at column 0 (its first content line is `key:`) as long as no line of it holds a
//! quote, `[` or `{`. In such a document a block scalar's lines are indented (YAML 1.2,
//! s-l+block-node at n = 0) and no quoted scalar or flow collection is open, so nothing that starts
//! at column 0 is inside a scalar. (A quoted scalar is the reason for the last condition: the
//! parser reads a column-0 `#` line inside one as content, which YAML forbids.) From the first
//! line that is not certain on, the rest of the document passes unchanged: indented comments,
//! quotes, documents that start otherwise (`--- |`, a quoted or flow root), a BOM. A bare `---` or
//! `...` at column 0 ends whatever was open: YAML forbids it inside a scalar or flow collection
//! (the parser ends a block scalar there and refuses it inside a quoted scalar or a flow
//! collection), so the next document is looked at afresh.
//!
//! Runs of sequence entries are dropped the same way, for the same reason (the parser reads about
//! 6 MB of `- 1` lines a second). A document whose root is a block sequence (its first content
//! line is `- ` at column 0) is one object without a kind, whose elements the snapshot never
//! reads (`model::slim` skips them); as long as no line of it holds a quote, `[` or `{`, a line
//! `- ` at column 0 is an entry of that root sequence, as in a mapping document. A run of
//! *simple* entries (`- ` then a letter or digit and only letters, digits, `_` and `.` to the end
//! of the line: a plain scalar that can be nothing else) passes as its first line: the parser is
//! in the same state after the first as after the last (in the root sequence, after an entry that
//! is a plain scalar), so what follows the run means what it meant. The scalars dropped are never
//! looked at, and the number of elements is not kept. Comment lines of such a document pass.

use std::io::{self, Read};

/// How much of a line is looked at to classify it; a key longer than this is not recognised as
/// a plain key (its document is then left as it is).
const LOOKAHEAD: usize = 256;

/// A reader that drops every comment line of a run but the first (see the module's text).
pub struct CommentRuns<R> {
    inner: R,
    buffer: Box<[u8]>,
    /// The unread bytes are `buffer[at..end]`.
    at: usize,
    end: usize,
    eof: bool,
    line: Line,
    document: Document,
    /// The last line that decided anything was a certain comment, which was passed on: further
    /// certain comments (and blank lines between them) add nothing.
    in_run: bool,
    /// The last line was a simple entry of a root sequence (see the module's text), which was
    /// passed on: further simple entries right after it add nothing.
    in_entries: bool,
    /// A bare `---` was passed on and only blank and comment lines followed it: the document it
    /// starts is empty so far, and another bare `---` adds nothing.
    after_start: bool,
    /// `--- {}` documents dropped (see the module's text).
    empty_maps: usize,
}

/// Where the reader is in the current line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Line {
    Start,
    Copy,
    Drop,
    /// A simple entry of a root sequence after another: it and those right after it are dropped.
    DropEntries,
    /// A bare `---` after another (see `after_start`): it and the `---` lines right after it are dropped.
    DropStarts,
    /// `--- {}` lines, each followed by a marker or the end: dropped and counted.
    DropEmptyMaps,
}

/// What the current document's lines so far say about column 0.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Document {
    /// No content line yet: only comments, blank lines and directives.
    Prologue,
    /// The root is a block mapping at column 0 and no quote or flow collection was seen: nothing
    /// at column 0 is inside a scalar.
    Mapping,
    /// The root is a block sequence at column 0 and no quote or flow collection was seen: a line
    /// `- ` at column 0 is an entry of the root sequence.
    Sequence,
    /// Anything else, up to the next bare marker: every line passes.
    Unsure,
}

/// A document that is an empty map, on one line.
const EMPTY_MAP: &[u8] = b"--- {}\n";

/// What the start of a line shows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Comment,
    Blank,
    /// `---` or `...`; bare when nothing but a comment follows on its line.
    Marker {
        bare: bool,
    },
    /// `- ` (or `-` alone) at column 0: the start of an entry of a block sequence; `simple` when
    /// the whole line is `- ` and a plain scalar of letters, digits, `_` and `.` (see [`simple_entry`]).
    Entry {
        simple: bool,
    },
    /// Any other line; `key` when it is a plain key at column 0 (`name:` then a space or the end).
    Content {
        key: bool,
    },
}

impl<R: Read> CommentRuns<R> {
    pub fn new(inner: R) -> CommentRuns<R> {
        CommentRuns {
            inner,
            buffer: vec![0; 1 << 16].into_boxed_slice(),
            at: 0,
            end: 0,
            eof: false,
            line: Line::Start,
            document: Document::Prologue,
            in_run: false,
            in_entries: false,
            after_start: false,
            empty_maps: 0,
        }
    }

    /// How many `--- {}` documents were dropped (the snapshot counts them as objects without a kind).
    pub fn empty_maps(&self) -> usize {
        self.empty_maps
    }

    /// Whether a line `--- {}` starts at `at`, followed by a marker or the end of the input.
    fn empty_map_at(&self, at: usize) -> bool {
        let Some(next) = self.buffer[at..self.end].strip_prefix(EMPTY_MAP) else { return false };
        match next.get(..4) {
            Some(head) => (head.starts_with(b"---") || head.starts_with(b"...")) && matches!(head[3], b' ' | b'\t' | b'\r' | b'\n'),
            None => self.eof && next.is_empty(),
        }
    }

    /// Reads more after the unread bytes, moving them to the front first.
    fn fill(&mut self) -> io::Result<()> {
        self.buffer.copy_within(self.at..self.end, 0);
        (self.end, self.at) = (self.end - self.at, 0);
        loop {
            match self.inner.read(&mut self.buffer[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(());
        }
    }

    /// Decides what to do with the line that starts at `at`, once enough of it is buffered.
    fn start_line(&mut self) {
        if self.empty_map_at(self.at) {
            // The marker that follows sets what the next document starts with; nothing else changes.
            self.line = Line::DropEmptyMaps;
            return;
        }
        let window = &self.buffer[self.at..self.end.min(self.at + LOOKAHEAD)];
        let kind = classify(window);
        let certain_comment = kind == Kind::Comment && matches!(self.document, Document::Prologue | Document::Mapping);
        let repeated_entry = kind == (Kind::Entry { simple: true }) && self.document == Document::Sequence && self.in_entries;
        let start = kind == (Kind::Marker { bare: true }) && window.starts_with(b"---");
        self.line = match () {
            _ if certain_comment && self.in_run => Line::Drop,
            _ if repeated_entry => Line::DropEntries,
            _ if start && self.after_start => Line::DropStarts,
            _ => Line::Copy,
        };
        self.in_entries = false;
        self.after_start = start || (self.after_start && matches!(kind, Kind::Comment | Kind::Blank));
        match kind {
            Kind::Comment => self.in_run = certain_comment,
            Kind::Blank => {}
            Kind::Marker { bare } => {
                // Whatever was open ends at a marker at column 0 (YAML forbids one inside a
                // quoted scalar, and the parser refuses it there), so a new document starts over.
                self.document = if bare { Document::Prologue } else { Document::Unsure };
                self.in_run = false;
            }
            Kind::Content { key } => {
                if self.document == Document::Prologue {
                    self.document = if key { Document::Mapping } else { Document::Unsure };
                }
                self.in_run = false;
            }
            Kind::Entry { simple } => {
                if self.document == Document::Prologue {
                    self.document = Document::Sequence;
                }
                self.in_run = false;
                self.in_entries = simple && self.document == Document::Sequence;
            }
        }
    }

    /// Skips the dropped entry, and the simple entries right after it.
    fn drop_entries(&mut self) {
        while let Some(length) = simple_entry(&self.buffer[self.at..self.end]) {
            self.at += length;
        }
        // At the start of another line, or of one not wholly buffered yet: look at it.
        self.line = Line::Start;
    }

    /// Skips `--- {}` lines while each is followed by a marker or the end, counting them.
    fn drop_empty_maps(&mut self) {
        while self.empty_map_at(self.at) {
            self.at += EMPTY_MAP.len();
            self.empty_maps += 1;
        }
        self.line = Line::Start;
    }

    /// Skips the rest of a dropped `---` line, and the `---` lines right after it, as fast as memory.
    fn drop_starts(&mut self) {
        const STARTS: &[u8; 64] = b"---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n---\n";
        let Some(newline) = memchr::memchr(b'\n', &self.buffer[self.at..self.end]) else {
            // The rest of the line is not buffered yet: drop what is, and go on dropping.
            self.at = self.end;
            return;
        };
        self.at += newline + 1;
        while self.buffer[self.at..self.end].starts_with(STARTS) {
            self.at += STARTS.len();
        }
        self.line = Line::Start;
    }

    /// Skips the rest of a dropped line, and the run of `#` lines after it, as fast as memory.
    fn drop_lines(&mut self) {
        // Empty comment lines cost most per byte (a line every two bytes): 16 at a time.
        const EMPTY_COMMENTS: &[u8; 32] = b"#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n#\n";
        loop {
            let start = self.at;
            while self.buffer[self.at..self.end].starts_with(EMPTY_COMMENTS) {
                self.at += EMPTY_COMMENTS.len();
            }
            // Now at the start of a line: drop it only if it is another comment of the run.
            if self.at != start && (self.at == self.end || self.buffer[self.at] != b'#') {
                self.line = Line::Start;
                return;
            }
            let rest = &self.buffer[self.at..self.end];
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.at = self.end;
                    return;
                }
                Some(newline) => {
                    self.at += newline + 1;
                    // The next line is another comment of the run: skip it here too.
                    if self.at == self.end || self.buffer[self.at] != b'#' {
                        self.line = Line::Start;
                        return;
                    }
                }
            }
        }
    }
}

impl<R: Read> Read for CommentRuns<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            let buffered = &self.buffer[self.at..self.end];
            let need_more = match self.line {
                // A `--- {}` line is dropped only when what follows it is known (`empty_map_at`).
                Line::Start => {
                    buffered.len() < LOOKAHEAD && !buffered.contains(&b'\n')
                        || buffered.starts_with(EMPTY_MAP) && buffered.len() < EMPTY_MAP.len() + 4
                }
                Line::Copy | Line::Drop | Line::DropEntries | Line::DropStarts | Line::DropEmptyMaps => buffered.is_empty(),
            };
            if need_more && !self.eof {
                self.fill()?;
                continue;
            }
            if self.at == self.end {
                return Ok(0);
            }
            match self.line {
                Line::Start => self.start_line(),
                Line::Drop => self.drop_lines(),
                Line::DropEntries => self.drop_entries(),
                Line::DropStarts => self.drop_starts(),
                Line::DropEmptyMaps => self.drop_empty_maps(),
                Line::Copy => {
                    // This line, and the lines after it whose start decides nothing.
                    let rest = &self.buffer[self.at..self.end];
                    let room = rest.len().min(out.len());
                    let (mut n, mut ends_line) = (room, false);
                    for newline in memchr::memchr_iter(b'\n', &rest[..room]) {
                        let next = newline + 1;
                        if self.document == Document::Prologue || matches!(rest.get(next), None | Some(b'#' | b'-' | b'.')) {
                            (n, ends_line) = (next, true);
                            break;
                        }
                        // A line passed without a look is content or blank: a run ends there.
                        (self.in_run, self.in_entries) = (false, false);
                    }
                    // A quoted scalar or flow collection may go on past this line.
                    if matches!(self.document, Document::Mapping | Document::Sequence)
                        && rest[..n].iter().any(|b| matches!(b, b'"' | b'\'' | b'[' | b'{'))
                    {
                        self.document = Document::Unsure;
                    }
                    out[..n].copy_from_slice(&rest[..n]);
                    self.at += n;
                    if ends_line {
                        self.line = Line::Start;
                    }
                    return Ok(n);
                }
            }
        }
    }
}

/// What a line is, from its first bytes (`window`: the line, or at least [`LOOKAHEAD`] bytes of it).
fn classify(window: &[u8]) -> Kind {
    let line = window.split(|&b| b == b'\n').next().unwrap_or_default();
    let after_blanks = line.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r'));
    match line.first() {
        _ if after_blanks.is_none() && line.len() < window.len() => Kind::Blank,
        Some(b'#') => Kind::Comment,
        Some(b'-' | b'.') if line.starts_with(b"---") || line.starts_with(b"...") => match line.get(3) {
            None | Some(b' ' | b'\t' | b'\r') => {
                let rest = line[3..].iter().position(|b| !matches!(b, b' ' | b'\t' | b'\r'));
                // A comment after the marker needs a blank before it, which the match above saw.
                let bare = rest.is_none_or(|at| line[3 + at] == b'#') && line.len() < window.len();
                Kind::Marker { bare }
            }
            Some(_) => Kind::Content { key: false },
        },
        Some(b'-') if line.get(1) == Some(&b' ') || (line.len() == 1 && line.len() < window.len()) => {
            Kind::Entry { simple: simple_entry(window).is_some() }
        }
        _ => Kind::Content { key: plain_key(line, line.len() < window.len()) },
    }
}

/// The length of the line that `bytes` start with, its line break included, when it is a whole
/// simple entry of a block sequence: `- `, then a letter or digit, then letters, digits, `_` and
/// `.` up to the break (a plain scalar, which no other character on the line can make more).
fn simple_entry(bytes: &[u8]) -> Option<usize> {
    let scalar = bytes.strip_prefix(b"- ")?;
    if !scalar.first()?.is_ascii_alphanumeric() {
        return None;
    }
    let end = scalar.iter().position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')))?;
    (scalar[end] == b'\n').then_some(2 + end + 1)
}

/// `name:` at column 0 followed by a blank or the end of the line (when the line is `complete`,
/// not cut at the look-ahead), `name` of letters, digits and `_ . - /`: the first line of a block
/// mapping (a quoted, flow or explicit key is not recognised).
fn plain_key(line: &[u8], complete: bool) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else { return false };
    let name = &line[..colon];
    let ends = match line.get(colon + 1) {
        None => complete,
        Some(next) => matches!(next, b' ' | b'\t' | b'\r'),
    };
    ends && name.first().is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        && name.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(text: &str) -> String {
        filtered_counted(text).0
    }

    /// The filtered text and the number of `--- {}` documents dropped.
    fn filtered_counted(text: &str) -> (String, usize) {
        let mut out = String::new();
        let mut reader = CommentRuns::new(text.as_bytes());
        reader.read_to_string(&mut out).unwrap();
        (out, reader.empty_maps())
    }

    /// What the parser and the slim decoder read of `text` (through the filter or not), empty
    /// maps left out of both and counted, those the filter dropped included.
    fn reading(text: &str, filter: bool) -> (Option<Vec<serde_json::Value>>, Option<String>, Option<usize>) {
        let (text, dropped) = if filter { filtered_counted(text) } else { (text.to_string(), 0) };
        let empty = |d: &serde_json::Value| d.as_object().is_some_and(|m| m.is_empty());
        let all = documents(&text);
        let count = all.as_ref().map(|d| d.iter().filter(|d| empty(d)).count() + dropped);
        let kept = all.map(|d| d.into_iter().filter(|d| !empty(d)).collect());
        (kept, slim(&text), count)
    }

    /// Reads through a reader that hands out one byte at a time, and into one-byte reads.
    fn filtered_bytewise(text: &str) -> String {
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let Some((&first, rest)) = self.0.split_first() else { return Ok(0) };
                out[0] = first;
                self.0 = rest;
                Ok(1)
            }
        }
        let mut reader = CommentRuns::new(Trickle(text.as_bytes()));
        let (mut out, mut byte) = (Vec::new(), [0u8]);
        while reader.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_run_of_comment_lines_keeps_its_first_line() {
        // A blank line inside a run is kept and the run goes on.
        let text = "# one\n#\n# three\nkind: Pod\n#a\n#a2\n\n#b\nmetadata:\n  name: x\n#c\n#d\n";
        let expected = "# one\nkind: Pod\n#a\n\nmetadata:\n  name: x\n#c\n";
        assert_eq!(filtered(text), expected);
        assert_eq!(filtered_bytewise(text), expected);
    }

    #[test]
    fn long_runs_of_empty_comments_end_at_the_first_other_line() {
        for run in [15, 16, 17, 31, 32, 33, 100] {
            for next in ["kind: Pod\n", "# note\n", "\n#\n", "- 1\n", ""] {
                let text = format!("a: 1\n{}{next}b: 2\n", "#\n".repeat(run));
                let expected = format!(
                    "a: 1\n#\n{}b: 2\n",
                    match next {
                        "# note\n" => "",
                        "\n#\n" => "\n",
                        other => other,
                    }
                );
                assert_eq!(filtered(&text), expected, "{run} then {next:?}");
                assert_eq!(filtered_bytewise(&text), expected, "{run} then {next:?}");
            }
        }
    }

    #[test]
    fn comments_that_may_be_content_pass() {
        for text in [
            // A document whose root is a block scalar: its lines may start at column 0.
            "--- |\n#a\n#b\n",
            // A quoted or flow root, a sequence root, a BOM: not recognised, left alone.
            "\"a\n#x\n#y\n\"\n",
            "[a,\n#x\n#y\n]\n",
            "- a\n#x\n#y\n",
            "\u{feff}key: v\n#x\n#y\n",
            // Indented comment-like lines are content inside a block scalar.
            "data: |\n  #a\n  #b\n",
            // A quote or flow collection may be open at column 0; nothing after it is dropped.
            "a: \"x\n#y\n#z\n\"\n",
            "a: 'x\n#y\n#z\n'\n--- a\n#p\n#q\n",
            "a: [1,\n#y\n#z\n2]\n",
        ] {
            assert_eq!(filtered(text), text, "{text:?}");
            assert_eq!(filtered_bytewise(text), text, "{text:?}");
        }
    }

    #[test]
    fn a_run_of_simple_entries_of_a_root_sequence_keeps_its_first_line() {
        // Not simple: `-  4` (a space first); a blank or comment line ends a run; in a mapping
        // document, entries are a value's and pass.
        let text = "- 1\n- 2\n- 3\n-  4\n- 5\n- 6\n\n- 7\n- 8.x_y\n# c\n- 9\n- 10\n---\nk:\n- 1\n- 2\n";
        let expected = "- 1\n-  4\n- 5\n\n- 7\n# c\n- 9\n---\nk:\n- 1\n- 2\n";
        assert_eq!(filtered(text), expected);
        assert_eq!(filtered_bytewise(text), expected);
        // Runs across the reader's buffer, and a last line without its break.
        let long = format!("---\n{}- 2", "- 1\n".repeat(100_000));
        assert_eq!(filtered(&long), "---\n- 1\n- 2");
        assert_eq!(filtered(&format!("{long}\n")), "---\n- 1\n");
    }

    #[test]
    fn entries_that_may_mean_more_pass() {
        for text in [
            // A quote or a flow collection may be open at column 0 from there on.
            "- \"a\n- 1\n- 2\n\"\n",
            "- 1\n- 'a\n- 1\n- 2\n'\n",
            "- [1,\n- 2\n- 3]\n",
            "- 1\n# it's\n- 2\n- 3\n",
            // A root that is not a block sequence, or entries that are not plain scalars.
            "--- |\n- 1\n- 2\n",
            "k:\n- 1\n- 2\n",
            "- 1\n- &a 2\n- *a\n- !t 3\n- a: 1\n- - 1\n- -1\n- 1 # c\n- 1\r\n- 2\r\n",
            // A line more indented after an entry continues it: the run ends there.
            "- 1\n  x\n- 2\n  y\n",
        ] {
            assert_eq!(filtered(text), text, "{text:?}");
            assert_eq!(filtered_bytewise(text), text, "{text:?}");
        }
    }

    #[test]
    fn a_bare_marker_starts_a_prologue_again() {
        let text = "#a\n#b\n---\n#c\n#d\nk: 1\n--- # note\n#e\n#f\n...\n#g\n#h\n--- |\n#i\n#j\n---\n#k\n#l\n";
        assert_eq!(filtered(text), "#a\n---\n#c\nk: 1\n--- # note\n#e\n...\n#g\n--- |\n#i\n#j\n---\n#k\n");
        // A bare `---` right after another (only comments between) starts nothing new: dropped.
        let text = "---\n#c\n#d\n--- # note\n#e\n#f\n";
        assert_eq!(filtered(text), "---\n#c\n#e\n");
        // After a document whose quotes or flow collections leave it unsure, as `tools/bombs.py`
        // writes a pool (`cidrs: [...]`) before a long sequence.
        let text = "a: 'x\n#y\n#z\n'\nb: [1]\n#y\n#z\n---\n#p\n#q\n- 1\n- 2\n...\n- 3\n- 4\n";
        assert_eq!(filtered(text), "a: 'x\n#y\n#z\n'\nb: [1]\n#y\n#z\n---\n#p\n- 1\n...\n- 3\n");
    }

    /// The documents the parser reads from `text`, a root sequence as an empty one (the snapshot
    /// never reads a root sequence's elements: `model::slim`) and empty ones left out (the stream
    /// reader keeps none); `None` when it refuses the text.
    fn documents(text: &str) -> Option<Vec<serde_json::Value>> {
        let documents = serde_saphyr::from_multiple::<serde_json::Value>(text).ok()?;
        Some(
            documents
                .into_iter()
                .filter(|d| !d.is_null())
                .map(|d| if d.is_array() { serde_json::Value::Array(Vec::new()) } else { d })
                .collect(),
        )
    }

    /// What `inputs::parse_stream` keeps of `text`'s documents (the slim decoder, the plugin's
    /// parser options), as text; `None` when the parser refuses the text.
    fn slim(text: &str) -> Option<String> {
        use crate::model::slim::SlimYaml;
        let documents: Result<Vec<SlimYaml>, _> =
            serde_saphyr::read_with_options(&mut text.as_bytes(), crate::manifest::yaml_options()).collect();
        let empty_map = |d: &SlimYaml| d.document.as_ref().and_then(serde_json::Value::as_object).is_some_and(|m| m.is_empty());
        let empty = |d: &SlimYaml| (matches!(d.document, None | Some(serde_json::Value::Null)) || empty_map(d)) && d.workloads.is_empty();
        documents.ok().map(|d| format!("{:?}", d.iter().filter(|d| !empty(d)).collect::<Vec<_>>()))
    }

    #[test]
    fn the_parser_reads_the_same_documents() {
        let texts = [
            "# head\n#\n#\napiVersion: v1\nkind: Pod\n#\n#\nmetadata:\n  name: a # x\n#\ndata: |\n  # kept\n  #\n#\n#\nspec: {}\n",
            "a: \"x\n  #y\"\n#\n#\nb: 1\n",
            "#\n#\n---\n#\n#\nk: v\n#\n...\n#\n#\n---\n- 1\n#\n#\n",
            "- 1\n- 2\n- 3\n---\nk: v\n---\n- a\n- b\n  c\n- d\n- e\n...\n- |\n- 1\n- 2\n",
        ];
        // Column 0 inside a quoted scalar breaks YAML's indentation rule, but the parser reads the
        // first (and refuses the second): the same either way.
        let lenient = ["a: \"x\n#y\n#z\n\"\n", "a: 'x\n---\n#y\n#z\n'\n"];
        assert!(serde_saphyr::from_multiple::<serde_json::Value>(lenient[0]).is_ok());
        for text in texts.iter().chain(&lenient) {
            assert_eq!(reading(text, false), reading(text, true), "{text:?} → {:?}", filtered(text));
        }
    }

    #[test]
    fn runs_of_document_starts_pass_as_their_first() {
        let cases = [
            ("---\n---\n---\nk: v\n", "---\nk: v\n"),
            ("k: v\n---\n#\n\n--- # c\n---\n", "k: v\n---\n#\n\n"),
            // Content, a directive-like line or a marker that is not bare ends the run.
            ("---\n%YAML 1.2\n---\n", "---\n%YAML 1.2\n---\n"),
            ("---\n--- |\n---\n", "---\n--- |\n---\n"),
            ("---\n...\n---\n", "---\n...\n---\n"),
        ];
        for (text, expected) in cases {
            assert_eq!(filtered(text), expected, "{text:?}");
            assert_eq!(filtered_bytewise(text), expected, "{text:?}");
            assert_eq!(documents(text), documents(expected), "{text:?}");
        }
    }

    #[test]
    fn empty_maps_followed_by_a_marker_are_dropped_and_counted() {
        for (text, expected, dropped) in [
            ("--- {}\n--- {}\n--- {}\n", "", 3),
            ("k: v\n--- {}\n--- {}\n---\nj: w\n--- {}\n...\n", "k: v\n---\nj: w\n...\n", 3),
            // Not followed by a marker (a comment, content, the end without a break): passed.
            ("--- {}\n# c\n--- {}\nk: v\n--- {}", "--- {}\n# c\n--- {}\nk: v\n--- {}", 0),
            ("--- {}\n--- {}\n--- |\n  x\n", "--- |\n  x\n", 2),
        ] {
            assert_eq!(filtered_counted(text), (expected.to_string(), dropped), "{text:?}");
            assert_eq!(filtered_bytewise(text), expected, "{text:?}");
            assert_eq!(reading(text, false), reading(text, true), "{text:?}");
        }
        let many = "---\n".repeat(10_000) + "k: v\n" + &"---\n".repeat(33);
        assert_eq!(filtered(&many), "---\nk: v\n---\n");
    }

    proptest::proptest! {
        /// Streams of lines that open and close scalars, collections and documents at column 0
        /// and around comments and sequence entries: the parser reads the same documents (or
        /// refuses both), root sequences compared as the snapshot reads them (see [`documents`]),
        /// and the slim decoder keeps the same.
        #[test]
        fn any_stream_of_tricky_lines_parses_the_same(lines in proptest::collection::vec(0..LINES.len(), 0..24)) {
            let text: String = lines.iter().map(|&i| format!("{}\n", LINES[i])).collect();
            proptest::prop_assert_eq!(reading(&text, false), reading(&text, true), "{:?} → {:?}", text, filtered(&text));
        }
    }

    const LINES: &[&str] = &[
        "#",
        "# x",
        "#",
        "",
        "a: 1",
        "b: \"x",
        "  y\"",
        "\"",
        "c: |",
        "  #z",
        "#z",
        "---",
        "...",
        "--- |",
        "- 1",
        "d: [1,",
        "2]",
        "  e: f",
        "'q",
        "x'",
        "f:",
        "  - g",
        "k: v # c",
        "  # i",
        "- 1",
        "- 2",
        "- a.b",
        "- 1",
        "-",
        "- |",
        "- >",
        "  - 3",
        "- k: v",
        "- \"q",
        "- 'q",
        "- [1,",
        "- &a 1",
        "- *a",
        "  4",
        "- - 5",
        "? x",
        "--- - 1",
        "- 1 # c",
        "-  6",
        "---",
        "--- # c",
        "%YAML 1.2",
        "--- {}",
    ];
}
