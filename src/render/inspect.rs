//! `inspect` output: one pool in depth (docs/usage.md).

use super::usage::{UsageDocument, pool_names};
use super::{Render, Style, Tone, bar, human, table};
use crate::allocator::{Count, PoolReport, Problem, Report, blocks};
use crate::model::{CrdInfo, Pool, Snapshot};
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

impl Render for Inspect<'_> {
    fn document(&self) -> impl Serialize {
        UsageDocument::new(self.report, &self.pools(), &self.snapshot.origin, false)
    }

    fn names(&self) -> Option<String> {
        Some(pool_names(&self.pools()))
    }

    fn text(&self, _wide: bool, style: &Style) -> String {
        let (snapshot, report) = (self.snapshot, self.report);
        let mut out = String::new();
        for (i, pool_report) in self.pools().into_iter().enumerate() {
            if i > 0 {
                out.push_str("\n---\n\n");
            }
            let pool = snapshot.pool(&pool_report.name).expect("report pools come from the snapshot");
            let problems: Vec<_> = report.problems.iter().filter(|p| p.pool.as_deref() == Some(pool.name.as_str())).collect();
            let draining: Vec<DrainingPods> = pool_report
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
                        .filter(|p| p.holds_pod_ips() && p.ips.iter().any(|ip| c.prefix.contains(*ip)))
                        .map(|p| format!("{}/{}", p.namespace, p.name))
                        .collect(),
                })
                .collect();
            out.push_str(&pool_details(pool, pool_report, snapshot.crd.as_ref(), &problems, &draining, style));
        }
        out
    }
}

/// Pods still holding IPs in a draining CIDR, for the decommissioning view.
pub struct DrainingPods<'a> {
    pub cidr: &'a str,
    pub pods: Vec<String>,
}

