//! `inspect` output: one pool in depth (docs/usage.md).

mod annotations;
mod document;
mod pools;

use super::usage::pool_names;
use super::{Render, Style, Tone, human, line, table};
use document::PoolDetail;

/// A figure, or `?` when unknown.
fn opt(figure: Option<Count>) -> String {
    figure.map_or_else(|| "?".to_string(), human)
}
use crate::allocator::{Count, FamilyReport, PoolReport, Problem, Report};
use crate::model::{CaveatKind, CrdInfo, Dialect, Pool, Prefix, Snapshot};
pub use pools::DrainingPods;
use pools::Inspected;
use serde::Serialize;

/// `inspect`'s result: the named pools in depth.
pub struct Inspect<'a> {
    pub snapshot: &'a Snapshot,
    pub report: &'a Report,
    pub names: &'a [String],
}

impl<'a> Inspect<'a> {
    fn pools(&self) -> Vec<&'a PoolReport> {
        self.report.pools.iter().filter(|p| self.names.contains(&p.name)).collect()
    }
}

impl<'a> Inspect<'a> {
    fn inspected(&self) -> Vec<Inspected<'a>> {
        let (snapshot, report) = (self.snapshot, self.report);
        self.pools()
            .into_iter()
            .map(|pool_report| {
                let pool = snapshot.pool(&pool_report.name).expect("report pools come from the snapshot");
                let problems = report.problems.iter().filter(|p| p.pool.as_deref() == Some(pool.name.as_str())).collect();
                let draining = pool_report
                    .families
                    .iter()
                    .flat_map(|f| f.cidrs.iter())
                    .filter(|c| c.draining)
                    .map(|c| DrainingPods {
                        cidr: &c.cidr,
                        pods: snapshot
                            .pods
                            .iter()
                            .flatten()
                            .filter(|p| p.holds_pod_ips() && p.ips.iter().any(|ip| c.prefix.contains(ip)))
                            .map(|p| format!("{}/{}", p.namespace, p.name))
                            .collect(),
                    })
                    .collect();
                Inspected { pool, report: pool_report, problems, draining }
            })
            .collect()
    }
}

impl Render for Inspect<'_> {
    fn document(&self) -> impl Serialize {
        let pools: Vec<PoolDetail> = self.inspected().into_iter().map(|i| PoolDetail::new(i, self.report)).collect();
        super::Sourced { source: &self.snapshot.origin, key: "pools", value: pools }
    }

    fn rows(&self) -> Option<&'static str> {
        Some("pools")
    }

    fn names(&self) -> Option<String> {
        Some(pool_names(&self.pools()))
    }

    fn text(&self, _wide: bool, style: &Style) -> String {
        let crd = self.snapshot.crd.as_ref();
        let mut out = String::new();
        for (i, inspected) in self.inspected().iter().enumerate() {
            if i > 0 {
                out.push_str("\n---\n\n");
            }
            // A pool read through v2alpha1 whose v2 reserved ranges the input lacks: a CIDR may be draining.
            let hidden = inspected.pool.dialect == Dialect::V2alpha1 && self.snapshot.origin.lacks(CaveatKind::PoolsThroughV2alpha1);
            out.push_str(&pool_details(inspected.pool, inspected.report, crd, &inspected.problems, &inspected.draining, hidden, style));
        }
        out
    }
}

pub fn pool_details(
    pool: &Pool,
    report: &PoolReport,
    crd: Option<&CrdInfo>,
    problems: &[&Problem],
    draining: &[DrainingPods],
    reservations_hidden: bool,
    style: &Style,
) -> String {
    let mut out = pool_fields(pool, crd, style);
    for fam in &report.families {
        out.push('\n');
        out.push_str(&family_summary(fam, style));
        // Indented by two: the table fits two columns less.
        let narrower = Style { width: style.width.map(|w| w.saturating_sub(2)), ..*style };
        out.push_str(&indent(&table(
            &["CIDR", "BLOCKS", "ALLOCATED", "WITHHELD", "FREE", "STATE"],
            cidr_rows(fam, reservations_hidden),
            &narrower,
        )));
        out.push_str(&reservation_lines(fam, style));
        out.push_str(&draining_lines(fam, draining, style));
        out.push_str(&holder_lines(fam, style));
    }
    out.push_str("\nProblems:\n");
    if reservations_hidden {
        // Unknown is not none: what the input cannot show cannot be checked either.
        out.push_str(&line(
            "  unknown: the input holds no reserved ranges (pools read through cilium.io/v2alpha1), so invalid or draining reservations cannot be checked",
            style,
        ));
    } else if problems.is_empty() {
        out.push_str("  <none>\n");
    }
    for p in problems {
        out.push_str(&line(
            &format!("  {} {}: {}", style.paint(p.severity.name(), super::check::tone(p.severity)), p.kind.name(), p.message),
            style,
        ));
    }
    out
}

