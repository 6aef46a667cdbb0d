//! `reserve-range`: validate, preview, confirm, write (docs/reserve-range.md).
//!
//! Live: the pool is read through cilium.io/v2 and replaced with the resourceVersion it was
//! read at; a conflict re-reads, re-validates and retries. Offline (`-f`): the manifest is
//! edited and printed, or rewritten with `--in-place`. Either way the preview comes from
//! analysing the snapshot before and after the edit.

use crate::allocator::Report;
use crate::allocator::reserve::{self, Change, Prepared};
use crate::cli::{DryRun, ReserveArgs};
use crate::cluster::read::Cluster;
use crate::cluster::writes::{self, Replaced, Wording};
use crate::commands::context::{Context, emit};
use crate::commands::steps::require_pools;
use crate::error::{self, input};
use crate::files::{self, atomic};
use crate::manifest;
use crate::model::{CrdInfo, Dialect, Pool, Snapshot, pool};
use crate::render::reserve::{self as view, Outcome};
use crate::render::{self, Format};
use crate::source::Input;
use crate::stderr;
use crate::terminal::{Dialoguer, Prompter};
use anyhow::Result;
use serde_json::Value;

/// Conflicting writes tolerated before giving up (exit 3).
const MAX_CONFLICTS: u32 = 5;
const V2_NOT_SERVED: &str = "cilium.io/v2 is not served by this cluster; upgrade Cilium (reserved ranges need the v2 CiliumPodIPPool)";

/// One change to one pool, from the arguments or the guided flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub pool: String,
    pub change: Change,
    pub cidr: Option<String>,
}

pub async fn run(args: ReserveArgs, ctx: &Context) -> Result<i32> {
    if args.list {
        return list(&args, ctx).await;
    }
    // Flags are checked before anything is read: bad input never waits for a cluster.
    let from_args = request_from_args(&args)?;
    if from_args.is_none() && !ctx.interactive {
        return Err(input(
            "missing arguments: kubectl ciliumpool reserve-range POOL RANGE | POOL --remove RANGE | POOL --drain CIDR | --list",
        ));
    }
    let (snapshot, cluster) = match &ctx.input {
        Input::Files(paths) => {
            files::read::refuse_archives(paths)?;
            // The plan edits the pool object: every field of it is kept.
            (files::snapshot(paths, ctx.namespace.as_deref(), ctx.verbose, files::Pools::Whole)?, None)
        }
        Input::Cluster(options) => {
            let cluster = Cluster::connect(options, ctx.namespace.as_deref()).await?;
            let (snapshot, _) = cluster.read().await?;
            (snapshot, Some(cluster))
        }
    };
    // What files cannot show (no CiliumNodes: allocated blocks unknown), once, before the plan.
    if cluster.is_none() {
        crate::commands::steps::warn_unread(&snapshot);
    }
    let request = match from_args {
        Some(request) => request,
        None => {
            // What cannot be written is said before the first question, not after the range.
            if cluster.is_some() && snapshot.crd.as_ref().is_some_and(|c| !c.serves("v2")) {
                return Err(input(V2_NOT_SERVED));
            }
            match guided(&Dialoguer, &snapshot, &args, cluster.is_none())? {
                Some(request) => request,
                None => return crate::commands::steps::declined(),
            }
        }
    };
    require_pools(&snapshot, std::slice::from_ref(&request.pool))?;
    match (cluster, &ctx.input) {
        (Some(cluster), _) => live_edit(&args, ctx, &cluster, snapshot, &request).await,
        (None, Input::Files(paths)) => offline_edit(&args, ctx, paths, snapshot, &request),
        (None, Input::Cluster(_)) => unreachable!("a cluster input is connected above"),
    }
}

/// The request the flags describe; `None` when something is missing (the guided flow's job).
fn request_from_args(args: &ReserveArgs) -> Result<Option<Request>> {
    let Some(pool) = args.pool.clone() else { return Ok(None) };
    let parse = |text: &str| reserve::parse_range(text).map_err(|e| input(format!("invalid range: {e}")));
    let change = match (&args.range, &args.remove, &args.drain) {
        (Some(range), None, None) => Change::Reserve(parse(range)?),
        (None, Some(range), None) => Change::Remove(reserve::written_range(range)),
        (None, None, Some(cidr)) => Change::Drain(cidr.clone()),
        (None, None, None) => return Ok(None),
        _ => return Err(input("give one of RANGE, --remove RANGE or --drain CIDR")),
    };
    Ok(Some(Request { pool, change, cidr: args.cidr.clone() }))
}

