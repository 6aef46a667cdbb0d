//! Edits of a pool's reserved ranges, applied to the raw object in place so that every field
//! the model does not know survives (docs/design/cilium.md#dialects). Pure: no IO.

use super::ip::{Addr, Family};
use super::pool::{Dialect, ReservedRange};
use serde_json::{Map, Value, json};
use thiserror::Error;

/// What to change in the reservations of one CIDR of one family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeEdit {
    pub family: Family,
    /// The CIDR exactly as spelled in `spec.<family>.cidrs` (upstream `pool[]` entries are keyed by it).
    pub cidr: String,
    /// Existing ranges to take out, matched by their exact text.
    pub remove: Vec<ReservedRange>,
    /// The range to add.
    pub add: Option<ReservedRange>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum EditError {
    #[error("cilium.io/v2alpha1 pools cannot hold reserved ranges; reservations need cilium.io/v2")]
    V2alpha1,
    #[error("spec.{0}.cidrs has no entry {1:?}")]
    NoSuchCidr(Family, String),
    #[error(
        "the CFP dialect holds one reservedRange per CIDR and {cidr} already reserves {existing}; remove it first (--remove {existing})"
    )]
    CfpSecondRange { cidr: String, existing: String },
    #[error("spec.{0} is not an object")]
    Malformed(Family),
}

/// Applies `edit` to a CiliumPodIPPool object written in `dialect`.
pub fn apply(raw: &mut Value, dialect: Dialect, edit: &RangeEdit) -> Result<(), EditError> {
    let fam = raw
        .pointer_mut(&format!("/spec/{}", edit.family.name()))
        .and_then(Value::as_object_mut)
        .ok_or(EditError::Malformed(edit.family))?;
    match dialect {
        Dialect::V2alpha1 => Err(EditError::V2alpha1),
        Dialect::UpstreamV2 => apply_upstream(fam, edit),
        Dialect::CfpV2 => apply_cfp(fam, edit),
    }
}

/// Upstream: `pool: [{cidr, reservedRanges: [{start, end}]}]`, the entry created when absent
/// and dropped again when it holds nothing but its key.
fn apply_upstream(fam: &mut Map<String, Value>, edit: &RangeEdit) -> Result<(), EditError> {
    let order: Vec<String> =
        fam.get("cidrs").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
    if !order.contains(&edit.cidr) {
        return Err(EditError::NoSuchCidr(edit.family, edit.cidr.clone()));
    }
    let end_first = ranges_put_end_first(fam);
    let entries = fam.entry("pool").or_insert_with(|| Value::Array(Vec::new()));
    if !entries.is_array() {
        *entries = Value::Array(Vec::new());
    }
    let entries = entries.as_array_mut().expect("made an array above");
    let index = match entries.iter().position(|e| e.get("cidr").and_then(Value::as_str) == Some(edit.cidr.as_str())) {
        Some(i) => i,
        None => {
            // Where the CIDR stands in `cidrs`, among the entries of the CIDRs listed there.
            let rank = |cidr: Option<&str>| order.iter().position(|c| Some(c.as_str()) == cidr);
            let after = |e: &Value| rank(e.get("cidr").and_then(Value::as_str)).is_some_and(|r| Some(r) > rank(Some(&edit.cidr)));
            let at = entries.iter().position(after).unwrap_or(entries.len());
            entries.insert(at, json!({"cidr": edit.cidr}));
            at
        }
    };
    let entry = entries[index].as_object_mut().ok_or(EditError::Malformed(edit.family))?;
    let ranges = entry.entry("reservedRanges").or_insert_with(|| Value::Array(Vec::new()));
    if !ranges.is_array() {
        *ranges = Value::Array(Vec::new());
    }
    let list = ranges.as_array_mut().expect("made an array above");
    list.retain(|r| !edit.remove.iter().any(|gone| text_of(r, "start") == gone.start && text_of(r, "end") == gone.end));
    if let Some(add) = &edit.add {
        let (start, end) = (("start".to_string(), json!(add.start)), ("end".to_string(), json!(add.end)));
        let keys = if end_first { [end, start] } else { [start, end] };
        list.insert(ordered_at(list, &add.start), Value::Object(keys.into_iter().collect()));
    }
    if list.is_empty() {
        entry.remove("reservedRanges");
    }
    if entry.len() == 1 && entry.contains_key("cidr") {
        entries.remove(index);
    }
    if entries.is_empty() {
        fam.remove("pool");
    }
    Ok(())
}

