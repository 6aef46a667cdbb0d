//! `reserve-range` output: the impact preview and the list of reservations (docs/reserve-range.md).

use super::{Render, SCHEMA_VERSION, Sourced, Style, Tone, human, line, table};
use crate::allocator::reserve::{Action, BlockSpan, Figures, Impact, Prepared};
use crate::allocator::{CidrReport, Count, HeldBlock, PoolReport, Problem, Reservation};
use crate::model::Origin;
use crate::model::ip::range_text;
use serde::Serialize;

/// How a change ended, besides its impact.
pub struct Outcome {
    /// The change was persisted (false for dry runs).
    pub written: bool,
    pub resource_version: Option<String>,
    /// Conflicting writes that were retried.
    pub conflicts: u32,
    /// The manifest rewritten (`--in-place`).
    pub file: Option<String>,
    /// The preview was already shown (before the confirmation question).
    pub previewed: bool,
}

/// `reserve-range`'s result once the change is done (or dry-run).
pub struct Edited<'a> {
    pub origin: &'a Origin,
    pub prepared: &'a Prepared,
    /// `none`, `client` or `server`, as `--dry-run` is spelled.
    pub dry_run: &'static str,
    pub outcome: Outcome,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EditedDocument<'a> {
    schema_version: u32,
    source: &'a Origin,
    impact: &'a Impact,
    dry_run: &'static str,
    written: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_version: Option<&'a String>,
    conflicts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a String>,
}

impl Render for Edited<'_> {
    fn document(&self) -> impl Serialize {
        let outcome = &self.outcome;
        EditedDocument {
            schema_version: SCHEMA_VERSION,
            source: self.origin,
            impact: &self.prepared.impact,
            dry_run: self.dry_run,
            written: outcome.written,
            resource_version: outcome.resource_version.as_ref(),
            conflicts: outcome.conflicts,
            file: outcome.file.as_ref(),
        }
    }

    /// The preview (for a manifest rewrite, unless shown before the question) and a kubectl-style line.
    fn text(&self, _wide: bool, style: &Style) -> String {
        let (plan, outcome) = (&self.prepared.plan, &self.outcome);
        let mut out = if outcome.file.is_some() && !outcome.previewed { preview(&self.prepared.impact, style) } else { String::new() };
        let what = match plan.action {
            Action::Reserve => format!("reserved {} in {}", plan.entry, plan.cidr),
            Action::Remove => format!("removed the reserved range {} of {}", plan.entry, plan.cidr),
            Action::Drain => format!("draining {} (reserved end to end)", plan.cidr),
        };
        let suffix = match self.dry_run {
            "client" => " (dry run)".to_string(),
            "server" => " (server dry run)".to_string(),
            _ if outcome.conflicts > 0 => format!(" after {} conflicting write(s)", outcome.conflicts),
            _ => String::new(),
        };
        let target = outcome.file.as_ref().map_or(String::new(), |f| format!(" in {f}"));
        out.push_str(&line(&format!("ciliumpodippool.cilium.io/{} edited{target}: {what}{suffix}", self.prepared.impact.pool), style));
        out
    }
}

/// `reserve-range --list`'s result: the valid reservations, and the invalid ones as problems.
pub struct Reservations<'a> {
    pub origin: &'a Origin,
    pub ranges: Vec<ListedRange>,
    pub invalid: Vec<&'a Problem>,
}

impl Render for Reservations<'_> {
    fn document(&self) -> impl Serialize {
        Sourced { source: self.origin, key: "reservedRanges", value: &self.ranges }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("reservedRanges")
    }

    fn names(&self) -> Option<String> {
        // Ranges are not objects: the pools holding them are.
        Some(super::name_records(self.ranges.iter().map(|r| (super::POOL_RESOURCE, r.pool.as_str()))))
    }

    fn text(&self, _wide: bool, style: &Style) -> String {
        let mut out = if self.ranges.is_empty() { String::new() } else { list_table(&self.ranges, style) };
        for p in &self.invalid {
            out.push_str(&line(&format!("invalid (ignored by the figures): {}: {}", p.object, p.message), style));
        }
        out
    }
}

