//! Converting one CiliumPodIPPool object to v2 (docs/design/cilium.md#migration). Works on the untyped object so that
//! every field the plugin does not model — selectors, future knobs, labels, annotations — is
//! carried over untouched.

use crate::model::pool::MIGRATED_ANNOTATION;
use crate::model::{Dialect, Family, Pool};
use serde_json::{Map, Value};

pub const V2_API_VERSION: &str = "cilium.io/v2";
pub const V2ALPHA1_API_VERSION: &str = "cilium.io/v2alpha1";

/// What converting an object amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Marked and already in the target shape: nothing to write.
    None,
    /// Same data, re-encoded through v2 (apiVersion and/or the annotation change).
    Rewrite,
    /// The shape changes: string `cidrs` become `{cidr}` objects (CFP).
    Reshape,
}

/// The converted object and what changed.
#[derive(Clone, Debug)]
pub struct Converted {
    pub object: Value,
    pub change: Change,
}

pub fn is_migrated(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations").and_then(|a| a.get(MIGRATED_ANNOTATION)).and_then(Value::as_str) == Some("true")
}

/// Converts a pool to the v2 shape of `target` (upstream or CFP), sets apiVersion v2 and the
/// migration annotation. Refuses objects the apiserver would reject or that cannot be
/// converted without losing data; the message names the field.
pub fn to_v2(obj: &Value, target: Dialect) -> Result<Converted, String> {
    let decoded = Pool::decode(obj, Some(target));
    if let Some(issue) = decoded.issues.first() {
        return Err(format!("invalid object: {issue}"));
    }
    let mut object = obj.clone();
    let mut change = Change::None;
    if object.get("apiVersion").and_then(Value::as_str) != Some(V2_API_VERSION) {
        object["apiVersion"] = Value::from(V2_API_VERSION);
        change = Change::Rewrite;
    }
    if target == Dialect::CfpV2 && reshape_cidrs(&mut object)? {
        change = Change::Reshape;
    }
    if !is_migrated(&object) {
        set_annotation(&mut object, MIGRATED_ANNOTATION, "true");
        if change == Change::None {
            change = Change::Rewrite;
        }
    }
    Ok(Converted { object, change })
}

/// CFP: every string in `spec.<family>.cidrs` becomes `{cidr: <the original string>}`;
/// object items (with any `reservedRange`) stay as they are. Returns whether anything changed.
fn reshape_cidrs(object: &mut Value) -> Result<bool, String> {
    let mut changed = false;
    for family in Family::ALL {
        let Some(fam) = object.pointer_mut(&format!("/spec/{}", family.name())).and_then(Value::as_object_mut) else { continue };
        if fam.contains_key("pool") {
            return Err(format!(
                "spec.{}.pool is upstream-v2 (reservedRanges); the CFP shape has no equivalent — convert with --schema upstream",
                family.name()
            ));
        }
        for item in fam.get_mut("cidrs").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Value::String(cidr) = item {
                let mut entry = Map::new();
                entry.insert("cidr".into(), Value::String(std::mem::take(cidr)));
                *item = Value::Object(entry);
                changed = true;
            }
        }
    }
    Ok(changed)
}

/// The spec as a reader of v2alpha1 would see it: `pool` pruned, object cidrs back to strings.
/// Two views that agree after this differ only in what the conversion itself explains.
pub fn v2alpha1_projection(obj: &Value) -> Value {
    let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    for family in Family::ALL {
        let Some(fam) = spec.get_mut(family.name()).and_then(Value::as_object_mut) else { continue };
        fam.remove("pool");
        for item in fam.get_mut("cidrs").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(cidr) = item.get("cidr").cloned() {
                *item = cidr;
            }
        }
    }
    spec
}

pub fn set_annotation(object: &mut Value, key: &str, value: &str) {
    let metadata =
        object.as_object_mut().expect("a Kubernetes object is a map").entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let annotations =
        metadata.as_object_mut().expect("metadata is a map").entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    annotations[key] = Value::from(value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn alpha() -> Value {
        json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
            "metadata": {"name": "a", "labels": {"team": "x"}, "annotations": {"note": "keep"}, "resourceVersion": "12"},
            "spec": {"ipv4": {"cidrs": ["10.0.0.5/16", "10.1.0.0/16"], "maskSize": 24, "futureKnob": 3},
                     "ipv6": {"cidrs": ["fd00::/104"], "maskSize": 120},
                     "podSelector": {"matchLabels": {"app": "db"}}, "allowFirstIP": true, "somethingNew": {"x": 1}}})
    }

    #[test]
    fn upstream_changes_only_api_version_and_annotation() {
        let out = to_v2(&alpha(), Dialect::UpstreamV2).unwrap();
        assert_eq!(out.change, Change::Rewrite);
        let mut expected = alpha();
        expected["apiVersion"] = json!("cilium.io/v2");
        expected["metadata"]["annotations"][MIGRATED_ANNOTATION] = json!("true");
        assert_eq!(out.object, expected);
        // Converting again changes nothing.
        assert_eq!(to_v2(&out.object, Dialect::UpstreamV2).unwrap().change, Change::None);
    }

    #[test]
    fn cfp_keeps_original_strings_unknown_fields_and_reserved_ranges() {
        let mut obj = alpha();
        obj["spec"]["ipv4"]["cidrs"][1] = json!({"cidr": "10.1.0.0/16", "reservedRange": "10.1.0.0-10.1.0.9"});
        let out = to_v2(&obj, Dialect::CfpV2).unwrap();
        assert_eq!(out.change, Change::Reshape);
        assert_eq!(
            out.object["spec"]["ipv4"]["cidrs"],
            json!([{"cidr": "10.0.0.5/16"}, {"cidr": "10.1.0.0/16", "reservedRange": "10.1.0.0-10.1.0.9"}])
        );
        assert_eq!(out.object["spec"]["ipv6"]["cidrs"], json!([{"cidr": "fd00::/104"}]));
        assert_eq!(out.object["spec"]["ipv4"]["futureKnob"], json!(3));
        assert_eq!(out.object["spec"]["somethingNew"], alpha()["spec"]["somethingNew"]);
        assert_eq!(out.object["metadata"]["labels"], json!({"team": "x"}));
        assert_eq!(out.object["metadata"]["annotations"]["note"], json!("keep"));
        assert_eq!(to_v2(&out.object, Dialect::CfpV2).unwrap().change, Change::None);
        assert_eq!(v2alpha1_projection(&out.object), v2alpha1_projection(&obj));
    }

    #[test]
    fn refuses_what_it_cannot_convert() {
        let mut obj = alpha();
        obj["spec"]["ipv4"]["cidrs"][0] = json!("not-a-cidr");
        assert!(to_v2(&obj, Dialect::UpstreamV2).unwrap_err().contains("not-a-cidr"));
        let upstream = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "b"},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24, "pool": [{"cidr": "10.0.0.0/16", "reservedRanges": []}]}}});
        assert!(to_v2(&upstream, Dialect::CfpV2).unwrap_err().contains("spec.ipv4.pool"));
        assert_eq!(to_v2(&upstream, Dialect::UpstreamV2).unwrap().change, Change::Rewrite);
    }
}
