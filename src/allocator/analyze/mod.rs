//! The embedded allocator: a pure function from a snapshot to figures and problems, with the
//! operator's block semantics (docs/design/cilium.md#blocks, #used-addresses, #figures). Nothing
//! here enumerates addresses or blocks: work is proportional to the number of objects and ranges.
//!
//! The steps, one file each: [`in_use`] (the addresses in use), [`cidrs`] (which CIDRs count,
//! whether the operator accepts the pool), [`pools`] (each pool family's block states and
//! totals), [`nodes`] (the node rows). [`Analysis`] holds what several steps share.

mod cidrs;
mod in_use;
mod nodes;
mod pools;

pub use cidrs::IPV6_MAX_BLOCK_BITS;

use super::blocks::ListedBlocks;
use super::check::{self, Problems};
use super::parallel::side_by_side;
use super::report::*;
use crate::model::{Family, Pool, Snapshot};
use in_use::InUse;
use std::sync::OnceLock;

pub fn analyze(snapshot: &Snapshot) -> Report {
    Analysis::new(snapshot).run()
}

/// One analysis of a snapshot: the steps several others read, each computed once by whichever
/// thread needs it first (the other waits for it), so the steps also run in order on one thread
/// (side_by_side's fallback).
struct Analysis<'s> {
    snapshot: &'s Snapshot,
    in_use: OnceLock<InUse>,
    listed: OnceLock<ListedBlocks<'s>>,
    /// The addresses in use in no listed block, and the problems of what nodes list.
    last: OnceLock<(usize, Problems)>,
}

impl<'s> Analysis<'s> {
    fn new(snapshot: &'s Snapshot) -> Self {
        Analysis { snapshot, in_use: OnceLock::new(), listed: OnceLock::new(), last: OnceLock::new() }
    }

    fn in_use(&self) -> &InUse {
        self.in_use.get_or_init(|| InUse::collect(self.snapshot))
    }

    fn listed(&self) -> &ListedBlocks<'s> {
        self.listed.get_or_init(|| ListedBlocks::from_nodes(&self.snapshot.nodes))
    }

    /// The listed blocks with the in-use addresses inside each counted (node rows and held blocks
    /// read them): the addresses first, so the thread starting with them never waits for the blocks.
    fn counted(&self) -> (&InUse, &ListedBlocks<'s>) {
        let (in_use, listed) = (self.in_use(), self.listed());
        listed.count_used(&in_use.ipv4, &in_use.ipv6);
        (in_use, listed)
    }

    /// The steps that need nothing of either thread's own work, run by the thread done first.
    fn last_steps(&self) {
        self.last.get_or_init(|| {
            let (in_use, listed) = self.counted();
            let unmanaged_ips: usize = Family::ALL.iter().map(|&f| in_use.family(f).count_outside(&listed.covered(f))).sum();
            let mut problems = Problems::default();
            check::listings(self.snapshot, listed, &mut problems);
            (unmanaged_ips, problems)
        });
    }

    /// A large cluster's analysis is mostly passes over memory, run on two threads: the addresses
    /// in use then the pool reports; beside them the listed blocks, the pods' addresses checked
    /// against them, then the node rows (about as long).
    fn run(self) -> Report {
        let snapshot = self.snapshot;
        let ((mut pools, mut problems), (nodes, pod_ips, pod_problems)) = side_by_side(
            || {
                let (in_use, listed) = self.counted();
                let mut problems = Problems::default();
                let entries = pools::entries_by_pool(&snapshot.nodes);
                let of_pool = |pool: &Pool| entries.get(pool.name.as_str()).map_or(&[][..], Vec::as_slice);
                let pools: Vec<_> =
                    snapshot.pools.iter().map(|pool| pools::pool_report(pool, of_pool(pool), in_use, listed, &mut problems)).collect();
                self.last_steps();
                (pools, problems)
            },
            || {
                let mut found = Problems::default();
                let pod_ips = check::pod_ips(snapshot, self.listed(), &mut found);
                let (in_use, listed) = self.counted();
                let nodes = nodes::node_reports(snapshot, in_use, listed);
                self.last_steps();
                (nodes, pod_ips, found)
            },
        );
        let (unmanaged_ips, last_problems) = self.last.into_inner().expect("both threads ran the last steps");
        let in_use = self.in_use.into_inner().expect("the addresses in use were collected");
        problems.append(last_problems);
        problems.append(pod_problems);
        // By name, as the API server lists them: files in another order must not reorder the report.
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        pod_ips.unallocated(&pools, &mut problems);
        check::cluster(snapshot, &pools, &nodes, &mut problems);
        super::modes::migration_problems(snapshot, &pools, &mut problems);
        let ipam = super::modes::ipam_report(snapshot, &|family, ranges| in_use.count_in(family, ranges));
        Report { pools, nodes, problems: problems.finish(), ipam, used_sources: UsedSources { unmanaged_ips, ..in_use.sources } }
    }
}

