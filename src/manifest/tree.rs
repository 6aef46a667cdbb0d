//! One YAML document as a tree of nodes with their byte positions (read with granit-parser, the
//! parser serde-saphyr uses), and the line and column of a position: what the patcher
//! (`patch.rs`) walks and where it puts its edits.

use granit_parser::{Event, Parser, ScalarStyle, StructureStyle};
use serde_json::Value;

/// A node of the document and where it stands (byte offsets into the document text).
pub(super) struct Node {
    pub(super) shape: Shape,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) flow: bool,
}

pub(super) enum Shape {
    /// Entries: the key, where the key starts and ends, the value.
    Map(Vec<(String, usize, usize, Node)>),
    Seq(Vec<Node>),
    Scalar,
    /// A value the old value does not hold (the edit read only some fields): walked, not built.
    Skipped(Box<Skipped>),
}

/// What the layout (`style.rs`) reads of a value that is not built, as it would read it from
/// the nodes: so that what an edit writes is quoted and indented as when every node was built.
#[derive(Default)]
pub(super) struct Skipped {
    /// Whether the value is a string scalar (its quoting is its first character's).
    pub(super) string: bool,
    /// How many string values (not keys) it holds: plain, single- and double-quoted.
    pub(super) strings: [usize; 3],
    /// Where its first key starts when it is a block mapping.
    pub(super) first_key: Option<usize>,
    /// Where its first item starts when it is a block sequence.
    pub(super) first_item: Option<usize>,
    /// Inside it, the first non-zero indentation of a block mapping under a key, and the first
    /// of a block sequence under a key (`style::indents` takes the first of each it meets).
    pub(super) indent: Option<usize>,
    pub(super) sequence_indent: Option<usize>,
}

