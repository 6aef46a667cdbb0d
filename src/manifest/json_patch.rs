//! Editing a JSON file in place, as `patch` edits a YAML document: only the values an edit
//! changes are rewritten and every other byte (key order, spacing, the values the edit did not
//! read) is copied, so that a GitOps diff shows the change and nothing else, and so that a file
//! costs what the edit reads of it, not a tree of all of it (issue 53: a 10 MiB pool holding a
//! 5.2 M-entry array took 822 MiB when built whole). The spans of values are found by serde_json
//! (`RawValue`), one level at a time and only along the paths that changed.

use super::documents::line_break_of;
use super::parse::{as_json, is_json};
use super::patch::merge;
use crate::error::input;
use anyhow::Result;
use serde::de::{Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::ops::Range;

/// `text`, a JSON file holding one object, with the edit `edit` made to it: of it only what
/// `read` keeps is built, and the result is spliced into the text ([`patch`]). When it cannot be
/// spliced, or the splice does not read back as the edit's value, the file is written whole
/// (built, merged with the edit's changes, re-indented). `None` when the edit changes nothing.
pub(super) fn rewrite(
    text: &str,
    name: &str,
    read: &dyn Fn(&str) -> Option<Value>,
    edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>,
) -> Result<Option<String>> {
    let full = || as_json(text, name).map(|value| value.expect("the caller checked that the text is JSON"));
    let (old, partly) = match read(text) {
        Some(old) => (old, true),
        None => (full()?, false),
    };
    let Some(new) = edit(&old).map_err(|e| input(format!("{name}: {e}")))? else {
        return Ok(None);
    };
    let reads_back = |out: &String| is_json(out, name).unwrap_or(false) && read(out).as_ref() == Some(&new);
    Ok(Some(match patch(text, &old, &new).filter(reads_back) {
        Some(spliced) => spliced,
        None => {
            let whole = if partly { merge(&full()?, &old, &new) } else { new };
            crate::escape::json_pretty(&whole).expect("JSON values serialize") + "\n"
        }
    }))
}

/// An edit of the text: the bytes `start..end` replaced.
type Edit = (usize, usize, String);

/// How new values are laid out: the file's unit of indentation (empty: the file is one line)
/// and its line break.
#[derive(Clone, Copy)]
struct Layout<'a> {
    unit: &'a str,
    break_: &'static str,
}

/// `text` (one JSON value, of which an edit read `old`) rewritten to hold `new`, or `None` when
/// the edits would overlap (the caller writes the file whole).
pub(super) fn patch(text: &str, old: &Value, new: &Value) -> Option<String> {
    let start = text.len() - text.trim_start().len();
    let span = start..text.trim_end().len();
    let layout = Layout { unit: unit_of(text), break_: line_break_of(text) };
    let mut edits = Vec::new();
    diff(text, span, old, new, layout, &mut edits)?;
    // Applied from the end; of two insertions at one place the one found first is applied last,
    // so that it stays first.
    let mut edits: Vec<(usize, Edit)> = edits.into_iter().enumerate().collect();
    edits.sort_by_key(|(found, (start, _, _))| std::cmp::Reverse((*start, *found)));
    let mut out = text.to_string();
    let mut last = usize::MAX;
    for (_, (start, end, replacement)) in edits {
        if start > end || end > last {
            return None;
        }
        out.replace_range(start..end, &replacement);
        last = start;
    }
    Some(out)
}

fn diff(text: &str, span: Range<usize>, old: &Value, new: &Value, layout: Layout<'_>, edits: &mut Vec<Edit>) -> Option<()> {
    if old == new {
        return Some(());
    }
    match (old, new) {
        (Value::Object(old_map), Value::Object(new_map)) => diff_object(text, span, (old_map, new_map), layout, edits),
        (Value::Array(old_items), Value::Array(new_items)) if old_items.len() == new_items.len() => {
            let items = items(text, span.clone())?;
            if items.len() != old_items.len() {
                return replace(text, span, old, new, layout, edits);
            }
            for ((item, old_item), new_item) in items.into_iter().zip(old_items).zip(new_items) {
                diff(text, item, old_item, new_item, layout, edits)?;
            }
            Some(())
        }
        _ => replace(text, span, old, new, layout, edits),
    }
}

/// The value at `span` written whole as `new`, with what the edit did not read of it kept.
fn replace(text: &str, span: Range<usize>, old: &Value, new: &Value, layout: Layout<'_>, edits: &mut Vec<Edit>) -> Option<()> {
    let value = match old {
        Value::Object(_) | Value::Array(_) => merge(&serde_json::from_str::<crate::json::Strict>(&text[span.clone()]).ok()?.0, old, new),
        _ => new.clone(),
    };
    // A collection on one line stays on one line.
    let one_line = matches!(old, Value::Object(_) | Value::Array(_)) && !text[span.clone()].contains('\n');
    let layout = if one_line { Layout { unit: "", ..layout } } else { layout };
    edits.push((span.start, span.end, written(&value, text, span.start, layout)));
    Some(())
}

