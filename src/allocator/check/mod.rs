//! The problem catalog's checks: one function per check, each adding what it finds to one
//! [`Problems`] collector. The checks of a pool's own spec are called by the analysis while it
//! works out which CIDRs and ranges count (so figures and problems follow one rule); the
//! cluster-wide checks run on the finished pool and node reports ([`cluster`]).
//! docs/design/problems.md describes each kind.

mod nodes;
mod pods;
mod pools;
mod problems;
mod spec;

pub use pods::{UnlistedPodIps, pod_ips};
pub use spec::{cidr_smaller_than_block, invalid_reserved_range, ipv6_too_many_blocks, pool_issues, pool_rejected, unmatched_pool_entries};

use super::blocks::ListedBlocks;
use super::count::Count;
use super::problem::{Problem, ProblemKind, Severity, node_object, pool_object};
use super::report::{NodeReport, PoolReport};
use crate::model::crd::POOL_CRD_NAME;
use crate::model::{CaveatKind, Family, Snapshot};
use nodes::{blocks_with_several_owners, node_blocks, split_pool_entries};
use pools::{drained_cidr, exhaustion, orphan_blocks, overlapping_pools, reservations};
pub use problems::{NEARLY_EXHAUSTED, Problems};

/// The cluster-wide checks of the snapshot alone: what CiliumNodes list, and the CRD. The
/// analysis runs them on whichever of its threads is done first.
pub fn listings(snapshot: &Snapshot, listed: &ListedBlocks, problems: &mut Problems) {
    node_blocks(snapshot, problems);
    split_pool_entries(snapshot, problems);
    blocks_with_several_owners(listed, problems);
    storage_migration(snapshot, problems);
    unprintable_names(snapshot, problems);
    problems.extend(super::routing::pool_outside_native_routing(snapshot));
}

/// The cluster-wide checks of the finished reports.
pub fn cluster(snapshot: &Snapshot, pools: &[PoolReport], nodes: &[NodeReport], problems: &mut Problems) {
    orphan_blocks(pools, problems);
    overlapping_pools(pools, problems);
    let ignored_by = snapshot.origin.cilium_without_v2_pools();
    for pool in pools {
        for fam in &pool.families {
            for cidr in &fam.cidrs {
                reservations(pool, fam, cidr, ignored_by, problems);
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
        problems.add(Problem::info(ProblemKind::InputIncomplete, object, caveat.message.clone(), action));
    }
}

/// Operator errors on CiliumNodes; stale when the node already has what it asked for
/// (cilium/cilium#28758). The families are never added together: the operator allocates each
/// family of each requested pool on its own, and a dual-stack pool whose IPv6 is exhausted leaves
/// a node with its IPv4 blocks and an error about IPv6 alone.
fn operator_errors(snapshot: &Snapshot, nodes: &[NodeReport], problems: &mut Problems) {
    // One report per node, in the snapshot's order (analyze::node_reports).
    for (node, report) in snapshot.nodes.iter().zip(nodes) {
        let Some(error) = &node.operator_error else { continue };
        let usable = |pool: &str, family: Family| -> Count {
            let entry = report.pools.iter().find(|p| &*p.pool == pool);
            entry.and_then(|p| p.families.iter().find(|f| f.family == family)).map_or(Count::ZERO, |f| f.usable_addresses)
        };
        let needed = |pool: &str, family: Family| node.requested.iter().filter(|r| &*r.pool == pool).map(|r| r.needed(family)).sum::<u64>();
        let short = |pool: &str, family: Family| usable(pool, family) < Count::from(needed(pool, family));
        let named = failed_allocations(error);
        // The (pool, family) pairs still short of what the node requests: those the error names,
        // or, for an error worded otherwise, every family of every requested pool.
        let still_short: Vec<(String, Family)> = if named.is_empty() {
            let requested = node.requested.iter().flat_map(|r| [(r.pool.to_string(), Family::Ipv4), (r.pool.to_string(), Family::Ipv6)]);
            requested.filter(|(pool, family)| short(pool, *family)).collect()
        } else {
            named.into_iter().filter(|(pool, family)| short(pool, *family)).collect()
        };
        // Quoted as it is: every view escapes a message once, where it prints it.
        let (severity, message) = if still_short.is_empty() {
            (Severity::Info, format!("operator error \"{error}\" is likely stale: the node already holds the addresses it requests"))
        } else {
            let short: Vec<String> =
                still_short.iter().map(|(pool, family)| format!("{} addresses of pool {pool}", family.name())).collect();
            (Severity::Warning, format!("operator error \"{error}\" (the node still needs {})", short.join(", ")))
        };
        problems.add(Problem::new(
            severity,
            ProblemKind::StaleOperatorError,
            node_object(&node.name),
            message,
            "check the operator log; a stale error clears on the next successful allocation",
        ));
    }
}

/// The (pool, family) pairs an operator error says it could not allocate, as Cilium 1.20's
/// multi-pool allocator words each failure (`AllocateToNode`, joined by newlines):
/// `failed to allocate ipv6 address for node "n1" from pool "p": pool empty`.
fn failed_allocations(error: &str) -> Vec<(String, Family)> {
    static FAILURE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"failed to allocate (ipv4|ipv6) address for node "[^"]*" from pool "([^"]*)""#).expect("a valid pattern")
    });
    let family = |name: &str| if name == "ipv6" { Family::Ipv6 } else { Family::Ipv4 };
    FAILURE.captures_iter(error).map(|c| (c[2].to_string(), family(&c[1]))).collect()
}

