//! `migrate` output: the plan, the status report. Pure: data in, text out.

use super::{Render, SCHEMA_VERSION, Style, Tone, table};
use crate::migrate::{AlphaWriter, MigratedBy, Plan, State, Storage, Verdict};
use crate::model::CrdInfo;
use serde::Serialize;
use std::collections::BTreeMap;

pub fn tone(state: State) -> Tone {
    match state {
        State::Migrated => Tone::Good,
        State::Rewrite | State::Convert => Tone::Bold,
        State::Conflict => Tone::Warn,
        State::Blocked => Tone::Bad,
    }
}

/// "0 migrated, 38 rewrite, 2 convert, 0 conflict, 0 blocked"; "40 migrated (40 by storage), ..."
/// when pools count as migrated because nothing is stored as v2alpha1.
pub fn state_counts(plan: &Plan) -> String {
    let by_storage = plan.migrated_by(MigratedBy::Storage);
    let count = |s: State| match s {
        State::Migrated if by_storage > 0 => format!("{} migrated ({by_storage} by storage)", plan.count(s)),
        _ => format!("{} {}", plan.count(s), s.name()),
    };
    State::ALL.iter().map(|s| count(*s)).collect::<Vec<_>>().join(", ")
}

/// "40 pools: 0 migrated, 38 rewrite, 2 convert, 0 conflict, 0 blocked"
pub fn counts_line(plan: &Plan) -> String {
    format!("{} pools: {}", plan.pools.len(), state_counts(plan))
}

/// The plan as a table; `server` holds the outcome of server-side dry runs per pool.
pub fn plan_table(plan: &Plan, server: &BTreeMap<String, String>, style: &Style) -> String {
    let mut header = vec!["POOL", "STATE", "DETAIL"];
    if !server.is_empty() {
        header.push("SERVER DRY-RUN");
    }
    let rows = plan
        .pools
        .iter()
        .map(|p| {
            let mut row = vec![p.name.clone(), style.paint(p.state.name(), tone(p.state)), p.detail.clone()];
            if !server.is_empty() {
                row.push(server.get(&p.name).cloned().unwrap_or_else(|| "-".to_string()));
            }
            row
        })
        .collect();
    let mut out = table(&header, rows, style);
    if style.headers {
        out.push_str(&format!("\n{} (v2 dialect: {})\n", counts_line(plan), plan.dialect.name()));
    }
    out
}

/// `migrate`'s plan (`--dry-run`, or a plan that cannot be applied); `server` holds the outcome
/// of server-side dry runs per pool.
pub struct PlanView<'a> {
    pub plan: &'a Plan,
    pub server: &'a BTreeMap<String, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlanDocument<'a> {
    schema_version: u32,
    counts: BTreeMap<&'static str, usize>,
    #[serde(flatten)]
    plan: &'a Plan,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    server_dry_run: &'a BTreeMap<String, String>,
}

impl Render for PlanView<'_> {
    fn document(&self) -> impl Serialize {
        PlanDocument { schema_version: SCHEMA_VERSION, counts: self.plan.counts(), plan: self.plan, server_dry_run: self.server }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("pools")
    }

    fn text(&self, _wide: bool, style: &Style) -> String {
        plan_table(self.plan, self.server, style)
    }
}

/// `migrate --status`: where the migration stands and whether v2alpha1 can go.
pub struct Status<'a> {
    pub crd: &'a CrdInfo,
    pub plan: &'a Plan,
    pub storage: &'a Storage,
    pub writers: &'a [AlphaWriter],
    pub verdict: &'a Verdict,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusDocument<'a> {
    schema_version: u32,
    crd: &'a CrdInfo,
    storage: &'a Storage,
    counts: BTreeMap<&'static str, usize>,
    pools: &'a [crate::migrate::PoolPlan],
    v2alpha1_writers: &'a [AlphaWriter],
    verdict: &'a Verdict,
}

impl Render for Status<'_> {
    fn document(&self) -> impl Serialize {
        StatusDocument {
            schema_version: SCHEMA_VERSION,
            crd: self.crd,
            storage: self.storage,
            counts: self.plan.counts(),
            pools: &self.plan.pools,
            v2alpha1_writers: self.writers,
            verdict: self.verdict,
        }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("pools")
    }

    fn text(&self, _wide: bool, style: &Style) -> String {
        status_text(self, style)
    }
}