/// One entry of an object: where its key starts, where its value stands.
struct Entry {
    key: String,
    key_start: usize,
    value: Range<usize>,
}

fn diff_object(
    text: &str,
    span: Range<usize>,
    (old_map, new_map): (&Map<String, Value>, &Map<String, Value>),
    layout: Layout<'_>,
    edits: &mut Vec<Edit>,
) -> Option<()> {
    let entries = entries(text, span.clone())?;
    if entries.is_empty() {
        return replace(text, span, &Value::Object(old_map.clone()), &Value::Object(new_map.clone()), layout, edits);
    }
    let one_line = !text[span.clone()].contains('\n');
    let layout = if one_line { Layout { unit: "", ..layout } } else { layout };
    let compact = one_line && !text[span.clone()].contains("\": ");
    for (i, entry) in entries.iter().enumerate() {
        match (old_map.get(&entry.key), new_map.get(&entry.key)) {
            (Some(old_value), Some(new_value)) => diff(text, entry.value.clone(), old_value, new_value, layout, edits)?,
            // A value the edit did not read, and set.
            (None, Some(new_value)) => {
                edits.push((entry.value.start, entry.value.end, written(new_value, text, entry.value.start, layout)))
            }
            (Some(_), None) => edits.push(match (i, entries.get(i + 1)) {
                (0, Some(next)) => (entry.key_start, next.key_start, String::new()),
                (0, None) => (span.start + 1, span.end - 1, String::new()),
                _ => (entries[i - 1].value.end, entry.value.end, String::new()),
            }),
            (None, None) => {}
        }
    }
    // New keys go after the key the new value puts before them, or before the first entry.
    let mut after: Option<&Entry> = None;
    for (key, value) in new_map {
        if let Some(entry) = entries.iter().find(|e| &e.key == key) {
            after = Some(entry);
            continue;
        }
        let separator = match (one_line, compact) {
            (false, _) => format!("{}{}", layout.break_, indent_of(text, entries[0].key_start)),
            (true, false) => " ".to_string(),
            (true, true) => String::new(),
        };
        let colon = if compact { ":" } else { ": " };
        let pair = format!("{}{colon}{}", serde_json::to_string(key).ok()?, written(value, text, entries[0].key_start, layout));
        edits.push(match after {
            Some(entry) => (entry.value.end, entry.value.end, format!(",{separator}{pair}")),
            None => (entries[0].key_start, entries[0].key_start, format!("{pair},{separator}")),
        });
    }
    Some(())
}

/// `value` as JSON in the file's layout, its lines after the first indented as the line of
/// `at` is.
fn written(value: &Value, text: &str, at: usize, layout: Layout<'_>) -> String {
    let json = crate::escape::json_laid_out(value, layout.unit).expect("JSON values serialize");
    if layout.unit.is_empty() {
        return json;
    }
    let indent = indent_of(text, at);
    json.split('\n')
        .enumerate()
        .map(|(i, line)| if i == 0 { line.to_string() } else { format!("{indent}{line}") })
        .collect::<Vec<_>>()
        .join(layout.break_)
}

/// The blanks that start the line holding `at`.
fn indent_of(text: &str, at: usize) -> &str {
    let line = text[..at].rfind(['\n', '\r']).map_or(0, |b| b + 1);
    let rest = &text[line..];
    &rest[..rest.len() - rest.trim_start_matches([' ', '\t']).len()]
}

/// The file's unit of indentation: the blanks of its first indented line; empty when the file is
/// one line.
fn unit_of(text: &str) -> &str {
    let trimmed = text.trim();
    if !trimmed.contains(['\n', '\r']) {
        return "";
    }
    trimmed
        .split(['\n', '\r'])
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .find(|blanks| !blanks.is_empty() && blanks.len() <= 8)
        .unwrap_or("  ")
}

/// The entries of the object at `span` (the spans of their values; their keys as read), built
/// from serde_json's raw values: nothing under them is built.
fn entries(text: &str, span: Range<usize>) -> Option<Vec<Entry>> {
    struct Entries<'a>(&'a str);
    impl<'de> Visitor<'de> for Entries<'de> {
        type Value = Vec<(String, Range<usize>)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                let raw: &'de RawValue = map.next_value()?;
                out.push((key, within(self.0, raw.get())));
            }
            Ok(out)
        }
    }
    let inner = &text[span.clone()];
    let read = (&mut serde_json::Deserializer::from_str(inner)).deserialize_map(Entries(inner)).ok()?;
    // A key starts at the first non-blank after the `{`, or after the `,` that follows the
    // value before it.
    let mut from = 1;
    let mut out = Vec::with_capacity(read.len());
    for (key, value) in read {
        let key_start = from + blanks(&inner[from..]);
        let after = value.end + blanks(&inner[value.end..]);
        from = after + 1;
        out.push(Entry { key, key_start: span.start + key_start, value: span.start + value.start..span.start + value.end });
    }
    Some(out)
}

