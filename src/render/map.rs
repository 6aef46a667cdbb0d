//! `usage POOL --map`: every CIDR of a pool as a grid of cells, one per block, or one per 2^k
//! blocks where a CIDR has more blocks than fit (IPv6). States are told apart by glyph and by
//! colour (the Okabe–Ito palette as xterm-256 colours), so the map reads with `--color never` and
//! with any colour vision. Interval arithmetic over the report's figures only: no block is
//! enumerated and no block geometry is computed here (docs/architecture.md).

pub use super::map_cells::{Cells, Changed, State, changed};
use super::map_cells::{CidrCells, FILL, GROUP, MARK, marks, paint_run};
use super::{Style, human};
use crate::allocator::{CidrReport, Count, FamilyReport, PoolReport};
use crate::escape::Field;
use crate::model::Addr;

/// What the map is drawn for.
pub struct MapOptions<'a> {
    /// The columns the map may take (the terminal's, or 80).
    pub width: usize,
    /// `--node`: this node's blocks are highlighted.
    pub node: Option<&'a str>,
    /// `--watch`: these cells are marked, changed since the previous frame.
    pub changed: Option<&'a Changed>,
}

/// The most rows one CIDR takes before its cells stand for several blocks.
const MAX_ROWS: u128 = 16;

/// What one cell holds: blocks by state, and the fill of a lone allocated block.
#[derive(Clone, Debug, Default)]
struct Tally {
    allocated: u128,
    grandfathered: u128,
    withheld: u128,
    free: u128,
    node: bool,
    next: bool,
    /// Addresses in use / usable, of the one allocated block of an unaggregated cell.
    fill: Option<f64>,
}

/// How a CIDR is laid out: 2^`shift` blocks a cell, `per_row` cells a row, `cells` cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    shift: u32,
    per_row: usize,
    cells: u128,
}

/// Blocks in each state for the legend, over a family.
#[derive(Default)]
struct Counts {
    states: Vec<(State, Count)>,
    aggregated: bool,
}

impl Counts {
    fn add(&mut self, state: State, count: Count) {
        match self.states.iter_mut().find(|(s, _)| *s == state) {
            Some((_, total)) => *total += count,
            None => self.states.push((state, count)),
        }
    }

    fn get(&self, state: State) -> Count {
        self.states.iter().find(|(s, _)| *s == state).map_or(Count::ZERO, |(_, c)| *c)
    }
}

/// The map of `pool`: for each family, a heading, each CIDR's grid with the first address of each
/// row, the orphans, and a legend with the blocks in each state. Lines fit `options.width`.
pub fn draw(pool: &PoolReport, options: &MapOptions, style: &Style) -> String {
    // A blank line between families.
    pool.families.iter().map(|fam| family(&pool.name, fam, options, style)).collect::<Vec<_>>().join("\n")
}

fn family(pool: &str, fam: &FamilyReport, options: &MapOptions, style: &Style) -> String {
    let mask = fam.mask_size.map_or("?".to_string(), |m| format!("/{m}"));
    let heading = format!("pool {} {}: {} CIDR(s), {mask} blocks\n", Field(pool), fam.family, fam.cidrs.len());
    let mut out = super::fit_prose(&heading, options.width);
    let next = next_block(fam);
    let mut counts = Counts::default();
    for (i, cidr) in fam.cidrs.iter().enumerate() {
        let next = next.filter(|(at, _)| *at == i).map(|(_, index)| index);
        out.push_str(&cidr_map(cidr, fam, next, options, style, &mut counts));
    }
    counts.add(State::Orphan, Count::from(fam.orphans.len()));
    for orphan in fam.orphans.iter().take(8) {
        let nodes: Vec<String> = orphan.nodes.iter().map(|n| Field(n).to_string()).collect();
        let line =
            format!("{} {} orphan: outside every CIDR of the pool, held by {}", State::Orphan.glyph(), orphan.prefix, nodes.join(","));
        out.push_str(&super::fit_prose(&(State::Orphan.paint(&line, style) + "\n"), options.width));
    }
    if fam.orphans.len() > 8 {
        out.push_str(&format!("… {} more orphan block(s): `usage --show-blocks` lists them\n", fam.orphans.len() - 8));
    }
    out.push_str(&legend(fam, &counts, next.map(|(at, index)| fam.cidrs[at].run(index, index).first.to_string()), options, style));
    if !fam.reservations_known {
        let note = "reserved ranges unknown (the input reads this pool through cilium.io/v2alpha1): cells shown free may be withheld\n";
        out.push_str(&super::fit_prose(note, options.width));
    }
    out
}

