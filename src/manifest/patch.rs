//! Editing one YAML document in place: only the values an edit changes are rewritten, every
//! other byte (quoting, flow or block style, comments, key order, indentation) stays as it was, so
//! that a GitOps diff shows the change and nothing else.
//!
//! The document is parsed with positions (granit-parser, the parser serde-saphyr uses), the old and
//! new values are walked together, and each difference becomes one text edit: a changed value is
//! replaced where it stands, a new key is added after the key the new value puts before it (after
//! the last one of its mapping when none is), a removed key's
//! lines are dropped, items are appended to or removed from the end of a sequence. A flow
//! collection that changes is rewritten whole, in flow style. Anchors, aliases and
//! tags are not patched (`None`: the caller re-serializes the document), and neither is anything
//! whose patched text does not read back as the new value.

use super::documents::in_breaks;
use super::parse::parse_yaml;
use super::style::{Layout, Quote, quote_of, scalar};
use super::tree::{Node, Shape, column, ends_a_line, line_of, tree};
use granit_parser::{Event, Parser};
use serde_json::{Map, Value};

/// Where a node stands, which decides how a replacement is laid out.
#[derive(Clone, Copy)]
enum Place {
    Root,
    /// The value of a block mapping entry whose key starts at column `key_col` and whose `:`
    /// ends at `colon_end`.
    Value {
        colon_end: usize,
        key_col: usize,
    },
    Item,
}

/// The document `text` (whose value is `old`) rewritten to hold `new`, or `None` when it cannot be
/// patched. The lines it writes end in `break_` (the document's own line break); every other byte,
/// line breaks included, is copied.
pub fn patch(text: &str, old: &Value, new: &Value, break_: &str) -> Option<String> {
    let root = tree(text, old)?;
    let mut edits = Vec::new();
    let layout = Layout::of(text, &root, old);
    diff(text, &root, old, new, Place::Root, layout, &mut edits)?;
    // Applied from the end of the text; of two insertions at one place the one found first
    // (a nested mapping's key) is applied last, so that it stays first.
    let mut edits: Vec<(usize, Edit)> = edits.into_iter().enumerate().collect();
    edits.sort_by_key(|(found, (start, _, _))| std::cmp::Reverse((*start, *found)));
    let mut out = text.to_string();
    let mut last = usize::MAX;
    for (_, (start, end, replacement)) in edits {
        if start > end || end > last || end > out.len() || !out.is_char_boundary(start) || !out.is_char_boundary(end) {
            return None; // overlapping or misplaced edits: not expected, not risked
        }
        // Only the written text takes the document's line break: converting the whole document
        // turned a copied `...\n` into `...\r`, which joined the next document's leading `\n`
        // into one `\r\n` and so moved that document's start (fuzz finding, splice target).
        out.replace_range(start..end, &in_breaks(&replacement, break_));
        last = start;
    }
    Some(out)
}

/// Whether `text` holds a YAML comment (as the parser sees it: a `#` inside a quoted string is none).
pub fn has_comment(text: &str) -> bool {
    Parser::new_from_str(text).map_while(Result::ok).any(|(event, _)| matches!(event, Event::Comment(..)))
}

/// `value` as YAML lines in the document's layout: a scalar or empty collection on one line,
/// anything else in block style.
fn lines(value: &Value, layout: Layout) -> Vec<String> {
    match value {
        Value::Object(map) if !map.is_empty() => map.iter().flat_map(|(key, value)| entry_lines(key, value, layout)).collect(),
        Value::Array(items) if !items.is_empty() => items.iter().flat_map(|item| item_lines(item, layout)).collect(),
        scalar_value => vec![scalar(scalar_value, layout.quote)],
    }
}

/// `key: value` as lines from column 0.
fn entry_lines(key: &str, value: &Value, layout: Layout) -> Vec<String> {
    let key = scalar(&Value::String(key.to_string()), Quote::Plain);
    if is_inline(value) {
        return vec![format!("{key}: {}", scalar(value, layout.quote))];
    }
    let pad = " ".repeat(if value.is_array() { layout.sequence_indent } else { layout.indent });
    std::iter::once(format!("{key}:")).chain(lines(value, layout).into_iter().map(|l| format!("{pad}{l}"))).collect()
}

/// `- value` as lines from column 0 (what follows the dash is two columns in).
fn item_lines(value: &Value, layout: Layout) -> Vec<String> {
    lines(value, layout).into_iter().enumerate().map(|(i, l)| if i == 0 { format!("- {l}") } else { format!("  {l}") }).collect()
}

