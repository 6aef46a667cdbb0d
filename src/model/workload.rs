//! Pods and CiliumEndpoints: the only places that say which addresses are in use (docs/design/cilium.md#used-addresses).

use super::ip::Addr;
use super::node::{list, str_at};
use serde_json::Value;
use smallvec::SmallVec;
use std::collections::HashSet;
use std::sync::Arc;

/// A pod's or endpoint's addresses: one per family, kept inline (no allocation per object).
pub type Ips = SmallVec<[Addr; 2]>;

/// One shared copy of each namespace and node name: a large cluster has hundreds of thousands
/// of pods but few namespaces and nodes, and the analysis compares every pod's node name.
#[derive(Clone, Debug, Default)]
pub struct Names(HashSet<Arc<str>, foldhash::fast::FixedState>);

impl Names {
    pub fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(shared) = self.0.get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        self.0.insert(shared.clone());
        shared
    }

    /// Drops the names no decoded object holds any more, so a set kept across the frames of a
    /// watch follows the namespaces and nodes that exist, not every one ever seen.
    pub fn forget_unused(&mut self) {
        self.0.retain(|name| Arc::strong_count(name) > 1);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Pods and CiliumEndpoints decoded while they were read (`slim`), apart from the other objects.
#[derive(Clone, Debug, Default)]
pub struct Workloads {
    pub pods: Vec<Pod>,
    pub endpoints: Vec<Endpoint>,
    /// The names decoded so far (see [`Names`]).
    pub names: Names,
}

impl Workloads {
    pub fn len(&self) -> usize {
        self.pods.len() + self.endpoints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds `other`'s; a vector added to an empty one is moved, not copied (a dump holds one
    /// large list of each).
    pub fn append(&mut self, other: Workloads) {
        move_or_append(&mut self.pods, other.pods);
        move_or_append(&mut self.endpoints, other.endpoints);
        if self.names.0.is_empty() {
            self.names = other.names;
        }
    }
}

fn move_or_append<T>(into: &mut Vec<T>, mut from: Vec<T>) {
    if into.is_empty() {
        *into = from;
    } else {
        into.append(&mut from);
    }
}

#[derive(Clone, Debug)]
pub struct Pod {
    pub namespace: Arc<str>,
    pub name: String,
    pub node_name: Option<Arc<str>>,
    pub host_network: bool,
    /// Phase `Succeeded` or `Failed`: its addresses are released.
    pub terminated: bool,
    pub ips: Ips,
    /// `ipam.cilium.io/ip-pool` (extra information only, never used to attribute an IP).
    pub requested_pool: Option<String>,
}

impl Pod {
    pub fn decode(obj: &Value) -> Pod {
        Pod::decode_into(obj, &mut Names::default())
    }

    /// [`Pod::decode`], sharing the namespace and node name through `names`.
    pub fn decode_into(obj: &Value, names: &mut Names) -> Pod {
        let meta = obj.get("metadata");
        let status = obj.get("status");
        let mut ips: Ips = list(status.and_then(|s| s.get("podIPs")))
            .filter_map(|p| p.get("ip").and_then(Value::as_str).and_then(Addr::parse))
            .collect();
        if ips.is_empty() {
            ips.extend(status.and_then(|s| s.get("podIP")).and_then(Value::as_str).and_then(Addr::parse));
        }
        ips.shrink_to_fit(); // more than two addresses (never seen): no spare capacity
        Pod {
            namespace: names.intern(meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or_default()),
            name: meta.map(|m| str_at(m, "name")).unwrap_or_default(),
            node_name: obj.pointer("/spec/nodeName").and_then(Value::as_str).map(|node| names.intern(node)),
            host_network: obj.pointer("/spec/hostNetwork").and_then(Value::as_bool).unwrap_or(false),
            terminated: matches!(status.and_then(|s| s.get("phase")).and_then(Value::as_str), Some("Succeeded" | "Failed")),
            ips,
            requested_pool: obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get("ipam.cilium.io/ip-pool"))
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }

    /// Pods whose addresses count as used: pod network, not terminated.
    pub fn holds_pod_ips(&self) -> bool {
        !self.host_network && !self.terminated
    }
}

#[derive(Clone, Debug)]
pub struct Endpoint {
    pub namespace: Arc<str>,
    pub name: String,
    pub ips: Ips,
}

impl Endpoint {
    pub fn decode(obj: &Value) -> Endpoint {
        Endpoint::decode_into(obj, &mut Names::default())
    }

    /// [`Endpoint::decode`], sharing the namespace through `names`.
    pub fn decode_into(obj: &Value, names: &mut Names) -> Endpoint {
        let mut ips: Ips = list(obj.pointer("/status/networking/addressing"))
            .flat_map(|a| ["ipv4", "ipv6"].map(|k| a.get(k).and_then(Value::as_str).and_then(Addr::parse)))
            .flatten()
            .collect();
        ips.shrink_to_fit();
        let meta = obj.get("metadata");
        Endpoint {
            namespace: names.intern(meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or_default()),
            name: meta.map(|m| str_at(m, "name")).unwrap_or_default(),
            ips,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_ips_and_terminal_phases() {
        let pod = Pod::decode(&json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.9"}, {"ip": "fd00::9"}]}}));
        assert_eq!(pod.ips.len(), 2);
        assert!(pod.holds_pod_ips());
        let done = Pod::decode(&json!({"status": {"phase": "Succeeded", "podIP": "10.0.0.9"}}));
        assert_eq!(done.ips.len(), 1, "podIP is the fallback when podIPs is absent");
        assert!(!done.holds_pod_ips());
        let host = Pod::decode(&json!({"spec": {"hostNetwork": true}, "status": {"phase": "Running"}}));
        assert!(!host.holds_pod_ips());
    }

    #[test]
    fn names_are_shared_and_forgotten_once_unused() {
        let mut names = Names::default();
        let pod = |ns: &str, node: &str| json!({"metadata": {"name": "p", "namespace": ns}, "spec": {"nodeName": node}});
        let kept = Pod::decode_into(&pod("ns", "n1"), &mut names);
        let gone = Pod::decode_into(&pod("ns", "n2"), &mut names);
        assert!(Arc::ptr_eq(&kept.namespace, &gone.namespace), "one copy of each name");
        assert_eq!(names.len(), 3);
        drop(gone);
        names.forget_unused();
        assert_eq!(names.len(), 2, "n2 is held by no pod");
        let again = Pod::decode_into(&pod("ns", "n1"), &mut names);
        assert!(Arc::ptr_eq(&kept.node_name.unwrap(), &again.node_name.unwrap()), "what is still held stays shared");
    }

    #[test]
    fn endpoint_addressing() {
        let ep = Endpoint::decode(&json!({"metadata": {"name": "p", "namespace": "ns"},
            "status": {"networking": {"addressing": [{"ipv4": "10.0.0.9", "ipv6": "fd00::9"}]}}}));
        assert_eq!(ep.ips.len(), 2);
    }
}
