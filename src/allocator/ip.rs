//! `ip ADDR`: where one address stands — pool, CIDR, block and the block's state, reservation,
//! and what holds the address (docs/ip.md). Pure: a snapshot and its report in, answers out.

use super::blocks::{self, ListedBlocks};
use super::report::{CidrReport, Report};
use crate::model::pool::ReservedRange;
use crate::model::{Addr, Snapshot};
use serde::Serialize;

/// The state of the block an address lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockState {
    /// Listed by a node inside the pool's CIDRs.
    Allocated,
    /// Neither allocated nor withheld: the operator may hand it out.
    Free,
    /// Not allocated and touched by a reserved range: never handed out.
    Withheld,
    /// Listed by a node under a pool that does not hold it (removed CIDR, deleted pool).
    Orphan,
    /// Listed by a node under a pool of a non-multi-pool IPAM mode (e.g. ENI's `default`).
    ModeAllocated,
    /// Not allocated, and the input cannot show the reserved ranges (pools read through
    /// v2alpha1): free or withheld, nobody can tell from this input.
    Unknown,
}

impl BlockState {
    pub fn name(self) -> &'static str {
        match self {
            BlockState::Allocated => "allocated",
            BlockState::Free => "free",
            BlockState::Withheld => "withheld",
            BlockState::Orphan => "orphan",
            BlockState::ModeAllocated => "mode-allocated",
            BlockState::Unknown => "unknown",
        }
    }
}

/// What holds an address: a pod, a CiliumEndpoint or a node infrastructure address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    /// `pod`, `endpoint` or `node`.
    pub kind: &'static str,
    /// `namespace/name` for pods and endpoints, the node name for nodes.
    pub name: String,
    /// The pod's node, or the node address's role (`CiliumInternalIP`, `health`, `ingress`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IpAnswer {
    pub address: String,
    /// The pool whose CIDRs (or, for orphans and mode blocks, whose listed blocks) contain it.
    pub pool: Option<String>,
    pub cidr: Option<String>,
    pub block: Option<String>,
    pub state: Option<BlockState>,
    /// Nodes listing the block.
    pub nodes: Vec<String>,
    /// Reserved ranges that withhold the block.
    pub withheld_by: Vec<ReservedRange>,
    /// The valid reserved range containing the address itself.
    pub reserved_by: Option<ReservedRange>,
    /// The address is its block's first or last and the pool does not allow handing those out.
    pub unusable: bool,
    pub held_by: Vec<Holder>,
    /// Other pools whose CIDRs contain the address too (overlapping pools).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_in_pools: Vec<String>,
}

impl IpAnswer {
    /// In no pool and in no block any node lists.
    pub fn in_no_pool(&self) -> bool {
        self.pool.is_none()
    }
}

