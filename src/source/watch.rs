//! Change notifications for `usage --watch`: one reflector per source (pools, CiliumNodes, and
//! pods/CiliumEndpoints when readable). Each keeps the current objects, so a change rebuilds the
//! snapshot from memory instead of re-listing a large cluster every second.

use super::cluster::{Cluster, Layout, Listed, Objects, typed_value};
use futures::stream::{BoxStream, SelectAll};
use futures::{StreamExt, TryStreamExt};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{Store, store::Writer};
use kube::runtime::{WatchStreamExt, watcher};
use crate::model::slim;
use crate::model::workload::{Endpoint, Pod, Workloads};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

/// One watched resource and the objects its reflector holds.
struct Watched {
    resource: ApiResource,
    store: Store<DynamicObject>,
    /// Pods and CiliumEndpoints decoded for an earlier frame, by uid and resourceVersion: a
    /// frame decodes only the objects that changed since, instead of every pod of the cluster
    /// (which made each frame allocate and free the whole store's worth of JSON).
    decoded: RefCell<HashMap<(String, String), Decoded>>,
}

#[derive(Clone)]
enum Decoded {
    Pod(Pod),
    Endpoint(Endpoint),
}

impl Watched {
    fn objects(&self) -> Vec<Value> {
        self.store.state().iter().map(|object| typed_value(object.as_ref().clone(), &self.resource)).collect()
    }

    fn listed(&self) -> Listed {
        Listed { items: self.objects(), workloads: Default::default() }
    }

    /// The pods or endpoints of the store, decoded; what an earlier frame decoded is reused.
    fn workloads(&self) -> Listed {
        let mut earlier = self.decoded.borrow_mut();
        let mut now = HashMap::with_capacity(earlier.len());
        let mut workloads = Workloads::default();
        for object in self.store.state() {
            let key = (object.metadata.uid.clone().unwrap_or_default(), object.metadata.resource_version.clone().unwrap_or_default());
            let decoded = match earlier.remove(&key) {
                Some(decoded) => decoded,
                None => {
                    let value = typed_value(object.as_ref().clone(), &self.resource);
                    match self.resource.kind.as_str() {
                        "Pod" => Decoded::Pod(Pod::decode_into(&value, &mut workloads.names)),
                        _ => Decoded::Endpoint(Endpoint::decode_into(&value, &mut workloads.names)),
                    }
                }
            };
            match &decoded {
                Decoded::Pod(pod) => workloads.pods.push(pod.clone()),
                Decoded::Endpoint(endpoint) => workloads.endpoints.push(endpoint.clone()),
            }
            // Without a uid (never from an API server) an object is decoded again each frame.
            if !key.0.is_empty() {
                now.insert(key, decoded);
            }
        }
        *earlier = now;
        Listed { items: Vec::new(), workloads }
    }
}

/// `object` without what the snapshot never reads of its kind (see `model::slim`).
fn slim_object(object: &mut DynamicObject, kind: &str) {
    if slim::fields_of(kind).is_none() {
        return;
    }
    let types = object.types.take();
    let mut value = serde_json::to_value(&*object).expect("a Kubernetes object serializes to JSON");
    slim::retain_read_fields(&mut value, kind);
    if let Ok(mut slimmed) = serde_json::from_value::<DynamicObject>(value) {
        slimmed.types = types;
        // What identifies this version of the object: the key of `Watched::decoded`.
        slimmed.metadata.uid = object.metadata.uid.take();
        slimmed.metadata.resource_version = object.metadata.resource_version.take();
        *object = slimmed;
    } else {
        object.types = types;
    }
}

/// The longest watch request the server may hold open (kube's default, below the apiserver's cap).
const MAX_WATCH_SECONDS: u64 = 290;

/// `--request-timeout` also bounds each read of a watch stream, so a quiet watch would fail at
/// it. Asking the server to end each watch a second earlier makes the watcher simply re-watch.
fn watcher_config(request_timeout: Option<Duration>) -> watcher::Config {
    let config = watcher::Config::default();
    match request_timeout {
        Some(timeout) => config.timeout(timeout.as_secs().saturating_sub(1).clamp(1, MAX_WATCH_SECONDS) as u32),
        None => config,
    }
}

/// What one watch event means for the caller.
enum Signal {
    /// The source with this index changed, or finished its (re)initial listing.
    Changed { source: usize, listed: bool },
    Failed(watcher::Error),
}

pub struct Watch {
    pools: Watched,
    nodes: Watched,
    pods: Option<Watched>,
    endpoints: Option<Watched>,
    signals: SelectAll<BoxStream<'static, Signal>>,
    /// Per source: its initial listing is complete, so its store is the whole picture.
    listed: Vec<bool>,
}

impl Watch {
    /// Starts watching every source the first read could use.
    pub fn start(cluster: &Cluster, layout: &Layout) -> Watch {
        let mut signals = SelectAll::new();
        let config = watcher_config(cluster.connection.timeout);
        let mut start = |resource: &ApiResource| {
            let writer = Writer::new(resource.clone());
            let store = writer.as_reader();
            let source = signals.len();
            let kind = resource.kind.clone();
            let stream = watcher(cluster.api(resource), config.clone())
                .default_backoff()
                // The stores hold every pod of the cluster for as long as the watch runs: keep
                // only what the snapshot reads of each.
                .map_ok(move |event| event.modify(|object| slim_object(object, &kind)))
                .reflect(writer)
                .map_ok(move |event| match event {
                    watcher::Event::InitDone => Signal::Changed { source, listed: true },
                    _ => Signal::Changed { source, listed: false },
                })
                .map(|item| item.unwrap_or_else(Signal::Failed));
            signals.push(stream.boxed());
            Watched { resource: resource.clone(), store, decoded: Default::default() }
        };
        let pools = start(&layout.pools);
        let nodes = start(&layout.nodes);
        let pods = layout.readable_pods().map(&mut start);
        let endpoints = layout.readable_endpoints().map(&mut start);
        let listed = vec![false; signals.len()];
        Watch { pools, nodes, pods, endpoints, signals, listed }
    }

    /// Waits until something changed and every source has been listed once. Watch failures are
    /// reported on stderr and retried with backoff; they end the watch only if every stream ends.
    pub async fn changed(&mut self) -> anyhow::Result<()> {
        loop {
            let signal = self.signals.next().await.ok_or_else(|| crate::error::cluster("every watch stream ended"))?;
            if self.record(signal) && self.listed.iter().all(|&l| l) {
                return Ok(());
            }
        }
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
                self.listed[source] |= listed;
                true
            }
            Signal::Failed(error) => {
                warn_line!("warning: watch failed, retrying: {error}");
                false
            }
        }
    }

    /// The snapshot the watched objects make now.
    pub fn snapshot(&self, layout: &Layout) -> crate::model::Snapshot {
        layout.snapshot(Objects {
            pools: self.pools.objects(),
            nodes: self.nodes.listed(),
            pods: self.pods.as_ref().map(Watched::workloads),
            endpoints: self.endpoints.as_ref().map(Watched::workloads),
        })
    }
}
