//! Manifest text, the bottom layer: parsing a file's text (JSON, or a YAML stream) into
//! objects, serialising an object as a YAML document, and rewriting some documents of a file
//! while leaving every other document byte-for-byte as it was (GitOps repositories diff these
//! files). Pure text in, values or text out; reading files is [`crate::files`]' job.
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
mod json_patch;
mod parse;
mod patch;
mod probe;
mod style;
mod tree;
mod yaml;

pub use documents::{Document, documents, each_document, starts_with_directives, yaml_lines};
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
/// copied. A JSON file is re-serialized whole if its value is replaced ([`rewrite_fields`]
/// splices it instead). An `edit` error is
/// reported as `name:line: error`, the line being the document's first.
pub fn rewrite(text: &str, name: &str, edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>) -> Result<Rewritten> {
    rewrite_with(text, name, None, edit)
}

/// [`rewrite`] for an edit that changes objects of `kinds` only and reads only some of their
/// fields: only the YAML documents that hold such an object (the document, an element, an item
/// of a list) are read, and of them only what `fields` keeps (a seed of `Value`, e.g.
/// `model::slim::EDITED`); the patch writes what changed among those fields and copies every
/// other byte, so that a document costs what the edit reads of it, not a tree of all of it.
pub fn rewrite_fields<S>(
    text: &str,
    name: &str,
    kinds: &[&str],
    fields: S,
    edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>,
) -> Result<Rewritten>
where
    S: Copy + for<'de> serde::de::DeserializeSeed<'de, Value = Value>,
{
    let read = |text: &str| serde_saphyr::with_deserializer_from_str_with_options(text, yaml_options(), |de| fields.deserialize(de)).ok();
    let read_json = |text: &str| {
        let mut json = serde_json::Deserializer::from_str(text);
        let value = fields.deserialize(&mut json).ok()?;
        json.end().ok().map(|()| value)
    };
    rewrite_with(text, name, Some((kinds, &read, &read_json)), edit)
}

