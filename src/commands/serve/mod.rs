//! `serve`: the figures of `usage` as a Prometheus scrape target. The cluster is watched (the
//! `usage --watch` machinery, `cluster::watch`); a change is re-analysed at most once a second and
//! its metric families kept, so a scrape only encodes the last ones (`serve/http.rs`). Readiness and
//! the exporter's own metrics follow the watches: state older than `--stale-after` is never served
//! as fresh (docs/metrics.md). A fleet (`--context A,B`, `--all-contexts`) is each cluster followed
//! on its own, its series under a `cluster` label: one stale cluster leaves the others fresh.
//! Contexts that reach one cluster are followed once, as the first of them (`twins.rs`).

mod http;
mod state;
mod twins;

pub use state::State;
use state::{Figures, FleetFigures, Shared, lock};
use twins::{Claim, Decision};

use crate::allocator::fleet::Member;
use crate::cli::ServeArgs;
use crate::cluster::backoff::backoff;
use crate::cluster::read::{Cluster, Layout};
use crate::cluster::watch::{STALL_WATCH_TIMEOUT, Watch, WatchOptions};
use crate::commands::context::Context;
use crate::render::metrics::{self, Options};
use crate::source::fleet::Planned;
use crate::source::{ConnectOptions, Input};
use anyhow::Result;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

pub async fn run(args: ServeArgs, ctx: &Context) -> Result<i32> {
    let (fleet, clusters) = clusters(&args, ctx)?;
    let names: Vec<Option<String>> = clusters.iter().map(|c| fleet.then(|| c.name.clone())).collect();
    for name in names.iter().flatten().filter(|name| crate::escape::has_unsafe(name)) {
        // Labelled as tables show it (render::metrics::add_labelled), never left out unsaid.
        warn_line!(
            "warning: context {name}: the name holds characters a terminal would act on; its series are labelled cluster=\"{}\" (escaped as tables show it)",
            crate::escape::field(name)
        );
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| crate::error::input(format!("--listen {}: cannot listen there ({e}); choose another address or port", args.listen)))?;
    let state: Shared = Arc::new(Mutex::new(State::new(args.stale_after, names)));
    for (followed, planned) in lock(&state).clusters.iter_mut().zip(&clusters) {
        (followed.server, followed.aliases) = (planned.server.clone(), planned.aliases.clone());
    }
    let (claims, _) = tokio::sync::watch::channel(vec![Claim::Reading; clusters.len()]);
    let (shutdown, _) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(http::serve(listener, state.clone(), shutdown.clone(), http::Limits::new()));
    let budget = tokio::spawn(crate::cluster::memory::watch_budget(args.memory_budget));
    warn_line!("serving /metrics, /healthz and /readyz on http://{}", args.listen);
    let interrupted = crate::commands::steps::interrupted();
    tokio::pin!(interrupted);
    // Each cluster is followed on its own: one that cannot be read makes only its series stale.
    let follows =
        clusters.iter().enumerate().map(|(i, planned)| follow(&args, &planned.options, ctx.namespace.as_deref(), (&state, &claims), i));
    let result = tokio::select! {
        _ = &mut interrupted => Ok(()),
        result = futures::future::try_join_all(follows) => result.map(|_| ()),
    };
    // Stop accepting, let in-flight scrapes finish.
    budget.abort();
    let _ = shutdown.send(true);
    let _ = server.await;
    result.map(|()| 0)
}

/// The clusters to serve: the one of the flags (false: no name), or each API server of a fleet
/// (true), named after the first of its contexts.
fn clusters(args: &ServeArgs, ctx: &Context) -> Result<(bool, Vec<Planned>)> {
    let (fleet, mut clusters) = match &ctx.fleet {
        Some(fleet) => (true, crate::source::fleet::plan(fleet)?),
        None => {
            let Input::Cluster(options) = &ctx.input else { unreachable!("Context::from_cli refuses serve with -f") };
            (false, vec![Planned { name: String::new(), options: options.clone(), server: None, aliases: Vec::new() }])
        }
    };
    for planned in &mut clusters {
        planned.options.max_event_bytes = args.max_event_size;
    }
    Ok((fleet, clusters))
}