/// `value` in flow style (`{cidr: 10.60.0.0/20, reservedRange: ...}`), for a flow collection
/// that changes; a scalar that flow style would misread is written as a JSON string.
fn flow(value: &Value) -> String {
    match value {
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter().map(|(k, v)| format!("{}: {}", flow(&Value::String(k.clone())), flow(v))).collect::<Vec<_>>().join(", ")
        ),
        Value::Array(items) => format!("[{}]", items.iter().map(flow).collect::<Vec<_>>().join(", ")),
        scalar_value => {
            let text = scalar(scalar_value, Quote::Plain);
            if text.contains([',', '[', ']', '{', '}', '#']) || text.contains(": ") {
                serde_json::to_string(scalar_value).expect("JSON values serialize")
            } else {
                text
            }
        }
    }
}

fn is_inline(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => true,
    }
}

/// Lines starting at column `col`, newline-terminated.
fn at_column(lines: Vec<String>, col: usize) -> String {
    let pad = " ".repeat(col);
    lines.into_iter().map(|l| format!("{pad}{l}\n")).collect()
}

type Edit = (usize, usize, String);

fn diff(text: &str, node: &Node, old: &Value, new: &Value, place: Place, layout: Layout, edits: &mut Vec<Edit>) -> Option<()> {
    if old == new {
        return Some(());
    }
    match (&node.shape, old, new) {
        // A key is removed with its lines only when nothing else stands on them (`- key:`).
        (Shape::Map(entries), Value::Object(old_map), Value::Object(new_map))
            if !node.flow
                && !new_map.is_empty()
                && entries.iter().all(|(key, key_start, _, _)| {
                    new_map.contains_key(key)
                        || !old_map.contains_key(key)
                        || text[line_of(text, *key_start).0..*key_start].trim().is_empty()
                }) =>
        {
            let key_col = column(text, node.start);
            let removed = diff_entries(text, entries, old_map, new_map, key_col, layout, edits)?;
            let near = layout.near(text, node, old);
            add_entries(text, entries, new_map, &removed, key_col, near, edits)
        }
        (Shape::Seq(items), Value::Array(old_items), Value::Array(new_items))
            if !node.flow && !new_items.is_empty() && old_items.len() == items.len() =>
        {
            if let Some(insertion) = inserted(text, items, old_items, new_items, layout.near(text, node, old)) {
                edits.push(insertion);
                return Some(());
            }
            for ((item, old_item), new_item) in items.iter().zip(old_items).zip(new_items) {
                diff(text, item, old_item, new_item, Place::Item, layout, edits)?;
            }
            let dash_col = column(text, text[..items[0].start].rfind('-')?);
            if new_items.len() > items.len() {
                let (_, next) = line_of(text, items.last()?.end.saturating_sub(1));
                let near = layout.near(text, node, old);
                let added: String = new_items[items.len()..].iter().map(|v| at_column(item_lines(v, near), dash_col)).collect();
                let added = if ends_a_line(&text[..next]) { added } else { format!("\n{added}") };
                edits.push((next, next, added));
            }
            for item in items.iter().skip(new_items.len()) {
                let (from, _) = line_of(text, item.start);
                let (_, to) = line_of(text, item.end.saturating_sub(1).max(item.start));
                edits.push((from, to, String::new()));
            }
            Some(())
        }
        _ => {
            // A string replacing a string keeps its quoting; anything else follows the document.
            let own = match (&node.shape, old) {
                (Shape::Scalar, Value::String(_)) => Layout { quote: quote_of(text, node), ..layout },
                _ => layout,
            };
            match whole(text, node, old, new)? {
                Some(merged) => edits.push(replacement(text, node, &merged, place, own)),
                None => edits.push(replacement(text, node, new, place, own)),
            }
            Some(())
        }
    }
}

/// What replaces `node` when it is written whole and holds values the edit did not read
/// (`Shape::Skipped`): `new` with those values, read from the node's text (a flow collection is
/// a document of its own); `Some(None)` when it holds none (or `new` drops them: another type),
/// `None` when they cannot be read (a block collection is not patched, the caller writes the
/// document whole).
fn whole(text: &str, node: &Node, old: &Value, new: &Value) -> Option<Option<Value>> {
    let same_type = matches!((old, new), (Value::Object(_), Value::Object(_)) | (Value::Array(_), Value::Array(_)));
    if !same_type || !holds_skipped(node) {
        return Some(None);
    }
    if !node.flow {
        return None;
    }
    let full = parse_yaml(text.get(node.start..node.end)?, "", None).ok()?.into_iter().next()?;
    Some(Some(merge(&full, old, new)))
}

