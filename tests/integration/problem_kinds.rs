//! Problem kinds on small hand-made clusters (docs/design/problems.md): each input that must raise
//! a kind raises exactly it, on the right object with the right severity, and its near misses —
//! the inputs a careless check would also flag — raise nothing. Read through `check -o json`.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A healthy cluster: pools `a` (10.1.0.0/24) and `b` (10.2.0.0/24) in /26 blocks, node n1 holds
/// a's first block, n2 its second, a pod on n1 uses an address of n1's block.
fn base() -> Vec<Value> {
    vec![
        pool("a", &["10.1.0.0/24"]),
        pool("b", &["10.2.0.0/24"]),
        node("n1", &[("a", &["10.1.0.0/26"])]),
        node("n2", &[("a", &["10.1.0.64/26"])]),
        pod("p1", "n1", "10.1.0.5", "Running", false),
    ]
}

fn pool(name: &str, cidrs: &[&str]) -> Value {
    json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name},
           "spec": {"ipv4": {"cidrs": cidrs, "maskSize": 26}}})
}

fn node(name: &str, allocated: &[(&str, &[&str])]) -> Value {
    let allocated: Vec<Value> = allocated.iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect();
    json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
           "spec": {"ipam": {"pools": {"allocated": allocated}}}})
}

fn pod(name: &str, node: &str, ip: &str, phase: &str, host_network: bool) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"nodeName": node, "hostNetwork": host_network, "containers": [{"name": "c", "image": "i"}]},
           "status": {"phase": phase, "podIP": ip, "podIPs": [{"ip": ip}]}})
}

/// Replaces the object of the same kind and name, or adds it.
fn with(mut objects: Vec<Value>, object: Value) -> Vec<Value> {
    objects.retain(|o| o["kind"] != object["kind"] || o["metadata"]["name"] != object["metadata"]["name"]);
    objects.push(object);
    objects
}

/// (kind, object, severity) of every problem `check` reports, and its exit code.
fn problems(objects: &[Value]) -> (BTreeSet<(String, String, String)>, i32) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.json");
    std::fs::write(&file, serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": objects})).unwrap()).unwrap();
    let out = cargo_bin_cmd!("kubectl-ciliumpool").args(["check", "-o", "json", "-f"]).arg(&file).output().unwrap();
    let code = out.status.code().unwrap();
    assert!(code == 0 || code == 1, "check failed ({code}): {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let set = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap().to_string(),
                p["object"].as_str().unwrap().to_string(),
                p["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (set, code)
}

fn one(kind: &str, object: &str, severity: &str) -> BTreeSet<(String, String, String)> {
    BTreeSet::from([(kind.to_string(), object.to_string(), severity.to_string())])
}

#[test]
fn the_base_cluster_is_clean() {
    assert_eq!(problems(&base()), (BTreeSet::new(), 0));
}

#[test]
fn block_multiple_owners() {
    let shared = with(base(), node("n2", &[("a", &["10.1.0.64/26", "10.1.0.0/26"])]));
    assert_eq!(problems(&shared), (one("block-multiple-owners", "block/10.1.0.0/26", "error"), 1));
    // Two nodes listing the block under different pools still share it.
    let across_pools = with(base(), node("n2", &[("a", &["10.1.0.64/26"]), ("b", &["10.1.0.0/26"])]));
    assert!(problems(&across_pools).0.contains(&("block-multiple-owners".into(), "block/10.1.0.0/26".into(), "error".into())));
    // One node listing its block twice is no second owner.
    let twice = with(base(), node("n1", &[("a", &["10.1.0.0/26", "10.1.0.0/26"])]));
    assert_eq!(problems(&twice), (BTreeSet::new(), 0));
    // Neighbouring blocks are not the same block.
    let neighbours = with(base(), node("n2", &[("a", &["10.1.0.64/26", "10.1.0.128/26"])]));
    assert_eq!(problems(&neighbours), (BTreeSet::new(), 0));
}

#[test]
fn overlapping_pools() {
    // b's CIDR inside a's: reported once, on the pool listed first.
    let inside = with(base(), pool("b", &["10.1.0.128/25"]));
    assert_eq!(problems(&inside), (one("overlapping-pools", "CiliumPodIPPool/a", "error"), 1));
    // Adjacent, not overlapping.
    let adjacent = with(base(), pool("b", &["10.1.1.0/24"]));
    assert_eq!(problems(&adjacent), (BTreeSet::new(), 0));
    // Two CIDRs of one pool overlapping: the operator rejects that pool (invalid-pool; its blocks
    // become orphans), it is no overlap between pools.
    let own = with(base(), pool("a", &["10.1.0.0/24", "10.1.0.0/25"]));
    let (found, code) = problems(&own);
    assert_eq!(code, 1);
    assert!(found.contains(&("invalid-pool".into(), "CiliumPodIPPool/a".into(), "error".into())), "{found:?}");
    assert!(!found.iter().any(|(kind, _, _)| kind == "overlapping-pools"), "{found:?}");
    // Same integers, other family: an IPv6 pool over ::a01:0/120 does not overlap 10.1.0.0/24.
    let v6 = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "b"},
                    "spec": {"ipv6": {"cidrs": ["::a01:0/120"], "maskSize": 122}}});
    assert_eq!(problems(&with(base(), v6)), (BTreeSet::new(), 0));
}