/// The cells of `pool`'s map as [`draw`] lays them out for `options`.
pub fn cells(pool: &PoolReport, options: &MapOptions) -> Cells {
    let mut out = Vec::new();
    for fam in &pool.families {
        let next = next_block(fam);
        for (at, cidr) in fam.cidrs.iter().enumerate() {
            if capacity(cidr) == 0 {
                continue;
            }
            let (grid, _) = laid_out(cidr, options.width);
            let next = next.filter(|(i, _)| *i == at).map(|(_, index)| index);
            let cells = states(cidr, fam, grid, next, options.node, &mut Counts::default());
            out.push(CidrCells { cidr: cidr.cidr.clone(), shift: grid.shift, cells });
        }
    }
    Cells(out)
}

/// The CIDR and block index of the next block the operator hands out, when known.
fn next_block(fam: &FamilyReport) -> Option<(usize, u128)> {
    let next = fam.next_block.and_then(|b| fam.exact(b))?;
    fam.cidrs
        .iter()
        .enumerate()
        .find_map(|(at, cidr)| cidr.free_runs().next().filter(|run| run.first == next).map(|run| (at, run.first_index)))
}

/// The blocks of `cidr` (a power of two; `u128::MAX` stands for 2^128).
fn capacity(cidr: &CidrReport) -> u128 {
    cidr.capacity_blocks.to_u128().unwrap_or(u128::MAX)
}

/// The first address of block `index` of `cidr`, as a row label.
fn label(cidr: &CidrReport, index: u128) -> String {
    let block = cidr.run(index, index).first;
    Addr { family: block.family, value: block.network }.to_string()
}

/// Columns a row of `cells` cells takes, the spaces between groups included.
fn row_width(cells: usize) -> usize {
    cells + if cells > GROUP { cells / GROUP - 1 } else { 0 }
}

/// The layout of `capacity` blocks beside labels `label_width` wide in `width` columns: the most
/// cells a row fits (a power of two, so that rows start at round addresses), then the fewest blocks
/// a cell that keeps the CIDR within [`MAX_ROWS`] rows.
fn layout(capacity: u128, width: usize, label_width: usize) -> Layout {
    let room = width.saturating_sub(label_width + 1);
    let most = capacity.checked_next_power_of_two().unwrap_or(1 << 127);
    let mut per_row: usize = 1;
    while (per_row as u128) < most && row_width(per_row * 2) <= room {
        per_row *= 2;
    }
    let mut shift = 0;
    while capacity.div_ceil(1u128 << shift) > per_row as u128 * MAX_ROWS {
        shift += 1;
    }
    Layout { shift, per_row, cells: capacity.div_ceil(1u128 << shift) }
}

/// The layout of `cidr` and the labels of its rows, as wide as the widest.
fn laid_out(cidr: &CidrReport, width: usize) -> (Layout, Vec<String>) {
    let capacity = capacity(cidr);
    // Grown until the labels fit it: only the rows' first addresses are labels, not the last block's.
    let mut label_width = label(cidr, 0).len();
    loop {
        let grid = layout(capacity, width, label_width);
        let row_blocks = (grid.per_row as u128) << grid.shift;
        let rows = grid.cells.div_ceil(grid.per_row as u128);
        let labels: Vec<String> = (0..rows).map(|r| label(cidr, r * row_blocks)).collect();
        let widest = labels.iter().map(String::len).max().unwrap_or(0);
        if widest <= label_width {
            return (grid, labels);
        }
        label_width = widest;
    }
}

