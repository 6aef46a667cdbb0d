//! `serve`: the figures of `usage` as a Prometheus scrape target. The cluster is watched (the
//! `usage --watch` machinery, `source::watch`); a change is re-analysed at most once a second and
//! its metric families kept, so a scrape only encodes the last ones (`serve/http.rs`). Readiness and
//! the exporter's own metrics follow the watches: state older than `--stale-after` is never served
//! as fresh (docs/metrics.md). A fleet (`--context A,B`, `--all-contexts`) is each cluster followed
//! on its own, its series under a `cluster` label: one stale cluster leaves the others fresh.

mod http;
mod state;

pub use state::State;
use state::{Figures, FleetFigures, Shared, lock};

use crate::allocator::fleet::Member;
use crate::cli::ServeArgs;
use crate::cluster::backoff::backoff;
use crate::cluster::read::{Cluster, Layout};
use crate::cluster::watch::{STALL_WATCH_TIMEOUT, Watch, WatchOptions};
use crate::commands::context::Context;
use crate::render::metrics::{self, Options};
use crate::source::{ConnectOptions, Input};
use anyhow::Result;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

pub async fn run(args: ServeArgs, ctx: &Context) -> Result<i32> {
    let clusters = clusters(&args, ctx)?;
    for name in clusters.iter().filter_map(|(name, _)| name.as_deref()).filter(|name| crate::escape::has_unsafe(name)) {
        // Labelled as tables show it (render::metrics::add_labelled), never left out unsaid.
        warn_line!(
            "warning: context {name}: the name holds characters a terminal would act on; its series are labelled cluster=\"{}\" (escaped as tables show it)",
            crate::escape::field(name)
        );
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| crate::error::input(format!("--listen {}: cannot listen there ({e}); choose another address or port", args.listen)))?;
    let names = clusters.iter().map(|(name, _)| name.clone()).collect();
    let state: Shared = Arc::new(Mutex::new(State::new(args.stale_after, names)));
    let (shutdown, _) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(http::serve(listener, state.clone(), shutdown.clone(), http::Limits::new()));
    let budget = tokio::spawn(crate::cluster::memory::watch_budget(args.memory_budget));
    warn_line!("serving /metrics, /healthz and /readyz on http://{}", args.listen);
    let interrupted = crate::commands::steps::interrupted();
    tokio::pin!(interrupted);
    // Each cluster is followed on its own: one that cannot be read makes only its series stale.
    let follows = clusters.iter().enumerate().map(|(i, (_, options))| follow(&args, options, ctx.namespace.as_deref(), &state, i));
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

/// The clusters to serve: the one of the flags (no name), or each context of a fleet by name.
fn clusters(args: &ServeArgs, ctx: &Context) -> Result<Vec<(Option<String>, ConnectOptions)>> {
    let mut clusters = match &ctx.fleet {
        Some(fleet) => crate::source::fleet::connections(fleet)?.into_iter().map(|(name, options)| (Some(name), options)).collect(),
        None => {
            let Input::Cluster(options) = &ctx.input else { unreachable!("Context::from_cli refuses serve with -f") };
            vec![(None, options.clone())]
        }
    };
    for (_, options) in &mut clusters {
        options.max_event_bytes = args.max_event_size;
    }
    Ok(clusters)
}

/// Connects, reads once to learn the layout (retried with backoff while the cluster cannot be
/// read), then follows the watches, re-analysing each settled change into cluster `index`.
async fn follow(args: &ServeArgs, options: &ConnectOptions, namespace: Option<&str>, state: &Shared, index: usize) -> Result<()> {
    let cluster = Cluster::connect(options, namespace).await?;
    let layout = first_read(&cluster, state, index).await;
    let watch_options = WatchOptions {
        watch_timeout: Some(STALL_WATCH_TIMEOUT),
        streaming_lists: true,
        max_objects: args.max_watch_objects,
        log_every_step: true,
    };
    let mut watch = Watch::start(&cluster, &layout, watch_options);
    let mut dirty = false;
    loop {
        // A failing watch wakes the loop too, so that readiness follows it.
        let changed = watch.step().await?;
        dirty |= changed;
        lock(state).clusters[index].health = watch.health().to_vec();
        if dirty && watch.listed() {
            watch.settle(DEBOUNCE).await;
            update(args, &watch, &layout, state, index).await;
            dirty = false;
        }
    }
}

/// The layout of the first read, which asks for one object of each list (`Cluster::layout`):
/// the watches list them.
async fn first_read(cluster: &Cluster, state: &Shared, index: usize) -> Layout {
    let mut failures = 0u32;
    loop {
        match cluster.layout().await {
            Ok((snapshot, layout)) => {
                crate::commands::steps::warn_unread(&snapshot);
                return layout;
            }
            Err(error) => {
                failures += 1;
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
    let fleet = lock(state).clusters.len() > 1;
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
            state.clusters.iter().map(|c| Some((c.name.clone().unwrap_or_default(), c.snapshot.clone()?))).collect();
        state.fleet_checks += 1;
        (members, state.fleet_checks)
    };
    let Some(members) = members else { return };
    let checked = tokio::task::spawn_blocking(move || {
        let members: Vec<Member> = members.iter().map(|(name, snapshot)| Member { name, snapshot }).collect();
        let problems = crate::allocator::fleet::check(&members);
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