/// Whether a value under `node` was not read.
fn holds_skipped(node: &Node) -> bool {
    match &node.shape {
        Shape::Skipped(_) => true,
        Shape::Map(entries) => entries.iter().any(|(.., child)| holds_skipped(child)),
        Shape::Seq(items) => items.iter().any(holds_skipped),
        Shape::Scalar => false,
    }
}

/// The whole value `full` (of which an edit read `old`) with the edit's changes (`old` became
/// `new`): what `old` does not hold is kept as it is, in its place; what the edit removed is
/// removed; what it added comes after.
pub(super) fn merge(full: &Value, old: &Value, new: &Value) -> Value {
    match (full, old, new) {
        (Value::Object(full_map), Value::Object(old_map), Value::Object(new_map)) => {
            let mut out = Map::new();
            for (key, value) in full_map {
                match (old_map.get(key), new_map.get(key)) {
                    (Some(old_value), Some(new_value)) => out.insert(key.clone(), merge(value, old_value, new_value)),
                    (Some(_), None) => None,
                    (None, Some(new_value)) => out.insert(key.clone(), new_value.clone()),
                    (None, None) => out.insert(key.clone(), value.clone()),
                };
            }
            for (key, value) in new_map.iter().filter(|(key, _)| !full_map.contains_key(*key)) {
                out.insert(key.clone(), value.clone());
            }
            Value::Object(out)
        }
        (Value::Array(full_items), Value::Array(old_items), Value::Array(new_items))
            if full_items.len() == old_items.len() && old_items.len() == new_items.len() =>
        {
            Value::Array(full_items.iter().zip(old_items).zip(new_items).map(|((f, o), n)| merge(f, o, n)).collect())
        }
        _ => new.clone(),
    }
}

/// When `new_items` are `old_items` with items put in between two of them (not after the last:
/// that is an append), the edit that writes those items before the first one that follows them,
/// above the comment lines just over it (a comment over an item speaks of it).
fn inserted(text: &str, items: &[Node], old_items: &[Value], new_items: &[Value], near: Layout) -> Option<Edit> {
    let at = old_items.iter().zip(new_items).take_while(|(old, new)| old == new).count();
    let added = new_items.len().checked_sub(old_items.len()).filter(|&n| n > 0)?;
    if at == old_items.len() || old_items[at..] != new_items[at + added..] {
        return None;
    }
    let dash = text[..items[at].start].rfind('-')?;
    let (mut from, _) = line_of(text, dash);
    if !text[from..dash].trim().is_empty() {
        return None; // `- - item`: the item shares its line
    }
    while from > 0 {
        let before = &text[..from];
        let before = before.strip_suffix("\r\n").or_else(|| before.strip_suffix(['\n', '\r'])).unwrap_or(before);
        let above = before.rfind(['\n', '\r']).map_or(0, |break_| break_ + 1);
        if !before[above..].trim_start().starts_with('#') {
            break;
        }
        from = above;
    }
    let lines = new_items[at..at + added].iter().map(|v| at_column(item_lines(v, near), column(text, dash))).collect();
    Some((from, from, lines))
}

/// The entries of a block mapping that stay, diffed where they stand, and those `new_map` drops,
/// taken out with their lines; the lines taken out (new keys go after them, never inside).
fn diff_entries(
    text: &str,
    entries: &[(String, usize, usize, Node)],
    old_map: &Map<String, Value>,
    new_map: &Map<String, Value>,
    key_col: usize,
    layout: Layout,
    edits: &mut Vec<Edit>,
) -> Option<Vec<(usize, usize)>> {
    let mut removed = Vec::new();
    for (key, _, key_end, value) in entries {
        let colon_end = key_end + text[*key_end..].find(':')? + 1;
        match (old_map.get(key), new_map.get(key)) {
            (Some(old_value), Some(new_value)) => {
                diff(text, value, old_value, new_value, Place::Value { colon_end, key_col }, layout, edits)?
            }
            // A value the edit did not read stays as it is.
            (None, None) => {}
            (_, None) => {
                let (from, _) = line_of(text, key_end - 1);
                let (_, to) = line_of(text, value.end.saturating_sub(1).max(colon_end));
                removed.push((from, to));
                edits.push((from, to, String::new()));
            }
            (None, Some(_)) => return None, // a key the value does not have: duplicate keys
        }
    }
    Some(removed)
}