/// The pool's own fields, one `Name:  value` line each.
fn pool_fields(pool: &Pool, crd: Option<&CrdInfo>, style: &Style) -> String {
    let mut out = String::new();
    // Every line goes through `line`: names, annotations and messages are data, escaped as one line.
    let field = |out: &mut String, name: &str, value: String| out.push_str(&line(&format!("{:<15}{value}", format!("{name}:")), style));
    field(&mut out, "Pool", style.paint(&pool.name, Tone::Bold));
    field(&mut out, "API version", format!("{} (dialect {})", pool.api_version, pool.dialect.name()));
    if let Some(crd) = crd {
        let versions: Vec<String> = crd
            .versions
            .iter()
            .map(|v| format!("{}{}{}", v.name, if v.served { " served" } else { " not served" }, if v.storage { ", storage" } else { "" }))
            .collect();
        let stored = crd.stored_versions.as_ref().map_or("unknown".to_string(), |s| s.join(","));
        field(&mut out, "CRD", format!("{}; storedVersions {stored}", versions.join("; ")));
    }
    for text in annotations::lines(&pool.annotations, style.width) {
        out.push_str(&line(&text, style));
    }
    field(&mut out, "Migrated", if pool.is_migrated() { "yes (cilium.io/migrated-to-v2=true)".into() } else { "no".into() });
    let selector = |s: &Option<serde_json::Value>| s.as_ref().map_or("<none>".to_string(), |v| v.to_string());
    field(&mut out, "podSelector", selector(&pool.pod_selector));
    field(&mut out, "nsSelector", selector(&pool.namespace_selector));
    field(&mut out, "allowFirstIP", pool.allow_first_ip.to_string());
    field(&mut out, "allowLastIP", pool.allow_last_ip.to_string());

    out
}

/// The headline of one family: block size, allocation and its bar.
fn family_summary(fam: &FamilyReport, style: &Style) -> String {
    let mask = fam.mask_size.map_or("?".to_string(), |m| format!("/{m}"));
    let utilization = match super::utilization(fam).as_str() {
        "?" => "utilization unknown".to_string(),
        known => format!("{known} {}", super::utilization_bar(fam, style)),
    };
    line(
        &format!(
            "{} — blocks of {mask}, {} usable addresses each; {} of {} allocatable blocks allocated, {utilization}",
            style.paint(&fam.family.to_string().to_uppercase().replace("IPV", "IPv"), Tone::Bold),
            human(fam.usable_per_block),
            opt(fam.allocated(fam.allocated_blocks)),
            opt(fam.known(fam.allocated_blocks + fam.free_blocks)),
        ),
        style,
    )
}

/// One row per CIDR: its blocks and its state (active, full, draining, drained; `unknown` when
/// the input lacks the reserved ranges that would say whether it is draining).
fn cidr_rows(fam: &FamilyReport, reservations_hidden: bool) -> Vec<Vec<String>> {
    fam.cidrs
        .iter()
        .map(|c| {
            let state = if c.draining {
                if !c.allocation_known {
                    "draining: allocation unknown".to_string()
                } else if c.allocated_blocks.is_zero() {
                    "drained: safe to remove from cidrs".to_string()
                } else {
                    format!("draining: {} block(s) still held", human(c.allocated_blocks))
                }
            } else if reservations_hidden || !c.allocation_known {
                "unknown".to_string()
            } else if c.free_blocks.is_zero() {
                "full".to_string()
            } else {
                "active".to_string()
            };
            let shown = |known: bool, figure: Count| if known { human(figure) } else { "?".to_string() };
            let (allocated, free) =
                (shown(c.allocation_known, c.allocated_blocks), shown(c.allocation_known && c.reservations_known, c.free_blocks));
            vec![c.cidr.clone(), human(c.capacity_blocks), allocated, shown(c.reservations_known, c.withheld_blocks), free, state]
        })
        .collect()
}

/// Each reserved range, what it withholds, and the allocated blocks it does not evict.
fn reservation_lines(fam: &FamilyReport, style: &Style) -> String {
    let mut out = String::new();
    if !fam.reservations_known {
        out.push_str("  Reserved ranges: unknown (not in this input)\n");
    }
    for cidr in &fam.cidrs {
        for r in &cidr.reservations {
            out.push_str(&line(
                &format!(
                    "  Reserved {}-{} in {}: reserves {} address(es), withholds {} block(s) = {} addresses ({})",
                    r.start,
                    r.end,
                    cidr.cidr,
                    human(r.reserved_addresses),
                    human(r.touched_blocks()),
                    human(r.blocks.addresses()),
                    r.blocks,
                ),
                style,
            ));
            for held in &r.allocated_overlapping {
                out.push_str(&line(
                    &format!(
                        "    allocated {} on {} ({} IPs used) is not evicted: drain node {} to free it",
                        held.prefix,
                        held.nodes.join(","),
                        human(held.used),
                        held.nodes.join(", "),
                    ),
                    style,
                ));
            }
        }
    }
    out
}

