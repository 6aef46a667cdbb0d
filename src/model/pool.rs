//! CiliumPodIPPool in all three dialects (docs/design/cilium.md#dialects), decoded into one version-neutral model.
//!
//! Decoding never fails: whatever cannot be understood is kept as an `issue` so that `check`
//! can report it and the figures can ignore it. The original object is kept untouched in
//! `raw`, because writes must preserve every field this model does not know.

use super::ip::{Addr, AddrRange, Family, Prefix, range_text};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

pub const MIGRATED_ANNOTATION: &str = "cilium.io/migrated-to-v2";

/// The most entries a pool family's `cidrs` (or upstream `pool`) list may have: etcd's 1.5 MiB
/// object limit holds at most about 131,000 of the shortest CIDRs, so no stored pool has more. A
/// longer list makes the family an issue (`invalid-pool`), not analysed (docs/reliability.md).
pub const MAX_POOL_CIDRS: usize = 131_072;
pub const POOL_KIND: &str = "CiliumPodIPPool";

/// Whether `obj` is a CiliumPodIPPool: the one reading of "which documents are pools" that
/// snapshots, duplicate detection, `reserve-range` and `migrate` share. An object without an
/// apiVersion counts (items of a typed list may omit it); a kind of that name in another group
/// does not.
pub fn is_pool_object(obj: &Value) -> bool {
    is_pool_of_kind(obj.get("kind").and_then(Value::as_str), obj)
}

/// The pools of a document: itself, or the items of a `List` / `CiliumPodIPPoolList` (whose
/// items may omit their kind, which the typed list implies).
pub fn pool_objects(doc: &Value) -> Vec<&Value> {
    if is_pool_object(doc) {
        return vec![doc];
    }
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let Some(items) = doc.get("items").and_then(Value::as_array).filter(|_| kind.ends_with("List")) else { return Vec::new() };
    let implied = (kind.strip_suffix("List") == Some(POOL_KIND)).then_some(POOL_KIND);
    items.iter().filter(|item| is_pool_of_kind(item.get("kind").and_then(Value::as_str).or(implied), item)).collect()
}

fn is_pool_of_kind(kind: Option<&str>, obj: &Value) -> bool {
    kind == Some(POOL_KIND) && obj.get("apiVersion").and_then(Value::as_str).is_none_or(|v| v.starts_with("cilium.io/"))
}

/// How a pool object (or a cluster's v2 API) is shaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Dialect {
    #[serde(rename = "v2alpha1")]
    V2alpha1,
    #[serde(rename = "upstream-v2")]
    UpstreamV2,
    #[serde(rename = "cfp-v2")]
    CfpV2,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::V2alpha1 => "v2alpha1",
            Dialect::UpstreamV2 => "upstream-v2",
            Dialect::CfpV2 => "cfp-v2",
        }
    }
}

/// A reserved range exactly as written (`{start, end}` in JSON); [`ReservedRange::within`]
/// says whether it is valid in its CIDR.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReservedRange {
    pub start: String,
    pub end: String,
}

impl ReservedRange {
    /// A range of addresses as it is written into a pool.
    pub fn of(range: AddrRange) -> ReservedRange {
        ReservedRange { start: range.start.to_string(), end: range.end.to_string() }
    }

    /// The addresses of a valid reservation in `cidr`: both ends addresses of the CIDR's
    /// family, in order, inside the CIDR. Otherwise why not (the operator ignores it).
    pub fn within(&self, cidr: &Prefix) -> Result<AddrRange, String> {
        let start = Addr::parse(&self.start).ok_or_else(|| format!("start {:?} is not an IP address", self.start))?;
        let end = Addr::parse(&self.end).ok_or_else(|| format!("end {:?} is not an IP address", self.end))?;
        if start.family != cidr.family || end.family != cidr.family {
            return Err(format!("not an {} range", cidr.family));
        }
        if start.value > end.value {
            return Err("start is after end".to_string());
        }
        let range = AddrRange { start, end };
        if !range.inside(cidr) {
            return Err("not inside the CIDR".to_string());
        }
        Ok(range)
    }

    /// CFP's `"A-B"` spelling (always both ends).
    pub fn to_dash(&self) -> String {
        format!("{}-{}", self.start, self.end)
    }

    /// Parses CFP's `"A-B"` form (a single address is accepted as `A-A`).
    pub fn from_dash(text: &str) -> ReservedRange {
        match text.split_once('-') {
            Some((start, end)) => ReservedRange { start: start.trim().into(), end: end.trim().into() },
            None => ReservedRange { start: text.trim().into(), end: text.trim().into() },
        }
    }

