//! `reserve-range` on a cluster: plan → confirm → write, the write retried on a conflict
//! with the pool re-read and the change re-validated.

use super::request::{MAX_CONFLICTS, Request, V2_NOT_SERVED, confirmed, prepare, result_text};
use crate::allocator::reserve::{Change, Prepared};
use crate::cli::{DryRun, ReserveArgs};
use crate::cluster::read::Cluster;
use crate::cluster::writes::{self, Replaced, Wording};
use crate::commands::context::Context;
use crate::commands::steps;
use crate::error::{self, input};
use crate::model::{Dialect, Pool, Snapshot};
use crate::render::reserve::{self as view, Outcome};
use crate::stderr;
use crate::terminal::Dialoguer;
use anyhow::Result;
use serde_json::Value;

/// The change prepared against the pool as read at one resourceVersion.
struct Planned {
    prepared: Prepared,
    version: String,
}

/// Puts `current` (the pool as read now) into the snapshot and prepares the request against it.
fn plan_live(snapshot: &mut Snapshot, current: &Value, v2_shape: Option<Dialect>, request: &Request, force: bool) -> Result<Planned> {
    let pool = Pool::decode(current, v2_shape);
    let dialect = v2_shape.unwrap_or(pool.dialect);
    let version = current.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default().to_string();
    match snapshot.pools.iter_mut().find(|p| p.name == pool.name) {
        Some(slot) => *slot = pool,
        None => snapshot.pools.push(pool),
    }
    Ok(Planned { prepared: prepare(snapshot, request, dialect, force)?, version })
}

/// Plan → confirm → write, as `migrate` does: the pool is read and the change prepared, the
/// preview shown and confirmed once, then the write retries on its own without asking again.
pub(super) async fn live_edit(
    args: &ReserveArgs,
    ctx: &Context,
    cluster: &Cluster,
    mut snapshot: Snapshot,
    request: &Request,
) -> Result<i32> {
    let connection = &cluster.connection;
    if snapshot.crd.as_ref().is_some_and(|c| !c.serves("v2")) {
        return Err(input(V2_NOT_SERVED));
    }
    let v2_shape = snapshot.crd.as_ref().and_then(|c| c.v2_dialect);
    let object_name = format!("ciliumpodippools.cilium.io/{}", request.pool);
    let target = writes::Target::pools(&connection.client, args.dry_run == DryRun::Server);
    let current = target.read(&request.pool).await.map_err(|e| connection.request_failed(e, "get", &object_name))?;
    let planned = plan_live(&mut snapshot, &current, v2_shape, request, args.force)?;
    let will_ask = args.dry_run == DryRun::None && !args.yes && ctx.interactive;
    show_preview(ctx, &planned.prepared, will_ask)?;
    warn_if_not_honoured(&snapshot, request);
    if args.dry_run == DryRun::Client {
        let outcome =
            Outcome { written: false, resource_version: Some(planned.version.clone()), conflicts: 0, file: None, previewed: false };
        ctx.record(&result_text(ctx, &snapshot.origin, &planned.prepared, args.dry_run, outcome))?;
        return Ok(0);
    }
    if args.dry_run == DryRun::None && !confirmed(args, ctx, &Dialoguer, &request.pool, &steps::destination(connection))? {
        return crate::commands::steps::declined();
    }
    let mut write = ConfirmedWrite { snapshot: &mut snapshot, v2_shape, request, force: args.force, confirmed: planned, conflicts: 0 };
    let written = writes::replace_retrying(&target, &request.pool, MAX_CONFLICTS as usize + 1, |current| write.edit(&current)).await;
    let (prepared, conflicts) = (&write.confirmed.prepared, write.conflicts);
    match written {
        Ok(Replaced::Unchanged) => Ok(0),
        Ok(Replaced::Written { object, .. }) => {
            verify_written(&object, prepared, v2_shape)?;
            let outcome = Outcome {
                written: args.dry_run == DryRun::None,
                resource_version: object.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string),
                conflicts,
                file: None,
                previewed: false,
            };
            ctx.record(&result_text(ctx, &snapshot.origin, prepared, args.dry_run, outcome))?;
            Ok(0)
        }
        Err(failed) => {
            let check = format!("check with `kubectl ciliumpool reserve-range --list {}`", request.pool);
            Err(failed.into_error(connection, &Wording { read: &object_name, write: &object_name, check: &check }))
        }
    }
}

