//! The embedded allocator: a pure function from a snapshot to figures and problems, with the
//! operator's block semantics (docs/design/cilium.md#blocks, #used-addresses, #figures). Nothing here enumerates addresses or
//! blocks: work is proportional to the number of objects and ranges.

use super::blocks::{self, AddressSet, Addresses, ListedBlocks};
use super::checks::{self, Problems};
use super::parallel::side_by_side;
use super::count::Count;
use super::interval::IntervalSet;
use super::report::*;
use crate::model::pool::{PoolFamily, ReservedRange};
use crate::model::{Addr, AddrRange, Endpoint, Family, Node, Pod, Pool, Prefix, Snapshot};
use smallvec::SmallVec;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};
/// The operator rejects IPv6 CIDRs split into more blocks than this (2^16).
pub const IPV6_MAX_BLOCK_BITS: u8 = 16;

pub fn analyze(snapshot: &Snapshot) -> Report {
    // A large cluster's analysis is mostly passes over memory, run on two threads: the addresses
    // in use then the pool reports; beside them the listed blocks, the pods' addresses checked
    // against them, then the node rows (about as long). Each shared step is computed once, by
    // whichever thread needs it first (the other waits for it), so the steps also run in order
    // on one thread (side_by_side's fallback). The last steps, which need nothing of either
    // thread's own work, run on the thread that is done first.
    let (in_use_cell, listed_cell, last_cell) = (OnceLock::new(), OnceLock::new(), OnceLock::new());
    let in_use_of = || in_use_cell.get_or_init(|| InUse::collect(snapshot));
    let listed_of = || listed_cell.get_or_init(|| ListedBlocks::from_nodes(&snapshot.nodes));
    // The listed blocks with the in-use addresses inside each counted (node rows and held blocks
    // read them): the addresses first, so the thread starting with them never waits for the blocks.
    let counted = || {
        let (in_use, listed) = (in_use_of(), listed_of());
        listed.count_used(&in_use.ipv4, &in_use.ipv6);
        (in_use, listed)
    };
    // The addresses in use in no listed block, and the checks of what nodes list.
    let last_steps = || {
        last_cell.get_or_init(|| {
            let (in_use, listed) = counted();
            let unmanaged_ips: usize = Family::ALL.iter().map(|&f| in_use.family(f).count_outside(&listed.covered(f))).sum();
            let mut problems = Problems::default();
            checks::listings(snapshot, listed, &mut problems);
            (unmanaged_ips, problems)
        });
    };
    let ((mut pools, mut problems), (nodes, pod_ips, pod_problems)) = side_by_side(
        || {
            let (in_use, listed) = counted();
            let mut problems = Problems::default();
            let entries = entries_by_pool(&snapshot.nodes);
            let of_pool = |pool: &Pool| entries.get(pool.name.as_str()).map_or(&[][..], Vec::as_slice);
            let pools: Vec<_> = snapshot.pools.iter().map(|pool| pool_report(pool, of_pool(pool), in_use, listed, &mut problems)).collect();
            last_steps();
            (pools, problems)
        },
        || {
            let mut found = Problems::default();
            let pod_ips = checks::pod_ips(snapshot, listed_of(), &mut found);
            let (in_use, listed) = counted();
            let nodes = node_reports(snapshot, in_use, listed);
            last_steps();
            (nodes, pod_ips, found)
        },
    );
    let (unmanaged_ips, last_problems) = last_cell.into_inner().expect("both threads ran the last steps");
    problems.append(last_problems);
    let in_use = in_use_of();
    problems.append(pod_problems);
    // By name, as the API server lists them: files in another order must not reorder the report.
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    pod_ips.unallocated(&pools, &mut problems);
    checks::cluster(snapshot, &pools, &nodes, &mut problems);
    super::modes::migration_problems(snapshot, &pools, &mut problems);
    let ipam = super::modes::ipam_report(snapshot, &|family, ranges| in_use.count_in(family, ranges));
    Report {
        pools,
        nodes,
        problems: problems.finish(),
        ipam,
        used_sources: UsedSources { unmanaged_ips, ..in_use.sources },
    }
}

/// Distinct addresses in use (docs/design/cilium.md#used-addresses): running pod-network pods, endpoints, node infrastructure.
struct InUse {
    ipv4: AddressSet<u32>,
    ipv6: AddressSet<u128>,
    sources: UsedSources,
}

