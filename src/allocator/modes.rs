//! What the IPAM mode changes (docs/ipam-modes.md): blocks a non-multi-pool mode's agent lists
//! under a pool that has no CiliumPodIPPool (ENI's `default`: capacity lives in the cloud), and
//! cluster-pool podCIDRs, with the prerequisites of a migration to multi-pool.

use super::blocks;
use super::check::Problems;
use super::count::Count;
use super::interval::IntervalSet;
use super::problem::{Problem, ProblemKind, Severity, node_object, pool_object};
use super::report::{IpamReport, ModeFamilyReport, ModePoolReport, NodePodCidrs, PoolReport};
use crate::model::node::ListedBlock;
use crate::model::{Family, IpamMode, Prefix, Snapshot};
use std::collections::{BTreeMap, BTreeSet};

/// Why a mode pool's capacity is unknown, per mode.
fn capacity_unknown(mode: &IpamMode) -> String {
    match mode {
        IpamMode::Eni => "capacity lives in AWS (ENIs and addresses per instance type, subnets' free addresses); the cluster records only what nodes hold".to_string(),
        other => format!("capacity is managed outside the cluster in IPAM mode {}; the cluster records only what nodes hold", other.name()),
    }
}

/// Counts in-use addresses of a family inside ranges (`None` when pods and endpoints are unknown).
type CountUsed<'a> = &'a dyn Fn(Family, &IntervalSet) -> Option<Count>;

/// The IPAM part of the report: the mode, its own pools, the nodes' podCIDRs.
pub fn ipam_report(snapshot: &Snapshot, count_used: CountUsed) -> IpamReport {
    let mode = snapshot.ipam.as_ref().map(|c| c.mode.clone());
    let mut mode_pools = Vec::new();
    if let Some(mode) = mode.as_ref().filter(|m| **m != IpamMode::MultiPool) {
        let names: BTreeSet<&str> = snapshot
            .nodes
            .iter()
            .flat_map(|n| n.allocated.iter().map(|a| a.pool.as_ref()))
            .filter(|p| snapshot.pool(p).is_none())
            .collect();
        for name in names {
            let families = Family::ALL.into_iter().filter_map(|family| mode_family(snapshot, name, family, count_used)).collect();
            mode_pools.push(ModePoolReport { name: name.to_string(), families, capacity_unknown: capacity_unknown(mode) });
        }
    }
    let pod_cidrs = pod_cidrs(snapshot, count_used);
    let nothing_to_show =
        matches!(mode, Some(IpamMode::Other(_))) && snapshot.pools.is_empty() && mode_pools.is_empty() && pod_cidrs.is_empty();
    IpamReport { mode: mode.map_or_else(|| "unknown".to_string(), |m| m.name().to_string()), mode_pools, pod_cidrs, nothing_to_show }
}

/// One family of a mode's own pool `name`: the blocks nodes list under it; `None` when none.
fn mode_family(snapshot: &Snapshot, name: &str, family: Family, count_used: CountUsed) -> Option<ModeFamilyReport> {
    // block → (usable addresses, holders)
    let mut held: BTreeMap<Prefix, (Count, BTreeSet<&str>)> = BTreeMap::new();
    for node in &snapshot.nodes {
        for alloc in node.allocated.iter().filter(|a| &*a.pool == name) {
            let (first, last) = (alloc.allow_first_ip.unwrap_or(false), alloc.allow_last_ip.unwrap_or(false));
            for block in alloc.blocks.iter().filter_map(|b| b.prefix).filter(|b| b.family == family) {
                let entry = held.entry(block).or_insert((blocks::usable(family, block.len, first, last), BTreeSet::new()));
                entry.1.insert(node.name.as_ref());
            }
        }
    }
    if held.is_empty() {
        return None;
    }
    let allocated_addresses: Count = held.values().map(|(usable, _)| *usable).sum();
    let ranges = IntervalSet::from_ranges(held.keys().map(|b| (b.first(), b.last())));
    let used_addresses = count_used(family, &ranges);
    let nodes: BTreeSet<&str> = held.values().flat_map(|(_, n)| n.iter().copied()).collect();
    Some(ModeFamilyReport {
        family,
        allocated_blocks: Count::from(held.len()),
        allocated_addresses,
        used_addresses,
        idle_addresses: used_addresses.map(|u| allocated_addresses.saturating_sub(u)),
        nodes: nodes.len(),
    })
}

