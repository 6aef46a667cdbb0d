//! A pool's figures, family by family: the blocks nodes hold, the blocks the restored operator
//! holds occupied, each CIDR's block states (allocated / withheld / free index sets), and the
//! family's totals (addresses, use, runway, the next block).

use super::cidrs::{UsableCidr, operator_rejection, usable_cidrs};
use super::in_use::{InUse, used_in};
use crate::allocator::blocks::{self, ListedBlocks};
use crate::allocator::check::{self, Problems};
use crate::allocator::count::Count;
use crate::allocator::interval::IntervalSet;
use crate::allocator::report::*;
use crate::model::pool::PoolFamily;
use crate::model::{AddrRange, Family, Node, Pool, Prefix};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

pub(super) fn pool_report(
    pool: &Pool,
    entries: &[NodeEntry],
    in_use: &InUse,
    listed: &ListedBlocks,
    problems: &mut Problems,
) -> PoolReport {
    check::pool_issues(problems, &pool.name, &pool.issues);
    let rejection = operator_rejection(pool);
    if let Some(why) = &rejection {
        check::pool_rejected(problems, &pool.name, why);
    }
    PoolReport {
        name: pool.name.clone(),
        api_version: pool.api_version.clone(),
        dialect: pool.dialect,
        families: pool
            .families
            .iter()
            .map(|fam| family_report(pool, fam, rejection.is_none(), entries, in_use, listed, problems))
            .collect(),
        allow_first_ip: pool.allow_first_ip,
        allow_last_ip: pool.allow_last_ip,
    }
}

/// One family of a pool: which CIDRs count, the blocks nodes hold in them, each CIDR's
/// figures, then the family's totals.
fn family_report(
    pool: &Pool,
    fam: &PoolFamily,
    accepted: bool,
    entries: &[NodeEntry],
    in_use: &InUse,
    listed: &ListedBlocks,
    problems: &mut Problems,
) -> FamilyReport {
    check::unmatched_pool_entries(problems, &pool.name, fam);
    let (usable, owners) = usable_cidrs(pool, fam, accepted, problems);
    let mask = fam.mask_size.unwrap_or(fam.family.bits());
    let block_use = BlockUse { family: fam.family, allow_first_ip: pool.allow_first_ip, allow_last_ip: pool.allow_last_ip, in_use };
    // Blocks listed under this pool's name, of this family: in one of its CIDRs, or orphans.
    let held = held_blocks(entries, fam.family);
    let runs = || held.chunk_by(|a, b| a.0 == b.0);
    let owner = |block: &Prefix| owners.iter().find(|(p, _)| p.overlaps(block)).and_then(|(_, usable)| *usable);
    // Sized before filling: these vectors hold every block of a large pool.
    let mut sizes = vec![0; usable.len() + 1];
    for run in runs() {
        sizes[owner(&run[0].0).unwrap_or(usable.len())] += 1;
    }
    let mut in_cidrs: Vec<Vec<HeldBlock>> = sizes[..usable.len()].iter().map(|&n| Vec::with_capacity(n)).collect();
    let mut orphans = Vec::with_capacity(sizes[usable.len()]);
    // A block belongs to the first CIDR of the pool it overlaps (pool.go occupyCIDR: the first
    // allocator InRange), whatever its length: cidrset.Occupy marks every block it touches, all of
    // the CIDR for a block containing it. In a CIDR the figures leave out it is refused: an orphan.
    let mut counted = listed.used_in_order();
    for run in runs() {
        let block = block_use.held(&run[0].0, run.iter().map(|(_, node, _)| *node), counted.used(&run[0].0));
        match owner(&block.prefix) {
            Some(i) => in_cidrs[i].push(block),
            None => orphans.push(block),
        }
    }
    let occupied = occupied_blocks(entries, &held, fam.family, &usable, &owners, mask);
    let cidrs =
        usable.iter().zip(in_cidrs).map(|(cidr, allocated)| cidr_report(&pool.name, cidr, mask, allocated, &occupied, problems)).collect();
    family_totals(fam, &block_use, mask, cidrs, orphans)
}

