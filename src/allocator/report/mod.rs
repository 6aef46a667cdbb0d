//! The allocator's output: figures per pool, family, CIDR, block and node (docs/design/cilium.md#figures),
//! plus problems. Field names of the serialized parts are the JSON contract
//! (docs/design/json-contract.md). The pools' figures here, the nodes' in `nodes.rs`, what a
//! non-multi-pool IPAM mode shows in `modes.rs`.

use super::blocks;
use super::count::Count;
use super::interval::IntervalSet;
use super::problem::Problem;
use crate::model::pool::ReservedRange;
use crate::model::{Addr, Dialect, Family, Prefix};
use serde::Serialize;
use smallvec::SmallVec;
use std::fmt;
use std::sync::Arc;

mod modes;
mod nodes;

pub use modes::{IpamReport, ModeFamilyReport, ModePoolReport, NodePodCidrs};
pub use nodes::{Needed, NodeFamilyReport, NodePoolReport, NodeReport};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub pools: Vec<PoolReport>,
    pub nodes: Vec<NodeReport>,
    pub problems: Vec<Problem>,
    /// The IPAM mode and what it adds: the mode's own pools, cluster-pool podCIDRs.
    pub ipam: IpamReport,
    /// Where "used" came from.
    #[serde(skip)]
    pub used_sources: UsedSources,
}

impl Report {
    pub fn pool(&self, name: &str) -> Option<&PoolReport> {
        self.pools.iter().find(|p| p.name == name)
    }

    /// Node entries under a pool name no CiliumPodIPPool has (a deleted pool): every block they
    /// list is an orphan. The IPAM mode's own pools (ENI's `default`) have no object by design.
    pub fn missing_pool_entries(&self) -> impl Iterator<Item = (&NodeReport, &NodePoolReport)> {
        let mode_pool = |name: &str| self.ipam.mode_pools.iter().any(|m| *m.name == *name);
        self.nodes.iter().flat_map(|n| n.pools.iter().map(move |p| (n, p))).filter(move |(_, p)| !p.pool_exists && !mode_pool(&p.pool))
    }
}

/// Counts behind the "used" figures, for the footer.
#[derive(Clone, Debug, Default)]
pub struct UsedSources {
    /// `false` when neither pods nor endpoints could be read: used figures are unknown.
    pub known: bool,
    pub pods: usize,
    pub endpoints: usize,
    pub infrastructure_ips: usize,
    /// Distinct in-use addresses inside no listed block (host network, other IPAM, stale).
    pub unmanaged_ips: usize,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolReport {
    pub name: String,
    pub api_version: String,
    pub dialect: Dialect,
    pub families: Vec<FamilyReport>,
    #[serde(skip)]
    pub allow_first_ip: bool,
    #[serde(skip)]
    pub allow_last_ip: bool,
}

impl PoolReport {
    pub fn family(&self, family: Family) -> Option<&FamilyReport> {
        self.families.iter().find(|f| f.family == family)
    }
}

/// Serialized through [`FamilyDocument`]: the figures reservations change are null when the
/// input cannot show the reserved ranges.
#[derive(Clone, Debug)]
pub struct FamilyReport {
    pub family: Family,
    pub mask_size: Option<u8>,
    pub total_addresses: Count,
    pub capacity_blocks: Count,
    pub allocated_blocks: Count,
    pub withheld_blocks: Count,
    pub free_blocks: Count,
    pub orphan_blocks: Count,
    pub reserved_addresses: Count,
    pub allocated_addresses: Count,
    /// `None` (JSON null) when the sources of "used" could not be read.
    pub used_addresses: Option<Count>,
    pub idle_addresses: Option<Count>,
    pub free_addresses: Count,
    pub cidrs: Vec<CidrReport>,
    pub usable_per_block: Count,
    /// `false` when the input holds no CiliumNodes: utilization is unknown, not 0.
    pub allocation_known: bool,
    /// `false` when the input cannot show the pool's reserved ranges (pools read through
    /// v2alpha1): withheld, free and reserved figures, utilization, runway and the next block
    /// are unknown; the fields above hold what the input shows (no reservation), a bound only.
    pub reservations_known: bool,
    /// Nodes holding at least one allocated block of this pool and family.
    pub nodes_holding: usize,
    pub median_blocks_per_node: Option<f64>,
    /// How many more nodes fit at the median blocks per node.
    pub runway_nodes: Option<Count>,
    /// The lowest free block of the first CIDR that has one: what the operator hands out next
    /// after a restart (a prediction). JSON `nextBlock`: the CIDR text, or null.
    pub next_block: Option<Prefix>,
    /// What a running operator hands out next: in the same CIDR, the first free block after the
    /// highest block a node holds, wrapping around (Cilium's cidrset keeps a cursor after the last
    /// block it handed out, reset only by a restart). A prediction that holds while the block the
    /// operator handed out last is still held. JSON `nextBlockWhileRunning`.
    pub next_block_while_running: Option<Prefix>,
    pub orphans: Vec<HeldBlock>,
}

/// The JSON of a [`FamilyReport`] (docs/design/json-contract.md): null for what is unknown.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FamilyDocument<'a> {
    family: Family,
    mask_size: Option<u8>,
    total_addresses: Count,
    capacity_blocks: Count,
    allocated_blocks: Option<Count>,
    withheld_blocks: Option<Count>,
    free_blocks: Option<Count>,
    orphan_blocks: Count,
    reserved_addresses: Option<Count>,
    allocated_addresses: Option<Count>,
    used_addresses: Option<Count>,
    idle_addresses: Option<Count>,
    free_addresses: Option<Count>,
    /// Allocated / allocatable blocks as a fraction (the table's UTIL, OpenMetrics'
    /// `ciliumpool_utilization_ratio`); null when unknown.
    utilization: Option<f64>,
    /// What utilization is at least: `utilization` when that is known, the bound the input
    /// shows when it cannot show reserved ranges (the table's `≥94%`); null without CiliumNodes.
    utilization_at_least: Option<f64>,
    nodes_holding: Option<usize>,
    runway_nodes: Option<Count>,
    cidrs: &'a [CidrReport],
    #[serde(serialize_with = "display_or_null")]
    next_block: Option<Prefix>,
    #[serde(serialize_with = "display_or_null")]
    next_block_while_running: Option<Prefix>,
}

