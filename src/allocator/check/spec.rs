//! The checks of a pool's own spec, called by the analysis while it works out which CIDRs and
//! ranges count (`analyze::pools`, `analyze::cidrs`), so that figures and problems follow one rule.

use super::Problems;
use crate::allocator::problem::{Problem, ProblemKind, pool_object};
use crate::model::pool::{PoolFamily, ReservedRange};

/// What the decoder could not understand.
pub fn pool_issues(problems: &mut Problems, pool: &str, issues: &[String]) {
    for issue in issues {
        problems.add(
            Problem::error(
                ProblemKind::InvalidPool,
                pool_object(pool),
                issue.clone(),
                "fix the pool spec; the operator ignores what it cannot parse",
            )
            .in_pool(Some(pool)),
        );
    }
}

/// Upstream `pool[]` entries keyed by a string that is no entry of `cidrs`.
pub fn unmatched_pool_entries(problems: &mut Problems, pool: &str, fam: &PoolFamily) {
    let field = fam.family.name();
    for (cidr, ranges) in &fam.unmatched_pool_entries {
        for r in ranges {
            problems.add(
                Problem::error(
                    ProblemKind::InvalidReservedRange,
                    pool_object(pool),
                    format!(
                        "spec.{field}.pool[cidr={cidr}] reserves {}-{} but {cidr:?} is not an entry of spec.{field}.cidrs",
                        r.start, r.end
                    ),
                    "spell pool[].cidr exactly as the entry of cidrs it belongs to",
                )
                .in_pool(Some(pool)),
            );
        }
    }
}

/// A CIDR smaller than one block. Cilium's operator accepts it (its cidrset of the CIDR has no
/// block: `1 << (mask - prefix length)` with a negative shift is 0 in Go) and hands out nothing
/// from it, so the pool works on its other CIDRs: a warning, not an error.
pub fn cidr_smaller_than_block(problems: &mut Problems, pool: &str, fam: &PoolFamily, cidr: &str, mask: u8) {
    problems.add(
        Problem::warning(
            ProblemKind::InvalidPool,
            pool_object(pool),
            format!(
                "spec.{}.cidrs entry {cidr} is smaller than a /{mask} block: Cilium's operator accepts it and hands out no block from it",
                fam.family.name()
            ),
            "remove the entry, or list a CIDR at least as large as maskSize (a pool's maskSize cannot change)",
        )
        .in_pool(Some(pool)),
    );
}

/// A pool the operator's UpsertPool refuses (overlapping or invalid CIDRs, an IPv6 CIDR of more
/// than 2^16 blocks, a mask longer than the address): it has no such pool, both families.
pub fn pool_rejected(problems: &mut Problems, pool: &str, why: &str) {
    problems.add(
        Problem::error(
            ProblemKind::InvalidPool,
            pool_object(pool),
            format!("the operator rejects the whole pool (both families): {why}; it has no capacity and its nodes' blocks are orphans"),
            "fix the pool spec; until then the operator allocates nothing from it",
        )
        .in_pool(Some(pool)),
    );
}

/// An IPv6 CIDR split into more blocks than the operator accepts.
pub fn ipv6_too_many_blocks(problems: &mut Problems, pool: &str, cidr: &str, mask: u8, block_bits: u8) {
    problems.add(
        Problem::error(
            ProblemKind::Ipv6TooManyBlocks,
            pool_object(pool),
            format!("{cidr} splits into 2^{block_bits} blocks of /{mask}; the operator rejects IPv6 CIDRs with more than 2^16 blocks"),
            "use a smaller CIDR or a smaller maskSize (at most 16 bits difference)",
        )
        .in_pool(Some(pool)),
    );
}

/// A reservation that is not valid in its CIDR ([`ReservedRange::within`] says why).
pub fn invalid_reserved_range(problems: &mut Problems, pool: &str, range: &ReservedRange, cidr: &str, why: &str) {
    problems.add(
        Problem::error(
            ProblemKind::InvalidReservedRange,
            pool_object(pool),
            format!("reserved range {}-{} of {cidr}: {why}; it is ignored", range.start, range.end),
            "fix or remove the range (kubectl ciliumpool reserve-range --remove)",
        )
        .in_pool(Some(pool)),
    );
}
