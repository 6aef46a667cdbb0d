//! `serve`: the figures of `usage` as a Prometheus scrape target. The cluster is watched (the
//! `usage --watch` machinery, `source::watch`); a change is re-analysed at most once a second and
//! its exposition kept, so a scrape only copies the last one (`serve/http.rs`). Readiness and the
//! exporter's own metrics follow the watches: state older than `--stale-after` is never served as
//! fresh (docs/metrics.md).

mod http;

use super::Context;
use crate::cli::ServeArgs;
use crate::render::metrics::{self, Encoding, Family, Options, Sample, Type};
use crate::source::Input;
use crate::source::cluster::{Cluster, Layout};
use crate::source::watch::{STALL_WATCH_TIMEOUT, SourceHealth, Watch, WatchOptions, backoff};
use anyhow::Result;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// The last computed exposition and how the watches are doing, shared with the HTTP server.
pub struct State {
    started: Instant,
    stale_after: Duration,
    figures: Option<Figures>,
    health: Vec<SourceHealth>,
    /// The first read (which decides where each source is read from) failed this many times.
    setup_errors: u64,
    updates: u64,
}

/// One analysis, encoded both ways.
struct Figures {
    openmetrics: String,
    prometheus: String,
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
    fn new(stale_after: Duration) -> State {
        State { started: Instant::now(), stale_after, figures: None, health: Vec::new(), setup_errors: 0, updates: 0 }
    }

    pub fn status(&self) -> Status {
        let now = Instant::now();
        let synced = self.figures.is_some() && !self.health.is_empty() && self.health.iter().all(|h| h.listed);
        // Down since: the oldest failure of a source, or the start when never synced.
        let since = if synced { self.health.iter().filter_map(|h| h.failing_since).min() } else { Some(self.started) };
        let staleness = since.map_or(0.0, |since| now.duration_since(since).as_secs_f64());
        let reason = if !synced {
            Some("the first full sync of the watches is not done".to_string())
        } else if staleness > self.stale_after.as_secs_f64() {
            let down: Vec<&str> = self.health.iter().filter(|h| h.failing_since.is_some()).map(|h| h.resource.as_str()).collect();
            Some(format!(
                "stale: the watches of {} have been failing for {staleness:.0}s (more than --stale-after {})",
                down.join(", "),
                humantime::format_duration(self.stale_after)
            ))
        } else {
            None
        };
        Status { ready: reason.is_none(), reason, staleness }
    }

    /// The exposition a scrape gets: the last figures unless stale, then the exporter's own
    /// metrics, computed now.
    pub fn exposition(&self, encoding: Encoding) -> String {
        let status = self.status();
        let mut out = String::new();
        if let (true, Some(figures)) = (status.ready, &self.figures) {
            out.push_str(match encoding {
                Encoding::OpenMetrics => &figures.openmetrics,
                Encoding::Prometheus => &figures.prometheus,
            });
        }
        out.push_str(&metrics::encode(&self.exporter_families(&status), encoding));
        if encoding == Encoding::OpenMetrics {
            out.push_str(metrics::EOF);
        }
        out
    }

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
                "Seconds since the watched state was last complete and current; 0 while every watch is healthy.",
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
                "Watches restarted with a fresh listing after a failure, by resource.",
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
                "How long the last analysis took (snapshot, allocator and encoding).",
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
    let Input::Cluster(options) = &ctx.input else { unreachable!("Context::from_cli refuses serve with -f") };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| crate::error::input(format!("--listen {}: cannot listen there ({e}); choose another address or port", args.listen)))?;
    let state: Shared = Arc::new(Mutex::new(State::new(args.stale_after)));
    let (shutdown, _) = tokio::sync::watch::channel(false);
    let server = tokio::spawn(http::serve(listener, state.clone(), shutdown.clone()));
    warn_line!("serving /metrics, /healthz and /readyz on http://{}", args.listen);
    let interrupted = super::interrupted();
    tokio::pin!(interrupted);
    let result = tokio::select! {
        _ = &mut interrupted => Ok(()),
        result = follow(&args, options, ctx.namespace.as_deref(), &state) => result,
    };
    // Stop accepting, let in-flight scrapes finish.
    let _ = shutdown.send(true);
    let _ = server.await;
    result.map(|()| 0)
}

/// Connects, reads once to learn the layout (retried with backoff while the cluster cannot be
/// read), then follows the watches, re-analysing each settled change.
async fn follow(args: &ServeArgs, options: &crate::source::ConnectOptions, namespace: Option<&str>, state: &Shared) -> Result<()> {
    let cluster = Cluster::connect(options, namespace).await?;
    let layout = first_read(&cluster, state).await;
    let watch_options = WatchOptions { watch_timeout: Some(STALL_WATCH_TIMEOUT), streaming_lists: true };
    let mut watch = Watch::start(&cluster, &layout, watch_options);
    let mut dirty = false;
    loop {
        // A failing watch wakes the loop too, so that readiness follows it.
        let changed = watch.step().await?;
        dirty |= changed;
        lock(state).health = watch.health().to_vec();
        if dirty && watch.listed() {
            watch.settle(DEBOUNCE).await;
            update(args, &watch, &layout, state).await;
            dirty = false;
        }
    }
}

/// The layout of the first complete read; its objects are dropped (the watches list again).
async fn first_read(cluster: &Cluster, state: &Shared) -> Layout {
    let mut failures = 0u32;
    loop {
        match cluster.read().await {
            Ok((snapshot, layout)) => {
                super::warn_unread(&snapshot);
                return layout;
            }
            Err(error) => {
                failures += 1;
                lock(state).setup_errors += 1;
                warn_line!("warning: cannot read the cluster yet (retrying): {error:#}");
                tokio::time::sleep(backoff(failures)).await;
            }
        }
    }
}

/// Analyses the watched state and keeps its exposition. The allocator runs off the runtime's
/// thread, so that scrapes are answered meanwhile.
async fn update(args: &ServeArgs, watch: &Watch, layout: &Layout, state: &Shared) {
    let start = Instant::now();
    let snapshot = watch.snapshot(layout);
    let nodes = args.node_metrics;
    let encoded = tokio::task::spawn_blocking(move || {
        let report = crate::allocator::analyze(&snapshot);
        let pools: Vec<_> = report.pools.iter().collect();
        let families = metrics::families(&report, &pools, &snapshot.origin, Options { nodes });
        (metrics::encode(&families, Encoding::OpenMetrics), metrics::encode(&families, Encoding::Prometheus))
    })
    .await;
    let Ok((openmetrics, prometheus)) = encoded else {
        warn_line!("warning: the analysis failed; the previous figures stay");
        return;
    };
    let mut state = lock(state);
    state.figures = Some(Figures { openmetrics, prometheus, at: SystemTime::now(), took: start.elapsed() });
    state.updates += 1;
    state.health = watch.health().to_vec();
}