/// Small objects for the steps' tests, written out by hand.
#[cfg(test)]
pub(super) mod test_objects {
    use crate::model::Snapshot;
    use serde_json::{Value, json};

    pub fn pool_object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec})
    }

    pub fn node_object(name: &str, entries: &[(&str, &[&str])]) -> Value {
        let allocated: Vec<Value> = entries.iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect();
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name}, "spec": {"ipam": {"pools": {"allocated": allocated}}}})
    }

    pub fn snapshot(objects: Vec<Value>) -> Snapshot {
        Snapshot::from_objects(objects)
    }
}

#[cfg(test)]
mod tests {
    //! The whole analysis on objects small enough to work out by hand.
    use super::test_objects::{node_object, pool_object, snapshot};
    use super::*;
    use crate::allocator::Count;
    use serde_json::json;

    #[test]
    fn used_sources_count_what_was_read_and_what_lies_in_no_block() {
        // n holds 10.0.0.0/26 of p; its CiliumInternalIP 10.0.0.1 lies in it. Running pods at
        // 10.0.0.5 (in the block), 10.0.0.200 (in the CIDR, in no block) and 192.168.1.9 (in no
        // pool); a finished pod's 10.0.0.6 is not in use; an endpoint repeats 10.0.0.200.
        let pod = |name: &str, phase: &str, ip: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": "n"},
            "status": {"phase": phase, "podIPs": [{"ip": ip}]}})
        };
        let mut node = node_object("n", &[("p", &["10.0.0.0/26"])]);
        node["spec"]["addresses"] = json!([{"type": "CiliumInternalIP", "ip": "10.0.0.1"}]);
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}})),
            node,
            pod("a", "Running", "10.0.0.5"),
            pod("b", "Running", "10.0.0.200"),
            pod("c", "Running", "192.168.1.9"),
            pod("done", "Succeeded", "10.0.0.6"),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "b", "namespace": "d"}, "status": {"networking": {"addressing": [{"ipv4": "10.0.0.200"}]}}}),
        ]);
        let s = analyze(&snap).used_sources;
        // Distinct addresses in no listed block: 10.0.0.200 and 192.168.1.9.
        assert_eq!((s.known, s.pods, s.endpoints, s.infrastructure_ips, s.unmanaged_ips), (true, 3, 1, 1, 2));
    }

    #[test]
    fn used_is_known_when_pods_or_endpoints_could_be_read() {
        // A live read can fail for one kind (forbidden): the other still tells what is in use.
        let mut snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}})),
            node_object("n", &[("p", &["10.0.0.0/26"])]),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "d"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}]}}),
        ]);
        let used = |s: &Snapshot| analyze(s).pools[0].families[0].used_addresses;
        snap.endpoints = None;
        assert_eq!(used(&snap), Some(Count::from(1u64)), "pods read, endpoints not");
        snap.pods = None;
        assert_eq!(used(&snap), None, "neither read: unknown");
        snap.endpoints = Some(Vec::new());
        assert_eq!(used(&snap), Some(Count::ZERO), "endpoints read (none), pods not");
    }
}