/// The preview shown before a write: what the range reserves, what it withholds, what stays
/// allocated inside it, and the pool's figures before → after.
pub fn preview(impact: &Impact, style: &Style) -> String {
    let mut out = String::new();
    let verb = match impact.action {
        Action::Reserve => "Reserve",
        Action::Remove => "Remove the reservation",
        Action::Drain => "Drain (reserve end to end)",
    };
    let range = range_text(&impact.start, &impact.end);
    out.push_str(&line(
        &format!("{} {} in pool {}, CIDR {} ({})", verb, style.paint(&range, Tone::Bold), impact.pool, impact.cidr, impact.family),
        style,
    ));
    if impact.range_addresses.is_zero() {
        out.push_str(&line("  Range: not a valid range of this CIDR (see check); the figures ignore it", style));
    } else {
        out.push_str(&format!(
            "  Range: {} address(es) in {} block(s) = {} addresses (reservations act on whole blocks)\n",
            human(impact.range_addresses),
            human(impact.touched_blocks),
            human(impact.touched_addresses),
        ));
    }
    for r in &impact.replaced {
        out.push_str(&line(&format!("  Replaces the existing range {r} (inside the drained CIDR)"), style));
    }
    for r in &impact.adjacent {
        out.push_str(&line(&format!("  Adjacent to the existing range {r}: kept as a separate range, not merged"), style));
    }
    let spans = |list: &[BlockSpan]| -> String {
        if list.is_empty() {
            return "none".to_string();
        }
        list.iter().map(span_text).collect::<Vec<_>>().join(", ")
    };
    match impact.action {
        Action::Remove => out.push_str(&line(&format!("  Blocks released (withheld → free): {}", spans(&impact.released)), style)),
        _ => out.push_str(&line(&format!("  Blocks newly withheld: {}", style.paint(&spans(&impact.newly_withheld), Tone::Warn)), style)),
    }
    for held in &impact.allocated_in_range {
        let nodes = held.nodes.join(", ");
        let pods = if held.pods_in_range.is_empty() {
            "no pod uses an address of the range".to_string()
        } else {
            format!("{} pod(s) use addresses of the range: {}", held.pods_in_range.len(), held.pods_in_range.join(", "))
        };
        let note = match impact.action {
            Action::Remove => String::new(),
            _ => format!(" — not evicted: drain node {nodes} to free it"),
        };
        out.push_str(&line(&format!("  Allocated block {} on {nodes}: {pods}{note}", held.block), style));
    }
    out.push_str(&figures(impact, style));
    out
}

/// The pool family's figures before and after the change, side by side, indented.
fn figures(impact: &Impact, style: &Style) -> String {
    let (b, a) = (&impact.before, &impact.after);
    let row = |name: &str, get: &dyn Fn(&Figures) -> String| vec![name.to_string(), get(b), get(a)];
    // Without CiliumNodes, what depends on the allocated blocks is unknown (`?`), not 0.
    let known = |f: &Figures, figure: String| if f.allocation_known { figure } else { "?".to_string() };
    let runway = |f: &Figures| known(f, f.runway_nodes.map_or("-".to_string(), |n| format!("{} node(s)", human(n))));
    let rows = vec![
        row("capacity blocks", &|f| human(f.capacity_blocks)),
        row("allocated blocks", &|f| known(f, human(f.allocated_blocks))),
        row("withheld blocks", &|f| known(f, human(f.withheld_blocks))),
        row("free blocks", &|f| known(f, human(f.free_blocks))),
        row("allocatable blocks", &|f| known(f, human(f.allocatable_blocks))),
        row("reserved addresses", &|f| human(f.reserved_addresses)),
        row("free addresses", &|f| known(f, human(f.free_addresses))),
        row("runway", &runway),
    ];
    let figures = table(
        &[&format!("POOL {} {}", impact.pool, impact.family.name().to_uppercase()), "BEFORE", "AFTER"],
        rows,
        &Style { headers: true, ..*style },
    );
    figures.lines().map(|l| format!("  {l}\n")).collect()
}

fn span_text(span: &BlockSpan) -> String {
    if span.blocks == Count::from(1u64) {
        span.first.clone()
    } else {
        format!("{} .. {} ({} blocks)", span.first, span.last, human(span.blocks))
    }
}

