//! The node rows: per node, one row per pool it lists or requests, per family its blocks,
//! usable, used and needed addresses.

use super::in_use::{InUse, used_in};
use crate::allocator::blocks::{self, ListedBlocks};
use crate::allocator::count::Count;
use crate::allocator::interval::IntervalSet;
use crate::allocator::report::*;
use crate::model::{Family, Node, Pool, Snapshot};
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::Arc;

pub(super) fn node_reports(snapshot: &Snapshot, in_use: &InUse, listed: &ListedBlocks) -> Vec<NodeReport> {
    // Every node row looks its pools up by name: once per pool here, not a scan per row.
    let pools: HashMap<&str, &Pool, foldhash::fast::FixedState> = snapshot.pools.iter().map(|p| (p.name.as_str(), p)).collect();
    let rows = |(index, node): (usize, &Node)| NodeReport {
        name: node.name.clone(),
        pools: node_pools(&pools, index, node, in_use, listed),
        ignored: node.ignored,
    };
    snapshot.nodes.iter().enumerate().map(rows).collect()
}

/// One row per pool the node lists or requests, in that order. Runs for every node of the
/// cluster: no allocation but the rows, no interval set for the usual one block per family.
fn node_pools(
    pools: &HashMap<&str, &Pool, foldhash::fast::FixedState>,
    node_index: usize,
    node: &Node,
    in_use: &InUse,
    listed: &ListedBlocks,
) -> Vec<NodePoolReport> {
    let mut names: SmallVec<[&Arc<str>; 4]> = SmallVec::new();
    for name in node.allocated.iter().map(|a| &a.pool).chain(node.requested.iter().map(|r| &r.pool)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut rows = Vec::with_capacity(names.len());
    for name in names {
        let pool = pools.get(&**name).copied();
        let entries = || node.allocated.iter().filter(move |a| a.pool == *name);
        // The node's valid blocks of the pool and family, with the entry's flags, else the pool's.
        let listed_of = |family: Family| {
            entries().flat_map(move |entry| {
                let allow_first = entry.allow_first_ip.or(pool.map(|p| p.allow_first_ip)).unwrap_or(false);
                let allow_last = entry.allow_last_ip.or(pool.map(|p| p.allow_last_ip)).unwrap_or(false);
                entry.blocks.iter().filter_map(|b| b.prefix).filter(move |b| b.family == family).map(move |b| (b, allow_first, allow_last))
            })
        };
        let request = node.requested.iter().find(|r| r.pool == *name);
        let needed = Needed { ipv4: request.map_or(0, |r| r.needed_ipv4), ipv6: request.map_or(0, |r| r.needed_ipv6) };
        let mut families: SmallVec<[NodeFamilyReport; 2]> = SmallVec::new();
        for family in Family::ALL {
            let needed_addresses = if family == Family::Ipv4 { needed.ipv4 } else { needed.ipv6 };
            let (mut blocks, mut usable_addresses, mut only) = (0, Count::ZERO, None);
            for (block, allow_first, allow_last) in listed_of(family) {
                blocks += 1;
                usable_addresses += blocks::usable(family, block.len, allow_first, allow_last);
                only = Some(block);
            }
            if blocks == 0 && needed_addresses == 0 {
                continue;
            }
            // Distinct addresses: blocks listed twice or overlapping count once.
            let used_addresses = in_use.sources.known.then(|| match (blocks, only) {
                (1, Some(only)) => used_in(&only, in_use, listed.used_by_node(node_index, &only)),
                _ => {
                    in_use.family(family).count_inside(&IntervalSet::from_ranges(listed_of(family).map(|(b, _, _)| (b.first(), b.last()))))
                }
            } as u64);
            families.push(NodeFamilyReport { family, blocks, usable_addresses, used_addresses, needed_addresses });
        }
        rows.push(NodePoolReport {
            pool: name.clone(),
            blocks: entries().flat_map(|e| e.blocks.iter().map(|b| b.original.clone())).collect(),
            used_addresses: in_use.sources.known.then(|| families.iter().filter_map(|f| f.used_addresses).sum()),
            needed_addresses: needed,
            families,
            pool_exists: pool.is_some(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::analyze::analyze;
    use crate::allocator::analyze::test_objects::{node_object, pool_object, snapshot};
    use serde_json::json;

    #[test]
    fn node_rows_count_both_families_of_every_entry() {
        let snap = snapshot(vec![
            pool_object(
                "p",
                json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}}),
            ),
            node_object("n", &[("p", &["10.0.0.0/26", "fd00::/122"]), ("p", &["10.0.0.64/26"])]),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "d"}, "spec": {"nodeName": "n"},
                   "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}, {"ip": "10.0.0.70"}]}}),
        ]);
        let report = analyze(&snap);
        let row = &report.nodes[0].pools[0];
        assert_eq!(row.blocks.iter().map(|b| &**b).collect::<Vec<_>>(), ["10.0.0.0/26", "fd00::/122", "10.0.0.64/26"]);
        assert_eq!(row.used_addresses, Some(3));
        // usable: two IPv4 /26 (62 each) and one IPv6 /122 (62).
        assert_eq!(row.usable_addresses(), Count::from(186u64));
    }

    #[test]
    fn node_family_rows_carry_their_own_familys_request() {
        // n holds an IPv4 block of p and requests 5 IPv4 and 3 IPv6 addresses; m holds nothing and
        // requests 7 IPv6 addresses only.
        let request = |name: &str, blocks: &[&str], ipv4: u64, ipv6: u64| {
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": blocks}], "requested": [{"pool": "p", "needed": {"ipv4-addrs": ipv4, "ipv6-addrs": ipv6}}]}}}})
        };
        let snap = snapshot(vec![
            pool_object(
                "p",
                json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}}),
            ),
            request("n", &["10.0.0.0/26"], 5, 3),
            request("m", &[], 0, 7),
        ]);
        let report = analyze(&snap);
        let rows = |node: usize| -> Vec<(Family, usize, u64)> {
            report.nodes[node].pools[0].families.iter().map(|f| (f.family, f.blocks, f.needed_addresses)).collect()
        };
        assert_eq!(report.nodes.iter().map(|n| n.name.as_ref()).collect::<Vec<_>>(), ["m", "n"]);
        assert_eq!(rows(0), [(Family::Ipv6, 0, 7)], "m: only the family it requests");
        assert_eq!(rows(1), [(Family::Ipv4, 1, 5), (Family::Ipv6, 0, 3)]);
    }
}
