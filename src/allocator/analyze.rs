//! The embedded allocator: a pure function from a snapshot to figures and problems, with the
//! operator's block semantics (domain §3, §5, §6). Nothing here enumerates addresses or
//! blocks: work is proportional to the number of objects and ranges.

use super::blocks::{self, AddressSet, ListedBlocks};
use super::count::Count;
use super::interval::IntervalSet;
use super::problem::{Problem, ProblemKind, Severity, node_object, pool_object};
use super::report::*;
use crate::model::{Addr, Family, Node, Pool, Prefix, Snapshot};
use crate::model::pool::PoolFamily;
use std::collections::{BTreeMap, BTreeSet};

/// Utilization at or above which a pool counts as nearly exhausted.
pub const NEARLY_EXHAUSTED: f64 = 0.9;
/// The operator rejects IPv6 CIDRs split into more blocks than this (2^16).
pub const IPV6_MAX_BLOCK_BITS: u8 = 16;

pub fn analyze(snapshot: &Snapshot) -> Report {
    let listed = ListedBlocks::from_nodes(&snapshot.nodes);
    let in_use = InUse::collect(snapshot);
    let mut problems = Vec::new();
    let mut pools: Vec<PoolReport> = snapshot
        .pools
        .iter()
        .map(|pool| pool_report(pool, &snapshot.nodes, &in_use, &mut problems))
        .collect();
    // By name, as the API server lists them: files in another order must not reorder the report.
    pools.sort_by(|a, b| a.name.cmp(&b.name));
    let nodes = node_reports(snapshot, &in_use);
    detect_cluster_problems(snapshot, &pools, &nodes, &listed, &mut problems);
    problems.sort_by(|a, b| (a.severity, a.kind, &a.object, &a.message).cmp(&(b.severity, b.kind, &b.object, &b.message)));
    problems.dedup();
    let unmanaged_ips = Family::ALL
        .iter()
        .map(|&f| in_use.family(f).iter().filter(|&v| listed.lookup(Addr { family: f, value: v }).is_none()).count())
        .sum();
    Report {
        pools,
        nodes,
        problems,
        used_sources: UsedSources { unmanaged_ips, ..in_use.sources },
    }
}

/// Distinct addresses in use (domain §5): running pod-network pods, endpoints, node infrastructure.
struct InUse {
    ipv4: AddressSet,
    ipv6: AddressSet,
    sources: UsedSources,
}

impl InUse {
    fn collect(snapshot: &Snapshot) -> InUse {
        let pods: Vec<&crate::model::Pod> = snapshot.pods.iter().flatten().filter(|p| p.holds_pod_ips()).collect();
        let endpoints = snapshot.endpoints.as_deref().unwrap_or_default();
        let infrastructure: Vec<Addr> = snapshot.nodes.iter().flat_map(|n| n.infrastructure_ips.iter().copied()).collect();
        let all: Vec<Addr> = pods
            .iter()
            .flat_map(|p| p.ips.iter().copied())
            .chain(endpoints.iter().flat_map(|e| e.ips.iter().copied()))
            .chain(infrastructure.iter().copied())
            .collect();
        let of = |family: Family| AddressSet::new(all.iter().filter(|a| a.family == family).map(|a| a.value));
        InUse {
            ipv4: of(Family::Ipv4),
            ipv6: of(Family::Ipv6),
            sources: UsedSources {
                known: snapshot.pods.is_some() || snapshot.endpoints.is_some(),
                pods: pods.len(),
                endpoints: endpoints.len(),
                infrastructure_ips: infrastructure.len(),
                unmanaged_ips: 0,
            },
        }
    }

    fn family(&self, family: Family) -> &AddressSet {
        match family {
            Family::Ipv4 => &self.ipv4,
            Family::Ipv6 => &self.ipv6,
        }
    }

    fn count_in(&self, family: Family, ranges: &IntervalSet) -> Option<Count> {
        self.sources.known.then(|| self.family(family).count_in(ranges))
    }
}

/// A pool CIDR the figures can use: parsed, right family, splittable into blocks.
struct UsableCidr<'a> {
    original: &'a str,
    prefix: Prefix,
    reserved: &'a [crate::model::pool::ReservedRange],
}