/// The keys of `new_map` the mapping lacks, added at column `key_col` in the `near` layout.
fn add_entries(
    text: &str,
    entries: &[(String, usize, usize, Node)],
    new_map: &Map<String, Value>,
    removed: &[(usize, usize)],
    key_col: usize,
    near: Layout,
    edits: &mut Vec<Edit>,
) -> Option<()> {
    // A new key goes where the new value's order puts it: after the kept key before it
    // (after the last entry when none is), so `annotations` added after `name` stands there.
    let mut added: Vec<(usize, String)> = Vec::new();
    let mut after = None;
    let unread = entries.iter().any(|(.., child)| matches!(child.shape, Shape::Skipped(_)));
    let keys: Vec<&String> = new_map.keys().collect();
    for (index, (k, v)) in new_map.iter().enumerate() {
        if let Some((_, _, _, kept)) = entries.iter().find(|(key, ..)| key == k) {
            after = Some(kept.end);
            continue;
        }
        // A key added after every key the mapping has goes after its last entry, past the values
        // the edit did not read (in the whole object it comes after them too).
        let last = unread && !keys[index + 1..].iter().any(|later| entries.iter().any(|(key, ..)| key == *later));
        let end = if last { entries.last().map(|e| e.3.end) } else { after.or(entries.last().map(|e| e.3.end)) }?;
        let (_, mut next) = line_of(text, end.saturating_sub(1));
        // Where removed lines start, the new key goes after them (the edits never overlap).
        while let Some(&(_, to)) = removed.iter().find(|(from, _)| *from == next) {
            next = to;
        }
        let lines = at_column(entry_lines(k, v, near), key_col);
        match added.last_mut() {
            Some((at, text)) if *at == next => text.push_str(&lines),
            _ => added.push((next, lines)),
        }
    }
    for (next, lines) in added {
        let lines = if ends_a_line(&text[..next]) { lines } else { format!("\n{lines}") };
        edits.push((next, next, lines));
    }
    Some(())
}

