//! `usage` output: the pool table (default and wide), per-node rows, per-block rows, the
//! definitions footer, and the versioned JSON/YAML document (docs/usage.md, docs/design/json-contract.md).

mod breakdown;
mod cells;

pub use breakdown::{blocks_table, mode_pools_table, nodes_table, pod_cidrs_table};
use cells::opt;

use super::legend::{self, GridKind};
use super::{Grid, Render, SCHEMA_VERSION, Style, Tone, human, percent};
use crate::allocator::{Count, FamilyReport, IpamReport, NodeReport, PoolReport, Problem, Report, UsedSources};
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
    pub thresholds: Thresholds,
    /// The width the tables are fitted to (stdout's, `Context::style`): the legend on stderr
    /// defines only the columns printed at it.
    pub table_width: Option<usize>,
}

/// `--fail-above` and `--min-free-blocks`: when a pool family counts as breaching.
#[derive(Clone, Copy, Debug, Default)]
pub struct Thresholds {
    /// Utilization in percent.
    pub fail_above: Option<f64>,
    pub min_free_blocks: Option<u64>,
}

impl Thresholds {
    pub fn any(&self) -> bool {
        self.fail_above.is_some() || self.min_free_blocks.is_some()
    }

    /// Each threshold `fam` breaches: (the table cell, no spaces: `UTIL>90%` / `FREE-BLOCKS<4`;
    /// the reason for the stderr line). The one place the thresholds are compared.
    fn breaches(&self, fam: &FamilyReport) -> Vec<(String, String)> {
        let mut out = Vec::new();
        // With reserved ranges the input cannot show, utilization is at least what it shows and
        // free blocks at most: a breach of those figures is certain.
        let bound = if fam.reservations_known { "" } else { " at least" };
        if let (Some(limit), Some(u)) = (self.fail_above, fam.utilization_at_least())
            && u * 100.0 > limit
        {
            out.push((format!("UTIL>{limit}%"), format!("utilization{bound} {} is above --fail-above {limit}%", percent(Some(u)))));
        }
        if let Some(n) = self.min_free_blocks
            && fam.free_blocks < Count::from(n)
        {
            // Without CiliumNodes or reserved ranges, the free blocks shown are an upper bound.
            let bound = if fam.exact(()).is_some() { "" } else { "at most " };
            out.push((format!("FREE-BLOCKS<{n}"), format!("{bound}{} free block(s), fewer than --min-free-blocks {n}", fam.free_blocks)));
        }
        out
    }

    /// The table cells of the thresholds `fam` breaches.
    pub fn breached(&self, fam: &FamilyReport) -> Vec<String> {
        self.breaches(fam).into_iter().map(|(cell, _)| cell).collect()
    }

    /// One line per breaching pool family, for stderr: which pool, which figure, which threshold.
    pub fn breach_lines(&self, pools: &[&PoolReport]) -> Vec<String> {
        let mut lines = Vec::new();
        for pool in pools {
            for fam in &pool.families {
                let reasons: Vec<String> = self.breaches(fam).into_iter().map(|(_, reason)| reason).collect();
                if !reasons.is_empty() {
                    lines.push(format!(
                        "threshold breached: pool {} {}: {}",
                        crate::escape::Field(&pool.name),
                        fam.family,
                        reasons.join("; ")
                    ));
                }
            }
        }
        lines
    }
}