/// How [`rewrite_with`] reads a document it may offer: the kinds it must hold, and the reading
/// of the fields the edit reads in YAML and in JSON (`None` when they cannot be read so: read
/// whole).
type Reading<'a> = Option<(&'a [&'a str], &'a ReadFields<'a>, &'a ReadFields<'a>)>;

/// A document's fields that an edit reads (`None` when they cannot be read so).
type ReadFields<'a> = dyn Fn(&str) -> Option<Value> + 'a;

fn rewrite_with(
    text: &str,
    name: &str,
    reading: Reading<'_>,
    edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>,
) -> Result<Rewritten> {
    // A JSON object read in part is spliced (`json_patch`), the rest stays text.
    if let Some((_, _, read_json)) = reading.filter(|_| text.trim_start().starts_with('{')) {
        if parse::is_json(text, name)? {
            return Ok(match json_patch::rewrite(text, name, read_json, edit)? {
                Some(new) => Rewritten { text: new, changed: 1, uncommented: vec![] },
                None => Rewritten { text: text.to_string(), changed: 0, uncommented: vec![] },
            });
        }
    } else if let Some(value) = as_json(text, name)? {
        return Ok(match edit(&value).map_err(|e| input(format!("{name}: {e}")))? {
            Some(new) => {
                Rewritten { text: crate::escape::json_pretty(&new).expect("JSON values serialize") + "\n", changed: 1, uncommented: vec![] }
            }
            None => Rewritten { text: text.to_string(), changed: 0, uncommented: vec![] },
        });
    }
    let mut out = String::with_capacity(text.len());
    let (mut changed, mut uncommented) = (0, Vec::new());
    let mut all = each_document(text).peekable();
    while let Some(document) = all.next() {
        if reading.is_some_and(|(kinds, ..)| !probe::may_hold(document.text, kinds)) {
            out.push_str(document.text);
            continue;
        }
        // Only the first line of the next document decides whether a patch moves where it starts.
        let next = all.peek().and_then(|d| yaml_lines(d.text).next()).unwrap_or("");
        let read = reading.map(|(_, read, _)| read);
        let fields = read.and_then(|read| read(document.text));
        let docs = match &fields {
            Some(fields) => vec![fields.clone()],
            None => parse_yaml(document.text, name, Some(document.line))?,
        };
        let docs: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
        let replacement = match docs.as_slice() {
            [doc] => edit(doc).map_err(|e| input(format!("{name}:{}: {e}", document.first_line())))?.map(|new| (*doc, new)),
            _ => None,
        };
        let Some((old, new)) = replacement else {
            out.push_str(document.text);
            continue;
        };
        changed += 1;
        let partly = read.filter(|_| fields.is_some());
        let (text, whole) = edited(&document, (old, &new), (next, partly), name)?;
        out.push_str(&text);
        uncommented.extend(whole);
    }
    Ok(Rewritten { text: out, changed, uncommented })
}

/// `document` (whose value was read as `old`) holding `new`: patched, or written whole, and
/// then the line to name in a note if comments inside it were lost. `next` is the first line of
/// the next document; `partly` is the reading of the fields the edit read, `None` when `old` is
/// the whole value.
fn edited(
    document: &Document<'_>,
    (old, new): (&Value, &Value),
    (next, partly): (&str, Option<&ReadFields<'_>>),
    name: &str,
) -> Result<(String, Option<usize>)> {
    // Only what changed is rewritten; a document that cannot be patched (anchors,
    // tags) or whose patch would not read back as `new`, or would move where the
    // next document starts, is re-serialized whole.
    let reads_back = |text: &String| {
        each_document(text).count() == 1
            && each_document(&format!("{text}{next}")).next().is_some_and(|d| d.text.len() == text.len())
            && match partly {
                Some(read) => read(text).as_ref() == Some(new),
                None => parse_yaml(text, name, None).is_ok_and(|docs| docs.into_iter().filter(|d| !d.is_null()).eq([new.clone()])),
            }
    };
    let break_ = line_break_of(document.text);
    if let Some(text) = patch::patch(document.text, old, new, break_).filter(reads_back) {
        return Ok((text, None));
    }
    let (head, tail, body) = document.kept();
    let lost = document.text.get(body..document.text.len() - tail.len()).is_some_and(patch::has_comment);
    // Written whole: with the fields the edit did not read, read now.
    let full = match partly {
        Some(_) => parse_yaml(document.text, name, Some(document.line))?.into_iter().find(|d| !d.is_null()),
        None => None,
    };
    let whole = full.map_or_else(|| new.clone(), |full| patch::merge(&full, old, new));
    let text = format!("{head}{}{tail}", in_breaks(&to_yaml(&whole), break_));
    Ok((text, lost.then(|| document.first_line())))
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
        found = change_in(&mut doc, matches, &mut |object| {
            *object = replacement.clone();
            Ok(())
        })?;
        Ok(found.then_some(doc))
    })?;
    Ok(found.then_some(out))
}

/// Changes the first object of `kind` that `matches` selects (a document, or an item of a list)
/// with `change`, reading of it only what `fields` keeps ([`rewrite_fields`]): the other
/// documents stay text, and its fields that `fields` leaves out are copied byte for byte. `None`
/// when no document holds the object; `change`'s error is the document's.
pub fn change_object<S>(
    text: &str,
    name: &str,
    (kind, fields): (&str, S),
    matches: &dyn Fn(&Value) -> bool,
    change: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<Option<Rewritten>>
where
    S: Copy + for<'de> serde::de::DeserializeSeed<'de, Value = Value>,
{
    let mut found = false;
    let out = rewrite_fields(text, name, &[kind], fields, &mut |doc| {
        if found {
            return Ok(None);
        }
        let mut doc = doc.clone();
        found = change_in(&mut doc, matches, change)?;
        Ok(found.then_some(doc))
    })?;
    Ok(found.then_some(out))
}

/// Changes the object in place: the value itself, or an item of a list / `kind: *List`.
fn change_in(
    value: &mut Value,
    matches: &dyn Fn(&Value) -> bool,
    change: &mut dyn FnMut(&mut Value) -> Result<(), String>,
) -> Result<bool, String> {
    if matches(value) {
        change(value)?;
        return Ok(true);
    }
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get_mut("items") {
            Some(Value::Array(items)) => items,
            _ => return Ok(false),
        },
        _ => return Ok(false),
    };
    for item in items {
        if change_in(item, matches, change)? {
            return Ok(true);
        }
    }
    Ok(false)
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