impl InUse {
    fn collect(snapshot: &Snapshot) -> InUse {
        let pods = snapshot.pods.as_deref().unwrap_or_default();
        let endpoints = snapshot.endpoints.as_deref().unwrap_or_default();
        let infrastructure = snapshot.nodes.iter().flat_map(|n| n.infrastructure_ips.iter());
        // Room for one address of each family per object: untouched capacity costs no memory.
        let infrastructure_ips = infrastructure.clone().count();
        let most = pods.len() + endpoints.len() + infrastructure_ips;
        let (mut ipv4, mut ipv6) = (Vec::with_capacity(most), Vec::with_capacity(most));
        let mut add = |addr: Addr| match addr.family {
            Family::Ipv4 => ipv4.push(blocks::narrow(addr.value)),
            Family::Ipv6 => ipv6.push(addr.value),
        };
        let counted_pods = workload_addresses(pods, endpoints, &mut add);
        infrastructure.clone().copied().for_each(&mut add);
        InUse {
            ipv4: AddressSet::new(ipv4),
            ipv6: AddressSet::new(ipv6),
            sources: UsedSources {
                known: snapshot.pods.is_some() || snapshot.endpoints.is_some(),
                pods: counted_pods,
                endpoints: endpoints.len(),
                infrastructure_ips,
                unmanaged_ips: 0,
            },
        }
    }

    fn family(&self, family: Family) -> &dyn Addresses {
        match family {
            Family::Ipv4 => &self.ipv4,
            Family::Ipv6 => &self.ipv6,
        }
    }

    fn count_in(&self, family: Family, ranges: &IntervalSet) -> Option<Count> {
        self.sources.known.then(|| self.family(family).count_in(ranges))
    }
}

/// Passes every address of the pods that hold theirs and of the endpoints to `add`, and returns
/// how many pods those are. An endpoint whose addresses its pod already gave is left out: a
/// running pod almost always has a CiliumEndpoint of its name with its addresses, and a snapshot
/// keeps both kinds sorted by namespace and name (model::snapshot), so the lists are walked side
/// by side (each object read once) and an endpoint's pod is one of the next few: half as many
/// addresses to sort. Only addresses decide a skip (an endpoint whose addresses a counted pod
/// holds adds nothing, whoever owns it); names only bring the walk back in step, so any order
/// gives the same set.
fn workload_addresses(pods: &[Pod], endpoints: &[Endpoint], add: &mut impl FnMut(Addr)) -> usize {
    let mut walk = PodWalk { pods, passed: 0, counted: 0 };
    for endpoint in endpoints.iter().filter(|e| !e.ips.is_empty()) {
        if !walk.repeated(endpoint, add) {
            endpoint.ips.iter().for_each(&mut *add);
        }
    }
    walk.pass_to(pods.len(), add);
    walk.counted
}

/// The pods walked beside the endpoints: those before `passed` have given their addresses.
struct PodWalk<'a> {
    pods: &'a [Pod],
    passed: usize,
    counted: usize,
}

impl PodWalk<'_> {
    /// Pods looked at past the last match: room for host-network and finished pods between two.
    const LOOK_AHEAD: usize = 4;

    fn pass_to(&mut self, to: usize, add: &mut impl FnMut(Addr)) {
        for pod in self.pods[self.passed..to].iter().filter(|p| p.holds_pod_ips()) {
            self.counted += 1;
            pod.ips.iter().for_each(&mut *add);
        }
        self.passed = to;
    }

    /// Whether one of the next pods holds all of `endpoint`'s addresses; passes the pods up to it.
    fn repeated(&mut self, endpoint: &Endpoint, add: &mut impl FnMut(Addr)) -> bool {
        if self.repeated_ahead(endpoint, add) {
            return true;
        }
        // Out of step (pods without endpoints, an endpoint without its pod): both lists are sorted
        // by namespace and name, so the pods before this endpoint's name have no endpoint left.
        let key = (&*endpoint.namespace, &*endpoint.name);
        let mut to = self.passed;
        while self.pods.get(to).is_some_and(|pod| (&*pod.namespace, &*pod.name) < key) {
            to += 1;
        }
        if to == self.passed {
            return false;
        }
        self.pass_to(to, add);
        self.repeated_ahead(endpoint, add)
    }

    fn repeated_ahead(&mut self, endpoint: &Endpoint, add: &mut impl FnMut(Addr)) -> bool {
        let holds_all = |pod: &Pod| pod.holds_pod_ips() && endpoint.ips.iter().all(|ip| pod.ips.contains(&ip));
        let Some(found) = self.pods[self.passed..].iter().take(Self::LOOK_AHEAD).position(holds_all) else { return false };
        self.pass_to(self.passed + found + 1, add);
        true
    }
}

/// A pool CIDR the figures can use: parsed, right family, splittable into blocks.
struct UsableCidr<'a> {
    original: &'a str,
    prefix: Prefix,
    reserved: &'a [ReservedRange],
}

fn pool_report(pool: &Pool, entries: &[NodeEntry], in_use: &InUse, listed: &ListedBlocks, problems: &mut Problems) -> PoolReport {
    checks::pool_issues(problems, &pool.name, &pool.issues);
    let rejection = operator_rejection(pool);
    if let Some(why) = &rejection {
        checks::pool_rejected(problems, &pool.name, why);
    }
    PoolReport {
        name: pool.name.clone(),
        api_version: pool.api_version.clone(),
        dialect: pool.dialect,
        families: pool.families.iter().map(|fam| family_report(pool, fam, rejection.is_none(), entries, in_use, listed, problems)).collect(),
        allow_first_ip: pool.allow_first_ip,
        allow_last_ip: pool.allow_last_ip,
    }
}

