//! Routing checks: pool CIDRs that `cilium-config`'s native-routing CIDR does not cover, in one
//! cluster (its pods' traffic is masqueraded) and across a Cluster Mesh (a peer masquerades its
//! traffic to them). The Cilium facts are in docs/design/cilium.md#routing-and-masquerading.

use super::problem::{Problem, ProblemKind, Severity, pool_object};
use crate::model::ipam::RoutingConfig;
use crate::model::pool::{Pool, PoolFamily};
use crate::model::{Family, IpamMode, Prefix, Snapshot};

/// The pool annotation that makes a pool's new pods skip masquerading (`pkg/annotation/k8s.go`).
pub const SKIP_MASQUERADE_ANNOTATION: &str = "ipam.cilium.io/skip-masquerade";

/// The routing settings of a multi-pool cluster in native routing mode, when its `cilium-config`
/// was read.
fn native_multi_pool(snapshot: &Snapshot) -> Option<&RoutingConfig> {
    let config = snapshot.ipam.as_ref().filter(|c| c.mode == IpamMode::MultiPool)?;
    Some(&config.routing).filter(|r| r.is_native())
}

/// Does the agent's BPF masquerading leave `pool` alone (`shouldSkipMasqForPool` in
/// `pkg/ipam/multipool.go`)? Every non-default pool with `only-masquerade-default-pool`, else a
/// pool annotated `ipam.cilium.io/skip-masquerade: "true"` (exactly that string).
pub fn skips_masquerade(routing: &RoutingConfig, default_pool: &str, pool: &Pool) -> bool {
    (routing.only_masquerade_default_pool && pool.name != default_pool)
        || pool.annotations.get(SKIP_MASQUERADE_ANNOTATION).is_some_and(|v| v == "true")
}

/// The valid CIDRs of a pool family, as written and parsed.
fn cidrs(fam: &PoolFamily) -> impl Iterator<Item = (&str, Prefix)> {
    fam.cidrs.iter().filter_map(|c| Some((c.original.as_str(), c.prefix?)))
}

/// The `cilium-config` keys of a family's masquerading and native-routing CIDR.
fn keys(family: Family) -> (&'static str, &'static str) {
    match family {
        Family::Ipv4 => ("enable-ipv4-masquerade", "ipv4-native-routing-cidr"),
        Family::Ipv6 => ("enable-ipv6-masquerade", "ipv6-native-routing-cidr"),
    }
}

/// `pool-outside-native-routing-cidr`: in native routing mode with BPF masquerading on for a
/// family, a non-default pool's CIDR outside that family's native-routing CIDR, the pool not
/// skipping masquerading. Not with `enable-ip-masq-agent` (its own ConfigMap may exclude more
/// destinations), nor with iptables masquerading (it masquerades only sources in the node's allocation CIDR,
/// which `cilium-config` does not show).
pub fn pool_outside_native_routing(snapshot: &Snapshot) -> Vec<Problem> {
    let mut problems = Vec::new();
    let Some(routing) = native_multi_pool(snapshot).filter(|r| r.bpf_masquerade && !r.ip_masq_agent) else { return problems };
    let default_pool = snapshot.ipam.as_ref().map_or("default", |c| c.default_pool.as_str());
    for pool in snapshot.pools.iter().filter(|p| p.name != default_pool && !skips_masquerade(routing, default_pool, p)) {
        for fam in pool.families.iter().filter(|f| routing.masquerades(f.family)) {
            let Some(native) = routing.native_cidr(fam.family) else { continue };
            let (masquerade_key, native_key) = keys(fam.family);
            for (cidr, _) in cidrs(fam).filter(|(_, p)| !native.contains_prefix(p)) {
                let message = format!(
                    "CIDR {cidr} of pool {} lies outside {native_key} {native} while {masquerade_key} and enable-bpf-masquerade are on and the pool does not skip masquerading (no only-masquerade-default-pool, no {SKIP_MASQUERADE_ANNOTATION}: \"true\"): its pods' traffic to addresses outside {native}, its own pods on other nodes included, leaves with the node's address",
                    pool.name
                );
                let action = "to route the pool natively: make the native-routing CIDR one CIDR that covers every pool (it takes one, cilium/cilium#24000), or annotate the pool ipam.cilium.io/skip-masquerade=\"true\" (or set only-masquerade-default-pool) and have the network route its CIDRs; pods keep the flag they got at creation, so restart them";
                let kind = ProblemKind::PoolOutsideNativeRoutingCidr;
                problems.push(Problem::new(Severity::Warning, kind, pool_object(&pool.name), message, action).in_pool(Some(&pool.name)));
            }
        }
    }
    problems
}

