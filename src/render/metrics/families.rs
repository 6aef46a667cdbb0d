//! The metric families themselves: per pool and family, per IPAM-mode pool, problems, and per
//! node (`--node-metrics`). Names and labels are a contract (docs/metrics.md).

use super::{Family, Options, Sample, Type};
use crate::allocator::{Count, FamilyReport, PoolReport, Report, Severity};
use crate::model::Origin;
use std::collections::BTreeMap;

/// Per pool and family: name suffix, help, and the figure.
type Figure = (&'static str, &'static str, fn(&FamilyReport) -> Option<Count>);

const FAMILY_FIGURES: [Figure; 12] = [
    ("capacity_blocks", "Blocks the pool's CIDRs split into at its mask size.", |f| Some(f.capacity_blocks)),
    (
        "allocated_blocks",
        "Blocks CiliumNodes hold inside the pool's CIDRs (a block listed twice counts once); absent when the input holds no CiliumNodes.",
        |f| f.allocated(f.allocated_blocks),
    ),
    (
        "withheld_blocks",
        "Blocks not allocated that a valid reserved range touches: never handed out; absent when the input cannot show reserved ranges.",
        |f| f.known(f.withheld_blocks),
    ),
    (
        "free_blocks",
        "Blocks neither allocated nor withheld: what the operator can still hand out; absent when the input cannot show reserved ranges or holds no CiliumNodes.",
        |f| f.exact(f.free_blocks),
    ),
    (
        "orphan_blocks",
        "Blocks listed under the pool's name that lie outside its CIDRs; for a name no pool has (a deleted pool), every block listed under it.",
        |f| Some(f.orphan_blocks),
    ),
    ("total_addresses", "Addresses in the pool's CIDRs.", |f| Some(f.total_addresses)),
    ("reserved_addresses", "Addresses inside valid reserved ranges; absent when the input cannot show them.", |f| {
        f.known(f.reserved_addresses)
    }),
    ("allocated_addresses", "Usable addresses of the allocated blocks; absent when the input holds no CiliumNodes.", |f| {
        f.allocated(f.allocated_addresses)
    }),
    (
        "used_addresses",
        "Distinct in-use IPs (pods, CiliumEndpoints, node infrastructure) inside allocated blocks; absent when unknown (neither pods nor endpoints read, or no CiliumNodes in the input).",
        |f| f.used_addresses,
    ),
    ("idle_addresses", "Allocated minus used addresses (pre-allocation held by nodes); absent when used is unknown.", |f| f.idle_addresses),
    (
        "free_addresses",
        "Usable addresses of the free blocks; absent when the input cannot show reserved ranges or holds no CiliumNodes.",
        |f| f.exact(f.free_addresses),
    ),
    (
        "runway_nodes",
        "How many more nodes the free blocks serve at the median blocks per node; absent when no node holds a block, the input cannot show reserved ranges or holds no CiliumNodes.",
        |f| f.runway_nodes.and_then(|r| f.exact(r)),
    ),
];

/// The families of a usage report, in exposition order. A family without samples (e.g. used
/// addresses when pods could not be read) is left out entirely.
pub fn families(report: &Report, pools: &[&PoolReport], origin: &Origin, options: Options) -> Vec<Family> {
    let families: Vec<(&PoolReport, &FamilyReport)> = pools.iter().flat_map(|p| p.families.iter().map(move |f| (*p, f))).collect();
    let mut out = info_families(pools, origin);
    out.extend(figure_families(report, &families, options));
    out.extend(node_count_families(report, &families));
    out.extend(mode_families(report));
    out.extend(problem_families(&report.problems, &CLUSTER_PROBLEMS));
    if options.nodes {
        out.extend(node_families(report));
    }
    out
}

/// The labels of a pool and family's series.
fn pool_labels(p: &PoolReport, f: &FamilyReport) -> Vec<(&'static str, String)> {
    vec![("pool", p.name.clone()), ("family", f.family.to_string())]
}

/// Where the figures come from, and one info series per pool.
fn info_families(pools: &[&PoolReport], origin: &Origin) -> Vec<Family> {
    let source = vec![Sample::new(vec![("source", origin.kind.to_string()), ("ipam_mode", origin.ipam_mode.clone())], 1)];
    let info = pools
        .iter()
        .map(|p| {
            Sample::new(
                vec![("pool", p.name.clone()), ("api_version", p.api_version.clone()), ("dialect", p.dialect.name().to_string())],
                1,
            )
        })
        .collect();
    vec![
        Family::new(
            "ciliumpool_source",
            Type::Info,
            "Where the figures come from and the IPAM mode (cilium-config key ipam, or unknown).",
            source,
        ),
        Family::new(
            "ciliumpool_pool",
            Type::Info,
            "One per CiliumPodIPPool: the API version it was read through and its schema dialect.",
            info,
        ),
    ]
}