type Events<'a, 'e> = dyn Iterator<Item = Option<(Event<'a>, usize, usize)>> + 'e;

/// The document's root node; `None` for anchors, aliases, tags, non-scalar keys or parse errors.
/// Only what `old` (the document's value as the edit read it) holds is built; every other value is
/// [`Shape::Skipped`] (a five-million-entry array the edit does not read costs no nodes).
pub(super) fn tree(text: &str, old: &Value) -> Option<Node> {
    // Comments are not nodes: they stay where they are in the text.
    let structural = |e: &Result<(Event<'_>, granit_parser::Span), _>| {
        e.as_ref().map_or(true, |(event, _)| {
            matches!(
                event,
                Event::StreamStart
                    | Event::StreamEnd
                    | Event::DocumentStart(..)
                    | Event::DocumentEnd
                    | Event::Alias(_)
                    | Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::SequenceEnd
                    | Event::MappingStart(..)
                    | Event::MappingEnd
            )
        })
    };
    // Every offset must be a char boundary inside the text; anything else is not patched (a fuzzed
    // document with a non-ASCII character after an end marker produced one outside it).
    let inside = |offset: usize| (offset <= text.len() && text.is_char_boundary(offset)).then_some(offset);
    let mut events = Parser::new_from_str(text)
        .filter(structural)
        .map(|e| e.ok().and_then(|(event, span)| Some((event, inside(span.start.byte_offset()?)?, inside(span.end.byte_offset()?)?))));
    loop {
        match events.next()?? {
            (Event::StreamStart | Event::DocumentStart(..), _, _) => {}
            (event, start, end) => return node(text, &mut events, (event, start, end), Some(old)),
        }
    }
}

/// The node that starts with `first`; `old` is its value as read, `None` when it was not read.
fn node(text: &str, events: &mut Events<'_, '_>, first: (Event<'_>, usize, usize), old: Option<&Value>) -> Option<Node> {
    let Some(old) = old else { return skipped(text, events, first) };
    let (event, start, end) = first;
    match event {
        Event::Scalar(_, _, 0, None) => Some(Node { shape: Shape::Scalar, start, end, flow: false }),
        Event::MappingStart(style, 0, None) => {
            let mut entries = Vec::new();
            loop {
                match events.next()?? {
                    (Event::MappingEnd, _, close) => return collection(Shape::Map(entries), style, start, close),
                    (Event::Scalar(key, _, 0, None), key_start, key_end) => {
                        let value = old.get(key.as_ref());
                        let first = events.next()??;
                        let child = node(text, events, first, value)?;
                        entries.push((key.into_owned(), key_start, key_end, child));
                    }
                    _ => return None,
                }
            }
        }
        Event::SequenceStart(style, 0, None) => {
            let mut items = Vec::new();
            loop {
                match events.next()?? {
                    (Event::SequenceEnd, _, close) => return collection(Shape::Seq(items), style, start, close),
                    first => items.push(node(text, events, first, old.get(items.len()))?),
                }
            }
        }
        _ => None,
    }
}

/// A collection being walked by [`skipped`].
struct Frame {
    map: bool,
    flow: bool,
    /// Whether the next child is a key (in a mapping).
    key_next: bool,
    /// Whether a child was met.
    entered: bool,
    /// Where the last key met starts (in a mapping).
    key_at: usize,
    /// The column of the key whose value it is, for a block collection in a block mapping;
    /// `None` for the skipped value itself (its parent reads `first_key` and `first_item`).
    key_col: Option<usize>,
}

/// A value that is not built: its events are walked without being kept, noting what the layout
/// reads ([`Skipped`]) and where it ends; `None` on anchors, aliases, tags and non-scalar keys, as
/// for built nodes.
fn skipped(text: &str, events: &mut Events<'_, '_>, first: (Event<'_>, usize, usize)) -> Option<Node> {
    let mut info = Skipped::default();
    let start = first.1;
    let mut stack: Vec<Frame> = Vec::new();
    // Where the last scalar or flow collection ends: a block collection ends there.
    let mut last_end = first.2;
    let mut next = Some(first);
    while let Some((event, at, end)) = next.take().or_else(|| events.next().flatten()) {
        let is_key = stack.last().is_some_and(|f| f.map && f.key_next);
        if !matches!(event, Event::MappingEnd | Event::SequenceEnd) {
            note_first_child(text, &mut stack, &mut info, at)?;
        }
        match event {
            Event::Scalar(value, style, 0, None) => {
                last_end = end;
                let string = !matches!(style, ScalarStyle::Plain) || plain_string(&value);
                let Some(frame) = stack.last_mut() else {
                    info.string = string;
                    return Some(Node { shape: Shape::Skipped(Box::new(info)), start, end, flow: false });
                };
                if frame.map {
                    frame.key_next = !frame.key_next;
                    if is_key {
                        frame.key_at = at;
                        continue;
                    }
                }
                if string {
                    info.strings[quoting(text, at)] += 1;
                }
            }
            Event::MappingStart(style, 0, None) | Event::SequenceStart(style, 0, None) if !is_key => {
                let map = matches!(event, Event::MappingStart(..));
                let flow = style == StructureStyle::Flow;
                let parent = stack.last_mut();
                let key_col = match parent {
                    Some(parent) if parent.map && !parent.flow && !flow => Some(column(text, parent.key_at)),
                    _ => None,
                };
                if let Some(parent) = stack.last_mut().filter(|f| f.map) {
                    parent.key_next = true;
                }
                stack.push(Frame { map, flow, key_next: map, entered: false, key_at: at, key_col });
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let frame = stack.pop()?;
                if frame.flow {
                    last_end = end;
                }
                if stack.is_empty() {
                    let end = if frame.flow { end } else { last_end };
                    return Some(Node { shape: Shape::Skipped(Box::new(info)), start, end, flow: frame.flow });
                }
            }
            _ => return None,
        }
    }
    None
}

/// At the first child of the innermost block collection being walked, what `style::indents`
/// reads there: the first key or item of the skipped value itself, or the indentation of a
/// block collection under a key.
fn note_first_child(text: &str, stack: &mut [Frame], info: &mut Skipped, at: usize) -> Option<()> {
    let Some(frame) = stack.last_mut().filter(|f| !f.entered) else { return Some(()) };
    frame.entered = true;
    match (frame.map, frame.flow, frame.key_col) {
        (_, true, _) => {}
        (true, false, None) => info.first_key = Some(at),
        (false, false, None) => info.first_item = Some(at),
        (true, false, Some(key_col)) => {
            if info.indent.is_none() && column(text, at) > key_col {
                info.indent = Some(column(text, at) - key_col);
            }
        }
        (false, false, Some(key_col)) => {
            if info.sequence_indent.is_none() {
                info.sequence_indent = Some(column(text, text[..at].rfind('-')?).saturating_sub(key_col));
            }
        }
    }
    Some(())
}

/// Whether a plain scalar reads as a string, not as a null, a boolean or a number (YAML 1.2's
/// core schema: what the layout counted when it read the values built).
fn plain_string(value: &str) -> bool {
    let unsigned = value.strip_prefix(['-', '+']).unwrap_or(value);
    let number = unsigned.bytes().all(|b| b.is_ascii_digit()) && !unsigned.is_empty()
        || value.strip_prefix("0x").is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        || value.strip_prefix("0o").is_some_and(|o| !o.is_empty() && o.bytes().all(|b| (b'0'..=b'7').contains(&b)))
        || matches!(unsigned, ".inf" | ".Inf" | ".INF")
        || matches!(value, ".nan" | ".NaN" | ".NAN")
        || (unsigned.bytes().any(|b| b.is_ascii_digit())
            && unsigned.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
            && unsigned.parse::<f64>().is_ok());
    let other = matches!(value, "" | "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE");
    !(number || other)
}

/// The quoting of the scalar at `at`, as `strings` counts it: 0 plain, 1 single, 2 double.
fn quoting(text: &str, at: usize) -> usize {
    match text.as_bytes().get(at) {
        Some(b'\'') => 1,
        Some(b'"') => 2,
        _ => 0,
    }
}

/// A collection's node: a flow one ends at its closing bracket, a block one where its last child
/// ends (the parser's block end is the start of whatever follows, comments included).
fn collection(shape: Shape, style: StructureStyle, start: usize, close: usize) -> Option<Node> {
    let flow = matches!(style, StructureStyle::Flow);
    let end = match (&shape, flow) {
        (_, true) => close,
        (Shape::Map(entries), false) => entries.last()?.3.end,
        (Shape::Seq(items), false) => items.last()?.end,
        (Shape::Scalar | Shape::Skipped(_), false) => return None,
    };
    Some(Node { shape, start, end, flow })
}

/// `offset` inside `text` on a char boundary: the parser's positions after some malformed input
/// (found by fuzzing) are not; an edit made from them fails the read-back check and is not kept.
fn boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// The column of a byte offset (indentation is ASCII).
pub(super) fn column(text: &str, offset: usize) -> usize {
    let offset = boundary(text, offset);
    offset - line_of(text, offset).0
}

/// The start of the line holding `offset`, and the start of the next line (or the end). Lines end
/// where YAML's do (`\n`, `\r\n`, a bare `\r`), as in the splitter.
pub(super) fn line_of(text: &str, offset: usize) -> (usize, usize) {
    let offset = boundary(text, offset);
    let start = text[..offset].rfind(['\n', '\r']).map_or(0, |break_| break_ + 1);
    let next = match text[offset..].find(['\n', '\r']) {
        Some(i) if text[offset + i..].starts_with("\r\n") => offset + i + 2,
        Some(i) => offset + i + 1,
        None => text.len(),
    };
    (start, next)
}

/// Whether `text` ends with a line break.
pub(super) fn ends_a_line(text: &str) -> bool {
    text.ends_with(['\n', '\r'])
}
