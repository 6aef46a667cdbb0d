//! What `serve` knows: each cluster's last figures and how its watches are doing, shared with
//! the HTTP server; readiness and the exposition a scrape gets are computed from it.

use crate::cluster::watch::SourceHealth;
use crate::render::metrics::{self, Encoding, ExporterFigures, Family, SourceFigures};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// What each cluster served looks like now, shared with the HTTP server.
pub struct State {
    pub(super) started: Instant,
    pub(super) stale_after: Duration,
    pub(super) clusters: Vec<Followed>,
    /// A fleet's problems between clusters (Cluster Mesh checks), from every cluster's last
    /// snapshot; served only while every cluster is ready (no `cluster` label).
    pub(super) fleet: Option<FleetFigures>,
    /// Fleet checks started so far: a check started before the one kept is dropped.
    pub(super) fleet_checks: u64,
    /// The pool series as each encoding last wrote them (OpenMetrics, then 0.0.4): a scrape
    /// encodes only the exporter's own series, unless an analysis or a change of readiness came
    /// since (a 1,000-node exposition is thousands of samples; a scrape should cost a copy).
    pub(super) encoded: [Option<Encoded>; 2],
}

/// The pool series of every ready cluster in one encoding, and which clusters were ready then.
pub(super) struct Encoded {
    ready: Vec<bool>,
    text: String,
}

/// The fleet problem families and the check they came from.
pub(super) struct FleetFigures {
    pub(super) families: Vec<Family>,
    pub(super) check: u64,
}

/// One cluster served: its last figures and how its watches are doing.
pub(super) struct Followed {
    /// Its context in a fleet (`serve --context A,B`, `--all-contexts`): the `cluster` label of its
    /// series. None when one cluster is served, whose exposition has no `cluster` label.
    pub(super) name: Option<String>,
    pub(super) figures: Option<Figures>,
    /// In a fleet, the snapshot of the last analysis, for the checks between clusters.
    pub(super) snapshot: Option<Arc<crate::model::Snapshot>>,
    pub(super) health: Vec<SourceHealth>,
    /// The first read (which decides where each source is read from) failed this many times.
    pub(super) setup_errors: u64,
    pub(super) updates: u64,
    /// The API server it is read from, and the other contexts of that server (not followed).
    pub(super) server: Option<String>,
    pub(super) aliases: Vec<String>,
    /// Its Cluster Mesh identity (`cluster-id`, `cluster-name`), once its first read gave one.
    pub(super) identity: Option<(u32, String)>,
    /// An earlier context reaches the same cluster (the same identity): this one is not followed,
    /// has no series and does not count for readiness.
    pub(super) same_as: Option<usize>,
}

/// The clusters followed: not those whose context reaches the cluster of an earlier one.
pub(super) fn followed(clusters: &[Followed]) -> impl Iterator<Item = &Followed> {
    clusters.iter().filter(|c| c.same_as.is_none())
}

/// One analysis: its metric families (encoded when scraped, with the other clusters' in a fleet).
pub(super) struct Figures {
    pub(super) families: Vec<Family>,
    pub(super) at: SystemTime,
    pub(super) took: Duration,
}

/// What a scrape or a probe sees now.
pub struct Status {
    pub ready: bool,
    /// Why not ready.
    pub reason: Option<String>,
    /// Seconds since the state was last proved complete and current.
    staleness: f64,
}

impl State {
    pub(super) fn new(stale_after: Duration, names: Vec<Option<String>>) -> State {
        let clusters = names
            .into_iter()
            .map(|name| Followed {
                name,
                figures: None,
                snapshot: None,
                health: Vec::new(),
                setup_errors: 0,
                updates: 0,
                server: None,
                aliases: Vec::new(),
                identity: None,
                same_as: None,
            })
            .collect();
        State { started: Instant::now(), stale_after, clusters, fleet: None, fleet_checks: 0, encoded: [None, None] }
    }

    /// Several clusters, or one reached by several contexts: the checks between clusters run (and
    /// each cluster's last snapshot is kept for them).
    pub(super) fn is_fleet(&self) -> bool {
        self.clusters.len() > 1 || self.clusters.iter().any(|c| !c.aliases.is_empty())
    }

    /// Ready when every cluster is; the reason names each cluster that is not (in a fleet).
    pub fn status(&self) -> Status {
        let statuses: Vec<(Option<&str>, Status)> = followed(&self.clusters).map(|c| (c.name.as_deref(), self.status_of(c))).collect();
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
        // Since the oldest last proof of a source, or since the start when never synced; stale once
        // a failing source's passes --stale-after.
        let since = |of: fn(&SourceHealth, Instant) -> Duration| health.iter().map(|h| of(h, now)).max().unwrap_or_default().as_secs_f64();
        let (staleness, failing) = match synced {
            true => (since(SourceHealth::staleness), since(SourceHealth::failing_staleness)),
            false => (now.duration_since(self.started).as_secs_f64(), 0.0),
        };
        let reason = if !synced {
            Some("the first full sync of the watches is not done".to_string())
        } else if failing > self.stale_after.as_secs_f64() {
            let down: Vec<String> = health.iter().filter_map(|h| Some(format!("{} ({})", h.resource, h.reason.as_deref()?))).collect();
            Some(format!(
                "stale: no proof that the state is current for {failing:.0}s (more than --stale-after {}): {}",
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
        let followed: Vec<&Followed> = followed(&self.clusters).collect();
        let statuses: Vec<Status> = followed.iter().map(|c| self.status_of(c)).collect();
        let ready: Vec<bool> = statuses.iter().map(|s| s.ready).collect();
        let slot = &mut self.encoded[encoding as usize];
        if slot.as_ref().is_none_or(|kept| kept.ready != ready) {
            let mut families = Vec::new();
            for (cluster, &ready) in followed.iter().zip(&ready) {
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
        for (cluster, status) in followed.iter().zip(&statuses) {
            metrics::add_labelled(&mut exporter, cluster.name.as_deref(), metrics::exporter_families(&cluster.exporter_figures(status)));
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
    /// What the exporter's own families show of this cluster (`render::metrics::exporter`).
    fn exporter_figures(&self, status: &Status) -> ExporterFigures {
        let sources = self
            .health
            .iter()
            .map(|h| SourceFigures {
                resource: h.resource.clone(),
                errors: h.errors,
                restarts: h.restarts,
                up: h.listed && h.failing_since.is_none(),
            })
            .collect();
        let last_analysis = self.figures.as_ref().map(|figures| {
            (figures.at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64(), figures.took.as_secs_f64())
        });
        ExporterFigures {
            ready: status.ready,
            staleness: status.staleness,
            updates: self.updates,
            setup_errors: self.setup_errors,
            sources,
            last_analysis,
        }
    }
}

pub(super) type Shared = Arc<Mutex<State>>;

pub(super) fn lock(state: &Shared) -> std::sync::MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}
