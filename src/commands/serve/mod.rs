//! `serve`: the figures of `usage` as a Prometheus scrape target. The cluster is watched (the
//! `usage --watch` machinery, `source::watch`); a change is re-analysed at most once a second and
//! its metric families kept, so a scrape only encodes the last ones (`serve/http.rs`). Readiness and
//! the exporter's own metrics follow the watches: state older than `--stale-after` is never served
//! as fresh (docs/metrics.md). A fleet (`--context A,B`, `--all-contexts`) is each cluster followed
//! on its own, its series under a `cluster` label: one stale cluster leaves the others fresh.

mod http;

use crate::allocator::fleet::Member;
use crate::cli::ServeArgs;
use crate::cluster::read::{Cluster, Layout};
use crate::cluster::reflector::backoff;
use crate::cluster::watch::{STALL_WATCH_TIMEOUT, SourceHealth, Watch, WatchOptions};
use crate::commands::context::Context;
use crate::render::metrics::{self, Encoding, Family, Options, Sample, Type};
use crate::source::{ConnectOptions, Input};
use anyhow::Result;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// What each cluster served looks like now, shared with the HTTP server.
pub struct State {
    started: Instant,
    stale_after: Duration,
    clusters: Vec<Followed>,
    /// A fleet's problems between clusters (Cluster Mesh checks), from every cluster's last
    /// snapshot; served only while every cluster is ready (no `cluster` label).
    fleet: Option<FleetFigures>,
    /// Fleet checks started so far: a check started before the one kept is dropped.
    fleet_checks: u64,
    /// The pool series as each encoding last wrote them (OpenMetrics, then 0.0.4): a scrape
    /// encodes only the exporter's own series, unless an analysis or a change of readiness came
    /// since (a 1,000-node exposition is thousands of samples; a scrape should cost a copy).
    encoded: [Option<Encoded>; 2],
}

/// The pool series of every ready cluster in one encoding, and which clusters were ready then.
struct Encoded {
    ready: Vec<bool>,
    text: String,
}

/// The fleet problem families and the check they came from.
struct FleetFigures {
    families: Vec<Family>,
    check: u64,
}

/// One cluster served: its last figures and how its watches are doing.
struct Followed {
    /// Its context in a fleet (`serve --context A,B`, `--all-contexts`): the `cluster` label of its
    /// series. None when one cluster is served, whose exposition has no `cluster` label.
    name: Option<String>,
    figures: Option<Figures>,
    /// In a fleet, the snapshot of the last analysis, for the checks between clusters.
    snapshot: Option<Arc<crate::model::Snapshot>>,
    health: Vec<SourceHealth>,
    /// The first read (which decides where each source is read from) failed this many times.
    setup_errors: u64,
    updates: u64,
}

/// One analysis: its metric families (encoded when scraped, with the other clusters' in a fleet).
struct Figures {
    families: Vec<Family>,
    at: SystemTime,
    took: Duration,
}

/// What a scrape or a probe sees now.
pub struct Status {
    pub ready: bool,
    /// Why not ready.
    pub reason: Option<String>,
    /// Seconds since the state was last complete and current (0 while it is).
    staleness: f64,
}

impl State {
    fn new(stale_after: Duration, names: Vec<Option<String>>) -> State {
        let clusters = names
            .into_iter()
            .map(|name| Followed { name, figures: None, snapshot: None, health: Vec::new(), setup_errors: 0, updates: 0 })
            .collect();
        State { started: Instant::now(), stale_after, clusters, fleet: None, fleet_checks: 0, encoded: [None, None] }
    }

    /// Ready when every cluster is; the reason names each cluster that is not (in a fleet).
    pub fn status(&self) -> Status {
        let statuses: Vec<(Option<&str>, Status)> = self.clusters.iter().map(|c| (c.name.as_deref(), self.status_of(c))).collect();
        let reasons: Vec<String> = statuses
            .iter()
            .filter_map(|(name, s)| {
                Some(name.map_or(String::new(), |n| format!("cluster {}: ", crate::escape::Field(n))) + s.reason.as_deref()?)
            })
            .collect();
        let staleness = statuses.iter().map(|(_, s)| s.staleness).fold(0.0, f64::max);
        let reason = (!reasons.is_empty()).then(|| reasons.join("; "));
        Status { ready: reason.is_none(), reason, staleness }
    }

    fn status_of(&self, cluster: &Followed) -> Status {
        let now = Instant::now();
        let health = &cluster.health;
        let synced = cluster.figures.is_some() && !health.is_empty() && health.iter().all(|h| h.listed);
        // Stale since the oldest last proof of a failing source, or since the start when never synced.
        let staleness = match synced {
            true => health.iter().map(|h| h.staleness(now)).max().unwrap_or_default().as_secs_f64(),
            false => now.duration_since(self.started).as_secs_f64(),
        };
        let reason = if !synced {
            Some("the first full sync of the watches is not done".to_string())
        } else if staleness > self.stale_after.as_secs_f64() {
            let down: Vec<String> = health.iter().filter_map(|h| Some(format!("{} ({})", h.resource, h.reason.as_deref()?))).collect();
            Some(format!(
                "stale: no proof that the state is current for {staleness:.0}s (more than --stale-after {}): {}",
                humantime::format_duration(self.stale_after),
                down.join(", ")
            ))
        } else {
            None
        };
        Status { ready: reason.is_none(), reason, staleness }
    }

