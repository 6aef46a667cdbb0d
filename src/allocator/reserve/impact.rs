//! What a planned change costs: the reports before and after it compared (blocks newly withheld
//! or released, allocated blocks and pods in the range, the family's figures before and after).

use super::plan::{Action, Plan};
use crate::allocator::blocks;
use crate::allocator::count::Count;
use crate::allocator::interval::IntervalSet;
use crate::allocator::report::{CidrReport, FamilyReport, Report};
use crate::model::pool::ReservedRange;
use crate::model::{AddrRange, Family, Snapshot};
use serde::Serialize;

/// A run of consecutive blocks, e.g. `10.41.0.0/24 .. 10.41.2.0/24` (3 blocks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockSpan {
    pub first: String,
    pub last: String,
    pub blocks: Count,
}

/// An allocated block the range touches: grandfathered, not evicted.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TouchedBlock {
    pub block: String,
    pub nodes: Vec<String>,
    /// Pods with addresses inside both the block and the range (`namespace/name`).
    pub pods_in_range: Vec<String>,
}

/// One family's figures before or after (the same definitions as `usage`); serialized through
/// [`FiguresDocument`] (what is unknown is null).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figures {
    pub capacity_blocks: Count,
    pub allocated_blocks: Count,
    pub withheld_blocks: Count,
    pub free_blocks: Count,
    /// allocated + free: what the operator can still use or already uses.
    pub allocatable_blocks: Count,
    pub reserved_addresses: Count,
    pub free_addresses: Count,
    /// More nodes that fit at the median blocks per node; `None` when unknown.
    pub runway_nodes: Option<Count>,
    /// `false` when the input holds no CiliumNodes: which blocks are allocated is unknown, and so
    /// are the allocated, withheld, free and allocatable blocks, free addresses and runway
    /// (null in JSON; capacity and reserved addresses stay known).
    pub allocation_known: bool,
}

/// The JSON of [`Figures`]: what depends on the allocated blocks is null without CiliumNodes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FiguresDocument {
    capacity_blocks: Count,
    allocated_blocks: Option<Count>,
    withheld_blocks: Option<Count>,
    free_blocks: Option<Count>,
    allocatable_blocks: Option<Count>,
    reserved_addresses: Count,
    free_addresses: Option<Count>,
    runway_nodes: Option<Count>,
}

impl Serialize for Figures {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = |figure: Count| self.allocation_known.then_some(figure);
        FiguresDocument {
            capacity_blocks: self.capacity_blocks,
            allocated_blocks: known(self.allocated_blocks),
            withheld_blocks: known(self.withheld_blocks),
            free_blocks: known(self.free_blocks),
            allocatable_blocks: known(self.allocatable_blocks),
            reserved_addresses: self.reserved_addresses,
            free_addresses: known(self.free_addresses),
            runway_nodes: self.runway_nodes.filter(|_| self.allocation_known),
        }
        .serialize(serializer)
    }
}

impl Figures {
    fn of(fam: &FamilyReport) -> Figures {
        Figures {
            capacity_blocks: fam.capacity_blocks,
            allocated_blocks: fam.allocated_blocks,
            withheld_blocks: fam.withheld_blocks,
            free_blocks: fam.free_blocks,
            allocatable_blocks: fam.allocated_blocks + fam.free_blocks,
            reserved_addresses: fam.reserved_addresses,
            free_addresses: fam.free_addresses,
            runway_nodes: fam.runway_nodes,
            allocation_known: fam.allocation_known,
        }
    }
}

/// What a change costs, measured on the snapshot before and after it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    pub pool: String,
    pub action: Action,
    pub family: Family,
    pub cidr: String,
    pub start: String,
    pub end: String,
    /// Addresses in the range.
    pub range_addresses: Count,
    /// Blocks the range touches and the addresses they hold (reservations act on whole blocks).
    pub touched_blocks: Count,
    pub touched_addresses: Count,
    /// Blocks that become withheld (reserve, drain) or stop being withheld (remove).
    pub newly_withheld: Vec<BlockSpan>,
    pub released: Vec<BlockSpan>,
    pub allocated_in_range: Vec<TouchedBlock>,
    pub replaced: Vec<ReservedRange>,
    pub adjacent: Vec<ReservedRange>,
    pub before: Figures,
    pub after: Figures,
    /// Every CIDR of the family would be reserved end to end.
    pub whole_family_reserved: bool,
}

