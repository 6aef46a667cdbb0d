//! The problem catalog's checks: one function per check, each adding what it finds to one
//! [`Problems`] collector. The checks of a pool's own spec are called by the analysis while it
//! works out which CIDRs and ranges count (so figures and problems follow one rule); the
//! cluster-wide checks run on the finished pool and node reports ([`cluster`]).
//! docs/design/problems.md describes each kind.

use super::blocks::{self, ListedBlocks};
use super::count::Count;
use super::problem::{Problem, ProblemKind, Severity, node_object, pool_object};
use super::report::{CidrReport, FamilyReport, NodeReport, PoolReport};
use crate::model::crd::POOL_CRD_NAME;
use crate::model::pool::{PoolFamily, ReservedRange};
use crate::model::workload::Pod;
use crate::model::{Addr, CaveatKind, Prefix, Snapshot};
use smallvec::SmallVec;
use std::collections::{BTreeSet, HashMap};

/// Utilization at or above which a pool counts as nearly exhausted.
pub const NEARLY_EXHAUSTED: f64 = 0.9;

/// Every problem found, in the order found; [`Problems::finish`] sorts and de-duplicates.
#[derive(Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    pub(super) fn push(
        &mut self,
        severity: Severity,
        kind: ProblemKind,
        object: String,
        message: String,
        action: &str,
        pool: Option<&str>,
    ) {
        self.0.push(Problem { severity, kind, object, message, action: action.to_string(), pool: pool.map(str::to_string) });
    }

    /// A problem of the pool `pool` itself.
    fn of_pool(&mut self, pool: &str, severity: Severity, kind: ProblemKind, message: String, action: &str) {
        self.push(severity, kind, pool_object(pool), message, action, Some(pool));
    }

    /// Adds what another collector found.
    pub fn append(&mut self, mut other: Problems) {
        self.0.append(&mut other.0);
    }

    /// The problems, most severe first, then by kind, object and message; exact repeats once.
    pub fn finish(mut self) -> Vec<Problem> {
        self.0.sort_by(|a, b| (a.severity, a.kind, &a.object, &a.message).cmp(&(b.severity, b.kind, &b.object, &b.message)));
        self.0.dedup();
        self.0
    }
}

// --- a pool's own spec ----------------------------------------------------------------------

/// What the decoder could not understand.
pub fn pool_issues(problems: &mut Problems, pool: &str, issues: &[String]) {
    for issue in issues {
        problems.of_pool(
            pool,
            Severity::Error,
            ProblemKind::InvalidPool,
            issue.clone(),
            "fix the pool spec; the operator ignores what it cannot parse",
        );
    }
}

/// Upstream `pool[]` entries keyed by a string that is no entry of `cidrs`.
pub fn unmatched_pool_entries(problems: &mut Problems, pool: &str, fam: &PoolFamily) {
    let field = fam.family.name();
    for (cidr, ranges) in &fam.unmatched_pool_entries {
        for r in ranges {
            problems.of_pool(
                pool,
                Severity::Error,
                ProblemKind::InvalidReservedRange,
                format!("spec.{field}.pool[cidr={cidr}] reserves {}-{} but {cidr:?} is not an entry of spec.{field}.cidrs", r.start, r.end),
                "spell pool[].cidr exactly as the entry of cidrs it belongs to",
            );
        }
    }
}

/// A CIDR smaller than one block (it is left out of the figures).
pub fn cidr_smaller_than_block(problems: &mut Problems, pool: &str, fam: &PoolFamily, cidr: &str, mask: u8) {
    problems.of_pool(
        pool,
        Severity::Error,
        ProblemKind::InvalidPool,
        format!("spec.{}.cidrs entry {cidr} is smaller than a /{mask} block", fam.family.name()),
        "use a CIDR at least as large as maskSize, or a larger maskSize in a new pool",
    );
}

