//! `cilium sysdump` file naming. The sysdump writes typed lists as `<kind>-<ts>.yaml`
//! (`<ts>` = `20060102-150405`), and objects read through client-go's typed clients carry no
//! `apiVersion`/`kind` (the list neither, or its items not). The file name says what they are.
//! Pools are listed through `cilium.io/v2alpha1` (docs/inputs.md).

use serde_json::Value;
use std::path::Path;

/// File name prefix, then the apiVersion and kind of the objects such a file holds.
const SYSDUMP_KINDS: [(&str, &str, &str); 7] = [
    ("ciliumpodippools-", "cilium.io/v2alpha1", "CiliumPodIPPool"),
    // The agent DaemonSet and the operator Deployment: their images name the Cilium version.
    ("cilium-daemonset-", "apps/v1", "DaemonSet"),
    ("cilium-operator-deployment-", "apps/v1", "Deployment"),
    ("ciliumnodes-", "cilium.io/v2", "CiliumNode"),
    ("ciliumendpoints-", "cilium.io/v2", "CiliumEndpoint"),
    ("k8s-pods-", "v1", "Pod"),
    ("cilium-configmap-", "v1", "ConfigMap"),
];

/// The apiVersion and kind a sysdump file of this name holds, if it is one of those above.
pub fn kind_for(name: &str) -> Option<(&'static str, &'static str)> {
    let file = Path::new(name.rsplit(':').next().unwrap_or(name)).file_name()?.to_str()?;
    SYSDUMP_KINDS.iter().find_map(|(prefix, api_version, kind)| {
        let rest = file.strip_prefix(prefix)?;
        let stem = rest.strip_suffix(".yaml").or_else(|| rest.strip_suffix(".json"))?;
        is_timestamp(stem).then_some((*api_version, *kind))
    })
}

/// `20060102-150405`.
fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 15 && bytes[8] == b'-' && bytes.iter().enumerate().all(|(i, b)| i == 8 || b.is_ascii_digit())
}

/// Gives untyped documents (and untyped items of lists) of a sysdump file their apiVersion and
/// kind. Documents of other files, and objects that say what they are, are left as they are.
pub fn type_documents(name: &str, documents: Vec<Value>) -> Vec<Value> {
    let Some((api_version, kind)) = kind_for(name) else { return documents };
    documents
        .into_iter()
        .map(|mut document| {
            let untyped = document.get("kind").and_then(Value::as_str).is_none_or(str::is_empty);
            match document.get_mut("items").and_then(Value::as_array_mut) {
                Some(items) if untyped => {
                    for item in items.iter_mut() {
                        fill_type(item, api_version, kind);
                    }
                    document["kind"] = Value::String("List".into());
                    if document.get("apiVersion").and_then(Value::as_str).is_none_or(str::is_empty) {
                        document["apiVersion"] = Value::String("v1".into());
                    }
                }
                Some(items) => {
                    for item in items.iter_mut() {
                        fill_type(item, api_version, kind);
                    }
                }
                None if untyped => fill_type(&mut document, api_version, kind),
                None => {}
            }
            document
        })
        .collect()
}

fn fill_type(object: &mut Value, api_version: &str, kind: &str) {
    let Some(map) = object.as_object_mut() else { return };
    let missing = |v: Option<&Value>| v.and_then(Value::as_str).is_none_or(str::is_empty);
    if missing(map.get("kind")) {
        map.insert("kind".into(), Value::String(kind.into()));
    }
    if missing(map.get("apiVersion")) {
        map.insert("apiVersion".into(), Value::String(api_version.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_and_types() {
        assert_eq!(kind_for("dump/ciliumnodes-20260101-120000.yaml"), Some(("cilium.io/v2", "CiliumNode")));
        assert_eq!(kind_for("x.zip:cilium-sysdump-20260101-120000/k8s-pods-20260101-120000.yaml"), Some(("v1", "Pod")));
        assert_eq!(kind_for("ciliumnodes-2026-01-01.yaml"), None);
        assert_eq!(kind_for("ciliumnodes.yaml"), None);
        assert_eq!(kind_for("cilium-daemonset-20260101-120000.yaml"), Some(("apps/v1", "DaemonSet")));
        assert_eq!(kind_for("d/cilium-operator-deployment-20260101-120000.yaml"), Some(("apps/v1", "Deployment")));
        assert_eq!(kind_for("hubble-flows-cilium-abcde-20260101-120000.json"), None);

        let docs = type_documents(
            "k8s-pods-20260101-120000.yaml",
            vec![
                json!({"metadata": {"resourceVersion": "1"}, "items": [{"metadata": {"name": "p"}}, {"kind": "Pod", "apiVersion": "v1"}]}),
            ],
        );
        assert_eq!(docs[0]["kind"], "List");
        assert_eq!(docs[0]["items"][0]["kind"], "Pod");
        assert_eq!(docs[0]["items"][0]["apiVersion"], "v1");
        let docs =
            type_documents("cilium-configmap-20260101-120000.yaml", vec![json!({"metadata": {"name": "cilium-config"}, "data": {}})]);
        assert_eq!((docs[0]["kind"].as_str(), docs[0]["apiVersion"].as_str()), (Some("ConfigMap"), Some("v1")));
        let untouched = type_documents("pools.yaml", vec![json!({"items": []})]);
        assert!(untouched[0].get("kind").is_none());
    }
}
