//! A set of integers kept as sorted, disjoint, non-adjacent inclusive ranges.
//!
//! All address and block arithmetic goes through this type so that nothing is ever enumerated:
//! the cost depends on the number of ranges, never on how many addresses they hold.

use super::count::Count;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntervalSet {
    ranges: Vec<(u128, u128)>,
}

impl IntervalSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds a set from arbitrary inclusive ranges (any order, overlaps allowed; `start > end` ignored).
    pub fn from_ranges(ranges: impl IntoIterator<Item = (u128, u128)>) -> Self {
        let mut sorted: Vec<(u128, u128)> = ranges.into_iter().filter(|(s, e)| s <= e).collect();
        sorted.sort_unstable();
        let mut merged: Vec<(u128, u128)> = Vec::with_capacity(sorted.len());
        for (start, end) in sorted {
            match merged.last_mut() {
                Some(last) if last.1 == u128::MAX || start <= last.1 + 1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        IntervalSet { ranges: merged }
    }

    pub fn single(start: u128, end: u128) -> Self {
        Self::from_ranges([(start, end)])
    }

    pub fn ranges(&self) -> &[(u128, u128)] {
        &self.ranges
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Number of integers in the set.
    pub fn len(&self) -> Count {
        self.ranges.iter().map(|&(s, e)| Count::span(s, e)).sum()
    }

    pub fn contains(&self, value: u128) -> bool {
        let idx = self.ranges.partition_point(|&(start, _)| start <= value);
        idx > 0 && self.ranges[idx - 1].1 >= value
    }

    /// True when any member lies in `start..=end`.
    pub fn overlaps(&self, start: u128, end: u128) -> bool {
        let idx = self.ranges.partition_point(|&(_, e)| e < start);
        idx < self.ranges.len() && self.ranges[idx].0 <= end
    }

    pub fn union(&self, other: &IntervalSet) -> IntervalSet {
        Self::from_ranges(self.ranges.iter().chain(other.ranges.iter()).copied())
    }

    pub fn intersection(&self, other: &IntervalSet) -> IntervalSet {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.ranges.len() && j < other.ranges.len() {
            let (a_start, a_end) = self.ranges[i];
            let (b_start, b_end) = other.ranges[j];
            let start = a_start.max(b_start);
            let end = a_end.min(b_end);
            if start <= end {
                out.push((start, end));
            }
            if a_end < b_end {
                i += 1;
            } else {
                j += 1;
            }
        }
        IntervalSet { ranges: out }
    }

    /// Members of `self` that are not in `other`.
    pub fn difference(&self, other: &IntervalSet) -> IntervalSet {
        let mut out = Vec::new();
        let mut j = 0;
        for &(start, end) in &self.ranges {
            let mut cursor = start;
            let mut exhausted = false;
            while j < other.ranges.len() && other.ranges[j].1 < cursor {
                j += 1;
            }
            let mut k = j;
            while k < other.ranges.len() && other.ranges[k].0 <= end {
                let (o_start, o_end) = other.ranges[k];
                if o_start > cursor {
                    out.push((cursor, o_start - 1));
                }
                if o_end >= end {
                    exhausted = true;
                    break;
                }
                cursor = o_end + 1;
                k += 1;
            }
            if !exhausted {
                out.push((cursor, end));
            }
        }
        IntervalSet { ranges: out }
    }

    /// The smallest member, if any.
    pub fn first(&self) -> Option<u128> {
        self.ranges.first().map(|r| r.0)
    }

    /// The smallest member at or after `value`, else the smallest of all: where a cursor that
    /// wraps around (Cilium's cidrset `AllocateNext`) finds its next member.
    pub fn first_from(&self, value: u128) -> Option<u128> {
        let after = self.ranges.partition_point(|&(_, end)| end < value);
        self.ranges.get(after).map(|&(start, _)| start.max(value)).or_else(|| self.first())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn first_from_wraps_around_as_a_cursor() {
        let set = IntervalSet::from_ranges([(2, 3), (7, 9)]);
        let found: Vec<Option<u128>> = [0, 2, 3, 4, 8, 10].iter().map(|&v| set.first_from(v)).collect();
        assert_eq!(found, [Some(2), Some(2), Some(3), Some(7), Some(8), Some(2)]);
        assert_eq!(IntervalSet::new().first_from(5), None);
    }

    fn members(set: &IntervalSet) -> BTreeSet<u128> {
        set.ranges().iter().flat_map(|&(s, e)| s..=e).collect()
    }

    fn small_ranges() -> impl Strategy<Value = Vec<(u128, u128)>> {
        prop::collection::vec((0u128..200, 0u128..20).prop_map(|(s, l)| (s, s + l)), 0..8)
    }

    proptest! {
        #[test]
        fn operations_match_naive_sets(a in small_ranges(), b in small_ranges(), probe in 0u128..230) {
            let (sa, sb) = (IntervalSet::from_ranges(a.clone()), IntervalSet::from_ranges(b.clone()));
            let (ma, mb) = (members(&sa), members(&sb));
            let naive_a: BTreeSet<u128> = a.iter().flat_map(|&(s, e)| s..=e).collect();
            prop_assert_eq!(&ma, &naive_a);
            prop_assert_eq!(members(&sa.union(&sb)), ma.union(&mb).copied().collect());
            prop_assert_eq!(members(&sa.intersection(&sb)), ma.intersection(&mb).copied().collect());
            prop_assert_eq!(members(&sa.difference(&sb)), ma.difference(&mb).copied().collect());
            prop_assert_eq!(sa.len(), Count::from(ma.len()));
            prop_assert_eq!(sa.contains(probe), ma.contains(&probe));
            prop_assert_eq!(sa.overlaps(probe, probe + 5), (probe..=probe + 5).any(|x| ma.contains(&x)));
            // canonical form: sorted, disjoint and not adjacent
            for w in sa.ranges().windows(2) {
                prop_assert!(w[0].1 + 1 < w[1].0);
            }
        }
    }

    #[test]
    fn extremes_do_not_overflow() {
        let all = IntervalSet::from_ranges([(0, u128::MAX), (5, 7)]);
        assert_eq!(all.len(), Count::pow2(128));
        let upper = IntervalSet::single(u128::MAX - 1, u128::MAX);
        assert_eq!(all.difference(&upper).ranges(), &[(0, u128::MAX - 2)]);
        assert_eq!(upper.union(&IntervalSet::single(0, 0)).len(), Count::from(3u64));
    }
}
