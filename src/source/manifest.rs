//! Rewriting one object inside a manifest file while leaving every other document of the file
//! byte-for-byte as it was (GitOps repositories diff these files). Pure text in, text out.

use super::files::parse;
use anyhow::Result;
use serde_json::Value;

/// Replaces the object `matches` selects with `replacement` in `text` (a YAML stream or JSON).
/// In YAML only the document holding the object is re-serialized (its leading comments are
/// kept); JSON files are re-serialized whole. `None` when no document holds the object.
pub fn splice(text: &str, name: &str, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> Result<Option<String>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let mut value: Value = serde_json::from_str(text)?;
        return Ok(replace_in(&mut value, matches, replacement).then(|| serde_json::to_string_pretty(&value).expect("JSON values serialize") + "\n"));
    }
    let mut out = String::with_capacity(text.len());
    let mut found = false;
    for chunk in yaml_documents(text) {
        if chunk.separator {
            out.push_str(chunk.text);
            continue;
        }
        let docs = parse(chunk.text, name)?;
        let mut doc = match docs.as_slice() {
            [one] if !found => one.clone(),
            _ => {
                out.push_str(chunk.text);
                continue;
            }
        };
        if !replace_in(&mut doc, matches, replacement) {
            out.push_str(chunk.text);
            continue;
        }
        found = true;
        let comments: String = chunk.text.split_inclusive('\n').take_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#')).collect();
        out.push_str(&comments);
        out.push_str(&to_yaml(&doc));
    }
    Ok(found.then_some(out))
}

/// One object as a YAML document (no leading `---`, newline-terminated).
pub fn to_yaml(value: &Value) -> String {
    let text = serde_saphyr::to_string(value).expect("JSON values serialize to YAML");
    let text = text.strip_prefix("---\n").unwrap_or(&text).to_string();
    if text.ends_with('\n') { text } else { text + "\n" }
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

struct Chunk<'a> {
    text: &'a str,
    /// A `---` / `...` line.
    separator: bool,
}

/// Splits a YAML stream into documents and separator lines, covering the text exactly.
fn yaml_documents(text: &str) -> Vec<Chunk<'_>> {
    let mut chunks = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end();
        let is_separator = bare == "---" || bare == "..." || bare.starts_with("--- #") || bare.starts_with("---\t");
        if is_separator {
            if start < offset {
                chunks.push(Chunk { text: &text[start..offset], separator: false });
            }
            chunks.push(Chunk { text: line, separator: true });
            start = offset + line.len();
        }
        offset += line.len();
    }
    if start < text.len() {
        chunks.push(Chunk { text: &text[start..], separator: false });
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn is_blue(v: &Value) -> bool {
        v.get("kind").and_then(Value::as_str) == Some("CiliumPodIPPool") && v.pointer("/metadata/name").and_then(Value::as_str) == Some("blue")
    }

    #[test]
    fn only_the_edited_document_changes() {
        let text = "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n---\nkind: ConfigMap  # untouched\n";
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue", "annotations": {"a": "true"}}});
        let out = splice(text, "t.yaml", &is_blue, &new).unwrap().unwrap();
        assert_eq!(out, "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  annotations:\n    a: \"true\"\n---\nkind: ConfigMap  # untouched\n");
        assert_eq!(parse(&out, "t").unwrap()[1], new);
        assert!(splice("kind: ConfigMap\n", "t", &is_blue, &new).unwrap().is_none());
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