async fn list(args: &ReserveArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = crate::commands::steps::analyze(ctx).await?;
    let names: Vec<String> = args.pool.iter().cloned().collect();
    require_pools(&snapshot, &names)?;
    let pools: Vec<_> = report.pools.iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect();
    let invalid = report
        .problems
        .iter()
        .filter(|p| {
            p.kind == crate::allocator::ProblemKind::InvalidReservedRange
                && (names.is_empty() || p.pool.as_ref().is_some_and(|n| names.contains(n)))
        })
        .collect();
    let listed = view::Reservations { origin: &snapshot.origin, ranges: view::listed_ranges(&pools), invalid };
    ctx.show(&listed)?;
    if listed.ranges.is_empty() && listed.invalid.is_empty() && matches!(ctx.format, Format::Table | Format::Wide) {
        // An empty table is no header alone: say so on stderr, as kubectl's "No resources found".
        let whose = match names.as_slice() {
            [name] => format!("pool {name}"),
            _ => "any pool".to_string(),
        };
        warn_line!("No reserved ranges in {whose}.");
    }
    Ok(0)
}

/// The dialect a manifest is edited in: the pool's own; v2alpha1 manifests are refused.
fn offline_dialect(pool: &Pool, crd: Option<&CrdInfo>) -> Result<Dialect> {
    if crd.is_some_and(|c| !c.serves("v2")) {
        return Err(input(format!("{V2_NOT_SERVED} (according to the CRD in the input)")));
    }
    if pool.dialect == Dialect::V2alpha1 {
        return Err(input(format!(
            "pool {} is a cilium.io/v2alpha1 manifest and cannot hold reserved ranges; convert it to cilium.io/v2 first (kubectl ciliumpool migrate -f FILE)",
            pool.name
        )));
    }
    Ok(pool.dialect)
}

fn offline_edit(args: &ReserveArgs, ctx: &Context, paths: &[String], snapshot: Snapshot, request: &Request) -> Result<i32> {
    let pool = snapshot.pool(&request.pool).expect("checked by require_pools");
    let dialect = offline_dialect(pool, snapshot.crd.as_ref())?;
    let api_version = pool.api_version.clone();
    let prepared = prepare(&snapshot, request, dialect, args.force)?;
    let is_pool = |v: &Value| {
        pool::is_pool_object(v)
            && v.pointer("/metadata/name").and_then(Value::as_str) == Some(request.pool.as_str())
            && v.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
    };
    if !args.in_place {
        // stdout carries the edited manifest; the preview goes to stderr.
        stderr::block(&view::preview(&prepared.impact, &ctx.stderr_style), false);
        let text = match ctx.format {
            Format::Json => crate::escape::json_pretty(&prepared.edited)? + "\n",
            _ => manifest::to_yaml(&prepared.edited),
        };
        emit(&text)?;
        return Ok(0);
    }
    let path = locate(paths, &is_pool)?;
    let read = read_unchanged(&path, &pool.raw, &is_pool)?;
    let rewritten = manifest::splice_rewritten(&read.text, &path, &is_pool, &prepared.edited)?
        .ok_or_else(|| input(format!("{path}: cannot find the document of pool {} to edit", request.pool)))?;
    if let Some(note) = manifest::uncommented_note(&path, &rewritten.uncommented) {
        warn_line!("{note}");
    }
    let edited = rewritten.text;
    let write = args.dry_run == DryRun::None;
    // On a terminal a file is not rewritten unasked either; without one the named file is the
    // user's instruction (the preview is printed, the change is in the repository's diff).
    let ask = write && !args.yes && ctx.interactive;
    if ask {
        stderr::block(&view::preview(&prepared.impact, &ctx.style), ctx.style.color);
        if !Dialoguer.confirm(&format!("Rewrite {path} with this change to ciliumpodippool {}?", request.pool))? {
            return crate::commands::steps::declined();
        }
    }
    let mut file = path.clone();
    if write {
        // A symlinked manifest is edited at its target; the message names both.
        // Only if it is still what was read (the answer may have taken a while).
        file = atomic::commit(vec![atomic::stage_edit(read.read.as_ref().expect("a path"), edited.as_bytes())?])?.remove(0);
    }
    let outcome = Outcome { written: write, resource_version: None, conflicts: 0, file: Some(file), previewed: ask };
    ctx.record(&result_text(ctx, &snapshot.origin, &prepared, args.dry_run, outcome))?;
    Ok(0)
}