/// A pool the operator's UpsertPool refuses (overlapping or invalid CIDRs, an IPv6 CIDR of more
/// than 2^16 blocks, a mask longer than the address): it has no such pool, both families.
pub fn pool_rejected(problems: &mut Problems, pool: &str, why: &str) {
    problems.of_pool(
        pool,
        Severity::Error,
        ProblemKind::InvalidPool,
        format!("the operator rejects the whole pool (both families): {why}; it has no capacity and its nodes' blocks are orphans"),
        "fix the pool spec; until then the operator allocates nothing from it",
    );
}

/// An IPv6 CIDR split into more blocks than the operator accepts.
pub fn ipv6_too_many_blocks(problems: &mut Problems, pool: &str, cidr: &str, mask: u8, block_bits: u8) {
    problems.of_pool(
        pool,
        Severity::Error,
        ProblemKind::Ipv6TooManyBlocks,
        format!("{cidr} splits into 2^{block_bits} blocks of /{mask}; the operator rejects IPv6 CIDRs with more than 2^16 blocks"),
        "use a smaller CIDR or a smaller maskSize (at most 16 bits difference)",
    );
}

/// A reservation that is not valid in its CIDR ([`ReservedRange::within`] says why).
pub fn invalid_reserved_range(problems: &mut Problems, pool: &str, range: &ReservedRange, cidr: &str, why: &str) {
    problems.of_pool(
        pool,
        Severity::Error,
        ProblemKind::InvalidReservedRange,
        format!("reserved range {}-{} of {cidr}: {why}; it is ignored", range.start, range.end),
        "fix or remove the range (kubectl ciliumpool reserve-range --remove)",
    );
}

// --- the whole cluster ----------------------------------------------------------------------

/// The cluster-wide checks of the snapshot alone: what CiliumNodes list, and the CRD. The
/// analysis runs them on whichever of its threads is done first.
pub fn listings(snapshot: &Snapshot, listed: &ListedBlocks, problems: &mut Problems) {
    node_blocks(snapshot, problems);
    split_pool_entries(snapshot, problems);
    blocks_with_several_owners(listed, problems);
    storage_migration(snapshot, problems);
    unprintable_names(snapshot, problems);
    problems.0.extend(super::routing::pool_outside_native_routing(snapshot));
}

/// The cluster-wide checks of the finished reports.
pub fn cluster(snapshot: &Snapshot, pools: &[PoolReport], nodes: &[NodeReport], problems: &mut Problems) {
    orphan_blocks(pools, problems);
    overlapping_pools(pools, problems);
    for pool in pools {
        for fam in &pool.families {
            for cidr in &fam.cidrs {
                reservations(pool, fam, cidr, problems);
                drained_cidr(pool, cidr, problems);
            }
            exhaustion(pool, fam, problems);
        }
    }
    operator_errors(snapshot, nodes, problems);
    input_caveats(snapshot, problems);
}

/// Each caveat of the input (what it cannot show), so that scripts reading `check` see it too.
fn input_caveats(snapshot: &Snapshot, problems: &mut Problems) {
    for caveat in &snapshot.origin.caveats {
        let action = match caveat.kind {
            CaveatKind::NamespaceFilter => "leave out -n to count the addresses of every namespace",
            _ => "add what the message names to the input, or read the live cluster",
        };
        let object = format!("Input/{}", caveat.kind.name());
        problems.push(Severity::Info, ProblemKind::InputIncomplete, object, caveat.message.clone(), action, None);
    }
}

/// A node listing one pool in several allocated[] entries: after an operator restart only the
/// last entry's blocks stay allocated (AllocateToNode in the operator's pool_allocator.go).
fn split_pool_entries(snapshot: &Snapshot, problems: &mut Problems) {
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
            problems.push(
                Severity::Warning,
                ProblemKind::PoolSplitEntries,
                node_object(&node.name),
                format!(
                    "lists pool {pool:?} in {} allocated[] entries: after an operator restart only the last entry's blocks stay allocated; {} freed and can be handed to another node",
                    list.len(),
                    if freed.is_empty() { "no other block is".to_string() } else { format!("{} are", freed.join(", ")) }
                ),
                "merge the entries into one (keeping every block the node uses) before the operator restarts",
                Some(pool),
            );
        }
    }
}