/// The CRD still lists v2alpha1 in status.storedVersions.
fn storage_migration(snapshot: &Snapshot, problems: &mut Problems) {
    if let Some(crd) = &snapshot.crd
        && crd.storage_migration_pending()
    {
        problems.add(Problem::warning(ProblemKind::StorageMigrationPending, format!("CustomResourceDefinition/{POOL_CRD_NAME}"), format!("status.storedVersions is {:?}: objects may still be stored as v2alpha1", crd.stored_versions.clone().unwrap_or_default()), "wait for Cilium's operator to migrate storage (main branch, for 1.21), or run kubectl ciliumpool migrate, then migrate --finalize; see migrate --status"));
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
        problems.add(
            Problem::warning(
                ProblemKind::UnprintableName,
                pool_object(&pool.name),
                message,
                "rename the pool: a Kubernetes object name (lowercase letters, digits, '-', '.'); -o json shows the exact name",
            )
            .in_pool(Some(&pool.name)),
        );
    }
    if let Some(config) = snapshot.ipam.as_ref().filter(|c| unprintable(c.mode.name())) {
        let message = format!("the IPAM mode (key ipam) holds control or bidirectional characters: {LEFT_OUT}");
        problems.add(Problem::warning(
            ProblemKind::UnprintableName,
            format!("ConfigMap/{}", config.source),
            message,
            "set ipam to a Cilium IPAM mode (multi-pool, cluster-pool, eni, ...)",
        ));
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
    fn an_operator_error_is_stale_when_the_node_holds_what_it_requests_in_each_family() {
        // Pool p hands out /26 IPv4 blocks (62 usable addresses each) and /122 IPv6 blocks (64).
        // Every node shows an operator error and requests (IPv4, IPv6) addresses; the operator
        // allocates each family on its own, so the families never add up.
        let with_request = |name: &str, blocks: &[&str], ipv4: u64, ipv6: u64, error: &str| {
            node(
                name,
                json!({"allocated": [{"pool": "p", "cidrs": blocks}], "requested": [{"pool": "p", "needed": {"ipv4-addrs": ipv4, "ipv6-addrs": ipv6}}]}),
                json!({"ipam": {"operator-status": {"error": error}}}),
            )
        };
        let ipv6_empty =
            r#"ipam-multi-pool-sync allocation failed: failed to allocate ipv6 address for node "d" from pool "p": pool empty"#;
        let objects = vec![
            pool("p", json!({"ipv4": {"cidrs": ["10.0.0.0/23"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})),
            with_request("a", &["10.0.0.0/26"], 2, 0, "allocation failed"), // 2 <= 62: stale
            with_request("b", &["10.0.0.64/26", "10.0.0.128/26"], 100, 0, "allocation failed"), // 100 <= 124: stale
            with_request("c", &["10.0.0.192/26", "fd00::/122"], 40, 30, "allocation failed"), // 40 <= 62, 30 <= 64: stale
            with_request("d", &["10.0.1.0/26"], 10, 10, ipv6_empty),        // no IPv6 block: still needs IPv6
            with_request("e", &["10.0.1.64/26"], 63, 0, "allocation failed"), // 63 > 62: still needs IPv4
            with_request("f", &["10.0.1.128/26", "fd00::40/122"], 10, 10, ipv6_empty), // the IPv6 block came since: stale
        ];
        let problems = found(objects, ProblemKind::StaleOperatorError);
        let severities: Vec<(&str, Severity)> = problems.iter().map(|p| (p.object.as_str(), p.severity)).collect();
        // Sorted most severe first.
        assert_eq!(
            severities,
            [
                ("CiliumNode/d", Severity::Warning),
                ("CiliumNode/e", Severity::Warning),
                ("CiliumNode/a", Severity::Info),
                ("CiliumNode/b", Severity::Info),
                ("CiliumNode/c", Severity::Info),
                ("CiliumNode/f", Severity::Info),
            ]
        );
        // The operator's own words, quoted once; the family and pool still short, named.
        assert_eq!(problems[0].message, format!("operator error \"{ipv6_empty}\" (the node still needs ipv6 addresses of pool p)"));
        assert!(problems[1].message.ends_with("(the node still needs ipv4 addresses of pool p)"), "{}", problems[1].message);
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
