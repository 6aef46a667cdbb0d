//! `ip` output: one row per address, and the JSON/YAML document (docs/ip.md).

use super::{Grid, Render, Sourced, Style, Tone};
use crate::allocator::ip::{BlockState, Holder, IpAnswer};
use crate::model::Origin;
use crate::model::pool::ReservedRange;
use serde::Serialize;

/// `ip`'s result: one answer per address asked about.
pub struct Ip<'a> {
    pub origin: &'a Origin,
    /// The IPAM mode (for blocks of a non-multi-pool mode).
    pub mode: &'a str,
    pub answers: &'a [IpAnswer],
}

impl Render for Ip<'_> {
    fn document(&self) -> impl Serialize {
        Sourced { source: self.origin, key: "addresses", value: self.answers }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("addresses")
    }

    fn names(&self) -> Option<String> {
        // Only pools that exist: an orphan's or a mode's pool name has no CiliumPodIPPool (and an
        // address is in a pool's CIDR exactly when that pool exists).
        let pools = self.answers.iter().filter(|a| a.cidr.is_some()).filter_map(|a| a.pool.as_deref());
        Some(super::name_records(pools.map(|p| (super::POOL_RESOURCE, p))))
    }

    /// One to three answers on a terminal one field a line, as `kubectl describe` prints: nothing cut.
    fn text(&self, wide: bool, style: &Style) -> String {
        let grid = table(self.answers, wide, style, self.mode, reservations_unknown(self.origin));
        if style.terminal && style.headers && (1..=3).contains(&self.answers.len()) {
            grid.render_fields(style)
        } else {
            grid.render(style)
        }
    }

    /// The `Sources:` line goes to stderr as `usage`'s does: stdout is the table alone.
    fn notes(&self, _wide: bool, _style: &Style) -> String {
        footer(self.origin, self.mode)
    }
}

fn holder_text(h: &Holder) -> String {
    let name = &h.name;
    match (h.kind, &h.detail) {
        ("pod", Some(node)) => format!("pod {name} on {node}"),
        ("node", Some(role)) => format!("node {name} ({role})"),
        (kind, _) => format!("{kind} {name}"),
    }
}

fn state_text(a: &IpAnswer, mode: &str) -> String {
    let state = block_state_text(a, mode);
    match a.state {
        Some(BlockState::Allocated | BlockState::Free | BlockState::Orphan | BlockState::Unknown) if a.unusable => {
            format!("{state}; not handed out (block edge)")
        }
        _ => state,
    }
}

fn block_state_text(a: &IpAnswer, mode: &str) -> String {
    let nodes = a.nodes.join(",");
    match a.state {
        None => "in no pool".to_string(),
        Some(BlockState::Allocated) => format!("allocated to {nodes}"),
        Some(BlockState::Free) => "free".to_string(),
        Some(BlockState::Withheld) => {
            let ranges: Vec<String> = a.withheld_by.iter().map(ReservedRange::to_string).collect();
            format!("withheld by {}", ranges.join(", "))
        }
        Some(BlockState::Orphan) => format!("orphan, listed by {nodes}"),
        Some(BlockState::ModeAllocated) => format!("held by {nodes} ({mode} mode)"),
        Some(BlockState::Unknown) => "unknown: not allocated; free or withheld (reserved ranges not in the input)".to_string(),
    }
}

/// Whether the input hides every pool's reserved ranges (pools read through v2alpha1 only, e.g. a
/// sysdump): RESERVED is then `?` where no range is known, not `no`.
pub fn reservations_unknown(origin: &Origin) -> bool {
    origin.lacks(crate::model::CaveatKind::PoolsThroughV2alpha1)
}

/// ADDRESS POOL CIDR BLOCK STATE RESERVED HELD-BY (`-o wide` adds NOTE). Escaping for the
/// terminal is `Context::print`'s.
pub fn table(answers: &[IpAnswer], wide: bool, style: &Style, mode: &str, reservations_unknown: bool) -> Grid {
    let mut header = vec!["ADDRESS", "POOL", "CIDR", "BLOCK", "STATE", "RESERVED", "HELD-BY"];
    if wide {
        header.push("NOTE");
    }
    let dash = || "-".to_string();
    let rows = answers
        .iter()
        .map(|a| {
            let state = state_text(a, mode);
            let tone = match a.state {
                None | Some(BlockState::Orphan) => Tone::Bad,
                Some(BlockState::Withheld | BlockState::Unknown) => Tone::Warn,
                _ => Tone::Good,
            };
            let mut row = vec![
                a.address.clone(),
                a.pool.clone().unwrap_or_else(dash),
                a.cidr.clone().unwrap_or_else(dash),
                a.block.clone().unwrap_or_else(dash),
                style.paint(&state, tone),
                match (&a.reserved_by, reservations_unknown && a.cidr.is_some()) {
                    // STATE names the range already (`withheld by RANGE`): said once.
                    (Some(range), _) if a.withheld_by.contains(range) => "yes".to_string(),
                    (Some(range), _) => format!("yes ({range})"),
                    (None, true) => "?".to_string(),
                    (None, false) => "no".to_string(),
                },
                if a.held_by.is_empty() { dash() } else { a.held_by.iter().map(holder_text).collect::<Vec<_>>().join(", ") },
            ];
            if wide {
                let mut notes = Vec::new();
                if a.unusable {
                    notes.push("first or last address of its block: not handed out".to_string());
                }
                if !a.also_in_pools.is_empty() {
                    notes.push(format!("also in pool(s) {} (overlapping CIDRs)", a.also_in_pools.join(", ")));
                }
                row.push(if notes.is_empty() { dash() } else { notes.join("; ") });
            }
            row
        })
        .collect();
    // On a narrow terminal the state stays: the block names where the address is, its CIDR goes first.
    Grid::new(&header, rows).shedding_first(&["CIDR"])
}

/// The data source and mode, one line.
pub fn footer(origin: &Origin, mode: &str) -> String {
    // What the input cannot show is not here: each caveat is its own `warning:` line.
    let line = format!("Sources: {}; IPAM mode {mode}", super::usage::origin_text(origin));
    format!("\n{}\n", crate::escape::field(&line))
}
