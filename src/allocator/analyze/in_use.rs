//! The addresses in use (docs/design/cilium.md#used-addresses): running pod-network pods,
//! CiliumEndpoints and node infrastructure addresses, each distinct address once.

use crate::allocator::blocks::{self, AddressSet, Addresses};
use crate::allocator::count::Count;
use crate::allocator::interval::IntervalSet;
use crate::allocator::report::UsedSources;
use crate::model::{Addr, CaveatKind, Endpoint, Family, Pod, Prefix, Snapshot};

/// Distinct addresses in use (docs/design/cilium.md#used-addresses): running pod-network pods, endpoints, node infrastructure.
pub(super) struct InUse {
    pub(super) ipv4: AddressSet<u32>,
    pub(super) ipv6: AddressSet<u128>,
    pub(super) sources: UsedSources,
    /// The input holds CiliumNodes (or is a live read): allocated blocks, and so utilization, are known.
    pub(super) nodes_known: bool,
    /// The input shows the pools' reserved ranges (not pools read through v2alpha1 only).
    pub(super) reservations_known: bool,
}

impl InUse {
    pub(super) fn collect(snapshot: &Snapshot) -> InUse {
        let pods = snapshot.pods.as_deref().unwrap_or_default();
        let endpoints = snapshot.endpoints.as_deref().unwrap_or_default();
        let infrastructure = snapshot.nodes.iter().flat_map(|n| n.infrastructure_ips.iter());
        // Room for one address of each family per object: untouched capacity costs no memory.
        let infrastructure_ips = infrastructure.clone().count();
        let most = pods.len() + endpoints.len() + infrastructure_ips;
        let (mut ipv4, mut ipv6) = (Vec::with_capacity(most), Vec::with_capacity(most));
        let mut add = |addr: Addr| match addr.family {
            Family::Ipv4 => ipv4.push(blocks::narrow(addr.value)),
            Family::Ipv6 => ipv6.push(addr.value),
        };
        let counted_pods = workload_addresses(pods, endpoints, &mut add);
        infrastructure.clone().copied().for_each(&mut add);
        InUse {
            ipv4: AddressSet::new(ipv4),
            ipv6: AddressSet::new(ipv6),
            sources: UsedSources {
                // Without CiliumNodes no block is known to be allocated: nothing is used "inside" one.
                known: (snapshot.pods.is_some() || snapshot.endpoints.is_some()) && !snapshot.origin.lacks(CaveatKind::NoCiliumNodes),
                pods: counted_pods,
                endpoints: endpoints.len(),
                infrastructure_ips,
                unmanaged_ips: 0,
            },
            nodes_known: !snapshot.origin.lacks(CaveatKind::NoCiliumNodes),
            reservations_known: !snapshot.origin.lacks(CaveatKind::PoolsThroughV2alpha1),
        }
    }

    pub(super) fn family(&self, family: Family) -> &dyn Addresses {
        match family {
            Family::Ipv4 => &self.ipv4,
            Family::Ipv6 => &self.ipv6,
        }
    }

    pub(super) fn count_in(&self, family: Family, ranges: &IntervalSet) -> Option<Count> {
        self.sources.known.then(|| self.family(family).count_in(ranges))
    }
}

/// Passes every address of the pods that hold theirs and of the endpoints to `add`, and returns
/// how many pods those are. An endpoint whose addresses its pod already gave is left out: a
/// running pod almost always has a CiliumEndpoint of its name with its addresses, and a snapshot
/// keeps both kinds sorted by namespace and name (model::snapshot), so the lists are walked side
/// by side (each object read once) and an endpoint's pod is one of the next few: half as many
/// addresses to sort. Only addresses decide a skip (an endpoint whose addresses a counted pod
/// holds adds nothing, whoever owns it); names only bring the walk back in step, so any order
/// gives the same set.
fn workload_addresses(pods: &[Pod], endpoints: &[Endpoint], add: &mut impl FnMut(Addr)) -> usize {
    let mut walk = PodWalk { pods, passed: 0, counted: 0 };
    for endpoint in endpoints.iter().filter(|e| !e.ips.is_empty()) {
        if !walk.repeated(endpoint, add) {
            endpoint.ips.iter().for_each(&mut *add);
        }
    }
    walk.pass_to(pods.len(), add);
    walk.counted
}