/// Blocks listed under a pool but outside its CIDRs.
fn orphan_blocks(pools: &[PoolReport], problems: &mut Problems) {
    for pool in pools {
        for fam in &pool.families {
            for orphan in &fam.orphans {
                problems.of_pool(
                    &pool.name,
                    Severity::Warning,
                    ProblemKind::OrphanBlock,
                    format!(
                        "block {} listed by {} under pool {} lies outside the pool's {} CIDRs",
                        orphan.prefix,
                        orphan.nodes.join(", "),
                        pool.name,
                        fam.family
                    ),
                    "put the CIDR back into the pool, or drain the node(s) so the agent releases the block",
                );
            }
        }
    }
}

/// What CiliumNodes list or request: blocks that are no CIDR, blocks and requests of pools
/// that do not exist.
fn node_blocks(snapshot: &Snapshot, problems: &mut Problems) {
    let pool_names: BTreeSet<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();
    for node in &snapshot.nodes {
        for alloc in &node.allocated {
            for block in &alloc.blocks {
                if block.prefix.is_none() {
                    problems.push(
                        Severity::Error,
                        ProblemKind::InvalidNodeBlock,
                        node_object(&node.name),
                        format!("allocated block {:?} under pool {} is not a CIDR", block.original, alloc.pool),
                        "inspect the node's spec.ipam.pools.allocated; the agent wrote something unexpected",
                        Some(&alloc.pool),
                    );
                } else if !pool_names.contains(alloc.pool.as_ref()) && !snapshot.is_mode_pool(&alloc.pool) {
                    problems.push(
                        Severity::Warning,
                        ProblemKind::OrphanBlock,
                        node_object(&node.name),
                        format!("block {} is listed under pool {:?}, which does not exist", block.original, alloc.pool),
                        "recreate the pool, or drain the node so the agent releases the block",
                        None,
                    );
                }
            }
        }
        // A non-multi-pool mode's own pool (ENI's `default`) has no CiliumPodIPPool by design.
        for req in node.requested.iter().filter(|req| !pool_names.contains(req.pool.as_ref()) && !snapshot.is_mode_pool(&req.pool)) {
            problems.push(
                Severity::Warning,
                ProblemKind::UnknownPoolRequested,
                node_object(&node.name),
                format!("requests addresses from pool {:?}, which does not exist", req.pool),
                "create the pool or fix the pod/namespace pool annotations that select it",
                None,
            );
        }
    }
}

/// A block held by more than one node.
fn blocks_with_several_owners(listed: &ListedBlocks, problems: &mut Problems) {
    // Listings are sorted by node: a block of one node has the same node first and last.
    for (block, listings) in listed.blocks().filter(|(_, l)| l.first().map(|f| f.node) != l.last().map(|l| l.node)) {
        let node_set: BTreeSet<&str> = listings.iter().map(|l| &**l.node).collect();
        problems.push(
            Severity::Error,
            ProblemKind::BlockMultipleOwners,
            format!("block/{block}"),
            format!("block {block} is listed by {} nodes: {}", node_set.len(), node_set.iter().copied().collect::<Vec<_>>().join(", ")),
            "pods on these nodes can get the same IP: drain all but one of the nodes",
            listings.first().map(|l| &**l.pool),
        );
    }
}

/// Pools whose CIDRs overlap (Cilium does not detect it).
fn overlapping_pools(pools: &[PoolReport], problems: &mut Problems) {
    let all_cidrs: Vec<(&str, &CidrReport)> =
        pools.iter().flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (p.name.as_str(), c)))).collect();
    for (i, (a_pool, a)) in all_cidrs.iter().enumerate() {
        for (b_pool, b) in &all_cidrs[i + 1..] {
            if a_pool != b_pool && a.prefix.overlaps(&b.prefix) {
                problems.of_pool(
                    a_pool,
                    Severity::Error,
                    ProblemKind::OverlappingPools,
                    format!("CIDR {} of pool {a_pool} overlaps CIDR {} of pool {b_pool}: both can hand out the same block", a.cidr, b.cidr),
                    "give each pool disjoint CIDRs",
                );
            }
        }
    }
}

