//! The checks of the finished pool reports ([`super::cluster`]): orphan blocks, overlapping
//! pools, reservations over allocated blocks or withholding more than they reserve, drained
//! CIDRs, exhaustion.

use super::{NEARLY_EXHAUSTED, Problems};
use crate::allocator::blocks;
use crate::allocator::problem::{Problem, ProblemKind, pool_object};
use crate::allocator::report::{CidrReport, FamilyReport, PoolReport};
use crate::model::cilium::CiliumVersion;
use std::collections::BTreeSet;

/// Blocks listed under a pool but outside its CIDRs.
pub(super) fn orphan_blocks(pools: &[PoolReport], problems: &mut Problems) {
    for pool in pools {
        for fam in &pool.families {
            for orphan in &fam.orphans {
                problems.add(
                    Problem::warning(
                        ProblemKind::OrphanBlock,
                        pool_object(&pool.name),
                        format!(
                            "block {} listed by {} under pool {} lies outside the pool's {} CIDRs: the operator leaves it with the node until the node releases it, and hands out nothing more from it",
                            orphan.prefix,
                            orphan.nodes.join(", "),
                            pool.name,
                            fam.family
                        ),
                        "put the CIDR back into the pool, or drain the node(s) so the agent releases the block",
                    )
                    .in_pool(Some(&pool.name)),
                );
            }
        }
    }
}

/// Pools whose CIDRs overlap (Cilium does not detect it).
pub(super) fn overlapping_pools(pools: &[PoolReport], problems: &mut Problems) {
    let all_cidrs: Vec<(&str, &CidrReport)> =
        pools.iter().flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (p.name.as_str(), c)))).collect();
    for (i, (a_pool, a)) in all_cidrs.iter().enumerate() {
        for (b_pool, b) in &all_cidrs[i + 1..] {
            if a_pool != b_pool && a.prefix.overlaps(&b.prefix) {
                problems.add(
                    Problem::error(
                        ProblemKind::OverlappingPools,
                        pool_object(a_pool),
                        format!(
                            "CIDR {} of pool {a_pool} overlaps CIDR {} of pool {b_pool}: both can hand out the same block",
                            a.cidr, b.cidr
                        ),
                        "give each pool disjoint CIDRs",
                    )
                    .in_pool(Some(a_pool)),
                );
            }
        }
    }
}

/// Reservations over allocated blocks (grandfathered), and reservations withholding far more
/// than they reserve.
pub(super) fn reservations(
    pool: &PoolReport,
    fam: &FamilyReport,
    cidr: &CidrReport,
    ignored_by: Option<&CiliumVersion>,
    problems: &mut Problems,
) {
    for r in &cidr.reservations {
        if !r.allocated_overlapping.is_empty() {
            let nodes: BTreeSet<&str> = r.allocated_overlapping.iter().flat_map(|b| b.nodes.iter().map(|node| &**node)).collect();
            let nodes = nodes.into_iter().collect::<Vec<_>>().join(", ");
            let blocks: Vec<String> = r.allocated_overlapping.iter().map(|b| b.prefix.to_string()).collect();
            let (range, blocks) = (format!("{}-{}", r.start, r.end), blocks.join(", "));
            let problem = match ignored_by {
                // The operator may have handed the blocks out after the reservation, and will again.
                Some(operator) => Problem::error(
                    ProblemKind::ReservationOverAllocated,
                    pool_object(&pool.name),
                    format!(
                        "reserved range {range} covers block(s) {blocks} held by {nodes}: the running operator ({}) does not honour reserved ranges and hands out blocks inside them",
                        operator.image
                    ),
                    &format!(
                        "upgrade Cilium to 1.21 or later, which honours reservedRanges; then drain node(s) {nodes} to free the block(s)"
                    ),
                ),
                None => Problem::warning(
                    ProblemKind::ReservationOverAllocated,
                    pool_object(&pool.name),
                    format!("reserved range {range} covers allocated block(s) {blocks} still held by {nodes} (grandfathered, not evicted)"),
                    &format!("drain node(s) {nodes} to free the block(s)"),
                ),
            };
            problems.add(problem.in_pool(Some(&pool.name)));
        }
        let withheld_addresses = r.touched_blocks() * blocks::block_size(fam.family, fam.mask_size.unwrap_or(fam.family.bits()));
        if withheld_addresses > r.reserved_addresses + r.reserved_addresses {
            problems.add(
                Problem::info(
                    ProblemKind::ReservationWithholdsMore,
                    pool_object(&pool.name),
                    format!(
                        "reserved range {}-{} reserves {} address(es) but withholds {} block(s) ({} addresses)",
                        r.start,
                        r.end,
                        r.reserved_addresses,
                        r.touched_blocks(),
                        withheld_addresses
                    ),
                    "reservations act on whole blocks; align the range to block boundaries if that is not intended",
                )
                .in_pool(Some(&pool.name)),
            );
        }
    }
}

/// A fully reserved CIDR no node holds a block in: decommissioning can be finished.
pub(super) fn drained_cidr(pool: &PoolReport, cidr: &CidrReport, problems: &mut Problems) {
    // Without CiliumNodes no block is known to be held, and none is known to be free either.
    if cidr.draining && cidr.allocation_known && cidr.allocated_blocks.is_zero() {
        problems.add(
            Problem::info(
                ProblemKind::CidrDrained,
                pool_object(&pool.name),
                format!("CIDR {} is fully reserved and no node holds a block in it", cidr.cidr),
                "decommissioning is complete: remove the CIDR from spec.cidrs (and its reservation)",
            )
            .in_pool(Some(&pool.name)),
        );
    }
}

/// No free block left, or nearly none.
pub(super) fn exhaustion(pool: &PoolReport, fam: &FamilyReport, problems: &mut Problems) {
    let allocatable = fam.allocated_blocks + fam.free_blocks;
    if !allocatable.is_zero() && fam.free_blocks.is_zero() {
        problems.add(
            Problem::error(
                ProblemKind::PoolNearlyExhausted,
                pool_object(&pool.name),
                format!(
                    "{} has no free {} blocks ({} of {} allocatable blocks allocated)",
                    pool.name, fam.family, fam.allocated_blocks, allocatable
                ),
                "add a CIDR to the pool before nodes fail to get addresses",
            )
            .in_pool(Some(&pool.name)),
        );
    } else if let Some(utilization) = fam.utilization_at_least().filter(|&u| u >= NEARLY_EXHAUSTED) {
        // With reserved ranges the input cannot show, the figures are bounds (and certain as such).
        let (at_least, at_most) = if fam.reservations_known { ("", "") } else { ("at least ", "at most ") };
        problems.add(
            Problem::warning(
                ProblemKind::PoolNearlyExhausted,
                pool_object(&pool.name),
                format!(
                    "{} {} is {at_least}{:.0}% allocated: {at_most}{} free block(s) left",
                    pool.name,
                    fam.family,
                    utilization * 100.0,
                    fam.free_blocks
                ),
                "add a CIDR to the pool",
            )
            .in_pool(Some(&pool.name)),
        );
    }
}
