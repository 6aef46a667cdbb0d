//! Change notifications for `usage --watch`: one reflector per source (pools, CiliumNodes, and
//! pods/CiliumEndpoints when readable). Each keeps the current objects, so a change rebuilds the
//! snapshot from memory instead of re-listing a large cluster every second. Pods and CiliumEndpoints
//! are kept decoded, read from only the fields the snapshot uses (docs/performance.md).

use super::cluster::{CILIUM_ENDPOINTS, Cluster, Kind, Layout, Listed, Objects, PODS, typed_value};
use crate::model::slim;
use crate::model::workload::{Endpoint, Names, Pod, Workloads};
use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;
use kube::core::{DynamicResourceScope, Resource};
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::watcher;
use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::RefCell;
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

/// A Pod or CiliumEndpoint as a watch store keeps it: the metadata the reflector needs and the
/// object already decoded into the model's struct. It is deserialized straight from the API
/// server's bytes reading only the fields its decoder reads ([`Workload::FIELDS`]), so neither a list page nor an event
/// builds the whole object (a real pod is 5–10 KB of JSON, of which a dozen fields are read), and
/// a frame clones the decoded structs instead of decoding the store again.
#[derive(Clone, Debug)]
struct Decoded<T> {
    /// Name, namespace and resourceVersion only.
    metadata: ObjectMeta,
    item: T,
}

/// A kind a watch store decodes (see [`Decoded`]).
trait Workload: Clone + Debug + Send + Sync + 'static {
    const KIND: Kind;
    /// What is parsed of each object: what [`Workload::decode`] reads, and the resourceVersion.
    const FIELDS: slim::Keep;
    fn decode(object: &Value, names: &mut Names) -> Self;
}

impl Workload for Pod {
    const KIND: Kind = PODS;
    const FIELDS: slim::Keep = slim::POD_FIELDS;
    fn decode(object: &Value, names: &mut Names) -> Pod {
        Pod::decode_into(object, names)
    }
}

impl Workload for Endpoint {
    const KIND: Kind = CILIUM_ENDPOINTS;
    const FIELDS: slim::Keep = slim::ENDPOINT_FIELDS;
    fn decode(object: &Value, names: &mut Names) -> Endpoint {
        Endpoint::decode_into(object, names)
    }
}

thread_local! {
    /// The namespace and node names of every decoded object of a watch, shared as one copy each
    /// (a deserializer has no other way to reach shared state). The watch runs on one thread;
    /// were it not, names would only be shared less.
    static NAMES: RefCell<Names> = RefCell::default();
}

impl<'de, T: Workload> Deserialize<'de> for Decoded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = T::FIELDS.deserialize(deserializer)?;
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).map(str::to_string);
        let metadata = ObjectMeta {
            name: text("/metadata/name"),
            namespace: text("/metadata/namespace"),
            resource_version: text("/metadata/resourceVersion"),
            ..ObjectMeta::default()
        };
        let item = NAMES.with_borrow_mut(|names| T::decode(&object, names));
        Ok(Decoded { metadata, item })
    }
}