/// Each node's cluster-pool podCIDRs and the addresses in use inside them.
fn pod_cidrs(snapshot: &Snapshot, count_used: CountUsed) -> Vec<NodePodCidrs> {
    snapshot
        .nodes
        .iter()
        .filter(|n| !n.pod_cidrs.is_empty())
        .map(|n| {
            let used = Family::ALL.iter().map(|&f| {
                let ranges = IntervalSet::from_ranges(
                    n.pod_cidrs.iter().filter_map(|b| b.prefix).filter(|p| p.family == f).map(|p| (p.first(), p.last())),
                );
                count_used(f, &ranges)
            });
            NodePodCidrs {
                node: n.name.to_string(),
                pod_cidrs: n.pod_cidrs.iter().map(|b| b.original.to_string()).collect(),
                used_addresses: used.collect::<Option<Vec<Count>>>().map(|v| v.into_iter().sum()),
            }
        })
        .collect()
}

/// Cluster-pool → multi-pool (Cilium ≥ 1.20): the operator moves each node's podCIDRs into
/// `pools.allocated` under the default pool, which must exist and cover every podCIDR as one of
/// its blocks (same mask size). Checked once a migration is under way (mode multi-pool) or being
/// prepared (mode cluster-pool and the default pool exists).
pub fn migration_problems(snapshot: &Snapshot, pools: &[PoolReport], problems: &mut Problems) {
    let Some(config) = &snapshot.ipam else { return };
    let nodes: Vec<_> = snapshot.nodes.iter().filter(|n| !n.pod_cidrs.is_empty()).collect();
    if nodes.is_empty() || !matches!(config.mode, IpamMode::MultiPool | IpamMode::ClusterPool) {
        return;
    }
    let default = &config.default_pool;
    let pool = pools.iter().find(|p| &p.name == default);
    let migrating = config.mode == IpamMode::MultiPool;
    if pool.is_none() && !migrating {
        return;
    }
    let mut push = |severity, object: String, message: String, action: &str| {
        problems.add(Problem::new(severity, ProblemKind::ClusterPoolMigration, object, message, action).in_pool(Some(default)));
    };
    if migrating && !config.cluster_pool_migration {
        push(
            Severity::Warning,
            format!("ConfigMap/{}", config.source),
            format!(
                "{} node(s) still have spec.ipam.podCIDRs in multi-pool mode, and enable-cluster-pool-to-multi-pool-migration is not \"true\": the operator will not move them to pool {default}",
                nodes.len()
            ),
            "set enable-cluster-pool-to-multi-pool-migration: \"true\" in cilium-config and restart the operator",
        );
    }
    let Some(pool) = pool else {
        push(
            Severity::Error,
            pool_object(default),
            format!("pool {default} (ipam-default-ip-pool) does not exist: the podCIDRs of {} node(s) cannot move to it", nodes.len()),
            "create the pool with CIDRs covering every node's podCIDRs and maskSize equal to their prefix length",
        );
        return;
    };
    for node in nodes {
        for cidr in &node.pod_cidrs {
            if let Some((object, message, action)) = pod_cidr_problem(pool, default, &node.name, cidr) {
                push(Severity::Error, object, message, &action);
            }
        }
    }
}