/// The addresses of the blocks the restored operator holds occupied for this pool family, replaying
/// each node's `AllocateToNode` before `RestoreFinished` (pool_allocator.go): every listed CIDR, in
/// entry order, marks the blocks it touches in the first pool CIDR it overlaps, unless they are all
/// marked already (then the node does not own it); then what the node owns outside its last entry
/// for the pool is released, which clears every block it touches — also blocks a kept CIDR covers.
/// Across nodes the union is taken; a release that clears another node's blocks depends on the
/// informer's order, which no snapshot says.
fn occupied_blocks<'a>(
    entries: &[NodeEntry<'a>],
    held: &[HeldPair<'a>],
    family: Family,
    usable: &[UsableCidr],
    owners: &[(Prefix, Option<usize>)],
    mask: u8,
) -> IntervalSet {
    // The aligned address range of the blocks `block` touches in its owner CIDR.
    let touched = |block: &Prefix| -> Option<(u128, u128)> {
        let cidr = &usable[owners.iter().find(|(p, _)| p.overlaps(block)).and_then(|(_, usable)| *usable)?].prefix;
        let (first, last) = blocks::indices_overlapping(cidr, mask, block.first().max(cidr.first()), block.last().min(cidr.last()));
        Some((blocks::block_at(cidr, mask, first).first(), blocks::block_at(cidr, mask, last).last()))
    };
    let listed = |&(_, alloc): &NodeEntry<'a>| alloc.blocks.iter().filter_map(|b| b.prefix).filter(move |b| b.family == family);
    // A node listing the pool in one entry (nearly all) occupies every block it lists: its held
    // blocks, read from `held` rather than from every node again.
    let mut ranges: Vec<(u128, u128)> = held
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|run| run.iter().any(|&(_, _, alone)| alone))
        .filter_map(|run| touched(&run[0].0))
        .collect();
    for node_entries in by_node(entries).filter(|node_entries| node_entries.len() > 1) {
        let [.., last] = node_entries else { continue };
        let kept: BTreeSet<Prefix> = listed(last).collect();
        let mut marked: Vec<(Prefix, (u128, u128))> = Vec::new();
        let mut owned = IntervalSet::new();
        for block in node_entries.iter().flat_map(listed) {
            let Some((start, end)) = touched(&block) else { continue };
            if marked.iter().any(|(m, _)| *m == block) || IntervalSet::single(start, end).difference(&owned).is_empty() {
                continue;
            }
            owned = owned.union(&IntervalSet::single(start, end));
            marked.push((block, (start, end)));
        }
        for (block, (start, end)) in &marked {
            if !kept.contains(block) {
                owned = owned.difference(&IntervalSet::single(*start, *end));
            }
        }
        ranges.extend(owned.ranges().iter().copied());
    }
    IntervalSet::from_ranges(ranges)
}

/// One `allocated[]` entry of a node: the node and the entry.
pub(super) type NodeEntry<'a> = (&'a Node, &'a crate::model::node::PoolAllocation);

/// Every node's `allocated[]` entries, by pool name; one node's entries for a pool are
/// consecutive and in spec order. Built once, so each pool reads only the nodes that list it.
pub(super) fn entries_by_pool(nodes: &[Node]) -> HashMap<&str, Vec<NodeEntry<'_>>, foldhash::fast::FixedState> {
    let mut by_pool: HashMap<&str, Vec<NodeEntry>, _> = HashMap::default();
    for node in nodes {
        for alloc in &node.allocated {
            by_pool.entry(alloc.pool.as_ref()).or_default().push((node, alloc));
        }
    }
    by_pool
}

/// A pool's entries split into one run per node.
fn by_node<'e, 'a>(entries: &'e [NodeEntry<'a>]) -> impl Iterator<Item = &'e [NodeEntry<'a>]> {
    entries.chunk_by(|a, b| std::ptr::eq(a.0, b.0))
}

/// A block a node lists under a pool, the node, and whether it lists the pool in one entry only.
type HeldPair<'a> = (Prefix, &'a Arc<str>, bool);

/// Every block CiliumNodes list under the pool's name, of one family, with the node listing
/// it: sorted by block, then node, without repeats.
/// A node listing the pool in several allocated[] entries keeps only the last entry's blocks:
/// AllocateToNode (pool_allocator.go) rebuilds its retain set per entry, so on restore it occupies
/// every entry's blocks, then releases all but the last entry's (check::nodes::split_pool_entries).
fn held_blocks<'a>(entries: &[NodeEntry<'a>], family: Family) -> Vec<HeldPair<'a>> {
    let last_entries = || by_node(entries).filter_map(|node_entries| Some((node_entries.last()?, node_entries.len() == 1)));
    let mut held: Vec<HeldPair> = Vec::with_capacity(last_entries().map(|((_, alloc), _)| alloc.blocks.len()).sum());
    held.extend(last_entries().flat_map(|((node, alloc), alone)| {
        alloc.blocks.iter().filter_map(|b| b.prefix).filter(|b| b.family == family).map(move |b| (b, &node.name, alone))
    }));
    held.sort_unstable();
    held.dedup();
    held
}

