//! `inspect -o json|yaml`: the document of each pool in depth (docs/design/json-contract.md).

use super::pools::{DrainingPods, Inspected};
use crate::allocator::{Count, FamilyReport, Problem, Report};
use crate::render::reserve::RangeRow;
use serde::Serialize;

/// `inspect -o json`: one pool in depth (docs/design/json-contract.md).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PoolDetail<'a> {
    name: &'a str,
    api_version: &'a str,
    dialect: &'static str,
    annotations: &'a std::collections::BTreeMap<String, String>,
    migrated: bool,
    pod_selector: &'a Option<serde_json::Value>,
    namespace_selector: &'a Option<serde_json::Value>,
    #[serde(rename = "allowFirstIP")]
    allow_first_ip: bool,
    #[serde(rename = "allowLastIP")]
    allow_last_ip: bool,
    families: Vec<FamilyDetail<'a>>,
    /// Nodes holding blocks of the pool, with their per-family figures.
    nodes: Vec<crate::allocator::NodeReport>,
    problems: Vec<&'a Problem>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FamilyDetail<'a> {
    #[serde(flatten)]
    figures: &'a crate::allocator::FamilyReport,
    usable_per_block: Count,
    median_blocks_per_node: Option<f64>,
    /// These two are null when the input cannot show the reserved ranges (unknown is not none).
    /// (`nodesHolding` and `runwayNodes` are the flattened figures': null when unknown.)
    reservations: Option<Vec<ReservationDetail>>,
    draining: Option<Vec<DrainingDetail<'a>>>,
    orphans: Vec<BlockDetail>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReservationDetail {
    cidr: String,
    start: String,
    end: String,
    reserved_addresses: Count,
    withheld_blocks: Count,
    first_withheld_block: String,
    last_withheld_block: String,
    /// Allocated blocks the range covers: grandfathered, not evicted.
    allocated_overlapping: Vec<BlockDetail>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DrainingDetail<'a> {
    cidr: &'a str,
    /// Zero: nothing holds a block any more, the CIDR can be removed.
    allocated_blocks: Count,
    held_by: Vec<BlockDetail>,
    pods: Vec<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BlockDetail {
    block: String,
    nodes: Vec<String>,
    used_addresses: Count,
}

fn block_detail(held: &crate::allocator::HeldBlock) -> BlockDetail {
    BlockDetail { block: held.prefix.to_string(), nodes: held.node_names(), used_addresses: held.used }
}

impl<'a> FamilyDetail<'a> {
    fn new(fam: &'a FamilyReport, draining: &[DrainingPods]) -> Self {
        let reservations = fam
            .cidrs
            .iter()
            .flat_map(|cidr| cidr.reservations.iter().map(move |r| RangeRow::new(cidr, r)))
            .map(|row| ReservationDetail {
                cidr: row.cidr.cidr.clone(),
                start: row.start,
                end: row.end,
                reserved_addresses: row.reserved_addresses,
                withheld_blocks: row.blocks,
                first_withheld_block: row.first_block,
                last_withheld_block: row.last_block,
                allocated_overlapping: row.allocated.iter().map(block_detail).collect(),
            })
            .collect();
        let draining = fam
            .cidrs
            .iter()
            .filter(|c| c.draining)
            .map(|c| DrainingDetail {
                cidr: &c.cidr,
                allocated_blocks: c.allocated_blocks,
                held_by: c.allocated.iter().map(block_detail).collect(),
                pods: draining.iter().find(|d| d.cidr == c.cidr).map_or_else(Vec::new, |d| d.pods.clone()),
            })
            .collect();
        FamilyDetail {
            figures: fam,
            usable_per_block: fam.usable_per_block,
            median_blocks_per_node: fam.median_blocks_per_node,
            reservations: fam.known(reservations),
            draining: fam.known(draining),
            orphans: fam.orphans.iter().map(block_detail).collect(),
        }
    }
}

impl<'a> PoolDetail<'a> {
    pub(super) fn new(inspected: Inspected<'a>, report: &'a Report) -> Self {
        let (pool, pool_report) = (inspected.pool, inspected.report);
        let families = pool_report.families.iter().map(|fam| FamilyDetail::new(fam, &inspected.draining)).collect();
        let nodes = report
            .nodes
            .iter()
            .filter_map(|n| {
                let pools: Vec<_> = n.pools.iter().filter(|p| *p.pool == pool.name && !p.blocks.is_empty()).cloned().collect();
                (!pools.is_empty()).then(|| crate::allocator::NodeReport { name: n.name.clone(), pools, ignored: n.ignored })
            })
            .collect();
        PoolDetail {
            name: &pool.name,
            api_version: &pool.api_version,
            dialect: pool.dialect.name(),
            annotations: &pool.annotations,
            migrated: pool.is_migrated(),
            pod_selector: &pool.pod_selector,
            namespace_selector: &pool.namespace_selector,
            allow_first_ip: pool.allow_first_ip,
            allow_last_ip: pool.allow_last_ip,
            families,
            nodes,
            problems: inspected.problems,
        }
    }
}
