//! What the IPAM mode changes (docs/ipam-modes.md): blocks a non-multi-pool mode's agent lists
//! under a pool that has no CiliumPodIPPool (ENI's `default`: capacity lives in the cloud), and
//! cluster-pool podCIDRs, with the prerequisites of a migration to multi-pool.

use super::blocks;
use super::count::Count;
use super::interval::IntervalSet;
use super::checks::Problems;
use super::problem::{ProblemKind, Severity, node_object, pool_object};
use super::report::PoolReport;
use crate::model::{Family, IpamMode, Prefix, Snapshot};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IpamReport {
    /// `cilium-config` key `ipam`, or `unknown`.
    pub mode: String,
    /// Pools the agent of a non-multi-pool mode lists in CiliumNodes without a CiliumPodIPPool.
    pub mode_pools: Vec<ModePoolReport>,
    /// `spec.ipam.podCIDRs` per node (cluster-pool; multi-pool while migrating from it).
    pub pod_cidrs: Vec<NodePodCidrs>,
    /// The mode neither uses CiliumPodIPPools nor writes blocks the plugin can show.
    #[serde(skip)]
    pub nothing_to_show: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModePoolReport {
    pub name: String,
    pub families: Vec<ModeFamilyReport>,
    /// Why capacity, free and utilization cannot be known from the cluster.
    pub capacity_unknown: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeFamilyReport {
    pub family: Family,
    /// Distinct blocks (for ENI: /32 secondary IPs, /28 or /80 prefixes).
    pub allocated_blocks: Count,
    pub allocated_addresses: Count,
    pub used_addresses: Option<Count>,
    pub idle_addresses: Option<Count>,
    pub nodes: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePodCidrs {
    pub node: String,
    pub pod_cidrs: Vec<String>,
    pub used_addresses: Option<Count>,
}

/// Why a mode pool's capacity is unknown, per mode.
fn capacity_unknown(mode: &IpamMode) -> String {
    match mode {
        IpamMode::Eni => "capacity lives in AWS (ENIs and addresses per instance type, subnets' free addresses); the cluster records only what nodes hold".to_string(),
        other => format!("capacity is managed outside the cluster in IPAM mode {}; the cluster records only what nodes hold", other.name()),
    }
}

/// Is this pool name the mode's own (listed by nodes, no CiliumPodIPPool, mode not multi-pool)?
pub fn is_mode_pool(snapshot: &Snapshot, pool: &str) -> bool {
    snapshot.ipam.as_ref().is_some_and(|c| c.mode != IpamMode::MultiPool) && snapshot.pool(pool).is_none()
}

/// The IPAM part of the report. `count_used` counts in-use addresses of a family inside ranges
/// (`None` when pods and endpoints are unknown).
pub fn ipam_report(snapshot: &Snapshot, count_used: &dyn Fn(Family, &IntervalSet) -> Option<Count>) -> IpamReport {
    let mode = snapshot.ipam.as_ref().map(|c| c.mode.clone());
    let mut mode_pools = Vec::new();
    if let Some(mode) = mode.as_ref().filter(|m| **m != IpamMode::MultiPool) {
        let names: BTreeSet<&str> = snapshot.nodes.iter().flat_map(|n| n.allocated.iter().map(|a| a.pool.as_str())).filter(|p| snapshot.pool(p).is_none()).collect();
        for name in names {
            let mut families = Vec::new();
            for family in Family::ALL {
                // block → (usable addresses, holders)
                let mut held: BTreeMap<Prefix, (Count, BTreeSet<&str>)> = BTreeMap::new();
                for node in &snapshot.nodes {
                    for alloc in node.allocated.iter().filter(|a| a.pool == name) {
                        let (first, last) = (alloc.allow_first_ip.unwrap_or(false), alloc.allow_last_ip.unwrap_or(false));
                        for block in alloc.blocks.iter().filter_map(|b| b.prefix).filter(|b| b.family == family) {
                            let entry = held.entry(block).or_insert((blocks::usable(family, block.len, first, last), BTreeSet::new()));
                            entry.1.insert(node.name.as_str());
                        }
                    }
                }
                if held.is_empty() {
                    continue;
                }
                let allocated_addresses: Count = held.values().map(|(usable, _)| *usable).sum();
                let ranges = IntervalSet::from_ranges(held.keys().map(|b| (b.first(), b.last())));
                let used_addresses = count_used(family, &ranges);
                let nodes: BTreeSet<&str> = held.values().flat_map(|(_, n)| n.iter().copied()).collect();
                families.push(ModeFamilyReport {
                    family,
                    allocated_blocks: Count::from(held.len()),
                    allocated_addresses,
                    used_addresses,
                    idle_addresses: used_addresses.map(|u| allocated_addresses.saturating_sub(u)),
                    nodes: nodes.len(),
                });
            }
            mode_pools.push(ModePoolReport { name: name.to_string(), families, capacity_unknown: capacity_unknown(mode) });
        }
    }
    let pod_cidrs: Vec<NodePodCidrs> = snapshot
        .nodes
        .iter()
        .filter(|n| !n.pod_cidrs.is_empty())
        .map(|n| {
            let used = Family::ALL.iter().map(|&f| {
                let ranges = IntervalSet::from_ranges(n.pod_cidrs.iter().filter_map(|b| b.prefix).filter(|p| p.family == f).map(|p| (p.first(), p.last())));
                count_used(f, &ranges)
            });
            NodePodCidrs {
                node: n.name.clone(),
                pod_cidrs: n.pod_cidrs.iter().map(|b| b.original.clone()).collect(),
                used_addresses: used.collect::<Option<Vec<Count>>>().map(|v| v.into_iter().sum()),
            }
        })
        .collect();
    let nothing_to_show = matches!(mode, Some(IpamMode::Other(_)))
        && snapshot.pools.is_empty()
        && mode_pools.is_empty()
        && pod_cidrs.is_empty();
    IpamReport {
        mode: mode.map_or_else(|| "unknown".to_string(), |m| m.name().to_string()),
        mode_pools,
        pod_cidrs,
        nothing_to_show,
    }
}

/// Cluster-pool → multi-pool (Cilium ≥ 1.20): the operator moves each node's podCIDRs into
/// `pools.allocated` under the default pool, which must exist and cover every podCIDR as one of
/// its blocks (same mask size). Checked once a migration is under way (mode multi-pool) or being
/// prepared (mode cluster-pool and the default pool exists).
pub fn migration_problems(snapshot: &Snapshot, pools: &[PoolReport], problems: &mut Problems) {
    let Some(config) = &snapshot.ipam else { return };
    let nodes: Vec<_> = snapshot.nodes.iter().filter(|n| !n.pod_cidrs.is_empty()).collect();
    if nodes.is_empty() || !matches!(config.mode, IpamMode::MultiPool | IpamMode::ClusterPool) {
        return;
    }
    let default = &config.default_pool;
    let pool = pools.iter().find(|p| &p.name == default);
    let migrating = config.mode == IpamMode::MultiPool;
    if pool.is_none() && !migrating {
        return;
    }
    let mut push = |severity, object: String, message: String, action: &str| {
        problems.push(severity, ProblemKind::ClusterPoolMigration, object, message, action, Some(default));
    };
    if migrating && !config.cluster_pool_migration {
        push(Severity::Warning, format!("ConfigMap/{}", config.source),
            format!("{} node(s) still have spec.ipam.podCIDRs in multi-pool mode, and enable-cluster-pool-to-multi-pool-migration is not \"true\": the operator will not move them to pool {default}", nodes.len()),
            "set enable-cluster-pool-to-multi-pool-migration: \"true\" in cilium-config and restart the operator");
    }
    let Some(pool) = pool else {
        push(Severity::Error, pool_object(default),
            format!("pool {default} (ipam-default-ip-pool) does not exist: the podCIDRs of {} node(s) cannot move to it", nodes.len()),
            "create the pool with CIDRs covering every node's podCIDRs and maskSize equal to their prefix length");
        return;
    };
    for node in nodes {
        for cidr in &node.pod_cidrs {
            let Some(prefix) = cidr.prefix else {
                push(Severity::Error, node_object(&node.name), format!("spec.ipam.podCIDRs entry {:?} is not a CIDR", cidr.original), "fix the node's podCIDRs");
                continue;
            };
            let fam = pool.families.iter().find(|f| f.family == prefix.family);
            let covered = fam.is_some_and(|f| f.cidrs.iter().any(|c| c.prefix.contains_prefix(&prefix)));
            let mask = fam.and_then(|f| f.mask_size);
            if !covered {
                push(Severity::Error, node_object(&node.name),
                    format!("podCIDR {} is not inside any {} CIDR of pool {default}", cidr.original, prefix.family),
                    &format!("add a CIDR covering {} to pool {default}", cidr.original));
            } else if mask != Some(prefix.len) {
                push(Severity::Error, node_object(&node.name),
                    format!("podCIDR {} is a /{} but pool {default} hands out /{} blocks", cidr.original, prefix.len, mask.map_or("?".to_string(), |m| m.to_string())),
                    &format!("the pool's {} maskSize must equal the podCIDRs' prefix length ({})", prefix.family, prefix.len));
            }
        }
    }
}