impl<'a> Usage<'a> {
    /// The reports of the pools asked for.
    pub fn pools(&self) -> Vec<&'a PoolReport> {
        selected(self.report, self.names)
    }

    /// What the exposition holds besides the pools: deleted pools' orphans when no pool is named.
    pub fn metric_options(&self) -> super::metrics::Options {
        super::metrics::Options { deleted_pools: self.names.is_empty(), ..Default::default() }
    }

    /// The tables of the view (none when the mode has nothing to show).
    pub fn grids(&self, wide: bool, style: &Style) -> Vec<Grid> {
        self.kinded_grids(wide, style).into_iter().map(|(_, grid)| grid).collect()
    }

    /// The tables of the view, each with its kind (for the legend).
    fn kinded_grids(&self, wide: bool, style: &Style) -> Vec<(GridKind, Grid)> {
        let ipam = &self.report.ipam;
        if ipam.nothing_to_show {
            return Vec::new();
        }
        let pools = self.pools();
        let selected_name = |name: &str| self.names.is_empty() || self.names.iter().any(|p| p == name);
        match self.table {
            Table::Blocks => vec![(GridKind::Blocks, blocks_table(self.report, &pools, &selected_name))],
            Table::Nodes => vec![(GridKind::Nodes, nodes_table(self.report, &selected_name))],
            Table::Pools => {
                // Modes without CiliumPodIPPools show what nodes hold instead of an empty pool table.
                let mode_tables = [
                    (!ipam.mode_pools.is_empty()).then(|| (GridKind::ModePools, mode_pools_table(ipam))),
                    (!ipam.pod_cidrs.is_empty() && self.names.is_empty()).then(|| (GridKind::PodCidrs, pod_cidrs_table(ipam))),
                ];
                let pool_table = (!pools.is_empty() || mode_tables.iter().all(Option::is_none))
                    .then(|| (GridKind::Pools, pools_table(&pools, wide, &self.thresholds, style)));
                std::iter::once(pool_table).chain(mode_tables).flatten().collect()
            }
        }
    }
}

/// The reports of the pools named (all when `names` is empty).
pub fn selected<'a>(report: &'a Report, names: &[String]) -> Vec<&'a PoolReport> {
    report.pools.iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect()
}

/// `-o name` of pools: `ciliumpodippool.cilium.io/NAME` lines (`render::name_records`).
pub fn pool_names(pools: &[&PoolReport]) -> String {
    super::name_records(pools.iter().map(|p| (super::POOL_RESOURCE, p.name.as_str())))
}