/// The spans of the items of the array at `span`.
fn items(text: &str, span: Range<usize>) -> Option<Vec<Range<usize>>> {
    struct Items<'a>(&'a str);
    impl<'de> Visitor<'de> for Items<'de> {
        type Value = Vec<Range<usize>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(raw) = seq.next_element::<&'de RawValue>()? {
                out.push(within(self.0, raw.get()));
            }
            Ok(out)
        }
    }
    let inner = &text[span.clone()];
    let read = (&mut serde_json::Deserializer::from_str(inner)).deserialize_seq(Items(inner)).ok()?;
    Some(read.into_iter().map(|r| span.start + r.start..span.start + r.end).collect())
}

/// Where `part`, a slice of `whole`, stands in it.
fn within(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// How many JSON blanks `text` starts with.
fn blanks(text: &str) -> usize {
    text.len() - text.trim_start_matches([' ', '\t', '\n', '\r']).len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What `patch` writes for `new`, checked to read back as `new`.
    fn patched(text: &str, new: &Value) -> String {
        let old: Value = serde_json::from_str(text).unwrap();
        let out = patch(text, &old, new).expect("patched");
        assert_eq!(&serde_json::from_str::<Value>(&out).unwrap(), new, "{out}");
        out
    }

    #[test]
    fn only_what_changed_is_rewritten_in_the_files_layout() {
        let text = "{\n    \"kind\": \"CiliumPodIPPool\",\n    \"spec\": {\n        \"ipv4\": {\"cidrs\": [\"10.0.0.0/16\"], \"maskSize\": 24}\n    }\n}\n";
        let mut new: Value = serde_json::from_str(text).unwrap();
        new["spec"]["ipv4"]["maskSize"] = json!(26);
        assert_eq!(patched(text, &new), text.replace("24}", "26}"));
        new["spec"]["ipv4"]["cidrs"] = json!(["10.0.0.0/16", "10.1.0.0/16"]);
        assert_eq!(
            patched(text, &new),
            text.replace("[\"10.0.0.0/16\"], \"maskSize\": 24", "[\"10.0.0.0/16\",\"10.1.0.0/16\"], \"maskSize\": 26")
        );
        // A new key after the one before it in the new value, indented as its neighbours.
        let mut added: Value = serde_json::from_str(text).unwrap();
        added["spec"] = json!({"ipv4": added["spec"]["ipv4"].clone(), "reserved": {"a": 1}});
        assert_eq!(patched(text, &added), text.replace("24}\n", "24},\n        \"reserved\": {\n            \"a\": 1\n        }\n"));
    }

    #[test]
    fn keys_are_removed_with_their_separators_and_compact_files_stay_compact() {
        let text = r#"{"a":1,"b":[1,2],"c":{"d":"e"}}"#;
        for (new, expected) in [
            (json!({"b": [1, 2], "c": {"d": "e"}}), r#"{"b":[1,2],"c":{"d":"e"}}"#),
            (json!({"a": 1, "c": {"d": "e"}}), r#"{"a":1,"c":{"d":"e"}}"#),
            (json!({"a": 1, "b": [1, 2]}), r#"{"a":1,"b":[1,2]}"#),
            (json!({"z": 0, "a": 1, "b": [1, 3], "c": {"d": "e"}}), r#"{"z":0,"a":1,"b":[1,3],"c":{"d":"e"}}"#),
        ] {
            assert_eq!(patched(text, &new), expected);
        }
    }

    #[test]
    fn what_the_edit_did_not_read_is_copied_byte_for_byte() {
        let big = format!("[0{}]", ",0".repeat(1000));
        let text = format!("{{\n  \"spec\": {{\n    \"extra\": {big},\n    \"ipv4\": {{ \"cidrs\": [ \"10.0.0.0/16\" ] }}\n  }}\n}}");
        // The edit read only spec.ipv4: `extra` is in neither value.
        let old = json!({"spec": {"ipv4": {"cidrs": ["10.0.0.0/16"]}}});
        let new = json!({"spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "reservedRanges": ["10.0.0.1"]}}});
        let out = patch(&text, &old, &new).unwrap();
        assert!(out.contains(&format!("\"extra\": {big},\n")), "{out}");
        assert!(out.contains("\"cidrs\": [ \"10.0.0.0/16\" ], \"reservedRanges\": [\"10.0.0.1\"] }"), "{out}");
    }
}