/// The pods walked beside the endpoints: those before `passed` have given their addresses.
struct PodWalk<'a> {
    pods: &'a [Pod],
    passed: usize,
    counted: usize,
}

impl PodWalk<'_> {
    /// Pods looked at past the last match: room for host-network and finished pods between two.
    const LOOK_AHEAD: usize = 4;

    fn pass_to(&mut self, to: usize, add: &mut impl FnMut(Addr)) {
        for pod in self.pods[self.passed..to].iter().filter(|p| p.holds_pod_ips()) {
            self.counted += 1;
            pod.ips.iter().for_each(&mut *add);
        }
        self.passed = to;
    }

    /// Whether one of the next pods holds all of `endpoint`'s addresses; passes the pods up to it.
    fn repeated(&mut self, endpoint: &Endpoint, add: &mut impl FnMut(Addr)) -> bool {
        if self.repeated_ahead(endpoint, add) {
            return true;
        }
        // Out of step (pods without endpoints, an endpoint without its pod): both lists are sorted
        // by namespace and name, so the pods before this endpoint's name have no endpoint left.
        let key = (&*endpoint.namespace, &*endpoint.name);
        let mut to = self.passed;
        while self.pods.get(to).is_some_and(|pod| (&*pod.namespace, &*pod.name) < key) {
            to += 1;
        }
        if to == self.passed {
            return false;
        }
        self.pass_to(to, add);
        self.repeated_ahead(endpoint, add)
    }

    fn repeated_ahead(&mut self, endpoint: &Endpoint, add: &mut impl FnMut(Addr)) -> bool {
        let holds_all = |pod: &Pod| pod.holds_pod_ips() && endpoint.ips.iter().all(|ip| pod.ips.contains(&ip));
        let Some(found) = self.pods[self.passed..].iter().take(Self::LOOK_AHEAD).position(holds_all) else { return false };
        self.pass_to(self.passed + found + 1, add);
        true
    }
}