/// What keeps one podCIDR of a node from moving into the default pool `pool`: (object,
/// message, action), or `None` when the pool covers it as one of its blocks.
fn pod_cidr_problem(pool: &PoolReport, default: &str, node: &str, cidr: &ListedBlock) -> Option<(String, String, String)> {
    let Some(prefix) = cidr.prefix else {
        return Some((
            node_object(node),
            format!("spec.ipam.podCIDRs entry {:?} is not a CIDR", cidr.original),
            "fix the node's podCIDRs".into(),
        ));
    };
    let fam = pool.families.iter().find(|f| f.family == prefix.family);
    let covered = fam.is_some_and(|f| f.cidrs.iter().any(|c| c.prefix.contains_prefix(&prefix)));
    let mask = fam.and_then(|f| f.mask_size);
    if !covered {
        Some((
            node_object(node),
            format!("podCIDR {} is not inside any {} CIDR of pool {default}", cidr.original, prefix.family),
            format!("add a CIDR covering {} to pool {default}", cidr.original),
        ))
    } else if mask != Some(prefix.len) {
        Some((
            node_object(node),
            format!(
                "podCIDR {} is a /{} but pool {default} hands out /{} blocks",
                cidr.original,
                prefix.len,
                mask.map_or("?".to_string(), |m| m.to_string())
            ),
            format!("the pool's {} maskSize must equal the podCIDRs' prefix length ({})", prefix.family, prefix.len),
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    //! Expected figures worked out by hand from the objects: block sizes, which addresses are
    //! usable (ENI lists its blocks with allowFirstIP/allowLastIP), which pods run inside them.
    use super::*;
    use crate::allocator::analyze;
    use serde_json::{Value, json};

    fn config(data: Value) -> Value {
        json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data})
    }

    fn node(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name}, "spec": spec})
    }

    fn pool(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec})
    }

    fn pod(name: &str, phase: &str, ips: &[&str]) -> Value {
        let ips: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "d"}, "spec": {"nodeName": "n1"}, "status": {"phase": phase, "podIPs": ips}})
    }

    fn eni_node(name: &str, pool: &str, cidrs: &[&str]) -> Value {
        node(name, json!({"ipam": {"pools": {"allocated": [{"pool": pool, "cidrs": cidrs, "allowFirstIP": true, "allowLastIP": true}]}}}))
    }

    /// ENI: n1 lists 10.1.0.10/32, 10.1.0.32/28 and fd00::/80 under `default`, n2 the same /28 and
    /// 10.1.0.11/32; n3 lists `x` (no flags, a /30) and `blue`, which has a CiliumPodIPPool.
    fn eni_snapshot(mode: &str) -> Snapshot {
        Snapshot::from_objects(vec![
            config(json!({"ipam": mode})),
            pool("blue", json!({"ipv4": {"cidrs": ["10.2.0.0/16"], "maskSize": 24}})),
            eni_node("n1", "default", &["10.1.0.10/32", "10.1.0.32/28", "fd00::/80"]),
            eni_node("n2", "default", &["10.1.0.32/28", "10.1.0.11/32"]),
            node(
                "n3",
                json!({"ipam": {"pools": {"allocated": [{"pool": "x", "cidrs": ["10.3.0.0/30"]}, {"pool": "blue", "cidrs": ["10.2.0.0/24"]}]}}}),
            ),
            pod("in-28", "Running", &["10.1.0.33", "fd00::5"]),
            pod("in-32", "Running", &["10.1.0.10"]),
            pod("done", "Succeeded", &["10.1.0.34"]),
            pod("outside", "Running", &["10.9.9.9"]),
        ])
    }

    /// (family, blocks, allocated addresses, used, idle, nodes) of one family of a mode pool.
    type Figures = (Family, u128, u128, Option<u128>, Option<u128>, usize);

    fn figures(report: &ModePoolReport) -> Vec<Figures> {
        let n = |c: Count| c.to_u128().unwrap();
        report
            .families
            .iter()
            .map(|f| (f.family, n(f.allocated_blocks), n(f.allocated_addresses), f.used_addresses.map(n), f.idle_addresses.map(n), f.nodes))
            .collect()
    }

    #[test]
    fn the_modes_own_pools_count_distinct_blocks_and_their_use() {
        let snap = eni_snapshot("eni");
        let ipam = analyze(&snap).ipam;
        assert_eq!(ipam.mode, "eni");
        let names: Vec<&str> = ipam.mode_pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["default", "x"], "blue has a CiliumPodIPPool");
        // default, IPv4: three distinct blocks (the /28 twice listed counts once): 1 + 16 + 1
        // addresses, both ends usable; 10.1.0.33 and 10.1.0.10 run there (not the finished pod).
        // IPv6: one /80 of 2^48 addresses, fd00::5 in use.
        assert_eq!(
            figures(&ipam.mode_pools[0]),
            [(Family::Ipv4, 3, 18, Some(2), Some(16), 2), (Family::Ipv6, 1, 1 << 48, Some(1), Some((1 << 48) - 1), 1),]
        );
        // x: no allow flags, so a /30 has 2 usable addresses; nothing runs there.
        assert_eq!(figures(&ipam.mode_pools[1]), [(Family::Ipv4, 1, 2, Some(0), Some(2), 1)]);
        assert!(ipam.mode_pools[0].capacity_unknown.contains("AWS"), "{}", ipam.mode_pools[0].capacity_unknown);
        assert!(!ipam.nothing_to_show);
        assert!(snap.is_mode_pool("default") && snap.is_mode_pool("x"));
        assert!(!snap.is_mode_pool("blue"), "a pool with a CiliumPodIPPool");
        // Another mode's pool says which mode keeps the capacity.
        let crd = analyze(&eni_snapshot("crd")).ipam;
        assert!(crd.mode_pools[1].capacity_unknown.contains("IPAM mode crd"), "{}", crd.mode_pools[1].capacity_unknown);
    }

    #[test]
    fn multi_pool_and_unknown_modes_have_no_mode_pools() {
        let multi = eni_snapshot("multi-pool");
        let ipam = analyze(&multi).ipam;
        assert_eq!((ipam.mode.as_str(), ipam.mode_pools.len()), ("multi-pool", 0));
        assert!(!multi.is_mode_pool("default"), "in multi-pool mode a pool without a CiliumPodIPPool is missing");
        let unknown = Snapshot::from_objects(vec![eni_node("n1", "default", &["10.1.0.10/32"])]);
        let ipam = analyze(&unknown).ipam;
        assert_eq!((ipam.mode.as_str(), ipam.mode_pools.len()), ("unknown", 0));
        assert!(!unknown.is_mode_pool("default"));
    }

    #[test]
    fn pod_cidrs_per_node_sum_both_families() {
        let snap = Snapshot::from_objects(vec![
            config(json!({"ipam": "cluster-pool"})),
            node("n1", json!({"ipam": {"podCIDRs": ["10.5.0.0/24", "fd05::/120"]}})),
            node("n2", json!({"ipam": {}})),
            node("n3", json!({"ipam": {"podCIDRs": ["10.5.1.0/24"]}})),
            pod("a", "Running", &["10.5.0.3", "fd05::3"]),
            pod("b", "Running", &["10.5.0.4", "10.7.0.1"]),
        ]);
        let ipam = analyze(&snap).ipam;
        let rows: Vec<(&str, Vec<&str>, Option<u128>)> = ipam
            .pod_cidrs
            .iter()
            .map(|r| (r.node.as_str(), r.pod_cidrs.iter().map(String::as_str).collect(), r.used_addresses.map(|c| c.to_u128().unwrap())))
            .collect();
        assert_eq!(rows, [("n1", vec!["10.5.0.0/24", "fd05::/120"], Some(3)), ("n3", vec!["10.5.1.0/24"], Some(0))], "n2 has no podCIDRs");
        assert!(!ipam.nothing_to_show);
    }

    #[test]
    fn nothing_to_show_only_in_another_mode_with_nothing_in_it() {
        let show = |objects: Vec<Value>| analyze(&Snapshot::from_objects(objects)).ipam.nothing_to_show;
        assert!(show(vec![config(json!({"ipam": "azure"}))]));
        assert!(!show(vec![config(json!({"ipam": "multi-pool"}))]), "multi-pool with no pools yet");
        assert!(!show(vec![config(json!({"ipam": "azure"})), pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}))]));
        assert!(!show(vec![config(json!({"ipam": "azure"})), eni_node("n1", "default", &["10.1.0.10/32"])]));
        assert!(!show(vec![config(json!({"ipam": "azure"})), node("n1", json!({"ipam": {"podCIDRs": ["10.5.0.0/24"]}}))]));
    }

    /// The cluster-pool-migration problems as (severity, object).
    fn migration(objects: Vec<Value>) -> Vec<(Severity, String)> {
        let report = analyze(&Snapshot::from_objects(objects));
        report.problems.iter().filter(|p| p.kind == ProblemKind::ClusterPoolMigration).map(|p| (p.severity, p.object.clone())).collect()
    }

    fn pod_cidr_node(name: &str, cidrs: &[&str]) -> Value {
        node(name, json!({"ipam": {"podCIDRs": cidrs}}))
    }

    /// `default` covers 10.5.0.0/16 in /24 blocks and fd05::/112 in /120 blocks; `other` (listed
    /// after it) covers 10.6.0.0/16.
    fn pools() -> Vec<Value> {
        vec![
            pool(
                "default",
                json!({"ipv4": {"cidrs": ["10.5.0.0/16"], "maskSize": 24}, "ipv6": {"cidrs": ["fd05::/112"], "maskSize": 120}}),
            ),
            pool("other", json!({"ipv4": {"cidrs": ["10.6.0.0/16"], "maskSize": 24}})),
        ]
    }

    #[test]
    fn migration_prerequisites_per_pod_cidr() {
        let mut objects = pools();
        objects.extend([
            config(json!({"ipam": "cluster-pool"})),
            pod_cidr_node("good", &["10.5.0.0/24", "fd05::/120"]),
            pod_cidr_node("outside", &["10.6.0.0/24"]),
            pod_cidr_node("mask", &["10.5.1.0/25"]),
            pod_cidr_node("bogus", &["10.5.2.0/33"]),
            node("none", json!({"ipam": {}})),
        ]);
        let error = |n: &str| (Severity::Error, format!("CiliumNode/{n}"));
        // Being prepared (cluster-pool mode, the default pool exists): no warning about the flag.
        assert_eq!(migration(objects), [error("bogus"), error("mask"), error("outside")]);
    }

    #[test]
    fn migration_under_way_needs_the_flag_and_the_pool() {
        let cm = "ConfigMap/kube-system/cilium-config".to_string();
        // Multi-pool mode, flag not set, default pool `main` missing: both said, with the number
        // of nodes that still hold podCIDRs (one: `none` has none).
        let objects = vec![
            config(json!({"ipam": "multi-pool", "ipam-default-ip-pool": "main"})),
            pod_cidr_node("n1", &["10.5.0.0/24"]),
            node("none", json!({"ipam": {}})),
        ];
        let report = analyze(&Snapshot::from_objects(objects.clone()));
        let messages: Vec<&str> =
            report.problems.iter().filter(|p| p.kind == ProblemKind::ClusterPoolMigration).map(|p| p.message.as_str()).collect();
        assert!(messages.iter().all(|m| m.contains("1 node(s)")), "{messages:?}");
        assert_eq!(migration(objects), [(Severity::Error, "CiliumPodIPPool/main".to_string()), (Severity::Warning, cm.clone())]);
        // Flag set and every podCIDR covered: nothing to say.
        let mut ready = pools();
        ready.extend([
            config(json!({"ipam": "multi-pool", "enable-cluster-pool-to-multi-pool-migration": "true"})),
            pod_cidr_node("n1", &["10.5.0.0/24", "fd05::/120"]),
        ]);
        assert_eq!(migration(ready), []);
        // Every podCIDR covered but the flag not set: only the warning.
        let mut half = pools();
        half.extend([config(json!({"ipam": "multi-pool"})), pod_cidr_node("n1", &["10.5.0.0/24"])]);
        assert_eq!(migration(half), [(Severity::Warning, cm)]);
    }

    #[test]
    fn no_migration_problem_where_no_migration_is_prepared() {
        // Cluster-pool mode without the default pool: not being prepared.
        assert_eq!(migration(vec![config(json!({"ipam": "cluster-pool"})), pod_cidr_node("n1", &["10.5.0.0/24"])]), []);
        // ENI nodes with podCIDRs, no pool: the mode never migrates.
        assert_eq!(migration(vec![config(json!({"ipam": "eni"})), pod_cidr_node("n1", &["10.5.0.0/24"])]), []);
        // Multi-pool with no node left holding podCIDRs: the migration is over (or never was).
        assert_eq!(
            migration(vec![config(json!({"ipam": "multi-pool", "ipam-default-ip-pool": "main"})), node("none", json!({"ipam": {}}))]),
            []
        );
        // No ConfigMap: the mode is unknown.
        assert_eq!(migration(vec![pod_cidr_node("n1", &["10.5.0.0/24"])]), []);
    }
}
