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

/// The OpenMetrics exposition of a usage report, ending in `# EOF`. A metric family without
/// samples (e.g. used addresses when pods could not be read) is left out entirely.
pub fn openmetrics(report: &Report, pools: &[&PoolReport], origin: &Origin) -> String {
    let mut out = String::new();
    let families: Vec<(&PoolReport, &FamilyReport)> = pools.iter().flat_map(|p| p.families.iter().map(move |f| (*p, f))).collect();
    let labels = |p: &PoolReport, f: &FamilyReport| format!("pool=\"{}\",family=\"{}\"", label(&p.name), f.family);

    let source = format!("{{source=\"{}\",ipam_mode=\"{}\"}} 1", label(origin.kind), label(&origin.ipam_mode));
    family(&mut out, "ciliumpool_source", "info", "Where the figures come from and the IPAM mode (cilium-config key ipam, or unknown).", vec![("_info", source)]);
    let info = pools.iter().map(|p| ("_info", format!("{{pool=\"{}\",api_version=\"{}\",dialect=\"{}\"}} 1", label(&p.name), label(&p.api_version), p.dialect.name()))).collect();
    family(&mut out, "ciliumpool_pool", "info", "One per CiliumPodIPPool: the API version it was read through and its schema dialect.", info);

    for (suffix, help, figure) in FAMILY_FIGURES {
        let samples = families.iter().filter_map(|(p, f)| figure(f).map(|v| ("", format!("{{{}}} {v}", labels(p, f))))).collect();
        family(&mut out, &format!("ciliumpool_{suffix}"), "gauge", help, samples);
    }
    let samples = families.iter().filter_map(|(p, f)| f.mask_size.map(|m| ("", format!("{{{}}} {m}", labels(p, f))))).collect();
    family(&mut out, "ciliumpool_block_mask_size", "gauge", "The prefix length of the pool's blocks (maskSize).", samples);
    let samples = families.iter().filter_map(|(p, f)| f.utilization().map(|u| ("", format!("{{{}}} {u}", labels(p, f))))).collect();
    family(&mut out, "ciliumpool_utilization_ratio", "gauge", "Allocated blocks / (allocated + free blocks), 0 to 1; absent when the pool has no allocatable block.", samples);
    let samples = families.iter().map(|(p, f)| ("", format!("{{{}}} {}", labels(p, f), f.nodes_holding))).collect();
    family(&mut out, "ciliumpool_nodes_holding", "gauge", "CiliumNodes holding at least one allocated block of the pool and family.", samples);

    // Pools a non-multi-pool mode's agent lists (ENI's default): no capacity in the cluster.
    let mode_families: Vec<_> = report.ipam.mode_pools.iter().flat_map(|p| p.families.iter().map(move |f| (p, f))).collect();
    let mode_labels = |name: &str, family: crate::model::Family| format!("pool=\"{}\",family=\"{}\",ipam_mode=\"{}\"", label(name), family, label(&report.ipam.mode));
    type ModeFigure = (&'static str, &'static str, fn(&crate::allocator::ModeFamilyReport) -> Option<Count>);
    let mode_figures: [ModeFigure; 3] = [
        ("ciliumpool_mode_allocated_blocks", "Blocks nodes list under a pool of a non-multi-pool IPAM mode (ENI: /32 addresses and prefixes); capacity is not in the cluster.", |f| Some(f.allocated_blocks)),
        ("ciliumpool_mode_allocated_addresses", "Usable addresses of those blocks.", |f| Some(f.allocated_addresses)),
        ("ciliumpool_mode_used_addresses", "Distinct in-use IPs inside those blocks; absent when pods and endpoints could not be read.", |f| f.used_addresses),
    ];
    for (name, help, figure) in mode_figures {
        let samples = mode_families.iter().filter_map(|(p, f)| figure(f).map(|v| ("", format!("{{{}}} {v}", mode_labels(&p.name, f.family))))).collect();
        family(&mut out, name, "gauge", help, samples);
    }

    let samples = [Severity::Error, Severity::Warning, Severity::Info]
        .iter()
        .map(|&severity| ("", format!("{{severity=\"{}\"}} {}", severity.name(), report.problems.iter().filter(|p| p.severity == severity).count())))
        .collect();
    family(&mut out, "ciliumpool_problems", "gauge", "Problems kubectl ciliumpool check reports, by severity.", samples);
    out.push_str("# EOF\n");
    out
}

/// One metric family: `# TYPE`, `# HELP`, then each sample as (name suffix, labels and value).
/// A sample whose labels hold a character a terminal would act on is left out: a label value
/// can only escape `\\`, `"` and a newline (check names it: `unprintable-name`).
fn family(out: &mut String, name: &str, kind: &str, help: &str, mut samples: Vec<(&str, String)>) {
    samples.retain(|(_, sample)| !crate::escape::has_unsafe(sample));
    if samples.is_empty() {
        return;
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "# HELP {name} {help}");
    for (suffix, sample) in samples {
        let _ = writeln!(out, "{name}{suffix}{sample}");
    }
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
