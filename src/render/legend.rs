//! The legend under a `usage` table (stderr): one line per printed column that needs one, read
//! from the grids as built, so it names exactly the columns shown (the ENI table's, the wide
//! pool table's) and, for NOTE, exactly the notes that occur.

use super::{Grid, Style};

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

/// [`lines`] for the tables as they print at `style`'s width: only the printed columns are
/// defined, and one more line names the columns a narrow terminal left out and how to see them
/// (`-o wide` prints the full text, unfitted).
pub fn lines_as_printed(grids: &[(GridKind, Grid)], mode: &str, style: &Style) -> Vec<String> {
    let mut left_out: Vec<String> = Vec::new();
    let mut printed = Vec::new();
    for (kind, grid) in grids {
        let shown = grid.printed_columns(style);
        let kept: Vec<usize> = (0..grid.header.len()).filter(|&i| shown.contains(&grid.header[i])).collect();
        for column in grid.header.iter().filter(|h| !h.is_empty() && !shown.contains(h)) {
            if !left_out.contains(column) {
                left_out.push(column.clone());
            }
        }
        let rows = grid.rows.iter().map(|row| kept.iter().filter_map(|&i| row.get(i).cloned()).collect()).collect();
        printed.push((*kind, Grid { header: kept.iter().map(|&i| grid.header[i].clone()).collect(), rows, shed_first: Vec::new() }));
    }
    let mut out = lines(&printed, mode);
    if !left_out.is_empty() {
        out.push(format!("Not shown for width: {}; widen the terminal or use -o wide", left_out.join(", ")));
    }
    out
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

    /// Issue 42: a column a narrow terminal leaves out is not defined, and one line says which
    /// were left out and how to see them.
    #[test]
    fn columns_left_out_for_width_are_named_not_defined() {
        let row = |name: &str| vec![name.to_string(), "ipv4".into(), "/24".into(), "1/2".into(), "100".into(), "0".into(), "50".into()];
        let header = ["POOL", "FAMILY", "MASK", "BLOCKS", "TOTAL", "RESERVED", "ALLOCATED"];
        let pools = Grid::new(&header, vec![row("a-rather-long-pool-name-here"), row("b")]).shedding_first(&["TOTAL", "MASK", "RESERVED"]);
        let wide = Style { width: Some(200), ..Style::plain() };
        let all = lines_as_printed(&[(GridKind::Pools, pools.clone())], "multi-pool", &wide);
        assert!(all.iter().all(|l| !l.starts_with("Not shown")) && all[1].starts_with("TOTAL"), "{all:?}");
        let narrow = Style { width: Some(60), ..Style::plain() };
        let printed = pools.printed_columns(&narrow);
        assert!(!printed.contains(&"TOTAL".to_string()), "the test needs TOTAL shed: {printed:?}");
        let legend = lines_as_printed(&[(GridKind::Pools, pools)], "multi-pool", &narrow);
        assert!(legend.iter().all(|l| !l.starts_with("TOTAL")), "{legend:?}");
        let last = legend.last().unwrap();
        assert!(
            last.starts_with("Not shown for width: MASK, TOTAL, RESERVED") && last.ends_with("; widen the terminal or use -o wide"),
            "{legend:?}"
        );
    }

    #[test]
    fn labels_align_past_the_longest_printed_column() {
        let wide = grid(&["POOL", "BLOCKS", "WITHHELD-BLOCKS"], &[]);
        let legend = lines(&[(GridKind::Pools, wide)], "multi-pool");
        assert_eq!(legend[0].find("allocated"), legend[1].find("blocks a reserved"), "{legend:?}");
        assert!(legend[1].starts_with("WITHHELD-BLOCKS  blocks"), "{legend:?}");
    }
}