pub fn pool_details(pool: &Pool, report: &PoolReport, crd: Option<&CrdInfo>, problems: &[&Problem], draining: &[DrainingPods], style: &Style) -> String {
    let mut out = String::new();
    let mut field = |name: &str, value: String| out.push_str(&format!("{:<15}{}\n", format!("{name}:"), value));
    field("Pool", style.paint(&pool.name, Tone::Bold));
    field("API version", format!("{} (dialect {})", pool.api_version, pool.dialect.name()));
    if let Some(crd) = crd {
        let versions: Vec<String> = crd
            .versions
            .iter()
            .map(|v| format!("{}{}{}", v.name, if v.served { " served" } else { " not served" }, if v.storage { ", storage" } else { "" }))
            .collect();
        let stored = crd.stored_versions.as_ref().map_or("unknown".to_string(), |s| s.join(","));
        field("CRD", format!("{}; storedVersions {stored}", versions.join("; ")));
    }
    let annotations: Vec<String> = pool.annotations.iter().map(|(k, v)| format!("{k}={v}")).collect();
    field("Annotations", if annotations.is_empty() { "<none>".into() } else { annotations.join(", ") });
    field("Migrated", if pool.is_migrated() { "yes (cilium.io/migrated-to-v2=true)".into() } else { "no".into() });
    let selector = |s: &Option<serde_json::Value>| s.as_ref().map_or("<none>".to_string(), |v| v.to_string());
    field("podSelector", selector(&pool.pod_selector));
    field("nsSelector", selector(&pool.namespace_selector));
    field("allowFirstIP", pool.allow_first_ip.to_string());
    field("allowLastIP", pool.allow_last_ip.to_string());

    for fam in &report.families {
        let mask = fam.mask_size.map_or("?".to_string(), |m| format!("/{m}"));
        out.push_str(&format!(
            "\n{} — blocks of {mask}, {} usable addresses each; {} of {} allocatable blocks allocated {}\n",
            style.paint(&fam.family.to_string().to_uppercase().replace("IPV", "IPv"), Tone::Bold),
            human(fam.usable_per_block),
            human(fam.allocated_blocks),
            human(fam.allocated_blocks + fam.free_blocks),
            bar(fam.utilization(), style),
        ));
        let rows = fam
            .cidrs
            .iter()
            .map(|c| {
                let state = if c.draining {
                    if c.allocated_blocks.is_zero() { "drained: safe to remove from cidrs".to_string() } else { format!("draining: {} block(s) still held", human(c.allocated_blocks)) }
                } else if c.free_blocks.is_zero() {
                    "full".to_string()
                } else {
                    "active".to_string()
                };
                vec![c.cidr.clone(), human(c.capacity_blocks), human(c.allocated_blocks), human(c.withheld_blocks), human(c.free_blocks), state]
            })
            .collect();
        out.push_str(&indent(&table(&["CIDR", "BLOCKS", "ALLOCATED", "WITHHELD", "FREE", "STATE"], rows, style)));
        let Some(mask_size) = fam.mask_size else { continue };
        let block_addresses = blocks::block_size(fam.family, mask_size);
        for cidr in &fam.cidrs {
            for r in &cidr.reservations {
                let touched = r.touched_blocks();
                let first = blocks::block_at(&cidr.prefix, mask_size, r.first_block);
                let span = if r.first_block == r.last_block {
                    first.to_string()
                } else {
                    format!("{first} .. {}", blocks::block_at(&cidr.prefix, mask_size, r.last_block))
                };
                out.push_str(&format!(
                    "  Reserved {}-{} in {}: reserves {} address(es), withholds {} block(s) = {} addresses ({span})\n",
                    r.start, r.end, cidr.cidr, human(r.reserved_addresses), human(touched), human(touched * block_addresses),
                ));
                for held in &r.allocated_overlapping {
                    out.push_str(&format!(
                        "    allocated {} on {} ({} IPs used) is not evicted: drain node {} to free it\n",
                        held.prefix, held.nodes.join(","), human(held.used), held.nodes.join(", "),
                    ));
                }
            }
        }
        for d in draining.iter().filter(|d| fam.cidrs.iter().any(|c| c.cidr == d.cidr)) {
            let cidr = fam.cidrs.iter().find(|c| c.cidr == d.cidr).expect("filtered above");
            if cidr.allocated_blocks.is_zero() {
                out.push_str(&format!("  Draining {}: empty — safe to remove it from spec.{}.cidrs\n", d.cidr, fam.family));
            } else {
                let nodes: Vec<String> = cidr.allocated.iter().map(|b| format!("{} ({})", b.nodes.join(","), b.prefix)).collect();
                out.push_str(&format!("  Draining {}: still held by {}; {} pod(s) inside{}\n", d.cidr, nodes.join(", "), d.pods.len(),
                    if d.pods.is_empty() { String::new() } else { format!(": {}", d.pods.join(", ")) }));
            }
        }
        let mut holders: Vec<(String, Count)> = Vec::new();
        for held in fam.cidrs.iter().flat_map(|c| c.allocated.iter()) {
            for node in &held.nodes {
                match holders.iter_mut().find(|(n, _)| n == node) {
                    Some((_, n)) => *n += Count::from(1u64),
                    None => holders.push((node.clone(), Count::from(1u64))),
                }
            }
        }
        holders.sort();
        let listed: Vec<String> = holders.iter().map(|(n, c)| format!("{n} ({c})")).collect();
        out.push_str(&format!("  Nodes holding blocks ({}): {}\n", holders.len(), if listed.is_empty() { "<none>".into() } else { listed.join(", ") }));
        if let Some(orphans) = (!fam.orphans.is_empty()).then_some(&fam.orphans) {
            let list: Vec<String> = orphans.iter().map(|o| format!("{} on {}", o.prefix, o.nodes.join(","))).collect();
            out.push_str(&format!("  Orphan blocks ({}): {}\n", orphans.len(), list.join(", ")));
        }
        match fam.next_block {
            Some(next) => out.push_str(&format!("  Next block (prediction: the lowest free block, as after an operator restart): {next}\n")),
            None => out.push_str("  Next block: none — no free block\n"),
        }
    }
    out.push_str("\nProblems:\n");
    if problems.is_empty() {
        out.push_str("  <none>\n");
    }
    for p in problems {
        out.push_str(&format!("  {} {}: {}\n", style.paint(p.severity.name(), super::check::tone(p.severity)), p.kind.name(), p.message));
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}
