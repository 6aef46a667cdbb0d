//! Fleet checks: what goes wrong between clusters that form (or will form) one Cilium Cluster
//! Mesh (docs/fleet.md, docs/design/problems.md). Each cluster is checked alone by `analyze`;
//! these checks compare clusters: pod CIDRs must not overlap across a mesh, `cluster-name`
//! and `cluster-id` must be unique, and each peer must route every pool CIDR (`routing.rs`).
//! Ranges are compared as intervals, never address by address.

use super::problem::{Problem, ProblemKind, Severity, pool_object};
use crate::model::{Addr, Prefix, Snapshot};
use serde::Serialize;
use std::collections::BTreeMap;

/// One cluster of a fleet: its name (cilium-config `cluster-name`, the context or the input's
/// file name) and what was read from it.
#[derive(Clone, Copy)]
pub struct Member<'a> {
    pub name: &'a str,
    pub snapshot: &'a Snapshot,
}

/// A problem between clusters: the clusters it concerns, then the problem's own fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FleetProblem {
    pub clusters: Vec<String>,
    #[serde(flatten)]
    pub problem: Problem,
}

/// How many nodes, pods or addresses a message names before it says "and N more".
const EXAMPLES: usize = 3;

/// Every fleet problem, most severe first.
pub fn check(members: &[Member]) -> Vec<FleetProblem> {
    let mut out = Vec::new();
    let members = distinct(members, &mut out);
    identities(&members, &mut out);
    for (i, a) in members.iter().enumerate() {
        for b in &members[i + 1..] {
            overlapping_cidrs(a, b, &mut out);
            shared_pod_ips(a, b, &mut out);
            unrouted_pool_cidrs(a, b, &mut out);
            unrouted_pool_cidrs(b, a, &mut out);
        }
    }
    sort(&mut out);
    out
}

/// Fleet problems most severe first, then by kind, clusters and message.
pub fn sort(problems: &mut [FleetProblem]) {
    problems.sort_by(|x, y| {
        (x.problem.severity, x.problem.kind, &x.clusters, &x.problem.message).cmp(&(
            y.problem.severity,
            y.problem.kind,
            &y.clusters,
            &y.problem.message,
        ))
    });
}

/// The members that are different clusters: of contexts that reach the same API server (two
/// names for one cluster, common with `--all-contexts`) the first stands for the others, and a
/// warning says so; compared with itself, a cluster would overlap itself everywhere.
fn distinct<'a>(members: &[Member<'a>], out: &mut Vec<FleetProblem>) -> Vec<Member<'a>> {
    let mut by_server: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut kept = Vec::new();
    for member in members {
        let origin = &member.snapshot.origin;
        match origin.server.as_deref().filter(|_| origin.kind == "cluster") {
            Some(server) => {
                let names = by_server.entry(server).or_default();
                if names.is_empty() {
                    kept.push(*member);
                }
                names.push(member.name);
            }
            None => kept.push(*member),
        }
    }
    for (server, names) in by_server.into_iter().filter(|(_, names)| names.len() > 1) {
        out.push(same_cluster(server, &names));
    }
    kept
}

/// The warning that contexts `names` reach one API server: one cluster, shown once as the first.
pub fn same_cluster(server: &str, names: &[&str]) -> FleetProblem {
    let message = format!(
        "contexts {} reach the same API server {server}: one cluster, read and compared with the others once (as {})",
        names.join(", "),
        names[0]
    );
    let action = "name each cluster once in --context (or drop the duplicate context from the kubeconfig)";
    let clusters = names.iter().map(|n| n.to_string()).collect();
    FleetProblem { clusters, problem: Problem::warning(ProblemKind::FleetSameCluster, format!("Cluster/{server}"), message, action) }
}

/// The warning that contexts `names` reach servers whose `cilium-config` has one `cluster-id` and
/// `cluster-name` (`identity`): one cluster, shown once as the first.
pub fn same_cluster_identity(identity: (&str, &str), names: &[&str]) -> FleetProblem {
    let (id, name) = identity;
    let mut same = same_cluster(name, names);
    same.problem.message = format!(
        "contexts {} reach clusters with the same cluster-id {id} and cluster-name {name} (another URL of one API server): one cluster, read and compared with the others once (as {})",
        names.join(", "),
        names[0]
    );
    same.problem.action.push_str("; if these are two clusters, give each its own cluster-id and cluster-name");
    same
}

