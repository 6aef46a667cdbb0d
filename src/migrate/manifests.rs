//! Offline conversion of manifests (GitOps repositories): only CiliumPodIPPool documents are
//! re-serialized; every other document of a YAML stream is copied byte for byte, in order
//! (`crate::manifest` splits and rewrites the stream).

use super::convert::{V2ALPHA1_API_VERSION, to_v2};
use crate::manifest;
use crate::model::pool::is_pool_object;
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
    if !is_pool_object(doc) {
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

/// Converts every CiliumPodIPPool in a file's text (YAML stream or JSON) to v2. Errors name the
/// file, line and field; nothing is half-converted because the caller writes only on success.
pub fn convert_text(text: &str, name: &str, target: Dialect) -> Result<Outcome, String> {
    let mut converted = 0;
    let rewritten = manifest::rewrite(text, name, &mut |doc| {
        Ok(convert_document(doc, target)?.map(|(doc, n)| {
            converted += n;
            doc
        }))
    })
    .map_err(|e| e.to_string())?;
    Ok(Outcome { text: rewritten.text, converted })
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
