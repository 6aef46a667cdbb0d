//! Converting one CiliumPodIPPool object to v2 (docs/design/cilium.md#migration). Works on the untyped object so that
//! every field the plugin does not model — selectors, future knobs, labels, annotations — is
//! carried over untouched.

use crate::model::pool::MIGRATED_ANNOTATION;
use crate::model::pool::ReservedRange;
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
    /// The shape changes between the v2 dialects: string `cidrs` become `{cidr}` objects (CFP),
    /// or object `cidrs` become strings with their reservations in `pool[]` (upstream).
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
    let reshaped = match target {
        Dialect::CfpV2 => reshape_cidrs(&mut object)?,
        Dialect::UpstreamV2 => to_upstream(&mut object)?,
        Dialect::V2alpha1 => false,
    };
    if reshaped {
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

/// CFP: every string in `spec.<family>.cidrs` becomes `{cidr: <the original string>}`; object
/// items (with any `reservedRange`) stay as they are. An upstream `pool[]` reservation moves into
/// its CIDR's `reservedRange` (`start-end`); the CFP shape holds one range per CIDR, so more is
/// refused rather than lost. Returns whether anything changed.
fn reshape_cidrs(object: &mut Value) -> Result<bool, String> {
    let mut changed = false;
    for family in Family::ALL {
        let field = family.name();
        let Some(fam) = object.pointer_mut(&format!("/spec/{field}")).and_then(Value::as_object_mut) else { continue };
        let ranges = match fam.remove("pool") {
            Some(pool) => {
                changed = true;
                cfp_ranges(&pool, field)?
            }
            None => Map::new(),
        };
        let mut unplaced = ranges.clone();
        for item in fam.get_mut("cidrs").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Value::String(cidr) = item {
                let mut entry = Map::new();
                entry.insert("cidr".into(), Value::String(std::mem::take(cidr)));
                *item = Value::Object(entry);
                changed = true;
            }
            let cidr = item.get("cidr").and_then(Value::as_str).unwrap_or_default().to_string();
            if let Some(range) = unplaced.remove(&cidr) {
                if item.get("reservedRange").is_some_and(|r| r.as_str() != Some("") && *r != range) {
                    return Err(format!("spec.{field}.cidrs {cidr} has a reservedRange and a pool[] reservation; keep one"));
                }
                item["reservedRange"] = range;
            }
        }
        if let Some(cidr) = unplaced.keys().next() {
            return Err(format!("spec.{field}.pool reserves a range in {cidr}, which is not in spec.{field}.cidrs"));
        }
    }
    Ok(changed)
}

/// An upstream `pool[]` as CFP `reservedRange` strings by CIDR; more than one range in a CIDR
/// has no CFP equivalent.
fn cfp_ranges(pool: &Value, field: &str) -> Result<Map<String, Value>, String> {
    let mut ranges = Map::new();
    for (i, entry) in pool.as_array().into_iter().flatten().enumerate() {
        let cidr = entry.get("cidr").and_then(Value::as_str).unwrap_or_default();
        match entry.get("reservedRanges").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            [] => {}
            [range] => {
                let end = |k: &str| range.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                ranges.insert(cidr.to_string(), Value::String(format!("{}-{}", end("start"), end("end"))));
            }
            more => {
                return Err(format!(
                    "spec.{field}.pool[{i}] reserves {} ranges in {cidr}; the CFP shape holds one reservedRange per CIDR — convert with --schema upstream",
                    more.len()
                ));
            }
        }
    }
    Ok(ranges)
}

