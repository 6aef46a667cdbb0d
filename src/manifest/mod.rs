//! Manifest text, the bottom layer: parsing a file's text (JSON, or a YAML stream) into
//! objects, serialising an object as a YAML document, and rewriting some documents of a file
//! while leaving every other document byte-for-byte as it was (GitOps repositories diff these
//! files). Pure text in, values or text out; reading files is `source::files`' job.
//!
//! The stream is split on document markers here rather than by a YAML library, because
//! libraries re-serialize (and drop comments of) everything they touch. Used by `-f` reading,
//! `reserve-range --in-place`, `migrate -f` and the migration backup. Lines end where YAML's do
//! (`\n`, `\r\n` and a bare `\r`), so that the splitter and the parser always agree on where a
//! line, a comment and a `---` marker are.
//!
//! `parse.rs` reads the text, `yaml.rs` writes a document, `documents.rs` splits a stream into its
//! documents, `patch.rs` (with `tree.rs`) edits one document in place; this file rewrites and
//! splices the documents of a file.

use crate::error::input;
use anyhow::Result;
use documents::{in_breaks, line_break_of};
use parse::{as_json, parse_yaml};
use serde_json::Value;

mod documents;
mod parse;
mod patch;
mod style;
mod tree;
mod yaml;

pub use documents::{Document, documents, starts_with_directives};
pub(crate) use parse::yaml_options;
pub use parse::{MAX_ALIAS_EVENTS, MAX_NESTING, parse};
pub use yaml::to_yaml;

/// A manifest text after [`rewrite`].
#[derive(Debug, PartialEq, Eq)]
pub struct Rewritten {
    pub text: String,
    /// How many documents were replaced (for JSON: 1 when the file was).
    pub changed: usize,
    /// The first lines of the documents that could not be patched and were re-serialized whole
    /// (anchors, aliases, tags), losing comments they held inside: the caller says so.
    pub uncommented: Vec<usize>,
}

/// Offers every document of `text` (a YAML stream or JSON; `name` is its path, for errors) to
/// `edit`, which returns its replacement or `None` to keep it. In YAML only the replaced
/// documents change, and in them only the values that differ (`patch`): every other byte is
/// copied. A JSON file is re-serialized whole if its value is replaced. An `edit` error is
/// reported as `name:line: error`, the line being the document's first.
pub fn rewrite(text: &str, name: &str, edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>) -> Result<Rewritten> {
    if let Some(value) = as_json(text, name)? {
        return Ok(match edit(&value).map_err(|e| input(format!("{name}: {e}")))? {
            Some(new) => {
                Rewritten { text: crate::escape::json_pretty(&new).expect("JSON values serialize") + "\n", changed: 1, uncommented: vec![] }
            }
            None => Rewritten { text: text.to_string(), changed: 0, uncommented: vec![] },
        });
    }
    let mut out = String::with_capacity(text.len());
    let (mut changed, mut uncommented) = (0, Vec::new());
    let all = documents(text);
    for (index, document) in all.iter().enumerate() {
        let next = all.get(index + 1).map_or("", |d| d.text);
        let docs = parse_yaml(document.text, name, Some(document.line))?;
        let docs: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
        let replacement = match docs.as_slice() {
            [doc] => edit(doc).map_err(|e| input(format!("{name}:{}: {e}", document.first_line())))?.map(|new| (*doc, new)),
            _ => None,
        };
        match replacement {
            Some((old, new)) => {
                changed += 1;
                // Only what changed is rewritten; a document that cannot be patched (anchors,
                // tags) or whose patch would not read back as `new`, or would move where the
                // next document starts, is re-serialized whole.
                let reads_back = |text: &String| {
                    documents(text).len() == 1
                        && documents(&format!("{text}{next}"))[0].text.len() == text.len()
                        && parse_yaml(text, name, None).is_ok_and(|docs| docs.into_iter().filter(|d| !d.is_null()).eq([new.clone()]))
                };
                let break_ = line_break_of(document.text);
                match patch::patch(document.text, old, &new, break_).filter(reads_back) {
                    Some(text) => out.push_str(&text),
                    None => {
                        let (head, tail, body) = document.kept();
                        if document.text.get(body..document.text.len() - tail.len()).is_some_and(patch::has_comment) {
                            uncommented.push(document.first_line());
                        }
                        out.push_str(&head);
                        out.push_str(&in_breaks(&to_yaml(&new), break_));
                        out.push_str(tail);
                    }
                }
            }
            None => out.push_str(document.text),
        }
    }
    Ok(Rewritten { text: out, changed, uncommented })
}