fn push(out: &mut Vec<FleetProblem>, clusters: Vec<String>, severity: Severity, kind: ProblemKind, object: String, text: (String, &str)) {
    let (message, action) = text;
    out.push(FleetProblem { clusters, problem: Problem::new(severity, kind, object, message, action) });
}

/// A `cilium-config` key that must differ between the clusters of a mesh: its problem kind, its
/// name, its value (absent: the agent's default) and the action.
type IdentityKey = (ProblemKind, &'static str, fn(&crate::model::ipam::IpamConfig) -> &str, &'static str);

/// Two clusters with the same `cluster-name` or `cluster-id` (absent keys are the agent's
/// defaults, `default` and 0); clusters whose cilium-config was not read are not compared.
fn identities(members: &[Member], out: &mut Vec<FleetProblem>) {
    let keys: [IdentityKey; 2] = [
        (
            ProblemKind::FleetDuplicateClusterName,
            "cluster-name",
            |c| c.cluster_name.as_deref().unwrap_or("default"),
            "give each cluster its own cluster-name (Helm cluster.name) before connecting them; agents and the operator pick it up on restart",
        ),
        (
            ProblemKind::FleetDuplicateClusterId,
            "cluster-id",
            |c| c.cluster_id.as_deref().unwrap_or("0"),
            "give each cluster its own cluster-id from 1 to 255 (Helm cluster.id; 511 with maxConnectedClusters), then restart its agents: identities and connections are keyed by it",
        ),
    ];
    for (kind, key, value, action) in keys {
        let mut by_value: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for member in members {
            if let Some(config) = &member.snapshot.ipam {
                by_value.entry(value(config)).or_default().push(member.name.to_string());
            }
        }
        for (value, clusters) in by_value.into_iter().filter(|(_, c)| c.len() > 1) {
            let message = format!("clusters {} all have {key} {value:?}: a Cluster Mesh cannot tell them apart", clusters.join(", "));
            push(out, clusters, Severity::Error, kind, "ConfigMap/cilium-config".to_string(), (message, action));
        }
    }
}

/// Every valid pool CIDR of a cluster, with its pool.
fn pool_cidrs(snapshot: &Snapshot) -> Vec<(Prefix, &str)> {
    let cidrs =
        snapshot.pools.iter().flat_map(|p| p.families.iter().flat_map(move |f| f.cidrs.iter().map(move |c| (c.prefix, p.name.as_str()))));
    cidrs.filter_map(|(prefix, pool)| Some((prefix?, pool))).collect()
}

/// The nodes holding a block that overlaps `range` (first..=last, of the range's family).
fn nodes_holding(snapshot: &Snapshot, range: &Prefix) -> Vec<String> {
    let blocks =
        snapshot.nodes.iter().flat_map(|n| n.allocated.iter().flat_map(move |a| a.blocks.iter().map(move |b| (b.prefix, &n.name))));
    let mut nodes: Vec<String> = blocks.filter(|(b, _)| b.is_some_and(|b| b.overlaps(range))).map(|(_, n)| n.to_string()).collect();
    nodes.dedup();
    nodes
}

