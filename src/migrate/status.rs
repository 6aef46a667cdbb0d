//! `migrate --status`: who still writes v2alpha1, and whether v2alpha1 can be removed (docs/design/cilium.md#migration).

use super::convert::V2ALPHA1_API_VERSION;
use super::plan::{Plan, State};
use crate::model::CrdInfo;
use crate::model::pool::MIGRATED_ANNOTATION;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// A field manager whose last write to some pool went through v2alpha1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AlphaWriter {
    pub manager: String,
    pub operation: String,
    pub pools: usize,
    /// The latest `managedFields[].time` of its v2alpha1 entries (RFC 3339).
    pub last_write: String,
    /// It wrote through v2alpha1 after the pool was migrated: it is still writing v2alpha1.
    pub after_migration: bool,
}

/// Managers with v2alpha1 `Update`/`Apply` entries in the pools' `managedFields`. An entry is
/// "after migration" when it is newer than the entry that owns the migration annotation.
pub fn alpha_writers(pools_via_v2: &[Value]) -> Vec<AlphaWriter> {
    let mut by_manager: BTreeMap<(String, String), AlphaWriter> = BTreeMap::new();
    for pool in pools_via_v2 {
        let entries: Vec<&Value> = pool.pointer("/metadata/managedFields").and_then(Value::as_array).into_iter().flatten().collect();
        let text = |e: &Value, key: &str| e.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let annotation_key = format!("f:{MIGRATED_ANNOTATION}");
        let migrated_at = entries
            .iter()
            .filter(|e| e.pointer("/fieldsV1/f:metadata/f:annotations").and_then(|a| a.get(&annotation_key)).is_some())
            .map(|e| text(e, "time"))
            .max();
        for entry in entries {
            let operation = text(entry, "operation");
            if text(entry, "apiVersion") != V2ALPHA1_API_VERSION || !matches!(operation.as_str(), "Update" | "Apply") {
                continue;
            }
            let time = text(entry, "time");
            let after = migrated_at.as_ref().is_some_and(|m| &time > m);
            let writer = by_manager.entry((text(entry, "manager"), operation.clone())).or_insert_with(|| AlphaWriter {
                manager: text(entry, "manager"),
                operation,
                pools: 0,
                last_write: String::new(),
                after_migration: false,
            });
            writer.pools += 1;
            writer.after_migration |= after;
            if time > writer.last_write {
                writer.last_write = time;
            }
        }
    }
    by_manager.into_values().collect()
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// v2alpha1 can be removed from the CRD (and its objects need no v2alpha1 reader).
    pub safe_to_remove_v2alpha1: bool,
    /// Work `migrate` or the user still has to do; empty when done.
    pub pending: Vec<String>,
    /// Things to be aware of that do not block (e.g. managers that wrote v2alpha1 before).
    pub notes: Vec<String>,
}

impl Verdict {
    /// "safe to remove v2alpha1: yes/no — because ..."
    pub fn line(&self) -> String {
        if self.safe_to_remove_v2alpha1 {
            "safe to remove v2alpha1: yes — because every pool is migrated, storedVersions is [v2] and no manager writes v2alpha1 any more (plan no downgrade to a Cilium without v2)".to_string()
        } else {
            format!("safe to remove v2alpha1: no — because {}", self.pending.join("; "))
        }
    }
}

