//! Change notifications for `usage --watch`: one reflector per source (pools, CiliumNodes, and
//! pods/CiliumEndpoints when readable). Each keeps the current objects, so a change rebuilds the
//! snapshot from memory instead of re-listing a large cluster every second. Pods and CiliumEndpoints
//! are kept decoded, read from only the fields the snapshot uses (docs/performance.md).

use super::backoff::{FailureLine, FailureLog};
use super::decoded::{Decoded, NAMES, Workload};
use super::list::FromListed;
use super::list::{Listed, typed_value};
use super::read::{Cluster, Layout, Objects};
use super::reflector::{Follow, Rules, STALL_MARGIN, Signal, Sink};
use super::slim_store::SlimStore;
use crate::model::workload::{Endpoint, Names, Pod, Workloads};
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use kube::api::DynamicObject;
use kube::core::{DynamicResourceScope, Resource};
use kube::runtime::reflector::{Store, store::Writer};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// One watched resource and the objects its reflector holds.
struct Watched<K: Resource + Clone + 'static>
where
    K::DynamicType: Clone + Eq + Hash,
{
    resource: K::DynamicType,
    store: Store<K>,
}

impl Watched<DynamicObject> {
    fn objects(&self) -> Vec<Value> {
        self.store.state().iter().map(|object| typed_value(object.as_ref().clone(), &self.resource)).collect()
    }

    fn listed(&self) -> Listed {
        Listed { items: self.objects(), ..Listed::default() }
    }
}

/// Pods and endpoints of the stores, as a snapshot takes them.
fn workloads(pods: Vec<Pod>, endpoints: Vec<Endpoint>) -> Listed {
    Listed { workloads: Workloads { pods, endpoints, names: Names::default() }, ..Listed::default() }
}

/// The longest watch request the server may hold open (kube's default, below the apiserver's cap).
const MAX_WATCH_SECONDS: u64 = 290;

/// How long the server holds each watch open when the caller follows the cluster for long
/// (`serve`, `usage --watch`). A watch open this long plus `reflector::STALL_MARGIN` without an
/// event, a bookmark or the server's close is a stall: so a silent or frozen API server is
/// noticed within [`STALL_AFTER`], not after the 290 s the server would otherwise hold a watch.
pub const STALL_WATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest a followed source goes without a proof of freshness before it is taken for stalled.
pub const STALL_AFTER: Duration = STALL_WATCH_TIMEOUT.saturating_add(STALL_MARGIN);

/// The most objects one watched resource may hold unless `serve --max-watch-objects` says
/// otherwise: more than the pods of the largest clusters Kubernetes supports (150,000), and a
/// bound on what a flood of new objects can cost (docs/metrics.md, "Memory").
pub const MAX_WATCH_OBJECTS: usize = 200_000;

/// How each watch is run.
#[derive(Clone, Copy, Debug)]
pub struct WatchOptions {
    /// The server ends each watch request after this long (the follow then re-watches); a watch
    /// silent for this long plus a margin is a stall. `None`: derived from `--request-timeout`,
    /// else 290 s.
    pub watch_timeout: Option<Duration>,
    /// Initial listing through a streaming list (WatchList, `sendInitialEvents`), falling back to
    /// paginated lists for a source whose server refuses it.
    pub streaming_lists: bool,
    /// The most objects each resource's store may hold.
    pub max_objects: usize,
    /// Logs for an operator (`serve`): a line per resource when it starts failing and per
    /// backoff step. Otherwise (a person watching `usage --watch`): one line when the watch stops
    /// following the cluster, one when it follows it again.
    pub log_every_step: bool,
}

impl Default for WatchOptions {
    fn default() -> WatchOptions {
        WatchOptions { watch_timeout: None, streaming_lists: false, max_objects: MAX_WATCH_OBJECTS, log_every_step: false }
    }
}

/// `--request-timeout` also bounds each read of a watch stream, so a quiet watch would fail at
/// it. Asking the server to end each watch a second earlier makes the follow simply re-watch.
fn watch_timeout(per_read: Option<Duration>, options: WatchOptions) -> Duration {
    let server_bound = per_read.map(|t| t.as_secs().saturating_sub(1));
    let asked = options.watch_timeout.map(|t| t.as_secs());
    let seconds = [server_bound, asked].into_iter().flatten().min().unwrap_or(MAX_WATCH_SECONDS);
    Duration::from_secs(seconds.clamp(1, MAX_WATCH_SECONDS))
}