/// Compares the reports before and after `plan`.
pub fn impact(snapshot: &Snapshot, before: &Report, after: &Report, pool: &str, plan: &Plan) -> Impact {
    let family = plan.family;
    let fam_of =
        |report: &Report| report.pool(pool).and_then(|p| p.family(family)).cloned().expect("the planned pool and family are in the report");
    let (fam_before, fam_after) = (fam_of(before), fam_of(after));
    let cidr_of = |fam: &FamilyReport| fam.cidrs.iter().find(|c| c.cidr == plan.cidr).cloned();
    let (cidr_before, cidr_after) = (cidr_of(&fam_before), cidr_of(&fam_after));
    let mask = fam_before.mask_size.unwrap_or(family.bits());
    let spans = |set: &IntervalSet, cidr: &CidrReport| -> Vec<BlockSpan> {
        set.ranges()
            .iter()
            .map(|&(first, last)| cidr.run(first, last))
            .map(|run| BlockSpan { first: run.first.to_string(), last: run.last.to_string(), blocks: run.count() })
            .collect()
    };
    let (newly_withheld, released) = match (&cidr_before, &cidr_after) {
        (Some(b), Some(a)) => (spans(&a.withheld.difference(&b.withheld), a), spans(&b.withheld.difference(&a.withheld), a)),
        _ => (Vec::new(), Vec::new()),
    };
    let (allocated_in_range, range_addresses, touched_blocks) = match (plan.range, cidr_after.as_ref().or(cidr_before.as_ref())) {
        (Some(range), Some(cidr)) => {
            let (lo, hi) = (range.start.value, range.end.value);
            let (first_block, last_block) = blocks::indices_overlapping(&cidr.prefix, mask, lo, hi);
            (allocated_in(snapshot, cidr, range), Count::span(lo, hi), Count::span(first_block, last_block))
        }
        // An invalid reservation counts for nothing; taking it out changes no figure.
        _ => (Vec::new(), Count::ZERO, Count::ZERO),
    };
    Impact {
        pool: pool.to_string(),
        action: plan.action,
        family,
        cidr: plan.cidr.clone(),
        start: plan.entry.start.clone(),
        end: plan.entry.end.clone(),
        range_addresses,
        touched_blocks,
        touched_addresses: touched_blocks * blocks::block_size(family, mask),
        newly_withheld,
        released,
        allocated_in_range,
        replaced: plan.replaced.clone(),
        adjacent: plan.adjacent.clone(),
        before: Figures::of(&fam_before),
        after: Figures::of(&fam_after),
        whole_family_reserved: !fam_after.cidrs.is_empty() && fam_after.cidrs.iter().all(|c| c.draining),
    }
}

/// The allocated blocks of `cidr` that `range` overlaps, each with the pods holding addresses
/// of the range in it (they keep them: allocated blocks are not evicted).
fn allocated_in(snapshot: &Snapshot, cidr: &CidrReport, range: AddrRange) -> Vec<TouchedBlock> {
    let (lo, hi, family) = (range.start.value, range.end.value, range.family());
    cidr.allocated
        .iter()
        .filter(|b| b.prefix.first() <= hi && lo <= b.prefix.last())
        .map(|held| {
            let (from, to) = (held.prefix.first().max(lo), held.prefix.last().min(hi));
            let pods_in_range = snapshot
                .pods
                .iter()
                .flatten()
                .filter(|p| p.holds_pod_ips() && p.ips.iter().any(|ip| ip.family == family && ip.value >= from && ip.value <= to))
                .map(|p| format!("{}/{}", p.namespace, p.name))
                .collect();
            TouchedBlock { block: held.prefix.to_string(), nodes: held.node_names(), pods_in_range }
        })
        .collect()
}