/// Pool CIDRs of two clusters that overlap: an error when both hold blocks in the overlap (their
/// pods can get the same address), else a warning (the next block handed out may collide).
fn overlapping_cidrs(a: &Member, b: &Member, out: &mut Vec<FleetProblem>) {
    let theirs = pool_cidrs(b.snapshot);
    for (mine, pool_a) in pool_cidrs(a.snapshot) {
        for (other, pool_b) in theirs.iter().filter(|(p, _)| p.overlaps(&mine)) {
            // Two prefixes that overlap: one contains the other, the overlap is the longer one.
            let overlap = if mine.len >= other.len { mine } else { *other };
            let (nodes_a, nodes_b) = (nodes_holding(a.snapshot, &overlap), nodes_holding(b.snapshot, &overlap));
            let both = !nodes_a.is_empty() && !nodes_b.is_empty();
            let mut message =
                format!("pool {pool_a} ({mine}) of cluster {} overlaps pool {pool_b} ({other}) of cluster {} in {overlap}", a.name, b.name);
            if both {
                message.push_str(&format!(
                    "; blocks held there by {}: {} and {}: {}",
                    a.name,
                    examples(&nodes_a),
                    b.name,
                    examples(&nodes_b)
                ));
            }
            let (severity, action) = if both {
                (
                    Severity::Error,
                    "pods of both clusters can have the same address: drain the overlap in one cluster (reserve-range POOL --drain CIDR, then restart the pods on the nodes named) and move that pool to a range no other cluster uses",
                )
            } else {
                (
                    Severity::Warning,
                    "give each cluster of a Cluster Mesh its own pod CIDRs: reserve the overlap in one cluster (reserve-range POOL --drain CIDR) and give that pool a range no other cluster uses",
                )
            };
            push(
                out,
                vec![a.name.to_string(), b.name.to_string()],
                severity,
                ProblemKind::FleetOverlappingCidrs,
                pool_object(pool_a),
                (message, action),
            );
        }
    }
}

/// Pool CIDRs of `a` that `b` does not route natively (`routing.rs`), with the clusters `a`, `b`.
fn unrouted_pool_cidrs(a: &Member, b: &Member, out: &mut Vec<FleetProblem>) {
    let clusters = || vec![a.name.to_string(), b.name.to_string()];
    let found = super::routing::unrouted_by_peer(a.snapshot, b.snapshot, (a.name, b.name));
    out.extend(found.into_iter().map(|problem| FleetProblem { clusters: clusters(), problem }));
}

/// The addresses of running, non-host-network pods, sorted, with the pod's `namespace/name`.
fn pod_ips(snapshot: &Snapshot) -> Vec<(Addr, String)> {
    let pods = snapshot.pods.iter().flatten().filter(|p| !p.host_network && !p.terminated);
    let mut ips: Vec<(Addr, String)> = pods.flat_map(|p| p.ips.iter().map(move |ip| (ip, format!("{}/{}", p.namespace, p.name)))).collect();
    ips.sort();
    ips
}

/// Pod addresses in use in both clusters (one problem per pair of clusters, a few named).
fn shared_pod_ips(a: &Member, b: &Member, out: &mut Vec<FleetProblem>) {
    let (mine, theirs) = (pod_ips(a.snapshot), pod_ips(b.snapshot));
    let (mut i, mut j, mut shared) = (0, 0, Vec::new());
    // A merge of two sorted lists: each address is looked at once.
    while i < mine.len() && j < theirs.len() {
        match mine[i].0.cmp(&theirs[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared.push(format!("{} ({} in {}, {} in {})", mine[i].0, mine[i].1, a.name, theirs[j].1, b.name));
                let ip = mine[i].0;
                while i < mine.len() && mine[i].0 == ip {
                    i += 1;
                }
                while j < theirs.len() && theirs[j].0 == ip {
                    j += 1;
                }
            }
        }
    }
    if shared.is_empty() {
        return;
    }
    let message = format!("{} pod address(es) in use in both clusters {} and {}: {}", shared.len(), a.name, b.name, examples(&shared));
    let action = "traffic to these addresses reaches the wrong pod across the mesh: give the clusters disjoint pod CIDRs (see fleet-overlapping-cidrs) and restart the pods of one side";
    let object = format!("Pod/{}", shared[0].split(' ').nth(1).unwrap_or_default().trim_start_matches('('));
    push(out, vec![a.name.to_string(), b.name.to_string()], Severity::Error, ProblemKind::FleetSharedPodIp, object, (message, action));
}