/// Reservations over allocated blocks (grandfathered), and reservations withholding far more
/// than they reserve.
fn reservations(pool: &PoolReport, fam: &FamilyReport, cidr: &CidrReport, problems: &mut Problems) {
    for r in &cidr.reservations {
        if !r.allocated_overlapping.is_empty() {
            let nodes: BTreeSet<&str> = r.allocated_overlapping.iter().flat_map(|b| b.nodes.iter().map(|node| &**node)).collect();
            let nodes = nodes.into_iter().collect::<Vec<_>>().join(", ");
            let blocks: Vec<String> = r.allocated_overlapping.iter().map(|b| b.prefix.to_string()).collect();
            problems.of_pool(
                &pool.name,
                Severity::Warning,
                ProblemKind::ReservationOverAllocated,
                format!(
                    "reserved range {}-{} covers allocated block(s) {} still held by {nodes} (grandfathered, not evicted)",
                    r.start,
                    r.end,
                    blocks.join(", ")
                ),
                &format!("drain node(s) {nodes} to free the block(s)"),
            );
        }
        let withheld_addresses = r.touched_blocks() * blocks::block_size(fam.family, fam.mask_size.unwrap_or(fam.family.bits()));
        if withheld_addresses > r.reserved_addresses + r.reserved_addresses {
            problems.of_pool(
                &pool.name,
                Severity::Info,
                ProblemKind::ReservationWithholdsMore,
                format!(
                    "reserved range {}-{} reserves {} address(es) but withholds {} block(s) ({} addresses)",
                    r.start,
                    r.end,
                    r.reserved_addresses,
                    r.touched_blocks(),
                    withheld_addresses
                ),
                "reservations act on whole blocks; align the range to block boundaries if that is not intended",
            );
        }
    }
}

/// A fully reserved CIDR no node holds a block in: decommissioning can be finished.
fn drained_cidr(pool: &PoolReport, cidr: &CidrReport, problems: &mut Problems) {
    if cidr.draining && cidr.allocated_blocks.is_zero() {
        problems.of_pool(
            &pool.name,
            Severity::Info,
            ProblemKind::CidrDrained,
            format!("CIDR {} is fully reserved and no node holds a block in it", cidr.cidr),
            "decommissioning is complete: remove the CIDR from spec.cidrs (and its reservation)",
        );
    }
}

/// No free block left, or nearly none.
fn exhaustion(pool: &PoolReport, fam: &FamilyReport, problems: &mut Problems) {
    let allocatable = fam.allocated_blocks + fam.free_blocks;
    if !allocatable.is_zero() && fam.free_blocks.is_zero() {
        problems.of_pool(
            &pool.name,
            Severity::Error,
            ProblemKind::PoolNearlyExhausted,
            format!(
                "{} has no free {} blocks ({} of {} allocatable blocks allocated)",
                pool.name, fam.family, fam.allocated_blocks, allocatable
            ),
            "add a CIDR to the pool before nodes fail to get addresses",
        );
    } else if let Some(utilization) = fam.utilization_at_least().filter(|&u| u >= NEARLY_EXHAUSTED) {
        // With reserved ranges the input cannot show, the figures are bounds (and certain as such).
        let (at_least, at_most) = if fam.reservations_known { ("", "") } else { ("at least ", "at most ") };
        problems.of_pool(
            &pool.name,
            Severity::Warning,
            ProblemKind::PoolNearlyExhausted,
            format!(
                "{} {} is {at_least}{:.0}% allocated: {at_most}{} free block(s) left",
                pool.name,
                fam.family,
                utilization * 100.0,
                fam.free_blocks
            ),
            "add a CIDR to the pool",
        );
    }
}

