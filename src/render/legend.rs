//! The legend under a `usage` table (stderr): one line per printed column that needs one, read
//! from the grids as built, so it names exactly the columns shown (the ENI table's, the wide
//! pool table's) and, for NOTE, exactly the notes that occur.

use super::Grid;

/// Which table a grid is: the same header means different things in different tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridKind {
    /// One row per CiliumPodIPPool and family.
    Pools,
    /// The pools of a mode without CiliumPodIPPools (ENI's `default`).
    ModePools,
    /// Cluster-pool `spec.ipam.podCIDRs` per node.
    PodCidrs,
    /// `--by node`.
    Nodes,
    /// `--show-blocks`.
    Blocks,
}

/// What `column` of a `kind` table means; `None` for columns that say it themselves.
fn meaning(kind: GridKind, column: &str) -> Option<&'static str> {
    use GridKind::*;
    Some(match (kind, column) {
        (Pools, "BLOCKS") => "allocated blocks / allocatable blocks (allocated + free; withheld blocks are not allocatable)",
        (Pools, "TOTAL") => "addresses in the pool's CIDRs",
        (Pools, "RESERVED") => "addresses inside valid reserved ranges (a reservation withholds every block it touches)",
        (Pools, "ALLOCATED") => "usable addresses of the blocks CiliumNodes hold inside the pool's CIDRs",
        (Pools, "USED") => "distinct IPs of running pod-network pods, CiliumEndpoints and node infrastructure inside allocated blocks",
        (Pools, "FREE") => "usable addresses of blocks neither allocated nor withheld",
        (Pools, "UTIL") => "allocated blocks / allocatable blocks (≥: at least, reserved ranges not in the input; ?: unknown)",
        (Pools, "CAPACITY") => "blocks the CIDRs split into",
        (Pools, "WITHHELD-BLOCKS") => "blocks a reserved range touches (not allocatable)",
        (Pools, "FREE-BLOCKS") => "blocks neither allocated nor withheld",
        (Pools | ModePools, "IDLE") => "ALLOCATED - USED",
        (Pools, "ORPHANS") => "blocks nodes hold outside the pool's CIDRs",
        (Pools, "NODES") => "nodes holding blocks of the pool",
        (Pools, "RUNWAY") => "nodes that can still join at the median blocks per node",
        (Pools, "ALERT") => "the thresholds (--fail-above, --min-free-blocks) the row breaches",
        (ModePools, "BLOCKS") => "blocks (addresses and prefixes) the nodes list for the pool",
        (ModePools, "ALLOCATED") => "usable addresses of those blocks",
        (ModePools | PodCidrs, "USED") => "distinct in-use IPs inside them",
        (ModePools, "NODES") => "nodes listing blocks of the pool",
        (ModePools, "CAPACITY") => "not recorded in the cluster in this IPAM mode (the line below says where it lives)",
        (PodCidrs, "PODCIDRS") => "the node's spec.ipam.podCIDRs (cluster-pool blocks)",
        (Nodes, "BLOCKS") => "valid blocks the node lists for the pool, per family",
        (Nodes, "USABLE") => "usable addresses of those blocks",
        (Nodes, "USED") => "distinct in-use IPs inside them",
        (Nodes, "NEEDED") => "addresses the node's agent requests from the pool in this family (spec.ipam.pools.requested[].needed)",
        (Nodes, "IDLE") => "USABLE - USED",
        (Blocks, "STATE") => {
            "allocated: held by a node; withheld: touched by a reserved range; free: allocatable; orphan: outside the pool's CIDRs, or under a pool that does not exist"
        }
        (Blocks, "BLOCKS") => "how many blocks the row stands for (runs of withheld and free blocks are one row)",
        (Blocks, "USED") => "in-use IPs inside the block",
        (Blocks, "USABLE") => "its usable addresses",
        _ => return None,
    })
}