/// One family of a pool: which CIDRs count, the blocks nodes hold in them, each CIDR's
/// figures, then the family's totals.
fn family_report(pool: &Pool, fam: &PoolFamily, accepted: bool, entries: &[NodeEntry], in_use: &InUse, listed: &ListedBlocks, problems: &mut Problems) -> FamilyReport {
    checks::unmatched_pool_entries(problems, &pool.name, fam);
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
    let cidrs = usable.iter().zip(in_cidrs).map(|(cidr, allocated)| cidr_report(&pool.name, cidr, mask, allocated, &occupied, problems)).collect();
    family_totals(fam, &block_use, mask, cidrs, orphans)
}

/// The addresses of the blocks the restored operator holds occupied for this pool family, replaying
/// each node's `AllocateToNode` before `RestoreFinished` (pool_allocator.go): every listed CIDR, in
/// entry order, marks the blocks it touches in the first pool CIDR it overlaps, unless they are all
/// marked already (then the node does not own it); then what the node owns outside its last entry
/// for the pool is released, which clears every block it touches — also blocks a kept CIDR covers.
/// Across nodes the union is taken; a release that clears another node's blocks depends on the
/// informer's order, which no snapshot says.
fn occupied_blocks<'a>(entries: &[NodeEntry<'a>], held: &[HeldPair<'a>], family: Family, usable: &[UsableCidr], owners: &[(Prefix, Option<usize>)], mask: u8) -> IntervalSet {
    // The aligned address range of the blocks `block` touches in its owner CIDR.
    let touched = |block: &Prefix| -> Option<(u128, u128)> {
        let cidr = &usable[owners.iter().find(|(p, _)| p.overlaps(block)).and_then(|(_, usable)| *usable)?].prefix;
        let (first, last) = blocks::indices_overlapping(cidr, mask, block.first().max(cidr.first()), block.last().min(cidr.last()));
        Some((blocks::block_at(cidr, mask, first).first(), blocks::block_at(cidr, mask, last).last()))
    };
    let listed = |&(_, alloc): &NodeEntry<'a>| alloc.blocks.iter().filter_map(|b| b.prefix).filter(move |b| b.family == family);
    // A node listing the pool in one entry (nearly all) occupies every block it lists: its held
    // blocks, read from `held` rather than from every node again.
    let mut ranges: Vec<(u128, u128)> = held.chunk_by(|a, b| a.0 == b.0).filter(|run| run.iter().any(|&(_, _, alone)| alone)).filter_map(|run| touched(&run[0].0)).collect();
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

/// The CIDRs the figures can use: parsed, at least one block large, in a pool the operator
/// accepts. What is left out is a problem. Also every parsed CIDR in spec order with its index
/// among the usable ones: the candidates a node block can belong to.
fn usable_cidrs<'a>(pool: &Pool, fam: &'a PoolFamily, accepted: bool, problems: &mut Problems) -> (Vec<UsableCidr<'a>>, Vec<(Prefix, Option<usize>)>) {
    let mut usable: Vec<UsableCidr> = Vec::new();
    let mut owners: Vec<(Prefix, Option<usize>)> = Vec::new();
    let Some(mask) = fam.mask_size else { return (usable, owners) };
    for c in &fam.cidrs {
        let Some(prefix) = c.prefix else { continue };
        if owners.iter().any(|(p, _)| p.overlaps(&prefix)) {
            owners.push((prefix, None)); // the operator rejects the pool (operator_rejection)
            continue;
        }
        if mask < prefix.len {
            checks::cidr_smaller_than_block(problems, &pool.name, fam, &c.original, mask);
            owners.push((prefix, None));
            continue;
        }
        if fam.family == Family::Ipv6 && mask - prefix.len > IPV6_MAX_BLOCK_BITS {
            checks::ipv6_too_many_blocks(problems, &pool.name, &c.original, mask, mask - prefix.len);
        }
        owners.push((prefix, accepted.then_some(usable.len())));
        if accepted {
            usable.push(UsableCidr { original: &c.original, prefix, reserved: &c.reserved });
        }
    }
    (usable, owners)
}