/// A CIDR's heading and grid; its blocks counted into `counts`.
fn cidr_map(cidr: &CidrReport, fam: &FamilyReport, next: Option<u128>, options: &MapOptions, style: &Style, counts: &mut Counts) -> String {
    let capacity = capacity(cidr);
    let mut heading = format!("{}: {} blocks", Field(&cidr.cidr), human(cidr.capacity_blocks));
    if capacity == 0 {
        return super::fit_prose(&format!("{heading}, none whole: the CIDR is smaller than a block\n"), options.width);
    }
    let (grid, labels) = laid_out(cidr, options.width);
    let per_cell = Count::pow2(grid.shift);
    heading.push_str(&match grid.shift {
        0 => ", a cell each".to_string(),
        shift => format!(", 1 cell = {} blocks (a /{})", human(per_cell), cidr.mask_size as u32 - shift),
    });
    if cidr.draining {
        heading.push_str(", draining (all reserved)");
    }
    counts.aggregated |= grid.shift > 0;
    let states = states(cidr, fam, grid, next, options.node, counts);
    let changed = options.changed.and_then(|c| c.of(&cidr.cidr));
    let mut out = super::fit_prose(&format!("{heading}\n"), options.width);
    let label_width = labels.iter().map(String::len).max().unwrap_or(0);
    for ((row, cells), label) in states.chunks(grid.per_row).enumerate().zip(&labels) {
        out.push_str(&format!("{label:>label_width$} "));
        let first = row * grid.per_row;
        for (group, cells) in cells.chunks(GROUP).enumerate() {
            if group > 0 {
                out.push(' ');
            }
            let at = first + group * GROUP;
            let marked = |i| changed.is_some_and(|c| c.contains(&(at + i)));
            out.push_str(&paint_run(cells.iter().enumerate().map(|(i, &(s, g))| (s, g, marked(i))), style));
        }
        out.push('\n');
        out.push_str(&marks(label_width, first, cells.len(), changed));
    }
    out
}

/// The state and glyph of each cell of `cidr`, its blocks counted into `counts`.
fn states(
    cidr: &CidrReport,
    fam: &FamilyReport,
    grid: Layout,
    next: Option<u128>,
    node: Option<&str>,
    counts: &mut Counts,
) -> Vec<(State, char)> {
    let tallies = tallies(cidr, fam, grid, next, node, counts);
    tallies.iter().map(|t| cell(t, grid.shift, cidr.draining, fam.allocation_known)).collect()
}

/// The cells of `cidr`, and its blocks counted by state. Held blocks one by one (there are as many
/// as nodes hold), withheld and free blocks as runs spread over the cells they cover.
fn tallies(cidr: &CidrReport, fam: &FamilyReport, grid: Layout, next: Option<u128>, node: Option<&str>, counts: &mut Counts) -> Vec<Tally> {
    let mut cells = vec![Tally::default(); grid.cells as usize];
    let used_known = fam.used_addresses.is_some();
    for held in &cidr.allocated {
        let index = cidr.index_of(held);
        let Some(t) = cells.get_mut((index >> grid.shift) as usize) else { continue };
        let inside = cidr.reservations.iter().any(|r| r.blocks.contains(index));
        let mine = node.is_some_and(|n| held.nodes.iter().any(|h| **h == *n));
        if inside {
            t.grandfathered += 1;
        } else {
            t.allocated += 1;
        }
        t.node |= mine;
        if used_known && !held.usable.is_zero() {
            t.fill = Some(held.used.to_f64() / held.usable.to_f64());
        }
        let state = if mine {
            State::Node
        } else if inside {
            State::Grandfathered
        } else {
            State::Allocated
        };
        counts.add(state, Count::from(1u64));
    }
    spread(cidr.withheld.ranges(), grid.shift, &mut cells, |t, n| t.withheld += n);
    spread(cidr.free.ranges(), grid.shift, &mut cells, |t, n| t.free += n);
    counts.add(if cidr.draining { State::Draining } else { State::Withheld }, cidr.withheld.len());
    // The next block is drawn ▸ but counted as free: the legend's counts are the table's.
    if let Some(t) = next.and_then(|index| cells.get_mut((index >> grid.shift) as usize)) {
        t.next = true;
    }
    counts.add(if fam.allocation_known { State::Free } else { State::Unknown }, cidr.free.len());
    cells
}