/// The block and address figures per pool and family ([`FAMILY_FIGURES`]), its mask size and
/// utilization.
fn figure_families(report: &Report, families: &[(&PoolReport, &FamilyReport)], options: Options) -> Vec<Family> {
    let mut out = Vec::new();
    for (suffix, help, figure) in FAMILY_FIGURES {
        let mut samples: Vec<Sample> = families.iter().filter_map(|(p, f)| figure(f).map(|v| Sample::new(pool_labels(p, f), v))).collect();
        // A deleted pool's blocks are orphans of its name.
        if suffix == "orphan_blocks" && options.deleted_pools {
            samples.extend(
                missing_pool_blocks(report)
                    .into_iter()
                    .map(|((pool, family), n)| Sample::new(vec![("pool", pool.to_string()), ("family", family.to_string())], n)),
            );
        }
        out.push(Family::new(&format!("ciliumpool_{suffix}"), Type::Gauge, help, samples));
    }
    let samples = families.iter().filter_map(|(p, f)| f.mask_size.map(|m| Sample::new(pool_labels(p, f), m))).collect();
    out.push(Family::new("ciliumpool_block_mask_size", Type::Gauge, "The prefix length of the pool's blocks (maskSize).", samples));
    let samples = families.iter().filter_map(|(p, f)| f.utilization().map(|u| Sample::new(pool_labels(p, f), u))).collect();
    out.push(Family::new(
        "ciliumpool_utilization_ratio",
        Type::Gauge,
        "Allocated blocks / (allocated + free blocks), 0 to 1; absent when the pool has no allocatable block or the input holds no CiliumNodes.",
        samples,
    ));
    out
}

/// Per pool and family, the nodes holding blocks and the nodes waiting for one.
fn node_count_families(report: &Report, families: &[(&PoolReport, &FamilyReport)]) -> Vec<Family> {
    // Without CiliumNodes, how many hold or wait is unknown: no series.
    let known = || families.iter().filter(|(_, f)| f.allocation_known);
    let samples = known().map(|(p, f)| Sample::new(pool_labels(p, f), f.nodes_holding)).collect();
    let holding = Family::new(
        "ciliumpool_nodes_holding",
        Type::Gauge,
        "CiliumNodes holding at least one allocated block of the pool and family; absent when the input holds no CiliumNodes.",
        samples,
    );
    let waiting = nodes_waiting(report);
    let samples = known()
        .map(|(p, f)| Sample::new(pool_labels(p, f), waiting.get(&(p.name.as_str(), f.family.to_string())).copied().unwrap_or(0)))
        .collect();
    let waiting = Family::new(
        "ciliumpool_nodes_waiting",
        Type::Gauge,
        "CiliumNodes that request more addresses of the pool and family than their blocks hold: each waits for another block; absent when the input holds no CiliumNodes.",
        samples,
    );
    vec![holding, waiting]
}

/// Pools a non-multi-pool mode's agent lists (ENI's default): no capacity in the cluster.
fn mode_families(report: &Report) -> Vec<Family> {
    let mode_families: Vec<_> = report.ipam.mode_pools.iter().flat_map(|p| p.families.iter().map(move |f| (p, f))).collect();
    let mode_labels = |name: &str, family: crate::model::Family| {
        vec![("pool", name.to_string()), ("family", family.to_string()), ("ipam_mode", report.ipam.mode.clone())]
    };
    type ModeFigure = (&'static str, &'static str, fn(&crate::allocator::ModeFamilyReport) -> Option<Count>);
    let mode_figures: [ModeFigure; 3] = [
        (
            "ciliumpool_mode_allocated_blocks",
            "Blocks nodes list under a pool of a non-multi-pool IPAM mode (ENI: /32 addresses and prefixes); capacity is not in the cluster.",
            |f| Some(f.allocated_blocks),
        ),
        ("ciliumpool_mode_allocated_addresses", "Usable addresses of those blocks.", |f| Some(f.allocated_addresses)),
        (
            "ciliumpool_mode_used_addresses",
            "Distinct in-use IPs inside those blocks; absent when pods and endpoints could not be read.",
            |f| f.used_addresses,
        ),
    ];
    mode_figures
        .into_iter()
        .map(|(name, help, figure)| {
            let samples =
                mode_families.iter().filter_map(|(p, f)| figure(f).map(|v| Sample::new(mode_labels(&p.name, f.family), v))).collect();
            Family::new(name, Type::Gauge, help, samples)
        })
        .collect()
}