pub fn verdict(crd: &CrdInfo, plan: &Plan, writers: &[AlphaWriter]) -> Verdict {
    let mut pending = Vec::new();
    if let Some(reason) = &plan.blocked {
        pending.push(reason.clone());
    }
    let unmigrated = plan.pools.len() - plan.count(State::Migrated);
    if plan.blocked.is_none() && unmigrated > 0 {
        pending.push(format!("{unmigrated} of {} pools are not migrated yet (run `kubectl ciliumpool migrate`)", plan.pools.len()));
    }
    match &crd.stored_versions {
        _ if plan.blocked.is_some() => {}
        Some(stored) if stored.iter().all(|v| v == "v2") => {}
        Some(stored) => pending.push(format!(
            "status.storedVersions is [{}] (run `kubectl ciliumpool migrate --finalize` once every pool is migrated)",
            stored.join(", ")
        )),
        None => pending.push("status.storedVersions could not be read".to_string()),
    }
    let still: Vec<String> = writers.iter().filter(|w| w.after_migration).map(|w| format!("{} ({})", w.manager, w.operation)).collect();
    if !still.is_empty() {
        pending.push(format!("{} still write(s) cilium.io/v2alpha1 after migration: convert their manifests (`migrate -f`)", still.join(", ")));
    }
    let earlier: Vec<&str> = writers.iter().filter(|w| !w.after_migration).map(|w| w.manager.as_str()).collect();
    let mut notes = Vec::new();
    if !earlier.is_empty() {
        notes.push(format!("wrote cilium.io/v2alpha1 before migration: {}; make sure their sources (GitOps, Helm, scripts) now use v2", earlier.join(", ")));
    }
    notes.push("after removing v2alpha1, downgrading to a Cilium release without cilium.io/v2 needs a restore from the backup".to_string());
    Verdict { safe_to_remove_v2alpha1: pending.is_empty(), pending, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::plan::plan;
    use serde_json::json;

    fn entry(manager: &str, version: &str, time: &str, owns_annotation: bool) -> Value {
        let fields = if owns_annotation { json!({"f:metadata": {"f:annotations": {"f:cilium.io/migrated-to-v2": {}}}}) } else { json!({"f:spec": {}}) };
        json!({"manager": manager, "operation": "Update", "apiVersion": format!("cilium.io/{version}"), "time": time, "fieldsV1": fields})
    }

    #[test]
    fn writers_before_and_after_migration() {
        let pools = vec![
            json!({"metadata": {"name": "a", "managedFields": [
                entry("kubectl-create", "v2alpha1", "2026-01-01T00:00:00Z", false),
                entry("kubectl-ciliumpool", "v2", "2026-01-02T00:00:00Z", true)]}}),
            json!({"metadata": {"name": "b", "managedFields": [
                entry("kubectl-create", "v2alpha1", "2026-01-01T00:00:00Z", false),
                entry("kubectl-ciliumpool", "v2", "2026-01-02T00:00:00Z", true),
                entry("argocd", "v2alpha1", "2026-01-03T00:00:00Z", false)]}}),
        ];
        let writers = alpha_writers(&pools);
        assert_eq!(writers.len(), 2);
        assert_eq!((writers[0].manager.as_str(), writers[0].after_migration), ("argocd", true));
        assert_eq!((writers[1].manager.as_str(), writers[1].pools, writers[1].after_migration), ("kubectl-create", 2, false));
    }

    #[test]
    fn verdict_needs_everything() {
        let crd = |stored: &[&str]| CrdInfo::decode(&json!({"spec": {"versions": [
            {"name": "v2alpha1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]},
            "status": {"storedVersions": stored}}));
        let done = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a", "annotations": {MIGRATED_ANNOTATION: "true"}},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        let pending = crd(&["v2alpha1", "v2"]);
        let v = verdict(&pending, &plan(&pending, &[], std::slice::from_ref(&done)), &[]);
        assert!(!v.safe_to_remove_v2alpha1);
        assert!(v.line().starts_with("safe to remove v2alpha1: no — because status.storedVersions is [v2alpha1, v2]"), "{}", v.line());
        let finished = crd(&["v2"]);
        let v = verdict(&finished, &plan(&finished, &[], &[done]), &[]);
        assert!(v.safe_to_remove_v2alpha1, "{:?}", v.pending);
        let still = AlphaWriter { manager: "argocd".into(), operation: "Apply".into(), pools: 1, last_write: "t".into(), after_migration: true };
        let v = verdict(&finished, &plan(&finished, &[], &[]), &[still]);
        assert!(v.line().contains("argocd (Apply) still write"), "{}", v.line());
    }
}