    /// The exposition a scrape gets: each cluster's last figures unless stale, then the
    /// exporter's own metrics, computed now; in a fleet every series has its `cluster` label.
    pub fn exposition(&mut self, encoding: Encoding) -> String {
        let statuses: Vec<Status> = self.clusters.iter().map(|c| self.status_of(c)).collect();
        let ready: Vec<bool> = statuses.iter().map(|s| s.ready).collect();
        let slot = &mut self.encoded[encoding as usize];
        if slot.as_ref().is_none_or(|kept| kept.ready != ready) {
            let mut families = Vec::new();
            for (cluster, &ready) in self.clusters.iter().zip(&ready) {
                if let (Some(figures), true) = (&cluster.figures, ready) {
                    metrics::add_labelled(&mut families, cluster.name.as_deref(), figures.families.clone());
                }
            }
            // Between clusters only from fresh state: every cluster ready.
            if let (Some(fleet), true) = (&self.fleet, ready.iter().all(|&r| r)) {
                families.extend(fleet.families.iter().cloned());
            }
            *slot = Some(Encoded { ready, text: metrics::encode(&families, encoding) });
        }
        let mut exporter = Vec::new();
        for (cluster, status) in self.clusters.iter().zip(&statuses) {
            metrics::add_labelled(&mut exporter, cluster.name.as_deref(), cluster.exporter_families(status));
        }
        let mut out = slot.as_ref().map(|kept| kept.text.clone()).unwrap_or_default();
        out.push_str(&metrics::encode(&exporter, encoding));
        if encoding == Encoding::OpenMetrics {
            out.push_str(metrics::EOF);
        }
        out
    }
}

impl Followed {
    fn exporter_families(&self, status: &Status) -> Vec<Family> {
        let resource = |h: &SourceHealth| vec![("resource", h.resource.clone())];
        let mut families = vec![
            Family::new(
                "ciliumpool_exporter_ready",
                Type::Gauge,
                "1 when the first full sync is done and no watch has been failing longer than --stale-after; pool figures are served only then.",
                vec![Sample::new(vec![], u8::from(status.ready))],
            ),
            Family::new(
                "ciliumpool_exporter_staleness_seconds",
                Type::Gauge,
                "Seconds since the last proof (an event, a bookmark, a completed listing, a watch closed at its timeout) that the watched state is current, while a watch is failing; 0 while every watch is healthy.",
                vec![Sample::new(vec![], status.staleness)],
            ),
            Family::new(
                "ciliumpool_exporter_updates",
                Type::Counter,
                "Analyses of a changed cluster state.",
                vec![Sample::new(vec![], self.updates)],
            ),
            Family::new(
                "ciliumpool_exporter_setup_errors",
                Type::Counter,
                "Failed attempts of the first read, which decides where each source is read from.",
                vec![Sample::new(vec![], self.setup_errors)],
            ),
            Family::new(
                "ciliumpool_exporter_sync_errors",
                Type::Counter,
                "Failed list and watch requests and streams, by resource.",
                self.health.iter().map(|h| Sample::new(resource(h), h.errors)).collect(),
            ),
            Family::new(
                "ciliumpool_exporter_watch_restarts",
                Type::Counter,
                "Watches restarted (watched again or relisted, after a backoff) after a failure, by resource.",
                self.health.iter().map(|h| Sample::new(resource(h), h.restarts)).collect(),
            ),
            Family::new(
                "ciliumpool_exporter_watch_up",
                Type::Gauge,
                "1 while the resource's watch holds a complete listing and is not failing.",
                self.health.iter().map(|h| Sample::new(resource(h), u8::from(h.listed && h.failing_since.is_none()))).collect(),
            ),
        ];
        if let Some(figures) = &self.figures {
            let at = figures.at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
            families.push(Family::new(
                "ciliumpool_exporter_last_update_timestamp_seconds",
                Type::Gauge,
                "When the figures were last computed (Unix time).",
                vec![Sample::new(vec![], at)],
            ));
            families.push(Family::new(
                "ciliumpool_exporter_analysis_duration_seconds",
                Type::Gauge,
                "How long the last analysis took (snapshot, allocator and metric families).",
                vec![Sample::new(vec![], figures.took.as_secs_f64())],
            ));
        }
        families
    }
}

type Shared = Arc<Mutex<State>>;

fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// The layout of the first complete read; its objects are dropped (the watches list again).
async fn first_read(cluster: &Cluster, state: &Shared, index: usize) -> Layout {
    let mut failures = 0u32;
    loop {
        match cluster.read().await {
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