/// What a `--by node` NOTE value means (`mode` is the IPAM mode, for `<mode>-pool`).
fn note_meaning(note: &str, mode: &str) -> Option<String> {
    match note {
        "pool-missing" => Some("no CiliumPodIPPool has this name".into()),
        "node-ignored" => Some("the operator skips the node".into()),
        _ if note.strip_suffix("-pool") == Some(mode) => Some(format!("IPAM mode {mode}'s own pool (the agent's; no CiliumPodIPPool)")),
        _ => None,
    }
}

/// The legend lines of `grids` (plain text; the caller dims them), labels aligned.
pub fn lines(grids: &[(GridKind, Grid)], mode: &str) -> Vec<String> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut seen: Vec<(GridKind, &str)> = Vec::new();
    for (kind, grid) in grids {
        for (i, column) in grid.header.iter().enumerate() {
            if seen.contains(&(*kind, column.as_str())) {
                continue;
            }
            seen.push((*kind, column.as_str()));
            let text = if (*kind, column.as_str()) == (GridKind::Nodes, "NOTE") {
                notes_text(grid, i, mode)
            } else {
                meaning(*kind, column).map(str::to_string)
            };
            if let Some(text) = text {
                entries.push((column.clone(), text));
            }
        }
    }
    let width = entries.iter().map(|(label, _)| label.len()).max().unwrap_or(0).max(9) + 2;
    entries.into_iter().map(|(label, text)| format!("{label:<width$}{text}")).collect()
}

/// The NOTE values that occur in column `at`, each with its meaning (`None` when none occur).
fn notes_text(grid: &Grid, at: usize, mode: &str) -> Option<String> {
    let mut notes: Vec<&str> = grid.rows.iter().filter_map(|row| row.get(at)).flat_map(|cell| cell.split(',')).collect();
    notes.sort_unstable();
    notes.dedup();
    let said: Vec<String> = notes.into_iter().filter_map(|note| note_meaning(note, mode).map(|text| format!("{note}: {text}"))).collect();
    (!said.is_empty()).then(|| said.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(header: &[&str], rows: &[&[&str]]) -> Grid {
        Grid::new(header, rows.iter().map(|r| r.iter().map(|c| c.to_string()).collect()).collect())
    }

    #[test]
    fn the_legend_names_exactly_the_printed_columns_that_need_it() {
        let eni = grid(&["POOL", "IPAM-MODE", "FAMILY", "BLOCKS", "ALLOCATED", "USED", "IDLE", "NODES", "CAPACITY"], &[]);
        let labels: Vec<String> =
            lines(&[(GridKind::ModePools, eni)], "eni").iter().map(|l| l.split_whitespace().next().unwrap().to_string()).collect();
        assert_eq!(labels, ["BLOCKS", "ALLOCATED", "USED", "IDLE", "NODES", "CAPACITY"]);
    }

    #[test]
    fn the_note_line_says_only_the_notes_that_occur() {
        let nodes = grid(&["NODE", "NOTE"], &[&["a", "eni-pool"], &["b", "-"], &["c", "node-ignored,eni-pool"]]);
        let legend = lines(&[(GridKind::Nodes, nodes)], "eni");
        assert_eq!(legend.len(), 1, "{legend:?}");
        assert!(legend[0].starts_with("NOTE       eni-pool: IPAM mode eni's own pool"), "{legend:?}");
        assert!(legend[0].contains("; node-ignored: the operator skips the node") && !legend[0].contains("pool-missing"), "{legend:?}");
        let quiet = grid(&["NODE", "NOTE"], &[&["a", "-"]]);
        assert!(lines(&[(GridKind::Nodes, quiet)], "multi-pool").is_empty());
    }

    #[test]
    fn labels_align_past_the_longest_printed_column() {
        let wide = grid(&["POOL", "BLOCKS", "WITHHELD-BLOCKS"], &[]);
        let legend = lines(&[(GridKind::Pools, wide)], "multi-pool");
        assert_eq!(legend[0].find("allocated"), legend[1].find("blocks a reserved"), "{legend:?}");
        assert!(legend[1].starts_with("WITHHELD-BLOCKS  blocks"), "{legend:?}");
    }
}