impl Serialize for FamilyReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        FamilyDocument {
            family: self.family,
            mask_size: self.mask_size,
            total_addresses: self.total_addresses,
            capacity_blocks: self.capacity_blocks,
            allocated_blocks: self.allocated(self.allocated_blocks),
            withheld_blocks: self.known(self.withheld_blocks),
            free_blocks: self.exact(self.free_blocks),
            orphan_blocks: self.orphan_blocks,
            reserved_addresses: self.known(self.reserved_addresses),
            allocated_addresses: self.allocated(self.allocated_addresses),
            used_addresses: self.used_addresses,
            idle_addresses: self.idle_addresses,
            free_addresses: self.exact(self.free_addresses),
            utilization: self.utilization(),
            utilization_at_least: self.utilization_at_least(),
            nodes_holding: self.allocated(self.nodes_holding),
            runway_nodes: self.runway_nodes.and_then(|r| self.exact(r)),
            cidrs: &self.cidrs,
            next_block: self.next_block.and_then(|b| self.exact(b)),
            next_block_while_running: self.next_block_while_running.and_then(|b| self.exact(b)),
        }
        .serialize(serializer)
    }
}

impl FamilyReport {
    /// Allocated blocks / allocatable blocks (allocated + free), as a fraction; `None` when unknown
    /// (no CiliumNodes, or reserved ranges the input cannot show).
    pub fn utilization(&self) -> Option<f64> {
        self.utilization_at_least().filter(|_| self.reservations_known)
    }

    /// [`FamilyReport::utilization`] as far as the input shows: with reserved ranges it cannot
    /// show, the true figure is at least this (hidden reservations only withhold free blocks).
    pub fn utilization_at_least(&self) -> Option<f64> {
        let allocatable = self.allocated_blocks + self.free_blocks;
        (self.allocation_known && !allocatable.is_zero()).then(|| self.allocated_blocks.to_f64() / allocatable.to_f64())
    }

    /// A figure reserved ranges change (withheld, free, reserved, allocatable, runway): `None`
    /// when the input cannot show the reserved ranges (unknown is not zero).
    pub fn known<T>(&self, figure: T) -> Option<T> {
        self.reservations_known.then_some(figure)
    }

    /// A figure of which blocks nodes hold (allocated blocks and addresses, nodes holding):
    /// `None` when the input holds no CiliumNodes (unknown is not zero).
    pub fn allocated<T>(&self, figure: T) -> Option<T> {
        self.allocation_known.then_some(figure)
    }

    /// A figure both allocations and reservations change (free blocks and addresses, runway,
    /// the next block): `None` when either is unknown.
    pub fn exact<T>(&self, figure: T) -> Option<T> {
        (self.allocation_known && self.reservations_known).then_some(figure)
    }
}

