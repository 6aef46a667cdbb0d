//! The checks of pod addresses: in another node's block (on the listings, while the reports are
//! worked out), then in a pool CIDR but in no allocated block (once the pool reports exist).

use super::Problems;
use crate::allocator::blocks::ListedBlocks;
use crate::allocator::problem::{Problem, ProblemKind};
use crate::allocator::report::PoolReport;
use crate::model::workload::Pod;
use crate::model::{Addr, Prefix, Snapshot};
use std::collections::{BTreeSet, HashMap};

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
                problems.add(
                    Problem::error(
                        ProblemKind::PodIpForeignBlock,
                        pod_object(pod),
                        format!(
                            "IP {ip} on node {node} lies in block {block} held by {}",
                            owners.into_iter().collect::<Vec<_>>().join(", ")
                        ),
                        "the IP may be handed out twice: recreate the pod",
                    )
                    .in_pool(listings.first().map(|l| &**l.pool)),
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
                problems.add(
                    Problem::warning(
                        ProblemKind::PodIpUnallocated,
                        pod_object(pod),
                        format!("IP {ip} lies in pool {pool} ({cidr}) but in no block allocated to a node"),
                        "the block was released while the pod kept its IP: recreate the pod",
                    )
                    .in_pool(Some(pool)),
                );
            }
        }
    }
}

fn pod_object(pod: &Pod) -> String {
    format!("Pod/{}/{}", pod.namespace, pod.name)
}