/// Why the operator's `UpsertPool` refuses the pool, if it does (operator/pkg/ipam/allocator/
/// multipool/pool_allocator.go `UpsertPool`: `parseCIDRStrings`, then per family
/// clusterpool/cidralloc `NewCIDRSets`: a CIDR colliding with an earlier one, the wrong family,
/// and pkg/ipam/cidrset `NewCIDRSet`'s mask checks). A refusal leaves the operator without the
/// pool, both families: zero capacity, and after a restart its nodes' blocks are orphans.
fn operator_rejection(pool: &Pool) -> Option<String> {
    for fam in &pool.families {
        let field = fam.family.name();
        if let Some(c) = fam.cidrs.iter().find(|c| c.prefix.is_none()) {
            return Some(format!("spec.{field}.cidrs entry {:?} is not an {field} CIDR", c.original));
        }
    }
    for fam in &pool.families {
        let field = fam.family.name();
        // The raw value: the model keeps no maskSize outside 1..=bits, but the operator tells
        // "longer than the address" (refused) from 0 or missing (accepted, zero blocks).
        let mask = pool.raw.pointer(&format!("/spec/{field}/maskSize")).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let mut earlier: Vec<(&str, Prefix)> = Vec::new();
        for c in &fam.cidrs {
            let prefix = c.prefix?;
            if let Some((other, _)) = earlier.iter().find(|(_, p)| p.overlaps(&prefix)) {
                return Some(format!("spec.{field}.cidrs entries {other} and {} overlap", c.original));
            }
            if mask > u64::from(fam.family.bits()) {
                return Some(format!("spec.{field}.maskSize {mask} is longer than an {field} address"));
            }
            if fam.family == Family::Ipv6 && mask as i64 - i64::from(prefix.len) > i64::from(IPV6_MAX_BLOCK_BITS) {
                return Some(format!("{} splits into more than 2^16 blocks of /{mask}", c.original));
            }
            earlier.push((&c.original, prefix));
        }
    }
    None
}

/// One `allocated[]` entry of a node: the node and the entry.
type NodeEntry<'a> = (&'a Node, &'a crate::model::node::PoolAllocation);

/// Every node's `allocated[]` entries, by pool name; one node's entries for a pool are
/// consecutive and in spec order. Built once, so each pool reads only the nodes that list it.
fn entries_by_pool(nodes: &[Node]) -> HashMap<&str, Vec<NodeEntry<'_>>, foldhash::fast::FixedState> {
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
/// every entry's blocks, then releases all but the last entry's (checks::split_pool_entries).
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

/// In-use addresses inside `block`: `counted` beforehand when some node lists it.
fn used_in(block: &Prefix, in_use: &InUse, counted: Option<usize>) -> usize {
    counted.unwrap_or_else(|| in_use.family(block.family).count_in_range(block.first(), block.last()))
}

/// One CIDR's block states (allocated, withheld by valid reservations, free) as index sets.
fn cidr_report(pool: &str, c: &UsableCidr, mask: u8, allocated: Vec<HeldBlock>, occupied: &IntervalSet, problems: &mut Problems) -> CidrReport {
    let capacity = blocks::capacity(&c.prefix, mask);
    let last_index = (capacity - Count::from(1u64)).to_u128().expect("at most 2^128 blocks per CIDR");
    let in_cidr = occupied.intersection(&IntervalSet::single(c.prefix.first(), c.prefix.last()));
    let allocated_idx = IntervalSet::from_ranges(in_cidr.ranges().iter().map(|&(start, end)| blocks::indices_overlapping(&c.prefix, mask, start, end)));
    let mut reservations = Vec::new();
    let mut reserved_ranges = Vec::new();
    for r in c.reserved {
        match r.within(&c.prefix) {
            Ok(AddrRange { start, end }) => {
                let (first_block, last_block) = blocks::indices_overlapping(&c.prefix, mask, start.value, end.value);
                let allocated_overlapping = allocated.iter().filter(|b| b.prefix.first() <= end.value && start.value <= b.prefix.last()).cloned().collect();
                reserved_ranges.push(r.clone());
                reservations.push(Reservation { start, end, reserved_addresses: Count::span(start.value, end.value), first_block, last_block, allocated_overlapping });
            }
            Err(why) => checks::invalid_reserved_range(problems, pool, r, c.original, &why),
        }
    }
    let reserved_idx = IntervalSet::from_ranges(reservations.iter().map(|r| (r.first_block, r.last_block)));
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
        allocated,
        withheld,
        free,
        reservations,
        draining: reserved_idx.len() == capacity,
    }
}