pub fn lookup(snapshot: &Snapshot, report: &Report, addr: Addr) -> IpAnswer {
    let mut answer = IpAnswer {
        address: addr.to_string(),
        pool: None,
        cidr: None,
        block: None,
        state: None,
        nodes: Vec::new(),
        withheld_by: Vec::new(),
        reserved_by: None,
        unusable: false,
        held_by: holders(snapshot, addr),
        also_in_pools: Vec::new(),
    };
    // Pools whose CIDRs contain the address (the report has them sorted by name).
    let mut matches = report.pools.iter().flat_map(|pool| {
        pool.families
            .iter()
            .filter(move |f| f.family == addr.family)
            .flat_map(move |fam| fam.cidrs.iter().filter(move |c| c.prefix.contains(addr)).map(move |c| (pool, fam.mask_size, c)))
    });
    if let Some((pool, mask, cidr)) = matches.next() {
        answer.also_in_pools = matches.map(|(p, _, _)| p.name.clone()).filter(|n| n != &pool.name).collect();
        answer.pool = Some(pool.name.clone());
        answer.cidr = Some(cidr.cidr.clone());
        let mask = mask.unwrap_or(addr.family.bits());
        in_cidr(&mut answer, cidr, mask, addr, (pool.allow_first_ip, pool.allow_last_ip));
        return answer;
    }
    // Outside every pool CIDR: a block some node still lists (orphan, or a mode's own pool).
    let listed = ListedBlocks::from_nodes(&snapshot.nodes);
    if let Some((block, listings)) = listed.lookup(addr) {
        let pool = listings.first().map(|l| l.pool.to_string()).unwrap_or_default();
        let mode_pool = report.ipam.mode_pools.iter().any(|m| m.name == pool);
        answer.state = Some(if mode_pool { BlockState::ModeAllocated } else { BlockState::Orphan });
        answer.block = Some(block.to_string());
        answer.nodes = listings.iter().map(|l| l.node.to_string()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        answer.pool = Some(pool);
        let allow = node_allows(snapshot, block, &answer.nodes);
        answer.unusable = unusable(addr.value, block.first(), block.last(), allow);
    }
    answer
}

fn in_cidr(answer: &mut IpAnswer, cidr: &CidrReport, mask: u8, addr: Addr, allow: (bool, bool)) {
    answer.reserved_by = cidr
        .reservations
        .iter()
        .find(|r| r.start.value <= addr.value && addr.value <= r.end.value)
        .map(|r| ReservedRange { start: r.start.to_string(), end: r.end.to_string() });
    if let Some(held) = cidr.allocated.iter().find(|b| b.prefix.contains(addr)) {
        answer.block = Some(held.prefix.to_string());
        answer.state = Some(BlockState::Allocated);
        answer.nodes = held.node_names();
        answer.unusable = unusable(addr.value, held.prefix.first(), held.prefix.last(), allow);
        return;
    }
    let index = blocks::block_index(&cidr.prefix, mask, addr.value);
    let block = blocks::block_at(&cidr.prefix, mask, index);
    answer.block = Some(block.to_string());
    answer.unusable = unusable(addr.value, block.first(), block.last(), allow);
    if cidr.withheld.contains(index) {
        answer.state = Some(BlockState::Withheld);
        answer.withheld_by = cidr
            .reservations
            .iter()
            .filter(|r| r.blocks.contains(index))
            .map(|r| ReservedRange { start: r.start.to_string(), end: r.end.to_string() })
            .collect();
    } else if !cidr.reservations_known {
        answer.state = Some(BlockState::Unknown);
    } else {
        answer.state = Some(BlockState::Free);
    }
}

/// The agent never hands out a block's first or last address unless the pool allows it.
fn unusable(value: u128, first: u128, last: u128, (allow_first, allow_last): (bool, bool)) -> bool {
    (value == first && !allow_first) || (value == last && !allow_last)
}

/// allowFirstIP/allowLastIP as the nodes listing a block outside every pool copied them.
fn node_allows(snapshot: &Snapshot, block: &crate::model::Prefix, nodes: &[String]) -> (bool, bool) {
    let entry = snapshot
        .nodes
        .iter()
        .filter(|n| nodes.iter().any(|node| **node == *n.name))
        .flat_map(|n| n.allocated.iter())
        .find(|a| a.blocks.iter().any(|b| b.prefix.as_ref() == Some(block)));
    entry.map_or((false, false), |a| (a.allow_first_ip.unwrap_or(false), a.allow_last_ip.unwrap_or(false)))
}

/// Every pod (pod network, not terminated), endpoint and node address (its blocks' CiliumInternalIP,
/// health and ingress, and its own InternalIP and ExternalIP) equal to `addr`.
fn holders(snapshot: &Snapshot, addr: Addr) -> Vec<Holder> {
    let mut out = Vec::new();
    for pod in snapshot.pods.iter().flatten().filter(|p| p.holds_pod_ips() && p.ips.contains(&addr)) {
        out.push(Holder {
            kind: "pod",
            name: format!("{}/{}", pod.namespace, pod.name),
            detail: pod.node_name.as_deref().map(str::to_string),
        });
    }
    for ep in snapshot.endpoints.iter().flatten().filter(|e| e.ips.contains(&addr)) {
        out.push(Holder { kind: "endpoint", name: format!("{}/{}", ep.namespace, ep.name), detail: None });
    }
    for node in &snapshot.nodes {
        for (role, ip) in node.infrastructure.iter().chain(&node.host_addresses) {
            if *ip == addr {
                out.push(Holder { kind: "node", name: node.name.to_string(), detail: Some(role.to_string()) });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::analyze;
    use serde_json::json;

    /// Pool blue: 10.40.0.0/16 in /24 blocks, reservations 10.40.5.10-10.40.5.20 (block 5) and
    /// 10.40.7.200-10.40.8.5 (blocks 7 and 8); red overlaps it with 10.40.0.0/20. n1 holds
    /// 10.40.3.0/24 of blue; n2 lists 10.99.0.0/24 under the deleted pool gone (allowFirstIP),
    /// n3 10.98.0.0/24 under the deleted pool old (no flags).
    fn snapshot(ipam: &str) -> Snapshot {
        Snapshot::from_objects(vec![
            json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": {"ipam": ipam}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
                "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24, "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [
                    {"start": "10.40.5.10", "end": "10.40.5.20"}, {"start": "10.40.7.200", "end": "10.40.8.5"}]}]}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "red"},
                "spec": {"ipv4": {"cidrs": ["10.40.0.0/20"], "maskSize": 28}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"},
                "spec": {"addresses": [{"type": "CiliumInternalIP", "ip": "10.40.3.1"}, {"type": "InternalIP", "ip": "10.40.3.2"}],
                         "ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.40.3.0/24"]}]}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n2"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "gone", "cidrs": ["10.99.0.0/24"], "allowFirstIP": true}]}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n3"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "old", "cidrs": ["10.98.0.0/24"]}]}}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db", "namespace": "team"}, "spec": {"nodeName": "n1"},
                "status": {"phase": "Running", "podIPs": [{"ip": "10.40.3.7"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "team"}, "spec": {"nodeName": "n1"},
                "status": {"phase": "Succeeded", "podIPs": [{"ip": "10.40.3.8"}]}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "db", "namespace": "team"},
                "status": {"networking": {"addressing": [{"ipv4": "10.40.3.7"}]}}}),
        ])
    }

    fn ask(snap: &Snapshot, ip: &str) -> IpAnswer {
        lookup(snap, &analyze(snap), Addr::parse(ip).unwrap())
    }

    fn range(start: &str, end: &str) -> ReservedRange {
        ReservedRange { start: start.into(), end: end.into() }
    }

    #[test]
    fn allocated_block_its_holders_and_unusable_ends() {
        let snap = snapshot("multi-pool");
        let a = ask(&snap, "10.40.3.7");
        assert_eq!(
            (a.pool.as_deref(), a.cidr.as_deref(), a.block.as_deref(), a.state),
            (Some("blue"), Some("10.40.0.0/16"), Some("10.40.3.0/24"), Some(BlockState::Allocated))
        );
        assert!(!a.in_no_pool());
        assert_eq!((a.nodes, a.also_in_pools, a.unusable, a.reserved_by), (vec!["n1".to_string()], vec!["red".to_string()], false, None));
        assert_eq!(
            a.held_by,
            vec![
                Holder { kind: "pod", name: "team/db".into(), detail: Some("n1".into()) },
                Holder { kind: "endpoint", name: "team/db".into(), detail: None },
            ]
        );
        // A finished pod holds nothing; a node's own InternalIP is named with its role.
        assert!(ask(&snap, "10.40.3.8").held_by.is_empty());
        assert_eq!(ask(&snap, "10.40.3.2").held_by, vec![Holder { kind: "node", name: "n1".into(), detail: Some("InternalIP".into()) }]);
        assert_eq!(
            ask(&snap, "10.40.3.1").held_by,
            vec![Holder { kind: "node", name: "n1".into(), detail: Some("CiliumInternalIP".into()) }]
        );
        // The pool allows neither end: .0 and .255 of each block are unusable, .1 and .254 are not.
        let unusable = |ip: &str| ask(&snap, ip).unusable;
        assert_eq!(
            [unusable("10.40.3.0"), unusable("10.40.3.1"), unusable("10.40.3.254"), unusable("10.40.3.255")],
            [true, false, false, true]
        );
        assert_eq!([unusable("10.40.6.0"), unusable("10.40.6.9"), unusable("10.40.6.255")], [true, false, true]);
        // Outside red's 10.40.0.0/20: only blue.
        assert!(ask(&snap, "10.40.16.1").also_in_pools.is_empty());
    }

    #[test]
    fn free_and_withheld_blocks_name_their_reservations() {
        let snap = snapshot("multi-pool");
        let free = ask(&snap, "10.40.6.9");
        assert_eq!(
            (free.block.as_deref(), free.state, free.withheld_by.len(), free.reserved_by.is_none()),
            (Some("10.40.6.0/24"), Some(BlockState::Free), 0, true)
        );
        assert!(free.nodes.is_empty());
        let first = range("10.40.5.10", "10.40.5.20");
        let second = range("10.40.7.200", "10.40.8.5");
        for (ip, reserved_by) in [
            ("10.40.5.9", None),
            ("10.40.5.10", Some(&first)),
            ("10.40.5.15", Some(&first)),
            ("10.40.5.20", Some(&first)),
            ("10.40.5.21", None),
        ] {
            let a = ask(&snap, ip);
            assert_eq!((a.block.as_deref(), a.state), (Some("10.40.5.0/24"), Some(BlockState::Withheld)), "{ip}");
            assert_eq!(a.withheld_by, vec![first.clone()], "{ip}");
            assert_eq!(a.reserved_by.as_ref(), reserved_by, "{ip}");
        }
        // A range over two blocks withholds both, and only it is named there.
        for (ip, block) in [("10.40.7.1", "10.40.7.0/24"), ("10.40.8.200", "10.40.8.0/24")] {
            let a = ask(&snap, ip);
            assert_eq!(
                (a.block.as_deref(), a.state, a.withheld_by),
                (Some(block), Some(BlockState::Withheld), vec![second.clone()]),
                "{ip}"
            );
            assert_eq!(a.reserved_by, None, "{ip}");
        }
        assert_eq!(ask(&snap, "10.40.8.5").reserved_by, Some(second));
    }

    #[test]
    fn orphan_and_mode_blocks_and_addresses_in_no_pool() {
        let snap = snapshot("multi-pool");
        let orphan = ask(&snap, "10.99.0.5");
        assert!(!orphan.in_no_pool());
        assert_eq!(
            (orphan.pool.as_deref(), orphan.cidr.as_deref(), orphan.block.as_deref(), orphan.state),
            (Some("gone"), None, Some("10.99.0.0/24"), Some(BlockState::Orphan))
        );
        assert_eq!(orphan.nodes, vec!["n2".to_string()]);
        // n2 copied allowFirstIP (true) and not allowLastIP.
        let unusable = |ip: &str| ask(&snap, ip).unusable;
        assert_eq!([unusable("10.99.0.0"), unusable("10.99.0.5"), unusable("10.99.0.255")], [false, false, true]);
        // n3 copied neither flag for its orphan of pool old: both ends unusable.
        assert_eq!([unusable("10.98.0.0"), unusable("10.98.0.5"), unusable("10.98.0.255")], [true, false, true]);
        let nowhere = ask(&snap, "192.168.0.1");
        assert!(nowhere.in_no_pool());
        assert_eq!((nowhere.block, nowhere.state, nowhere.unusable), (None, None, false));
        let v6 = ask(&snap, "fd00::1");
        assert!(v6.in_no_pool() && v6.state.is_none());
        // In ENI mode the node's own pool is the mode's, not an orphan.
        let eni = ask(&snapshot("eni"), "10.99.0.5");
        assert_eq!((eni.pool.as_deref(), eni.state), (Some("gone"), Some(BlockState::ModeAllocated)));
        let names: Vec<&str> = [
            BlockState::Allocated,
            BlockState::Free,
            BlockState::Withheld,
            BlockState::Orphan,
            BlockState::ModeAllocated,
            BlockState::Unknown,
        ]
        .map(BlockState::name)
        .to_vec();
        assert_eq!(names, ["allocated", "free", "withheld", "orphan", "mode-allocated", "unknown"]);
    }
}
