//! Block geometry (docs/design/cilium.md#blocks): splitting a CIDR into blocks, usable addresses per block, and
//! an index of every block listed by CiliumNodes with longest-prefix lookup of addresses.

use super::count::Count;
use super::interval::IntervalSet;
use crate::model::{Addr, Family, Node, Prefix};
use std::sync::{Arc, OnceLock};

/// Number of blocks of `mask_size` in `cidr`.
pub fn capacity(cidr: &Prefix, mask_size: u8) -> Count {
    Count::pow2((mask_size - cidr.len) as u32)
}

/// Addresses per block of length `len`.
pub fn block_size(family: Family, len: u8) -> Count {
    Count::pow2((family.bits() - len) as u32)
}

/// Usable addresses of one block: the first and last address are skipped unless allowed;
/// blocks of one or two addresses (/31, /32, /127, /128) count in full.
pub fn usable(family: Family, len: u8, allow_first_ip: bool, allow_last_ip: bool) -> Count {
    let size = block_size(family, len);
    if size <= Count::from(2u64) {
        return size;
    }
    let skipped = u64::from(!allow_first_ip) + u64::from(!allow_last_ip);
    size - Count::from(skipped)
}

/// Index (within `cidr`) of the block of `mask_size` containing address `value`.
pub fn block_index(cidr: &Prefix, mask_size: u8, value: u128) -> u128 {
    (value - cidr.network) >> (cidr.family.bits() - mask_size)
}

/// The block with index `index` in `cidr`.
pub fn block_at(cidr: &Prefix, mask_size: u8, index: u128) -> Prefix {
    let shift = cidr.family.bits() - mask_size;
    Prefix { family: cidr.family, network: cidr.network + (index << shift), len: mask_size }
}

/// Block indices of `cidr` overlapped by the address range `start..=end` (already clipped to it).
pub fn indices_overlapping(cidr: &Prefix, mask_size: u8, start: u128, end: u128) -> (u128, u128) {
    (block_index(cidr, mask_size, start), block_index(cidr, mask_size, end))
}

/// One CiliumNode listing a block under a pool's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listing<'a> {
    /// Thin references to the snapshot's names (a listing is 24 bytes, not 40: a large cluster
    /// lists tens of thousands of blocks).
    pub node: &'a Arc<str>,
    pub pool: &'a Arc<str>,
    /// The node's position in the snapshot: comparing it is cheaper than comparing names.
    pub node_index: u32,
}

/// Everything CiliumNodes list in `spec.ipam.pools.allocated`, by block. It borrows the names
/// from the nodes, and answers a lookup with one binary search per listed prefix length; the
/// analysis asks it about pods' addresses and blocks node by node, hundreds of thousands of times
/// in a large cluster, mostly through the nodes' own lists (`by_node`).
#[derive(Debug, Default)]
pub struct ListedBlocks<'a> {
    /// Every block once, in order, with where its run of `listings` starts and ends.
    blocks: Vec<(Prefix, usize, usize)>,
    /// Who lists each block: sorted by node, then pool, without repeats.
    listings: Vec<Listing<'a>>,
    /// Prefix lengths present, per family (IPv4, IPv6), longest first (for longest-prefix match).
    lengths: [Vec<u8>; 2],
    /// In-use addresses inside each block of `blocks`, once [`ListedBlocks::count_used`] ran
    /// (set once, so the index can be shared by threads while it is counted).
    used: OnceLock<Vec<usize>>,
    /// Per node (by position), the blocks it lists with their position in `blocks`: node rows
    /// read them node by node, where a search of `blocks` would miss the cache every time.
    by_node: ByNode<(Prefix, u32)>,
    /// Per node, the address ranges of its blocks that contain no other listed block (for an
    /// address inside, the block is the most specific), IPv4 in 32 bits: read once per pod
    /// address, so small enough to stay in the cache.
    leaves_v4: ByNode<(u32, u32)>,
    leaves_v6: ByNode<(u128, u128)>,
}

/// Items grouped by node position in one vector: a node's items are two loads away.
#[derive(Debug)]
struct ByNode<T> {
    /// Where each node's items start in `items`, and one more for the end.
    starts: Vec<u32>,
    items: Vec<T>,
}

impl<T> Default for ByNode<T> {
    fn default() -> Self {
        ByNode { starts: Vec::new(), items: Vec::new() }
    }
}

