//! `migrate`: CiliumPodIPPool v2alpha1 → v2 in the cluster (plan, backup, apply, status,
//! finalize) or in manifests (`-f`). The decisions live in `crate::migrate`; this file reads,
//! asks, writes and reports.

mod offline;

use crate::cli::{DryRun, MigrateArgs};
use crate::cluster::client;
use crate::cluster::writes::{self, Permission, PoolViews, Replaced, RetryError, Target, Wording};
use crate::commands::context::Context;
use crate::commands::steps::destination;
use crate::error::{cluster, condition, input};
use crate::files::atomic;
use crate::migrate::convert::{V2_API_VERSION, V2ALPHA1_API_VERSION};
use crate::migrate::{self, Change, Plan, State, backup};
use crate::model::cilium::CiliumVersion;
use crate::model::crd::POOL_CRD_NAME;
use crate::model::{CrdInfo, Dialect};
use crate::render::migrate as view;
use crate::source::Input;
use crate::terminal::Dialoguer;
use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Attempts per object when the apiserver answers 409 Conflict (kube does not retry those).
const MAX_ATTEMPTS: usize = 5;
/// How to see whether a migration write that got no answer landed.
const STATUS_CHECK: &str = "check with `kubectl ciliumpool migrate --status`";

pub async fn run(args: MigrateArgs, ctx: &Context) -> Result<i32> {
    let options = match &ctx.input {
        Input::Files { paths, limits } => return offline::run(&args, paths, *limits, ctx),
        Input::Cluster(options) => options,
    };
    let conn = client::connect(options).await?;
    let live = ClusterView::read(&conn, args.chunk_size).await?;
    if args.status {
        let running = crate::cluster::cilium::version(&conn.client, &options.cilium_namespace).await.ok();
        return status(&live, running.as_ref(), ctx);
    }
    if args.finalize {
        return finalize(&args, &conn, &live, ctx).await;
    }
    apply(&args, &conn, live, ctx).await
}

/// Everything preflight reads: the CRD and the pools through both versions.
struct ClusterView {
    crd: CrdInfo,
    /// Who set the CRD's `status.storedVersions`, and when.
    stored_versions_written: Option<migrate::FieldWrite>,
    via_alpha: Vec<Value>,
    via_v2: Vec<Value>,
    plan: Plan,
}

impl ClusterView {
    async fn read(conn: &client::Connection, page_size: u32) -> Result<ClusterView> {
        let PoolViews { crd, crd_object, via_alpha, via_v2 } = PoolViews::read(conn, page_size).await?;
        let plan = migrate::plan(&crd, &via_alpha, &via_v2);
        Ok(ClusterView { stored_versions_written: migrate::stored_versions_write(&crd_object), crd, via_alpha, via_v2, plan })
    }
}

/// Whether [`confirm`] will ask or let the write go ahead (not refuse): only then is what leads
/// up to the question worth printing; off a terminal without --yes the refusal is the one line.
fn asks_or_writes(args: &MigrateArgs, ctx: &Context) -> bool {
    args.yes || ctx.interactive
}

/// Asks before writing (see [`crate::commands::steps::confirm`]); off a terminal, refuses with what would be
/// written (`action`, no question: a script's log reads as a refusal, not as a prompt).
fn confirm(args: &MigrateArgs, ctx: &Context, question: &str, action: &str) -> Result<bool> {
    // --finalize has no dry run (its plan is `--status`).
    let preview = if args.finalize { "--status" } else { "--dry-run=server" };
    let refusal =
        format!("refusing to {action} without confirmation: not on a terminal; pass --yes (or {preview} to preview); nothing was written");
    crate::commands::steps::confirm(ctx, args.yes, &Dialoguer, question, &refusal)
}

// --- plan and apply -------------------------------------------------------------------------