/// Every context's claim on its cluster's identity (`twins.rs`), shared by the follows.
type Claims = tokio::sync::watch::Sender<Vec<Claim>>;

/// Connects, reads once to learn the layout (retried with backoff while the cluster cannot be
/// read), then follows the watches, re-analysing each settled change into cluster `index`. A
/// context that reaches the cluster of an earlier one stops there, or when the earlier one's
/// first read succeeds later: its watches are dropped, the earlier one's series stand for both.
async fn follow(
    args: &ServeArgs,
    options: &ConnectOptions,
    namespace: Option<&str>,
    shared: (&Shared, &Claims),
    index: usize,
) -> Result<()> {
    let (state, claims) = shared;
    let cluster = Cluster::connect(options, namespace).await?;
    let layout = first_read(&cluster, shared, index).await;
    let mut claimed = claims.subscribe();
    if let Decision::SameAs(first) = decided(&mut claimed, index, |d| *d != Decision::Wait).await {
        same_as(state, index, first).await;
        return Ok(());
    }
    let watch_options = WatchOptions {
        watch_timeout: Some(STALL_WATCH_TIMEOUT),
        streaming_lists: args.streaming_lists,
        max_objects: args.max_watch_objects,
        log_every_step: true,
    };
    let mut watch = Watch::start(&cluster, &layout, watch_options);
    let (mut dirty, mut analysed) = (false, false);
    loop {
        // A failing watch wakes the loop too, so that readiness follows it.
        let changed = tokio::select! {
            changed = watch.step() => changed?,
            decision = decided(&mut claimed, index, |d| matches!(d, Decision::SameAs(_))) => {
                drop(watch);
                let Decision::SameAs(first) = decision else { unreachable!("decided waits for SameAs") };
                same_as(state, index, first).await;
                return Ok(());
            }
        };
        dirty |= changed;
        lock(state).clusters[index].health = watch.health().to_vec();
        if dirty && watch.listed() {
            // The first analysis as soon as every source is listed (readiness waits for it);
            // later changes settle first, so that a burst of them is one analysis.
            if analysed {
                watch.settle(DEBOUNCE).await;
            }
            update(args, &watch, &layout, state, index).await;
            (dirty, analysed) = (false, true);
        }
    }
}

/// The layout of the first read, which asks for one object of each big list (`Cluster::layout`):
/// the watches list them. Its `cilium-config` tells the cluster's identity: claimed for `index`
/// (`twins.rs`).
async fn first_read(cluster: &Cluster, (state, claims): (&Shared, &Claims), index: usize) -> Layout {
    let mut failures = 0u32;
    loop {
        match cluster.layout().await {
            Ok((snapshot, layout)) => {
                crate::commands::steps::warn_unread(&snapshot);
                let identity = crate::source::fleet::mesh_identity(&snapshot).map(|(id, name)| (id, name.to_string()));
                lock(state).clusters[index].identity = identity.clone();
                claims.send_modify(|claims| claims[index] = Claim::Read(identity));
                return layout;
            }
            Err(error) => {
                failures += 1;
                claims.send_if_modified(|claims| std::mem::replace(&mut claims[index], Claim::Retrying) == Claim::Reading);
                let which = {
                    let followed = &mut lock(state).clusters[index];
                    followed.setup_errors += 1;
                    followed.name.as_deref().map_or(String::new(), |n| format!(" {n}"))
                };
                warn_line!("warning: cannot read the cluster{which} yet (retrying): {error:#}");
                tokio::time::sleep(backoff(failures)).await;
            }
        }
    }
}