#[test]
fn pod_ip_foreign_block() {
    // On n1 with an address of n2's block.
    let foreign = with(base(), pod("p2", "n1", "10.1.0.70", "Running", false));
    assert_eq!(problems(&foreign), (one("pod-ip-foreign-block", "Pod/default/p2", "error"), 1));
    // Pending pods hold their addresses too.
    let pending = with(base(), pod("p2", "n1", "10.1.0.70", "Pending", false));
    assert_eq!(problems(&pending).0, one("pod-ip-foreign-block", "Pod/default/p2", "error"));
    // Not when the pod is host-network or has finished, nor in its own node's block.
    for quiet in [
        pod("p2", "n1", "10.1.0.70", "Running", true),
        pod("p2", "n1", "10.1.0.70", "Succeeded", false),
        pod("p2", "n2", "10.1.0.70", "Running", false),
    ] {
        assert_eq!(problems(&with(base(), quiet.clone())), (BTreeSet::new(), 0), "{quiet}");
    }
    // A block listed by both nodes belongs to both: no foreign block.
    let shared = with(with(base(), node("n1", &[("a", &["10.1.0.0/26", "10.1.0.64/26"])])), pod("p2", "n1", "10.1.0.70", "Running", false));
    assert_eq!(problems(&shared).0, one("block-multiple-owners", "block/10.1.0.64/26", "error"));
}

#[test]
fn pod_ip_unallocated() {
    // In pool a's CIDR, in no node's block.
    let unallocated = with(base(), pod("p2", "n1", "10.1.0.130", "Running", false));
    assert_eq!(problems(&unallocated), (one("pod-ip-unallocated", "Pod/default/p2", "warning"), 1));
    // Outside every pool, or finished: nothing.
    for quiet in [pod("p2", "n1", "192.168.0.1", "Running", false), pod("p2", "n1", "10.1.0.130", "Failed", false)] {
        assert_eq!(problems(&with(base(), quiet.clone())), (BTreeSet::new(), 0), "{quiet}");
    }
    // In a rejected pool's CIDR the operator holds nothing: that is no pool CIDR either.
    let rejected = with(with(base(), pool("b", &["10.2.0.0/24", "10.2.0.0/25"])), pod("p2", "n1", "10.2.0.9", "Running", false));
    assert!(!problems(&rejected).0.iter().any(|(kind, _, _)| kind == "pod-ip-unallocated"));
}