/// The draining CIDRs: empty ones, or the nodes and pods still inside.
fn draining_lines(fam: &FamilyReport, draining: &[DrainingPods], style: &Style) -> String {
    let mut out = String::new();
    for d in draining.iter().filter(|d| fam.cidrs.iter().any(|c| c.cidr == d.cidr)) {
        let cidr = fam.cidrs.iter().find(|c| c.cidr == d.cidr).expect("filtered above");
        if !cidr.allocation_known {
            out.push_str(&line(
                &format!("  Draining {}: whether a node still holds a block is unknown — the input holds no CiliumNodes", d.cidr),
                style,
            ));
        } else if cidr.allocated_blocks.is_zero() {
            out.push_str(&line(&format!("  Draining {}: empty — safe to remove it from spec.{}.cidrs", d.cidr, fam.family), style));
        } else {
            let nodes: Vec<String> = cidr.allocated.iter().map(|b| format!("{} ({})", b.nodes.join(","), b.prefix)).collect();
            out.push_str(&line(
                &format!(
                    "  Draining {}: still held by {}; {} pod(s) inside{}",
                    d.cidr,
                    nodes.join(", "),
                    d.pods.len(),
                    if d.pods.is_empty() { "" } else { ":" }
                ),
                style,
            ));
            out.push_str(&wrapped(&d.pods, "    ", "pods", style));
        }
    }
    out
}

/// The nodes holding blocks, the orphan blocks, the next block.
fn holder_lines(fam: &FamilyReport, style: &Style) -> String {
    let mut out = String::new();
    let mut holders: Vec<(String, Count)> = Vec::new();
    for held in fam.cidrs.iter().flat_map(|c| c.allocated.iter()) {
        for node in &held.nodes {
            match holders.iter_mut().find(|(n, _)| **n == **node) {
                Some((_, n)) => *n += Count::from(1u64),
                None => holders.push((node.to_string(), Count::from(1u64))),
            }
        }
    }
    holders.sort();
    let listed: Vec<String> = holders.iter().map(|(n, c)| format!("{n} ({c})")).collect();
    if !fam.allocation_known {
        out.push_str("  Nodes holding blocks: unknown — the input holds no CiliumNodes\n");
    } else {
        out.push_str(&format!("  Nodes holding blocks ({}):{}\n", holders.len(), if listed.is_empty() { " <none>" } else { "" }));
    }
    out.push_str(&wrapped(&listed, "    ", "nodes", style));
    if let Some(orphans) = (!fam.orphans.is_empty()).then_some(&fam.orphans) {
        let list: Vec<String> = orphans.iter().map(|o| format!("{} on {}", o.prefix, o.nodes.join(","))).collect();
        out.push_str(&line(&format!("  Orphan blocks ({}): {}", orphans.len(), list.join(", ")), style));
    }
    match fam.next_block {
        _ if !fam.allocation_known => out.push_str("  Next block: unknown — the input holds no CiliumNodes\n"),
        _ if !fam.reservations_known => {
            out.push_str("  Next block: unknown — the lowest free block may lie in a reserved range the input does not show\n")
        }
        Some(next) => out.push_str(&next_block_lines(next, fam, style)),
        None => out.push_str("  Next block: none — no free block\n"),
    }
    out
}

/// The next block; two when a running operator hands out another than a restarted one: Cilium's
/// cidrset continues after the last block it handed out, and starts at the lowest free block only
/// when the operator starts (docs/design/cilium.md, "Checked against the running operator").
fn next_block_lines(next: Prefix, fam: &FamilyReport, style: &Style) -> String {
    let mut out = match fam.next_block_while_running.filter(|running| *running != next) {
        None => line(&format!("  Next block (prediction): {next}"), style),
        Some(running) => {
            line(&format!("  Next block (prediction): {next} after an operator restart,"), style)
                + &line(&format!("    {running} while it runs (after the highest block held)"), style)
        }
    };
    // The operator appends the CIDRs it learns while it runs: only a restart puts them in order.
    if fam.cidrs.iter().filter(|c| !c.free.is_empty()).count() > 1 {
        out.push_str(&line("    (a CIDR added while the operator runs is tried after those it had)", style));
    }
    out
}

/// How many items of a long list `inspect` names before it summarises.
const LISTED: usize = 24;

/// `items` as lines as wide as the terminal (at most [`TABLE_WIDTH`](super::TABLE_WIDTH)) under
/// `prefix`, an item never split; past [`LISTED`] items, how many more there are and where to see
/// them all.
fn wrapped(items: &[String], prefix: &str, what: &str, style: &Style) -> String {
    let width = style.width.unwrap_or(super::TABLE_WIDTH);
    let mut out = String::new();
    let mut line = String::new();
    // Items are names: each escaped as one line (and measured as shown).
    for item in items.iter().take(LISTED).map(|i| crate::escape::field(i)) {
        if !line.is_empty() && prefix.len() + line.chars().count() + 2 + item.chars().count() + 1 > width {
            out.push_str(&format!("{prefix}{line},\n"));
            line.clear();
        }
        if !line.is_empty() {
            line.push_str(", ");
        }
        line.push_str(&item);
    }
    if !line.is_empty() {
        out.push_str(&format!("{prefix}{line}\n"));
    }
    if items.len() > LISTED {
        let hint = if what == "nodes" { "usage --by node lists them all" } else { "-o json lists them all" };
        out.push_str(&format!("{prefix}... and {} more {what} ({hint})\n", items.len() - LISTED));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