/// Pod IPs in another node's block. Returns the addresses in no listed block, which
/// [`UnlistedPodIps::unallocated`] checks against the pools' CIDRs once their reports exist.
pub fn pod_ips<'a>(snapshot: &'a Snapshot, listed: &ListedBlocks, problems: &mut Problems) -> UnlistedPodIps<'a> {
    // Pods share one copy of each node name (model::workload::Names): resolve each copy once.
    let node_index: HashMap<&str, usize, foldhash::fast::FixedState> =
        snapshot.nodes.iter().enumerate().map(|(i, n)| (n.name.as_ref(), i)).collect();
    let mut resolved: HashMap<*const u8, Option<usize>, foldhash::fast::FixedState> = HashMap::default();
    let mut unlisted = Vec::new();
    for pod in snapshot.pods.iter().flatten().filter(|p| p.holds_pod_ips()) {
        let index =
            pod.node_name.as_ref().and_then(|node| *resolved.entry(node.as_ptr()).or_insert_with(|| node_index.get(&**node).copied()));
        for ip in pod.ips.iter().filter(|&ip| !index.is_some_and(|i| listed.listed_by_node(i, ip))) {
            let Some((block, listings)) = listed.lookup(ip) else {
                unlisted.push((pod, ip));
                continue;
            };
            let Some(node) = &pod.node_name else { continue };
            if !listings.iter().any(|l| Some(l.node_index as usize) == index) {
                let owners: BTreeSet<&str> = listings.iter().map(|l| &**l.node).collect();
                problems.push(
                    Severity::Error,
                    ProblemKind::PodIpForeignBlock,
                    pod_object(pod),
                    format!("IP {ip} on node {node} lies in block {block} held by {}", owners.into_iter().collect::<Vec<_>>().join(", ")),
                    "the IP may be handed out twice: recreate the pod",
                    listings.first().map(|l| &**l.pool),
                );
            }
        }
    }
    UnlistedPodIps(unlisted)
}

/// Running pods' addresses that lie in no listed block.
pub struct UnlistedPodIps<'a>(Vec<(&'a Pod, Addr)>);

impl UnlistedPodIps<'_> {
    /// Those in a pool CIDR: in no block allocated to a node.
    pub fn unallocated(self, pools: &[PoolReport], problems: &mut Problems) {
        let pool_cidrs: Vec<(&str, Prefix)> = pools
            .iter()
            .flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (p.name.as_str(), c.prefix))))
            .collect();
        for (pod, ip) in self.0 {
            if let Some((pool, cidr)) = pool_cidrs.iter().find(|(_, c)| c.contains(ip)) {
                problems.push(
                    Severity::Warning,
                    ProblemKind::PodIpUnallocated,
                    pod_object(pod),
                    format!("IP {ip} lies in pool {pool} ({cidr}) but in no block allocated to a node"),
                    "the block was released while the pod kept its IP: recreate the pod",
                    Some(pool),
                );
            }
        }
    }
}

fn pod_object(pod: &Pod) -> String {
    format!("Pod/{}/{}", pod.namespace, pod.name)
}

/// Operator errors on CiliumNodes; stale when the node already has what it asked for
/// (cilium/cilium#28758).
fn operator_errors(snapshot: &Snapshot, nodes: &[NodeReport], problems: &mut Problems) {
    // One report per node, in the snapshot's order (analyze::node_reports).
    for (node, report) in snapshot.nodes.iter().zip(nodes) {
        let Some(error) = &node.operator_error else { continue };
        let satisfied = node.requested.iter().all(|req| {
            let usable: Count = report.pools.iter().find(|p| p.pool == req.pool).map_or(Count::ZERO, |p| p.usable_addresses());
            usable >= Count::from(req.needed_ipv4 as u128 + req.needed_ipv6 as u128)
        });
        let (severity, message) = if satisfied {
            (Severity::Info, format!("operator error {error:?} is likely stale: the node already holds the addresses it requests"))
        } else {
            (Severity::Warning, format!("operator error {error:?} (the node still needs addresses)"))
        };
        problems.push(
            severity,
            ProblemKind::StaleOperatorError,
            node_object(&node.name),
            message,
            "check the operator log; a stale error clears on the next successful allocation",
            None,
        );
    }
}

