//! The migration plan: one state per pool, computed from the CRD and the pools as read through
//! both API versions. Pure: the command reads, this decides.

use super::convert::{Change, to_v2, v2alpha1_projection};
use super::storage::StorageState;
use crate::model::{CrdInfo, Dialect};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Marked as migrated and already in the v2 shape: nothing to write.
    Migrated,
    /// Same data, re-encoded through v2 (upstream, or CFP objects already object-shaped).
    Rewrite,
    /// Shape change: string cidrs become `{cidr}` objects (CFP).
    Convert,
    /// The v2 view differs from the v2alpha1 view beyond what conversion explains; v2 wins.
    Conflict,
    /// Cannot be migrated: v2 not served, missing permission, invalid object.
    Blocked,
}

impl State {
    pub const ALL: [State; 5] = [State::Migrated, State::Rewrite, State::Convert, State::Conflict, State::Blocked];

    pub fn name(self) -> &'static str {
        match self {
            State::Migrated => "migrated",
            State::Rewrite => "rewrite",
            State::Convert => "convert",
            State::Conflict => "conflict",
            State::Blocked => "blocked",
        }
    }

    /// The pool is written by `migrate`.
    pub fn writes(self) -> bool {
        matches!(self, State::Rewrite | State::Convert | State::Conflict)
    }
}

/// What makes a `migrated` pool migrated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MigratedBy {
    /// It carries `cilium.io/migrated-to-v2` and has the v2 shape.
    Annotation,
    /// Not annotated, but `status.storedVersions` is `[v2]`: it is stored as v2 (Cilium's operator
    /// migrated storage itself) and already has the v2 shape.
    Storage,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolPlan {
    pub name: String,
    pub state: State,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrated_by: Option<MigratedBy>,
    /// Why: what changes, what conflicts, what blocks.
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The v2 shape writes follow.
    pub dialect: Dialect,
    /// Where the objects are stored, from the CRD (`storage`, `status.storedVersions`).
    pub storage: StorageState,
    pub pools: Vec<PoolPlan>,
    /// A reason that blocks the whole cluster (v2 not served, v2alpha1 still the storage version).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
}

impl Plan {
    pub fn count(&self, state: State) -> usize {
        self.pools.iter().filter(|p| p.state == state).count()
    }

    pub fn writes(&self) -> usize {
        self.pools.iter().filter(|p| p.state.writes()).count()
    }

    pub fn migrated_by(&self, by: MigratedBy) -> usize {
        self.pools.iter().filter(|p| p.migrated_by == Some(by)).count()
    }

    /// Counts per state, every state present (zeros included), in a stable order.
    pub fn counts(&self) -> BTreeMap<&'static str, usize> {
        State::ALL.iter().map(|s| (s.name(), self.count(*s))).collect()
    }

    /// Marks every pool that would be written as blocked (e.g. a missing permission).
    pub fn block_writes(&mut self, reason: &str) {
        for pool in self.pools.iter_mut().filter(|p| p.state.writes()) {
            pool.state = State::Blocked;
            pool.migrated_by = None;
            pool.detail = reason.to_string();
        }
    }
}

pub const V2_NOT_SERVED: &str = "cilium.io/v2 is not served by this cluster: upgrade Cilium to a release whose CiliumPodIPPool CRD serves cilium.io/v2 (cilium/cilium#44383)";
pub const V2_NOT_STORAGE: &str = "cilium.io/v2 is served but v2alpha1 is still the storage version: upgrade the CiliumPodIPPool CRD so that v2 is the storage version first";

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default()
}

