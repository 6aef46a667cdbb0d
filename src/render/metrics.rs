//! `usage -o openmetrics`: the per-pool/family figures as OpenMetrics text, for the Prometheus
//! textfile collector or a Pushgateway. Names and labels are a contract (docs/metrics.md): add
//! metrics freely, never rename one.

use crate::allocator::{Count, FamilyReport, PoolReport, Report, Severity};
use crate::model::Origin;
use std::fmt::Write;

/// Per pool and family: name suffix, help, and the figure.
type Figure = (&'static str, &'static str, fn(&FamilyReport) -> Option<Count>);

const FAMILY_FIGURES: [Figure; 11] = [
    ("capacity_blocks", "Blocks the pool's CIDRs split into at its mask size.", |f| Some(f.capacity_blocks)),
    ("allocated_blocks", "Blocks CiliumNodes hold inside the pool's CIDRs (a block listed twice counts once).", |f| Some(f.allocated_blocks)),
    ("withheld_blocks", "Blocks not allocated that a valid reserved range touches: never handed out.", |f| Some(f.withheld_blocks)),
    ("free_blocks", "Blocks neither allocated nor withheld: what the operator can still hand out.", |f| Some(f.free_blocks)),
    ("orphan_blocks", "Blocks listed under the pool's name that lie outside its CIDRs.", |f| Some(f.orphan_blocks)),
    ("total_addresses", "Addresses in the pool's CIDRs.", |f| Some(f.total_addresses)),
    ("reserved_addresses", "Addresses inside valid reserved ranges.", |f| Some(f.reserved_addresses)),
    ("allocated_addresses", "Usable addresses of the allocated blocks.", |f| Some(f.allocated_addresses)),
    ("used_addresses", "Distinct in-use IPs (pods, CiliumEndpoints, node infrastructure) inside allocated blocks; absent when pods and endpoints could not be read.", |f| f.used_addresses),
    ("idle_addresses", "Allocated minus used addresses (pre-allocation held by nodes); absent when used is unknown.", |f| f.idle_addresses),
    ("free_addresses", "Usable addresses of the free blocks.", |f| Some(f.free_addresses)),
];

/// The OpenMetrics exposition of a usage report, ending in `# EOF`.
pub fn openmetrics(report: &Report, pools: &[&PoolReport], origin: &Origin) -> String {
    let mut out = String::new();
    let families: Vec<(&PoolReport, &FamilyReport)> = pools.iter().flat_map(|p| p.families.iter().map(move |f| (*p, f))).collect();
    let labels = |p: &PoolReport, f: &FamilyReport| format!("pool=\"{}\",family=\"{}\"", label(&p.name), f.family);

    family_header(&mut out, "ciliumpool_source", "info", "Where the figures come from and the IPAM mode (cilium-config key ipam, or unknown).");
    let _ = writeln!(out, "ciliumpool_source_info{{source=\"{}\",ipam_mode=\"{}\"}} 1", label(origin.kind), label(&origin.ipam_mode));

    family_header(&mut out, "ciliumpool_pool", "info", "One per CiliumPodIPPool: the API version it was read through and its schema dialect.");
    for pool in pools {
        let _ = writeln!(out, "ciliumpool_pool_info{{pool=\"{}\",api_version=\"{}\",dialect=\"{}\"}} 1", label(&pool.name), label(&pool.api_version), pool.dialect.name());
    }

    for (suffix, help, figure) in FAMILY_FIGURES {
        let name = format!("ciliumpool_{suffix}");
        family_header(&mut out, &name, "gauge", help);
        for (pool, fam) in &families {
            if let Some(value) = figure(fam) {
                let _ = writeln!(out, "{name}{{{}}} {value}", labels(pool, fam));
            }
        }
    }
    family_header(&mut out, "ciliumpool_block_mask_size", "gauge", "The prefix length of the pool's blocks (maskSize).");
    for (pool, fam) in &families {
        if let Some(mask) = fam.mask_size {
            let _ = writeln!(out, "ciliumpool_block_mask_size{{{}}} {mask}", labels(pool, fam));
        }
    }
    family_header(&mut out, "ciliumpool_utilization_ratio", "gauge", "Allocated blocks / (allocated + free blocks), 0 to 1; absent when the pool has no allocatable block.");
    for (pool, fam) in &families {
        if let Some(u) = fam.utilization() {
            let _ = writeln!(out, "ciliumpool_utilization_ratio{{{}}} {u}", labels(pool, fam));
        }
    }
    family_header(&mut out, "ciliumpool_nodes_holding", "gauge", "CiliumNodes holding at least one allocated block of the pool and family.");
    for (pool, fam) in &families {
        let _ = writeln!(out, "ciliumpool_nodes_holding{{{}}} {}", labels(pool, fam), fam.nodes_holding);
    }

    // Pools a non-multi-pool mode's agent lists (ENI's default): no capacity in the cluster.
    let mode_families: Vec<_> = report.ipam.mode_pools.iter().flat_map(|p| p.families.iter().map(move |f| (p, f))).collect();
    let mode_labels = |name: &str, family: crate::model::Family| format!("pool=\"{}\",family=\"{}\",ipam_mode=\"{}\"", label(name), family, label(&report.ipam.mode));
    type ModeFigure = (&'static str, &'static str, fn(&crate::allocator::modes::ModeFamilyReport) -> Option<Count>);
    let mode_figures: [ModeFigure; 3] = [
        ("ciliumpool_mode_allocated_blocks", "Blocks nodes list under a pool of a non-multi-pool IPAM mode (ENI: /32 addresses and prefixes); capacity is not in the cluster.", |f| Some(f.allocated_blocks)),
        ("ciliumpool_mode_allocated_addresses", "Usable addresses of those blocks.", |f| Some(f.allocated_addresses)),
        ("ciliumpool_mode_used_addresses", "Distinct in-use IPs inside those blocks; absent when pods and endpoints could not be read.", |f| f.used_addresses),
    ];
    for (name, help, figure) in mode_figures {
        family_header(&mut out, name, "gauge", help);
        for (pool, fam) in &mode_families {
            if let Some(value) = figure(fam) {
                let _ = writeln!(out, "{name}{{{}}} {value}", mode_labels(&pool.name, fam.family));
            }
        }
    }

    family_header(&mut out, "ciliumpool_problems", "gauge", "Problems kubectl ciliumpool check reports, by severity.");
    for severity in [Severity::Error, Severity::Warning, Severity::Info] {
        let n = report.problems.iter().filter(|p| p.severity == severity).count();
        let _ = writeln!(out, "ciliumpool_problems{{severity=\"{}\"}} {n}", severity.name());
    }
    out.push_str("# EOF\n");
    out
}

fn family_header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// A label value as OpenMetrics escapes it: backslash, double quote and line feed.
fn label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::label;

    #[test]
    fn label_escapes() {
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