/// The text of `path` to edit, read once more, now remembering what was read (`fingerprint`).
/// Its pool document must still be the one analysed (`raw`, read with the snapshot, maybe a
/// guided flow ago): else the edit would write back the pool as it was then.
fn read_unchanged(path: &str, raw: &Value, is_pool: &dyn Fn(&Value) -> bool) -> Result<files::read::TextFile> {
    let file = files::read::read(&[path.to_string()])?.remove(0);
    let documents = manifest::parse(&file.text, path)?;
    let now = documents.iter().flat_map(pool::pool_objects).find(|v| is_pool(v));
    if now != Some(raw) {
        return Err(error::condition(format!("{path} changed since it was read: run again")));
    }
    Ok(file)
}

/// The file (not stdin) holding the pool document.
fn locate(paths: &[String], is_pool: &dyn Fn(&Value) -> bool) -> Result<String> {
    let holds = |v: &Value| pool::pool_objects(v).into_iter().any(is_pool);
    let loaded = files::read::load(paths)?;
    files::read::refuse_duplicates(&loaded)?;
    let file = loaded.into_iter().find(|f| f.documents.iter().any(holds)).map(|f| f.name);
    match file {
        Some(name) if name == "-" => Err(input("--in-place cannot rewrite standard input; pass the manifest's path with -f")),
        Some(name) => Ok(name),
        None => Err(input("no file in -f holds the pool document")),
    }
}

fn prepare(snapshot: &Snapshot, request: &Request, dialect: Dialect, force: bool) -> Result<Prepared> {
    reserve::prepare(snapshot, &request.pool, dialect, &request.change, request.cidr.as_deref(), force)
        .map_err(|e| input(format!("{e}; nothing was written")))
}

/// What stdout gets once the change is done: the JSON/YAML document, or the preview (when not
/// already shown) and a kubectl-style line.
fn result_text(ctx: &Context, origin: &crate::model::Origin, prepared: &Prepared, dry_run: DryRun, outcome: Outcome) -> String {
    let dry_run = match dry_run {
        DryRun::None => "none",
        DryRun::Client => "client",
        DryRun::Server => "server",
    };
    render::output(&view::Edited { origin, prepared, dry_run, outcome }, ctx.format, &ctx.style)
}

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
async fn live_edit(args: &ReserveArgs, ctx: &Context, cluster: &Cluster, mut snapshot: Snapshot, request: &Request) -> Result<i32> {
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
    if args.dry_run == DryRun::Client {
        let outcome =
            Outcome { written: false, resource_version: Some(planned.version.clone()), conflicts: 0, file: None, previewed: false };
        ctx.record(&result_text(ctx, &snapshot.origin, &planned.prepared, args.dry_run, outcome))?;
        return Ok(0);
    }
    if args.dry_run == DryRun::None && !confirmed(args, ctx, &Dialoguer, &request.pool)? {
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

/// Asks before writing (see [`crate::commands::steps::confirm`]).
fn confirmed(args: &ReserveArgs, ctx: &Context, prompter: &dyn Prompter, pool: &str) -> Result<bool> {
    let refusal = format!(
        "refusing to change ciliumpodippool {pool} without confirmation: not on a terminal; pass --yes (or --dry-run to preview); nothing was written"
    );
    crate::commands::steps::confirm(ctx, args.yes, prompter, &format!("Write this change to ciliumpodippool {pool}?"), &refusal)
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

/// The guided flow for a terminal: pick pool → pick CIDR → type a range (validated against the
/// pool on entry, impact shown by the caller) — confirmation follows as for any write. `None`
/// when the user cancels a picker or the range prompt. `offline`: manifests are edited, and
/// v2alpha1 manifests cannot hold reserved ranges, so such pools are not offered (a note says
/// which and why before the first question).
pub fn guided(prompter: &dyn Prompter, snapshot: &Snapshot, args: &ReserveArgs, offline: bool) -> Result<Option<Request>> {
    let report = crate::allocator::analyze(snapshot);
    let named: Vec<&Pool> = match &args.pool {
        Some(name) => {
            require_pools(snapshot, std::slice::from_ref(name))?;
            snapshot.pools.iter().filter(|p| &p.name == name).collect()
        }
        None => snapshot.pools.iter().collect(),
    };
    if named.is_empty() {
        return Err(input("no CiliumPodIPPools found"));
    }
    let (pools, alpha): (Vec<&Pool>, Vec<&Pool>) = named.into_iter().partition(|p| !(offline && p.dialect == Dialect::V2alpha1));
    if let Some(first) = alpha.first()
        && pools.is_empty()
    {
        return Err(offline_dialect(first, snapshot.crd.as_ref()).expect_err("a v2alpha1 pool is refused"));
    }
    if !alpha.is_empty() {
        let names: Vec<&str> = alpha.iter().map(|p| p.name.as_str()).collect();
        prompter.note(&format!(
            "not offered: {} (cilium.io/v2alpha1 manifests cannot hold reserved ranges; convert them first with kubectl ciliumpool migrate -f FILE)",
            names.join(", ")
        ));
    }
    let Some(pool) = pick_pool(prompter, &report, &pools)? else { return Ok(None) };
    let Some(cidr) = pick_cidr(prompter, &report, pool)? else { return Ok(None) };
    let cidr = &cidr;
    let dialect = if pool.dialect == Dialect::V2alpha1 { Dialect::UpstreamV2 } else { pool.dialect };
    let validate = |text: &str| -> Result<(), String> {
        let range = reserve::parse_range(text)?;
        reserve::prepare(snapshot, &pool.name, dialect, &Change::Reserve(range), Some(cidr), args.force).map(|_| ())
    };
    let Some(text) = prompter.text(&format!("Range to reserve in {cidr} (A-B, A..B, IP or CIDR)"), &validate)? else { return Ok(None) };
    let range = reserve::parse_range(&text).map_err(input)?;
    Ok(Some(Request { pool: pool.name.clone(), change: Change::Reserve(range), cidr: Some(cidr.clone()) }))
}

/// A picker figure, or `?` when the input cannot show it (no CiliumNodes, hidden reservations).
fn shown(known: bool, figure: impl std::fmt::Display) -> String {
    if known { figure.to_string() } else { "?".to_string() }
}

/// The pool to edit: the only one, or the one picked (each shown with its blocks allocated).
fn pick_pool<'a>(prompter: &dyn Prompter, report: &Report, pools: &[&'a Pool]) -> Result<Option<&'a Pool>> {
    if let [only] = pools {
        return Ok(Some(only));
    }
    let items: Vec<String> = pools
        .iter()
        .map(|p| {
            let figures: Vec<String> = report
                .pool(&p.name)
                .into_iter()
                .flat_map(|r| r.families.iter())
                .map(|f| {
                    let allocatable = f.allocated_blocks + f.free_blocks;
                    let (allocated, allocatable) =
                        (shown(f.allocation_known, f.allocated_blocks), shown(f.reservations_known, allocatable));
                    format!("{} {allocated}/{allocatable} blocks allocated", f.family)
                })
                .collect();
            format!("{} ({}; {})", p.name, p.dialect.name(), figures.join(", "))
        })
        .collect();
    Ok(prompter.select("Pool", &items)?.map(|choice| pools[choice]))
}

