//! The exporter's own families (`serve`): readiness, staleness, and how the analyses and the
//! watches of a followed cluster are doing. Names and labels are a contract (docs/metrics.md).

use super::{Family, Sample, Type};

/// What `serve` knows of one cluster it follows, as its own families show it.
pub struct ExporterFigures {
    pub ready: bool,
    /// Seconds since the state was last complete and current (0 while it is).
    pub staleness: f64,
    pub updates: u64,
    pub setup_errors: u64,
    /// Each watched resource, in watch order.
    pub sources: Vec<SourceFigures>,
    /// The last analysis: when (Unix seconds) and how long it took (seconds); None before the first.
    pub last_analysis: Option<(f64, f64)>,
}

/// One watched resource.
pub struct SourceFigures {
    pub resource: String,
    pub errors: u64,
    pub restarts: u64,
    /// The watch holds a complete listing and is not failing.
    pub up: bool,
}

/// Per resource: name, type, help, and the value.
type SourceFigure = (&'static str, Type, &'static str, fn(&SourceFigures) -> u64);

const SOURCE_FIGURES: [SourceFigure; 3] = [
    ("ciliumpool_exporter_sync_errors", Type::Counter, "Failed list and watch requests and streams, by resource.", |s| s.errors),
    (
        "ciliumpool_exporter_watch_restarts",
        Type::Counter,
        "Watches restarted (watched again or relisted, after a backoff) after a failure, by resource.",
        |s| s.restarts,
    ),
    ("ciliumpool_exporter_watch_up", Type::Gauge, "1 while the resource's watch holds a complete listing and is not failing.", |s| {
        u64::from(s.up)
    }),
];

/// The exporter's families of one followed cluster, in exposition order.
pub fn exporter_families(figures: &ExporterFigures) -> Vec<Family> {
    let one = |name, kind, help, value: String| Family::new(name, kind, help, vec![Sample::new(vec![], value)]);
    let mut families = vec![
        one(
            "ciliumpool_exporter_ready",
            Type::Gauge,
            "1 when the first full sync is done and no watch has been failing longer than --stale-after; pool figures are served only then.",
            u8::from(figures.ready).to_string(),
        ),
        one(
            "ciliumpool_exporter_staleness_seconds",
            Type::Gauge,
            "Seconds since the oldest of the watches' last proofs (an event, a bookmark, a completed listing, a watch closed at its timeout) that the watched state is current: it grows while a watch is silent.",
            figures.staleness.to_string(),
        ),
        one("ciliumpool_exporter_updates", Type::Counter, "Analyses of a changed cluster state.", figures.updates.to_string()),
        one(
            "ciliumpool_exporter_setup_errors",
            Type::Counter,
            "Failed attempts of the first read, which decides where each source is read from.",
            figures.setup_errors.to_string(),
        ),
    ];
    for (name, kind, help, value) in SOURCE_FIGURES {
        let samples = figures.sources.iter().map(|s| Sample::new(vec![("resource", s.resource.clone())], value(s))).collect();
        families.push(Family::new(name, kind, help, samples));
    }
    if let Some((at, took)) = figures.last_analysis {
        families.push(one(
            "ciliumpool_exporter_last_update_timestamp_seconds",
            Type::Gauge,
            "When the figures were last computed (Unix time).",
            at.to_string(),
        ));
        families.push(one(
            "ciliumpool_exporter_analysis_duration_seconds",
            Type::Gauge,
            "How long the last analysis took (snapshot, allocator and metric families).",
            took.to_string(),
        ));
    }
    families
}