/// Serialized through [`CidrDocument`].
#[derive(Clone, Debug)]
pub struct CidrReport {
    /// The CIDR as spelled in the pool.
    pub cidr: String,
    pub capacity_blocks: Count,
    pub allocated_blocks: Count,
    pub withheld_blocks: Count,
    pub free_blocks: Count,
    /// Valid reserved ranges (invalid ones are problems).
    pub reserved_ranges: Vec<ReservedRange>,
    /// As [`FamilyReport::reservations_known`].
    pub reservations_known: bool,
    /// As [`FamilyReport::allocation_known`].
    pub allocation_known: bool,
    pub prefix: Prefix,
    /// The family's block size, so the report names its blocks itself (`run`, `index_of`).
    pub mask_size: u8,
    pub allocated: Vec<HeldBlock>,
    /// Block indices withheld (reserved and not allocated).
    pub withheld: IntervalSet,
    /// Block indices free.
    pub free: IntervalSet,
    pub reservations: Vec<Reservation>,
    /// Every block of the CIDR is reserved: it is being decommissioned.
    pub draining: bool,
}

/// The JSON of a [`CidrReport`]: withheld and free blocks and the reserved ranges are null when
/// the input cannot show the reserved ranges.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CidrDocument<'a> {
    cidr: &'a str,
    capacity_blocks: Count,
    allocated_blocks: Option<Count>,
    withheld_blocks: Option<Count>,
    free_blocks: Option<Count>,
    reserved_ranges: Option<&'a [ReservedRange]>,
}

impl Serialize for CidrReport {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = |figure| self.reservations_known.then_some(figure);
        CidrDocument {
            cidr: &self.cidr,
            capacity_blocks: self.capacity_blocks,
            allocated_blocks: self.allocation_known.then_some(self.allocated_blocks),
            withheld_blocks: known(self.withheld_blocks),
            free_blocks: known(self.free_blocks).filter(|_| self.allocation_known),
            reserved_ranges: self.reservations_known.then_some(self.reserved_ranges.as_slice()),
        }
        .serialize(serializer)
    }
}

impl CidrReport {
    /// The blocks with indices `first..=last` of this CIDR.
    pub fn run(&self, first: u128, last: u128) -> BlockRun {
        BlockRun::of(&self.prefix, self.mask_size, first, last)
    }

    /// The withheld blocks as runs of consecutive blocks, in address order.
    pub fn withheld_runs(&self) -> impl Iterator<Item = BlockRun> + '_ {
        self.withheld.ranges().iter().map(|&(first, last)| self.run(first, last))
    }

    /// The free blocks as runs of consecutive blocks, in address order.
    pub fn free_runs(&self) -> impl Iterator<Item = BlockRun> + '_ {
        self.free.ranges().iter().map(|&(first, last)| self.run(first, last))
    }

    /// The index of the first block of this CIDR that `held` covers: a listed block may contain
    /// the whole CIDR, then its first block is the CIDR's.
    pub fn index_of(&self, held: &HeldBlock) -> u128 {
        blocks::block_index(&self.prefix, self.mask_size, held.prefix.first().max(self.prefix.first()))
    }
}

/// Consecutive blocks of one CIDR: their indices and the blocks they name, computed here once
/// so no renderer does block arithmetic (docs/architecture.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRun {
    pub first_index: u128,
    pub last_index: u128,
    pub first: Prefix,
    pub last: Prefix,
}

impl BlockRun {
    pub fn of(cidr: &Prefix, mask_size: u8, first_index: u128, last_index: u128) -> BlockRun {
        let (first, last) = (blocks::block_at(cidr, mask_size, first_index), blocks::block_at(cidr, mask_size, last_index));
        BlockRun { first_index, last_index, first, last }
    }

    /// How many blocks the run has.
    pub fn count(&self) -> Count {
        Count::span(self.first_index, self.last_index)
    }

    /// How many addresses its blocks span.
    pub fn addresses(&self) -> Count {
        self.count() * blocks::block_size(self.first.family, self.first.len)
    }

    pub fn contains(&self, index: u128) -> bool {
        self.first_index <= index && index <= self.last_index
    }
}

/// `first` for one block, `first..last` for several.
impl fmt::Display for BlockRun {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.first_index == self.last_index { write!(f, "{}", self.first) } else { write!(f, "{}..{}", self.first, self.last) }
    }
}

/// A block listed by one or more nodes, with its use.
#[derive(Clone, Debug)]
pub struct HeldBlock {
    pub prefix: Prefix,
    /// The nodes listing it: one, unless it has several owners (a problem). Shared with the snapshot.
    pub nodes: SmallVec<[Arc<str>; 1]>,
    pub used: Count,
    pub usable: Count,
}

impl HeldBlock {
    /// The nodes listing it, as owned names for an answer or a plan.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.iter().map(|node| node.to_string()).collect()
    }
}

/// A valid reserved range and what it costs.
#[derive(Clone, Debug)]
pub struct Reservation {
    pub start: Addr,
    pub end: Addr,
    pub reserved_addresses: Count,
    /// Blocks the range touches.
    pub blocks: BlockRun,
    /// Touched blocks that are allocated (grandfathered, not evicted).
    pub allocated_overlapping: Vec<HeldBlock>,
}