fn pool_report(pool: &Pool, nodes: &[Node], in_use: &InUse, problems: &mut Vec<Problem>) -> PoolReport {
    let object = pool_object(&pool.name);
    let mut problem = |severity, kind, message: String, action: &str| {
        problems.push(Problem { severity, kind, object: object.clone(), message, action: action.to_string(), pool: Some(pool.name.clone()) });
    };
    for issue in &pool.issues {
        problem(Severity::Error, ProblemKind::InvalidPool, issue.clone(), "fix the pool spec; the operator ignores what it cannot parse");
    }
    let mut families = Vec::new();
    for fam in &pool.families {
        let report = family_report(pool, fam, nodes, in_use, &mut problem);
        families.push(report);
    }
    PoolReport {
        name: pool.name.clone(),
        api_version: pool.api_version.clone(),
        dialect: pool.dialect,
        families,
        allow_first_ip: pool.allow_first_ip,
        allow_last_ip: pool.allow_last_ip,
    }
}

fn family_report(
    pool: &Pool,
    fam: &PoolFamily,
    nodes: &[Node],
    in_use: &InUse,
    problem: &mut impl FnMut(Severity, ProblemKind, String, &str),
) -> FamilyReport {
    let family = fam.family;
    let field = family.name();
    let total_addresses: Count = {
        let spans = fam.cidrs.iter().filter_map(|c| c.prefix).map(|p| (p.first(), p.last()));
        IntervalSet::from_ranges(spans).len()
    };
    for (cidr, ranges) in &fam.unmatched_pool_entries {
        for r in ranges {
            problem(
                Severity::Error,
                ProblemKind::InvalidReservedRange,
                format!("spec.{field}.pool[cidr={cidr}] reserves {}-{} but {cidr:?} is not an entry of spec.{field}.cidrs", r.start, r.end),
                "spell pool[].cidr exactly as the entry of cidrs it belongs to",
            );
        }
    }
    // CIDRs usable for figures: parsed, splittable, not overlapping an earlier one.
    let mut usable_cidrs: Vec<UsableCidr> = Vec::new();
    if let Some(mask) = fam.mask_size {
        for c in &fam.cidrs {
            let Some(prefix) = c.prefix else { continue };
            if mask < prefix.len {
                problem(Severity::Error, ProblemKind::InvalidPool,
                    format!("spec.{field}.cidrs entry {} is smaller than a /{mask} block", c.original),
                    "use a CIDR at least as large as maskSize, or a larger maskSize in a new pool");
                continue;
            }
            if let Some(other) = usable_cidrs.iter().find(|u| u.prefix.overlaps(&prefix)) {
                problem(Severity::Error, ProblemKind::InvalidPool,
                    format!("spec.{field}.cidrs entries {} and {} overlap (the operator rejects this)", other.original, c.original),
                    "remove one of the overlapping CIDRs");
                continue;
            }
            if family == Family::Ipv6 && mask - prefix.len > IPV6_MAX_BLOCK_BITS {
                problem(Severity::Error, ProblemKind::Ipv6TooManyBlocks,
                    format!("{} splits into 2^{} blocks of /{mask}; the operator rejects IPv6 CIDRs with more than 2^16 blocks", c.original, mask - prefix.len),
                    "use a smaller CIDR or a smaller maskSize (at most 16 bits difference)");
            }
            usable_cidrs.push(UsableCidr { original: &c.original, prefix, reserved: &c.reserved });
        }
    }

    // Blocks listed under this pool's name, of this family: allocated (inside a CIDR) or orphan.
    let mut held: BTreeMap<Prefix, BTreeSet<String>> = BTreeMap::new();
    for node in nodes {
        for alloc in node.allocated.iter().filter(|a| a.pool == pool.name) {
            for block in alloc.blocks.iter().filter_map(|b| b.prefix).filter(|b| b.family == family) {
                held.entry(block).or_default().insert(node.name.clone());
            }
        }
    }
    let usable_of = |len: u8| blocks::usable(family, len, pool.allow_first_ip, pool.allow_last_ip);
    let used_in = |block: &Prefix| in_use.count_in(family, &IntervalSet::single(block.first(), block.last())).unwrap_or(Count::ZERO);
    let held_block = |prefix: &Prefix, holders: &BTreeSet<String>| HeldBlock {
        prefix: *prefix,
        nodes: holders.iter().cloned().collect(),
        used: used_in(prefix),
        usable: usable_of(prefix.len),
    };
    let mut orphans = Vec::new();
    let mut allocated_ranges = Vec::new();
    let mut blocks_per_node: BTreeMap<&str, Count> = BTreeMap::new();
    let mut cidrs = Vec::new();
    let mut reserved_spans = Vec::new();
    let mask = fam.mask_size.unwrap_or(family.bits());
    let mut cidr_held: Vec<Vec<(Prefix, &BTreeSet<String>)>> = vec![Vec::new(); usable_cidrs.len()];
    for (block, holders) in &held {
        match usable_cidrs.iter().position(|c| c.prefix.contains_prefix(block)) {
            Some(i) => cidr_held[i].push((*block, holders)),
            None => orphans.push(held_block(block, holders)),
        }
    }
    for (c, in_cidr) in usable_cidrs.iter().zip(&cidr_held) {
        let capacity = blocks::capacity(&c.prefix, mask);
        let last_index = (capacity - Count::from(1u64)).to_u128().expect("at most 2^128 blocks per CIDR");
        let allocated_idx = IntervalSet::from_ranges(in_cidr.iter().map(|(b, _)| blocks::indices_overlapping(&c.prefix, mask, b.first(), b.last())));
        for (block, holders) in in_cidr {
            allocated_ranges.push((block.first(), block.last()));
            for node in holders.iter() {
                *blocks_per_node.entry(node.as_str()).or_default() += Count::from(1u64);
            }
        }
        let allocated: Vec<HeldBlock> = in_cidr.iter().map(|(b, h)| held_block(b, h)).collect();
        let mut reservations = Vec::new();
        let mut reserved_texts = Vec::new();
        for r in c.reserved {
            match validate_range(r, &c.prefix) {
                Ok((start, end)) => {
                    let (first_block, last_block) = blocks::indices_overlapping(&c.prefix, mask, start.value, end.value);
                    let allocated_overlapping = allocated
                        .iter()
                        .filter(|b| b.prefix.first() <= end.value && start.value <= b.prefix.last())
                        .cloned()
                        .collect();
                    reserved_spans.push((start.value, end.value));
                    reserved_texts.push(RangeText::from(r));
                    reservations.push(Reservation {
                        start,
                        end,
                        reserved_addresses: Count::span(start.value, end.value),
                        first_block,
                        last_block,
                        allocated_overlapping,
                    });
                }
                Err(why) => problem(Severity::Error, ProblemKind::InvalidReservedRange,
                    format!("reserved range {}-{} of {}: {why}; it is ignored", r.start, r.end, c.original),
                    "fix or remove the range (kubectl ciliumpool reserve-range --remove)"),
            }
        }
        let reserved_idx = IntervalSet::from_ranges(reservations.iter().map(|r| (r.first_block, r.last_block)));
        let withheld = reserved_idx.difference(&allocated_idx);
        let free = IntervalSet::single(0, last_index).difference(&allocated_idx.union(&reserved_idx));
        let draining = reserved_idx.len() == capacity;
        cidrs.push(CidrReport {
            cidr: c.original.to_string(),
            capacity_blocks: capacity,
            allocated_blocks: allocated_idx.len(),
            withheld_blocks: withheld.len(),
            free_blocks: free.len(),
            reserved_ranges: reserved_texts,
            prefix: c.prefix,
            allocated,
            withheld,
            free,
            reservations,
            draining,
        });
    }
    let capacity_blocks: Count = cidrs.iter().map(|c| c.capacity_blocks).sum();
    let allocated_blocks: Count = cidrs.iter().map(|c| c.allocated_blocks).sum();
    let withheld_blocks: Count = cidrs.iter().map(|c| c.withheld_blocks).sum();
    let free_blocks: Count = cidrs.iter().map(|c| c.free_blocks).sum();
    let usable_per_block = usable_of(mask);
    let allocated_addresses = allocated_blocks * usable_per_block;
    let used_addresses = in_use.count_in(family, &IntervalSet::from_ranges(allocated_ranges));
    let median_blocks_per_node = median(blocks_per_node.values().map(|c| c.to_f64()).collect());
    let runway_nodes = {
        let per_node = Count::from(median_blocks_per_node.map_or(1u64, |m| m.ceil().max(1.0) as u64));
        free_blocks.checked_div(per_node)
    };
    let next_block = cidrs.iter().find_map(|c| c.free.first().map(|i| blocks::block_at(&c.prefix, mask, i)));
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
        cidrs,
        usable_per_block,
        nodes_holding: blocks_per_node.len(),
        median_blocks_per_node,
        runway_nodes,
        next_block,
        orphans,
    }
}