/// How the blocks of one pool family are used: usable addresses per block, addresses in use.
struct BlockUse<'a> {
    family: Family,
    allow_first_ip: bool,
    allow_last_ip: bool,
    in_use: &'a InUse,
}

impl BlockUse<'_> {
    fn usable(&self, len: u8) -> Count {
        blocks::usable(self.family, len, self.allow_first_ip, self.allow_last_ip)
    }

    /// The block `prefix` held by `holders`, with its in-use addresses if counted already.
    fn held<'a>(&self, prefix: &Prefix, holders: impl Iterator<Item = &'a Arc<str>>, counted: Option<usize>) -> HeldBlock {
        let used = Count::from(used_in(prefix, self.in_use, counted));
        HeldBlock { prefix: *prefix, nodes: holders.cloned().collect(), used, usable: self.usable(prefix.len) }
    }
}

/// One CIDR's block states (allocated, withheld by valid reservations, free) as index sets.
fn cidr_report(
    pool: &str,
    c: &UsableCidr,
    mask: u8,
    allocated: Vec<HeldBlock>,
    occupied: &IntervalSet,
    problems: &mut Problems,
) -> CidrReport {
    let capacity = blocks::capacity(&c.prefix, mask);
    let last_index = (capacity - Count::from(1u64)).to_u128().expect("at most 2^128 blocks per CIDR");
    let in_cidr = occupied.intersection(&IntervalSet::single(c.prefix.first(), c.prefix.last()));
    let allocated_idx =
        IntervalSet::from_ranges(in_cidr.ranges().iter().map(|&(start, end)| blocks::indices_overlapping(&c.prefix, mask, start, end)));
    let mut reservations = Vec::new();
    let mut reserved_ranges = Vec::new();
    for r in c.reserved {
        match r.within(&c.prefix) {
            Ok(AddrRange { start, end }) => {
                let (first, last) = blocks::indices_overlapping(&c.prefix, mask, start.value, end.value);
                let allocated_overlapping =
                    allocated.iter().filter(|b| b.prefix.first() <= end.value && start.value <= b.prefix.last()).cloned().collect();
                reserved_ranges.push(r.clone());
                reservations.push(Reservation {
                    start,
                    end,
                    reserved_addresses: Count::span(start.value, end.value),
                    blocks: BlockRun::of(&c.prefix, mask, first, last),
                    allocated_overlapping,
                });
            }
            Err(why) => check::invalid_reserved_range(problems, pool, r, c.original, &why),
        }
    }
    let reserved_idx = IntervalSet::from_ranges(reservations.iter().map(|r| (r.blocks.first_index, r.blocks.last_index)));
    let withheld = reserved_idx.difference(&allocated_idx);
    let free = IntervalSet::single(0, last_index).difference(&allocated_idx.union(&reserved_idx));
    CidrReport {
        cidr: c.original.to_string(),
        capacity_blocks: capacity,
        allocated_blocks: allocated_idx.len(),
        withheld_blocks: withheld.len(),
        free_blocks: free.len(),
        reserved_ranges,
        prefix: c.prefix,
        mask_size: mask,
        allocated,
        withheld,
        free,
        reservations,
        draining: reserved_idx.len() == capacity,
        reservations_known: true,
        allocation_known: true,
    }
}