impl<T: Workload> Resource for Decoded<T> {
    type DynamicType = ();
    type Scope = DynamicResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        T::KIND.kind.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        T::KIND.group.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        T::KIND.version.into()
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        T::KIND.api_version.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        T::KIND.plural.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Watched<DynamicObject> {
    fn objects(&self) -> Vec<Value> {
        self.store.state().iter().map(|object| typed_value(object.as_ref().clone(), &self.resource)).collect()
    }

    fn listed(&self) -> Listed {
        Listed { items: self.objects(), workloads: Default::default() }
    }
}

impl<T: Workload> Watched<Decoded<T>> {
    /// The decoded objects of the store.
    fn items(&self) -> Vec<T> {
        self.store.state().iter().map(|object| object.item.clone()).collect()
    }
}

/// Pods and endpoints of the stores, as a snapshot takes them.
fn workloads(pods: Vec<Pod>, endpoints: Vec<Endpoint>) -> Listed {
    Listed { items: Vec::new(), workloads: Workloads { pods, endpoints, names: Names::default() } }
}

/// The longest watch request the server may hold open (kube's default, below the apiserver's cap).
const MAX_WATCH_SECONDS: u64 = 290;

/// How long the server holds each watch open when the caller follows the cluster for long
/// (`serve`, `usage --watch`). kube's watcher takes a stream silent for this long plus 5 s for a
/// stalled connection and watches again, which fails within the request deadline while the server
/// stays silent: so a stalled API server is noticed within about a minute, not after the 290 s
/// the server would otherwise hold a watch.
pub const STALL_WATCH_TIMEOUT: Duration = Duration::from_secs(30);

/// How each watch is run.
#[derive(Clone, Copy, Debug, Default)]
pub struct WatchOptions {
    /// The server ends each watch request after this long (the watcher then re-watches); kube's
    /// watcher also gives up on a stream silent for this long plus 5 s and re-watches, which is
    /// how a stalled connection is found. `None`: derived from `--request-timeout`, else 290 s.
    pub watch_timeout: Option<Duration>,
    /// Initial listing through a streaming list (WatchList, `sendInitialEvents`), falling back to
    /// paginated lists for a source whose server refuses it.
    pub streaming_lists: bool,
}

/// `--request-timeout` also bounds each read of a watch stream, so a quiet watch would fail at
/// it. Asking the server to end each watch a second earlier makes the watcher simply re-watch.
fn watcher_config(request_timeout: Option<Duration>, options: WatchOptions) -> watcher::Config {
    let config = watcher::Config::default();
    let server_bound = request_timeout.map(|t| t.as_secs().saturating_sub(1));
    let asked = options.watch_timeout.map(|t| t.as_secs());
    match [server_bound, asked].into_iter().flatten().min() {
        Some(seconds) => config.timeout(seconds.clamp(1, MAX_WATCH_SECONDS) as u32),
        None => config,
    }
}

/// The wait before retrying a failed watch or read: 1 s, doubling, at most [`MAX_BACKOFF`].
pub fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1u64 << failures.saturating_sub(1).min(16)).min(MAX_BACKOFF)
}

/// The longest wait between two attempts: a restarted control plane is seen again within it.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// What one watch event means for the caller.
enum Signal {
    /// The source with this index changed, or finished its (re)initial listing.
    Changed {
        source: usize,
        listed: bool,
    },
    Failed {
        source: usize,
        error: watcher::Error,
    },
}

/// How one watched source is doing, for readiness and the exporter's own metrics.
#[derive(Clone, Debug)]
pub struct SourceHealth {
    /// The resource, as RBAC names it (`ciliumnodes.cilium.io`).
    pub resource: String,
    /// Its store holds a complete listing (the last (re)listing finished).
    pub listed: bool,
    /// Since when it has been failing (cleared by the next complete listing).
    pub failing_since: Option<Instant>,
    /// Failed requests and streams so far.
    pub errors: u64,
    /// Watches restarted (each with a fresh listing) after a failure.
    pub restarts: u64,
    /// The initial listing is a streaming list (false once the server refused one).
    pub streaming: bool,
}

/// One source's watch: a kube watcher whose events are applied to the store's writer. On any
/// failure the watcher is dropped and, after a backoff, started again with a fresh listing: the
/// store is swapped only when that listing is complete, and its end is the one sign that the
/// source is healthy again (a resumed watch says nothing). A `410 Gone` is such a failure too.
struct Follow<K: Resource + Clone + 'static>
where
    K::DynamicType: Clone + Eq + Hash,
{
    api: kube::Api<K>,
    config: watcher::Config,
    streaming: bool,
    writer: Writer<K>,
    events: Option<BoxStream<'static, watcher::Result<watcher::Event<K>>>>,
    failures: u32,
    source: usize,
}