/// The preview of a live change: on stdout, or on stderr when stdout is for the document and
/// someone is asked (whoever answers the question still sees the cost).
fn show_preview(ctx: &Context, prepared: &Prepared, will_ask: bool) -> Result<()> {
    let preview = view::preview(&prepared.impact, &ctx.style);
    match ctx.format.is_document() {
        true if will_ask => stderr::block(&preview, ctx.style.color),
        true => {}
        false => ctx.print(&preview)?,
    }
    Ok(())
}

/// The write of a confirmed change, asked for the object to write each time the pool is read.
struct ConfirmedWrite<'a> {
    snapshot: &'a mut Snapshot,
    v2_shape: Option<Dialect>,
    request: &'a Request,
    force: bool,
    /// The change as confirmed, then as re-planned against each newer version of the pool.
    confirmed: Planned,
    /// Times the pool changed between a read and the write.
    conflicts: u32,
}

impl ConfirmedWrite<'_> {
    /// The edited pool. When the pool changed since it was planned (another writer, or a 409),
    /// the change is planned again: written if it is still the edit the user confirmed,
    /// refused otherwise (exit 3) — the answer was given to that edit, not to another one.
    fn edit(&mut self, current: &Value) -> Result<Option<Value>> {
        let version = current.pointer("/metadata/resourceVersion").and_then(Value::as_str).unwrap_or_default();
        if version != self.confirmed.version {
            self.conflicts += 1;
            let (pool, read, conflicts) = (&self.request.pool, &self.confirmed.version, self.conflicts);
            warn_line!(
                "ciliumpodippool {pool} changed since it was read (resourceVersion {read}); re-reading and re-validating ({conflicts}/{MAX_CONFLICTS})"
            );
            let planned = plan_live(self.snapshot, current, self.v2_shape, self.request, self.force)?;
            if planned.prepared.plan != self.confirmed.prepared.plan {
                return Err(error::cluster(format!(
                    "ciliumpodippool {pool} changed since the preview and the change would now differ from the one confirmed; nothing was written — run the command again to see the new preview"
                )));
            }
            self.confirmed = planned;
        }
        Ok(Some(self.confirmed.prepared.edited.clone()))
    }
}

/// The API server returns what it stored: if the change is not in it (pruned by a schema
/// of another dialect), say so instead of reporting success.
fn verify_written(written: &Value, prepared: &Prepared, v2_shape: Option<Dialect>) -> Result<()> {
    let pool = Pool::decode(written, v2_shape);
    let reserved: Vec<_> = pool
        .family(prepared.plan.family)
        .and_then(|f| f.cidrs.iter().find(|c| c.original == prepared.plan.cidr))
        .map(|c| c.reserved.clone())
        .unwrap_or_default();
    let present = prepared.plan.edit.add.as_ref().is_none_or(|r| reserved.contains(r));
    let removed = prepared.plan.edit.remove.iter().all(|r| !reserved.contains(r));
    if present && removed {
        Ok(())
    } else {
        Err(error::cluster(format!(
            "the API server accepted ciliumpodippool {} but the stored object does not hold the change: its v2 schema is not the {} dialect the plugin detected; check the CRD",
            pool.name,
            pool.dialect.name()
        )))
    }
}

/// Said before the write is confirmed (stderr::line escapes what it quotes): Cilium before 1.21 reads its pools as v2alpha1, which has no
/// reserved ranges, so its operator hands out blocks inside them (seen with the running 1.20
/// operator: tests/integration/operator_loop.rs).
fn warn_if_not_honoured(snapshot: &Snapshot, request: &Request) {
    if matches!(request.change, Change::Remove(_)) {
        return;
    }
    if let Some(operator) = snapshot.origin.cilium_without_v2_pools() {
        warn_line!(
            "warning: the running Cilium ({}, {} in namespace {}) does not honour reservedRanges: its operator can still hand out blocks inside this range until Cilium 1.21 or later runs",
            operator.image,
            operator.source,
            operator.namespace
        );
    }
}