/// How one watched source is doing, for readiness and the exporter's own metrics.
#[derive(Clone, Debug)]
pub struct SourceHealth {
    /// The resource, as RBAC names it (`ciliumnodes.cilium.io`).
    pub resource: String,
    /// Its store holds a complete listing (the last (re)listing finished).
    pub listed: bool,
    /// Since when it has been failing (cleared by the next proof of freshness).
    pub failing_since: Option<Instant>,
    /// The last proof that its store is current: an event, a bookmark, a completed listing, or
    /// the server closing a watch at the timeout it was asked for.
    pub proof: Instant,
    /// Why it is failing, while it is.
    pub reason: Option<String>,
    /// Failed requests and streams so far.
    pub errors: u64,
    /// Watches restarted (re-watched or relisted) after a failure.
    pub restarts: u64,
    /// The initial listing is a streaming list (false once the server refused one).
    pub streaming: bool,
}

impl SourceHealth {
    /// How long since the store was last known to be current: it grows from the last proof while
    /// a watch is silent (a healthy one proves itself at least every [`STALL_AFTER`]).
    pub fn staleness(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.proof)
    }

    /// [`SourceHealth::staleness`] while the source is failing, else zero: what makes it stale
    /// (a quiet watch is not stale before it is found stalled).
    pub fn failing_staleness(&self, now: Instant) -> Duration {
        self.failing_since.map_or(Duration::ZERO, |_| self.staleness(now))
    }
}

pub struct Watch {
    pools: Watched<DynamicObject>,
    nodes: Watched<DynamicObject>,
    pods: Option<SlimStore<Decoded<Pod>>>,
    endpoints: Option<SlimStore<Decoded<Endpoint>>>,
    signals: SelectAll<BoxStream<'static, Signal>>,
    /// Per source, in signal index order.
    health: Vec<SourceHealth>,
    log_every_step: bool,
    /// Per source: what of its failures is logged (`log_every_step`).
    logs: Vec<FailureLog>,
}

/// Starts one watch into kube's reflector store.
fn start<K>(cluster: &Cluster, resource: K::DynamicType, rules: Rules, signals: &mut Signals, health: &mut Vec<SourceHealth>) -> Watched<K>
where
    K: Resource<Scope = DynamicResourceScope> + Clone + Debug + DeserializeOwned + FromListed + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    let writer = Writer::new(resource.clone());
    let store = writer.as_reader();
    follow(cluster, resource.clone(), rules, writer, signals, health);
    Watched { resource, store }
}

/// Starts one watch of pods or endpoints into a [`SlimStore`].
fn start_slim<T: Workload>(
    cluster: &Cluster,
    rules: Rules,
    signals: &mut Signals,
    health: &mut Vec<SourceHealth>,
) -> SlimStore<Decoded<T>> {
    let store = SlimStore::default();
    follow::<Decoded<T>, _>(cluster, (), rules, store.clone(), signals, health);
    store
}

type Signals = SelectAll<BoxStream<'static, Signal>>;

/// Follows one resource into `sink`; its events become signals for the source with the next index.
fn follow<K, S>(cluster: &Cluster, resource: K::DynamicType, rules: Rules, sink: S, signals: &mut Signals, health: &mut Vec<SourceHealth>)
where
    K: Resource<Scope = DynamicResourceScope> + Clone + Debug + DeserializeOwned + FromListed + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    S: Sink<K>,
{
    let source = signals.len();
    let name = K::plural(&resource);
    let group = K::group(&resource);
    let name = if group.is_empty() { name.into_owned() } else { format!("{name}.{group}") };
    health.push(SourceHealth {
        resource: name,
        listed: false,
        failing_since: None,
        proof: Instant::now(),
        reason: None,
        errors: 0,
        restarts: 0,
        streaming: rules.streaming,
    });
    let namespace = cluster.namespace_of(&K::plural(&resource));
    let follow = Follow::new(cluster.api::<K>(&resource), &resource, namespace, rules, sink, source);
    signals.push(futures::stream::unfold(follow, Follow::next).boxed());
}

impl Watch {
    /// Starts watching every source the first read could use. Pools and CiliumNodes are kept
    /// whole; the stores that hold every pod and endpoint of the cluster keep them decoded
    /// ([`Decoded`]).
    pub fn start(cluster: &Cluster, layout: &Layout, options: WatchOptions) -> Watch {
        let mut signals = SelectAll::new();
        let mut health = Vec::new();
        let rules = Rules {
            watch_timeout: watch_timeout(cluster.connection.deadlines.per_read(), options),
            streaming: options.streaming_lists,
            max_objects: options.max_objects,
        };
        let pools = start(cluster, layout.pools.clone(), rules, &mut signals, &mut health);
        let nodes = start(cluster, layout.nodes.clone(), rules, &mut signals, &mut health);
        let pods = layout.readable_pods().map(|_| start_slim::<Pod>(cluster, rules, &mut signals, &mut health));
        let endpoints = layout.readable_endpoints().map(|_| start_slim::<Endpoint>(cluster, rules, &mut signals, &mut health));
        let logs = vec![FailureLog::default(); health.len()];
        Watch { pools, nodes, pods, endpoints, signals, health, log_every_step: options.log_every_step, logs }
    }

