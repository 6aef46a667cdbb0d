//! `migrate --status`: who still writes v2alpha1, and whether v2alpha1 can be removed (docs/design/cilium.md#migration).

use super::convert::V2ALPHA1_API_VERSION;
use super::plan::{MigratedBy, Plan, State};
use super::storage::StorageState;
use crate::model::pool::MIGRATED_ANNOTATION;
use crate::model::{CrdInfo, Dialect};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The last write to one field of an object, from its `metadata.managedFields`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldWrite {
    pub manager: String,
    /// RFC 3339, to the second.
    pub time: String,
}

/// Who last set the CRD's `status.storedVersions`, and when: the `/status` write that trimmed it
/// to `[v2]` (our `--finalize`, or Cilium's operator after its storage migration).
pub fn stored_versions_write(crd_object: &Value) -> Option<FieldWrite> {
    let entries = crd_object.pointer("/metadata/managedFields").and_then(Value::as_array)?;
    entries
        .iter()
        .filter(|e| e.pointer("/fieldsV1/f:status/f:storedVersions").is_some())
        .filter_map(|e| Some(FieldWrite { manager: e.get("manager")?.as_str()?.to_string(), time: e.get("time")?.as_str()?.to_string() }))
        .max_by(|a, b| a.time.cmp(&b.time))
}

/// The storage facts `--status` reports.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Storage {
    pub state: StorageState,
    pub storage_version: Option<String>,
    pub stored_versions: Option<Vec<String>>,
    /// The write that set `storedVersions` (its manager and time), when managedFields show it.
    pub stored_versions_written: Option<FieldWrite>,
    /// Pools counted as migrated because of the annotation, and because storage is v2.
    pub migrated_by_annotation: usize,
    pub migrated_by_storage: usize,
}

impl Storage {
    pub fn new(crd: &CrdInfo, plan: &Plan, stored_versions_written: Option<FieldWrite>) -> Storage {
        Storage {
            state: plan.storage,
            storage_version: crd.storage_version().map(str::to_string),
            stored_versions: crd.stored_versions.clone(),
            stored_versions_written,
            migrated_by_annotation: plan.migrated_by(MigratedBy::Annotation),
            migrated_by_storage: plan.migrated_by(MigratedBy::Storage),
        }
    }

    /// When nothing tells when storedVersions became `[v2]`, v2alpha1 writers of pools migrated by
    /// storage cannot be dated: they all show as before the migration. Says so, when it matters.
    pub fn undated_writers_note(&self, writers: &[AlphaWriter]) -> Option<String> {
        (self.state == StorageState::V2 && self.stored_versions_written.is_none() && self.migrated_by_storage > 0 && !writers.is_empty()).then(|| {
            "the CRD's managedFields do not say when storedVersions became [v2]: v2alpha1 writers of pools migrated by storage cannot be dated \
             (AFTER MIGRATION shows no); check their sources"
                .to_string()
        })
    }