/// One reservation as `--list` shows it.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedRange {
    pub pool: String,
    pub family: crate::model::Family,
    pub cidr: String,
    pub start: String,
    pub end: String,
    pub reserved_addresses: Count,
    pub first_block: String,
    pub last_block: String,
    pub blocks: Count,
    /// Touched blocks still allocated to nodes (grandfathered): `block on node,...`.
    pub allocated_blocks: Vec<String>,
    /// Every block of the CIDR is reserved.
    pub draining: bool,
    /// Which blocks nodes hold is known (the input has CiliumNodes): only then is an empty
    /// draining CIDR safe to remove.
    #[serde(skip)]
    pub allocation_known: bool,
}

/// One reserved range of a CIDR as `inspect` and `reserve-range --list` both show it: the one
/// builder of reservation rows (each view then names the fields as its documents do).
pub(crate) struct RangeRow<'a> {
    pub cidr: &'a CidrReport,
    pub start: String,
    pub end: String,
    pub reserved_addresses: Count,
    /// Blocks the range touches: withheld unless allocated.
    pub blocks: Count,
    pub first_block: String,
    pub last_block: String,
    /// Touched blocks still allocated to nodes (grandfathered, not evicted).
    pub allocated: &'a [HeldBlock],
}

impl<'a> RangeRow<'a> {
    pub fn new(cidr: &'a CidrReport, r: &'a Reservation) -> Self {
        RangeRow {
            cidr,
            start: r.start.to_string(),
            end: r.end.to_string(),
            reserved_addresses: r.reserved_addresses,
            blocks: r.touched_blocks(),
            first_block: r.blocks.first.to_string(),
            last_block: r.blocks.last.to_string(),
            allocated: &r.allocated_overlapping,
        }
    }
}

/// Every valid reservation of `pools`: pools by name, then each CIDR (in spec order: the operator
/// hands out the first CIDR's blocks first) with its ranges by address.
pub fn listed_ranges(pools: &[&PoolReport]) -> Vec<ListedRange> {
    let mut out = Vec::new();
    let mut pools = pools.to_vec();
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    for pool in pools {
        for fam in &pool.families {
            for cidr in &fam.cidrs {
                let mut reservations: Vec<_> = cidr.reservations.iter().collect();
                reservations.sort_by_key(|r| (r.start.value, r.end.value));
                for row in reservations.into_iter().map(|r| RangeRow::new(cidr, r)) {
                    out.push(ListedRange {
                        pool: pool.name.clone(),
                        family: fam.family,
                        cidr: cidr.cidr.clone(),
                        allocated_blocks: row.allocated.iter().map(|b| format!("{} on {}", b.prefix, b.nodes.join(","))).collect(),
                        start: row.start,
                        end: row.end,
                        reserved_addresses: row.reserved_addresses,
                        first_block: row.first_block,
                        last_block: row.last_block,
                        blocks: row.blocks,
                        draining: cidr.draining,
                        allocation_known: cidr.allocation_known,
                    });
                }
            }
        }
    }
    out
}

pub fn list_table(ranges: &[ListedRange], style: &Style) -> String {
    let rows = ranges
        .iter()
        .map(|r| {
            let range = range_text(&r.start, &r.end);
            let span = if r.blocks == Count::from(1u64) { r.first_block.clone() } else { format!("{}..{}", r.first_block, r.last_block) };
            let note = match (r.draining, r.allocated_blocks.is_empty()) {
                (true, true) if !r.allocation_known => "draining; whether nodes still hold blocks is unknown (no CiliumNodes)".to_string(),
                (true, true) => "drained: safe to remove the CIDR".to_string(),
                (true, false) => format!("draining; still allocated: {}", r.allocated_blocks.join("; ")),
                (false, true) => String::new(),
                (false, false) => format!("still allocated: {}", r.allocated_blocks.join("; ")),
            };
            vec![r.pool.clone(), r.cidr.clone(), range, human(r.reserved_addresses), human(r.blocks), span, note]
        })
        .collect();
    table(&["POOL", "CIDR", "RANGE", "ADDRESSES", "BLOCKS", "WITHHOLDS", "NOTE"], rows, style)
}