/// The CIDR of `pool` to reserve in: the only one, or the one picked (each with its blocks).
fn pick_cidr(prompter: &dyn Prompter, report: &Report, pool: &Pool) -> Result<Option<String>> {
    let cidrs: Vec<(crate::model::Family, String)> =
        pool.families.iter().flat_map(|f| f.cidrs.iter().map(move |c| (f.family, c.original.clone()))).collect();
    if cidrs.is_empty() {
        return Err(input(format!("pool {} has no CIDRs", pool.name)));
    }
    let items: Vec<String> = cidrs
        .iter()
        .map(|(family, cidr)| {
            let fam = report.pool(&pool.name).and_then(|r| r.family(*family));
            let c = fam.and_then(|f| f.cidrs.iter().find(|c| &c.cidr == cidr).map(|c| (f, c)));
            c.map_or(cidr.clone(), |(f, c)| {
                let (nodes, reservations) = (f.allocation_known, f.reservations_known);
                format!(
                    "{cidr} ({} free, {} withheld, {} allocated of {} blocks)",
                    shown(nodes && reservations, c.free_blocks),
                    shown(reservations, c.withheld_blocks),
                    shown(nodes, c.allocated_blocks),
                    c.capacity_blocks
                )
            })
        })
        .collect();
    let choice = match items.len() {
        1 => Some(0),
        _ => prompter.select("CIDR", &items)?,
    };
    Ok(choice.map(|choice| cidrs[choice].1.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::Scripted;
    use clap::Parser;
    use serde_json::json;
    use std::cell::RefCell;

    fn snapshot() -> Snapshot {
        Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
                "spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24,
                    "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.254", "end": "10.40.255.254"}]}]}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "red"},
                "spec": {"ipv4": {"cidrs": ["10.50.0.0/16"], "maskSize": 24}}}),
        ])
    }

    fn args(extra: &[&str]) -> ReserveArgs {
        let cli = crate::cli::Cli::parse_from([&["kubectl-ciliumpool", "reserve-range"], extra].concat());
        match cli.command {
            crate::cli::Command::ReserveRange(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn guided_flow_picks_pool_and_cidr_and_revalidates_ranges() {
        let script = Scripted {
            selections: RefCell::new(vec![Some(0), Some(1)]),
            texts: RefCell::new(vec!["10.40.0.1".to_string(), "nonsense".into(), "10.41.0.0-10.41.0.15".into()]),
            ..Default::default()
        };
        // Read from files with one CiliumNode: allocation is known.
        let mut snap = snapshot();
        snap.nodes = Snapshot::from_objects(vec![json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.40.1.0/24"]}]}}}})])
        .nodes;
        snap.set_origin(crate::model::Origin { kind: "files", ..Default::default() });
        let request = guided(&script, &snap, &args(&[]), true).unwrap();
        let expected = Request {
            pool: "blue".into(),
            change: Change::Reserve(reserve::parse_range("10.41.0.0-10.41.0.15").unwrap()),
            cidr: Some("10.41.0.0/16".into()),
        };
        assert_eq!(request, Some(expected));
        let asked = script.asked.borrow();
        assert!(asked[0].starts_with("Pool: blue (upstream-v2; ipv4 1/511 blocks allocated) | red"), "{asked:?}");
        assert!(asked[1].contains("10.40.0.0/16 (254 free, 1 withheld, 1 allocated of 256 blocks)"), "{asked:?}");
        let refused = script.refused.borrow();
        assert_eq!(refused.len(), 2, "outside the chosen CIDR, then unparsable: {refused:?}");
        assert!(refused[0].contains("not inside the chosen CIDR"));
        // Files without CiliumNodes cannot show what is allocated, nor so what is free.
        let mut no_nodes = snapshot();
        no_nodes.set_origin(crate::model::Origin { kind: "files", ..Default::default() });
        let script = Scripted { selections: RefCell::new(vec![Some(0), None]), ..Default::default() };
        assert_eq!(guided(&script, &no_nodes, &args(&[]), true).unwrap(), None);
        let asked = script.asked.borrow();
        assert!(asked[0].starts_with("Pool: blue (upstream-v2; ipv4 ?/511 blocks allocated) | red"), "{asked:?}");
        assert!(asked[1].contains("10.40.0.0/16 (? free, 1 withheld, ? allocated of 256 blocks)"), "{asked:?}");
        // Cancelling a picker ends the flow without a request.
        let cancel = Scripted { selections: RefCell::new(vec![None]), ..Default::default() };
        assert_eq!(guided(&cancel, &snapshot(), &args(&[]), true).unwrap(), None);
    }

    #[test]
    fn confirmation_rules() {
        let not_tty = Context::plain(crate::source::Input::Files(Vec::new()));
        let err = confirmed(&args(&["blue", "10.40.0.1"]), &not_tty, &Scripted::default(), "blue").unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        assert!(confirmed(&args(&["blue", "10.40.0.1", "--yes"]), &not_tty, &Scripted::default(), "blue").unwrap());
        let tty = Context { interactive: true, ..not_tty };
        let no = Scripted { confirmations: RefCell::new(vec![false]), ..Default::default() };
        assert!(!confirmed(&args(&["blue", "10.40.0.1"]), &tty, &no, "blue").unwrap());
    }

    #[test]
    fn arguments_become_requests() {
        assert_eq!(request_from_args(&args(&["blue"])).unwrap(), None);
        let drain = request_from_args(&args(&["blue", "--drain", "10.41.0.0/16"])).unwrap().unwrap();
        assert_eq!(drain.change, Change::Drain("10.41.0.0/16".into()));
        let err = request_from_args(&args(&["blue", "10.0.0.x"])).unwrap_err();
        assert_eq!((crate::error::exit_code(&err), err.to_string()), (2, "invalid range: \"10.0.0.x\" is not an IP address".to_string()));
        assert!(
            crate::cli::Cli::try_parse_from(["kubectl-ciliumpool", "reserve-range", "blue", "10.0.0.1", "--drain", "10.0.0.0/8"]).is_err()
        );
        assert_eq!(args(&["blue", "--dry-run", "10.40.0.1"]).dry_run, DryRun::Client);
        assert_eq!(args(&["blue", "10.40.0.1", "--dry-run=server"]).dry_run, DryRun::Server);
    }
}
