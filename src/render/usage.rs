//! `usage` output: the pool table (default and wide), per-node rows, per-block rows, the
//! definitions footer, and the versioned JSON/YAML document (docs/usage.md, docs/design/json-contract.md).

use super::{Render, SCHEMA_VERSION, Style, bar, human, table};
use crate::allocator::{Count, FamilyReport, IpamReport, NodeReport, PoolReport, Problem, Report, UsedSources, blocks};
use crate::model::{Origin, Snapshot};
use serde::Serialize;

/// Which table `usage` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// One row per pool and family (the default).
    Pools,
    /// `--by node`.
    Nodes,
    /// `--show-blocks`.
    Blocks,
}

/// `usage`'s result: the pools asked for, from one snapshot (also what `--watch` re-renders).
pub struct Usage<'a> {
    pub snapshot: &'a Snapshot,
    pub report: &'a Report,
    /// The pools asked for; empty means every pool.
    pub names: &'a [String],
    pub table: Table,
}

impl<'a> Usage<'a> {
    /// The reports of the pools asked for.
    pub fn pools(&self) -> Vec<&'a PoolReport> {
        selected(self.report, self.names)
    }
}

/// The reports of the pools named (all when `names` is empty).
pub fn selected<'a>(report: &'a Report, names: &[String]) -> Vec<&'a PoolReport> {
    report.pools.iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect()
}

/// `ciliumpodippool/NAME` lines.
pub fn pool_names(pools: &[&PoolReport]) -> String {
    pools.iter().map(|p| format!("ciliumpodippool/{}\n", p.name)).collect()
}

impl Render for Usage<'_> {
    fn document(&self) -> impl Serialize {
        UsageDocument::new(self.report, &self.pools(), &self.snapshot.origin, self.names.is_empty())
    }

    fn names(&self) -> Option<String> {
        Some(pool_names(&self.pools()))
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        let ipam = &self.report.ipam;
        if ipam.nothing_to_show {
            return nothing_to_show(ipam);
        }
        let pools = self.pools();
        let selected_name = |name: &str| self.names.is_empty() || self.names.iter().any(|p| p == name);
        let mut out = match self.table {
            Table::Blocks => blocks_table(&pools, style),
            Table::Nodes => nodes_table(self.report, &selected_name, style),
            Table::Pools => {
                // Modes without CiliumPodIPPools show what nodes hold instead of an empty pool table.
                let mode_tables = [
                    (!ipam.mode_pools.is_empty()).then(|| mode_pools_table(ipam, style)),
                    (!ipam.pod_cidrs.is_empty() && self.names.is_empty()).then(|| pod_cidrs_table(ipam, style)),
                ];
                let pool_table = (!pools.is_empty() || mode_tables.iter().all(Option::is_none)).then(|| pools_table(&pools, wide, style));
                std::iter::once(pool_table).chain(mode_tables).flatten().collect::<Vec<_>>().join("\n")
            }
        };
        if style.headers {
            let snapshot = self.snapshot;
            out.push_str(&footer(&self.report.used_sources, &snapshot.origin, &snapshot.notes, snapshot.pools.len(), snapshot.nodes.len(), style));
            for line in mode_lines(ipam) {
                out.push_str(&style.paint(&line, super::Tone::Dim));
                out.push('\n');
            }
        }
        out
    }

    fn openmetrics(&self) -> Option<String> {
        Some(super::metrics::openmetrics(self.report, &self.pools(), &self.snapshot.origin))
    }
}

/// The machine-readable document of `usage` and `inspect` (docs/design/json-contract.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageDocument<'a> {
    pub schema_version: u32,
    pub source: &'a Origin,
    pub pools: Vec<&'a PoolReport>,
    pub nodes: Vec<NodeReport>,
    pub problems: Vec<&'a Problem>,
    /// The IPAM mode, the mode's own pools (ENI), cluster-pool podCIDRs per node.
    pub ipam: &'a IpamReport,
}

impl<'a> UsageDocument<'a> {
    /// The document restricted to `pools` (nodes keep only those pools' entries).
    pub fn new(report: &'a Report, pools: &[&'a PoolReport], origin: &'a Origin, all_selected: bool) -> Self {
        let selected = |name: &str| all_selected || pools.iter().any(|p| p.name == name);
        let nodes = report
            .nodes
            .iter()
            .map(|n| NodeReport { pools: n.pools.iter().filter(|p| selected(&p.pool)).cloned().collect(), ..n.clone() })
            .filter(|n| all_selected || !n.pools.is_empty())
            .collect();
        UsageDocument {
            schema_version: SCHEMA_VERSION,
            source: origin,
            pools: pools.to_vec(),
            nodes,
            problems: report.problems.iter().filter(|p| all_selected || p.pool.as_deref().is_some_and(selected)).collect(),
            ipam: &report.ipam,
        }
    }
}