    /// Waits for the next event of any source and records it; true when it was a change.
    pub async fn step(&mut self) -> anyhow::Result<bool> {
        let signal = self.signals.next().await.ok_or_else(|| crate::error::cluster("every watch stream ended"))?;
        Ok(self.record(signal))
    }

    /// Every source's store holds a complete listing.
    pub fn listed(&self) -> bool {
        self.health.iter().all(|h| h.listed)
    }

    /// How each source is doing.
    pub fn health(&self) -> &[SourceHealth] {
        &self.health
    }

    /// Keeps applying events for `quiet` (debounce: a burst of changes gives one re-render).
    pub async fn settle(&mut self, quiet: Duration) {
        let deadline = tokio::time::sleep(quiet);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                _ = &mut deadline => return,
                Some(signal) = self.signals.next() => { self.record(signal); }
            }
        }
    }

    /// Notes what a signal says; true when it was a change.
    fn record(&mut self, signal: Signal) -> bool {
        let now = Instant::now();
        match signal {
            Signal::Changed { source, listed } => {
                self.proved(source, now);
                self.health[source].listed |= listed;
                true
            }
            Signal::Proof { source } => {
                self.proved(source, now);
                false
            }
            Signal::Failed { source, failure, step, wait, refused_streaming } => {
                let cluster_was_failing = self.failing();
                let health = &mut self.health[source];
                if self.log_every_step {
                    // One line per backoff step, not per request (`FailureLog`).
                    let then = match self.logs[source].failed(step, now) {
                        FailureLine::None => None,
                        FailureLine::Line => Some(""),
                        FailureLine::LastLine => Some("; from now on quietly, until it recovers"),
                    };
                    if let Some(then) = then {
                        warn_line!(
                            "warning: the watch of {} failed: {failure}; retrying in {:.1}s (failure {step} in a row{then})",
                            health.resource,
                            wait.as_secs_f64()
                        );
                    }
                } else if !cluster_was_failing {
                    warn_line!(
                        "warning: the watch of {} stalled or failed ({failure}); following the cluster again as soon as the API server answers (retrying every 1-4 s)",
                        health.resource
                    );
                }
                health.errors += 1;
                health.restarts += 1;
                health.failing_since.get_or_insert(now);
                health.reason = Some(failure.to_string());
                health.streaming &= !refused_streaming;
                false
            }
        }
    }

    /// A source has failed since its last proof.
    fn failing(&self) -> bool {
        self.health.iter().any(|h| h.failing_since.is_some())
    }

    /// A proof that `source`'s store is current: it is no longer failing.
    fn proved(&mut self, source: usize, now: Instant) {
        let health = &mut self.health[source];
        health.proof = now;
        let was_failing = health.failing_since.take().is_some();
        if was_failing {
            health.reason = None;
        }
        if self.log_every_step {
            if self.logs[source].proved(was_failing, now) {
                warn_line!("note: the watch of {} follows the cluster again", health.resource);
            }
        } else if was_failing && !self.failing() {
            warn_line!("note: the watch follows the cluster again");
        }
    }

    /// The snapshot the watched objects make now.
    pub fn snapshot(&self, layout: &Layout) -> crate::model::Snapshot {
        let snapshot = layout.snapshot(Objects {
            pools: self.pools.objects(),
            nodes: self.nodes.listed(),
            pods: self.pods.as_ref().map(|pods| workloads(pods.items(), Vec::new())),
            endpoints: self.endpoints.as_ref().map(|endpoints| workloads(Vec::new(), endpoints.items())),
        });
        // Names no stored object holds any more (deleted pods, removed nodes) are let go.
        NAMES.with_borrow_mut(Names::forget_unused);
        snapshot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_timeout_is_the_tighter_one() {
        let serve = WatchOptions { watch_timeout: Some(Duration::from_secs(30)), streaming_lists: true, ..WatchOptions::default() };
        assert_eq!(watch_timeout(None, serve), Duration::from_secs(30));
        assert_eq!(watch_timeout(Some(Duration::from_secs(10)), serve), Duration::from_secs(9), "--request-timeout bounds each read");
        assert_eq!(watch_timeout(None, WatchOptions::default()), Duration::from_secs(290));
    }

    #[test]
    fn staleness_counts_from_the_last_proof_while_failing() {
        let now = Instant::now();
        let mut health = SourceHealth {
            resource: "pods".into(),
            listed: true,
            failing_since: None,
            proof: now - Duration::from_secs(50),
            reason: None,
            errors: 0,
            restarts: 0,
            streaming: false,
        };
        assert_eq!(health.staleness(now), Duration::from_secs(50), "a quiet watch: from its last proof");
        assert_eq!(health.failing_staleness(now), Duration::ZERO, "but not stale before it fails");
        health.failing_since = Some(now - Duration::from_secs(5));
        assert_eq!(health.failing_staleness(now), Duration::from_secs(50), "from the last proof, not from the failure");
    }
}