/// The first few items, then how many more.
fn examples(items: &[String]) -> String {
    let shown = items.iter().take(EXAMPLES).cloned().collect::<Vec<_>>().join(", ");
    match items.len().saturating_sub(EXAMPLES) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn config(name: Option<&str>, id: Option<&str>) -> Value {
        let mut data = json!({"ipam": "multi-pool"});
        if let Some(name) = name {
            data["cluster-name"] = json!(name);
        }
        if let Some(id) = id {
            data["cluster-id"] = json!(id);
        }
        json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data})
    }

    fn pool(name: &str, cidrs: &[&str]) -> Value {
        let (v4, v6): (Vec<&str>, Vec<&str>) = cidrs.iter().partition(|c| !c.contains(':'));
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name},
               "spec": {"ipv4": {"cidrs": v4, "maskSize": 26}, "ipv6": {"cidrs": v6, "maskSize": 120}}})
    }

    fn node(name: &str, pool: &str, blocks: &[&str]) -> Value {
        json!({"kind": "CiliumNode", "metadata": {"name": name}, "spec": {"ipam": {"pools": {"allocated": [{"pool": pool, "cidrs": blocks}]}}}})
    }

    fn pod(name: &str, ip: &str) -> Value {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": {"nodeName": "n"},
               "status": {"phase": "Running", "podIPs": [{"ip": ip}]}})
    }

    fn run(clusters: &[(&str, Vec<Value>)]) -> Vec<FleetProblem> {
        let snapshots: Vec<Snapshot> = clusters.iter().map(|(_, objects)| Snapshot::from_objects(objects.clone())).collect();
        let members: Vec<Member> = clusters.iter().zip(&snapshots).map(|((name, _), snapshot)| Member { name, snapshot }).collect();
        check(&members)
    }

    fn kinds(problems: &[FleetProblem]) -> Vec<(ProblemKind, Severity, Vec<String>)> {
        problems.iter().map(|p| (p.problem.kind, p.problem.severity, p.clusters.clone())).collect()
    }

    #[test]
    fn two_contexts_of_one_api_server_are_one_cluster_said_once() {
        let objects =
            vec![config(Some("a"), Some("1")), pool("p", &["10.1.0.0/16"]), node("n1", "p", &["10.1.0.0/26"]), pod("x", "10.1.0.5")];
        let live = |server: &str| {
            let mut snapshot = Snapshot::from_objects(objects.clone());
            snapshot.origin.kind = "cluster";
            snapshot.origin.server = Some(server.to_string());
            snapshot
        };
        let (one, same, other) = (live("https://10.0.0.1:6443"), live("https://10.0.0.1:6443"), live("https://10.0.0.2:6443"));
        let members = [Member { name: "east", snapshot: &one }, Member { name: "alias", snapshot: &same }];
        // Not compared with itself (no overlap, no duplicate name or id, no shared pod): one warning.
        let problems = check(&members);
        assert_eq!(kinds(&problems), [(ProblemKind::FleetSameCluster, Severity::Warning, vec!["east".into(), "alias".into()])]);
        assert_eq!(problems[0].problem.object, "Cluster/https://10.0.0.1:6443");
        // A third cluster is compared with the first of the two only: each conflict once.
        let members = [members[0], members[1], Member { name: "west", snapshot: &other }];
        let pairs: Vec<Vec<String>> =
            check(&members).into_iter().filter(|p| p.problem.kind != ProblemKind::FleetSameCluster).map(|p| p.clusters).collect();
        assert!(!pairs.is_empty() && pairs.iter().all(|c| c == &["east", "west"]), "{pairs:?}");
        // The same objects read from files are two inputs, not one server.
        let files = Snapshot::from_objects(objects.clone());
        let problems = check(&[Member { name: "a", snapshot: &files }, Member { name: "b", snapshot: &files }]);
        assert!(problems.iter().all(|p| p.problem.kind != ProblemKind::FleetSameCluster), "{problems:?}");
    }

    #[test]
    fn disjoint_clusters_have_no_problem() {
        let problems = run(&[
            ("a", vec![config(Some("a"), Some("1")), pool("p", &["10.1.0.0/16", "fd00:1::/64"]), pod("x", "10.1.0.5")]),
            ("b", vec![config(Some("b"), Some("2")), pool("p", &["10.2.0.0/16", "fd00:2::/64"]), pod("x", "10.2.0.5")]),
        ]);
        assert_eq!(problems, []);
    }

    #[test]
    fn overlap_is_a_warning_until_both_hold_blocks_in_it_ipv6_too() {
        let a = vec![pool("blue", &["fd00:10::/64"]), node("a1", "blue", &["fd00:10::8000/120"])];
        let b = vec![pool("red", &["fd00:10::/112"])];
        let problems = run(&[("a", a.clone()), ("b", b.clone())]);
        let names = vec!["a".to_string(), "b".to_string()];
        assert_eq!(kinds(&problems), [(ProblemKind::FleetOverlappingCidrs, Severity::Warning, names.clone())]);
        assert!(problems[0].problem.message.contains("in fd00:10::/112"), "{}", problems[0].problem.message);
        // a1's block lies in the overlap, so b's block there makes it an error naming both nodes.
        let b = vec![pool("red", &["fd00:10::/112"]), node("b1", "red", &["fd00:10::8000/120"])];
        let problems = run(&[("a", a.clone()), ("b", b)]);
        assert_eq!(kinds(&problems), [(ProblemKind::FleetOverlappingCidrs, Severity::Error, names)]);
        assert!(problems[0].problem.message.contains("a: a1 and b: b1"), "{}", problems[0].problem.message);
        // A block of a outside the overlap does not count.
        let a = vec![pool("blue", &["fd00:10::/64"]), node("a1", "blue", &["fd00:10::1:0/120"])];
        let b = vec![pool("red", &["fd00:10::/112"]), node("b1", "red", &["fd00:10::8000/120"])];
        assert_eq!(run(&[("a", a), ("b", b)])[0].problem.severity, Severity::Warning);
    }

    #[test]
    fn duplicate_identities_count_the_agents_defaults() {
        let problems = run(&[
            ("a", vec![config(Some("mesh"), Some("4"))]),
            ("b", vec![config(Some("mesh"), Some("5"))]),
            ("c", vec![config(None, None)]),
            ("d", vec![config(Some("default"), None)]),
            ("e", vec![]),
        ]);
        let pair = |x: &str, y: &str| vec![x.to_string(), y.to_string()];
        assert_eq!(
            kinds(&problems),
            [
                (ProblemKind::FleetDuplicateClusterName, Severity::Error, pair("a", "b")),
                (ProblemKind::FleetDuplicateClusterName, Severity::Error, pair("c", "d")),
                (ProblemKind::FleetDuplicateClusterId, Severity::Error, pair("c", "d")),
            ]
        );
    }

    #[test]
    fn shared_pod_ips_are_found_once_per_pair_of_clusters() {
        let a = vec![pod("x", "10.1.0.5"), pod("y", "10.1.0.6"), pod("z", "fd00::1")];
        let b = vec![pod("u", "10.1.0.6"), pod("v", "fd00::1"), pod("w", "10.1.0.7")];
        let problems = run(&[("a", a), ("b", b)]);
        assert_eq!(kinds(&problems), [(ProblemKind::FleetSharedPodIp, Severity::Error, vec!["a".into(), "b".into()])]);
        let message = &problems[0].problem.message;
        assert!(message.starts_with("2 pod address(es)") && message.contains("10.1.0.6 (default/y in a, default/u in b)"), "{message}");
        assert_eq!(problems[0].problem.object, "Pod/default/y");
    }

    proptest::proptest! {
        /// The overlap check flags a pair of clusters exactly when some address lies in a pool
        /// CIDR of both (compared here address by address, on small prefixes).
        #[test]
        fn overlaps_match_a_brute_force(a in proptest::collection::vec((0u32..32, 25u8..=30), 1..4), b in proptest::collection::vec((0u32..32, 25u8..=30), 1..4)) {
            // Unaligned spellings (10.0.0.8/25) are masked: prefixes of every size nest and overlap.
            let cidr = |(n, len): &(u32, u8)| format!("10.0.0.{}/{len}", n * 8);
            let (ca, cb): (Vec<String>, Vec<String>) = (a.iter().map(cidr).collect(), b.iter().map(cidr).collect());
            let set = |cidrs: &[String]| -> std::collections::BTreeSet<u128> {
                cidrs.iter().flat_map(|c| { let p = Prefix::parse(c).unwrap(); p.first()..=p.last() }).collect()
            };
            let brute = !set(&ca).is_disjoint(&set(&cb));
            let pools = |cidrs: &[String]| cidrs.iter().enumerate().map(|(i, c)| pool(&format!("p{i}"), &[c.as_str()])).collect::<Vec<_>>();
            let found = run(&[("a", pools(&ca)), ("b", pools(&cb))]).iter().any(|p| p.problem.kind == ProblemKind::FleetOverlappingCidrs);
            proptest::prop_assert_eq!(found, brute);
        }
    }
}
