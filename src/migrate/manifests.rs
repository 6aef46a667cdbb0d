//! Offline conversion of manifests (GitOps repositories): only CiliumPodIPPool documents are
//! re-serialized; every other document of a YAML stream is copied byte for byte, in order.
//! The stream is split on document markers here rather than by a YAML library, because
//! libraries re-serialize (and drop comments of) everything they touch.

use super::convert::{V2ALPHA1_API_VERSION, is_pool, to_v2};
use crate::model::{Dialect, Family};
use serde_json::Value;

/// The result of converting one file's text.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    pub text: String,
    /// Pools that needed conversion (and were converted in `text`).
    pub converted: usize,
}

/// Whether a pool document still needs conversion to the `target` v2 shape.
pub fn needs_conversion(doc: &Value, target: Dialect) -> bool {
    if !is_pool(doc) {
        return false;
    }
    if doc.get("apiVersion").and_then(Value::as_str) == Some(V2ALPHA1_API_VERSION) {
        return true;
    }
    target == Dialect::CfpV2
        && Family::ALL.iter().any(|f| {
            doc.pointer(&format!("/spec/{}/cidrs", f.name())).and_then(Value::as_array).is_some_and(|c| c.iter().any(Value::is_string))
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

/// Whether a line is a document start marker (`---` alone or followed by blank/content).
fn is_document_start(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// The document chunks of a YAML stream, each with its first line number (1-based). Every
/// chunk but the first starts with its `---` line; concatenated they are the input.
fn split_documents(text: &str) -> Vec<(usize, &str)> {
    let mut chunks = Vec::new();
    let (mut start, mut start_line, mut offset) = (0, 1, 0);
    for (index, line) in text.split_inclusive('\n').enumerate() {
        if is_document_start(line) && offset > start {
            chunks.push((start_line, &text[start..offset]));
            (start, start_line) = (offset, index + 1);
        }
        offset += line.len();
    }
    if offset > start || chunks.is_empty() {
        chunks.push((start_line, &text[start..]));
    }
    chunks
}

/// Converts every CiliumPodIPPool in a file's text (YAML stream or JSON) to v2. Errors name the
/// file, line and field; nothing is half-converted because the caller writes only on success.
pub fn convert_text(text: &str, name: &str, target: Dialect) -> Result<Outcome, String> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("{name}:{}: invalid JSON: {e}", e.line()))?;
        return Ok(match convert_document(&doc, target).map_err(|e| format!("{name}: {e}"))? {
            Some((converted, n)) => Outcome { text: serde_json::to_string_pretty(&converted).expect("JSON value serializes") + "\n", converted: n },
            None => Outcome { text: text.to_string(), converted: 0 },
        });
    }
    let mut out = String::with_capacity(text.len());
    let mut converted = 0;
    for (line, chunk) in split_documents(text) {
        let docs: Vec<Value> = serde_saphyr::from_multiple(chunk).map_err(|e| {
            let at = e.location().map_or(line, |l| line + l.line() as usize - 1);
            format!("{name}:{at}: invalid YAML: {}", e.to_string().lines().next().unwrap_or("parse error"))
        })?;
        let docs: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
        let result = match docs.as_slice() {
            [doc] => {
                // Point at the document's first line, not at its `---` marker.
                let first = if is_document_start(chunk) { line + 1 } else { line };
                convert_document(doc, target).map_err(|e| format!("{name}:{first}: {e}"))?
            }
            _ => None,
        };
        match result {
            Some((doc, n)) => {
                converted += n;
                let marker = chunk.lines().next().filter(|l| is_document_start(l)).map(|l| {
                    let rest = l[3..].trim();
                    if rest.is_empty() || rest.starts_with('#') { format!("{}\n", l.trim_end()) } else { "---\n".to_string() }
                });
                out.push_str(marker.as_deref().unwrap_or_default());
                let body = serde_saphyr::to_string(&doc).map_err(|e| format!("{name}:{line}: cannot write YAML: {e}"))?;
                out.push_str(body.strip_prefix("---\n").unwrap_or(&body));
            }
            None => out.push_str(chunk),
        }
    }
    Ok(Outcome { text: out, converted })
}

#[cfg(test)]
mod tests {
    use super::*;

    const STREAM: &str = "# leading comment\napiVersion: v1\nkind: ConfigMap   # odd spacing kept\nmetadata: {name: x}\n---\n\
        apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata:\n  name: a # lost\nspec:\n  ipv4:\n    cidrs: [10.0.0.5/16]\n    maskSize: 24\n  extra: {keep: true}\n\
        --- # second\napiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata: {name: b}\nspec: {ipv4: {cidrs: [10.1.0.0/16], maskSize: 24}}\n";

    #[test]
    fn splits_on_markers_only() {
        let chunks = split_documents(STREAM);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|c| c.1).collect::<String>(), STREAM);
        assert_eq!((chunks[1].0, chunks[2].0), (5, 15));
        assert_eq!(split_documents("a: '---'\n----\n").len(), 1);
        assert_eq!(split_documents(""), vec![(1, "")]);
    }

    #[test]
    fn converts_pools_and_leaves_the_rest_byte_for_byte() {
        let out = convert_text(STREAM, "s.yaml", Dialect::UpstreamV2).unwrap();
        assert_eq!(out.converted, 1);
        let chunks = split_documents(&out.text);
        assert_eq!(chunks[0].1, split_documents(STREAM)[0].1);
        assert_eq!(chunks[2].1, split_documents(STREAM)[2].1);
        let pool: Value = serde_saphyr::from_str(chunks[1].1).unwrap();
        assert_eq!(pool["apiVersion"], "cilium.io/v2");
        assert_eq!(pool["spec"]["ipv4"]["cidrs"][0], "10.0.0.5/16");
        assert_eq!(pool["spec"]["extra"]["keep"], true);
        assert_eq!(pool["metadata"]["annotations"]["cilium.io/migrated-to-v2"], "true");
        assert!(!out.text.contains("# lost"));
        // Idempotent.
        assert_eq!(convert_text(&out.text, "s.yaml", Dialect::UpstreamV2).unwrap(), Outcome { text: out.text.clone(), converted: 0 });
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