#[test]
fn invalid_node_block() {
    for junk in ["10.1.0.0/33", "not-a-cidr", "10.1.0.0"] {
        let bad = with(base(), node("n1", &[("a", &["10.1.0.0/26", junk])]));
        assert_eq!(problems(&bad), (one("invalid-node-block", "CiliumNode/n1", "error"), 1), "{junk}");
    }
    // A valid block of a pool that does not exist is an orphan, not an invalid block.
    let ghost = with(base(), node("n1", &[("a", &["10.1.0.0/26"]), ("gone", &["10.9.0.0/26"])]));
    assert_eq!(problems(&ghost), (one("orphan-block", "CiliumNode/n1", "warning"), 1));
}

#[test]
fn storage_migration_pending() {
    // The example's CRD, whose status.storedVersions still lists v2alpha1.
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/snapshot/crd-ciliumpodippools.yaml")).unwrap();
    let mut crd: Value = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(crd["status"]["storedVersions"], json!(["v2alpha1", "v2"]));
    let pending = with(base(), crd.clone());
    assert_eq!(problems(&pending), (one("storage-migration-pending", "CustomResourceDefinition/ciliumpodippools.cilium.io", "warning"), 1));
    // Trimmed to [v2]: the migration is finished.
    crd["status"]["storedVersions"] = json!(["v2"]);
    assert_eq!(problems(&with(base(), crd)), (BTreeSet::new(), 0));
}

/// `cilium-config` of a multi-pool cluster in native routing over 10.0.0.0/8 with BPF
/// masquerading; `extra` adds or overrides keys.
fn cilium_config(name: &str, extra: Value) -> Value {
    let mut data = json!({"ipam": "multi-pool", "cluster-name": name, "routing-mode": "native",
                          "ipv4-native-routing-cidr": "10.0.0.0/8", "enable-bpf-masquerade": "true"});
    data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data})
}

fn annotated(mut pool: Value, annotations: Value) -> Value {
    pool["metadata"]["annotations"] = annotations;
    pool
}

#[test]
fn pool_outside_native_routing_cidr() {
    // The base's pools a and b are non-default; b moves outside the native-routing CIDR.
    let outside = || with(with(base(), cilium_config("c", json!({}))), pool("b", &["192.168.0.0/24"]));
    assert_eq!(problems(&outside()), (one("pool-outside-native-routing-cidr", "CiliumPodIPPool/b", "warning"), 1));
    // Inside the CIDR, masquerading off, iptables masquerading, tunnel mode (also when
    // routing-mode is absent: the default is tunnel), only-masquerade-default-pool, the pool's
    // skip annotation: nothing.
    assert_eq!(problems(&with(base(), cilium_config("c", json!({})))), (BTreeSet::new(), 0));
    for extra in [
        json!({"enable-ipv4-masquerade": "false"}),
        json!({"enable-bpf-masquerade": "false"}),
        json!({"routing-mode": "tunnel"}),
        json!({"only-masquerade-default-pool": "true"}),
    ] {
        assert_eq!(problems(&with(outside(), cilium_config("c", extra.clone()))), (BTreeSet::new(), 0), "{extra}");
    }
    let mut absent = cilium_config("c", json!({}));
    absent["data"].as_object_mut().unwrap().remove("routing-mode");
    assert_eq!(problems(&with(outside(), absent)), (BTreeSet::new(), 0));
    let skipping = annotated(pool("b", &["192.168.0.0/24"]), json!({"ipam.cilium.io/skip-masquerade": "true"}));
    assert_eq!(problems(&with(outside(), skipping)), (BTreeSet::new(), 0));
    // The default pool (ipam-default-ip-pool) may lie outside: it is what the CIDR is meant for.
    assert_eq!(problems(&with(outside(), cilium_config("c", json!({"ipam-default-ip-pool": "b"})))), (BTreeSet::new(), 0));
}

