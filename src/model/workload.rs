//! Pods and CiliumEndpoints: the only places that say which addresses are in use (docs/design/cilium.md#used-addresses).

use super::ip::{Addr, Family};
use super::node::{list, str_at};
use serde_json::Value;
use smallvec::SmallVec;
use std::collections::HashSet;
use std::sync::Arc;

/// A pod's or endpoint's addresses: one per family, kept inline (no allocation per object) in
/// 8-byte words. [`Addr`]'s `u128` aligns to 16, which made two addresses 80 bytes and a pod three
/// cache lines; the analysis reads every pod twice and every endpoint once.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Ips(SmallVec<[PackedAddr; 2]>);

#[derive(Clone, Copy, PartialEq, Eq)]
struct PackedAddr {
    family: Family,
    high: u64,
    low: u64,
}

impl From<Addr> for PackedAddr {
    fn from(addr: Addr) -> PackedAddr {
        PackedAddr { family: addr.family, high: (addr.value >> 64) as u64, low: addr.value as u64 }
    }
}

impl From<PackedAddr> for Addr {
    fn from(packed: PackedAddr) -> Addr {
        Addr { family: packed.family, value: u128::from(packed.high) << 64 | u128::from(packed.low) }
    }
}

impl Ips {
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Addr> + Clone + '_ {
        self.0.iter().map(|&packed| Addr::from(packed))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn first(&self) -> Option<Addr> {
        self.iter().next()
    }

    pub fn contains(&self, addr: &Addr) -> bool {
        self.0.contains(&PackedAddr::from(*addr))
    }
}

impl FromIterator<Addr> for Ips {
    /// More than two addresses (never seen) are kept on the heap without spare capacity.
    fn from_iter<I: IntoIterator<Item = Addr>>(addrs: I) -> Ips {
        let mut ips = Ips::default();
        ips.extend(addrs);
        ips
    }
}

impl Extend<Addr> for Ips {
    fn extend<I: IntoIterator<Item = Addr>>(&mut self, addrs: I) {
        self.0.extend(addrs.into_iter().map(PackedAddr::from));
        self.0.shrink_to_fit();
    }
}

impl std::fmt::Debug for Ips {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

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
    /// Boxed, not a `String`: no spare capacity to carry, and with the other fields a pod is two cache lines.
    pub name: Box<str>,
    pub node_name: Option<Arc<str>>,
    pub host_network: bool,
    /// Phase `Succeeded` or `Failed`: its addresses are released.
    pub terminated: bool,
    pub ips: Ips,
    /// [`POOL_ANNOTATION`] (extra information only, never used to attribute an IP).
    pub requested_pool: Option<Box<str>>,
}

/// The annotation by which a pod asks for a pool.
pub const POOL_ANNOTATION: &str = "ipam.cilium.io/ip-pool";

impl Pod {
    /// Whether a pod in `phase` has released its addresses (`Succeeded` or `Failed`).
    pub fn is_terminal(phase: &str) -> bool {
        matches!(phase, "Succeeded" | "Failed")
    }

    pub fn decode(obj: &Value) -> Pod {
        Pod::decode_into(obj, &mut Names::default())
    }

    /// [`Pod::decode`], sharing the namespace and node name through `names`.
    pub fn decode_into(obj: &Value, names: &mut Names) -> Pod {
        let meta = obj.get("metadata");
        let status = obj.get("status");
        let mut ips: Ips =
            list(status.and_then(|s| s.get("podIPs"))).filter_map(|p| p.get("ip").and_then(Value::as_str).and_then(Addr::parse)).collect();
        if ips.is_empty() {
            ips.extend(status.and_then(|s| s.get("podIP")).and_then(Value::as_str).and_then(Addr::parse));
        }
        Pod {
            namespace: names.intern(meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or_default()),
            name: meta.map(|m| str_at(m, "name")).unwrap_or_default().into_boxed_str(),
            node_name: obj.get("spec").and_then(|s| s.get("nodeName")).and_then(Value::as_str).map(|node| names.intern(node)),
            host_network: obj.get("spec").and_then(|s| s.get("hostNetwork")).and_then(Value::as_bool).unwrap_or(false),
            terminated: status.and_then(|s| s.get("phase")).and_then(Value::as_str).is_some_and(Pod::is_terminal),
            ips,
            requested_pool: meta
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(POOL_ANNOTATION))
                .and_then(Value::as_str)
                .map(Box::from),
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
    pub name: Box<str>,
    pub ips: Ips,
}

impl Endpoint {
    pub fn decode(obj: &Value) -> Endpoint {
        Endpoint::decode_into(obj, &mut Names::default())
    }