impl Reservation {
    pub fn touched_blocks(&self) -> Count {
        self.blocks.count()
    }
}

fn display_or_null<S: serde::Serializer>(value: &Option<Prefix>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(prefix) => serializer.collect_str(prefix),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::analyze;
    use crate::model::Snapshot;
    use serde_json::json;

    #[test]
    fn utilization_is_allocated_over_allocated_plus_free() {
        // 10.0.0.0/24 in /26 blocks: n holds three, one is free; a second pool is reserved end to
        // end, so it has nothing allocatable.
        let snap = Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "p"}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "shut"}, "spec": {"ipv4": {"cidrs": ["10.9.0.0/24"], "maskSize": 26,
                "pool": [{"cidr": "10.9.0.0/24", "reservedRanges": [{"start": "10.9.0.0", "end": "10.9.0.255"}]}]}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": ["10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26"]}]}}}}),
        ]);
        let report = analyze(&snap);
        let p = report.pool("p").and_then(|p| p.family(Family::Ipv4)).unwrap();
        assert_eq!(p.utilization(), Some(0.75));
        let shut = report.pool("shut").and_then(|p| p.family(Family::Ipv4)).unwrap();
        assert_eq!(shut.utilization(), None, "no allocatable block");
        assert!(report.pool("q").is_none() && report.pool("p").unwrap().family(Family::Ipv6).is_none());
    }

    /// Pool `p` (4 /26 blocks), node `n` holding 3 of them unless `nodes` is false, read from
    /// files through v2alpha1 when `v2alpha1`; the ipv4 family's JSON.
    fn family_json(nodes: bool, v2alpha1: bool) -> serde_json::Value {
        let api_version = if v2alpha1 { "cilium.io/v2alpha1" } else { "cilium.io/v2" };
        let mut objects = vec![
            json!({"apiVersion": api_version, "kind": "CiliumPodIPPool", "metadata": {"name": "p"}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}}}),
        ];
        if nodes {
            objects.push(json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": ["10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26"]}]}}}}));
        }
        let mut snap = Snapshot::from_objects(objects);
        snap.set_origin(crate::model::Origin { kind: "files", ..Default::default() });
        serde_json::to_value(&analyze(&snap).pools[0].families[0]).unwrap()
    }

    #[test]
    fn unknown_figures_are_null_and_a_bound_is_at_least() {
        let pick = |doc: &serde_json::Value, keys: &[&str]| keys.iter().map(|k| doc[*k].clone()).collect::<Vec<_>>();
        let keys = ["allocatedBlocks", "freeBlocks", "allocatedAddresses", "freeAddresses", "utilization", "utilizationAtLeast"];
        let known = family_json(true, false);
        assert_eq!(pick(&known, &keys), [json!(3), json!(1), json!(186), json!(62), json!(0.75), json!(0.75)]);
        assert_eq!(pick(&known, &["nodesHolding", "runwayNodes", "nextBlock"]), [json!(1), json!(0), json!("10.0.0.192/26")]);
        // No CiliumNodes: which blocks are allocated is unknown, not none.
        let no_nodes = family_json(false, false);
        assert!(pick(&no_nodes, &keys).iter().all(serde_json::Value::is_null), "{no_nodes}");
        assert!(pick(&no_nodes, &["nodesHolding", "runwayNodes", "nextBlock"]).iter().all(serde_json::Value::is_null), "{no_nodes}");
        assert_eq!((&no_nodes["capacityBlocks"], &no_nodes["cidrs"][0]["allocatedBlocks"]), (&json!(4), &serde_json::Value::Null));
        // Through v2alpha1: reserved ranges unknown; hidden ones only withhold free blocks.
        let bound = family_json(true, true);
        assert_eq!(pick(&bound, &keys), [json!(3), json!(null), json!(186), json!(null), json!(null), json!(0.75)]);
    }

    #[test]
    fn a_reservation_touches_its_first_to_last_block() {
        let addr = |text| Addr::parse(text).unwrap();
        let r = Reservation {
            start: addr("10.0.0.130"),
            end: addr("10.0.1.10"),
            reserved_addresses: Count::from(137u64),
            blocks: BlockRun::of(&Prefix::parse("10.0.0.0/16").unwrap(), 26, 2, 4),
            allocated_overlapping: Vec::new(),
        };
        assert_eq!(r.touched_blocks(), Count::from(3u64));
        assert_eq!(r.blocks.to_string(), "10.0.0.128/26..10.0.1.0/26");
        assert_eq!(r.blocks.addresses(), Count::from(192u64));
        assert!(r.blocks.contains(2) && r.blocks.contains(4) && !r.blocks.contains(5));
        assert_eq!(BlockRun::of(&Prefix::parse("fd00::/64").unwrap(), 120, 3, 3).to_string(), "fd00::300/120");
    }
}