/// Adds each run's blocks to the cells it covers: a cell per step, never a block.
fn spread(ranges: &[(u128, u128)], shift: u32, cells: &mut [Tally], mut add: impl FnMut(&mut Tally, u128)) {
    for &(first, last) in ranges {
        let (from, to) = (first >> shift, last >> shift);
        for at in from..=to.min(cells.len() as u128 - 1) {
            let start = (at << shift).max(first);
            let end = (at << shift).saturating_add((1u128 << shift) - 1).min(last);
            add(&mut cells[at as usize], end - start + 1);
        }
    }
}

/// The state and glyph of a cell: what matters most of what it holds.
fn cell(t: &Tally, shift: u32, draining: bool, allocation_known: bool) -> (State, char) {
    let held = t.allocated + t.grandfathered;
    if t.node {
        (State::Node, State::Node.glyph())
    } else if t.grandfathered > 0 {
        (State::Grandfathered, State::Grandfathered.glyph())
    } else if held > 0 {
        let fill = if shift == 0 { t.fill.unwrap_or(1.0) } else { held as f64 / (1u128 << shift) as f64 };
        (State::Allocated, FILL[((fill * 8.0) as usize).min(7)])
    } else if t.next {
        // A cell of several blocks shows its allocated ones first; the legend names the next block.
        (State::Next, State::Next.glyph())
    } else if t.withheld > 0 {
        let state = if draining { State::Draining } else { State::Withheld };
        (state, state.glyph())
    } else if !allocation_known {
        (State::Unknown, State::Unknown.glyph())
    } else {
        (State::Free, State::Free.glyph())
    }
}