/// The family's figures: sums over its CIDRs, addresses, use, runway and the next block.
fn family_totals(fam: &PoolFamily, block_use: &BlockUse, mask: u8, cidrs: Vec<CidrReport>, orphans: Vec<HeldBlock>) -> FamilyReport {
    let family = fam.family;
    let total_addresses = IntervalSet::from_ranges(fam.cidrs.iter().filter_map(|c| c.prefix).map(|p| (p.first(), p.last()))).len();
    let sum = |figure: fn(&CidrReport) -> Count| -> Count { cidrs.iter().map(figure).sum() };
    let (capacity_blocks, allocated_blocks) = (sum(|c| c.capacity_blocks), sum(|c| c.allocated_blocks));
    let (withheld_blocks, free_blocks) = (sum(|c| c.withheld_blocks), sum(|c| c.free_blocks));
    let allocated = || cidrs.iter().flat_map(|c| c.allocated.iter());
    // Sized up front (a held block adds one node, but for the rare shared block): growing it
    // rehashed every name again.
    let mut blocks_per_node: HashMap<&str, usize, foldhash::fast::FixedState> = HashMap::with_capacity_and_hasher(allocated().count(), Default::default());
    for node in allocated().flat_map(|b| b.nodes.iter()) {
        *blocks_per_node.entry(node).or_default() += 1;
    }
    let usable_per_block = block_use.usable(mask);
    let allocated_addresses = allocated_blocks * usable_per_block;
    let used_addresses = block_use.in_use.count_in(family, &IntervalSet::from_ranges(allocated().map(|b| (b.prefix.first(), b.prefix.last()))));
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
        nodes_holding: blocks_per_node.len(),
        median_blocks_per_node,
        runway_nodes: free_blocks.checked_div(per_node),
        next_block: cidrs.iter().find_map(|c| c.free.first().map(|i| blocks::block_at(&c.prefix, mask, i))),
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

fn node_reports(snapshot: &Snapshot, in_use: &InUse, listed: &ListedBlocks) -> Vec<NodeReport> {
    // Every node row looks its pools up by name: once per pool here, not a scan per row.
    let pools: HashMap<&str, &Pool, foldhash::fast::FixedState> = snapshot.pools.iter().map(|p| (p.name.as_str(), p)).collect();
    let rows = |(index, node): (usize, &Node)| NodeReport { name: node.name.clone(), pools: node_pools(&pools, index, node, in_use, listed), ignored: node.ignored };
    snapshot.nodes.iter().enumerate().map(rows).collect()
}

/// One row per pool the node lists or requests, in that order. Runs for every node of the
/// cluster: no allocation but the rows, no interval set for the usual one block per family.
fn node_pools(pools: &HashMap<&str, &Pool, foldhash::fast::FixedState>, node_index: usize, node: &Node, in_use: &InUse, listed: &ListedBlocks) -> Vec<NodePoolReport> {
    let mut names: SmallVec<[&Arc<str>; 4]> = SmallVec::new();
    for name in node.allocated.iter().map(|a| &a.pool).chain(node.requested.iter().map(|r| &r.pool)) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let mut rows = Vec::with_capacity(names.len());
    for name in names {
        let pool = pools.get(&**name).copied();
        let entries = || node.allocated.iter().filter(move |a| a.pool == *name);
        // The node's valid blocks of the pool and family, with the entry's flags, else the pool's.
        let listed_of = |family: Family| {
            entries().flat_map(move |entry| {
                let allow_first = entry.allow_first_ip.or(pool.map(|p| p.allow_first_ip)).unwrap_or(false);
                let allow_last = entry.allow_last_ip.or(pool.map(|p| p.allow_last_ip)).unwrap_or(false);
                entry.blocks.iter().filter_map(|b| b.prefix).filter(move |b| b.family == family).map(move |b| (b, allow_first, allow_last))
            })
        };
        let request = node.requested.iter().find(|r| r.pool == *name);
        let needed = Needed { ipv4: request.map_or(0, |r| r.needed_ipv4), ipv6: request.map_or(0, |r| r.needed_ipv6) };
        let mut families: SmallVec<[NodeFamilyReport; 2]> = SmallVec::new();
        for family in Family::ALL {
            let needed_addresses = if family == Family::Ipv4 { needed.ipv4 } else { needed.ipv6 };
            let (mut blocks, mut usable_addresses, mut only) = (0, Count::ZERO, None);
            for (block, allow_first, allow_last) in listed_of(family) {
                blocks += 1;
                usable_addresses += blocks::usable(family, block.len, allow_first, allow_last);
                only = Some(block);
            }
            if blocks == 0 && needed_addresses == 0 {
                continue;
            }
            // Distinct addresses: blocks listed twice or overlapping count once.
            let used_addresses = in_use.sources.known.then(|| match (blocks, only) {
                (1, Some(only)) => used_in(&only, in_use, listed.used_by_node(node_index, &only)),
                _ => in_use.family(family).count_inside(&IntervalSet::from_ranges(listed_of(family).map(|(b, _, _)| (b.first(), b.last())))),
            } as u64);
            families.push(NodeFamilyReport { family, blocks, usable_addresses, used_addresses, needed_addresses });
        }
        rows.push(NodePoolReport {
            pool: name.clone(),
            blocks: entries().flat_map(|e| e.blocks.iter().map(|b| b.original.clone())).collect(),
            used_addresses: in_use.sources.known.then(|| families.iter().filter_map(|f| f.used_addresses).sum()),
            needed_addresses: needed,
            families,
            pool_exists: pool.is_some(),
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    //! The analysis step by step, on objects small enough to work out by hand.
    use super::*;
    use serde_json::{Value, json};

    fn pool_object(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec})
    }

    fn node_object(name: &str, entries: &[(&str, &[&str])]) -> Value {
        let allocated: Vec<Value> = entries.iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect();
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name}, "spec": {"ipam": {"pools": {"allocated": allocated}}}})
    }

    fn snapshot(objects: Vec<Value>) -> Snapshot {
        Snapshot::from_objects(objects)
    }

    fn ipv4s(values: &[u128]) -> crate::model::workload::Ips {
        values.iter().map(|&value| Addr { family: Family::Ipv4, value }).collect()
    }

    fn workload_pod(namespace: &str, name: &str, ips: &[u128], holds: bool) -> Pod {
        Pod {
            namespace: namespace.into(),
            name: name.into(),
            node_name: None,
            host_network: !holds,
            terminated: false,
            ips: ipv4s(ips),
            requested_pool: None,
        }
    }

    fn workload_endpoint(namespace: &str, name: &str, ips: &[u128]) -> Endpoint {
        Endpoint { namespace: namespace.into(), name: name.into(), ips: ipv4s(ips) }
    }

    fn in_use_of(pods: Vec<Pod>, endpoints: Vec<Endpoint>) -> Vec<u128> {
        let snap = Snapshot { pods: Some(pods), endpoints: Some(endpoints), ..Snapshot::default() };
        InUse::collect(&snap).ipv4.iter().collect()
    }

    /// The addresses [`workload_addresses`] passes on, sorted, with the pods it counted.
    fn passed_on(pods: &[Pod], endpoints: &[Endpoint]) -> (Vec<u128>, usize) {
        let mut passed = Vec::new();
        let counted = workload_addresses(pods, endpoints, &mut |a: Addr| passed.push(a.value));
        passed.sort_unstable();
        (passed, counted)
    }

    #[test]
    fn endpoints_repeating_their_pods_are_skipped_and_the_rest_counted() {
        let pods = vec![
            workload_pod("a", "p1", &[1], true),
            workload_pod("a", "p2", &[2], false), // host network: its address is not the pod's
            workload_pod("a", "p3", &[3, 4], true),
            workload_pod("b", "p4", &[5], true),
        ];
        let endpoints = vec![
            workload_endpoint("a", "p1", &[1]),
            workload_endpoint("a", "p2", &[2]),    // an address only an endpoint gives
            workload_endpoint("a", "p3", &[4]),    // a part of its pod's
            workload_endpoint("a", "zz", &[]),     // no address
            workload_endpoint("b", "p4", &[5, 6]), // more than its pod's
        ];
        assert_eq!(passed_on(&pods, &endpoints), (vec![1, 2, 3, 4, 5, 5, 6], 3), "the endpoints of p1 and p3 add nothing and are skipped");
        assert_eq!(in_use_of(pods, endpoints), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn endpoints_out_of_step_with_the_pods_come_back_in_step_by_name() {
        // More pods without endpoints in a row than the look-ahead, then pods with them.
        let mut pods: Vec<Pod> = (0..10).map(|i| workload_pod("a", &format!("host-{i}"), &[100 + i], false)).collect();
        pods.extend((0..3).map(|i| workload_pod("b", &format!("p{i}"), &[i], true)));
        let endpoints: Vec<Endpoint> = (0..3).map(|i| workload_endpoint("b", &format!("p{i}"), &[i])).collect();
        assert_eq!(passed_on(&pods, &endpoints), (vec![0, 1, 2], 3), "every endpoint repeats its pod");
    }

    proptest::proptest! {
        #[test]
        fn the_addresses_in_use_are_the_union_whatever_the_order(
            pods in proptest::collection::vec((0u8..4, 0u128..40, proptest::option::of(0u128..40), proptest::bool::weighted(0.8)), 0..24),
            extra in proptest::collection::vec((0u8..4, proptest::collection::vec(0u128..40, 0..3)), 0..6),
            endpoint_of_pod in proptest::collection::vec(0u8..4, 24),
            shuffle in proptest::collection::vec(0usize..30, 0..30),
        ) {
            let mut pods: Vec<Pod> = pods.iter().enumerate().map(|(i, (ns, a, b, holds))| {
                let ips: Vec<u128> = std::iter::once(*a).chain(*b).collect();
                workload_pod(&format!("ns{ns}"), &format!("p{i:02}"), &ips, *holds)
            }).collect();
            pods.sort_by(|x, y| (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name)));
            // Per pod: no endpoint, one with its addresses, with the first only, with another one.
            let mut endpoints: Vec<Endpoint> = pods.iter().zip(&endpoint_of_pod).filter_map(|(pod, how)| {
                let ips: Vec<u128> = pod.ips.iter().map(|a| a.value).collect();
                let ips = match how { 0 => return None, 1 => ips, 2 => ips[..1].to_vec(), _ => vec![ips[0] + 1] };
                Some(workload_endpoint(&pod.namespace, &pod.name, &ips))
            }).collect();
            endpoints.extend(extra.iter().enumerate().map(|(i, (ns, ips))| workload_endpoint(&format!("ns{ns}"), &format!("e{i}"), ips)));
            endpoints.sort_by(|x, y| (&x.namespace, &x.name).cmp(&(&y.namespace, &y.name)));
            for (i, &j) in shuffle.iter().enumerate() {
                let len = endpoints.len();
                if len > 1 { endpoints.swap(i % len, j % len); }
            }
            let expected: BTreeSet<u128> = pods.iter().filter(|p| p.holds_pod_ips()).flat_map(|p| p.ips.iter())
                .chain(endpoints.iter().flat_map(|e| e.ips.iter())).map(|a| a.value).collect();
            proptest::prop_assert_eq!(in_use_of(pods, endpoints), expected.into_iter().collect::<Vec<_>>());
        }
    }

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
    fn the_operator_rejects_what_upsert_pool_refuses() {
        let why = |spec: Value| operator_rejection(&Pool::decode(&pool_object("p", spec), None));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.1.0/24"], "maskSize": 26}})), None);
        assert!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.0.128/25"], "maskSize": 26}})).unwrap().contains("overlap"));
        assert!(why(json!({"ipv4": {"cidrs": ["fd00::/120"], "maskSize": 26}})).unwrap().contains("is not an ipv4 CIDR"));
        assert!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 33}})).unwrap().contains("longer than"));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 32}})), None, "as long as the address: blocks of one address");
        // 2^16 blocks is the limit for IPv6; one bit more is refused. IPv4 has no such limit.
        assert_eq!(why(json!({"ipv6": {"cidrs": ["fd00::/100"], "maskSize": 116}})), None);
        assert!(why(json!({"ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}})).unwrap().contains("more than 2^16"));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/8"], "maskSize": 28}})), None);
        // One bad family rejects the whole pool.
        assert!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}})).is_some());
    }

    #[test]
    fn usable_cidrs_leave_out_what_has_no_blocks() {
        let pool = Pool::decode(&pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.1.0/27", "10.0.2.0/25"], "maskSize": 26}})), None);
        let mut problems = Problems::default();
        let (usable, owners) = usable_cidrs(&pool, &pool.families[0], true, &mut problems);
        let names: Vec<&str> = usable.iter().map(|c| c.original).collect();
        assert_eq!(names, ["10.0.0.0/24", "10.0.2.0/25"], "a /27 holds no /26 block");
        assert_eq!(owners.iter().map(|(_, i)| *i).collect::<Vec<_>>(), [Some(0), None, Some(1)]);
        let found = problems.finish();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].kind, found[0].severity), (crate::allocator::ProblemKind::InvalidPool, crate::allocator::Severity::Error));
        // In a rejected pool no CIDR is usable, but every one still owns the blocks it overlaps.
        let (usable, owners) = usable_cidrs(&pool, &pool.families[0], false, &mut Problems::default());
        assert!(usable.is_empty());
        assert_eq!(owners.len(), 3);
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
        let snap = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": cidr, "maskSize": 26}})), node_object("n", &[("p", &["10.0.0.0/26"]), ("p", &["10.0.0.128/26"])])]);
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
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26, "pool": [{"cidr": "10.0.0.0/23", "reservedRanges": [{"start": "10.0.0.130", "end": "10.0.0.130"}]}]}})),
            node_object("n1", &[("p", &["10.0.0.0/26", "10.0.0.64/26"])]),
            node_object("n2", &[("p", &["10.0.0.192/26"])]),
        ]);
        let fam = &analyze(&snap).pools[0].families[0];
        assert_eq!((fam.allocated_blocks, fam.withheld_blocks, fam.free_blocks), (Count::from(3u64), Count::from(1u64), Count::from(4u64)));
        assert_eq!(fam.median_blocks_per_node, Some(1.5));
        assert_eq!(fam.runway_nodes, Some(Count::from(2u64)));
        assert_eq!(fam.next_block.map(|b| b.to_string()).as_deref(), Some("10.0.1.0/26"));
        assert_eq!(fam.nodes_holding, 2);
        // No node holds a block: every free block is one node's worth.
        let empty = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26}}))]);
        let fam = &analyze(&empty).pools[0].families[0];
        assert_eq!((fam.runway_nodes, fam.next_block.map(|b| b.to_string())), (Some(Count::from(8u64)), Some("10.0.0.0/26".to_string())));
    }

    #[test]
    fn node_rows_count_both_families_of_every_entry() {
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})),
            node_object("n", &[("p", &["10.0.0.0/26", "fd00::/122"]), ("p", &["10.0.0.64/26"])]),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "d"}, "spec": {"nodeName": "n"},
                   "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}, {"ip": "10.0.0.70"}]}}),
        ]);
        let report = analyze(&snap);
        let row = &report.nodes[0].pools[0];
        assert_eq!(row.blocks.iter().map(|b| &**b).collect::<Vec<_>>(), ["10.0.0.0/26", "fd00::/122", "10.0.0.64/26"]);
        assert_eq!(row.used_addresses, Some(3));
        // usable: two IPv4 /26 (62 each) and one IPv6 /122 (62).
        assert_eq!(row.usable_addresses(), Count::from(186u64));
    }

    #[test]
    fn used_sources_count_what_was_read_and_what_lies_in_no_block() {
        // n holds 10.0.0.0/26 of p; its CiliumInternalIP 10.0.0.1 lies in it. Running pods at
        // 10.0.0.5 (in the block), 10.0.0.200 (in the CIDR, in no block) and 192.168.1.9 (in no
        // pool); a finished pod's 10.0.0.6 is not in use; an endpoint repeats 10.0.0.200.
        let pod = |name: &str, phase: &str, ip: &str| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": "n"},
            "status": {"phase": phase, "podIPs": [{"ip": ip}]}});
        let mut node = node_object("n", &[("p", &["10.0.0.0/26"])]);
        node["spec"]["addresses"] = json!([{"type": "CiliumInternalIP", "ip": "10.0.0.1"}]);
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}})),
            node,
            pod("a", "Running", "10.0.0.5"),
            pod("b", "Running", "10.0.0.200"),
            pod("c", "Running", "192.168.1.9"),
            pod("done", "Succeeded", "10.0.0.6"),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "b", "namespace": "d"}, "status": {"networking": {"addressing": [{"ipv4": "10.0.0.200"}]}}}),
        ]);
        let s = analyze(&snap).used_sources;
        // Distinct addresses in no listed block: 10.0.0.200 and 192.168.1.9.
        assert_eq!((s.known, s.pods, s.endpoints, s.infrastructure_ips, s.unmanaged_ips), (true, 3, 1, 1, 2));
    }

    #[test]
    fn used_is_known_when_pods_or_endpoints_could_be_read() {
        // A live read can fail for one kind (forbidden): the other still tells what is in use.
        let mut snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}})),
            node_object("n", &[("p", &["10.0.0.0/26"])]),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "d"}, "spec": {"nodeName": "n"}, "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}]}}),
        ]);
        let used = |s: &Snapshot| analyze(s).pools[0].families[0].used_addresses;
        snap.endpoints = None;
        assert_eq!(used(&snap), Some(Count::from(1u64)), "pods read, endpoints not");
        snap.pods = None;
        assert_eq!(used(&snap), None, "neither read: unknown");
        snap.endpoints = Some(Vec::new());
        assert_eq!(used(&snap), Some(Count::ZERO), "endpoints read (none), pods not");
    }

    #[test]
    fn a_cidr_of_one_block_counts_and_only_large_ipv6_cidrs_have_too_many_blocks() {
        let problems = |spec: Value| -> Vec<(String, String)> {
            let snap = snapshot(vec![pool_object("p", spec)]);
            let report = analyze(&snap);
            report.problems.iter().map(|p| (p.kind.name(), p.message.clone())).collect()
        };
        // Exactly one block: usable, no problem.
        let one = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/26"], "maskSize": 26}}))]);
        assert_eq!(analyze(&one).pools[0].families[0].capacity_blocks, Count::from(1u64));
        assert_eq!(problems(json!({"ipv4": {"cidrs": ["10.0.0.0/26"], "maskSize": 26}})), []);
        // IPv6: 2^16 blocks is the limit; IPv4 has none (2^20 blocks of /28).
        assert_eq!(problems(json!({"ipv6": {"cidrs": ["fd00::/100"], "maskSize": 116}})), []);
        assert_eq!(problems(json!({"ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})), []);
        assert_eq!(problems(json!({"ipv4": {"cidrs": ["10.0.0.0/8"], "maskSize": 28}})), []);
        let too_many: Vec<String> = problems(json!({"ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}})).into_iter().filter(|(k, _)| k == "ipv6-too-many-blocks").map(|(_, m)| m).collect();
        assert_eq!(too_many.len(), 1);
        assert!(too_many[0].starts_with("fd00::/99 splits into 2^17 blocks of /116;"), "{}", too_many[0]);
    }

    #[test]
    fn node_family_rows_carry_their_own_familys_request() {
        // n holds an IPv4 block of p and requests 5 IPv4 and 3 IPv6 addresses; m holds nothing and
        // requests 7 IPv6 addresses only.
        let request = |name: &str, blocks: &[&str], ipv4: u64, ipv6: u64| json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": blocks}], "requested": [{"pool": "p", "needed": {"ipv4-addrs": ipv4, "ipv6-addrs": ipv6}}]}}}});
        let snap = snapshot(vec![
            pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})),
            request("n", &["10.0.0.0/26"], 5, 3),
            request("m", &[], 0, 7),
        ]);
        let report = analyze(&snap);
        let rows = |node: usize| -> Vec<(Family, usize, u64)> { report.nodes[node].pools[0].families.iter().map(|f| (f.family, f.blocks, f.needed_addresses)).collect() };
        assert_eq!(report.nodes.iter().map(|n| n.name.as_ref()).collect::<Vec<_>>(), ["m", "n"]);
        assert_eq!(rows(0), [(Family::Ipv6, 0, 7)], "m: only the family it requests");
        assert_eq!(rows(1), [(Family::Ipv4, 1, 5), (Family::Ipv6, 0, 3)]);
    }
}