/// Whether the family's existing ranges spell `end` before `start` (`kubectl get -o yaml` sorts
/// keys), so that a range added to a manifest reads like its neighbours; `start` first otherwise.
fn ranges_put_end_first(fam: &Map<String, Value>) -> bool {
    let ranges = fam.get("pool").and_then(Value::as_array).into_iter().flatten().filter_map(|e| e.get("reservedRanges")?.as_array());
    ranges.flatten().filter_map(Value::as_object).find_map(|r| r.keys().find(|k| *k == "start" || *k == "end")).is_some_and(|k| k == "end")
}

/// CFP: `cidrs: [{cidr, reservedRange: "A-B"}]`. String items (stored before the CRD switched
/// shape) are converted to objects for the whole family, keeping their spelling.
fn apply_cfp(fam: &mut Map<String, Value>, edit: &RangeEdit) -> Result<(), EditError> {
    let cidrs = fam.get_mut("cidrs").and_then(Value::as_array_mut).ok_or(EditError::NoSuchCidr(edit.family, edit.cidr.clone()))?;
    for item in cidrs.iter_mut() {
        if let Value::String(s) = item {
            *item = json!({"cidr": s});
        }
    }
    let entry = cidrs
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .find(|o| o.get("cidr").and_then(Value::as_str) == Some(edit.cidr.as_str()))
        .ok_or(EditError::NoSuchCidr(edit.family, edit.cidr.clone()))?;
    let current = entry.get("reservedRange").and_then(Value::as_str).filter(|r| !r.trim().is_empty()).map(ReservedRange::from_dash);
    let remaining = current.filter(|c| !edit.remove.contains(c));
    match (&edit.add, remaining) {
        (Some(_), Some(existing)) => {
            return Err(EditError::CfpSecondRange { cidr: edit.cidr.clone(), existing: existing.to_dash() });
        }
        (Some(add), None) => {
            entry.insert("reservedRange".into(), Value::String(add.to_dash()));
        }
        (None, None) => {
            entry.remove("reservedRange");
        }
        (None, Some(_)) => {}
    }
    Ok(())
}

/// Where a range starting at `start` goes in `list` to keep it in address order: before the first
/// range that starts after it (ranges that do not parse are passed over, never moved).
fn ordered_at(list: &[Value], start: &str) -> usize {
    let key = |text: &str| Addr::parse(text).map(|a| (a.family, a.value));
    let Some(new) = key(start) else { return list.len() };
    list.iter().position(|r| key(text_of(r, "start")).is_some_and(|old| old > new)).unwrap_or(list.len())
}

