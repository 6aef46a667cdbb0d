//! The breakdowns of `usage`: per node (`--by node`), per block (`--show-blocks`), and the
//! tables of the IPAM modes that are not multi-pool.

use super::cells::opt;
use crate::allocator::{Count, IpamReport, PoolReport, Report};
use crate::render::{Grid, human};

/// One row per node, pool and address family (a dual-stack pool's families never add up).
pub fn nodes_table(report: &Report, selected: &dyn Fn(&str) -> bool) -> Grid {
    let mut rows = Vec::new();
    for node in &report.nodes {
        for p in node.pools.iter().filter(|p| selected(&p.pool)) {
            let mut notes = Vec::new();
            if node.ignored {
                notes.push("node-ignored".to_string());
            }
            if !p.pool_exists {
                let mode_pool = report.ipam.mode_pools.iter().any(|m| *m.name == *p.pool);
                notes.push(if mode_pool { format!("{}-pool", report.ipam.mode) } else { "pool-missing".to_string() });
            }
            let note = if notes.is_empty() { "-".to_string() } else { notes.join(",") };
            if p.families.is_empty() {
                rows.push(vec![
                    node.name.to_string(),
                    p.pool.to_string(),
                    "-".into(),
                    "0".into(),
                    "0".into(),
                    opt(p.used_addresses),
                    "0".into(),
                    "-".into(),
                    note.clone(),
                ]);
            }
            for f in &p.families {
                let idle = f.used_addresses.map(|u| f.usable_addresses.saturating_sub(Count::from(u)));
                rows.push(vec![
                    node.name.to_string(),
                    p.pool.to_string(),
                    f.family.to_string(),
                    f.blocks.to_string(),
                    human(f.usable_addresses),
                    opt(f.used_addresses),
                    f.needed_addresses.to_string(),
                    opt(idle),
                    note.clone(),
                ]);
            }
        }
    }
    // On a narrow terminal USED and the notes stay: IDLE (USABLE - USED) and the sizes go first.
    Grid::new(&["NODE", "POOL", "FAMILY", "BLOCKS", "USABLE", "USED", "NEEDED", "IDLE", "NOTE"], rows)
        .shedding_first(&["IDLE", "NEEDED", "BLOCKS", "USABLE"])
}

/// One row per allocated or orphan block, and per run of withheld or free blocks (`first..last`
/// with their number), in address order; then the blocks nodes list under pools that do not exist.
pub fn blocks_table(report: &Report, pools: &[&PoolReport], selected: &dyn Fn(&str) -> bool) -> Grid {
    let mut rows = Vec::new();
    let held_row = |block: String, pool: &str, state: &str, nodes: &[std::sync::Arc<str>], used: String, usable: String| {
        vec![
            block,
            pool.to_string(),
            state.to_string(),
            "1".into(),
            if nodes.is_empty() { "-".into() } else { nodes.join(",") },
            used,
            usable,
        ]
    };
    for pool in pools {
        for fam in &pool.families {
            for cidr in &fam.cidrs {
                // (first block index, row) so the rows come out in address order.
                let mut cidr_rows: Vec<(u128, Vec<String>)> = Vec::new();
                for held in &cidr.allocated {
                    cidr_rows.push((
                        cidr.index_of(held),
                        held_row(held.prefix.to_string(), &pool.name, "allocated", &held.nodes, human(held.used), human(held.usable)),
                    ));
                }
                let runs = cidr.withheld_runs().map(|run| ("withheld", run)).chain(cidr.free_runs().map(|run| ("free", run)));
                for (state, run) in runs {
                    let row =
                        vec![run.to_string(), pool.name.clone(), state.into(), human(run.count()), "-".into(), "-".into(), "-".into()];
                    cidr_rows.push((run.first_index, row));
                }
                cidr_rows.sort_by_key(|(i, _)| *i);
                rows.extend(cidr_rows.into_iter().map(|(_, r)| r));
            }
            for orphan in &fam.orphans {
                rows.push(held_row(
                    orphan.prefix.to_string(),
                    &pool.name,
                    "orphan",
                    &orphan.nodes,
                    human(orphan.used),
                    human(orphan.usable),
                ));
            }
        }
    }
    // Blocks under a pool name no CiliumPodIPPool has (the mode's own pools are not orphans).
    let mut missing: Vec<(&str, &str, &std::sync::Arc<str>)> = Vec::new();
    for (node, p) in report.missing_pool_entries().filter(|(_, p)| selected(&p.pool)) {
        missing.extend(p.blocks.iter().map(|b| (p.pool.as_ref(), b.as_ref(), &node.name)));
    }
    missing.sort();
    for (pool, block, node) in missing {
        rows.push(held_row(block.to_string(), pool, "orphan", std::slice::from_ref(node), "-".into(), "-".into()));
    }
    // On a narrow terminal the block, its state and its node stay: the figures go first.
    Grid::new(&["BLOCK", "POOL", "STATE", "BLOCKS", "NODE", "USED", "USABLE"], rows).shedding_first(&["USABLE", "USED", "BLOCKS"])
}

/// Pools of a non-multi-pool mode (ENI's `default`): what nodes hold; capacity is not in the cluster.
pub fn mode_pools_table(ipam: &IpamReport) -> Grid {
    let mut rows = Vec::new();
    for pool in &ipam.mode_pools {
        for fam in &pool.families {
            rows.push(vec![
                pool.name.clone(),
                ipam.mode.clone(),
                fam.family.to_string(),
                human(fam.allocated_blocks),
                human(fam.allocated_addresses),
                opt(fam.used_addresses),
                opt(fam.idle_addresses),
                fam.nodes.to_string(),
                "unknown".to_string(),
            ]);
        }
    }
    Grid::new(&["POOL", "IPAM-MODE", "FAMILY", "BLOCKS", "ALLOCATED", "USED", "IDLE", "NODES", "CAPACITY"], rows)
}

/// Cluster-pool blocks: `spec.ipam.podCIDRs` per node.
pub fn pod_cidrs_table(ipam: &IpamReport) -> Grid {
    let rows = ipam.pod_cidrs.iter().map(|n| vec![n.node.clone(), n.pod_cidrs.join(","), opt(n.used_addresses)]).collect();
    Grid::new(&["NODE", "PODCIDRS", "USED"], rows)
}