/// The key: each state's glyph, name and blocks, as many to a line as fit.
fn legend(fam: &FamilyReport, counts: &Counts, next: Option<String>, options: &MapOptions, style: &Style) -> String {
    let fill = if counts.aggregated {
        "height: addresses in use, or blocks allocated of a cell"
    } else if fam.used_addresses.is_some() {
        "height: addresses in use"
    } else {
        "use unknown"
    };
    let mut items = Vec::new();
    let allocated = format!("{}{}{}", FILL[0], FILL[3], FILL[7]);
    // Grandfathered blocks and the --node's are allocated ones too (the table counts them so): "of them".
    let held = counts.get(State::Allocated) + counts.get(State::Grandfathered) + counts.get(State::Node);
    items.push(format!("{} allocated {}", State::Allocated.paint(&allocated, style), human(held)));
    let mut states = vec![State::Grandfathered, State::Free, State::Withheld, State::Draining, State::Orphan];
    if !fam.allocation_known {
        states[1] = State::Unknown;
    }
    // A state no block is in says nothing: left out, but for free (0 free blocks is news).
    for state in states.into_iter().filter(|s| matches!(s, State::Free | State::Unknown) || counts.get(*s) > Count::ZERO) {
        let of_them = if state == State::Grandfathered { " of them" } else { "" };
        items.push(format!("{} {} {}{of_them}", state.paint(&state.glyph().to_string(), style), state.name(), human(counts.get(state))));
    }
    if let Some(next) = next {
        items.push(format!("{} next block {next} (one of the free)", State::Next.paint("▸", style)));
    }
    if let Some(node) = options.node {
        items.push(format!("{} {} {} of them", State::Node.paint("●", style), Field(node), human(counts.get(State::Node))));
    }
    if let Some(changed) = options.changed {
        let cells: usize = fam.cidrs.iter().filter_map(|c| changed.of(&c.cidr)).map(|c| c.len()).sum();
        items.push(format!("{} {cells} cell(s) changed since the previous frame", MARK));
    }
    items.push(format!("({fill})"));
    let mut out = String::new();
    let mut line = String::new();
    for item in items {
        let wide = console::measure_text_width(&line) + 3 + console::measure_text_width(&item) > options.width;
        if !line.is_empty() && wide {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push_str("   ");
        }
        line.push_str(&item);
    }
    out.push_str(&line);
    out.push('\n');
    super::fit_prose(&out, options.width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::{Report, analyze};
    use crate::model::Snapshot;
    use serde_json::{Value, json};

    /// Pool `p`: 10.0.0.0/16 (one address reserved: its block withheld) and 10.1.0.0/16 (reserved
    /// end to end: draining) in /24 blocks, fd00::/104 in /120 blocks. n1 holds 10.0.0.0/24 (128
    /// pods in it), 10.0.1.0/24 and fd00::/120; n2 holds 10.0.2.0/24, 10.1.3.0/24 (grandfathered)
    /// and 10.9.9.0/24 (an orphan: in no CIDR of the pool).
    fn report(v6: &str) -> Report {
        report_with(v6, &["10.0.2.0/24", "10.1.3.0/24", "10.9.9.0/24"])
    }

    /// [`report`] with n2 holding the blocks `n2`.
    fn report_with(v6: &str, n2: &[&str]) -> Report {
        let mut objects = vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "p"}, "spec": {
                "ipv4": {"cidrs": ["10.0.0.0/16", "10.1.0.0/16"], "maskSize": 24, "pool": [
                    {"cidr": "10.0.0.0/16", "reservedRanges": [{"start": "10.0.255.254", "end": "10.0.255.254"}]},
                    {"cidr": "10.1.0.0/16", "reservedRanges": [{"start": "10.1.0.0", "end": "10.1.255.255"}]}]},
                "ipv6": {"cidrs": [v6], "maskSize": 120}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": ["10.0.0.0/24", "10.0.1.0/24", "fd00::/120"]}]}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n2"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": n2}]}}}}),
        ];
        objects.extend((1..=128).map(|i| -> Value {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("pod-{i}"), "namespace": "a"},
                "spec": {"nodeName": "n1"}, "status": {"phase": "Running", "podIP": format!("10.0.0.{i}")}})
        }));
        analyze(&Snapshot::from_objects(objects))
    }

    fn map(report: &Report, width: usize, node: Option<&str>) -> String {
        draw(report.pool("p").unwrap(), &MapOptions { width, node, changed: None }, &Style::plain())
    }

    /// The grid lines of the CIDR whose heading starts with `cidr`.
    fn grid<'a>(text: &'a str, cidr: &str) -> Vec<&'a str> {
        let lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.starts_with(cidr)).unwrap_or_else(|| panic!("no {cidr} in\n{text}"));
        lines[at + 1..].iter().take_while(|l| !l.contains(" blocks") && !l.contains("allocated ") && !l.starts_with('!')).copied().collect()
    }

    fn count(lines: &[&str], glyph: char) -> usize {
        lines.iter().map(|l| l.matches(glyph).count()).sum()
    }

    #[test]
    fn an_ipv4_16_of_24_blocks_is_one_cell_a_block_in_rows_of_a_power_of_two() {
        let report = report("fd00::/104");
        for (width, per_row) in [(60, 32), (80, 64), (200, 128)] {
            let text = map(&report, width, None);
            assert!(text.lines().all(|l| console::measure_text_width(l) <= width), "{width}:\n{text}");
            let rows = grid(&text, "10.0.0.0/16");
            assert_eq!(rows.len(), 256 / per_row, "{width}:\n{text}");
            // Each row starts with its first address and holds `per_row` cells in groups of 16.
            let labels: Vec<String> = (0..rows.len()).map(|r| format!("10.0.{}.0", r * 256 / rows.len())).collect();
            for (row, label) in rows.iter().zip(&labels) {
                let (shown, cells) = row.trim_start().split_once(' ').unwrap();
                assert_eq!(shown, label, "{width}:\n{text}");
                assert_eq!(cells.chars().filter(|c| *c != ' ').count(), per_row, "{width}:\n{text}");
            }
            assert!(text.contains("10.0.0.0/16: 256 blocks, a cell each\n"), "{text}");
        }
    }

    #[test]
    fn each_state_has_its_glyph_and_the_legend_counts_blocks() {
        let text = map(&report("fd00::/104"), 80, None);
        let first = grid(&text, "10.0.0.0/16");
        // 10.0.0.0/24: 128 of 254 addresses in use (half height); 10.0.1.0 and 10.0.2.0: none.
        assert!(first[0].trim_start().strip_prefix("10.0.0.0 ").unwrap().starts_with("▅▁▁▸·"), "{text}");
        assert_eq!((count(&first, '×'), count(&first, '▸'), count(&first, '·')), (1, 1, 251), "{text}");
        assert!(first[3].ends_with('×'), "the block of 10.0.255.254 is withheld, the last: {text}");
        let draining = grid(&text, "10.1.0.0/16");
        assert!(text.contains("10.1.0.0/16: 256 blocks, a cell each, draining (all reserved)\n"), "{text}");
        assert_eq!((count(&draining, '≡'), count(&draining, '◆')), (255, 1), "{text}");
        assert!(draining[0].ends_with("≡≡≡◆≡≡≡≡≡≡≡≡≡≡≡≡ ≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡ ≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡ ≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡≡"), "{text}");
        assert!(text.contains("! 10.9.9.0/24 orphan: outside every CIDR of the pool, held by n2"), "{text}");
        // The table's counts: the grandfathered block is allocated too, the next block free.
        for item in [
            "allocated 4",
            "grandfathered 1 of them",
            "free 252",
            "withheld 1",
            "draining 255",
            "orphan 1",
            "next block 10.0.3.0/24 (one of the free)",
        ] {
            assert!(text.contains(item), "{item}:\n{text}");
        }
    }

    #[test]
    fn ipv6_cidrs_with_more_blocks_than_fit_take_several_blocks_a_cell() {
        // The most blocks the operator accepts in a CIDR (2^16); a /64 of /120 blocks (2^56,
        // refused by the operator) lays out the same way, below.
        for (v6, blocks) in [("fd00::/104", "65536"), ("fd00::/112", "256")] {
            let report = report(v6);
            for width in [60, 80, 200] {
                let text = map(&report, width, None);
                assert!(text.lines().all(|l| console::measure_text_width(l) <= width), "{width}:\n{text}");
                let rows = grid(&text, v6);
                assert!(rows.len() <= MAX_ROWS as usize && rows[0].trim_start().starts_with("fd00:: "), "{width}:\n{text}");
                assert!(text.contains(&format!("{v6}: {blocks} blocks")), "{width}:\n{text}");
                // n1's one block, first: the lowest height (unused, or 1 of 128 blocks of the cell).
                assert!(rows[0].trim_start().strip_prefix("fd00:: ").unwrap().starts_with('▁'), "{width}:\n{text}");
            }
        }
        // fd00::/104 at 80 columns: 64 cells a row (the labels take 10), 16 rows, 64 blocks a cell.
        let text = map(&report("fd00::/104"), 80, None);
        assert!(text.contains("fd00::/104: 65536 blocks, 1 cell = 64 blocks (a /114)"), "{text}");
        assert!(text.contains("blocks allocated of a cell"), "{text}");
        assert_eq!(layout(65536, 80, 10), Layout { shift: 6, per_row: 64, cells: 1024 });
        assert_eq!(layout(1 << 56, 80, 6), Layout { shift: 46, per_row: 64, cells: 1024 });
    }

    #[test]
    fn a_node_s_blocks_are_highlighted() {
        let text = map(&report("fd00::/104"), 80, Some("n2"));
        let (first, draining) = (grid(&text, "10.0.0.0/16"), grid(&text, "10.1.0.0/16"));
        assert_eq!((count(&first, '●'), count(&draining, '●'), count(&draining, '◆')), (1, 1, 0), "{text}");
        assert!(first[0].contains("▅▁●▸"), "{text}");
        // n2's 2 blocks are among the 4 allocated; no block is grandfathered any more, so the
        // legend leaves that state out.
        assert!(text.contains("● n2 2 of them") && text.contains("allocated 4") && !text.contains("grandfathered"), "{text}");
    }

    #[test]
    fn without_colour_every_state_has_its_own_glyph_and_colour_only_adds() {
        let states = [
            State::Node,
            State::Next,
            State::Grandfathered,
            State::Allocated,
            State::Draining,
            State::Withheld,
            State::Free,
            State::Unknown,
            State::Orphan,
        ];
        let mut glyphs: Vec<char> = states.iter().map(|s| s.glyph()).collect();
        glyphs.extend(&FILL[..7]);
        let distinct: std::collections::BTreeSet<char> = glyphs.iter().copied().collect();
        assert_eq!(distinct.len(), glyphs.len(), "{glyphs:?}");
        let report = report("fd00::/104");
        let plain = map(&report, 80, Some("n1"));
        let coloured = draw(
            report.pool("p").unwrap(),
            &MapOptions { width: 80, node: Some("n1"), changed: None },
            &Style { color: true, ..Style::plain() },
        );
        assert_ne!(plain, coloured);
        assert_eq!(console::strip_ansi_codes(&coloured), plain);
        // The map's colours are the plugin's own: the output filter keeps them.
        assert_eq!(crate::escape::block(&coloured, true), coloured);
        for colour in ["\x1b[38;5;74m", "\x1b[38;5;214m", "\x1b[38;5;221m", "\x1b[38;5;175m", "\x1b[38;5;36m"] {
            assert!(coloured.contains(colour), "{colour:?}");
        }
    }

    #[test]
    fn a_watched_map_marks_the_cells_changed_since_the_previous_frame() {
        let before = report("fd00::/104");
        // n2 takes the next block, 10.0.3.0/24: cell 3 is allocated, the next block is cell 4.
        let after = report_with("fd00::/104", &["10.0.2.0/24", "10.0.3.0/24", "10.1.3.0/24", "10.9.9.0/24"]);
        let plain = MapOptions { width: 80, node: None, changed: None };
        let (old, new) = (cells(before.pool("p").unwrap(), &plain), cells(after.pool("p").unwrap(), &plain));
        let changed = changed(&old, &new);
        assert_eq!((changed.of("10.0.0.0/16").map(|c| c.iter().copied().collect::<Vec<_>>()), changed.count()), (Some(vec![3, 4]), 2));
        let options = MapOptions { changed: Some(&changed), ..plain };
        let text = draw(after.pool("p").unwrap(), &options, &Style::plain());
        let lines: Vec<&str> = text.lines().collect();
        let row = lines.iter().position(|l| l.trim_start().starts_with("10.0.0.0 ")).unwrap();
        assert!(lines[row].trim_start().strip_prefix("10.0.0.0 ").unwrap().starts_with("▅▁▁▁▸·"), "{text}");
        // The marks line up under cells 3 and 4, past the labels, 10 wide (10.0.192.0); one line, only there.
        assert_eq!(lines[row + 1], format!("{}^^", " ".repeat(14)), "{text}");
        assert_eq!(text.matches('^').count(), 2 + 2, "the marks and the two legends' ^:\n{text}");
        assert!(text.contains("^ 2 cell(s) changed since the previous frame") && text.contains("^ 0 cell(s) changed"), "{text}");
        // With colour, the changed cells are in reverse video too, and the text is the same.
        let coloured = draw(after.pool("p").unwrap(), &options, &Style { color: true, ..Style::plain() });
        assert!(
            coloured.contains("\x1b[7m")
                && !draw(after.pool("p").unwrap(), &plain, &Style { color: true, ..Style::plain() }).contains("\x1b[7m")
        );
        assert_eq!(console::strip_ansi_codes(&coloured), text);
        assert_eq!(crate::escape::block(&coloured, true), coloured, "the output filter keeps reverse video");
        // Without a previous frame nothing is marked, and the legend says nothing of changes.
        assert!(!draw(after.pool("p").unwrap(), &plain, &Style::plain()).contains('^'));
    }
}