    /// Both ends as addresses, if they parse.
    pub fn addrs(&self) -> Option<(Addr, Addr)> {
        Some((Addr::parse(&self.start)?, Addr::parse(&self.end)?))
    }
}

/// `A-B`, or `A` for a single address, as written.
impl std::fmt::Display for ReservedRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&range_text(&self.start, &self.end))
    }
}

#[derive(Clone, Debug)]
pub struct PoolCidr {
    /// The user's spelling, written back verbatim.
    pub original: String,
    /// The masked prefix, `None` when the string is not a CIDR.
    pub prefix: Option<Prefix>,
    pub reserved: Vec<ReservedRange>,
}

#[derive(Clone, Debug)]
pub struct PoolFamily {
    pub family: Family,
    /// `maskSize` when present and a non-negative integer.
    pub mask_size: Option<u8>,
    pub cidrs: Vec<PoolCidr>,
    /// Upstream `pool[]` entries whose `cidr` is not string-equal to an entry of `cidrs`.
    pub unmatched_pool_entries: Vec<(String, Vec<ReservedRange>)>,
}

#[derive(Clone, Debug)]
pub struct Pool {
    pub name: String,
    pub api_version: String,
    pub dialect: Dialect,
    pub families: Vec<PoolFamily>,
    pub allow_first_ip: bool,
    pub allow_last_ip: bool,
    pub annotations: BTreeMap<String, String>,
    pub pod_selector: Option<Value>,
    pub namespace_selector: Option<Value>,
    /// Things in the object that could not be understood (become `invalid-pool` problems).
    pub issues: Vec<String>,
    pub raw: Value,
}

impl Pool {
    pub fn family(&self, family: Family) -> Option<&PoolFamily> {
        self.families.iter().find(|f| f.family == family)
    }

    pub fn is_migrated(&self) -> bool {
        self.annotations.get(MIGRATED_ANNOTATION).map(String::as_str) == Some("true")
    }

    /// Decodes a CiliumPodIPPool of any dialect. `v2_shape` is what the cluster's CRD says v2
    /// looks like, used for v2 objects whose `cidrs` are plain strings (either dialect's
    /// objects can look like that: upstream always, CFP when stored before the switch).
    pub fn decode(obj: &Value, v2_shape: Option<Dialect>) -> Pool {
        let mut issues = Vec::new();
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string();
        if name.is_empty() {
            issues.push("metadata.name is missing".to_string());
        }
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("").to_string();
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        if !spec.is_object() {
            issues.push("spec is missing or not an object".to_string());
        }
        let mut families = Vec::new();
        let mut object_cidrs = false;
        for family in Family::ALL {
            let Some(fam) = spec.get(family.name()).filter(|v| !v.is_null()) else { continue };
            let (decoded, used_objects) = decode_family(family, fam, &mut issues);
            object_cidrs |= used_objects;
            families.push(decoded);
        }
        if families.is_empty() && spec.is_object() {
            issues.push("spec has neither ipv4 nor ipv6".to_string());
        }
        let dialect = if api_version.ends_with("/v2alpha1") {
            Dialect::V2alpha1
        } else if object_cidrs || v2_shape == Some(Dialect::CfpV2) {
            Dialect::CfpV2
        } else {
            Dialect::UpstreamV2
        };
        let annotations = obj
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
            .unwrap_or_default();
        Pool {
            name,
            api_version,
            dialect,
            families,
            allow_first_ip: spec.get("allowFirstIP").and_then(Value::as_bool).unwrap_or(false),
            allow_last_ip: spec.get("allowLastIP").and_then(Value::as_bool).unwrap_or(false),
            annotations,
            pod_selector: spec.get("podSelector").cloned(),
            namespace_selector: spec.get("namespaceSelector").cloned(),
            issues,
            raw: obj.clone(),
        }
    }
}

/// Decodes `spec.ipv4` / `spec.ipv6`; returns whether any `cidrs` item was object-shaped (CFP).
fn decode_family(family: Family, fam: &Value, issues: &mut Vec<String>) -> (PoolFamily, bool) {
    let mask_size = decode_mask_size(family, fam, issues);
    let (mut cidrs, object_cidrs) = decode_cidrs(family, fam, issues);
    let unmatched_pool_entries = decode_pool_entries(family, fam, &mut cidrs, issues);
    let decoded = PoolFamily { family, mask_size, cidrs, unmatched_pool_entries };
    (decoded, object_cidrs)
}