impl<T: Copy> ByNode<T> {
    /// From the items `each` passes to its sink with their node position; a node's items keep
    /// their order. A counting sort: `each` runs twice, once to count the items per node, then to
    /// write each where its node's items go (no list of pairs in between: a large cluster's is
    /// megabytes, each faulted in and zeroed).
    fn build(nodes: usize, each: impl Fn(&mut dyn FnMut(usize, T))) -> ByNode<T> {
        let mut starts = vec![0u32; nodes + 1];
        let mut filler = None;
        each(&mut |node, item| {
            starts[node + 1] = starts[node + 1].checked_add(1).expect("fewer than 2^32 listed blocks");
            filler.get_or_insert(item);
        });
        for node in 0..nodes {
            starts[node + 1] = starts[node + 1].checked_add(starts[node]).expect("fewer than 2^32 listed blocks");
        }
        let Some(filler) = filler else { return ByNode { starts, items: Vec::new() } };
        let (mut next, mut items) = (starts.clone(), vec![filler; starts[nodes] as usize]);
        each(&mut |node, item| {
            items[next[node] as usize] = item;
            next[node] += 1;
        });
        ByNode { starts, items }
    }

    fn of(&self, node: usize) -> &[T] {
        match (self.starts.get(node), self.starts.get(node + 1)) {
            (Some(&start), Some(&end)) => &self.items[start as usize..end as usize],
            _ => &[],
        }
    }
}