    /// The "storage:" line of `--status`.
    pub fn line(&self) -> String {
        match self.state {
            StorageState::V2 => {
                let by = self.stored_versions_written.as_ref().map(|w| format!(", set by {} at {}", w.manager, w.time)).unwrap_or_default();
                format!("every object stored as v2 (storedVersions [v2]{by})")
            }
            StorageState::Pending => format!(
                "pending: v2 is the storage version, but storedVersions [{}] means objects may still be stored as v2alpha1 (storage migration not started or not finished; the API does not show which objects)",
                self.stored_versions.clone().unwrap_or_default().join(", ")
            ),
            StorageState::V2alpha1 => "v2alpha1 (v2 is not the storage version)".to_string(),
            StorageState::Unknown => "v2; storedVersions could not be read".to_string(),
        }
    }
}

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
/// "after migration" when it is newer than the entry that owns the migration annotation or, for a
/// pool without it, than `storage_migrated_at` (when storedVersions became `[v2]`; a storage
/// migration's no-op writes leave no trace in managedFields).
pub fn alpha_writers(pools_via_v2: &[Value], storage_migrated_at: Option<&str>) -> Vec<AlphaWriter> {
    let mut by_manager: BTreeMap<(String, String), AlphaWriter> = BTreeMap::new();
    for pool in pools_via_v2 {
        let entries: Vec<&Value> = pool.pointer("/metadata/managedFields").and_then(Value::as_array).into_iter().flatten().collect();
        let text = |e: &Value, key: &str| e.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        let annotation_key = format!("f:{MIGRATED_ANNOTATION}");
        let migrated_at = entries
            .iter()
            .filter(|e| e.pointer("/fieldsV1/f:metadata/f:annotations").and_then(|a| a.get(&annotation_key)).is_some())
            .map(|e| text(e, "time"))
            .max()
            .or_else(|| storage_migrated_at.map(str::to_string));
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
    match (&crd.stored_versions, plan.storage) {
        _ if plan.blocked.is_some() => {}
        (_, StorageState::V2) => {}
        (Some(stored), _) => pending.push(stored_versions_pending(stored, unmigrated)),
        (None, _) => pending.push("status.storedVersions could not be read".to_string()),
    }
    let still: Vec<String> = writers.iter().filter(|w| w.after_migration).map(|w| format!("{} ({})", w.manager, w.operation)).collect();
    if !still.is_empty() {
        pending.push(format!(
            "{} still write(s) cilium.io/v2alpha1 after migration: convert their manifests (`migrate -f`)",
            still.join(", ")
        ));
    }
    let earlier: Vec<&str> = writers.iter().filter(|w| !w.after_migration).map(|w| w.manager.as_str()).collect();
    let mut notes = Vec::new();
    if !earlier.is_empty() {
        notes.push(format!(
            "wrote cilium.io/v2alpha1 before migration: {}; make sure their sources (GitOps, Helm, scripts) now use v2",
            earlier.join(", ")
        ));
    }
    // A downgrade back to v2alpha1 only matters once the cluster serves v2.
    if crd.serves("v2") {
        notes.push(downgrade_note(crd.cluster_dialect()).to_string());
    }
    Verdict { safe_to_remove_v2alpha1: pending.is_empty(), pending, notes }
}

/// Why `status.storedVersions` still holds v2alpha1, and what to run: `migrate` then `--finalize`
/// while pools are not migrated; only `--finalize` once every pool is (its pools then hold
/// nothing stored as v2alpha1 that `migrate` would rewrite).
fn stored_versions_pending(stored: &[String], unmigrated: usize) -> String {
    let run = if unmigrated > 0 {
        "or run `kubectl ciliumpool migrate`, then `migrate --finalize`"
    } else {
        "or, every pool being migrated, run `kubectl ciliumpool migrate --finalize`"
    };
    format!(
        "status.storedVersions is [{}]: objects may still be stored as v2alpha1 (the operator of Cilium 1.21, on main today, rewrites every pool and \
         trims it itself; {run})",
        stored.join(", ")
    )
}

/// Where the runbook explains a downgrade in full.
pub const DOWNGRADE_DOC: &str = "docs/migration.md#6-when-ciliums-operator-migrates-storage-itself";

/// [`downgrade_caveat`] in one line with a link to the runbook: what `--status` and `--finalize`
/// say by default (the full text is under `-v`).
pub fn downgrade_note(dialect: Dialect) -> String {
    let what = match dialect {
        Dialect::CfpV2 => "restore the backup's v2alpha1 view first; keep v2alpha1 served",
        _ => "keep v2alpha1 served; it does not see reserved ranges in pool[]",
    };
    format!("downgrade to a Cilium that only knows v2alpha1: {what} ({DOWNGRADE_DOC}; -v for details)")
}

/// What a downgrade to a Cilium that only knows v2alpha1 (1.20 and older) needs, per dialect
/// (docs/design/cilium.md#migration).
pub fn downgrade_caveat(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::CfpV2 => {
            "downgrade to a Cilium that only knows v2alpha1: it reads pools through v2alpha1, where converted {cidr} items are pruned to empty objects — \
             restore the v2alpha1 view from the backup of `migrate` first, and keep v2alpha1 served in the CRD"
        }
        _ => {
            "downgrade to a Cilium that only knows v2alpha1: it reads pools through v2alpha1, so the CRD must still serve v2alpha1 (once removed, add it back \
             as served, not storage: the older operator does not replace a CRD with a newer schema-version label, and the apiserver refuses its \
             v2alpha1-only CRD while storedVersions lists v2); it does not see v2-only fields (reserved ranges in pool[]) and may allocate from them"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default downgrade note is one short line whose link names a heading of the runbook.
    #[test]
    fn downgrade_note_is_one_line_linking_the_runbook() {
        let runbook = include_str!("../../docs/migration.md");
        let anchor = DOWNGRADE_DOC.split_once('#').unwrap().1;
        let slug = |heading: &str| {
            heading.to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-').collect::<String>().replace(' ', "-")
        };
        assert!(runbook.lines().filter_map(|l| l.strip_prefix("## ")).any(|h| slug(h) == anchor), "{anchor} is no heading");
        for dialect in [Dialect::UpstreamV2, Dialect::CfpV2] {
            let note = downgrade_note(dialect);
            assert!(!note.contains('\n') && note.len() <= 200, "{note}");
            assert!(note.contains(DOWNGRADE_DOC), "{note}");
        }
    }
    use crate::migrate::plan::plan;
    use serde_json::json;

    fn entry(manager: &str, version: &str, time: &str, owns_annotation: bool) -> Value {
        let fields = if owns_annotation {
            json!({"f:metadata": {"f:annotations": {"f:cilium.io/migrated-to-v2": {}}}})
        } else {
            json!({"f:spec": {}})
        };
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
        let writers = alpha_writers(&pools, None);
        assert_eq!(writers.len(), 2);
        assert_eq!((writers[0].manager.as_str(), writers[0].after_migration), ("argocd", true));
        assert_eq!((writers[1].manager.as_str(), writers[1].pools, writers[1].after_migration), ("kubectl-create", 2, false));
    }

    #[test]
    fn verdict_needs_everything() {
        let crd = |stored: &[&str]| {
            CrdInfo::decode(&json!({"spec": {"versions": [
            {"name": "v2alpha1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]},
            "status": {"storedVersions": stored}}))
        };
        let done = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a", "annotations": {MIGRATED_ANNOTATION: "true"}},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        let pending = crd(&["v2alpha1", "v2"]);
        let v = verdict(&pending, &plan(&pending, &[], std::slice::from_ref(&done)), &[]);
        assert!(!v.safe_to_remove_v2alpha1);
        assert!(v.line().starts_with("safe to remove v2alpha1: no — because status.storedVersions is [v2alpha1, v2]"), "{}", v.line());
        let finished = crd(&["v2"]);
        let v = verdict(&finished, &plan(&finished, &[], &[done]), &[]);
        assert!(v.safe_to_remove_v2alpha1, "{:?}", v.pending);
        let still =
            AlphaWriter { manager: "argocd".into(), operation: "Apply".into(), pools: 1, last_write: "t".into(), after_migration: true };
        let v = verdict(&finished, &plan(&finished, &[], &[]), &[still]);
        assert!(v.line().contains("argocd (Apply) still write"), "{}", v.line());
    }

    /// Issue 42: after a full `migrate`, `--status` advised running `migrate` again.
    #[test]
    fn every_pool_migrated_advises_only_finalize() {
        let crd = CrdInfo::decode(&json!({"spec": {"versions": [
            {"name": "v2alpha1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]},
            "status": {"storedVersions": ["v2alpha1", "v2"]}}));
        let done = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a", "annotations": {MIGRATED_ANNOTATION: "true"}},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        let line = verdict(&crd, &plan(&crd, &[], &[done]), &[]).line();
        assert!(line.ends_with("run `kubectl ciliumpool migrate --finalize`)"), "{line}");
        assert!(!line.contains("run `kubectl ciliumpool migrate`,"), "{line}");
        let alpha = json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "b"},
            "spec": {"ipv4": {"cidrs": ["10.1.0.0/16"], "maskSize": 24}}});
        let line = verdict(&crd, &plan(&crd, std::slice::from_ref(&alpha), std::slice::from_ref(&alpha)), &[]).line();
        assert!(line.contains("run `kubectl ciliumpool migrate`, then `migrate --finalize`"), "{line}");
    }

    #[test]
    fn storage_migration_verdict_uses_the_trim_time() {
        let crd_object = json!({"metadata": {"managedFields": [
            {"manager": "kube-apiserver", "operation": "Update", "subresource": "status", "time": "2026-01-01T00:00:00Z",
             "fieldsV1": {"f:status": {"f:conditions": {}}}},
            {"manager": "cilium-operator-generic", "operation": "Update", "subresource": "status", "time": "2026-01-05T00:00:00Z",
             "fieldsV1": {"f:status": {"f:storedVersions": {}}}}]},
            "spec": {"versions": [{"name": "v2alpha1", "served": true, "storage": false}, {"name": "v2", "served": true, "storage": true}]},
            "status": {"storedVersions": ["v2"]}});
        let written = stored_versions_write(&crd_object).expect("the storedVersions write");
        assert_eq!(written, FieldWrite { manager: "cilium-operator-generic".into(), time: "2026-01-05T00:00:00Z".into() });
        let crd = CrdInfo::decode(&crd_object);
        let pools = vec![json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a", "managedFields": [
            entry("kubectl-create", "v2alpha1", "2026-01-01T00:00:00Z", false)]}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}})];
        let p = plan(&crd, &[], &pools);
        let writers = alpha_writers(&pools, Some(&written.time));
        assert_eq!((writers[0].manager.as_str(), writers[0].after_migration), ("kubectl-create", false));
        let v = verdict(&crd, &p, &writers);
        assert!(v.safe_to_remove_v2alpha1, "{:?}", v.pending);
        assert!(v.notes.iter().any(|n| n.contains("kubectl-create")), "an earlier writer is a note: {:?}", v.notes);
        assert!(v.notes.iter().any(|n| n.starts_with("downgrade to a Cilium that only knows v2alpha1")), "{:?}", v.notes);
        let undated = Storage::new(&crd, &p, None);
        assert!(undated.undated_writers_note(&writers).is_some_and(|n| n.contains("cannot be dated")));
        let storage = Storage::new(&crd, &p, Some(written));
        assert_eq!(storage.undated_writers_note(&writers), None);
        assert_eq!((storage.state, storage.migrated_by_storage, storage.migrated_by_annotation), (StorageState::V2, 1, 0));
        assert!(storage.line().contains("set by cilium-operator-generic at 2026-01-05T00:00:00Z"), "{}", storage.line());

        let mut late = pools.clone();
        late[0]["metadata"]["managedFields"].as_array_mut().unwrap().push(entry("argocd", "v2alpha1", "2026-01-06T00:00:00Z", false));
        let writers = alpha_writers(&late, Some("2026-01-05T00:00:00Z"));
        let v = verdict(&crd, &plan(&crd, &[], &late), &writers);
        assert!(!v.safe_to_remove_v2alpha1);
        assert!(v.line().contains("argocd (Update) still write"), "{}", v.line());

        // Cilium 1.20's CRD serves v2alpha1 only: nothing to downgrade from yet.
        let alpha_only = CrdInfo::decode(&json!({"spec": {"versions": [{"name": "v2alpha1", "served": true, "storage": true}]},
            "status": {"storedVersions": ["v2alpha1"]}}));
        let v = verdict(&alpha_only, &plan(&alpha_only, &pools, &[]), &[]);
        assert!(!v.notes.iter().any(|n| n.contains("downgrade")), "{:?}", v.notes);
    }
}
