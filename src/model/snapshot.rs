//! A snapshot: everything the allocator needs, from whichever source (cluster or files).

use super::caveat::{Caveat, CaveatKind, Contents, caveats};
use super::cilium::{self, CiliumVersion};
use super::crd::{CrdInfo, POOL_CRD_NAME};
use super::ipam::IpamConfig;
use super::node::Node;
use super::pool::{Dialect, Pool};
use super::workload::{Endpoint, Pod, Workloads};
use serde::Serialize;
use serde_json::Value;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub pools: Vec<Pool>,
    pub nodes: Vec<Node>,
    /// `None` when pods could not be read (e.g. forbidden): used figures become unknown.
    pub pods: Option<Vec<Pod>>,
    pub endpoints: Option<Vec<Endpoint>>,
    pub crd: Option<CrdInfo>,
    /// ConfigMap `cilium-config`'s IPAM settings; `None` when it was not in the input or not readable.
    pub ipam: Option<IpamConfig>,
    /// Every distinct `cluster-name` of the `cilium-config` ConfigMaps read, in input order: more
    /// than one is several clusters merged into one snapshot (files without `--fleet`).
    pub cluster_names: Vec<String>,
    /// What could not be read or determined, in words, for the footer and `-v`.
    pub notes: Vec<String>,
    /// Objects of other kinds that were skipped, per kind.
    pub skipped: BTreeMap<String, usize>,
    pub origin: Origin,
}

/// Where a snapshot came from (reported in JSON `source` and in footers).
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// `cluster` or `files`.
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The IPAM mode (`cilium-config` key `ipam`), or `unknown`.
    pub ipam_mode: String,
    /// `-n`: the namespace Pods and CiliumEndpoints were read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// What this input cannot show ([`caveats`]); set by [`Snapshot::set_origin`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<Caveat>,
    /// The caveats' messages: the field before `caveats` (schema version 1 keeps it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The Cilium versions the input names (files: a sysdump's operator Deployment and agent
    /// DaemonSet), found as the objects are decoded; [`Snapshot::set_origin`] keeps them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cilium_versions: Vec<CiliumVersion>,
}

impl Origin {
    /// The running Cilium, when it is one before 1.21: it serves no cilium.io/v2 pools and its
    /// operator ignores their reserved ranges.
    pub fn cilium_without_v2_pools(&self) -> Option<&CiliumVersion> {
        self.cilium_versions.iter().find(|v| v.serves_v2_pools() == Some(false))
    }

    /// Does the input have this caveat?
    pub fn lacks(&self, kind: CaveatKind) -> bool {
        self.caveats.iter().any(|c| c.kind == kind)
    }
}

impl Snapshot {
    /// Sorts Kubernetes objects into a snapshot. `List` and `*List` objects are flattened;
    /// kinds the plugin does not use are counted in `skipped`. When an object appears twice
    /// (a sysdump may hold the same pool read through v2alpha1 and v2), the v2 copy wins for
    /// pools and the last copy for everything else.
    pub fn from_objects(objects: impl IntoIterator<Item = Value>) -> Snapshot {
        Snapshot::from_read(objects, Workloads::default())
    }