/// The family's figures: sums over its CIDRs, addresses, use, runway and the next block.
fn family_totals(fam: &PoolFamily, block_use: &BlockUse, mask: u8, mut cidrs: Vec<CidrReport>, orphans: Vec<HeldBlock>) -> FamilyReport {
    let family = fam.family;
    let reservations_known = block_use.in_use.reservations_known;
    let allocation_known = block_use.in_use.nodes_known;
    cidrs.iter_mut().for_each(|c| (c.reservations_known, c.allocation_known) = (reservations_known, allocation_known));
    let total_addresses = IntervalSet::from_ranges(fam.cidrs.iter().filter_map(|c| c.prefix).map(|p| (p.first(), p.last()))).len();
    let sum = |figure: fn(&CidrReport) -> Count| -> Count { cidrs.iter().map(figure).sum() };
    let (capacity_blocks, allocated_blocks) = (sum(|c| c.capacity_blocks), sum(|c| c.allocated_blocks));
    let (withheld_blocks, free_blocks) = (sum(|c| c.withheld_blocks), sum(|c| c.free_blocks));
    let allocated = || cidrs.iter().flat_map(|c| c.allocated.iter());
    // Sized up front (a held block adds one node, but for the rare shared block): growing it
    // rehashed every name again.
    let mut blocks_per_node: HashMap<&str, usize, foldhash::fast::FixedState> =
        HashMap::with_capacity_and_hasher(allocated().count(), Default::default());
    for node in allocated().flat_map(|b| b.nodes.iter()) {
        *blocks_per_node.entry(node).or_default() += 1;
    }
    let usable_per_block = block_use.usable(mask);
    let allocated_addresses = allocated_blocks * usable_per_block;
    let used_addresses =
        block_use.in_use.count_in(family, &IntervalSet::from_ranges(allocated().map(|b| (b.prefix.first(), b.prefix.last()))));
    let median_blocks_per_node = median(blocks_per_node.values().map(|&c| c as f64).collect());
    let per_node = Count::from(median_blocks_per_node.map_or(1u64, |m| m.ceil().max(1.0) as u64));
    let reserved_spans = cidrs.iter().flat_map(|c| c.reservations.iter()).map(|r| (r.start.value, r.end.value));
    FamilyReport {
        family,
        mask_size: fam.mask_size,
        total_addresses,
        capacity_blocks,
        allocated_blocks,
        withheld_blocks,
        free_blocks,
        orphan_blocks: Count::from(orphans.len()),
        reserved_addresses: IntervalSet::from_ranges(reserved_spans).len(),
        allocated_addresses,
        used_addresses,
        idle_addresses: used_addresses.map(|u| allocated_addresses.saturating_sub(u)),
        free_addresses: free_blocks * usable_per_block,
        usable_per_block,
        allocation_known,
        reservations_known,
        nodes_holding: blocks_per_node.len(),
        median_blocks_per_node,
        runway_nodes: free_blocks.checked_div(per_node),
        next_block: cidrs.iter().find_map(|c| c.free.first().map(|i| blocks::block_at(&c.prefix, mask, i))),
        next_block_while_running: cidrs.iter().find_map(|c| {
            let after_highest = c.allocated.iter().map(|b| c.index_of(b) + 1).max().unwrap_or(0);
            c.free.first_from(after_highest).map(|i| blocks::block_at(&c.prefix, mask, i))
        }),
        cidrs,
        orphans,
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::analyze::analyze;
    use crate::allocator::analyze::test_objects::{node_object, pool_object, snapshot};
    use serde_json::json;

    /// Block indices of the pool's first CIDR occupied after the restore replay of `entries` (one node).
    fn occupied_indices(cidrs: &[&str], mask: u8, entries: &[(&str, &[&str])]) -> Vec<u128> {
        let snap = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": cidrs, "maskSize": mask}})), node_object("n", entries)]);
        let pool = &snap.pools[0];
        let fam = &pool.families[0];
        let (usable, owners) = usable_cidrs(pool, fam, true, &mut Problems::default());
        let entries = entries_by_pool(&snap.nodes);
        let entries = entries.get("p").map_or(&[][..], Vec::as_slice);
        let occupied = occupied_blocks(entries, &held_blocks(entries, Family::Ipv4), Family::Ipv4, &usable, &owners, mask);
        let first = &usable[0].prefix;
        let mut out = Vec::new();
        for &(start, end) in occupied.intersection(&IntervalSet::single(first.first(), first.last())).ranges() {
            let (a, b) = blocks::indices_overlapping(first, mask, start, end);
            out.extend(a..=b);
        }
        out
    }

    #[test]
    fn listed_cidrs_occupy_every_block_they_touch() {
        let cidr = ["10.0.0.0/24"];
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.64/26"])]), [1]);
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.0/25"])]), [0, 1], "shorter: every block it covers");
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.200/29"])]), [3], "longer: the block containing it");
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.0/23"])]), [0, 1, 2, 3], "containing the CIDR: all of it");
        assert!(occupied_indices(&cidr, 26, &[("p", &["10.9.0.0/26"])]).is_empty(), "outside: nothing");
        assert!(occupied_indices(&cidr, 26, &[("other", &["10.0.0.0/26"])]).is_empty(), "another pool's block");
    }

    #[test]
    fn a_block_containing_several_cidrs_occupies_only_the_first() {
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.1.0/24", "10.0.0.0/24"], "maskSize": 26}})),
            node_object("n", &[("p", &["10.0.0.0/23"])]),
        ]);
        let fam = &analyze(&snap).pools[0].families[0];
        let allocated: Vec<u64> = fam.cidrs.iter().map(|c| c.allocated_blocks.to_u64().unwrap()).collect();
        assert_eq!(allocated, [4, 0], "the first CIDR in spec order that it overlaps");
    }

    #[test]
    fn split_entries_keep_only_the_last_entrys_blocks() {
        let cidr = ["10.0.0.0/24"];
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.0/26", "10.0.0.64/26"]), ("p", &["10.0.0.64/26"])]), [1]);
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.64/26"]), ("p", &["10.0.0.0/26", "10.0.0.64/26"])]), [0, 1]);
        // Releasing an earlier entry's block clears it even where the kept /25 covers it.
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.0/26"]), ("p", &["10.0.0.0/25"])]), [1]);
        // A block whose blocks the node had occupied already is not the node's: not released.
        assert_eq!(occupied_indices(&cidr, 26, &[("p", &["10.0.0.0/25", "10.0.0.0/26"]), ("p", &["10.0.0.0/25"])]), [0, 1]);
        // held_blocks (used addresses, orphans, runway) reads the last entry only.
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": cidr, "maskSize": 26}})),
            node_object("n", &[("p", &["10.0.0.0/26"]), ("p", &["10.0.0.128/26"])]),
        ]);
        let held = held_blocks(&entries_by_pool(&snap.nodes)["p"], Family::Ipv4);
        assert_eq!(held.iter().map(|(p, node, alone)| format!("{p} {node} {alone}")).collect::<Vec<_>>(), ["10.0.0.128/26 n false"]);
    }

    #[test]
    fn median_of_blocks_per_node() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![1.0, 4.0]), Some(2.5));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
    }

    #[test]
    fn runway_and_next_block_follow_the_free_blocks() {
        // 8 blocks; n1 holds 2, n2 holds 1 (median 1.5, rounded up to 2); block 2 is reserved.
        let snap = snapshot(vec![
            pool_object(
                "p",
                json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26, "pool": [{"cidr": "10.0.0.0/23", "reservedRanges": [{"start": "10.0.0.130", "end": "10.0.0.130"}]}]}}),
            ),
            node_object("n1", &[("p", &["10.0.0.0/26", "10.0.0.64/26"])]),
            node_object("n2", &[("p", &["10.0.0.192/26"])]),
        ]);
        let fam = &analyze(&snap).pools[0].families[0];
        assert_eq!((fam.allocated_blocks, fam.withheld_blocks, fam.free_blocks), (Count::from(3u64), Count::from(1u64), Count::from(4u64)));
        assert_eq!(fam.median_blocks_per_node, Some(1.5));
        assert_eq!(fam.runway_nodes, Some(Count::from(2u64)));
        assert_eq!(fam.next_block.map(|b| b.to_string()).as_deref(), Some("10.0.1.0/26"));
        assert_eq!(fam.next_block_while_running.map(|b| b.to_string()).as_deref(), Some("10.0.1.0/26"));
        assert_eq!(fam.nodes_holding, 2);
        // Blocks 3 and 4 released: a restarted operator hands out the lowest free block (3), a
        // running one continues after the highest block held (5).
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26}})),
            node_object("n1", &[("p", &["10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26", "10.0.1.64/26"])]),
        ]);
        let fam = &analyze(&snap).pools[0].families[0];
        let predicted = |b: Option<Prefix>| b.map(|b| b.to_string());
        assert_eq!(predicted(fam.next_block).as_deref(), Some("10.0.0.192/26"));
        assert_eq!(predicted(fam.next_block_while_running).as_deref(), Some("10.0.1.128/26"));
        // No node holds a block: every free block is one node's worth.
        let empty = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26}}))]);
        let fam = &analyze(&empty).pools[0].families[0];
        assert_eq!((fam.runway_nodes, fam.next_block.map(|b| b.to_string())), (Some(Count::from(8u64)), Some("10.0.0.0/26".to_string())));
    }
}
