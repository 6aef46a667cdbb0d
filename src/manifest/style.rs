//! The style of a YAML document that what the patcher (`patch.rs`) writes follows: how its
//! strings are quoted (the nearest ones win) and how far it indents, and a scalar written in it.

use super::tree::{Node, Shape, column};
use super::yaml::to_yaml;
use serde_json::Value;

/// How a scalar string is quoted in the document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Quote {
    /// Plain where YAML reads it back as the same string, quoted where it must be.
    Plain,
    Single,
    Double,
}

/// The document's own style, which what is written follows: how its strings are quoted, how far a
/// nested mapping is indented, how far a sequence under a key is (0: `key:` then `- item` below it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) quote: Quote,
    pub(super) indent: usize,
    pub(super) sequence_indent: usize,
}

impl Layout {
    /// The style of the document `root` (whose value is `value`): the quoting most of its string
    /// values use, and the indentation of its first nested mapping and first sequence under a key
    /// (2 and 2 when it has none).
    pub(super) fn of(text: &str, root: &Node, value: &Value) -> Layout {
        let mut layout = Layout { quote: dominant(quotes(text, root, value, true)), indent: 0, sequence_indent: usize::MAX };
        indents(text, root, &mut layout);
        if layout.indent == 0 {
            layout.indent = 2;
        }
        if layout.sequence_indent == usize::MAX {
            layout.sequence_indent = 2;
        }
        layout
    }

    /// This layout quoting as the string values of `node` do, if it holds any (the entries of the
    /// mapping a key is added to, the items of a sequence): the nearest style wins.
    pub(super) fn near(self, text: &str, node: &Node, value: &Value) -> Layout {
        let direct = quotes(text, node, value, false);
        let found = if direct == [0; 3] { quotes(text, node, value, true) } else { direct };
        if found == [0; 3] { self } else { Layout { quote: dominant(found), ..self } }
    }
}

/// The quoting of a scalar node, read from its first character.
pub(super) fn quote_of(text: &str, node: &Node) -> Quote {
    match text.as_bytes().get(node.start) {
        Some(b'"') => Quote::Double,
        Some(b'\'') => Quote::Single,
        _ => Quote::Plain,
    }
}

/// How many of the string values (not keys) directly in `node`, or in all of it when `deep`, are
/// plain, single- and double-quoted. A value the edit did not read (`Shape::Skipped`) counts as
/// it did when every value was read.
fn quotes(text: &str, node: &Node, value: &Value, deep: bool) -> [usize; 3] {
    let children: Vec<(&Node, Option<&Value>)> = match (&node.shape, value) {
        (Shape::Map(entries), Value::Object(map)) => entries.iter().map(|(k, _, _, n)| (n, map.get(k))).collect(),
        (Shape::Seq(items), Value::Array(values)) => items.iter().zip(values).map(|(n, v)| (n, Some(v))).collect(),
        (Shape::Scalar, Value::String(_)) => return counted(quote_of(text, node)),
        _ => return [0; 3],
    };
    let mut found = [0; 3];
    for (child, value) in children {
        let more = match (&child.shape, value) {
            (Shape::Scalar, Some(Value::String(_))) => counted(quote_of(text, child)),
            (Shape::Skipped(skipped), _) if skipped.string => counted(quote_of(text, child)),
            (Shape::Skipped(skipped), _) if deep => skipped.strings,
            (Shape::Map(_) | Shape::Seq(_), Some(value)) if deep => quotes(text, child, value, true),
            _ => [0; 3],
        };
        (0..3).for_each(|i| found[i] += more[i]);
    }
    found
}

/// One string quoted as `quote`, counted as [`quotes`] counts.
fn counted(quote: Quote) -> [usize; 3] {
    let mut one = [0; 3];
    one[quote as usize] = 1;
    one
}

/// The style most strings have (`quotes`' counts); plain on a tie or when there are none.
fn dominant(quotes: [usize; 3]) -> Quote {
    let [plain, single, double] = quotes;
    if double > plain.max(single) {
        Quote::Double
    } else if single > plain.max(double) {
        Quote::Single
    } else {
        Quote::Plain
    }
}