impl Render for Usage<'_> {
    fn document(&self) -> impl Serialize {
        UsageDocument::new(self.report, &self.pools(), &self.snapshot.origin, self.names.is_empty())
    }

    /// `--by node`: a row per node; else a row per pool (`--show-blocks` too: blocks are no array
    /// of the document).
    fn rows(&self) -> Option<&'static str> {
        Some(if matches!(self.table, Table::Nodes) { "nodes" } else { "pools" })
    }

    fn names(&self) -> Option<String> {
        let mut pools = self.pools();
        if self.thresholds.any() {
            pools.retain(|p| p.families.iter().any(|f| !self.thresholds.breached(f).is_empty()));
        }
        Some(pool_names(&pools))
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        if self.report.ipam.nothing_to_show {
            return nothing_to_show(&self.report.ipam);
        }
        self.grids(wide, style).into_iter().map(|g| g.render(style)).collect::<Vec<_>>().join("\n")
    }

    fn notes(&self, wide: bool, style: &Style) -> String {
        if self.report.ipam.nothing_to_show {
            return String::new();
        }
        let snapshot = self.snapshot;
        let mut out = String::from("\n");
        let table_style = Style { width: self.table_width, ..*style };
        for line in legend::lines_as_printed(&self.kinded_grids(wide, style), &self.report.ipam.mode, &table_style) {
            out.push_str(&style.paint(&line, Tone::Dim));
            out.push('\n');
        }
        out.push_str(&style.paint(
            &sources_line(&self.report.used_sources, &snapshot.origin, &snapshot.notes, snapshot.pools.len(), snapshot.nodes.len()),
            Tone::Dim,
        ));
        out.push('\n');
        for line in mode_lines(&self.report.ipam) {
            out.push_str(&style.paint(&line, Tone::Dim));
            out.push('\n');
        }
        out
    }

    fn openmetrics(&self) -> Option<String> {
        Some(super::metrics::openmetrics(self.report, &self.pools(), &self.snapshot.origin, self.metric_options()))
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
            .map(|n| NodeReport {
                name: n.name.clone(),
                pools: n.pools.iter().filter(|p| selected(&p.pool)).cloned().collect(),
                ignored: n.ignored,
            })
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

fn cidrs_cell(fam: &FamilyReport) -> String {
    fam.cidrs.iter().map(|c| c.cidr.as_str()).collect::<Vec<_>>().join(",")
}

/// One row per pool and family. The default fits about 120 columns; `-o wide` adds the CIDRs,
/// the block breakdown and the node figures. The bar (a picture, not a value) is left out under
/// `--no-headers`, where every cell is one word for `awk`.
pub fn pools_table(pools: &[&PoolReport], wide: bool, thresholds: &Thresholds, style: &Style) -> Grid {
    let mut header = vec!["POOL", "FAMILY", "MASK", "BLOCKS", "TOTAL", "RESERVED", "ALLOCATED", "USED", "FREE", "UTIL"];
    if style.headers {
        header.push("");
    }
    if wide {
        header.extend(["CAPACITY", "WITHHELD-BLOCKS", "FREE-BLOCKS", "IDLE", "ORPHANS", "NODES", "RUNWAY", "CIDRS"]);
    }
    if thresholds.any() {
        header.push("ALERT");
    }
    let mut rows = Vec::new();
    for pool in pools {
        for fam in &pool.families {
            let breached = thresholds.breached(fam);
            let tone = if breached.is_empty() { None } else { Some(Tone::Bad) };
            let mut row = vec![
                pool.name.clone(),
                fam.family.to_string(),
                fam.mask_size.map_or("?".to_string(), |m| format!("/{m}")),
                format!("{}/{}", opt(fam.allocated(fam.allocated_blocks)), opt(fam.known(fam.allocated_blocks + fam.free_blocks))),
                human(fam.total_addresses),
                opt(fam.known(fam.reserved_addresses)),
                opt(fam.allocated(fam.allocated_addresses)),
                opt(fam.used_addresses),
                opt(fam.exact(fam.free_addresses)),
                super::utilization(fam),
            ];
            if style.headers {
                row.push(super::utilization_bar(fam, style));
            }
            if wide {
                row.extend([
                    human(fam.capacity_blocks),
                    opt(fam.known(fam.withheld_blocks)),
                    opt(fam.exact(fam.free_blocks)),
                    opt(fam.idle_addresses),
                    human(fam.orphan_blocks),
                    fam.allocated(fam.nodes_holding).map_or_else(|| "?".to_string(), |n| n.to_string()),
                    fam.exact(fam.runway_nodes).map_or_else(|| "?".to_string(), |r| r.map_or("-".to_string(), human)),
                    cidrs_cell(fam),
                ]);
            }
            if thresholds.any() {
                row.push(if breached.is_empty() { "-".to_string() } else { breached.join(",") });
            }
            if let Some(tone) = tone {
                row[0] = style.paint(&row[0], tone);
            }
            rows.push(row);
        }
    }
    // On a narrow terminal the utilization stays: the CIDRs' size and the block size go first.
    Grid::new(&header, rows).shedding_first(&["TOTAL", "MASK", "RESERVED", "ALLOCATED"])
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
    format!(
        "IPAM mode {}: pod addresses are not managed through CiliumPodIPPools and CiliumNodes list no blocks; nothing to show.\n",
        crate::escape::Field(&ipam.mode)
    )
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
    // The version a sysdump names (before 1.21, v2alpha1 pools are all there is: no hidden reservations).
    for version in &origin.cilium_versions {
        let tag = version.version.as_deref().unwrap_or("unknown");
        line.push_str(&format!("; Cilium {} ({})", crate::escape::Field(tag), crate::escape::Field(&version.source)));
    }
    // What the input cannot show is not here: each caveat is its own `warning:` line.
    for note in notes {
        line.push_str("; ");
        line.push_str(note);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_block_containing_its_whole_cidr_is_a_row_in_address_order() {
        // node-1 lists a /12 around the pool's first CIDR (found by fuzzing: the row's sort key
        // subtracted the CIDR's start from the block's, which lies below it); node-2 a /24 of the second.
        let snapshot = Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {"ipv4": {"cidrs": ["10.1.0.0/16", "10.9.0.0/24"], "maskSize": 24}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "node-1"}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.1.0.0/12"]}]}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "node-2"}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.9.0.0/24"]}]}}}}),
        ]);
        let report = crate::allocator::analyze(&snapshot);
        let pools: Vec<&PoolReport> = report.pools.iter().collect();
        let text = blocks_table(&report, &pools, &|_| true).render(&Style::plain());
        let rows: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split_whitespace().take(5).collect()).collect();
        assert_eq!(rows, [["10.0.0.0/12", "blue", "allocated", "1", "node-1"], ["10.9.0.0/24", "blue", "allocated", "1", "node-2"]]);
    }
}