async fn apply(args: &MigrateArgs, conn: &client::Connection, mut live: ClusterView, ctx: &Context) -> Result<i32> {
    if let Some(reason) = &live.plan.blocked {
        print_plan(&live.plan, &BTreeMap::new(), ctx)?;
        return Err(condition(format!("{reason}; nothing was written")));
    }
    let writes = live.plan.writes();
    let mut needed = vec![Permission::pools("get"), Permission::pools("list")];
    if writes > 0 {
        needed.push(Permission::pools("update"));
    }
    if let Err(missing) = writes::require(conn, &needed).await {
        if args.dry_run != DryRun::None {
            live.plan.block_writes(&missing.to_string());
            print_plan(&live.plan, &BTreeMap::new(), ctx)?;
        }
        return Err(missing);
    }
    if args.dry_run != DryRun::None {
        return dry_run(args, conn, &live.plan, ctx).await;
    }
    if writes == 0 {
        ctx.human(&format!("Nothing to do: {}. No object was written.\n", view::counts_line(&live.plan)))?;
        return Ok(if warn_blocked(&live.plan) { 1 } else { 0 });
    }
    let backup_path = args.backup.clone().unwrap_or_else(default_backup_path);
    if backup_path.symlink_metadata().is_ok() {
        return Err(input(format!("backup file {} already exists; choose another --backup path", backup_path.display())));
    }
    if asks_or_writes(args, ctx) {
        warn_line!("{}", view::counts_line(&live.plan));
    }
    let question = format!(
        "Migrate {writes} CiliumPodIPPool(s) on {} to cilium.io/v2 (backup first to {})?",
        destination(conn),
        backup_path.display()
    );
    if !confirm(args, ctx, &question, &format!("migrate {writes} CiliumPodIPPool(s) to cilium.io/v2"))? {
        return crate::commands::steps::declined();
    }
    write_backup(&backup_path, conn, &live)?;
    warn_line!("backup written to {} (mode 0600)", backup_path.display());
    let outcomes = write_pools(conn, &live.plan, ctx).await?;
    summary(&outcomes, &live.plan, &backup_path, ctx)
}

/// `--dry-run`: the plan, and with `=server` what the API server says to each write; exit 1 when
/// the plan would write.
async fn dry_run(args: &MigrateArgs, conn: &client::Connection, plan: &Plan, ctx: &Context) -> Result<i32> {
    let mut server = BTreeMap::new();
    if args.dry_run == DryRun::Server {
        for pool in plan.pools.iter().filter(|p| p.state.writes()) {
            let outcome = match write_pool(conn, &pool.name, plan.dialect, true).await {
                WriteOutcome::Written(..) => "accepted".to_string(),
                other => other.describe(),
            };
            server.insert(pool.name.clone(), outcome);
        }
    }
    print_plan(plan, &server, ctx)?;
    // As `kubectl diff`: 1 when writes are pending, 0 when nothing would be written (`--status`
    // says 1 for the same plan); `--exit-code` is kept for the scripts that pass it.
    Ok(if plan.writes() > 0 { 1 } else { 0 })
}