/// A reserved range is valid when both ends are addresses of the CIDR's family, in order,
/// and inside the CIDR it belongs to.
fn validate_range(r: &crate::model::pool::ReservedRange, cidr: &Prefix) -> Result<(Addr, Addr), String> {
    let start = Addr::parse(&r.start).ok_or_else(|| format!("start {:?} is not an IP address", r.start))?;
    let end = Addr::parse(&r.end).ok_or_else(|| format!("end {:?} is not an IP address", r.end))?;
    if start.family != cidr.family || end.family != cidr.family {
        return Err(format!("not an {} range", cidr.family));
    }
    if start.value > end.value {
        return Err("start is after end".to_string());
    }
    if !cidr.contains(start) || !cidr.contains(end) {
        return Err("not inside the CIDR".to_string());
    }
    Ok((start, end))
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

fn node_reports(snapshot: &Snapshot, in_use: &InUse) -> Vec<NodeReport> {
    snapshot
        .nodes
        .iter()
        .map(|node| {
            let mut names: Vec<&str> = node.allocated.iter().map(|a| a.pool.as_str()).collect();
            names.extend(node.requested.iter().map(|r| r.pool.as_str()));
            let mut seen = BTreeSet::new();
            names.retain(|n| seen.insert(*n));
            let pools = names
                .into_iter()
                .map(|name| {
                    let pool = snapshot.pool(name);
                    let entries: Vec<_> = node.allocated.iter().filter(|a| a.pool == name).collect();
                    let mut prefixes = Vec::new();
                    let mut usable_addresses = Count::ZERO;
                    for entry in &entries {
                        let allow_first = entry.allow_first_ip.or(pool.map(|p| p.allow_first_ip)).unwrap_or(false);
                        let allow_last = entry.allow_last_ip.or(pool.map(|p| p.allow_last_ip)).unwrap_or(false);
                        for b in entry.blocks.iter().filter_map(|b| b.prefix) {
                            usable_addresses += blocks::usable(b.family, b.len, allow_first, allow_last);
                            prefixes.push(b);
                        }
                    }
                    let used_addresses = in_use.sources.known.then(|| {
                        Family::ALL
                            .iter()
                            .map(|&f| {
                                let ranges = IntervalSet::from_ranges(prefixes.iter().filter(|p| p.family == f).map(|p| (p.first(), p.last())));
                                in_use.family(f).count_in(&ranges)
                            })
                            .sum()
                    });
                    let request = node.requested.iter().find(|r| r.pool == name);
                    NodePoolReport {
                        pool: name.to_string(),
                        blocks: entries.iter().flat_map(|e| e.blocks.iter().map(|b| b.original.clone())).collect(),
                        used_addresses,
                        needed_addresses: Needed {
                            ipv4: request.map_or(0, |r| r.needed_ipv4),
                            ipv6: request.map_or(0, |r| r.needed_ipv6),
                        },
                        usable_addresses,
                        pool_exists: pool.is_some(),
                    }
                })
                .collect();
            NodeReport { name: node.name.clone(), pools, ignored: node.ignored }
        })
        .collect()
}

fn detect_cluster_problems(snapshot: &Snapshot, pools: &[PoolReport], nodes: &[NodeReport], listed: &ListedBlocks, problems: &mut Vec<Problem>) {
    let mut push = |severity, kind, object: String, message: String, action: &str, pool: Option<&str>| {
        problems.push(Problem { severity, kind, object, message, action: action.to_string(), pool: pool.map(str::to_string) });
    };
    let pool_names: BTreeSet<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();

    // Orphans, per pool report, and blocks under pools that do not exist.
    for pool in pools {
        for fam in &pool.families {
            for orphan in &fam.orphans {
                push(Severity::Warning, ProblemKind::OrphanBlock, pool_object(&pool.name),
                    format!("block {} listed by {} under pool {} lies outside the pool's {} CIDRs", orphan.prefix, orphan.nodes.join(", "), pool.name, fam.family),
                    "put the CIDR back into the pool, or drain the node(s) so the agent releases the block", Some(&pool.name));
            }
        }
    }
    for node in &snapshot.nodes {
        for alloc in &node.allocated {
            for block in &alloc.blocks {
                if block.prefix.is_none() {
                    push(Severity::Error, ProblemKind::InvalidNodeBlock, node_object(&node.name),
                        format!("allocated block {:?} under pool {} is not a CIDR", block.original, alloc.pool),
                        "inspect the node's spec.ipam.pools.allocated; the agent wrote something unexpected", Some(&alloc.pool));
                } else if !pool_names.contains(alloc.pool.as_str()) {
                    push(Severity::Warning, ProblemKind::OrphanBlock, node_object(&node.name),
                        format!("block {} is listed under pool {:?}, which does not exist", block.original, alloc.pool),
                        "recreate the pool, or drain the node so the agent releases the block", None);
                }
            }
        }
        for req in &node.requested {
            if !pool_names.contains(req.pool.as_str()) {
                push(Severity::Warning, ProblemKind::UnknownPoolRequested, node_object(&node.name),
                    format!("requests addresses from pool {:?}, which does not exist", req.pool),
                    "create the pool or fix the pod/namespace pool annotations that select it", None);
            }
        }
    }
    // A block held by more than one node.
    for (block, holders) in &listed.holders {
        let node_set: BTreeSet<&str> = holders.iter().map(|(n, _)| n.as_str()).collect();
        if node_set.len() > 1 {
            let pool = holders.iter().next().map(|(_, p)| p.as_str());
            push(Severity::Error, ProblemKind::BlockMultipleOwners, format!("block/{block}"),
                format!("block {block} is listed by {} nodes: {}", node_set.len(), node_set.iter().copied().collect::<Vec<_>>().join(", ")),
                "pods on these nodes can get the same IP: drain all but one of the nodes", pool);
        }
    }
    // Pools whose CIDRs overlap (Cilium does not detect it).
    let all_cidrs: Vec<(&str, &CidrReport)> = pools.iter().flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (p.name.as_str(), c)))).collect();
    for (i, (a_pool, a)) in all_cidrs.iter().enumerate() {
        for (b_pool, b) in &all_cidrs[i + 1..] {
            if a_pool != b_pool && a.prefix.overlaps(&b.prefix) {
                push(Severity::Error, ProblemKind::OverlappingPools, pool_object(a_pool),
                    format!("CIDR {} of pool {a_pool} overlaps CIDR {} of pool {b_pool}: both can hand out the same block", a.cidr, b.cidr),
                    "give each pool disjoint CIDRs", Some(a_pool));
            }
        }
    }
    // Reservations, drains, exhaustion.
    for pool in pools {
        let object = pool_object(&pool.name);
        for fam in &pool.families {
            for cidr in &fam.cidrs {
                for r in &cidr.reservations {
                    if !r.allocated_overlapping.is_empty() {
                        let nodes: BTreeSet<&str> = r.allocated_overlapping.iter().flat_map(|b| b.nodes.iter().map(String::as_str)).collect();
                        let blocks: Vec<String> = r.allocated_overlapping.iter().map(|b| b.prefix.to_string()).collect();
                        push(Severity::Warning, ProblemKind::ReservationOverAllocated, object.clone(),
                            format!("reserved range {}-{} covers allocated block(s) {} still held by {} (grandfathered, not evicted)", r.start, r.end, blocks.join(", "), nodes.iter().copied().collect::<Vec<_>>().join(", ")),
                            &format!("drain node(s) {} to free the block(s)", nodes.iter().copied().collect::<Vec<_>>().join(", ")), Some(&pool.name));
                    }
                    let withheld_addresses = r.touched_blocks() * blocks::block_size(fam.family, fam.mask_size.unwrap_or(fam.family.bits()));
                    if withheld_addresses > r.reserved_addresses + r.reserved_addresses {
                        push(Severity::Info, ProblemKind::ReservationWithholdsMore, object.clone(),
                            format!("reserved range {}-{} reserves {} address(es) but withholds {} block(s) ({} addresses)", r.start, r.end, r.reserved_addresses, r.touched_blocks(), withheld_addresses),
                            "reservations act on whole blocks; align the range to block boundaries if that is not intended", Some(&pool.name));
                    }
                }
                if cidr.draining && cidr.allocated_blocks.is_zero() {
                    push(Severity::Info, ProblemKind::CidrDrained, object.clone(),
                        format!("CIDR {} is fully reserved and no node holds a block in it", cidr.cidr),
                        "decommissioning is complete: remove the CIDR from spec.cidrs (and its reservation)", Some(&pool.name));
                }
            }
            let allocatable = fam.allocated_blocks + fam.free_blocks;
            if !allocatable.is_zero() && fam.free_blocks.is_zero() {
                push(Severity::Error, ProblemKind::PoolNearlyExhausted, object.clone(),
                    format!("{} has no free {} blocks ({} of {} allocatable blocks allocated)", pool.name, fam.family, fam.allocated_blocks, allocatable),
                    "add a CIDR to the pool before nodes fail to get addresses", Some(&pool.name));
            } else if fam.utilization().is_some_and(|u| u >= NEARLY_EXHAUSTED) {
                push(Severity::Warning, ProblemKind::PoolNearlyExhausted, object.clone(),
                    format!("{} {} is {:.0}% allocated: {} free block(s) left", pool.name, fam.family, fam.utilization().unwrap_or(0.0) * 100.0, fam.free_blocks),
                    "add a CIDR to the pool", Some(&pool.name));
            }
        }
    }
    // Pod IPs in another node's block, or in a pool CIDR but no allocated block.
    let pool_cidrs: Vec<(&str, Prefix)> = pools.iter().flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (p.name.as_str(), c.prefix)))).collect();
    for pod in snapshot.pods.iter().flatten().filter(|p| p.holds_pod_ips()) {
        let object = format!("Pod/{}/{}", pod.namespace, pod.name);
        for &ip in &pod.ips {
            match listed.lookup(ip) {
                Some((block, holders)) => {
                    let Some(node) = &pod.node_name else { continue };
                    if !holders.iter().any(|(n, _)| n == node) {
                        let owners: BTreeSet<&str> = holders.iter().map(|(n, _)| n.as_str()).collect();
                        push(Severity::Error, ProblemKind::PodIpForeignBlock, object.clone(),
                            format!("IP {ip} on node {node} lies in block {block} held by {}", owners.into_iter().collect::<Vec<_>>().join(", ")),
                            "the IP may be handed out twice: recreate the pod", holders.iter().next().map(|(_, p)| p.as_str()));
                    }
                }
                None => {
                    if let Some((pool, cidr)) = pool_cidrs.iter().find(|(_, c)| c.contains(ip)) {
                        push(Severity::Warning, ProblemKind::PodIpUnallocated, object.clone(),
                            format!("IP {ip} lies in pool {pool} ({cidr}) but in no block allocated to a node"),
                            "the block was released while the pod kept its IP: recreate the pod", Some(pool));
                    }
                }
            }
        }
    }
    // Operator errors: stale when the node already has what it asked for (cilium/cilium#28758).
    for node in &snapshot.nodes {
        let Some(error) = &node.operator_error else { continue };
        let report = nodes.iter().find(|n| n.name == node.name);
        let satisfied = node.requested.iter().all(|req| {
            let usable: Count = report.and_then(|r| r.pools.iter().find(|p| p.pool == req.pool)).map_or(Count::ZERO, |p| p.usable_addresses);
            usable >= Count::from(req.needed_ipv4 as u128 + req.needed_ipv6 as u128)
        });
        let (severity, message) = if satisfied {
            (Severity::Info, format!("operator error {error:?} is likely stale: the node already holds the addresses it requests"))
        } else {
            (Severity::Warning, format!("operator error {error:?} (the node still needs addresses)"))
        };
        push(severity, ProblemKind::StaleOperatorError, node_object(&node.name), message,
            "check the operator log; a stale error clears on the next successful allocation", None);
    }
    if let Some(crd) = &snapshot.crd
        && crd.storage_migration_pending()
    {
        push(Severity::Warning, ProblemKind::StorageMigrationPending, format!("CustomResourceDefinition/{}", crate::model::crd::POOL_CRD_NAME),
            format!("status.storedVersions is {:?}: objects may still be stored as v2alpha1", crd.stored_versions.clone().unwrap_or_default()),
            "run kubectl ciliumpool migrate, then migrate --finalize", None);
    }
}