fn opt(count: Option<Count>) -> String {
    count.map_or_else(|| "?".to_string(), human)
}

fn cidrs_cell(fam: &FamilyReport) -> String {
    fam.cidrs.iter().map(|c| c.cidr.as_str()).collect::<Vec<_>>().join(",")
}

/// One row per pool and family.
pub fn pools_table(pools: &[&PoolReport], wide: bool, style: &Style) -> String {
    let mut header = vec!["POOL", "FAMILY", "CIDRS", "MASK", "BLOCKS(alloc/cap)", "TOTAL", "RESERVED", "ALLOCATED", "USED", "FREE", "UTIL"];
    if wide {
        header.extend(["FREE-BLOCKS", "WITHHELD-BLOCKS", "IDLE", "ORPHANS", "NODES", "RUNWAY"]);
    }
    let mut rows = Vec::new();
    for pool in pools {
        for fam in &pool.families {
            let mut row = vec![
                pool.name.clone(),
                fam.family.to_string(),
                cidrs_cell(fam),
                fam.mask_size.map_or("?".to_string(), |m| format!("/{m}")),
                format!("{}/{}", human(fam.allocated_blocks), human(fam.capacity_blocks)),
                human(fam.total_addresses),
                human(fam.reserved_addresses),
                human(fam.allocated_addresses),
                opt(fam.used_addresses),
                human(fam.free_addresses),
                bar(fam.utilization(), style),
            ];
            if wide {
                row.extend([
                    human(fam.free_blocks),
                    human(fam.withheld_blocks),
                    opt(fam.idle_addresses),
                    human(fam.orphan_blocks),
                    fam.nodes_holding.to_string(),
                    fam.runway_nodes.map_or("-".to_string(), human),
                ]);
            }
            rows.push(row);
        }
    }
    table(&header, rows, style)
}

/// One row per node and pool.
pub fn nodes_table(report: &Report, selected: &dyn Fn(&str) -> bool, style: &Style) -> String {
    let mut rows = Vec::new();
    for node in &report.nodes {
        for p in node.pools.iter().filter(|p| selected(&p.pool)) {
            let idle = p.used_addresses.map(|u| p.usable_addresses.saturating_sub(u));
            let mut pool = p.pool.clone();
            if !p.pool_exists {
                let mode_pool = report.ipam.mode_pools.iter().any(|m| m.name == p.pool);
                pool.push_str(&if mode_pool { format!(" ({})", report.ipam.mode) } else { " (missing)".to_string() });
            }
            rows.push(vec![
                node.name.clone() + if node.ignored { " (ignored)" } else { "" },
                pool,
                p.blocks.len().to_string(),
                human(p.usable_addresses),
                opt(p.used_addresses),
                (p.needed_total()).to_string(),
                opt(idle),
            ]);
        }
    }
    table(&["NODE", "POOL", "BLOCKS", "USABLE", "USED", "NEEDED", "IDLE"], rows, style)
}

/// One row per allocated, withheld or orphan block; runs of withheld and free blocks as ranges.
pub fn blocks_table(pools: &[&PoolReport], style: &Style) -> String {
    let mut rows = Vec::new();
    for pool in pools {
        for fam in &pool.families {
            let Some(mask) = fam.mask_size else { continue };
            for cidr in &fam.cidrs {
                // (first block index, row) so the rows come out in address order.
                let mut cidr_rows: Vec<(u128, Vec<String>)> = Vec::new();
                for held in &cidr.allocated {
                    let index = blocks::block_index(&cidr.prefix, mask, held.prefix.first());
                    cidr_rows.push((index, vec![
                        held.prefix.to_string(),
                        pool.name.clone(),
                        "allocated".into(),
                        held.nodes.join(","),
                        format!("{}/{}", human(held.used), human(held.usable)),
                    ]));
                }
                for (state, set) in [("withheld", &cidr.withheld), ("free", &cidr.free)] {
                    for &(first, last) in set.ranges() {
                        let start = blocks::block_at(&cidr.prefix, mask, first);
                        let text = if first == last {
                            start.to_string()
                        } else {
                            format!("{start} .. {} ({} blocks)", blocks::block_at(&cidr.prefix, mask, last), human(Count::span(first, last)))
                        };
                        cidr_rows.push((first, vec![text, pool.name.clone(), state.into(), "-".into(), "-".into()]));
                    }
                }
                cidr_rows.sort_by_key(|(i, _)| *i);
                rows.extend(cidr_rows.into_iter().map(|(_, r)| r));
            }
            for orphan in &fam.orphans {
                rows.push(vec![
                    orphan.prefix.to_string(),
                    pool.name.clone(),
                    "orphan".into(),
                    orphan.nodes.join(","),
                    format!("{}/{}", human(orphan.used), human(orphan.usable)),
                ]);
            }
        }
    }
    table(&["BLOCK", "POOL", "STATE", "NODE", "USED/USABLE"], rows, style)
}