/// Upstream: every object item of `spec.<family>.cidrs` becomes its `cidr` string and its
/// `reservedRange` (`start-end`, or one address) an entry of `pool[].reservedRanges`. Returns
/// whether anything changed.
fn to_upstream(object: &mut Value) -> Result<bool, String> {
    let mut changed = false;
    for family in Family::ALL {
        let field = family.name();
        let Some(fam) = object.pointer_mut(&format!("/spec/{field}")).and_then(Value::as_object_mut) else { continue };
        let mut reserved = Vec::new();
        for item in fam.get_mut("cidrs").and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(entry) = item.as_object() else { continue };
            let cidr = entry.get("cidr").and_then(Value::as_str).unwrap_or_default().to_string();
            if let Some(range) = entry.get("reservedRange").and_then(Value::as_str).filter(|r| !r.trim().is_empty()) {
                let range = ReservedRange::from_dash(range);
                reserved.push((cidr.clone(), serde_json::json!({"start": range.start, "end": range.end})));
            }
            *item = Value::String(cidr);
            changed = true;
        }
        if reserved.is_empty() {
            continue;
        }
        let pool = fam.entry("pool").or_insert_with(|| Value::Array(Vec::new()));
        let Some(entries) = pool.as_array_mut() else { return Err(format!("spec.{field}.pool is not a list")) };
        for (cidr, range) in reserved {
            match entries.iter_mut().find(|e| e.get("cidr").and_then(Value::as_str) == Some(cidr.as_str())) {
                Some(entry) => match entry.get_mut("reservedRanges").and_then(Value::as_array_mut) {
                    Some(ranges) => ranges.push(range),
                    None => entry["reservedRanges"] = Value::Array(vec![range]),
                },
                None => entries.push(serde_json::json!({"cidr": cidr, "reservedRanges": [range]})),
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

/// Sets one annotation. A new `annotations` map goes where a person puts it: right after `name`
/// and `namespace` (not after `uid` at the end), so a manifest patched in place shows it there.
pub fn set_annotation(object: &mut Value, key: &str, value: &str) {
    let metadata =
        object.as_object_mut().expect("a Kubernetes object is a map").entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    let metadata = metadata.as_object_mut().expect("metadata is a map");
    if !metadata.contains_key("annotations") {
        let after = metadata.keys().rposition(|k| k == "name" || k == "namespace").map_or(metadata.len(), |i| i + 1);
        metadata.shift_insert(after, "annotations".to_string(), Value::Object(Map::new()));
    }
    let annotations = metadata.get_mut("annotations").expect("inserted above");
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
        assert_eq!(to_v2(&upstream, Dialect::UpstreamV2).unwrap().change, Change::Rewrite);
        let mut two = upstream.clone();
        two["spec"]["ipv4"]["pool"][0]["reservedRanges"] =
            json!([{"start": "10.0.0.1", "end": "10.0.0.1"}, {"start": "10.0.0.9", "end": "10.0.0.10"}]);
        assert!(to_v2(&two, Dialect::CfpV2).unwrap_err().contains("spec.ipv4.pool[0] reserves 2 ranges"));
        let mut stray = upstream;
        stray["spec"]["ipv4"]["pool"][0] = json!({"cidr": "10.9.0.0/16", "reservedRanges": [{"start": "10.9.0.1", "end": "10.9.0.1"}]});
        assert!(to_v2(&stray, Dialect::CfpV2).unwrap_err().contains("10.9.0.0/16, which is not in spec.ipv4.cidrs"));
    }

    /// The two v2 dialects carry the same reservations: each converts into the other and back.
    #[test]
    fn converts_between_the_v2_dialects() {
        let cfp = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool",
            "metadata": {"name": "g", "annotations": {MIGRATED_ANNOTATION: "true"}},
            "spec": {"ipv4": {"cidrs": [{"cidr": "10.60.0.0/20", "reservedRange": "10.60.0.0-10.60.0.31"}, {"cidr": "10.61.0.0/20"}],
                              "maskSize": 26},
                     "ipv6": {"cidrs": [{"cidr": "fd00::/112", "reservedRange": "fd00::1"}], "maskSize": 120}}});
        let up = to_v2(&cfp, Dialect::UpstreamV2).unwrap();
        assert_eq!(up.change, Change::Reshape);
        assert_eq!(
            up.object["spec"]["ipv4"],
            json!({"cidrs": ["10.60.0.0/20", "10.61.0.0/20"], "maskSize": 26,
                   "pool": [{"cidr": "10.60.0.0/20", "reservedRanges": [{"start": "10.60.0.0", "end": "10.60.0.31"}]}]})
        );
        assert_eq!(
            up.object["spec"]["ipv6"]["pool"],
            json!([{"cidr": "fd00::/112", "reservedRanges": [{"start": "fd00::1", "end": "fd00::1"}]}])
        );
        assert_eq!(to_v2(&up.object, Dialect::UpstreamV2).unwrap().change, Change::None);
        let back = to_v2(&up.object, Dialect::CfpV2).unwrap();
        assert_eq!(back.change, Change::Reshape);
        assert_eq!(back.object["spec"]["ipv4"], cfp["spec"]["ipv4"]);
        assert_eq!(back.object["spec"]["ipv6"]["cidrs"], json!([{"cidr": "fd00::/112", "reservedRange": "fd00::1-fd00::1"}]));
    }
}