impl<K> Follow<K>
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    async fn next(mut self) -> Option<(Signal, Self)> {
        loop {
            let events = match &mut self.events {
                Some(events) => events,
                None => {
                    if self.failures > 0 {
                        tokio::time::sleep(backoff(self.failures)).await;
                    }
                    let config = if self.streaming { self.config.clone().streaming_lists() } else { self.config.clone() };
                    self.events.insert(watcher(self.api.clone(), config).boxed())
                }
            };
            match events.next().await {
                Some(Ok(event)) => {
                    self.writer.apply_watcher_event(&event);
                    match event {
                        watcher::Event::InitDone => {
                            self.failures = 0;
                            return Some((Signal::Changed { source: self.source, listed: true }, self));
                        }
                        // A (re)listing in progress: the store changes when it is done.
                        watcher::Event::Init | watcher::Event::InitApply(_) => {}
                        watcher::Event::Apply(_) | watcher::Event::Delete(_) => {
                            return Some((Signal::Changed { source: self.source, listed: false }, self));
                        }
                    }
                }
                Some(Err(error)) => {
                    if self.streaming && refuses_streaming(&error) {
                        self.streaming = false;
                    }
                    self.events = None;
                    self.failures = self.failures.saturating_add(1);
                    return Some((Signal::Failed { source: self.source, error }, self));
                }
                // A watcher never ends by itself; if it does, start it again.
                None => self.events = None,
            }
        }
    }
}

/// A server that does not offer streaming lists rejects `sendInitialEvents` as an invalid or bad
/// request (the WatchList feature off); every other failure is retried as it is.
fn refuses_streaming(error: &watcher::Error) -> bool {
    let status = match error {
        watcher::Error::WatchStartFailed(kube::Error::Api(status)) | watcher::Error::WatchFailed(kube::Error::Api(status)) => status.code,
        watcher::Error::WatchError(status) => status.code,
        _ => return false,
    };
    matches!(status, 400 | 422)
}

pub struct Watch {
    pools: Watched<DynamicObject>,
    nodes: Watched<DynamicObject>,
    pods: Option<Watched<Decoded<Pod>>>,
    endpoints: Option<Watched<Decoded<Endpoint>>>,
    signals: SelectAll<BoxStream<'static, Signal>>,
    /// Per source, in signal index order.
    health: Vec<SourceHealth>,
}

/// Starts one watch; its events become signals for the source with the next index.
fn start<K>(
    cluster: &Cluster,
    resource: K::DynamicType,
    config: &watcher::Config,
    options: WatchOptions,
    signals: &mut SelectAll<BoxStream<'static, Signal>>,
    health: &mut Vec<SourceHealth>,
) -> Watched<K>
where
    K: Resource<Scope = DynamicResourceScope> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    let writer = Writer::new(resource.clone());
    let store = writer.as_reader();
    let source = signals.len();
    let name = K::plural(&resource);
    let group = K::group(&resource);
    let name = if group.is_empty() { name.into_owned() } else { format!("{name}.{group}") };
    health.push(SourceHealth {
        resource: name,
        listed: false,
        failing_since: None,
        errors: 0,
        restarts: 0,
        streaming: options.streaming_lists,
    });
    let follow = Follow {
        api: cluster.api::<K>(&resource),
        config: config.clone(),
        streaming: options.streaming_lists,
        writer,
        events: None,
        failures: 0,
        source,
    };
    signals.push(futures::stream::unfold(follow, Follow::next).boxed());
    Watched { resource, store }
}

impl Watch {
    /// Starts watching every source the first read could use. Pools and CiliumNodes are kept
    /// whole; the stores that hold every pod and endpoint of the cluster keep them decoded
    /// ([`Decoded`]).
    pub fn start(cluster: &Cluster, layout: &Layout, options: WatchOptions) -> Watch {
        let mut signals = SelectAll::new();
        let mut health = Vec::new();
        let config = watcher_config(cluster.connection.timeout, options);
        let pools = start(cluster, layout.pools.clone(), &config, options, &mut signals, &mut health);
        let nodes = start(cluster, layout.nodes.clone(), &config, options, &mut signals, &mut health);
        let pods = layout.readable_pods().map(|_| start(cluster, (), &config, options, &mut signals, &mut health));
        let endpoints = layout.readable_endpoints().map(|_| start(cluster, (), &config, options, &mut signals, &mut health));
        Watch { pools, nodes, pods, endpoints, signals, health }
    }