/// The note for a file whose documents at `lines` were re-serialized without their comments
/// ([`Rewritten::uncommented`]); `None` when there are none.
pub fn uncommented_note(name: &str, lines: &[usize]) -> Option<String> {
    let (first, more) = lines.split_first()?;
    let (which, it) = if more.is_empty() {
        (format!("the document at line {first} was"), "it")
    } else {
        (format!("the documents at lines {} were", lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")), "them")
    };
    Some(format!(
        "note: {name}: {which} written whole (anchors, aliases or tags cannot be edited in place), without the comments inside {it}"
    ))
}

/// Replaces the first object `matches` selects (a document, or an item of a list / `kind: *List`)
/// with `replacement` in `text`, re-serializing only its document. `None` when no document holds
/// the object.
pub fn splice(text: &str, name: &str, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> Result<Option<String>> {
    Ok(splice_rewritten(text, name, matches, replacement)?.map(|out| out.text))
}

/// [`splice`], with what [`Rewritten`] tells (the document re-serialized without its comments).
pub fn splice_rewritten(text: &str, name: &str, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> Result<Option<Rewritten>> {
    let mut found = false;
    let out = rewrite(text, name, &mut |doc| {
        if found {
            return Ok(None);
        }
        let mut doc = doc.clone();
        found = replace_in(&mut doc, matches, replacement);
        Ok(found.then_some(doc))
    })?;
    Ok(found.then_some(out))
}

/// Replaces the object in place: the value itself, or an item of a list / `kind: *List`.
fn replace_in(value: &mut Value, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> bool {
    if matches(value) {
        *value = replacement.clone();
        return true;
    }
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get_mut("items") {
            Some(Value::Array(items)) => items,
            _ => return false,
        },
        _ => return false,
    };
    items.iter_mut().any(|item| replace_in(item, matches, replacement))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn is_blue(v: &Value) -> bool {
        v.get("kind").and_then(Value::as_str) == Some("CiliumPodIPPool")
            && v.pointer("/metadata/name").and_then(Value::as_str) == Some("blue")
    }

    #[test]
    fn line_breaks_are_yaml_s_own() {
        // Fuzz finding (splice target): the comment `#metad` ends at a bare `\r`; read as one line,
        // the pool after it was kept as "comment" and written a second time by the edit.
        let found = "#metad\r CiliumPoa:nd: Ll3";
        let mut new = parse(found, "t").unwrap().remove(0);
        new["fuzzMark"] = json!("kubectl-ciliumpool");
        let out = rewrite(found, "t", &mut |_| Ok(Some(new.clone()))).unwrap();
        // Patched in place at the key's column (the patcher counts bare `\r` as a line break too).
        assert_eq!(out.text, "#metad\r CiliumPoa:nd: Ll3\r fuzzMark: kubectl-ciliumpool\r");
        assert_eq!(parse(&out.text, "t").unwrap(), vec![new]);
        // `\r` and `\r\n` end the line before a `---` marker as `\n` does; an edited document
        // keeps the file's line breaks.
        for br in ["\r", "\r\n"] {
            let stream = format!("a: 1{br}---{br}b: 2{br}--- # c{br}c: 3{br}");
            let chunks = documents(&stream);
            assert_eq!((chunks.len(), parse(&stream, "t").unwrap().len()), (3, 3), "{stream:?}");
            assert_eq!((chunks[1].line, chunks[2].line), (2, 4), "{stream:?}");
            let out = rewrite(&stream, "t", &mut |d| Ok(d.get("b").map(|_| json!({"b": 3, "d": 4})))).unwrap();
            assert_eq!(out.text, format!("a: 1{br}---{br}b: 3{br}d: 4{br}--- # c{br}c: 3{br}"));
        }
    }

    #[test]
    fn a_document_end_marker_ends_the_document() {
        // Fuzz finding (splice target): after `...` a document may start without `---`; taken for
        // the tail of the comment-only document before it, the pool was written twice.
        let text = "# c\n...\nkind: CiliumPodIPPool\nmetadata: {name: blue}\n...\n---\nb: 2\n";
        let chunks: Vec<&str> = documents(text).into_iter().map(|d| d.text).collect();
        assert_eq!(chunks, ["# c\n...\n", "kind: CiliumPodIPPool\nmetadata: {name: blue}\n...\n", "---\nb: 2\n"]);
        assert_eq!(documents(text)[1].line, 3);
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let out = splice(text, "t", &is_blue, &new).unwrap().unwrap();
        assert_eq!(out, "# c\n...\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec: {}\n...\n---\nb: 2\n");
        assert_eq!(parse(&out, "t").unwrap(), vec![new, json!({"b": 2})]);
    }

    /// `text` with the first object document marked, as the splice fuzz target edits it.
    fn marked(text: &str) -> String {
        let mut done = false;
        let out = rewrite(text, "t", &mut |d| {
            let mut new = d.clone();
            new["fuzzMark"] = json!("kubectl-ciliumpool");
            Ok((d.is_object() && !std::mem::replace(&mut done, true)).then_some(new))
        });
        out.unwrap().text
    }

    #[test]
    fn a_patch_keeps_the_line_breaks_it_does_not_write() {
        // Fuzz finding (splice target, minimised with `cargo fuzz tmin` to `{}\r...\n\n`): the
        // patched document took its first line's `\r` on every line, so its copied `...\n` became
        // `...\r`, which joined the next document's leading `\n` into one `\r\n`: the next
        // document lost its first byte.
        for (text, expected) in [
            ("{}\r...\n\n", "{fuzzMark: kubectl-ciliumpool}\r...\n\n"),
            ("{a: 1,\r b: 2}\r...\n\nc: 3\n", "{a: 1, b: 2, fuzzMark: kubectl-ciliumpool}\r...\n\nc: 3\n"),
            // Lines the patch only copies keep their own breaks; the lines it writes take the first's.
            ("a: 1\rb: 2\n# c\r\n", "a: 1\rb: 2\nfuzzMark: kubectl-ciliumpool\r# c\r\n"),
        ] {
            let out = marked(text);
            assert_eq!(out, expected, "{text:?}");
            let (before, after) = (documents(text), documents(&out));
            assert_eq!(
                before.iter().skip(1).map(|d| d.text).collect::<Vec<_>>(),
                after.iter().skip(1).map(|d| d.text).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        // A document whose lines end in bare `\r` is patched at the right line and column (it
        // was re-serialized whole: the patcher knew only `\n`).
        assert_eq!(marked("a:\r  b: 1\r  c: [x]\rd: 2 # keep\r"), "a:\r  b: 1\r  c: [x]\rd: 2 # keep\rfuzzMark: kubectl-ciliumpool\r");
        let text = "a: # keep\r  b: 1\rd: 2\r";
        let out = rewrite(text, "t", &mut |d| {
            let mut new = d.clone();
            new["a"]["c"] = json!(3);
            Ok(Some(new))
        });
        assert_eq!(out.unwrap().text, "a: # keep\r  b: 1\r  c: 3\rd: 2\r");
    }

    #[test]
    fn only_the_edited_document_changes() {
        let text = "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n---\nkind: ConfigMap  # untouched\n";
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue", "annotations": {"a": "true"}}});
        let out = splice(text, "t.yaml", &is_blue, &new).unwrap().unwrap();
        assert_eq!(
            out,
            "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  annotations:\n    a: \"true\"\n---\nkind: ConfigMap  # untouched\n"
        );
        assert_eq!(parse(&out, "t").unwrap()[1], new);
        assert!(splice("kind: ConfigMap\n", "t", &is_blue, &new).unwrap().is_none());
    }

    #[test]
    fn markers_and_end_markers() {
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let blue = "kind: CiliumPodIPPool\nmetadata: {name: blue}\n";
        // Only the new key is added: `metadata` keeps its flow style.
        let spliced = "a: 1\n--- # blue\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec: {}\n...\n---\nb: 2\n";
        assert_eq!(splice(&format!("a: 1\n--- # blue\n{blue}...\n---\nb: 2\n"), "t", &is_blue, &new).unwrap().unwrap(), spliced);
        // A flow document is patched in flow style, on its `---` line.
        assert_eq!(
            splice("a: 1\n--- {kind: CiliumPodIPPool, metadata: {name: blue}}\n", "t", &is_blue, &new).unwrap().unwrap(),
            "a: 1\n--- {kind: CiliumPodIPPool, metadata: {name: blue}, spec: {}}\n"
        );
        let err =
            rewrite(&format!("a: 1\n---\n{blue}"), "e.yaml", &mut |d| if is_blue(d) { Err("bad".into()) } else { Ok(None) }).unwrap_err();
        assert_eq!(err.to_string(), "e.yaml:3: bad");
        let err = rewrite("a: 1\n---\nb: [\n", "e.yaml", &mut |_| Ok(None)).unwrap_err();
        assert!(err.to_string().starts_with("e.yaml:"), "{err}");
    }

    #[test]
    fn lists_and_json() {
        let list = json!({"kind": "List", "items": [{"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}}]});
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let out = splice(&serde_json::to_string(&list).unwrap(), "t.json", &is_blue, &new).unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["items"][0], new);
        let yaml = splice(&to_yaml(&list), "t.yaml", &is_blue, &new).unwrap().unwrap();
        assert_eq!(parse(&yaml, "t").unwrap()[0]["items"][0], new);
    }
}
