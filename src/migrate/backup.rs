//! The backup written before the first write: every pool as read through v2alpha1 and through
//! v2, as a YAML stream `kubectl apply -f` accepts once one view is cut out (docs/migration.md).

use crate::manifest;
use serde_json::Value;

/// Server-set fields that would make `kubectl apply`/`replace` of the backup fail or conflict.
const SERVER_FIELDS: [&str; 6] = ["resourceVersion", "uid", "managedFields", "creationTimestamp", "generation", "selfLink"];

pub fn begin_marker(api_version: &str) -> String {
    format!("# BEGIN view {api_version}")
}

pub fn end_marker(api_version: &str) -> String {
    format!("# END view {api_version}")
}

/// A pool ready to be applied again: server-set metadata removed, everything else kept.
pub fn restorable(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(metadata) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in SERVER_FIELDS {
            metadata.remove(field);
        }
    }
    obj
}

/// The backup text: a header, then one marked section per view (`(apiVersion, objects)`).
pub fn render(header: &str, views: &[(&str, &[Value])]) -> String {
    let mut out: String = header.lines().map(|l| format!("# {l}\n")).collect();
    for (api_version, objects) in views {
        out.push_str(&begin_marker(api_version));
        out.push_str(&format!(" ({} objects)\n", objects.len()));
        for obj in *objects {
            out.push_str("---\n");
            out.push_str(&manifest::to_yaml(&restorable(obj)));
        }
        out.push_str(&end_marker(api_version));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_server_fields_and_marks_views() {
        let obj = json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
            "metadata": {"name": "a", "resourceVersion": "9", "uid": "u", "managedFields": [], "creationTimestamp": "t", "labels": {"x": "1"}},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        let text = render("backup\nsecond line", &[("cilium.io/v2alpha1", std::slice::from_ref(&obj)), ("cilium.io/v2", &[])]);
        assert!(text.starts_with("# backup\n# second line\n# BEGIN view cilium.io/v2alpha1 (1 objects)\n---\n"), "{text}");
        assert!(text.ends_with("# BEGIN view cilium.io/v2 (0 objects)\n# END view cilium.io/v2\n"), "{text}");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        let docs: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0]["metadata"], json!({"name": "a", "labels": {"x": "1"}}));
        assert_eq!(docs[0]["spec"], obj["spec"]);
    }
}
