//! Offline conversion of manifests (GitOps repositories): only CiliumPodIPPool documents are
//! re-serialized; every other document of a YAML stream is copied byte for byte, in order
//! (`crate::manifest` splits and rewrites the stream).

use super::convert::{V2ALPHA1_API_VERSION, to_v2};
use crate::manifest;
use crate::model::pool::{POOL_KIND, is_pool_object};
use crate::model::slim::EDITED;
use crate::model::{Dialect, Family};
use serde_json::Value;

/// The result of converting one file's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    /// Pools that needed conversion (and were converted in `text`).
    pub converted: usize,
    /// The first lines of the documents re-serialized whole, without the comments inside them.
    pub uncommented: Vec<usize>,
}

/// Whether a pool document still needs conversion to the `target` v2 shape: it is v2alpha1, or
/// in the other v2 dialect (CFP object `cidrs`, or upstream strings and `pool[]`).
pub fn needs_conversion(doc: &Value, target: Dialect) -> bool {
    if !is_pool_object(doc) {
        return false;
    }
    if doc.get("apiVersion").and_then(Value::as_str) == Some(V2ALPHA1_API_VERSION) {
        return true;
    }
    Family::ALL.iter().any(|f| {
        let fam = doc.pointer(&format!("/spec/{}", f.name()));
        let cidrs = fam.and_then(|f| f.get("cidrs")).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
        match target {
            Dialect::CfpV2 => cidrs.iter().any(Value::is_string) || fam.is_some_and(|f| f.get("pool").is_some()),
            _ => cidrs.iter().any(Value::is_object),
        }
    })
}

/// Converts a pool, or the pools inside a `List`; `None` when nothing needs conversion.
fn convert_document(doc: &Value, target: Dialect) -> Result<Option<(Value, usize)>, String> {
    if needs_conversion(doc, target) {
        return Ok(Some((to_v2(doc, target)?.object, 1)));
    }
    let Some(items) = doc.get("items").and_then(Value::as_array) else { return Ok(None) };
    let mut out = doc.clone();
    let mut converted = 0;
    for (i, item) in items.iter().enumerate() {
        if needs_conversion(item, target) {
            out["items"][i] = to_v2(item, target).map_err(|e| format!("items[{i}]: {e}"))?.object;
            converted += 1;
        }
    }
    Ok((converted > 0).then_some((out, converted)))
}

/// Converts every CiliumPodIPPool in a file's text (YAML stream or JSON) to v2. Errors name the
/// file, line and field; nothing is half-converted because the caller writes only on success.
pub fn convert_text(text: &str, name: &str, target: Dialect) -> Result<Outcome, String> {
    let mut converted = 0;
    let rewritten = manifest::rewrite_fields(text, name, &[POOL_KIND], EDITED, &mut |doc| {
        Ok(convert_document(doc, target)?.map(|(doc, n)| {
            converted += n;
            doc
        }))
    })
    .map_err(|e| e.to_string())?;
    Ok(Outcome { text: rewritten.text, converted, uncommented: rewritten.uncommented })
}

/// One document that a conversion changed, as it stands in the converted text.
#[derive(Debug, PartialEq, Eq)]
pub struct ChangedDocument<'a> {
    /// 1-based position among the file's documents, and how many there are.
    pub index: usize,
    pub of: usize,
    /// The line it starts on in the converted text.
    pub line: usize,
    pub text: &'a str,
}

/// The documents of `after` that differ from those of `before`. A JSON file (one document), or a
/// conversion that changed how many documents there are, is the whole file.
pub fn changed_documents<'a>(before: &str, after: &'a str) -> Vec<ChangedDocument<'a>> {
    if before == after {
        return Vec::new();
    }
    // Counted, then walked side by side: a stream of millions of documents is not held twice.
    let of = manifest::each_document(after).count();
    if manifest::each_document(before).count() != of {
        return vec![ChangedDocument { index: 1, of: 1, line: 1, text: after }];
    }
    manifest::each_document(before)
        .zip(manifest::each_document(after))
        .enumerate()
        .filter(|(_, (o, n))| o.text != n.text)
        .map(|(i, (_, n))| ChangedDocument { index: i + 1, of, line: n.line, text: n.text })
        .collect()
}