/// The first indentation of a nested block mapping and of a block sequence under a key in `node`.
fn indents(text: &str, node: &Node, layout: &mut Layout) {
    match &node.shape {
        Shape::Map(entries) if !node.flow => {
            for (_, key_start, _, child) in entries {
                let key_col = column(text, *key_start);
                match &child.shape {
                    Shape::Map(nested) if !child.flow && layout.indent == 0 => {
                        if let Some((_, nested_start, _, _)) = nested.first() {
                            layout.indent = column(text, *nested_start).saturating_sub(key_col);
                        }
                    }
                    Shape::Seq(items) if !child.flow && layout.sequence_indent == usize::MAX => {
                        if let Some(dash) = items.first().and_then(|item| text[..item.start].rfind('-')) {
                            layout.sequence_indent = column(text, dash).saturating_sub(key_col);
                        }
                    }
                    // What the walk of a value not built noted of it (`tree::Skipped`).
                    Shape::Skipped(skipped) if !child.flow => {
                        if let Some(first) = skipped.first_key.filter(|_| layout.indent == 0) {
                            layout.indent = column(text, first).saturating_sub(key_col);
                        }
                        if let Some(dash) =
                            skipped.first_item.filter(|_| layout.sequence_indent == usize::MAX).and_then(|first| text[..first].rfind('-'))
                        {
                            layout.sequence_indent = column(text, dash).saturating_sub(key_col);
                        }
                    }
                    _ => {}
                }
                indents(text, child, layout);
            }
        }
        Shape::Seq(items) if !node.flow => items.iter().for_each(|item| indents(text, item, layout)),
        Shape::Skipped(skipped) if !node.flow => {
            if let Some(indent) = skipped.indent.filter(|_| layout.indent == 0) {
                layout.indent = indent;
            }
            if let Some(indent) = skipped.sequence_indent.filter(|_| layout.sequence_indent == usize::MAX) {
                layout.sequence_indent = indent;
            }
        }
        _ => {}
    }
}

/// A scalar or an empty collection on one line: a string quoted as `quote` says (plain only where
/// it reads back as the same string); a scalar YAML writes on several lines as a JSON string.
pub(super) fn scalar(value: &Value, quote: Quote) -> String {
    let json = || serde_json::to_string(value).expect("JSON values serialize");
    match (value, quote) {
        (Value::Object(_), _) => "{}".to_string(),
        (Value::Array(_), _) => "[]".to_string(),
        (Value::String(_), Quote::Double) => json(),
        (Value::String(s), Quote::Single) if !s.chars().any(char::is_control) => format!("'{}'", s.replace('\'', "''")),
        (Value::String(_), Quote::Single) => json(),
        (Value::String(s), Quote::Plain) if address_like(s) => s.clone(),
        _ => {
            let text = to_yaml(value);
            let text = text.trim_end_matches('\n');
            if text.contains('\n') { json() } else { text.to_string() }
        }
    }
}

/// An address, a CIDR or a range (`10.40.0.1`, `fd00:60::/112`, `10.40.0.1-10.40.0.9`), which
/// reads back as a string when plain in YAML 1.2 and for Kubernetes' go-yaml (`kubectl get -o
/// yaml` writes them plain), but which serde-saphyr quotes: YAML 1.1's float pattern takes any
/// digits and dots after a first dot. Time-like `1:30:00` (a YAML 1.1 base-60 number) is not one.
fn address_like(s: &str) -> bool {
    let dotted = s.matches('.').count() >= 3;
    let colons = s.matches(':').count() >= 2 && !s.split(':').all(|part| part.bytes().all(|b| b.is_ascii_digit()));
    s.bytes().all(|b| b.is_ascii_hexdigit() || matches!(b, b'.' | b':' | b'/' | b'-'))
        && s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && !s.ends_with(':')
        && (dotted || colons)
}
