//! The checks of what CiliumNodes list, on the snapshot alone ([`super::listings`]): blocks that
//! are no CIDR or of no pool, a pool split over several `allocated[]` entries, a block held by
//! several nodes.

use super::Problems;
use crate::allocator::blocks::ListedBlocks;
use crate::allocator::problem::{Problem, ProblemKind, node_object};
use crate::model::Snapshot;
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// A node listing one pool in several allocated[] entries: after an operator restart only the
/// last entry's blocks stay allocated (AllocateToNode in the operator's pool_allocator.go).
pub(super) fn split_pool_entries(snapshot: &Snapshot, problems: &mut Problems) {
    for node in &snapshot.nodes {
        // Runs for every node: no map per node, as a node lists few pools.
        for (i, first) in node.allocated.iter().enumerate() {
            let pool = first.pool.as_ref();
            if node.allocated[..i].iter().any(|a| &*a.pool == pool) {
                continue; // reported with the pool's first entry
            }
            let list: SmallVec<[&crate::model::node::PoolAllocation; 4]> =
                node.allocated[i..].iter().filter(|a| &*a.pool == pool).collect();
            let [earlier @ .., last] = list.as_slice() else { continue };
            if earlier.is_empty() {
                continue;
            }
            let kept: BTreeSet<&str> = last.blocks.iter().map(|b| b.original.as_ref()).collect();
            let freed: Vec<&str> =
                earlier.iter().flat_map(|a| a.blocks.iter().map(|b| b.original.as_ref())).filter(|b| !kept.contains(b)).collect();
            problems.add(Problem::warning(ProblemKind::PoolSplitEntries, node_object(&node.name), format!(
                    "lists pool {pool:?} in {} allocated[] entries: after an operator restart only the last entry's blocks stay allocated; {} freed and can be handed to another node",
                    list.len(),
                    if freed.is_empty() { "no other block is".to_string() } else { format!("{} are", freed.join(", ")) }
                ), "merge the entries into one (keeping every block the node uses) before the operator restarts").in_pool(Some(pool)));
        }
    }
}

/// What CiliumNodes list or request: blocks that are no CIDR, blocks and requests of pools
/// that do not exist.
pub(super) fn node_blocks(snapshot: &Snapshot, problems: &mut Problems) {
    let pool_names: BTreeSet<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();
    for node in &snapshot.nodes {
        for alloc in &node.allocated {
            for block in &alloc.blocks {
                if block.prefix.is_none() {
                    problems.add(
                        Problem::error(
                            ProblemKind::InvalidNodeBlock,
                            node_object(&node.name),
                            format!("allocated block {:?} under pool {} is not a CIDR", block.original, alloc.pool),
                            "inspect the node's spec.ipam.pools.allocated; the agent wrote something unexpected",
                        )
                        .in_pool(Some(&alloc.pool)),
                    );
                } else if !pool_names.contains(alloc.pool.as_ref()) && !snapshot.is_mode_pool(&alloc.pool) {
                    problems.add(Problem::warning(
                        ProblemKind::OrphanBlock,
                        node_object(&node.name),
                        format!(
                            "block {} is listed under pool {:?}, which does not exist: the operator leaves it with the node until the node releases it",
                            block.original, alloc.pool
                        ),
                        "recreate the pool, or drain the node so the agent releases the block",
                    ));
                }
            }
        }
        // A non-multi-pool mode's own pool (ENI's `default`) has no CiliumPodIPPool by design.
        for req in node.requested.iter().filter(|req| !pool_names.contains(req.pool.as_ref()) && !snapshot.is_mode_pool(&req.pool)) {
            problems.add(Problem::warning(
                ProblemKind::UnknownPoolRequested,
                node_object(&node.name),
                format!("requests addresses from pool {:?}, which does not exist", req.pool),
                "create the pool or fix the pod/namespace pool annotations that select it",
            ));
        }
    }
}

/// A block held by more than one node.
pub(super) fn blocks_with_several_owners(listed: &ListedBlocks, problems: &mut Problems) {
    // Listings are sorted by node: a block of one node has the same node first and last.
    for (block, listings) in listed.blocks().filter(|(_, l)| l.first().map(|f| f.node) != l.last().map(|l| l.node)) {
        let node_set: BTreeSet<&str> = listings.iter().map(|l| &**l.node).collect();
        problems.add(
            Problem::error(
                ProblemKind::BlockMultipleOwners,
                format!("block/{block}"),
                format!("block {block} is listed by {} nodes: {}", node_set.len(), node_set.iter().copied().collect::<Vec<_>>().join(", ")),
                "pods on these nodes can get the same IP: drain all but one of the nodes",
            )
            .in_pool(listings.first().map(|l| &**l.pool)),
        );
    }
}