/// Writes every pool the plan converts, one line each as it is written.
async fn write_pools(conn: &client::Connection, plan: &Plan, ctx: &Context) -> Result<Vec<(String, WriteOutcome)>> {
    let writes = plan.writes();
    let progress = if ctx.interactive {
        let style = indicatif::ProgressStyle::with_template("migrating [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> ");
        indicatif::ProgressBar::new(writes as u64).with_style(style)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let mut outcomes: Vec<(String, WriteOutcome)> = Vec::new();
    for pool in plan.pools.iter().filter(|p| p.state.writes()) {
        progress.set_message(pool.name.clone());
        let outcome = write_pool(conn, &pool.name, plan.dialect, false).await;
        // One line per pool as it is written, so a log shows how far an interrupted run got.
        progress.suspend(|| {
            ctx.record(&format!("{}\n", crate::escape::field(&format!("ciliumpodippool.cilium.io/{} {}", pool.name, outcome.describe()))))
        })?;
        outcomes.push((pool.name.clone(), outcome));
        progress.inc(1);
    }
    progress.finish_and_clear();
    Ok(outcomes)
}

/// The summary line after the writes, and the exit code: 3 when a pool failed, 1 when some are
/// blocked.
fn summary(outcomes: &[(String, WriteOutcome)], plan: &Plan, backup_path: &Path, ctx: &Context) -> Result<i32> {
    let mut out = String::new();
    let count = |f: fn(&WriteOutcome) -> bool| outcomes.iter().filter(|(_, o)| f(o)).count();
    let failed = count(|o| matches!(o, WriteOutcome::Failed(_)));
    out.push_str(&format!(
        "\nSummary: {} written ({} converted), {} already migrated, {} gone, {failed} failed; {} conflict(s) resolved in favour of v2; backup {}\n",
        count(|o| matches!(o, WriteOutcome::Written(_, _))),
        count(|o| matches!(o, WriteOutcome::Written(Change::Reshape, _))),
        count(|o| matches!(o, WriteOutcome::AlreadyMigrated)),
        count(|o| matches!(o, WriteOutcome::Gone)),
        plan.count(State::Conflict),
        backup_path.display()
    ));
    ctx.human(&out)?;
    if failed > 0 {
        return Err(cluster(format!(
            "{failed} pool(s) could not be migrated (see above); rerun `kubectl ciliumpool migrate` to complete the migration"
        )));
    }
    if warn_blocked(plan) {
        return Ok(1);
    }
    warn_line!("next: `kubectl ciliumpool migrate --status`, then `kubectl ciliumpool migrate --finalize`");
    Ok(0)
}

/// Names the pools `migrate` cannot write (invalid objects); true when there are any.
fn warn_blocked(plan: &Plan) -> bool {
    let blocked: Vec<_> = plan.pools.iter().filter(|p| p.state == State::Blocked).collect();
    for pool in &blocked {
        warn_line!("warning: ciliumpodippool.cilium.io/{} not migrated: {}", pool.name, pool.detail);
    }
    if !blocked.is_empty() {
        warn_line!("{} pool(s) blocked: fix them through cilium.io/v2 and rerun `kubectl ciliumpool migrate`", blocked.len());
    }
    !blocked.is_empty()
}

fn print_plan(plan: &Plan, server: &BTreeMap<String, String>, ctx: &Context) -> Result<()> {
    ctx.show(&view::PlanView { plan, server })
}

fn default_backup_path() -> PathBuf {
    let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y%m%dT%H%M%SZ");
    PathBuf::from(format!("ciliumpool-backup-{now}.yaml"))
}

fn write_backup(path: &Path, conn: &client::Connection, live: &ClusterView) -> Result<()> {
    let header = format!(
        "kubectl-ciliumpool migrate backup of {} CiliumPodIPPool(s) from {}, taken {}.\n\
         v2 dialect: {}; storedVersions: {:?}.\n\
         Each section holds every pool as read through one API version, server-set metadata removed.\n\
         Restore: cut one section out (see docs/migration.md, \"Restoring from the backup\") and `kubectl apply -f` it.",
        live.via_v2.len().max(live.via_alpha.len()),
        conn.server,
        k8s_openapi::jiff::Timestamp::now(),
        live.plan.dialect.name(),
        live.crd.stored_versions.clone().unwrap_or_default(),
    );
    let text = backup::render(&header, &[(V2ALPHA1_API_VERSION, &live.via_alpha), (V2_API_VERSION, &live.via_v2)]);
    atomic::write_new_private(path, text.as_bytes())
        .with_context(|| format!("cannot write the backup {}; nothing was migrated", path.display()))
}

/// What happened to one pool.
enum WriteOutcome {
    Written(Change, usize),
    AlreadyMigrated,
    Gone,
    Failed(String),
}

impl WriteOutcome {
    fn describe(&self) -> String {
        match self {
            WriteOutcome::Written(change, attempts) => {
                let what = if *change == Change::Reshape { "converted" } else { "rewritten" };
                let retries = if *attempts > 1 { format!(" after {} conflict(s)", attempts - 1) } else { String::new() };
                format!("{what}{retries}")
            }
            WriteOutcome::AlreadyMigrated => "already migrated".to_string(),
            WriteOutcome::Gone => "deleted meanwhile (skipped)".to_string(),
            WriteOutcome::Failed(reason) => format!("failed: {reason}"),
        }
    }
}

/// Converts, annotates and replaces one pool through v2 (re-read and converted again after a
/// conflict). One replace per object, so an interruption never leaves an object half-migrated.
async fn write_pool(conn: &client::Connection, name: &str, dialect: Dialect, dry_run: bool) -> WriteOutcome {
    let mut change = Change::None;
    let written = writes::replace_retrying(&Target::pools(&conn.client, dry_run), name, MAX_ATTEMPTS, |current| {
        let converted = migrate::to_v2(&current, dialect).map_err(anyhow::Error::msg)?;
        change = converted.change;
        Ok((converted.change != Change::None).then_some(converted.object))
    })
    .await;
    let what = format!("ciliumpodippools.cilium.io/{name}");
    match written {
        Ok(Replaced::Written { attempts, .. }) => WriteOutcome::Written(change, attempts),
        Ok(Replaced::Unchanged) => WriteOutcome::AlreadyMigrated,
        Err(RetryError::Read(kube::Error::Api(status)) | RetryError::Write(kube::Error::Api(status))) if status.code == 404 => {
            WriteOutcome::Gone
        }
        Err(failed) => {
            WriteOutcome::Failed(failed.into_error(conn, &Wording { read: &what, write: &what, check: STATUS_CHECK }).to_string())
        }
    }
}

// --- status and finalize --------------------------------------------------------------------

fn status(live: &ClusterView, running: Option<&CiliumVersion>, ctx: &Context) -> Result<i32> {
    // Pools migrated by storage (no annotation) were migrated by the time storedVersions became [v2].
    let storage_migrated_at =
        live.stored_versions_written.as_ref().filter(|_| live.plan.storage == migrate::StorageState::V2).map(|w| w.time.as_str());
    let writers = migrate::alpha_writers(&live.via_v2, storage_migrated_at);
    let mut verdict = migrate::verdict(&live.crd, &live.plan, &writers);
    // Cilium before 1.21 reads its pools through v2alpha1 alone: v2alpha1 stays while it runs.
    if let Some(running) = running.filter(|v| v.serves_v2_pools() == Some(false)) {
        verdict.pending.push(format!(
            "the running Cilium ({}, {} in namespace {}) reads its pools as cilium.io/v2alpha1: upgrade it to 1.21 or later first",
            running.image, running.source, running.namespace
        ));
        verdict.safe_to_remove_v2alpha1 = false;
    }
    let storage = migrate::Storage::new(&live.crd, &live.plan, live.stored_versions_written.clone());
    verdict.notes.extend(storage.undated_writers_note(&writers));
    if ctx.verbose {
        // The downgrade note in full: one line by default, the paragraph under -v.
        let short = migrate::status::downgrade_note(live.crd.cluster_dialect());
        let full = migrate::status::downgrade_caveat(live.crd.cluster_dialect());
        verdict.notes.iter_mut().filter(|n| **n == short).for_each(|n| *n = full.to_string());
    }
    ctx.show(&view::Status { crd: &live.crd, plan: &live.plan, storage: &storage, writers: &writers, verdict: &verdict })?;
    Ok(if verdict.safe_to_remove_v2alpha1 { 0 } else { 1 })
}

/// What `--finalize` warns about before it asks: the downgrade caveat in one line, in full under -v.
fn finalize_warning(dialect: Dialect, verbose: bool) -> String {
    let caveat = if verbose { migrate::status::downgrade_caveat(dialect).to_string() } else { migrate::status::downgrade_note(dialect) };
    format!(
        "Finalizing removes v2alpha1 from the CRD's status.storedVersions; after that, v2alpha1 can be dropped from the CRD. Before dropping it — {caveat}."
    )
}

async fn finalize(args: &MigrateArgs, conn: &client::Connection, live: &ClusterView, ctx: &Context) -> Result<i32> {
    if let Some(reason) = &live.plan.blocked {
        return Err(condition(format!("{reason}; nothing was written")));
    }
    let stored = live.crd.stored_versions.clone().unwrap_or_default();
    if stored == ["v2"] {
        ctx.human("status.storedVersions is already [v2]; nothing to do.\n")?;
        return Ok(0);
    }
    let unmigrated = live.plan.pools.len() - live.plan.count(State::Migrated);
    if unmigrated > 0 {
        return Err(condition(format!(
            "{unmigrated} pool(s) are not migrated yet; run `kubectl ciliumpool migrate` first (see `--status`); nothing was written"
        )));
    }
    writes::require(conn, &[Permission::crd_status_update()]).await?;
    if asks_or_writes(args, ctx) {
        warn_line!("{}", finalize_warning(live.plan.dialect, ctx.verbose));
    }
    let question = format!("Set status.storedVersions of {POOL_CRD_NAME} from [{}] to [v2] on {}?", stored.join(", "), destination(conn));
    if !confirm(args, ctx, &question, &format!("set status.storedVersions of {POOL_CRD_NAME} to [v2]"))? {
        return crate::commands::steps::declined();
    }
    let written = writes::replace_retrying(&Target::crd_status(&conn.client), POOL_CRD_NAME, MAX_ATTEMPTS, |mut crd| {
        if CrdInfo::decode(&crd).versions.iter().any(|v| v.storage && v.name != "v2") {
            return Err(cluster("the CRD's storage version changed away from v2 meanwhile; nothing was written"));
        }
        crd["status"]["storedVersions"] = json!(["v2"]);
        Ok(Some(crd))
    })
    .await;
    match written {
        Ok(_) => {
            ctx.human(&format!(
                "customresourcedefinition.apiextensions.k8s.io/{POOL_CRD_NAME} storedVersions [{}] -> [v2]\n",
                stored.join(", ")
            ))?;
            warn_line!("next: once no client writes v2alpha1, set v2alpha1 `served: false` in the CRD, then remove it (docs/migration.md)");
            Ok(0)
        }
        Err(failed) => {
            let read = format!("customresourcedefinitions/{POOL_CRD_NAME}");
            let write = format!("the status of {read}");
            Err(failed.into_error(conn, &Wording { read: &read, write: &write, check: STATUS_CHECK }))
        }
    }
}