/// `maskSize`: between 1 and the address's bits, else an issue.
fn decode_mask_size(family: Family, fam: &Value, issues: &mut Vec<String>) -> Option<u8> {
    let field = family.name();
    match fam.get("maskSize") {
        None => {
            issues.push(format!("spec.{field}.maskSize is missing"));
            None
        }
        Some(v) => match v.as_u64() {
            Some(m) if m >= 1 && m <= family.bits() as u64 => Some(m as u8),
            _ => {
                issues.push(format!("spec.{field}.maskSize {v} is not between 1 and {}", family.bits()));
                None
            }
        },
    }
}

/// `cidrs`: strings, or objects with a `reservedRange` (the upstream form); whether any was an
/// object.
fn decode_cidrs(family: Family, fam: &Value, issues: &mut Vec<String>) -> (Vec<PoolCidr>, bool) {
    let field = family.name();
    let mut object_cidrs = false;
    let mut cidrs = Vec::new();
    match fam.get("cidrs") {
        Some(Value::Array(items)) if items.len() > MAX_POOL_CIDRS => {
            issues.push(format!("spec.{field}.cidrs holds more than {MAX_POOL_CIDRS} CIDRs, more than a stored pool can: not analysed"));
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let (original, reserved) = match item {
                    Value::String(s) => (s.clone(), Vec::new()),
                    Value::Object(o) => {
                        object_cidrs = true;
                        let cidr = o.get("cidr").and_then(Value::as_str).unwrap_or_default().to_string();
                        let reserved = match o.get("reservedRange") {
                            Some(Value::String(r)) if !r.trim().is_empty() => vec![ReservedRange::from_dash(r)],
                            Some(Value::String(_)) | Some(Value::Null) | None => Vec::new(),
                            Some(other) => {
                                issues.push(format!("spec.{field}.cidrs[{i}].reservedRange {other} is not a string"));
                                Vec::new()
                            }
                        };
                        (cidr, reserved)
                    }
                    other => {
                        issues.push(format!("spec.{field}.cidrs[{i}] {other} is neither a string nor an object"));
                        continue;
                    }
                };
                let prefix = Prefix::parse(&original).filter(|p| p.family == family);
                if prefix.is_none() {
                    issues.push(format!("spec.{field}.cidrs[{i}] {original:?} is not an {field} CIDR"));
                }
                cidrs.push(PoolCidr { original, prefix, reserved });
            }
        }
        _ => issues.push(format!("spec.{field}.cidrs is missing or not a list")),
    }
    (cidrs, object_cidrs)
}