/// The CRD still lists v2alpha1 in status.storedVersions.
fn storage_migration(snapshot: &Snapshot, problems: &mut Problems) {
    if let Some(crd) = &snapshot.crd
        && crd.storage_migration_pending()
    {
        problems.push(Severity::Warning, ProblemKind::StorageMigrationPending, format!("CustomResourceDefinition/{POOL_CRD_NAME}"),
            format!("status.storedVersions is {:?}: objects may still be stored as v2alpha1", crd.stored_versions.clone().unwrap_or_default()),
            "wait for Cilium's operator to migrate storage (main branch, for 1.21), or run kubectl ciliumpool migrate, then migrate --finalize; see migrate --status", None);
    }
}

/// Pool names and the IPAM mode that hold control, C1 or bidirectional characters other than a
/// newline: every text view shows them escaped, and OpenMetrics (whose label values can only
/// escape `\\`, `"` and a newline) leaves their series out rather than print them raw or under
/// another name.
fn unprintable_names(snapshot: &Snapshot, problems: &mut Problems) {
    const LEFT_OUT: &str = "it is shown escaped, and -o openmetrics leaves its series out (a label value cannot escape them)";
    let unprintable = |name: &str| name.chars().any(|c| c != '\n' && crate::escape::is_unsafe(c));
    for pool in snapshot.pools.iter().filter(|p| unprintable(&p.name)) {
        let message = format!("the pool name holds control or bidirectional characters: {LEFT_OUT}");
        problems.of_pool(
            &pool.name,
            Severity::Warning,
            ProblemKind::UnprintableName,
            message,
            "rename the pool: a Kubernetes object name (lowercase letters, digits, '-', '.'); -o json shows the exact name",
        );
    }
    if let Some(config) = snapshot.ipam.as_ref().filter(|c| unprintable(c.mode.name())) {
        let message = format!("the IPAM mode (key ipam) holds control or bidirectional characters: {LEFT_OUT}");
        problems.push(
            Severity::Warning,
            ProblemKind::UnprintableName,
            format!("ConfigMap/{}", config.source),
            message,
            "set ipam to a Cilium IPAM mode (multi-pool, cluster-pool, eni, ...)",
            None,
        );
    }
}

#[cfg(test)]
mod tests {
    //! What the integration tests (tests/integration/oracle.rs and tests/integration/problem_kinds.rs compare kind, object
    //! and severity) do not pin down: the stale-operator-error rule, the blocks a message names,
    //! the decoder's own issues.
    use super::*;
    use crate::allocator::analyze;
    use serde_json::{Value, json};