/// A unified diff of one file, as `git diff` prints it (`--- a/path`, `+++ b/path`, hunks with
/// three lines of context); empty when nothing changed. The path loses a leading `./` or `/`, as
/// `git apply` wants it (`patch -p1` from the directory the paths are relative to).
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let mut path = path;
    while let Some(rest) = path.strip_prefix("./").or_else(|| path.strip_prefix('/')) {
        path = rest;
    }
    let (old, new, skipped) = window(before, after).unwrap_or((before, after, 0));
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = diff.unified_diff().context_radius(CONTEXT).header(&format!("a/{path}"), &format!("b/{path}")).to_string();
    if skipped > 0 {
        out = manifest::yaml_lines(&out).map(|line| shifted(line, skipped)).collect();
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// Lines of context around a change in a unified diff.
const CONTEXT: usize = 3;

/// The part of `before` and `after` that holds every changed document, with [`CONTEXT`] lines
/// of the unchanged text either side, and how many lines come before it: the diff of a large
/// file is computed on that part only, which gives the same hunks (the diff takes the unchanged
/// lines around a change as they are). `None` when the files differ in their number of documents.
fn window<'a>(before: &'a str, after: &'a str) -> Option<(&'a str, &'a str, usize)> {
    if manifest::each_document(before).count() != manifest::each_document(after).count() {
        return None;
    }
    // Where the first changed document starts (the text before it is the same in both), where
    // the last one ends in each, and the starts of the last lines before the first.
    let (mut first, mut ends, mut offsets) = (None, (0, 0), (0, 0));
    let (mut lines, mut recent) = (0, std::collections::VecDeque::with_capacity(CONTEXT + 1));
    for (old, new) in manifest::each_document(before).zip(manifest::each_document(after)) {
        if old.text != new.text {
            first.get_or_insert(offsets.0);
            ends = (offsets.0 + old.text.len(), offsets.1 + new.text.len());
        } else if first.is_none() {
            let mut at = offsets.0;
            for line in manifest::yaml_lines(old.text) {
                recent.push_back(at);
                if recent.len() > CONTEXT {
                    recent.pop_front();
                }
                (at, lines) = (at + line.len(), lines + 1);
            }
        }
        offsets = (offsets.0 + old.text.len(), offsets.1 + new.text.len());
    }
    let start = recent.front().copied().unwrap_or(first?);
    let after_lines = |text: &str| manifest::yaml_lines(text).take(CONTEXT).map(str::len).sum::<usize>();
    let (old_end, new_end) = (ends.0 + after_lines(&before[ends.0..]), ends.1 + after_lines(&after[ends.1..]));
    Some((&before[start..old_end], &after[start..new_end], lines - recent.len()))
}