    /// [`Endpoint::decode`], sharing the namespace through `names`.
    pub fn decode_into(obj: &Value, names: &mut Names) -> Endpoint {
        let ips: Ips = list(obj.get("status").and_then(|s| s.get("networking")).and_then(|n| n.get("addressing")))
            .flat_map(|a| ["ipv4", "ipv6"].map(|k| a.get(k).and_then(Value::as_str).and_then(Addr::parse)))
            .flatten()
            .collect();
        let meta = obj.get("metadata");
        Endpoint {
            namespace: names.intern(meta.and_then(|m| m.get("namespace")).and_then(Value::as_str).unwrap_or_default()),
            name: meta.map(|m| str_at(m, "name")).unwrap_or_default().into_boxed_str(),
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

    /// The decoders read nested fields with `get` (a `pointer` copied each token): the same
    /// fields as the pointers `/spec/nodeName`, `/spec/hostNetwork`, `/metadata/annotations` and
    /// `/status/networking/addressing` reach, whatever shape the objects have (issue 44).
    #[test]
    fn nested_fields_are_those_the_json_pointers_reach_in_odd_shapes() {
        let pointed = |o: &Value| {
            let text = |p: &str| o.pointer(p).and_then(Value::as_str).map(str::to_string);
            let pool = o.pointer("/metadata/annotations").and_then(|a| a.get("ipam.cilium.io/ip-pool")).and_then(Value::as_str);
            (text("/spec/nodeName"), o.pointer("/spec/hostNetwork").and_then(Value::as_bool).unwrap_or(false), pool.map(str::to_string))
        };
        let decoded = |o: &Value| {
            let pod = Pod::decode(o);
            (pod.node_name.as_deref().map(str::to_string), pod.host_network, pod.requested_pool.as_deref().map(str::to_string))
        };
        for object in [
            json!({}),
            json!(null),
            json!({"spec": null, "metadata": null, "status": null}),
            json!({"spec": [{"nodeName": "n"}], "metadata": "m", "status": [1]}),
            json!({"spec": {"nodeName": 7, "hostNetwork": "true"}, "metadata": {"annotations": null}}),
            json!({"spec": {"nodeName": "n1", "hostNetwork": true}, "metadata": {"annotations": {"ipam.cilium.io/ip-pool": "blue"}}}),
            json!({"spec": {"nodeName": "n1", "hostNetwork": false}, "metadata": {"annotations": {"ipam.cilium.io/ip-pool": 3}}}),
        ] {
            assert_eq!(decoded(&object), pointed(&object), "{object}");
        }
        let endpoint = |addressing: Value| Endpoint::decode(&json!({"status": {"networking": {"addressing": addressing}}})).ips.len();
        assert_eq!(
            [endpoint(json!([{"ipv4": "10.0.0.1", "ipv6": "fd00::1"}])), endpoint(json!({"0": {}})), endpoint(json!(null))],
            [2, 0, 0]
        );
        let nested = json!({"status": [{"networking": {"addressing": [{"ipv4": "10.0.0.1"}]}}]});
        assert_eq!((nested.pointer("/status/networking/addressing"), Endpoint::decode(&nested).ips.len()), (None, 0));
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
    fn packed_addresses_come_back_whole() {
        let addr = |text: &str| Addr::parse(text).unwrap();
        let all = [addr("10.1.2.3"), addr("fd00:1:2:3:4:5:6:7"), addr("ffff:ffff:ffff:ffff:0:0:0:1"), addr("::ffff:10.1.2.3")];
        let ips: Ips = all.iter().copied().collect();
        assert_eq!(ips.iter().collect::<Vec<_>>(), all, "both halves of an IPv6 address, in order, beyond two addresses too");
        assert_eq!((ips.len(), ips.first()), (4, Some(all[0])));
        assert!(all.iter().all(|a| ips.contains(a)));
        let two: Ips = all[..2].iter().copied().collect();
        assert!(!two.contains(&all[3]), "an IPv4-mapped IPv6 address is not the IPv4 address");
        assert!(!two.contains(&addr("fd00:1:2:3:4:5:6:8")) && Ips::default().is_empty());
    }

    #[test]
    fn endpoint_addressing() {
        let ep = Endpoint::decode(&json!({"metadata": {"name": "p", "namespace": "ns"},
            "status": {"networking": {"addressing": [{"ipv4": "10.0.0.9", "ipv6": "fd00::9"}]}}}));
        assert_eq!(ep.ips.len(), 2);
    }
}