/// The names and help of a pair of problem families (by severity; by kind and severity).
pub struct ProblemFamilies {
    pub names: [&'static str; 2],
    pub help: [&'static str; 2],
}

/// A cluster's own problems (`check` on one cluster).
pub const CLUSTER_PROBLEMS: ProblemFamilies = ProblemFamilies {
    names: ["ciliumpool_problems", "ciliumpool_problems_by_kind"],
    help: [
        "Problems kubectl ciliumpool check reports, by severity.",
        "Problems kubectl ciliumpool check reports, by kind and severity; only kinds present have a series.",
    ],
};

/// Problems between the clusters of a fleet (Cluster Mesh checks: overlapping pod CIDRs,
/// duplicate cluster-name or cluster-id, a pod IP in two clusters).
pub const FLEET_PROBLEMS: ProblemFamilies = ProblemFamilies {
    names: ["ciliumpool_fleet_problems", "ciliumpool_fleet_problems_by_kind"],
    help: [
        "Problems between the clusters of the fleet (kubectl ciliumpool check --context A,B), by severity.",
        "Problems between the clusters of the fleet, by kind and severity; only kinds present have a series.",
    ],
};

/// `problems` counted by severity (every severity, 0 included, so that an alert can compare) and
/// by kind and severity (kinds present only).
pub fn problem_families<'a>(
    problems: impl IntoIterator<Item = &'a crate::allocator::Problem> + Clone,
    families: &ProblemFamilies,
) -> Vec<Family> {
    let samples = [Severity::Error, Severity::Warning, Severity::Info]
        .iter()
        .map(|&severity| {
            Sample::new(
                vec![("severity", severity.name().to_string())],
                problems.clone().into_iter().filter(|p| p.severity == severity).count(),
            )
        })
        .collect();
    let mut by_kind: BTreeMap<(String, &str), usize> = BTreeMap::new();
    for problem in problems {
        *by_kind.entry((problem.kind.name(), problem.severity.name())).or_default() += 1;
    }
    let kinds =
        by_kind.into_iter().map(|((kind, severity), n)| Sample::new(vec![("kind", kind), ("severity", severity.to_string())], n)).collect();
    vec![
        Family::new(families.names[0], Type::Gauge, families.help[0], samples),
        Family::new(families.names[1], Type::Gauge, families.help[1], kinds),
    ]
}

/// Per pool name no CiliumPodIPPool has and family, the distinct blocks nodes list under it.
fn missing_pool_blocks(report: &Report) -> BTreeMap<(&str, crate::model::Family), usize> {
    let mut blocks = std::collections::BTreeSet::new();
    for (_, entry) in report.missing_pool_entries() {
        blocks.extend(entry.blocks.iter().filter_map(|b| crate::model::Prefix::parse(b)).map(|b| (&*entry.pool, b)));
    }
    let mut counts = BTreeMap::new();
    for (pool, block) in blocks {
        *counts.entry((pool, block.family)).or_default() += 1;
    }
    counts
}

/// Per pool and family, the nodes whose request exceeds the usable addresses of their blocks.
fn nodes_waiting(report: &Report) -> BTreeMap<(&str, String), usize> {
    let mut waiting = BTreeMap::new();
    for node in report.nodes.iter().filter(|n| !n.ignored) {
        for pool in &node.pools {
            for family in &pool.families {
                if Count::from(family.needed_addresses) > family.usable_addresses {
                    *waiting.entry((&*pool.pool, family.family.to_string())).or_default() += 1;
                }
            }
        }
    }
    waiting
}

/// `--node-metrics`: per node, pool and family.
fn node_families(report: &Report) -> Vec<Family> {
    type NodeFigure = (&'static str, &'static str, fn(&crate::allocator::report::NodeFamilyReport) -> Option<Count>);
    let figures: [NodeFigure; 4] = [
        ("ciliumpool_node_blocks", "Valid blocks of the pool and family the CiliumNode lists.", |f| Some(Count::from(f.blocks as u64))),
        ("ciliumpool_node_usable_addresses", "Usable addresses of those blocks.", |f| Some(f.usable_addresses)),
        (
            "ciliumpool_node_used_addresses",
            "Distinct in-use IPs inside those blocks; absent when pods and endpoints could not be read.",
            |f| f.used_addresses.map(Count::from),
        ),
        ("ciliumpool_node_needed_addresses", "Addresses the node requests from the pool (spec.ipam.pools.requested).", |f| {
            Some(Count::from(f.needed_addresses))
        }),
    ];
    let rows: Vec<_> = report
        .nodes
        .iter()
        .filter(|n| !n.ignored)
        .flat_map(|n| n.pools.iter().flat_map(move |p| p.families.iter().map(move |f| (n, p, f))))
        .collect();
    figures
        .into_iter()
        .map(|(name, help, figure)| {
            let samples = rows
                .iter()
                .filter_map(|(n, p, f)| {
                    figure(f).map(|v| {
                        Sample::new(vec![("node", n.name.to_string()), ("pool", p.pool.to_string()), ("family", f.family.to_string())], v)
                    })
                })
                .collect();
            Family::new(name, Type::Gauge, help, samples)
        })
        .collect()
}