/// A hunk header of a diff of a window that starts `skipped` lines into the files, numbered as
/// in the files; any other line as it is.
fn shifted(line: &str, skipped: usize) -> String {
    let Some(ranges) = line.strip_prefix("@@ -").and_then(|rest| rest.split_once(" @@")) else { return line.to_string() };
    let Some((old, new)) = ranges.0.split_once(" +") else { return line.to_string() };
    let shift = |range: &str| match range.split_once(',') {
        Some((start, len)) => start.parse::<usize>().map(|s| format!("{},{len}", s + skipped)).ok(),
        None => range.parse::<usize>().map(|s| (s + skipped).to_string()).ok(),
    };
    match (shift(old), shift(new)) {
        (Some(old), Some(new)) => format!("@@ -{old} +{new} @@{}", ranges.1),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::documents;

    fn split_documents(text: &str) -> Vec<&str> {
        documents(text).into_iter().map(|d| d.text).collect()
    }

    const STREAM: &str = "# leading comment\napiVersion: v1\nkind: ConfigMap   # odd spacing kept\nmetadata: {name: x}\n---\n\
        apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata:\n  name: a # lost\nspec:\n  ipv4:\n    cidrs: [10.0.0.5/16]\n    maskSize: 24\n  extra: {keep: true}\n\
        --- # second\napiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: b}\nspec: {ipv4: {cidrs: [10.1.0.0/16], maskSize: 24}}\n";

    #[test]
    fn converts_pools_and_leaves_the_rest_byte_for_byte() {
        let out = convert_text(STREAM, "s.yaml", Dialect::UpstreamV2).unwrap();
        assert_eq!(out.converted, 1);
        let chunks = split_documents(&out.text);
        assert_eq!(chunks[0], split_documents(STREAM)[0]);
        assert_eq!(chunks[2], split_documents(STREAM)[2]);
        let pool: Value = serde_saphyr::from_str(chunks[1]).unwrap();
        assert_eq!(pool["apiVersion"], "cilium.io/v2");
        assert_eq!(pool["spec"]["ipv4"]["cidrs"][0], "10.0.0.5/16");
        assert_eq!(pool["spec"]["extra"]["keep"], true);
        assert_eq!(pool["metadata"]["annotations"]["cilium.io/migrated-to-v2"], "true");
        // Only the changed values are rewritten: the comment in the converted document stays.
        assert!(out.text.contains("  name: a # lost\n"), "{}", out.text);
        // Idempotent.
        assert_eq!(
            convert_text(&out.text, "s.yaml", Dialect::UpstreamV2).unwrap(),
            Outcome { text: out.text.clone(), converted: 0, uncommented: vec![] }
        );
    }

    #[test]
    fn a_diff_of_the_changed_documents_is_the_diff_of_the_files() {
        let whole = |before: &str, after: &str| {
            let diff = similar::TextDiff::from_lines(before, after);
            diff.unified_diff().context_radius(CONTEXT).header("a/f", "b/f").to_string()
        };
        let filler = "---\n{}\n".repeat(10);
        let cases = [
            (format!("{filler}a: 1\nb: 2\n{filler}"), format!("{filler}a: 1\nb: 3\n{filler}")),
            (format!("a: 1\n{filler}c: 1\n"), format!("a: 2\n{filler}c: 2\n")),
            (format!("{filler}---\nx: 1"), format!("{filler}---\nx: 2")),
            (format!("a: 1\r{filler}"), format!("a: 1\rb: 2\r{filler}")),
        ];
        for (before, after) in cases {
            assert!(window(&before, &after).is_some_and(|(_, _, skipped)| skipped > 0 || before.starts_with('a')), "{before:?}");
            assert_eq!(unified_diff("f", &before, &after), whole(&before, &after), "{before:?}");
        }
    }

    #[test]
    fn cfp_lists_json_and_errors() {
        let cfp = convert_text(STREAM, "s.yaml", Dialect::CfpV2).unwrap();
        assert_eq!(cfp.converted, 2, "the v2 document with string cidrs is reshaped too");
        assert!(!cfp.text.contains("# second\napiVersion: v1"));
        let list = r#"{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
            "metadata": {"name": "a"}, "spec": {"ipv6": {"cidrs": ["fd00::/104"], "maskSize": 120}}}]}"#;
        let out = convert_text(list, "l.json", Dialect::CfpV2).unwrap();
        let doc: Value = serde_json::from_str(&out.text).unwrap();
        assert_eq!(doc["items"][0]["spec"]["ipv6"]["cidrs"][0]["cidr"], "fd00::/104");
        let bad = "kind: ConfigMap\n---\napiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: z}\nspec: {ipv4: {cidrs: [nope], maskSize: 24}}\n";
        let err = convert_text(bad, "b.yaml", Dialect::UpstreamV2).unwrap_err();
        assert!(err.starts_with("b.yaml:3: invalid object"), "{err}");
    }
}