/// Analyses the watched state and keeps its metric families. The allocator runs off the
/// runtime's thread, so that scrapes are answered meanwhile.
async fn update(args: &ServeArgs, watch: &Watch, layout: &Layout, state: &Shared, index: usize) {
    let start = Instant::now();
    let snapshot = watch.snapshot(layout);
    let nodes = args.node_metrics;
    // A fleet keeps each cluster's snapshot for the checks between clusters.
    let fleet = lock(state).is_fleet();
    let analysed = tokio::task::spawn_blocking(move || {
        let report = crate::allocator::analyze(&snapshot);
        let pools: Vec<_> = report.pools.iter().collect();
        let families = metrics::families(&report, &pools, &snapshot.origin, Options { nodes, deleted_pools: true });
        drop(report);
        let kept = fleet.then(|| Arc::new(snapshot));
        crate::heap::release_freed();
        (families, kept)
    })
    .await;
    let Ok((families, kept)) = analysed else {
        warn_line!("warning: the analysis failed; the previous figures stay");
        return;
    };
    {
        let mut state = lock(state);
        state.encoded = [None, None];
        let followed = &mut state.clusters[index];
        followed.figures = Some(Figures { families, at: SystemTime::now(), took: start.elapsed() });
        followed.snapshot = kept;
        followed.updates += 1;
        followed.health = watch.health().to_vec();
    }
    if fleet {
        check_fleet(state).await;
    }
}

/// Re-runs the checks between the clusters of a fleet on their last snapshots (once each has
/// one) and keeps their families, unless a later check finished first.
async fn check_fleet(state: &Shared) {
    let (members, check) = {
        let mut state = lock(state);
        let members: Option<Vec<(String, Arc<crate::model::Snapshot>)>> =
            state::followed(&state.clusters).map(|c| Some((c.name.clone().unwrap_or_default(), c.snapshot.clone()?))).collect();
        state.fleet_checks += 1;
        (members.map(|m| (m, twins::problems(&state.clusters))), state.fleet_checks)
    };
    let Some((members, same)) = members else { return };
    let checked = tokio::task::spawn_blocking(move || {
        let members: Vec<Member> = members.iter().map(|(name, snapshot)| Member { name, snapshot }).collect();
        let mut problems = crate::allocator::fleet::check(&members);
        problems.extend(same);
        crate::allocator::fleet::sort(&mut problems);
        metrics::problem_families(problems.iter().map(|p| &p.problem), &metrics::FLEET_PROBLEMS)
    })
    .await;
    let Ok(families) = checked else { return };
    let mut state = lock(state);
    if state.fleet.as_ref().is_none_or(|kept| kept.check < check) {
        state.fleet = Some(FleetFigures { families, check });
        state.encoded = [None, None];
    }
}

/// Waits until the decision for context `index` is one `wanted` accepts.
async fn decided(claims: &mut tokio::sync::watch::Receiver<Vec<Claim>>, index: usize, wanted: fn(&Decision) -> bool) -> Decision {
    let decision = claims.wait_for(|claims| wanted(&twins::decide(claims, index))).await.map(|claims| twins::decide(&claims, index));
    match decision {
        Ok(decision) => decision,
        // The claims outlive the follows; never here.
        Err(_) => std::future::pending().await,
    }
}

/// Context `index` reaches the cluster of context `first` (the same identity): it is followed no
/// more, its series are withdrawn, and a warning names both; the checks between clusters then
/// count it as `fleet-same-cluster`.
async fn same_as(state: &Shared, index: usize, first: usize) {
    {
        let mut state = lock(state);
        let twin = &mut state.clusters[index];
        let followed = twin.figures.is_some() || !twin.health.is_empty();
        (twin.same_as, twin.figures, twin.snapshot, twin.health) = (Some(first), None, None, Vec::new());
        state.encoded = [None, None];
        // Those that were this one's twins are the earlier one's now (it took the cluster over).
        state.clusters.iter_mut().filter(|c| c.same_as == Some(index)).for_each(|c| c.same_as = Some(first));
        let owner = &state.clusters[first];
        let (id, name) = owner.identity.clone().unwrap_or_default();
        let names: Vec<&str> = owner.name.as_deref().into_iter().chain(twins::others(&state.clusters, first)).collect();
        let then = if followed { "; its first read came later, so the others' watches are stopped" } else { "" };
        warn_line!(
            "warning: contexts {} reach clusters with the same cluster-id {id} and cluster-name {name}: one cluster, followed once as {}{then}",
            names.join(", "),
            names[0]
        );
    }
    check_fleet(state).await;
}