/// `check -o json --fleet` over one file per cluster: (kind, clusters, object) of each fleet problem.
fn fleet_problems(clusters: &[Vec<Value>]) -> BTreeSet<(String, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = cargo_bin_cmd!("kubectl-ciliumpool");
    cmd.args(["check", "-o", "json", "--fleet"]);
    for (i, objects) in clusters.iter().enumerate() {
        let file = dir.path().join(format!("cluster{i}.json"));
        std::fs::write(&file, serde_json::to_string(&json!({"apiVersion": "v1", "kind": "List", "items": objects})).unwrap()).unwrap();
        cmd.arg("-f").arg(&file);
    }
    let out = cmd.output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let fleet = doc["fleetProblems"].as_array().unwrap();
    let clusters = |p: &Value| p["clusters"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect::<Vec<_>>().join(",");
    fleet.iter().map(|p| (p["kind"].as_str().unwrap().to_string(), clusters(p), p["object"].as_str().unwrap().to_string())).collect()
}

#[test]
fn fleet_unrouted_pool_cidr() {
    let id = |mut extra: Value, id: &str| {
        extra["cluster-id"] = json!(id);
        extra
    };
    let east = |extra: Value| vec![cilium_config("east", id(extra, "1")), pool("blue", &["10.1.0.0/24"])];
    let west = |extra: Value| vec![cilium_config("west", id(extra, "2")), pool("green", &["10.2.0.0/24"])];
    let narrow = |cidr: &str| json!({"ipv4-native-routing-cidr": cidr});
    // Each cluster's native-routing CIDR covers only its own pools: each peer masquerades the other's.
    let found = fleet_problems(&[east(narrow("10.1.0.0/16")), west(narrow("10.2.0.0/16"))]);
    let expected = |pairs: &[(&str, &str)]| -> BTreeSet<(String, String, String)> {
        pairs.iter().map(|(c, o)| ("fleet-unrouted-pool-cidr".to_string(), c.to_string(), o.to_string())).collect()
    };
    assert_eq!(found, expected(&[("east,west", "CiliumPodIPPool/blue"), ("west,east", "CiliumPodIPPool/green")]));
    // One supernet in both: routed. Tunnel mode on one side, or no native-routing CIDR: not compared.
    assert_eq!(fleet_problems(&[east(json!({})), west(json!({}))]), BTreeSet::new());
    let tunnel = json!({"ipv4-native-routing-cidr": "10.2.0.0/16", "routing-mode": "tunnel"});
    assert_eq!(fleet_problems(&[east(narrow("10.1.0.0/16")), west(tunnel)]), BTreeSet::new());
    assert_eq!(fleet_problems(&[east(narrow("10.1.0.0/16")), west(narrow(""))]), BTreeSet::new());
}

#[test]
fn routing_checks_read_a_sysdump_as_a_dump() {
    // `cilium sysdump` writes the ConfigMap without apiVersion/kind and pools as a typed list; the
    // file names say what they hold. The same objects as a plain List raise the same problem.
    let config = cilium_config("c", json!({}));
    let pools = vec![pool("a", &["10.1.0.0/24"]), pool("b", &["192.168.0.0/24"])];
    let dir = tempfile::tempdir().unwrap();
    let sysdump = dir.path().join("cilium-sysdump-20251120-093000");
    std::fs::create_dir(&sysdump).unwrap();
    let mut bare = config.clone();
    bare.as_object_mut().unwrap().retain(|k, _| k != "apiVersion" && k != "kind");
    std::fs::write(sysdump.join("cilium-configmap-20251120-093000.yaml"), serde_json::to_string(&bare).unwrap()).unwrap();
    std::fs::write(sysdump.join("ciliumpodippools-20251120-093000.yaml"), serde_json::to_string(&json!({"items": pools})).unwrap())
        .unwrap();
    let out = cargo_bin_cmd!("kubectl-ciliumpool").args(["check", "-o", "json", "-f"]).arg(&sysdump).output().unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    let kinds: BTreeSet<(&str, &str)> = doc["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] != "input-incomplete")
        .map(|p| (p["kind"].as_str().unwrap(), p["object"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, BTreeSet::from([("pool-outside-native-routing-cidr", "CiliumPodIPPool/b")]));
    let plain = problems(&[config, pools[0].clone(), pools[1].clone()]).0;
    assert!(plain.contains(&("pool-outside-native-routing-cidr".into(), "CiliumPodIPPool/b".into(), "warning".into())), "{plain:?}");
}