/// The edit that puts `new` where `node` stands.
fn replacement(text: &str, node: &Node, new: &Value, place: Place, layout: Layout) -> Edit {
    if node.flow && !is_inline(new) {
        return (node.start, node.end, flow(new));
    }
    let lines = lines(new, layout);
    match place {
        // After `key:`: a scalar on the same line, a collection on the lines below.
        Place::Value { colon_end, .. } if is_inline(new) => (colon_end, node.end, format!(" {}", lines[0])),
        Place::Value { colon_end, key_col } => {
            let pad = " ".repeat(key_col + if new.is_array() { layout.sequence_indent } else { layout.indent });
            (colon_end, node.end, lines.iter().map(|l| format!("\n{pad}{l}")).collect())
        }
        // A sequence item or the root: from where the node starts, continued at its column.
        Place::Item | Place::Root => {
            let pad = format!("\n{}", " ".repeat(column(text, node.start)));
            (node.start, node.end, lines.join(&pad))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::to_yaml;
    use serde_json::json;

    fn patched(text: &str, new: &Value) -> String {
        let old = crate::manifest::parse(text, "t").unwrap().remove(0);
        let out = patch(text, &old, new, "\n").expect("patched");
        assert_eq!(&crate::manifest::parse(&out, "t").unwrap()[0], new, "reads back as the new value: {out}");
        out
    }

    #[test]
    fn only_changed_values_are_rewritten() {
        let text = "# pool\napiVersion: \"cilium.io/v2\"   # quoted\nkind: CiliumPodIPPool\nmetadata: {name: 'blue', labels: {a: \"1\"}}\nspec:\n  ipv4:\n    cidrs:\n    - \"10.40.0.0/16\"\n    - 10.41.0.0/16   # second\n    maskSize: 24\n";
        let mut new = crate::manifest::parse(text, "t").unwrap().remove(0);
        new["spec"]["ipv4"]["pool"] = json!([{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.0.0", "end": "10.40.0.15"}]}]);
        let out = patched(text, &new);
        assert!(out.starts_with("# pool\napiVersion: \"cilium.io/v2\"   # quoted\nkind: CiliumPodIPPool\nmetadata: {name: 'blue', labels: {a: \"1\"}}\nspec:\n  ipv4:\n    cidrs:\n    - \"10.40.0.0/16\"\n    - 10.41.0.0/16   # second\n    maskSize: 24\n    pool:\n"), "{out}");
        // A changed scalar keeps its line's comment; a changed flow mapping is rewritten whole.
        let mut new = crate::manifest::parse(text, "t").unwrap().remove(0);
        new["apiVersion"] = json!("cilium.io/v2alpha1");
        new["metadata"]["labels"]["a"] = json!("2");
        let out = patched(text, &new);
        assert!(out.contains("apiVersion: \"cilium.io/v2alpha1\"   # quoted\n"), "a string keeps its quotes: {out}");
        assert!(out.contains("metadata: {name: blue, labels: {a: \"2\"}}\n"), "{out}");
        assert!(out.contains("    - \"10.40.0.0/16\"\n    - 10.41.0.0/16   # second\n"), "{out}");
    }

    #[test]
    fn what_is_added_follows_the_files_quoting_and_indentation() {
        // The new key is quoted as its sibling is; the file indents by four.
        let text = "spec:\n    ipv4:\n        cidrs:\n            - cidr: '10.50.0.0/16'\n        maskSize: 24\n";
        let mut new = crate::manifest::parse(text, "t").unwrap().remove(0);
        new["spec"]["ipv4"]["cidrs"][0]["reservedRange"] = json!("10.50.0.9-10.50.0.9");
        assert_eq!(
            patched(text, &new),
            "spec:\n    ipv4:\n        cidrs:\n            - cidr: '10.50.0.0/16'\n              reservedRange: '10.50.0.9-10.50.0.9'\n        maskSize: 24\n"
        );
        // A new list: sequences under a key not indented, mappings by four, strings double-quoted.
        let text = "spec:\n    ipv4:\n        cidrs:\n        - \"10.40.0.0/16\"\n        maskSize: 24\n";
        let mut new = crate::manifest::parse(text, "t").unwrap().remove(0);
        new["spec"]["ipv4"]["pool"] = json!([{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.0.0", "end": "10.40.0.15"}]}]);
        assert_eq!(
            patched(text, &new),
            "spec:\n    ipv4:\n        cidrs:\n        - \"10.40.0.0/16\"\n        maskSize: 24\n        pool:\n        - cidr: \"10.40.0.0/16\"\n          reservedRanges:\n          - start: \"10.40.0.0\"\n            end: \"10.40.0.15\"\n"
        );
        // Plain files stay plain; a plain string that YAML would misread is still quoted.
        let text = "a:\n  b: x\n";
        let new = json!({"a": {"b": "x", "c": "true", "d": "z"}});
        assert_eq!(patched(text, &new), "a:\n  b: x\n  c: \"true\"\n  d: z\n");
    }

    #[test]
    fn items_become_objects_and_keys_are_removed() {
        let text = "spec:\n  ipv4:\n    cidrs:\n    - 10.40.0.0/16   # a\n    - 10.41.0.0/16\n    maskSize: 24\n  old: true\n";
        let new = json!({"spec": {"ipv4": {"cidrs": [{"cidr": "10.40.0.0/16", "reservedRange": []}, "10.41.0.0/16", "10.42.0.0/16"], "maskSize": 24}}});
        let out = patched(text, &new);
        assert_eq!(
            out,
            "spec:\n  ipv4:\n    cidrs:\n    - cidr: 10.40.0.0/16\n      reservedRange: []   # a\n    - 10.41.0.0/16\n    - 10.42.0.0/16\n    maskSize: 24\n"
        );
    }

    #[test]
    fn an_item_put_between_two_is_inserted_there_as_its_neighbours_are_written() {
        // Issue 42: plain addresses stay plain (serde-saphyr quotes `10.40.0.20`), and the new
        // item goes above the comment over the item it precedes; every other byte is kept.
        let text =
            "ranges:\n- end: 10.40.0.1   # one\n  start: 10.40.0.1\n# the gateway\n- end: 10.40.255.254\n  start: 10.40.255.254\nnext: x\n";
        let mut new = crate::manifest::parse(text, "t").unwrap().remove(0);
        new["ranges"].as_array_mut().unwrap().insert(1, json!({"end": "10.40.0.20", "start": "10.40.0.10"}));
        assert_eq!(
            patched(text, &new),
            "ranges:\n- end: 10.40.0.1   # one\n  start: 10.40.0.1\n- end: 10.40.0.20\n  start: 10.40.0.10\n# the gateway\n- end: 10.40.255.254\n  start: 10.40.255.254\nnext: x\n"
        );
        // Quoted neighbours: quoted. What YAML 1.1 reads as a number stays quoted in a plain file.
        let quoted = text.replace("10.40.0.1", "\"10.40.0.1\"").replace("10.40.255.254", "\"10.40.255.254\"");
        assert!(patched(&quoted, &new).contains("- end: \"10.40.0.20\"\n  start: \"10.40.0.10\"\n# the gateway"));
        for (s, written) in
            [("fd00:60::/112", "fd00:60::/112"), ("1:30:00", "\"1:30:00\""), ("10.40", "\"10.40\""), ("ab:cd:", "\"ab:cd:\"")]
        {
            assert_eq!(scalar(&json!(s), Quote::Plain), written);
        }
    }

    use proptest::prelude::*;

    /// Small documents: maps of a few keys holding scalars, lists and maps.
    fn values() -> impl Strategy<Value = Value> {
        let scalar = prop_oneof![
            "[a-z0-9./:-]{0,12}".prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::from("true")),
            Just(Value::from("10.40.0.0/16")),
        ];
        scalar.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map("[a-e]", inner, 1..4).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// `value` with the node at the `pick`-th position (depth first) replaced by `with`.
    fn mutate(value: &mut Value, pick: &mut usize, with: &Value) {
        if *pick == 0 {
            *value = with.clone();
            return;
        }
        *pick -= 1;
        match value {
            Value::Object(map) => map.values_mut().for_each(|v| mutate(v, pick, with)),
            Value::Array(items) => items.iter_mut().for_each(|v| mutate(v, pick, with)),
            _ => {}
        }
    }

    proptest! {
        /// Whatever the edit, a patch reads back as the new value, and a document written in
        /// block style is always patched (never left to the whole-document fallback).
        #[test]
        fn patches_read_back(root in proptest::collection::btree_map("[a-e]", values(), 2..5), pick in 0usize..12, with in values(), drop in proptest::option::of("[a-e]")) {
            let old = Value::Object(root.into_iter().collect());
            let mut new = old.clone();
            mutate(&mut new, &mut (pick + 1), &with); // never the root: documents are objects
            if let (Some(key), Some(map)) = (drop, new.as_object_mut()) {
                map.remove(&key);
            }
            prop_assume!(new.as_object().is_some_and(|m| !m.is_empty()));
            let text = to_yaml(&old);
            let out = patch(&text, &old, &new, "\n");
            prop_assert!(out.is_some(), "not patched: {text:?} -> {new}");
            let out = out.unwrap();
            let reread = crate::manifest::parse(&out, "t").map_err(|e| TestCaseError::fail(format!("{e}: {text:?} -> {out:?}")))?;
            prop_assert_eq!(reread, vec![new], "{:?} -> {:?}", text, out);
        }
    }

    #[test]
    fn what_is_not_patched() {
        let anchored = "a: &x {b: 1}\nc: *x\n";
        let old = crate::manifest::parse(anchored, "t").unwrap().remove(0);
        assert_eq!(patch(anchored, &old, &json!({"a": {"b": 2}, "c": {"b": 1}}), "\n"), None);
        let tagged = "a: !!str 1\n";
        let old = crate::manifest::parse(tagged, "t").unwrap().remove(0);
        assert_eq!(patch(tagged, &old, &json!({"a": "2"}), "\n"), None);
    }

    #[test]
    fn offsets_outside_the_text_are_not_patched() {
        // The splice fuzz target's crash: a multi-byte character after a `...` end marker.
        let text = "# zzzz+z*{kind: Lis:S}\n...\n\n\n\n\n\n\n\n\n\n\n Lis:St, itmes: k,ind\u{17d}";
        let mut index = 0;
        let _ = crate::manifest::rewrite(text, "fuzz.yaml", &mut |doc| {
            index += 1;
            if !doc.is_object() {
                return Ok(None);
            }
            let mut new = doc.clone();
            new["fuzzMark"] = Value::from("kubectl-ciliumpool");
            Ok(Some(new))
        });
    }

    #[test]
    fn a_key_followed_by_a_tab_before_its_colon_is_patched_or_left() {
        // The splice fuzz target's second crash this session.
        let text = "fuzzMark\t:";
        let old = crate::manifest::parse(text, "t").unwrap().remove(0);
        let _ = patch(text, &old, &json!({"fuzzMark": "kubectl-ciliumpool"}), "\n");
    }
}
