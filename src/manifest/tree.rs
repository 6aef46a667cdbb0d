//! One YAML document as a tree of nodes with their byte positions (read with granit-parser, the
//! parser serde-saphyr uses), and the line and column of a position: what the patcher
//! (`patch.rs`) walks and where it puts its edits.

use granit_parser::{Event, Parser, StructureStyle};

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
}

/// The document's root node; `None` for anchors, aliases, tags, non-scalar keys or parse errors.
pub(super) fn tree(text: &str) -> Option<Node> {
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
            (event, start, end) => return node(&mut events, event, start, end),
        }
    }
}

fn node(events: &mut dyn Iterator<Item = Option<(Event<'_>, usize, usize)>>, event: Event<'_>, start: usize, end: usize) -> Option<Node> {
    match event {
        Event::Scalar(_, _, 0, None) => Some(Node { shape: Shape::Scalar, start, end, flow: false }),
        Event::MappingStart(style, 0, None) => {
            let mut entries = Vec::new();
            loop {
                match events.next()?? {
                    (Event::MappingEnd, _, close) => return collection(Shape::Map(entries), style, start, close),
                    (Event::Scalar(key, _, 0, None), key_start, key_end) => {
                        let (event, start, end) = events.next()??;
                        entries.push((key.into_owned(), key_start, key_end, node(events, event, start, end)?));
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
                    (event, start, end) => items.push(node(events, event, start, end)?),
                }
            }
        }
        _ => None,
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
        (Shape::Scalar, false) => return None,
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