/// In-use addresses inside `block`: `counted` beforehand when some node lists it.
pub(super) fn used_in(block: &Prefix, in_use: &InUse, counted: Option<usize>) -> usize {
    counted.unwrap_or_else(|| in_use.family(block.family).count_in_range(block.first(), block.last()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn ipv4s(values: &[u128]) -> crate::model::workload::Ips {
        values.iter().map(|&value| Addr { family: Family::Ipv4, value }).collect()
    }

    fn workload_pod(namespace: &str, name: &str, ips: &[u128], holds: bool) -> Pod {
        Pod {
            namespace: namespace.into(),
            name: name.into(),
            node_name: None,
            host_network: !holds,
            terminated: false,
            ips: ipv4s(ips),
            requested_pool: None,
        }
    }

    fn workload_endpoint(namespace: &str, name: &str, ips: &[u128]) -> Endpoint {
        Endpoint { namespace: namespace.into(), name: name.into(), ips: ipv4s(ips) }
    }

    fn in_use_of(pods: Vec<Pod>, endpoints: Vec<Endpoint>) -> Vec<u128> {
        let snap = Snapshot { pods: Some(pods), endpoints: Some(endpoints), ..Snapshot::default() };
        InUse::collect(&snap).ipv4.iter().collect()
    }

    /// The addresses [`workload_addresses`] passes on, sorted, with the pods it counted.
    fn passed_on(pods: &[Pod], endpoints: &[Endpoint]) -> (Vec<u128>, usize) {
        let mut passed = Vec::new();
        let counted = workload_addresses(pods, endpoints, &mut |a: Addr| passed.push(a.value));
        passed.sort_unstable();
        (passed, counted)
    }

    #[test]
    fn endpoints_repeating_their_pods_are_skipped_and_the_rest_counted() {
        let pods = vec![
            workload_pod("a", "p1", &[1], true),
            workload_pod("a", "p2", &[2], false), // host network: its address is not the pod's
            workload_pod("a", "p3", &[3, 4], true),
            workload_pod("b", "p4", &[5], true),
        ];
        let endpoints = vec![
            workload_endpoint("a", "p1", &[1]),
            workload_endpoint("a", "p2", &[2]),    // an address only an endpoint gives
            workload_endpoint("a", "p3", &[4]),    // a part of its pod's
            workload_endpoint("a", "zz", &[]),     // no address
            workload_endpoint("b", "p4", &[5, 6]), // more than its pod's
        ];
        assert_eq!(passed_on(&pods, &endpoints), (vec![1, 2, 3, 4, 5, 5, 6], 3), "the endpoints of p1 and p3 add nothing and are skipped");
        assert_eq!(in_use_of(pods, endpoints), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn endpoints_out_of_step_with_the_pods_come_back_in_step_by_name() {
        // More pods without endpoints in a row than the look-ahead, then pods with them.
        let mut pods: Vec<Pod> = (0..10).map(|i| workload_pod("a", &format!("host-{i}"), &[100 + i], false)).collect();
        pods.extend((0..3).map(|i| workload_pod("b", &format!("p{i}"), &[i], true)));
        let endpoints: Vec<Endpoint> = (0..3).map(|i| workload_endpoint("b", &format!("p{i}"), &[i])).collect();
        assert_eq!(passed_on(&pods, &endpoints), (vec![0, 1, 2], 3), "every endpoint repeats its pod");
    }

    proptest::proptest! {
        #[test]
        fn the_addresses_in_use_are_the_union_whatever_the_order(
            pods in proptest::collection::vec((0u8..4, 0u128..40, proptest::option::of(0u128..40), proptest::bool::weighted(0.8)), 0..24),
            extra in proptest::collection::vec((0u8..4, proptest::collection::vec(0u128..40, 0..3)), 0..6),
            endpoint_of_pod in proptest::collection::vec(0u8..4, 24),
            shuffle in proptest::collection::vec(0usize..30, 0..30),
        ) {
            let mut pods: Vec<Pod> = pods.iter().enumerate().map(|(i, (ns, a, b, holds))| {
                let ips: Vec<u128> = std::iter::once(*a).chain(*b).collect();
                workload_pod(&format!("ns{ns}"), &format!("p{i:02}"), &ips, *holds)
            }).collect();
            pods.sort_by(|x, y| (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name)));
            // Per pod: no endpoint, one with its addresses, with the first only, with another one.
            let mut endpoints: Vec<Endpoint> = pods.iter().zip(&endpoint_of_pod).filter_map(|(pod, how)| {
                let ips: Vec<u128> = pod.ips.iter().map(|a| a.value).collect();
                let ips = match how { 0 => return None, 1 => ips, 2 => ips[..1].to_vec(), _ => vec![ips[0] + 1] };
                Some(workload_endpoint(&pod.namespace, &pod.name, &ips))
            }).collect();
            endpoints.extend(extra.iter().enumerate().map(|(i, (ns, ips))| workload_endpoint(&format!("ns{ns}"), &format!("e{i}"), ips)));
            endpoints.sort_by(|x, y| (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name)));
            for (i, &j) in shuffle.iter().enumerate() {
                let len = endpoints.len();
                if len > 1 { endpoints.swap(i % len, j % len); }
            }
            let expected: BTreeSet<u128> = pods.iter().filter(|p| p.holds_pod_ips()).flat_map(|p| p.ips.iter())
                .chain(endpoints.iter().flat_map(|e| e.ips.iter())).map(|a| a.value).collect();
            proptest::prop_assert_eq!(in_use_of(pods, endpoints), expected.into_iter().collect::<Vec<_>>());
        }
    }
}