/// Pools of a non-multi-pool mode (ENI's `default`): what nodes hold; capacity is not in the cluster.
pub fn mode_pools_table(ipam: &IpamReport, style: &Style) -> String {
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
    table(&["POOL", "IPAM-MODE", "FAMILY", "BLOCKS", "ALLOCATED", "USED", "IDLE", "NODES", "CAPACITY"], rows, style)
}

/// Cluster-pool blocks: `spec.ipam.podCIDRs` per node.
pub fn pod_cidrs_table(ipam: &IpamReport, style: &Style) -> String {
    let rows = ipam.pod_cidrs.iter().map(|n| vec![n.node.clone(), n.pod_cidrs.join(","), opt(n.used_addresses)]).collect();
    table(&["NODE", "PODCIDRS", "USED"], rows, style)
}

/// What the IPAM mode means for these figures, one line each (table footers).
pub fn mode_lines(ipam: &IpamReport) -> Vec<String> {
    let mut lines = Vec::new();
    for pool in &ipam.mode_pools {
        lines.push(format!(
            "IPAM mode {}: pool {} is the agent's (no CiliumPodIPPool; ALLOCATED = usable addresses of the blocks nodes list); {}",
            ipam.mode, pool.name, pool.capacity_unknown
        ));
    }
    if !ipam.pod_cidrs.is_empty() {
        lines.push(match ipam.mode.as_str() {
            "multi-pool" => format!(
                "migrating from cluster-pool: {} node(s) still hold spec.ipam.podCIDRs; `kubectl ciliumpool check` verifies the default pool covers them",
                ipam.pod_cidrs.len()
            ),
            mode => format!(
                "IPAM mode {mode}: nodes' blocks are spec.ipam.podCIDRs; to migrate to multi-pool, create the default pool covering every podCIDR at the same mask size (`kubectl ciliumpool check` verifies it)"
            ),
        });
    }
    lines
}

/// The one line for a mode that has neither pools nor blocks to show.
pub fn nothing_to_show(ipam: &IpamReport) -> String {
    format!("IPAM mode {}: pod addresses are not managed through CiliumPodIPPools and CiliumNodes list no blocks; nothing to show.\n", ipam.mode)
}

/// The definitions and data sources, one line each (table output only).
pub fn footer(sources: &UsedSources, origin: &Origin, notes: &[String], pool_count: usize, node_count: usize, style: &Style) -> String {
    let definitions = [
        "TOTAL      addresses in the pool's CIDRs",
        "RESERVED   addresses inside valid reserved ranges (a reservation withholds every block it touches)",
        "ALLOCATED  usable addresses of the blocks CiliumNodes hold inside the pool's CIDRs",
        "USED       distinct IPs of running pod-network pods, CiliumEndpoints and node infrastructure inside allocated blocks",
        "FREE       usable addresses of blocks neither allocated nor withheld",
        "UTIL       allocated blocks / (allocated + free blocks); withheld blocks are not allocatable",
    ];
    let mut out = String::from("\n");
    for line in definitions {
        out.push_str(&style.paint(line, super::Tone::Dim));
        out.push('\n');
    }
    out.push_str(&style.paint(&sources_line(sources, origin, notes, pool_count, node_count), super::Tone::Dim));
    out.push('\n');
    out
}

/// `cluster https://...` or `files a, b`.
pub fn origin_text(origin: &Origin) -> String {
    match origin.kind {
        "cluster" => format!("cluster {}", origin.server.as_deref().unwrap_or("?")),
        _ => format!("files {}", origin.files.join(", ")),
    }
}

pub fn sources_line(sources: &UsedSources, origin: &Origin, notes: &[String], pool_count: usize, node_count: usize) -> String {
    let from = origin_text(origin);
    let used = if sources.known {
        format!(
            "used from {} pods, {} CiliumEndpoints, {} node infrastructure IPs ({} in-use IPs in no block)",
            sources.pods, sources.endpoints, sources.infrastructure_ips, sources.unmanaged_ips
        )
    } else {
        "used: unknown".to_string()
    };
    let mut line = format!("Sources: {pool_count} pools, {node_count} CiliumNodes from {from}; IPAM mode {}; {used}", origin.ipam_mode);
    for note in notes.iter().chain(&origin.warnings) {
        line.push_str("; ");
        line.push_str(note);
    }
    line
}