fn status_text(doc: &Status, style: &Style) -> String {
    let (crd, plan) = (doc.crd, doc.plan);
    let versions: Vec<String> = crd
        .versions
        .iter()
        .map(|v| {
            let flags: Vec<&str> = [(v.served, "served"), (v.storage, "storage")].iter().filter(|f| f.0).map(|f| f.1).collect();
            format!("{} ({})", v.name, if flags.is_empty() { "not served".to_string() } else { flags.join(", ") })
        })
        .collect();
    let stored = crd.stored_versions.as_ref().map_or("unknown".to_string(), |s| format!("[{}]", s.join(", ")));
    // The CRD's versions and the storage line quote cluster data: one line each.
    let mut out = format!(
        "versions:        {}\nstoredVersions:  {}\nstorage:         {}\nv2 dialect:      {}\npools:           {} ({})\n",
        crate::escape::field(&versions.join(", ")),
        crate::escape::field(&stored),
        crate::escape::field(&doc.storage.line()),
        crd.cluster_dialect().name(),
        plan.pools.len(),
        state_counts(plan)
    );
    let pending: Vec<_> = plan.pools.iter().filter(|p| p.state != State::Migrated).collect();
    if !pending.is_empty() {
        out.push_str("\nNot migrated:\n");
        let rows = pending.iter().map(|p| vec![p.name.clone(), style.paint(p.state.name(), tone(p.state)), p.detail.clone()]).collect();
        out.push_str(&table(&["POOL", "STATE", "DETAIL"], rows, style));
    }
    if !doc.writers.is_empty() {
        out.push_str("\nManagers that wrote cilium.io/v2alpha1 (metadata.managedFields):\n");
        let rows = doc
            .writers
            .iter()
            .map(|w| {
                let after = if w.after_migration { style.paint("yes", Tone::Bad) } else { "no".to_string() };
                vec![w.manager.clone(), w.operation.clone(), w.pools.to_string(), w.last_write.clone(), after]
            })
            .collect();
        out.push_str(&table(&["MANAGER", "OPERATION", "POOLS", "LAST WRITE", "AFTER MIGRATION"], rows, style));
    }
    out.push('\n');
    for note in &doc.verdict.notes {
        out.push_str(&style.paint(&format!("note: {note}"), Tone::Dim));
        out.push('\n');
    }
    let tone = if doc.verdict.safe_to_remove_v2alpha1 { Tone::Good } else { Tone::Warn };
    out.push_str(&style.paint(&doc.verdict.line(), tone));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migrate::{alpha_writers, plan, verdict};
    use crate::model::pool::MIGRATED_ANNOTATION;
    use serde_json::json;

    #[test]
    fn plan_and_status_text() {
        let crd = CrdInfo::decode(&json!({"spec": {"versions": [
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
                "ipv4": {"properties": {"cidrs": {"items": {"type": "object"}}}}}}}}}},
            {"name": "v2alpha1", "served": true, "storage": false}]},
            "status": {"storedVersions": ["v2alpha1", "v2"]}}));
        let pool = |name: &str, cidrs: serde_json::Value, marked: bool| {
            let mut p = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name,
                "managedFields": [{"manager": "argocd", "operation": "Apply", "apiVersion": "cilium.io/v2alpha1", "time": "2026-01-01T00:00:00Z"}]},
                "spec": {"ipv4": {"cidrs": cidrs, "maskSize": 24}}});
            if marked {
                p["metadata"]["annotations"] = json!({MIGRATED_ANNOTATION: "true"});
            }
            p
        };
        let pools = vec![
            pool("blue", json!(["10.40.0.0/16"]), false),
            pool("green", json!([{"cidr": "10.60.0.0/20"}]), true),
            pool("bad", json!(["nope"]), false),
        ];
        let plan = plan(&crd, &[], &pools);
        let server = BTreeMap::from([("blue".to_string(), "accepted".to_string())]);
        insta::assert_snapshot!("plan", plan_table(&plan, &server, &Style::plain()));
        let writers = alpha_writers(&pools, None);
        let verdict = verdict(&crd, &plan, &writers);
        let storage = Storage::new(&crd, &plan, None);
        let status = Status { crd: &crd, plan: &plan, storage: &storage, writers: &writers, verdict: &verdict };
        insta::assert_snapshot!("status", status_text(&status, &Style::plain()));
    }
}