    /// [`Snapshot::from_objects`] of `objects` and of the Pods and CiliumEndpoints decoded as
    /// they were read (`slim`), which are moved into the snapshot, not copied (and come before
    /// copies of the same objects in `objects`, for "the last copy wins").
    pub fn from_read(objects: impl IntoIterator<Item = Value>, workloads: Workloads) -> Snapshot {
        let mut flat = Vec::new();
        for obj in objects {
            flatten(obj, None, &mut flat);
        }
        let is_pool_crd =
            |o: &Value| kind(o) == "CustomResourceDefinition" && o.pointer("/metadata/name").and_then(Value::as_str) == Some(POOL_CRD_NAME);
        let crd_positions: Vec<usize> = (0..flat.len()).filter(|&i| is_pool_crd(&flat[i])).collect();
        let crd = crd_positions.last().map(|&i| CrdInfo::decode(&flat[i]));
        let v2_shape = crd.as_ref().and_then(|c| c.v2_dialect);
        let mut pools: Vec<Pool> = Vec::new();
        let mut nodes: BTreeMap<Arc<str>, Node> = BTreeMap::new();
        let Workloads { mut pods, mut endpoints, mut names } = workloads;
        let mut skipped = BTreeMap::new();
        let mut ipam = None;
        let (mut cluster_names, mut cilium_versions) = (Vec::new(), Vec::new());
        // By value: each object's JSON is freed once it is decoded.
        for (position, obj) in flat.into_iter().enumerate() {
            let obj = &obj;
            match kind(obj) {
                _ if super::pool::is_pool_object(obj) => {
                    let pool = Pool::decode(obj, v2_shape);
                    match pools.iter_mut().find(|p| p.name == pool.name && !pool.name.is_empty()) {
                        Some(existing) if existing.dialect != Dialect::V2alpha1 && pool.dialect == Dialect::V2alpha1 => {}
                        Some(existing) => *existing = pool,
                        None => pools.push(pool),
                    }
                }
                "CiliumNode" => {
                    let node = Node::decode(obj);
                    nodes.insert(node.name.clone(), node);
                }
                "Pod" => pods.push(Pod::decode_into(obj, &mut names)),
                "CiliumEndpoint" => endpoints.push(Endpoint::decode_into(obj, &mut names)),
                "ConfigMap" if IpamConfig::decode(obj).is_some() => {
                    ipam = IpamConfig::decode(obj);
                    let name = ipam.as_ref().and_then(|c| c.cluster_name.clone());
                    if let Some(name) = name.filter(|n| !cluster_names.contains(n)) {
                        cluster_names.push(name);
                    }
                }
                "CustomResourceDefinition" if crd_positions.contains(&position) => {}
                "DaemonSet" | "Deployment" if cilium::of_object(obj).is_some() => cilium_versions.extend(cilium::of_object(obj)),
                other => *skipped.entry(if other.is_empty() { NO_KIND.to_string() } else { other.to_string() }).or_insert(0) += 1,
            }
        }
        let pods = last_copies(pods, |a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        let endpoints = last_copies(endpoints, |a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        Snapshot {
            ipam,
            cluster_names,
            pools,
            nodes: nodes.into_values().collect(),
            pods: Some(pods),
            endpoints: Some(endpoints),
            crd,
            notes: Vec::new(),
            skipped,
            origin: Origin { kind: "files", ipam_mode: "unknown".to_string(), cilium_versions, ..Default::default() },
        }
    }

    /// The IPAM mode's name, or `unknown`.
    pub fn ipam_mode_name(&self) -> String {
        self.ipam.as_ref().map_or_else(|| "unknown".to_string(), |c| c.mode.name().to_string())
    }

    /// Sets where the snapshot came from, with the IPAM mode and what this input cannot show
    /// (before `-n` filters the pods of files). Files with neither Pods nor CiliumEndpoints
    /// leave used addresses unknown, as a live read that could read neither does.
    pub fn set_origin(&mut self, origin: Origin) {
        // Those the objects named (files), and those a live read asked the cluster for.
        let mut cilium_versions = std::mem::take(&mut self.origin.cilium_versions);
        cilium_versions.extend(origin.cilium_versions.iter().cloned());
        let held = |list: Option<usize>| list.is_some_and(|n| n > 0);
        let contents = Contents {
            files: origin.kind == "files",
            only_v2alpha1_pools: !self.pools.is_empty() && self.pools.iter().all(|p| p.dialect == Dialect::V2alpha1),
            crd: self.crd.is_some(),
            nodes: !self.nodes.is_empty(),
            pods: held(self.pods.as_ref().map(Vec::len)),
            endpoints: held(self.endpoints.as_ref().map(Vec::len)),
            namespace: origin.namespace.as_deref(),
            cilium_without_v2_pools: !cilium_versions.is_empty() && cilium_versions.iter().all(|v| v.serves_v2_pools() == Some(false)),
        };
        let caveats = caveats(&contents);
        if contents.files && !contents.pods && !contents.endpoints {
            (self.pods, self.endpoints) = (None, None);
        }
        let warnings = caveats.iter().map(|c| c.message.clone()).collect();
        self.origin = Origin { ipam_mode: self.ipam_mode_name(), caveats, warnings, cilium_versions, ..origin };
    }

    /// Is this pool name the IPAM mode's own (listed by nodes, no CiliumPodIPPool, mode not
    /// multi-pool: ENI's `default`)? docs/ipam-modes.md.
    pub fn is_mode_pool(&self, pool: &str) -> bool {
        self.ipam.as_ref().is_some_and(|c| c.mode != super::IpamMode::MultiPool) && self.pool(pool).is_none()
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name == name)
    }
}

/// `items` in `order`, keeping of those that compare equal the last one read (the last copy wins).
fn last_copies<T>(mut items: Vec<T>, order: impl Fn(&T, &T) -> Ordering) -> Vec<T> {
    // kubectl and the API server list objects in this order already: no sort, no sort buffer.
    if items.is_sorted_by(|a, b| order(a, b).is_lt()) {
        return items;
    }
    items.sort_by(&order); // stable: equal items stay in the order they were read
    items.reverse();
    items.dedup_by(|later, kept| order(later, kept).is_eq());
    items.reverse();
    items
}

/// What [`Snapshot::skipped`] names objects without a kind (and values that are no objects).
pub const NO_KIND: &str = "(no kind)";

fn kind(obj: &Value) -> &str {
    obj.get("kind").and_then(Value::as_str).unwrap_or_default()
}

/// Expands `kind: List` and typed lists (`CiliumNodeList`, `PodList`...), whose items may
/// omit their own kind.
fn flatten(obj: Value, inherited_kind: Option<&str>, out: &mut Vec<Value>) {
    let obj_kind = obj.get("kind").and_then(Value::as_str).map(str::to_string);
    match (obj_kind, obj) {
        (Some(k), Value::Object(mut map)) if k.ends_with("List") && map.get("items").is_some_and(Value::is_array) => {
            let item_kind = k.strip_suffix("List").filter(|s| !s.is_empty()).map(str::to_string);
            if let Some(Value::Array(items)) = map.remove("items") {
                for item in items {
                    flatten(item, item_kind.as_deref(), out);
                }
            }
        }
        (None, Value::Object(mut map)) => {
            if let Some(k) = inherited_kind {
                map.insert("kind".into(), Value::String(k.to_string()));
            }
            out.push(Value::Object(map));
        }
        (_, other) => out.push(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flattens_lists_and_prefers_v2_pools() {
        let objects = vec![
            json!({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}},
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]}),
            json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNodeList", "items": [{"metadata": {"name": "n1"}}, {"metadata": {"name": "n2"}}]}),
        ];
        let snap = Snapshot::from_objects(objects);
        assert_eq!(snap.pools.len(), 1);
        assert_eq!(snap.pools[0].dialect, Dialect::UpstreamV2);
        assert_eq!(snap.nodes.len(), 2);
        assert_eq!(snap.skipped.get("ConfigMap"), Some(&1));
        assert!(snap.notes.is_empty(), "what the input lacks is a caveat, not a note");
    }

    #[test]
    fn the_last_copy_of_a_pod_wins_and_pods_come_sorted() {
        let pod = |ns: &str, name: &str, ip: &str| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "status": {"phase": "Running", "podIP": ip}});
        let ips = |snap: &Snapshot| {
            snap.pods
                .as_ref()
                .unwrap()
                .iter()
                .map(|p| format!("{}/{} {:?}", p.namespace, p.name, p.ips.iter().map(|a| a.to_string()).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        let snap = Snapshot::from_objects(vec![
            pod("b", "x", "10.0.0.1"),
            pod("a", "y", "10.0.0.2"),
            pod("b", "x", "10.0.0.3"),
            pod("a", "x", "10.0.0.4"),
        ]);
        assert_eq!(ips(&snap), ["a/x [\"10.0.0.4\"]", "a/y [\"10.0.0.2\"]", "b/x [\"10.0.0.3\"]"]);
        let sorted = Snapshot::from_objects(vec![pod("a", "x", "10.0.0.4"), pod("a", "y", "10.0.0.2")]);
        assert_eq!(ips(&sorted), ["a/x [\"10.0.0.4\"]", "a/y [\"10.0.0.2\"]"]);
    }
}
