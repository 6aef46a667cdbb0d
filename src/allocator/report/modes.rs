//! What the IPAM mode changes (`allocator::modes`, docs/ipam-modes.md): the pools a
//! non-multi-pool mode's agent lists without a CiliumPodIPPool, and the nodes' podCIDRs.

use crate::allocator::count::Count;
use crate::model::Family;
use serde::Serialize;

/// What the IPAM mode changes (allocator::modes, docs/ipam-modes.md).
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