/// Upstream `pool[]` entries: their reserved ranges join the `cidrs` entry they name; those that
/// name none are returned.
fn decode_pool_entries(family: Family, fam: &Value, cidrs: &mut [PoolCidr], issues: &mut Vec<String>) -> Vec<(String, Vec<ReservedRange>)> {
    let mut unmatched_pool_entries = Vec::new();
    let entries = fam.get("pool").and_then(Value::as_array);
    if entries.is_some_and(|entries| entries.len() > MAX_POOL_CIDRS) {
        issues.push(format!(
            "spec.{}.pool holds more than {MAX_POOL_CIDRS} entries, more than a stored pool can: not analysed",
            family.name()
        ));
        return unmatched_pool_entries;
    }
    // The first `cidrs` entry of each spelling (inserted last), found by a lookup, not a scan.
    let at: HashMap<String, usize> = cidrs.iter().enumerate().rev().map(|(i, c)| (c.original.clone(), i)).collect();
    if let Some(entries) = entries {
        for entry in entries {
            let cidr = entry.get("cidr").and_then(Value::as_str).unwrap_or_default().to_string();
            let ranges: Vec<ReservedRange> = entry
                .get("reservedRanges")
                .and_then(Value::as_array)
                .map(|rs| {
                    rs.iter()
                        .map(|r| ReservedRange {
                            start: r.get("start").and_then(Value::as_str).unwrap_or_default().to_string(),
                            end: r.get("end").and_then(Value::as_str).unwrap_or_default().to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            match at.get(&cidr) {
                Some(&i) => cidrs[i].reserved.extend(ranges),
                None => unmatched_pool_entries.push((cidr, ranges)),
            }
        }
    }
    unmatched_pool_entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_reading_of_which_documents_are_pools() {
        let pool = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}});
        let foreign = json!({"apiVersion": "example.com/v1", "kind": "CiliumPodIPPool", "metadata": {"name": "b"}});
        let bare = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "c"}});
        assert!(is_pool_object(&pool) && is_pool_object(&bare) && !is_pool_object(&foreign));
        let names = |doc: &Value| -> Vec<String> { pool_objects(doc).iter().map(|p| p["metadata"]["name"].to_string()).collect() };
        assert_eq!(names(&pool), ["\"a\""]);
        let list = json!({"kind": "List", "items": [pool, foreign, {"kind": "ConfigMap"}, {"metadata": {"name": "untyped"}}]});
        assert_eq!(names(&list), ["\"a\""], "a List's items need their own kind");
        let typed = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPoolList", "items": [{"metadata": {"name": "d"}}, bare]});
        assert_eq!(names(&typed), ["\"d\"", "\"c\""], "a typed list implies its items' kind");
        assert!(pool_objects(&json!({"kind": "CiliumNodeList", "items": [{"metadata": {"name": "n"}}]})).is_empty());
    }

    #[test]
    fn decodes_the_three_dialects() {
        let alpha = json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
            "metadata": {"name": "a"}, "spec": {"ipv4": {"cidrs": ["10.0.0.5/16"], "maskSize": 24}}});
        let p = Pool::decode(&alpha, None);
        assert_eq!((p.dialect, p.issues.len()), (Dialect::V2alpha1, 0));
        let c = &p.families[0].cidrs[0];
        assert_eq!((c.original.as_str(), c.prefix.unwrap().to_string()), ("10.0.0.5/16", "10.0.0.0/16".into()));

        let upstream = json!({"apiVersion": "cilium.io/v2", "metadata": {"name": "b"}, "spec": {"ipv4": {
            "cidrs": ["10.40.0.0/16"], "maskSize": 24,
            "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.0.1", "end": "10.40.0.2"}]},
                     {"cidr": "10.99.0.0/16", "reservedRanges": []}]}}});
        let p = Pool::decode(&upstream, None);
        assert_eq!(p.dialect, Dialect::UpstreamV2);
        assert_eq!(p.families[0].cidrs[0].reserved, vec![ReservedRange { start: "10.40.0.1".into(), end: "10.40.0.2".into() }]);
        assert_eq!(p.families[0].unmatched_pool_entries.len(), 1);

        let cfp = json!({"apiVersion": "cilium.io/v2", "metadata": {"name": "c"}, "spec": {
            "ipv6": {"cidrs": [{"cidr": "fd00::/104", "reservedRange": "fd00::1-fd00::9"}, "fd01::/104"], "maskSize": 120},
            "allowFirstIP": true}});
        let p = Pool::decode(&cfp, None);
        assert_eq!(p.dialect, Dialect::CfpV2);
        assert!(p.allow_first_ip);
        assert_eq!(p.families[0].cidrs[0].reserved[0].end, "fd00::9");
        assert_eq!(p.families[0].cidrs.len(), 2);

        // A CFP cluster's pool stored before the switch still has string cidrs.
        let legacy =
            json!({"apiVersion": "cilium.io/v2", "metadata": {"name": "d"}, "spec": {"ipv4": {"cidrs": ["10.1.0.0/16"], "maskSize": 24}}});
        assert_eq!(Pool::decode(&legacy, Some(Dialect::CfpV2)).dialect, Dialect::CfpV2);
    }

    #[test]
    fn collects_issues_instead_of_failing() {
        let bad = json!({"apiVersion": "cilium.io/v2alpha1", "metadata": {"name": "x"},
            "spec": {"ipv4": {"cidrs": ["nope", "fd00::/64", 7], "maskSize": 40}}});
        let p = Pool::decode(&bad, None);
        assert_eq!(p.issues.len(), 4, "{:?}", p.issues);
        assert_eq!(p.families[0].mask_size, None);
        assert_eq!(p.families[0].cidrs.len(), 2);
        assert!(p.families[0].cidrs.iter().all(|c| c.prefix.is_none()));
    }

    #[test]
    fn a_cidr_list_past_the_cap_is_an_issue_not_analysed() {
        let cidrs: Vec<String> = (0..=MAX_POOL_CIDRS as u32).map(|i| format!("10.{}.{}.0/24", i >> 8 & 255, i & 255)).collect();
        let pool = |list: &[String]| {
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "huge"},
            "spec": {"ipv4": {"cidrs": list, "maskSize": 24, "pool": [{"cidr": "10.0.1.0/24", "reservedRanges": [{"start": "10.0.1.1", "end": "10.0.1.2"}]}]}}})
        };
        let at_cap = Pool::decode(&pool(&cidrs[..MAX_POOL_CIDRS]), None);
        assert_eq!(at_cap.families[0].cidrs.len(), MAX_POOL_CIDRS, "the cap itself is analysed");
        assert_eq!(at_cap.families[0].cidrs[1].reserved.len(), 1, "a pool entry joins its CIDR");
        let over = Pool::decode(&pool(&cidrs), None);
        assert!(over.families[0].cidrs.is_empty());
        assert!(over.issues.iter().any(|i| i.contains("spec.ipv4.cidrs holds more than 131072 CIDRs")), "{:?}", over.issues);
    }
}