    /// Waits until something changed and every source has been listed once. Watch failures are
    /// reported on stderr and retried with backoff; they end the watch only if every stream ends.
    pub async fn changed(&mut self) -> anyhow::Result<()> {
        loop {
            if self.step().await? && self.listed() {
                return Ok(());
            }
        }
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
        match signal {
            Signal::Changed { source, listed } => {
                let was_failing = self.failing();
                let health = &mut self.health[source];
                if listed {
                    health.listed = true;
                    health.failing_since = None;
                }
                if was_failing && !self.failing() {
                    warn_line!("note: the watch follows the cluster again");
                }
                true
            }
            Signal::Failed { source, error } => {
                // One line when the watch stops following the cluster, not one per source and retry.
                if !self.failing() {
                    warn_line!(
                        "warning: the watch of {} stalled or failed ({error}); restarting it with a fresh listing (again every 1-8 s) until the API server answers",
                        self.health[source].resource
                    );
                }
                let health = &mut self.health[source];
                health.errors += 1;
                health.restarts += 1;
                health.failing_since.get_or_insert_with(Instant::now);
                health.streaming &= !refuses_streaming(&error);
                false
            }
        }
    }

    /// A source has failed since its last complete listing.
    fn failing(&self) -> bool {
        self.health.iter().any(|h| h.failing_since.is_some())
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
    use kube::core::WatchEvent;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                         "managedFields": [{"manager": "kubelet"}], "annotations": {"ipam.cilium.io/ip-pool": "blue", "other": "x"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}], "conditions": [{"type": "Ready"}]}})
    }

    #[test]
    fn a_watched_pod_is_decoded_and_keeps_the_metadata_the_reflector_needs() {
        let decoded: Decoded<Pod> = serde_json::from_value(pod("web-1")).unwrap();
        assert_eq!(format!("{:?}", decoded.item), format!("{:?}", Pod::decode(&pod("web-1"))));
        let expected = ObjectMeta {
            name: Some("web-1".into()),
            namespace: Some("shop".into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(decoded.metadata, expected);
        let other: Decoded<Pod> = serde_json::from_value(pod("web-2")).unwrap();
        assert!(Arc::ptr_eq(&decoded.item.namespace, &other.item.namespace), "one copy of a namespace across the watch");
    }

    #[test]
    fn watch_events_and_requests_are_those_of_pods_and_endpoints() {
        let endpoint = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "web-1", "namespace": "shop", "resourceVersion": "7"},
            "status": {"identity": {"id": 7}, "networking": {"addressing": [{"ipv4": "10.1.0.5"}]}}});
        let event: WatchEvent<Decoded<Endpoint>> = serde_json::from_value(json!({"type": "DELETED", "object": endpoint.clone()})).unwrap();
        let WatchEvent::Deleted(deleted) = event else { panic!("a DELETED event") };
        assert_eq!(format!("{:?}", deleted.item), format!("{:?}", Endpoint::decode(&endpoint)));
        assert_eq!(deleted.metadata.resource_version.as_deref(), Some("7"), "a watch resumes from it");
        assert_eq!(Decoded::<Pod>::url_path(&(), Some("shop")), "/api/v1/namespaces/shop/pods");
        assert_eq!(Decoded::<Endpoint>::url_path(&(), None), "/apis/cilium.io/v2/ciliumendpoints");
    }

    #[test]
    fn failed_watches_back_off_doubling_to_a_bound_and_the_watch_timeout_is_the_tighter_one() {
        let waits: Vec<u64> = (1..=6).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 8, 8]);
        let serve = WatchOptions { watch_timeout: Some(Duration::from_secs(30)), streaming_lists: true };
        assert_eq!(watcher_config(None, serve).timeout, Some(30));
        assert_eq!(watcher_config(Some(Duration::from_secs(10)), serve).timeout, Some(9), "--request-timeout bounds each read");
        assert_eq!(watcher_config(None, WatchOptions::default()).timeout, None);
    }

    #[test]
    fn only_a_refused_sendinitialevents_turns_streaming_lists_off() {
        let status = |code: u16| kube::core::Status { code, ..Default::default() };
        assert!(refuses_streaming(&watcher::Error::WatchStartFailed(kube::Error::Api(Box::new(status(422))))));
        assert!(refuses_streaming(&watcher::Error::WatchError(Box::new(status(400)))));
        assert!(!refuses_streaming(&watcher::Error::WatchError(Box::new(status(410)))), "410 Gone relists, still streaming");
        assert!(!refuses_streaming(&watcher::Error::WatchStartFailed(kube::Error::Api(Box::new(status(403))))));
    }
}