/// `fleet-unrouted-pool-cidr`: a pool CIDR of cluster `a` (named `names.0`) outside the
/// native-routing CIDR of its Cluster Mesh peer `b` (`names.1`), both in native routing mode
/// with a native-routing CIDR of the family, `b` masquerading that family: `b` masquerades its
/// pods' traffic to the pool (BPF and iptables masquerading exclude only the native-routing CIDR
/// as destination).
pub fn unrouted_by_peer(a: &Snapshot, b: &Snapshot, names: (&str, &str)) -> Vec<Problem> {
    let mut out = Vec::new();
    let (Some(mine), Some(theirs)) = (native_multi_pool(a), native_multi_pool(b)) else { return out };
    if theirs.ip_masq_agent {
        return out;
    }
    for pool in &a.pools {
        for fam in &pool.families {
            let (Some(_), Some(native)) = (mine.native_cidr(fam.family), theirs.native_cidr(fam.family)) else { continue };
            if !theirs.masquerades(fam.family) {
                continue;
            }
            let (masquerade_key, native_key) = keys(fam.family);
            for (cidr, _) in cidrs(fam).filter(|(_, p)| !native.contains_prefix(p)) {
                let message = format!(
                    "CIDR {cidr} of pool {} in cluster {} lies outside {native_key} {native} of cluster {} ({masquerade_key} on there): {}'s pods reach it masqueraded, with their node's address",
                    pool.name, names.0, names.1, names.1
                );
                let action = "every pool's CIDRs must be routed between the clusters of a mesh, not only the default pool's (cilium/cilium#39995): choose pool CIDRs under one supernet, set it as the native-routing CIDR of every cluster, and have the network route each pool CIDR to its cluster's nodes";
                out.push(Problem::new(Severity::Warning, ProblemKind::FleetUnroutedPoolCidr, pool_object(&pool.name), message, action));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::fleet::{self, Member};
    use serde_json::{Value, json};

    /// `cilium-config` of a multi-pool cluster in native routing over 10.0.0.0/16 and fd00::/64,
    /// BPF masquerading on; `extra` overrides keys.
    fn config(name: &str, extra: Value) -> Value {
        let mut data = json!({"ipam": "multi-pool", "cluster-name": name, "routing-mode": "native",
            "ipv4-native-routing-cidr": "10.0.0.0/16", "ipv6-native-routing-cidr": "fd00::/64",
            "enable-bpf-masquerade": "true", "enable-ipv6": "true"});
        for (k, v) in extra.as_object().unwrap() {
            data[k] = v.clone();
        }
        json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data})
    }

    fn pool(name: &str, v4: &[&str], v6: &[&str], annotations: Value) -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name, "annotations": annotations},
               "spec": {"ipv4": {"cidrs": v4, "maskSize": 26}, "ipv6": {"cidrs": v6, "maskSize": 120}}})
    }

    /// (kind, object, severity) of the routing problems of one cluster.
    fn found(objects: Vec<Value>) -> Vec<(ProblemKind, String, Severity, String)> {
        pool_outside_native_routing(&Snapshot::from_objects(objects))
            .into_iter()
            .map(|p| (p.kind, p.object, p.severity, p.message))
            .collect()
    }

    /// A default pool inside the CIDR and pool `blue` outside it (10.9.0.0/24, fd01::/120).
    fn cluster(extra: Value, blue_annotations: Value) -> Vec<Value> {
        vec![
            config("a", extra),
            pool("default", &["10.0.0.0/20"], &["fd00::/112"], json!({})),
            pool("blue", &["10.9.0.0/24"], &["fd01::/120"], blue_annotations),
        ]
    }

    #[test]
    fn a_non_default_pool_outside_the_native_routing_cidr_is_masqueraded() {
        let problems = found(cluster(json!({}), json!({})));
        let kinds: Vec<_> = problems.iter().map(|(k, o, s, _)| (*k, o.as_str(), *s)).collect();
        let one = (ProblemKind::PoolOutsideNativeRoutingCidr, "CiliumPodIPPool/blue", Severity::Warning);
        assert_eq!(kinds, [one, one], "one per family");
        let message = &problems[0].3;
        assert!(message.contains("10.9.0.0/24 of pool blue lies outside ipv4-native-routing-cidr 10.0.0.0/16"), "{message}");
        assert!(message.contains("enable-ipv4-masquerade and enable-bpf-masquerade"), "{message}");
        assert!(problems[1].3.contains("fd01::/120 of pool blue lies outside ipv6-native-routing-cidr fd00::/64"), "{}", problems[1].3);
        // The default pool is the one ipam-default-ip-pool names: here blue, and pool `default`
        // is the one outside the CIDRs.
        let extra =
            json!({"ipam-default-ip-pool": "blue", "ipv4-native-routing-cidr": "10.9.0.0/16", "ipv6-native-routing-cidr": "fd01::/64"});
        let renamed = found(cluster(extra, json!({})));
        assert!(renamed.iter().all(|(_, o, _, _)| o == "CiliumPodIPPool/default") && renamed.len() == 2, "{renamed:?}");
    }

    #[test]
    fn no_problem_where_the_pool_is_routed_or_not_masqueraded() {
        let quiet = [
            // Only the family that is masqueraded counts: here IPv6 only, and blue's IPv6 CIDR is inside.
            (json!({"enable-ipv4-masquerade": "false", "ipv6-native-routing-cidr": "fd00::/15"}), json!({})),
            (json!({"enable-ipv4-masquerade": "false", "enable-ipv6-masquerade": "false"}), json!({})),
            (json!({"only-masquerade-default-pool": "true"}), json!({})),
            (json!({}), json!({SKIP_MASQUERADE_ANNOTATION: "true"})),
            (json!({"routing-mode": "tunnel"}), json!({})),
            (json!({"routing-mode": null}), json!({})),
            (json!({"enable-bpf-masquerade": "false"}), json!({})),
            (json!({"enable-ip-masq-agent": "true"}), json!({})),
            (json!({"ipv4-native-routing-cidr": "10.0.0.0/12", "ipv6-native-routing-cidr": "fd00::/15"}), json!({})),
            (json!({"ipam": "cluster-pool"}), json!({})),
        ];
        for (extra, annotations) in quiet {
            let mut objects = cluster(extra.clone(), annotations.clone());
            if extra.get("routing-mode") == Some(&Value::Null) {
                objects[0]["data"].as_object_mut().unwrap().remove("routing-mode");
            }
            assert_eq!(found(objects), [], "{extra} {annotations}");
        }
        // Only "true" skips, as in shouldSkipMasqForPool.
        assert_eq!(found(cluster(json!({}), json!({SKIP_MASQUERADE_ANNOTATION: "yes"}))).len(), 2);
        // Without cilium-config nothing is known.
        assert_eq!(found(cluster(json!({}), json!({}))[1..].to_vec()), []);
    }

    fn mesh(a: Vec<Value>, b: Vec<Value>) -> Vec<(ProblemKind, Vec<String>, String)> {
        let (sa, sb) = (Snapshot::from_objects(a), Snapshot::from_objects(b));
        let members = [Member { name: "a", snapshot: &sa }, Member { name: "b", snapshot: &sb }];
        let problems = fleet::check(&members).into_iter().filter(|p| p.problem.kind == ProblemKind::FleetUnroutedPoolCidr);
        problems.map(|p| (p.problem.kind, p.clusters, p.problem.message)).collect()
    }

    #[test]
    fn a_peer_masquerades_traffic_to_a_pool_outside_its_native_routing_cidr() {
        // a's pool blue (10.1.128.0/20) is inside a's 10.1.0.0/16 but outside b's 10.2.0.0/16, and
        // b's pool green outside a's: one problem each way, naming the pool's cluster first.
        let a = vec![config("a", json!({"ipv4-native-routing-cidr": "10.1.0.0/16"})), pool("blue", &["10.1.128.0/20"], &[], json!({}))];
        let b = vec![config("b", json!({"ipv4-native-routing-cidr": "10.2.0.0/16"})), pool("green", &["10.2.0.0/20"], &[], json!({}))];
        let problems = mesh(a.clone(), b.clone());
        let clusters: Vec<&Vec<String>> = problems.iter().map(|(_, c, _)| c).collect();
        assert_eq!(clusters, [&vec!["a".to_string(), "b".to_string()], &vec!["b".to_string(), "a".to_string()]]);
        assert!(
            problems[0]
                .2
                .contains("10.1.128.0/20 of pool blue in cluster a lies outside ipv4-native-routing-cidr 10.2.0.0/16 of cluster b")
        );
        // One supernet as every cluster's native-routing CIDR: routed.
        let wide = json!({"ipv4-native-routing-cidr": "10.0.0.0/8"});
        assert_eq!(mesh(vec![config("a", wide.clone()), a[1].clone()], vec![config("b", wide), b[1].clone()]), []);
        // Either cluster in tunnel mode, the peer without the family's CIDR or not masquerading it,
        // or with ip-masq-agent: not flagged.
        for extra in [
            json!({"routing-mode": "tunnel"}),
            json!({"ipv4-native-routing-cidr": ""}),
            json!({"enable-ipv4-masquerade": "false"}),
            json!({"enable-ip-masq-agent": "true"}),
        ] {
            let mut b_extra = extra.clone();
            b_extra.as_object_mut().unwrap().entry("ipv4-native-routing-cidr").or_insert(json!("10.2.0.0/16"));
            let b_changed = vec![config("b", b_extra), b[1].clone()];
            let only_a_to_b: Vec<_> = mesh(a.clone(), b_changed).into_iter().filter(|(_, c, _)| c[0] == "a").collect();
            assert_eq!(only_a_to_b, [], "{extra}");
        }
        let tunnel_a = vec![config("a", json!({"ipv4-native-routing-cidr": "10.1.0.0/16", "routing-mode": "tunnel"})), a[1].clone()];
        assert_eq!(mesh(tunnel_a, b.clone()), []);
    }
}