fn text_of<'a>(range: &'a Value, key: &str) -> &'a str {
    range.get(key).and_then(Value::as_str).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: &str, end: &str) -> ReservedRange {
        ReservedRange { start: start.into(), end: end.into() }
    }

    fn add(cidr: &str, r: ReservedRange) -> RangeEdit {
        RangeEdit { family: Family::Ipv4, cidr: cidr.into(), remove: vec![], add: Some(r) }
    }

    #[test]
    fn upstream_creates_the_entry_keyed_by_the_exact_cidr_string_and_keeps_everything_else() {
        let mut pool = json!({"apiVersion": "cilium.io/v2", "metadata": {"name": "blue", "annotations": {"x": "y"}},
            "spec": {"ipv4": {"cidrs": ["10.40.0.5/16", "10.41.0.0/16"], "maskSize": 24, "future": 1},
                     "namespaceSelector": {"matchLabels": {"team": "blue"}}}});
        apply(&mut pool, Dialect::UpstreamV2, &add("10.40.0.5/16", range("10.40.255.240", "10.40.255.254"))).unwrap();
        apply(&mut pool, Dialect::UpstreamV2, &add("10.41.0.0/16", range("10.41.0.0", "10.41.255.255"))).unwrap();
        assert_eq!(
            pool,
            json!({"apiVersion": "cilium.io/v2", "metadata": {"name": "blue", "annotations": {"x": "y"}},
            "spec": {"ipv4": {"cidrs": ["10.40.0.5/16", "10.41.0.0/16"], "maskSize": 24, "future": 1,
                "pool": [{"cidr": "10.40.0.5/16", "reservedRanges": [{"start": "10.40.255.240", "end": "10.40.255.254"}]},
                         {"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.255.255"}]}]},
                     "namespaceSelector": {"matchLabels": {"team": "blue"}}}})
        );
        // Removing the last range drops the entry, then the list.
        let remove = |cidr: &str, r| RangeEdit { family: Family::Ipv4, cidr: cidr.into(), remove: vec![r], add: None };
        apply(&mut pool, Dialect::UpstreamV2, &remove("10.41.0.0/16", range("10.41.0.0", "10.41.255.255"))).unwrap();
        assert_eq!(pool.pointer("/spec/ipv4/pool").unwrap().as_array().unwrap().len(), 1);
        apply(&mut pool, Dialect::UpstreamV2, &remove("10.40.0.5/16", range("10.40.255.240", "10.40.255.254"))).unwrap();
        assert!(pool.pointer("/spec/ipv4/pool").is_none());
        assert_eq!(
            apply(&mut pool, Dialect::UpstreamV2, &add("10.40.0.0/16", range("10.40.0.1", "10.40.0.1"))),
            Err(EditError::NoSuchCidr(Family::Ipv4, "10.40.0.0/16".into())),
            "keys are exact strings, never re-spelled"
        );
    }

    #[test]
    fn a_new_range_spells_its_keys_in_the_order_its_neighbours_do() {
        let keys = |pool: &Value, at: &str| -> Vec<String> { pool.pointer(at).unwrap().as_object().unwrap().keys().cloned().collect() };
        // `kubectl get -o yaml` sorts keys (end before start), in this CIDR's entry or another's.
        for (cidr, at) in [("10.40.0.0/16", "/spec/ipv4/pool/0/reservedRanges/1"), ("10.41.0.0/16", "/spec/ipv4/pool/1/reservedRanges/0")] {
            let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24,
                "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"end": "10.40.0.1", "start": "10.40.0.1"}]}]}}});
            apply(&mut pool, Dialect::UpstreamV2, &add(cidr, range("10.4x.9.0", "10.4x.9.255"))).unwrap();
            assert_eq!(keys(&pool, at), ["end", "start"], "{cidr}");
        }
        // With no neighbour, the order the CRD documents.
        let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}}});
        apply(&mut pool, Dialect::UpstreamV2, &add("10.40.0.0/16", range("10.40.0.1", "10.40.0.1"))).unwrap();
        assert_eq!(keys(&pool, "/spec/ipv4/pool/0/reservedRanges/0"), ["start", "end"]);
    }

    #[test]
    fn upstream_keeps_other_entry_fields_and_ranges() {
        let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24,
            "pool": [{"cidr": "10.40.0.0/16", "knob": true, "reservedRanges": [{"start": "10.40.0.1", "end": "10.40.0.1"}]}]}}});
        apply(&mut pool, Dialect::UpstreamV2, &add("10.40.0.0/16", range("10.40.9.0", "10.40.9.255"))).unwrap();
        let edit = RangeEdit {
            family: Family::Ipv4,
            cidr: "10.40.0.0/16".into(),
            remove: vec![range("10.40.0.1", "10.40.0.1"), range("10.40.9.0", "10.40.9.255")],
            add: None,
        };
        apply(&mut pool, Dialect::UpstreamV2, &edit).unwrap();
        assert_eq!(pool.pointer("/spec/ipv4/pool").unwrap(), &json!([{"cidr": "10.40.0.0/16", "knob": true}]));
    }

    #[test]
    fn a_new_range_and_a_new_entry_go_in_address_order() {
        // Issue 42: they were appended.
        let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16", "10.42.0.0/16"], "maskSize": 24,
            "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.0.1", "end": "10.40.0.1"}, {"start": "x", "end": "x"},
                {"start": "10.40.255.254", "end": "10.40.255.254"}]}, {"cidr": "10.42.0.0/16", "reservedRanges": [{"start": "10.42.0.1", "end": "10.42.0.1"}]}]}}});
        apply(&mut pool, Dialect::UpstreamV2, &add("10.40.0.0/16", range("10.40.9.0", "10.40.9.255"))).unwrap();
        apply(&mut pool, Dialect::UpstreamV2, &add("10.41.0.0/16", range("10.41.0.5", "10.41.0.5"))).unwrap();
        let starts = |at: &str| {
            pool.pointer(at).unwrap().as_array().unwrap().iter().map(|r| r["start"].as_str().unwrap().to_string()).collect::<Vec<_>>()
        };
        assert_eq!(starts("/spec/ipv4/pool/0/reservedRanges"), ["10.40.0.1", "x", "10.40.9.0", "10.40.255.254"]);
        let cidrs: Vec<&str> =
            pool.pointer("/spec/ipv4/pool").unwrap().as_array().unwrap().iter().map(|e| e["cidr"].as_str().unwrap()).collect();
        assert_eq!(cidrs, ["10.40.0.0/16", "10.41.0.0/16", "10.42.0.0/16"]);
    }

    #[test]
    fn cfp_converts_string_cidrs_and_allows_one_range_per_cidr() {
        let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.20.0.0/16", {"cidr": "10.30.0.0/16", "extra": 1}], "maskSize": 24}}});
        apply(&mut pool, Dialect::CfpV2, &add("10.20.0.0/16", range("10.20.0.0", "10.20.0.99"))).unwrap();
        assert_eq!(
            pool,
            json!({"spec": {"ipv4": {"cidrs": [{"cidr": "10.20.0.0/16", "reservedRange": "10.20.0.0-10.20.0.99"}, {"cidr": "10.30.0.0/16", "extra": 1}], "maskSize": 24}}})
        );
        let second = apply(&mut pool, Dialect::CfpV2, &add("10.20.0.0/16", range("10.20.1.0", "10.20.1.0")));
        assert_eq!(second, Err(EditError::CfpSecondRange { cidr: "10.20.0.0/16".into(), existing: "10.20.0.0-10.20.0.99".into() }));
        // Replacing (drain) is allowed: the old range is removed in the same edit.
        let replace = RangeEdit {
            family: Family::Ipv4,
            cidr: "10.20.0.0/16".into(),
            remove: vec![range("10.20.0.0", "10.20.0.99")],
            add: Some(range("10.20.0.0", "10.20.255.255")),
        };
        apply(&mut pool, Dialect::CfpV2, &replace).unwrap();
        assert_eq!(pool.pointer("/spec/ipv4/cidrs/0/reservedRange").unwrap(), "10.20.0.0-10.20.255.255");
        let remove =
            RangeEdit { family: Family::Ipv4, cidr: "10.20.0.0/16".into(), remove: vec![range("10.20.0.0", "10.20.255.255")], add: None };
        apply(&mut pool, Dialect::CfpV2, &remove).unwrap();
        assert_eq!(pool.pointer("/spec/ipv4/cidrs/0").unwrap(), &json!({"cidr": "10.20.0.0/16"}));
    }

    #[test]
    fn v2alpha1_is_refused() {
        let mut pool = json!({"spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        assert_eq!(apply(&mut pool, Dialect::V2alpha1, &add("10.0.0.0/16", range("10.0.0.1", "10.0.0.1"))), Err(EditError::V2alpha1));
    }
}
