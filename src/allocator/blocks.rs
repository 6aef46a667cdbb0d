//! Block geometry (docs/design/cilium.md#blocks): splitting a CIDR into blocks, usable addresses per block, and
//! an index of every block listed by CiliumNodes with longest-prefix lookup of addresses.

use super::count::Count;
use super::interval::IntervalSet;
use crate::model::{Addr, Family, Node, Prefix};
use std::collections::{BTreeMap, BTreeSet};

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

/// Everything CiliumNodes list in `spec.ipam.pools.allocated`, by block.
#[derive(Debug, Default)]
pub struct ListedBlocks {
    /// block → (node, pool) pairs listing it.
    pub holders: BTreeMap<Prefix, BTreeSet<(String, String)>>,
    /// Prefix lengths present per family, longest first (for longest-prefix match).
    lengths: BTreeMap<Family, Vec<u8>>,
}

impl ListedBlocks {
    pub fn from_nodes(nodes: &[Node]) -> ListedBlocks {
        let mut holders: BTreeMap<Prefix, BTreeSet<(String, String)>> = BTreeMap::new();
        for node in nodes {
            for alloc in &node.allocated {
                for block in alloc.blocks.iter().filter_map(|b| b.prefix) {
                    holders.entry(block).or_default().insert((node.name.clone(), alloc.pool.clone()));
                }
            }
        }
        let mut lengths: BTreeMap<Family, Vec<u8>> = BTreeMap::new();
        for block in holders.keys() {
            let entry = lengths.entry(block.family).or_default();
            if !entry.contains(&block.len) {
                entry.push(block.len);
            }
        }
        for lens in lengths.values_mut() {
            lens.sort_unstable_by(|a, b| b.cmp(a));
        }
        ListedBlocks { holders, lengths }
    }

    /// The most specific listed block containing `addr`, with its holders.
    pub fn lookup(&self, addr: Addr) -> Option<(&Prefix, &BTreeSet<(String, String)>)> {
        self.lengths.get(&addr.family)?.iter().find_map(|&len| {
            self.holders.get_key_value(&Prefix::containing(addr.family, addr.value, len))
        })
    }
}

/// Distinct addresses of one family, sorted, for counting how many fall into ranges.
#[derive(Debug, Default)]
pub struct AddressSet {
    sorted: Vec<u128>,
}

impl AddressSet {
    pub fn new(values: impl IntoIterator<Item = u128>) -> AddressSet {
        let mut sorted: Vec<u128> = values.into_iter().collect();
        sorted.sort_unstable();
        sorted.dedup();
        AddressSet { sorted }
    }

    pub fn count_in_range(&self, start: u128, end: u128) -> usize {
        let lo = self.sorted.partition_point(|&v| v < start);
        let hi = self.sorted.partition_point(|&v| v <= end);
        hi - lo
    }

    pub fn count_in(&self, set: &IntervalSet) -> Count {
        Count::from(set.ranges().iter().map(|&(s, e)| self.count_in_range(s, e)).sum::<usize>())
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = u128> + '_ {
        self.sorted.iter().copied()
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
        let empty = AddressSet::new([]);
        assert!(empty.is_empty());
        assert_eq!(empty.len(), 0);
        let set = AddressSet::new([7, 3, 7, 10]);
        assert!(!set.is_empty());
        assert_eq!((set.len(), set.iter().collect::<Vec<_>>()), (3, vec![3, 7, 10]));
        assert_eq!((set.count_in_range(3, 7), set.count_in_range(4, 9), set.count_in_range(11, u128::MAX)), (2, 1, 0));
        assert_eq!(set.count_in(&IntervalSet::from_ranges([(0, 3), (10, 10)])), Count::from(2u64));
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