    fn pool(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec})
    }

    fn node(name: &str, pools: Value, status: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name}, "spec": {"ipam": {"pools": pools}}, "status": status})
    }

    fn found(objects: Vec<Value>, kind: ProblemKind) -> Vec<Problem> {
        analyze(&Snapshot::from_objects(objects)).problems.into_iter().filter(|p| p.kind == kind).collect()
    }

    #[test]
    fn names_a_label_value_cannot_show_are_unprintable() {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "kube-system", "name": "cilium-config"}, "data": {"ipam": "multi\u{1b}[2Jpool"}});
        let spec = || json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}});
        let objects = vec![pool("a\u{202e}b", spec()), pool("two\nlines", spec()), pool("plain", spec()), config];
        let objects: Vec<String> = found(objects, ProblemKind::UnprintableName).into_iter().map(|p| p.object).collect();
        // A newline alone is an OpenMetrics escape: that name keeps its series.
        assert_eq!(objects, ["CiliumPodIPPool/a\u{202e}b", "ConfigMap/kube-system/cilium-config"]);
    }

    #[test]
    fn a_pod_ip_belongs_to_the_most_specific_block_even_inside_its_nodes_own() {
        // a lists 10.0.0.0/24, b the /26 at .64 inside it and the /26 at .128 that a also lists.
        let pod = |name: &str, node: &str, ip: &str| {
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": node},
            "status": {"phase": "Running", "podIPs": [{"ip": ip}]}})
        };
        let objects = vec![
            pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 26}})),
            node("a", json!({"allocated": [{"pool": "p", "cidrs": ["10.0.0.0/24", "10.0.0.128/26"]}]}), json!({})),
            node("b", json!({"allocated": [{"pool": "p", "cidrs": ["10.0.0.64/26", "10.0.0.128/26"]}]}), json!({})),
            pod("own", "a", "10.0.0.5"),
            pod("nested", "a", "10.0.0.70"),
            pod("shared", "a", "10.0.0.130"),
            pod("outer", "b", "10.0.0.200"),
            pod("inner", "b", "10.0.0.65"),
        ];
        let objects: Vec<String> = found(objects, ProblemKind::PodIpForeignBlock).into_iter().map(|p| p.object).collect();
        assert_eq!(objects, ["Pod/d/nested", "Pod/d/outer"]);
    }

    #[test]
    fn an_operator_error_is_stale_when_the_node_holds_what_it_requests() {
        // Pool p hands out /26 blocks: 62 usable addresses each. Every node shows an operator
        // error and requests (IPv4, IPv6) addresses; the IPv4 and IPv6 requests add up.
        let with_request = |name: &str, blocks: &[&str], ipv4: u64, ipv6: u64| {
            node(
                name,
                json!({"allocated": [{"pool": "p", "cidrs": blocks}], "requested": [{"pool": "p", "needed": {"ipv4-addrs": ipv4, "ipv6-addrs": ipv6}}]}),
                json!({"ipam": {"operator-status": {"error": "allocation failed"}}}),
            )
        };
        let objects = vec![
            pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})),
            with_request("a", &["10.0.0.0/26"], 2, 0),                     // 2 <= 62: stale
            with_request("b", &["10.0.0.64/26", "10.0.0.128/26"], 100, 0), // 100 <= 124: stale
            with_request("c", &["10.0.0.192/26"], 40, 30),                 // 70 > 62: still needs addresses
            with_request("d", &["10.0.1.0/26"], 10, 10),                   // 20 <= 62: stale
            with_request("e", &["10.0.1.64/26"], 63, 0),                   // 63 > 62: still needs addresses
        ];
        let severities: Vec<(String, Severity)> =
            found(objects, ProblemKind::StaleOperatorError).into_iter().map(|p| (p.object, p.severity)).collect();
        // Sorted most severe first.
        assert_eq!(
            severities,
            [
                ("CiliumNode/c".to_string(), Severity::Warning),
                ("CiliumNode/e".to_string(), Severity::Warning),
                ("CiliumNode/a".to_string(), Severity::Info),
                ("CiliumNode/b".to_string(), Severity::Info),
                ("CiliumNode/d".to_string(), Severity::Info),
            ]
        );
    }

    #[test]
    fn split_entries_name_the_blocks_a_restart_frees() {
        let objects = vec![
            pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}})),
            node(
                "n1",
                json!({"allocated": [{"pool": "p", "cidrs": ["10.0.0.0/26", "10.0.0.64/26"]}, {"pool": "p", "cidrs": ["10.0.0.64/26"]}]}),
                json!({}),
            ),
            node(
                "n2",
                json!({"allocated": [{"pool": "p", "cidrs": ["10.0.0.128/26"]}, {"pool": "p", "cidrs": ["10.0.0.128/26"]}]}),
                json!({}),
            ),
        ];
        let messages: Vec<String> = found(objects, ProblemKind::PoolSplitEntries).into_iter().map(|p| p.message).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("in 2 allocated[] entries") && messages[0].contains("; 10.0.0.0/26 are freed"), "{}", messages[0]);
        assert!(messages[1].contains("; no other block is freed"), "{}", messages[1]);
    }

    #[test]
    fn what_the_decoder_cannot_understand_is_an_invalid_pool() {
        // No maskSize: the operator accepts the pool (zero blocks), so this is the decoder's issue only.
        let objects = vec![pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24"]}}))];
        let found: Vec<(String, Severity, String)> =
            found(objects, ProblemKind::InvalidPool).into_iter().map(|p| (p.object, p.severity, p.message)).collect();
        assert_eq!(found, [("CiliumPodIPPool/p".to_string(), Severity::Error, "spec.ipv4.maskSize is missing".to_string())]);
    }
}
