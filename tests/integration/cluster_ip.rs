//! `ip` against a real kube-apiserver on a multi-pool cluster: CiliumNode and CiliumEndpoint are
//! Cilium v1.20's own CRDs, CiliumPodIPPool is the upstream v2 CRD (the only shape with reserved
//! ranges; no release serves it yet, tests/fixtures/crds/README.md). Every expected answer below
//! is read off the objects this file creates, never off the plugin's output.

use crate::support;

use serde_json::{Value, json};
use support::{Dialect, TestCluster, cilium_endpoint, cilium_node, pod};

/// Two pools: blue (10.40.0.0/16, /24 blocks, the gateway 10.40.255.254 reserved and
/// 10.40.2.10-10.40.2.20 reserved inside a block node-b holds) and batch (10.50.0.0/20 in /26
/// blocks, fd00:50::/112 in /120 blocks).
fn pools() -> Vec<Value> {
    vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
            "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24, "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [
                {"start": "10.40.255.254", "end": "10.40.255.254"}, {"start": "10.40.2.10", "end": "10.40.2.20"}]}]}}}),
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "batch"},
            "spec": {"ipv4": {"cidrs": ["10.50.0.0/20"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00:50::/112"], "maskSize": 120}}}),
    ]
}

fn multi_pool_cluster() -> TestCluster {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let mut objects = pools();
    let mut node_a =
        cilium_node("node-a", &[("blue", &["10.40.0.0/24", "10.40.1.0/24"]), ("batch", &["10.50.0.0/26", "fd00:50::/120"])], 2);
    // The agent's router address comes out of the node's first blue block.
    node_a["spec"]["addresses"] = json!([{"type": "InternalIP", "ip": "192.168.0.10"}, {"type": "CiliumInternalIP", "ip": "10.40.0.1"}]);
    objects.push(node_a);
    objects.push(cilium_node("node-b", &[("blue", &["10.40.2.0/24"])], 1));
    objects.push(pod("shop", "web-0", "node-a", &["10.40.0.17"]));
    objects.push(pod("jobs", "job-0", "node-a", &["10.50.0.5", "fd00:50::5"]));
    // An endpoint with no Pod object (e.g. a pod deleted a moment ago, its endpoint not yet).
    objects.push(cilium_endpoint("shop", "web-9", "192.168.0.10", &["10.40.0.99"]));
    cluster.create_objects(objects);
    cluster
}

/// Runs `ip ADDRESSES -o json`, checks the exit code and returns the answers in order.
fn answers(cluster: &TestCluster, addresses: &[&str], code: i32) -> Vec<Value> {
    let out = cluster.plugin().arg("ip").args(addresses).args(["-o", "json"]).assert().code(code).get_output().clone();
    let doc: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("ip -o json: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    let list = doc["addresses"].as_array().unwrap_or_else(|| panic!("no addresses: {doc}")).clone();
    assert_eq!(list.len(), addresses.len(), "{doc}");
    for (answer, address) in list.iter().zip(addresses) {
        assert_eq!(answer["address"], *address, "answers come in the order asked");
    }
    list
}

/// (pool, cidr, block, state) of one answer.
fn place(answer: &Value) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    (answer["pool"].as_str(), answer["cidr"].as_str(), answer["block"].as_str(), answer["state"].as_str())
}

fn holders(answer: &Value) -> Vec<(String, String)> {
    answer["heldBy"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| (h["kind"].as_str().unwrap_or_default().to_string(), h["name"].as_str().unwrap_or_default().to_string()))
        .collect()
}

#[test]
fn ip_answers_every_block_state_on_a_live_multi_pool_cluster() {
    let cluster = multi_pool_cluster();
    let asked = [
        "10.40.0.17",    // allocated to node-a, held by pod shop/web-0
        "10.40.1.77",    // allocated to node-a, no pod holds it
        "10.40.2.15",    // allocated to node-b, inside the reserved 10.40.2.10-10.40.2.20
        "10.40.255.254", // reserved gateway; no node holds 10.40.255.0/24: the block is withheld
        "10.40.3.9",     // in blue, a block no node holds and no range touches: free
        "fd00:50::5",    // batch IPv6, allocated to node-a, held by pod jobs/job-0
        "fd00:50::105",  // batch IPv6, block fd00:50::100/120 free
        "10.40.0.1",     // node-a's CiliumInternalIP
        "10.40.0.99",    // held by CiliumEndpoint shop/web-9 only
    ];
    let a = answers(&cluster, &asked, 0);

    assert_eq!(place(&a[0]), (Some("blue"), Some("10.40.0.0/16"), Some("10.40.0.0/24"), Some("allocated")));
    assert_eq!(a[0]["nodes"], json!(["node-a"]));
    assert_eq!(holders(&a[0]), [("pod".to_string(), "shop/web-0".to_string())]);
    assert_eq!(a[0]["reservedBy"], Value::Null);

    assert_eq!(place(&a[1]), (Some("blue"), Some("10.40.0.0/16"), Some("10.40.1.0/24"), Some("allocated")));
    assert_eq!(a[1]["nodes"], json!(["node-a"]));
    assert!(holders(&a[1]).is_empty(), "nothing holds 10.40.1.77: {}", a[1]);
    assert_eq!(a[1]["reservedBy"], Value::Null);

    assert_eq!(
        place(&a[2]),
        (Some("blue"), Some("10.40.0.0/16"), Some("10.40.2.0/24"), Some("allocated")),
        "a reserved range does not take a held block away"
    );
    assert_eq!(a[2]["nodes"], json!(["node-b"]));
    assert_eq!(a[2]["reservedBy"], json!({"start": "10.40.2.10", "end": "10.40.2.20"}));

    assert_eq!(place(&a[3]), (Some("blue"), Some("10.40.0.0/16"), Some("10.40.255.0/24"), Some("withheld")));
    assert_eq!(a[3]["nodes"], json!([]));
    assert_eq!(a[3]["withheldBy"], json!([{"start": "10.40.255.254", "end": "10.40.255.254"}]));
    assert_eq!(a[3]["reservedBy"], json!({"start": "10.40.255.254", "end": "10.40.255.254"}));

    assert_eq!(place(&a[4]), (Some("blue"), Some("10.40.0.0/16"), Some("10.40.3.0/24"), Some("free")));
    assert_eq!(a[4]["nodes"], json!([]));
    assert_eq!(a[4]["reservedBy"], Value::Null);

    assert_eq!(place(&a[5]), (Some("batch"), Some("fd00:50::/112"), Some("fd00:50::/120"), Some("allocated")));
    assert_eq!(a[5]["nodes"], json!(["node-a"]));
    assert_eq!(holders(&a[5]), [("pod".to_string(), "jobs/job-0".to_string())]);

    assert_eq!(place(&a[6]), (Some("batch"), Some("fd00:50::/112"), Some("fd00:50::100/120"), Some("free")));

    assert_eq!(place(&a[7]), (Some("blue"), Some("10.40.0.0/16"), Some("10.40.0.0/24"), Some("allocated")));
    assert_eq!(a[7]["heldBy"], json!([{"kind": "node", "name": "node-a", "detail": "CiliumInternalIP"}]));
    assert_eq!(place(&a[8]).3, Some("allocated"));
    assert_eq!(holders(&a[8]), [("endpoint".to_string(), "shop/web-9".to_string())]);

    // Outside every pool: 10.50.16.1 is just past batch's 10.50.0.0/20; exit 1, nothing placed.
    let a = answers(&cluster, &["10.50.16.1", "192.168.7.7", "10.50.0.5"], 1);
    for outside in &a[..2] {
        assert_eq!(place(outside), (None, None, None, None), "{outside}");
    }
    assert_eq!(
        place(&a[2]),
        (Some("batch"), Some("10.50.0.0/20"), Some("10.50.0.0/26"), Some("allocated")),
        "the address in a pool is still answered"
    );
    assert_eq!(holders(&a[2]), [("pod".to_string(), "jobs/job-0".to_string())]);

    // The table says the same, one row per address.
    let out = cluster.plugin().args(["ip", "10.40.255.254", "192.168.7.7"]).assert().code(1).get_output().clone();
    let table = String::from_utf8_lossy(&out.stdout);
    let row = |address: &str| {
        table
            .lines()
            .find(|l| l.starts_with(address))
            .unwrap_or_else(|| panic!("no row for {address}: {table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(row("10.40.255.254").starts_with("10.40.255.254 blue 10.40.0.0/16 10.40.255.0/24 withheld by 10.40.255.254 yes -"), "{table}");
    assert!(row("192.168.7.7").starts_with("192.168.7.7 - - - in no pool"), "{table}");
}