/// Plans every pool. `via_alpha` and `via_v2` are the lists as read through each version
/// (`via_alpha` is empty when v2alpha1 is not served).
pub fn plan(crd: &CrdInfo, via_alpha: &[Value], via_v2: &[Value]) -> Plan {
    let dialect = crd.cluster_dialect();
    let storage = StorageState::of(crd);
    let blocked = if !crd.serves("v2") {
        Some(V2_NOT_SERVED)
    } else if crd.storage_version() != Some("v2") {
        Some(V2_NOT_STORAGE)
    } else {
        None
    };
    let alpha: BTreeMap<&str, &Value> = via_alpha.iter().map(|o| (name_of(o), o)).collect();
    let v2: BTreeMap<&str, &Value> = via_v2.iter().map(|o| (name_of(o), o)).collect();
    let names: std::collections::BTreeSet<&str> = alpha.keys().chain(v2.keys()).copied().collect();
    let pools = names
        .into_iter()
        .map(|name| {
            let resource_version = v2
                .get(name)
                .or(alpha.get(name))
                .and_then(|o| o.pointer("/metadata/resourceVersion"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let (state, detail, migrated_by) = match (blocked, v2.get(name)) {
                (Some(reason), _) => (State::Blocked, reason.to_string(), None),
                (None, None) => {
                    (State::Blocked, "listed through v2alpha1 but not through v2 (deleted meanwhile?); rerun".to_string(), None)
                }
                (None, Some(obj)) => plan_pool(dialect, storage, alpha.get(name).copied(), obj),
            };
            PoolPlan { name: name.to_string(), state, migrated_by, detail, resource_version }
        })
        .collect();
    Plan { dialect, storage, pools, blocked: blocked.map(str::to_string) }
}

fn plan_pool(dialect: Dialect, storage: StorageState, alpha: Option<&Value>, v2: &Value) -> (State, String, Option<MigratedBy>) {
    let converted = match to_v2(v2, dialect) {
        Ok(c) => c,
        Err(reason) => return (State::Blocked, reason, None),
    };
    let conflict = alpha.filter(|a| v2alpha1_projection(a) != v2alpha1_projection(v2)).map(|a| {
        let fields = differing_fields(&v2alpha1_projection(a), &v2alpha1_projection(v2));
        format!("v2alpha1 and v2 views differ in {}; v2 wins", fields.join(", "))
    });
    match (converted.change, conflict) {
        (Change::None, _) => (State::Migrated, "annotated and stored through v2".to_string(), Some(MigratedBy::Annotation)),
        // One stored copy, already v2: a rewrite would only add the annotation, and two views of
        // the same stored object cannot disagree beyond what pruning explains.
        (Change::Rewrite, _) if storage == StorageState::V2 => {
            (State::Migrated, "stored as v2 (storedVersions [v2]); not annotated, nothing to write".to_string(), Some(MigratedBy::Storage))
        }
        (_, Some(conflict)) => (State::Conflict, conflict, None),
        (Change::Rewrite, None) => (State::Rewrite, "re-encode through v2 and annotate".to_string(), None),
        (Change::Reshape, None) => (State::Convert, "string cidrs become {cidr} objects; annotate".to_string(), None),
    }
}

/// Top-level spec paths (`spec.ipv4`, `spec.podSelector`, ...) whose values differ.
fn differing_fields(a: &Value, b: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let (ma, mb) = (a.as_object().unwrap_or(&empty), b.as_object().unwrap_or(&empty));
    let keys: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let fields: Vec<String> = keys.into_iter().filter(|k| ma.get(*k) != mb.get(*k)).map(|k| format!("spec.{k}")).collect();
    if fields.is_empty() { vec!["spec".to_string()] } else { fields }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::pool::MIGRATED_ANNOTATION;
    use serde_json::json;

    fn crd(item_type: &str, v2_storage: bool) -> CrdInfo {
        CrdInfo::decode(&json!({"spec": {"versions": [
            {"name": "v2alpha1", "served": true, "storage": !v2_storage},
            {"name": "v2", "served": true, "storage": v2_storage, "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
                "ipv4": {"properties": {"cidrs": {"items": {"type": item_type}}}}}}}}}}]},
            "status": {"storedVersions": ["v2alpha1", "v2"]}}))
    }

    fn pool(version: &str, name: &str, cidrs: Value, migrated: bool) -> Value {
        let mut obj = json!({"apiVersion": format!("cilium.io/{version}"), "kind": "CiliumPodIPPool",
            "metadata": {"name": name, "resourceVersion": "5"}, "spec": {"ipv4": {"cidrs": cidrs, "maskSize": 24}}});
        if migrated {
            obj["metadata"]["annotations"] = json!({MIGRATED_ANNOTATION: "true"});
        }
        obj
    }

    fn states(plan: &Plan) -> Vec<(&str, State)> {
        plan.pools.iter().map(|p| (p.name.as_str(), p.state)).collect()
    }

    #[test]
    fn upstream_plan() {
        let alpha = vec![pool("v2alpha1", "a", json!(["10.0.0.0/16"]), false), pool("v2alpha1", "b", json!(["10.1.0.0/16"]), true)];
        let v2 = vec![pool("v2", "a", json!(["10.0.0.0/16"]), false), pool("v2", "b", json!(["10.1.0.0/16"]), true)];
        let plan = plan(&crd("string", true), &alpha, &v2);
        assert_eq!(states(&plan), [("a", State::Rewrite), ("b", State::Migrated)]);
        assert_eq!(plan.writes(), 1);
        assert_eq!(plan.counts()["migrated"], 1);
    }

    #[test]
    fn cfp_plan_converts_even_marked_string_cidrs() {
        let strings = json!(["10.0.0.0/16"]);
        let objects = json!([{"cidr": "10.0.0.0/16"}]);
        let alpha = vec![
            pool("v2alpha1", "a", strings.clone(), false),
            pool("v2alpha1", "b", strings.clone(), true),
            pool("v2alpha1", "c", objects.clone(), true),
        ];
        let v2 = vec![pool("v2", "a", strings.clone(), false), pool("v2", "b", strings, true), pool("v2", "c", objects, true)];
        let plan = plan(&crd("object", true), &alpha, &v2);
        assert_eq!(states(&plan), [("a", State::Convert), ("b", State::Convert), ("c", State::Migrated)]);
    }

    #[test]
    fn conflicts_blocked_and_unserved() {
        let alpha = vec![pool("v2alpha1", "a", json!(["10.0.0.0/16"]), false), pool("v2alpha1", "gone", json!(["10.9.0.0/16"]), false)];
        let v2 = vec![pool("v2", "a", json!(["10.5.0.0/16"]), false), pool("v2", "bad", json!(["nope"]), false)];
        let p = plan(&crd("string", true), &alpha, &v2);
        assert_eq!(states(&p), [("a", State::Conflict), ("bad", State::Blocked), ("gone", State::Blocked)]);
        assert!(p.pools[0].detail.contains("spec.ipv4"), "{}", p.pools[0].detail);
        assert_eq!(p.writes(), 1, "a conflict is written: v2 wins");

        let p = plan(&crd("string", false), &alpha, &v2);
        assert!(p.pools.iter().all(|p| p.state == State::Blocked));
        assert_eq!(p.blocked.as_deref(), Some(V2_NOT_STORAGE));
        let alpha_only = CrdInfo::decode(&json!({"spec": {"versions": [{"name": "v2alpha1", "served": true, "storage": true}]}}));
        let p = plan(&alpha_only, &alpha, &[]);
        assert_eq!(p.blocked.as_deref(), Some(V2_NOT_SERVED));
        assert_eq!(p.writes(), 0);
    }

    #[test]
    fn storage_migrated_pools_count_as_migrated_by_storage() {
        let trimmed = |item_type: &str, stored: &[&str]| {
            CrdInfo::decode(&json!({"spec": {"versions": [
                {"name": "v2alpha1", "served": true, "storage": false},
                {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
                    "ipv4": {"properties": {"cidrs": {"items": {"type": item_type}}}}}}}}}}]},
                "status": {"storedVersions": stored}}))
        };
        let alpha = vec![pool("v2alpha1", "a", json!(["10.0.0.0/16"]), false), pool("v2alpha1", "b", json!(["10.1.0.0/16"]), true)];
        let v2 = vec![pool("v2", "a", json!(["10.0.0.0/16"]), false), pool("v2", "b", json!(["10.1.0.0/16"]), true)];
        let p = plan(&trimmed("string", &["v2"]), &alpha, &v2);
        assert_eq!(p.storage, StorageState::V2);
        assert_eq!(states(&p), [("a", State::Migrated), ("b", State::Migrated)]);
        assert_eq!((p.migrated_by(MigratedBy::Storage), p.migrated_by(MigratedBy::Annotation)), (1, 1));
        assert_eq!(p.writes(), 0, "nothing is written to pools stored as v2");
        // Not trimmed yet: an unannotated pool may still be stored as v2alpha1.
        let p = plan(&trimmed("string", &["v2alpha1", "v2"]), &alpha, &v2);
        assert_eq!(p.storage, StorageState::Pending);
        assert_eq!(states(&p), [("a", State::Rewrite), ("b", State::Migrated)]);
        // Stored as v2 but still string cidrs on a CFP CRD: the shape must still change.
        let p = plan(&trimmed("object", &["v2"]), &alpha, &v2);
        assert_eq!(states(&p), [("a", State::Convert), ("b", State::Convert)]);
        assert_eq!(p.migrated_by(MigratedBy::Storage), 0);
    }

    #[test]
    fn missing_permission_blocks_writes_only() {
        let v2 = vec![pool("v2", "a", json!(["10.0.0.0/16"]), false), pool("v2", "b", json!(["10.1.0.0/16"]), true)];
        let mut p = plan(&crd("string", true), &[], &v2);
        p.block_writes("missing permission: update ciliumpodippools.cilium.io");
        assert_eq!(states(&p), [("a", State::Blocked), ("b", State::Migrated)]);
    }
}