impl<'a> ListedBlocks<'a> {
    pub fn from_nodes(nodes: &'a [Node]) -> ListedBlocks<'a> {
        assert!(u32::try_from(nodes.len()).is_ok(), "fewer than 2^32 nodes");
        let mut pairs: Vec<(Prefix, Listing)> = Vec::with_capacity(nodes.iter().flat_map(|n| &n.allocated).map(|a| a.blocks.len()).sum());
        pairs.extend(
            nodes
                .iter()
                .enumerate()
                .flat_map(|(node_index, node)| node.allocated.iter().map(move |alloc| (node_index as u32, &node.name, alloc)))
                .flat_map(|(node_index, node, alloc)| {
                    alloc.blocks.iter().filter_map(|b| b.prefix).map(move |block| (block, Listing { node, pool: &alloc.pool, node_index }))
                }),
        );
        pairs.sort_unstable();
        pairs.dedup();
        let mut listed = ListedBlocks {
            listings: Vec::with_capacity(pairs.len()),
            blocks: Vec::with_capacity(pairs.len()),
            lengths: Default::default(),
            used: OnceLock::new(),
            by_node: ByNode::default(),
            leaves_v4: ByNode::default(),
            leaves_v6: ByNode::default(),
        };
        for run in pairs.chunk_by(|a, b| a.0 == b.0) {
            let block = run[0].0;
            let start = listed.listings.len();
            listed.listings.extend(run.iter().map(|(_, listing)| *listing));
            listed.blocks.push((block, start, listed.listings.len()));
            let lens = &mut listed.lengths[family_slot(block.family)];
            if !lens.contains(&block.len) {
                lens.push(block.len);
            }
        }
        for lens in &mut listed.lengths {
            lens.sort_unstable_by(|a, b| b.cmp(a));
        }
        // Sorted by network, then length: a block that contains another is directly followed by
        // one it contains (prefixes nest or are disjoint).
        let (blocks, listings) = (&listed.blocks, &listed.listings);
        let leaf = |i: usize| !blocks.get(i + 1).is_some_and(|(next, _, _)| blocks[i].0.contains_prefix(next));
        // Each block with its position, once per node listing it (listings are sorted by node:
        // a node listing the block under two pools, once).
        let per_node = |emit: &mut dyn FnMut(usize, usize)| {
            for (i, (_, start, end)) in blocks.iter().enumerate() {
                for run in listings[*start..*end].chunk_by(|a, b| a.node_index == b.node_index) {
                    emit(run[0].node_index as usize, i);
                }
            }
        };
        let index = |i: usize| u32::try_from(i).expect("fewer than 2^32 listed blocks");
        let by_node = ByNode::build(nodes.len(), |sink| per_node(&mut |node, i| sink(node, (blocks[i].0, index(i)))));
        // The leaf blocks of one family, per node.
        let leaves = |family: Family, sink: &mut dyn FnMut(usize, &Prefix)| {
            per_node(&mut |node, i| {
                if blocks[i].0.family == family && leaf(i) {
                    sink(node, &blocks[i].0);
                }
            })
        };
        let leaves_v4 = ByNode::build(nodes.len(), |sink| {
            leaves(Family::Ipv4, &mut |node, block| sink(node, (narrow(block.first()), narrow(block.last()))))
        });
        let leaves_v6 =
            ByNode::build(nodes.len(), |sink| leaves(Family::Ipv6, &mut |node, block| sink(node, (block.first(), block.last()))));
        (listed.by_node, listed.leaves_v4, listed.leaves_v6) = (by_node, leaves_v4, leaves_v6);
        listed
    }

    /// Whether `addr`'s most specific listed block is one the node at `node_index` lists, found
    /// among that node's own blocks: no search for the usual pod, inside its node's block.
    /// `false` can also mean the answer needs [`ListedBlocks::lookup`].
    pub fn listed_by_node(&self, node_index: usize, addr: Addr) -> bool {
        let value = addr.value;
        match addr.family {
            Family::Ipv4 => self.leaves_v4.of(node_index).iter().any(|&(first, last)| (first..=last).contains(&narrow(value))),
            Family::Ipv6 => self.leaves_v6.of(node_index).iter().any(|&(first, last)| (first..=last).contains(&value)),
        }
    }

    /// In-use addresses inside `block`, which the node at `node_index` lists, once
    /// [`ListedBlocks::count_used`] ran.
    pub fn used_by_node(&self, node_index: usize, block: &Prefix) -> Option<usize> {
        let &(_, index) = self.by_node.of(node_index).iter().find(|(prefix, _)| prefix == block)?;
        self.used.get()?.get(index as usize).copied()
    }

    /// Counts of blocks asked for in ascending order, each found from where the previous was.
    pub fn used_in_order(&self) -> UsedInOrder<'_, 'a> {
        UsedInOrder { listed: self, at: 0 }
    }

    /// Every listed block with who lists it, in block order.
    pub fn blocks(&self) -> impl Iterator<Item = (&Prefix, &[Listing<'a>])> {
        self.blocks.iter().map(|(block, start, end)| (block, &self.listings[*start..*end]))
    }

    /// Counts the addresses in use inside every listed block in one ascending
    /// sweep: the blocks and the addresses are both sorted, so each count starts where the
    /// previous one began instead of searching all addresses again. The first call counts (a
    /// second thread calling meanwhile waits for it); later calls change nothing.
    pub fn count_used(&self, ipv4: &AddressSet<u32>, ipv6: &AddressSet<u128>) {
        self.used.get_or_init(|| {
            let (mut from_v4, mut from_v6) = (0, 0);
            self.blocks
                .iter()
                .map(|(block, _, _)| match block.family {
                    Family::Ipv4 => count_from(&ipv4.sorted, &mut from_v4, block),
                    Family::Ipv6 => count_from(&ipv6.sorted, &mut from_v6, block),
                })
                .collect()
        });
    }

    /// The addresses of `family` some listed block contains.
    pub fn covered(&self, family: Family) -> IntervalSet {
        IntervalSet::from_ranges(self.blocks.iter().filter(|(b, _, _)| b.family == family).map(|(b, _, _)| (b.first(), b.last())))
    }

    /// The most specific listed block containing `addr`, with who lists it.
    pub fn lookup(&self, addr: Addr) -> Option<(&Prefix, &[Listing<'a>])> {
        self.lengths[family_slot(addr.family)].iter().find_map(|&len| {
            let block = Prefix::containing(addr.family, addr.value, len);
            let (block, start, end) = &self.blocks[self.blocks.binary_search_by(|(b, _, _)| b.cmp(&block)).ok()?];
            Some((block, &self.listings[*start..*end]))
        })
    }
}

/// See [`ListedBlocks::used_in_order`].
pub struct UsedInOrder<'l, 'a> {
    listed: &'l ListedBlocks<'a>,
    at: usize,
}

impl UsedInOrder<'_, '_> {
    /// In-use addresses inside `block`, when it is listed and counted; blocks asked for out of
    /// order are found too, from the start.
    pub fn used(&mut self, block: &Prefix) -> Option<usize> {
        let blocks = &self.listed.blocks;
        if self.at >= blocks.len() || blocks[self.at].0 > *block {
            self.at = 0;
        }
        self.at = gallop(blocks, self.at, |(b, _, _)| b < block);
        (blocks.get(self.at)?.0 == *block).then(|| self.listed.used.get()?.get(self.at).copied()).flatten()
    }
}

/// An IPv4 address (or range end) in 32 bits.
pub fn narrow(value: u128) -> u32 {
    u32::try_from(value).expect("an IPv4 address fits in 32 bits")
}

fn family_slot(family: Family) -> usize {
    match family {
        Family::Ipv4 => 0,
        Family::Ipv6 => 1,
    }
}

/// The addresses of `sorted[*from..]` inside `block`, moving `from` to the first not below it.
fn count_from<W: Word>(sorted: &[W], from: &mut usize, block: &Prefix) -> usize {
    let (first, last) = (block.first(), block.last());
    *from = gallop(sorted, *from, |&v| v.into() < first);
    gallop(sorted, *from, |&v| v.into() <= last) - *from
}

/// The end of the run of `sorted[from..]` for which `below` holds (`below` is true, then false),
/// found by doubling steps from `from`: a few probes when the run is short, as in a sweep.
fn gallop<T>(sorted: &[T], from: usize, below: impl Fn(&T) -> bool) -> usize {
    let rest = &sorted[from..];
    let mut bound = 1;
    while bound < rest.len() && below(&rest[bound]) {
        bound *= 2;
    }
    let lo = bound / 2;
    from + lo + rest[lo..bound.min(rest.len())].partition_point(below)
}

/// How an address is stored in an [`AddressSet`]: IPv4 in 32 bits, a quarter of the memory
/// and of the sorting of `u128`s; IPv6 in 128.
pub trait Word: Copy + Ord + Into<u128> + radsort::Key {}
impl Word for u32 {}
impl Word for u128 {}

/// Distinct addresses of one family, sorted, for counting how many fall into ranges.
#[derive(Debug, Default)]
pub struct AddressSet<W> {
    sorted: Vec<W>,
}

impl<W: Word> AddressSet<W> {
    pub fn new(values: impl IntoIterator<Item = W>) -> AddressSet<W> {
        let mut sorted: Vec<W> = values.into_iter().collect();
        // Radix sort passes only over the bytes that differ.
        radsort::sort(&mut sorted);
        sorted.dedup();
        AddressSet { sorted }
    }

    pub fn iter(&self) -> impl Iterator<Item = u128> + '_ {
        self.sorted.iter().map(|&v| v.into())
    }
}

/// What the analysis asks of a set of addresses, whatever their [`Word`].
pub trait Addresses {
    fn count_in_range(&self, start: u128, end: u128) -> usize;

    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn count_in(&self, set: &IntervalSet) -> Count {
        Count::from(self.count_inside(set))
    }

    /// Addresses in none of `set`'s ranges.
    fn count_outside(&self, set: &IntervalSet) -> usize {
        self.len() - self.count_inside(set)
    }

    fn count_inside(&self, set: &IntervalSet) -> usize {
        set.ranges().iter().map(|&(s, e)| self.count_in_range(s, e)).sum()
    }
}

impl<W: Word> Addresses for AddressSet<W> {
    fn count_in_range(&self, start: u128, end: u128) -> usize {
        let lo = self.sorted.partition_point(|&v| v.into() < start);
        let hi = self.sorted.partition_point(|&v| v.into() <= end);
        hi - lo
    }

    fn len(&self) -> usize {
        self.sorted.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usable_addresses_per_block() {
        assert_eq!(usable(Family::Ipv4, 24, false, false), Count::from(254u64));
        assert_eq!(usable(Family::Ipv4, 24, true, false), Count::from(255u64));
        assert_eq!(usable(Family::Ipv4, 24, true, true), Count::from(256u64));
        assert_eq!(usable(Family::Ipv4, 31, false, false), Count::from(2u64));
        assert_eq!(usable(Family::Ipv4, 32, false, false), Count::from(1u64));
        assert_eq!(usable(Family::Ipv6, 127, false, false), Count::from(2u64));
        assert_eq!(usable(Family::Ipv6, 1, false, false), Count::pow2(127) - Count::from(2u64));
    }

    #[test]
    fn address_sets_count_distinct_addresses() {
        let empty = AddressSet::<u32>::new([]);
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        let set = AddressSet::<u128>::new([7, 3, 7, 10]);
        assert!(!set.is_empty());
        assert_eq!((set.len(), set.iter().collect::<Vec<_>>()), (3, vec![3, 7, 10]));
        assert_eq!((set.count_in_range(3, 7), set.count_in_range(4, 9), set.count_in_range(11, u128::MAX)), (2, 1, 0));
        assert_eq!(set.count_in(&IntervalSet::from_ranges([(0, 3), (10, 10)])), Count::from(2u64));
    }

    #[test]
    fn listed_blocks_count_the_addresses_inside_them() {
        let node = |name: &str, cidrs: &[&str]| {
            Node::decode(
                &serde_json::json!({"metadata": {"name": name}, "spec": {"ipam": {"pools": {"allocated": [{"pool": "p", "cidrs": cidrs}]}}}}),
            )
        };
        // Nested (/24 around a /26), adjacent, empty and IPv6 blocks; addresses between and outside them.
        let nodes = [node("a", &["10.0.0.0/24", "10.0.1.0/26", "fd00::/120"]), node("b", &["10.0.0.64/26", "10.0.2.0/26"])];
        let listed = ListedBlocks::from_nodes(&nodes);
        let v4 = |text: &str| Addr::parse(text).unwrap().value;
        let ipv4 = AddressSet::new(
            ["9.0.0.1", "10.0.0.1", "10.0.0.64", "10.0.0.127", "10.0.0.128", "10.0.1.5", "10.0.1.64", "11.0.0.0"].map(|a| v4(a) as u32),
        );
        let ipv6 = AddressSet::new(["fd00::1", "fd00::ff", "fd00::100"].map(v4));
        let prefix = |text: &str| Prefix::parse(text).unwrap();
        assert_eq!(listed.used_in_order().used(&prefix("10.0.0.0/24")), None, "not counted yet");
        listed.count_used(&ipv4, &ipv6);
        // Counted once: a second thread's call (analyze) reuses the counts, whatever it passes.
        listed.count_used(&AddressSet::default(), &AddressSet::default());
        let blocks = ["10.0.0.0/24", "10.0.0.64/26", "10.0.1.0/26", "10.0.2.0/26", "10.9.0.0/26", "fd00::/120"].map(prefix);
        let expected = [Some(4), Some(2), Some(1), Some(0), None, Some(2)];
        let mut in_order = listed.used_in_order();
        assert_eq!(blocks.map(|b| in_order.used(&b)), expected);
        // Asked for out of order (the cursor starts again), and through the nodes listing them.
        let mut reversed = listed.used_in_order();
        assert_eq!(blocks.iter().rev().map(|b| reversed.used(b)).collect::<Vec<_>>(), expected.into_iter().rev().collect::<Vec<_>>());
        assert_eq!(
            (listed.used_by_node(0, &blocks[0]), listed.used_by_node(1, &blocks[1]), listed.used_by_node(1, &blocks[0])),
            (Some(4), Some(2), None)
        );
        // Each node's blocks that contain no other listed block: a's /24 contains b's /26.
        let addr = |text: &str| Addr::parse(text).unwrap();
        assert!(!listed.listed_by_node(0, addr("10.0.0.1")), "in a's /24, which is no leaf");
        assert!(listed.listed_by_node(0, addr("10.0.1.5")) && listed.listed_by_node(0, addr("fd00::1")));
        assert!(listed.listed_by_node(1, addr("10.0.0.65")) && !listed.listed_by_node(1, addr("10.0.1.5")));
        assert!(!listed.listed_by_node(2, addr("10.0.1.5")), "no such node");
        let outside = [ipv4.count_outside(&listed.covered(Family::Ipv4)), ipv6.count_outside(&listed.covered(Family::Ipv6))];
        assert_eq!(outside, [3, 1], "9.0.0.1, 10.0.1.64 and 11.0.0.0; fd00::100");
    }

    #[test]
    fn items_by_node_keep_their_order_and_nodes_without_items_have_none() {
        let pairs = [(2, 'a'), (0, 'b'), (2, 'c'), (3, 'd'), (0, 'e')];
        let by_node = ByNode::build(4, |sink| pairs.iter().for_each(|&(node, item)| sink(node, item)));
        let items: Vec<Vec<char>> = (0..6).map(|node| by_node.of(node).to_vec()).collect();
        assert_eq!(items, [vec!['b', 'e'], vec![], vec!['a', 'c'], vec!['d'], vec![], vec![]]);
        assert!(ByNode::<char>::build(3, |_| {}).of(1).is_empty());
    }

    #[test]
    fn gallop_finds_the_end_of_a_run_from_any_start() {
        let sorted: Vec<u128> = (0..100).map(|v| v * 3).collect();
        for from in [0, 1, 7, 50, 99, 100] {
            for limit in [0, 1, 3, 4, 150, 297, 298, 1000] {
                assert_eq!(
                    gallop(&sorted, from, |&v| v < limit),
                    sorted.partition_point(|&v| v < limit).max(from),
                    "from {from}, below {limit}"
                );
            }
        }
    }

    #[test]
    fn block_indices() {
        let cidr = Prefix::parse("10.40.0.0/16").unwrap();
        assert_eq!(capacity(&cidr, 24), Count::from(256u64));
        let gw = Addr::parse("10.40.255.254").unwrap();
        assert_eq!(block_index(&cidr, 24, gw.value), 255);
        assert_eq!(block_at(&cidr, 24, 255).to_string(), "10.40.255.0/24");
        let all = Prefix::parse("::/0").unwrap();
        assert_eq!(capacity(&all, 128), Count::pow2(128));
        assert_eq!(block_index(&all, 128, u128::MAX), u128::MAX);
    }
}
