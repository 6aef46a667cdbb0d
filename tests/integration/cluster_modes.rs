//! IPAM modes and `ip` against a real kube-apiserver with Cilium v1.20's own CRDs (the
//! CiliumPodIPPool CRD serves v2alpha1 only, as every released Cilium): an ENI-mode cluster
//! (ConfigMap cilium-config `ipam: eni`, CiliumNodes listing blocks under `default`, no pool).

use crate::support;

use serde_json::Value;
use support::{Dialect, TestCluster, pod, read_manifests};

fn eni_cluster() -> TestCluster {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    // examples/eni: the ConfigMap and the CiliumNodes as the ENI-mode agent writes them.
    let objects: Vec<Value> =
        read_manifests("examples/eni/cluster.yaml").into_iter().filter(|o| o["kind"] == "ConfigMap" || o["kind"] == "CiliumNode").collect();
    assert_eq!(objects.len(), 3);
    cluster.create_objects(objects);
    cluster.create_objects(vec![
        pod("shop", "web-0", "ip-10-1-0-5.eu-west-1.compute.internal", &["10.1.0.17"]),
        pod("shop", "web-1", "ip-10-1-0-5.eu-west-1.compute.internal", &["10.1.0.33"]),
        pod("shop", "db-0", "ip-10-1-0-6.eu-west-1.compute.internal", &["10.1.1.48"]),
    ]);
    cluster
}

fn output(cluster: &TestCluster, args: &[&str], code: i32) -> (String, String) {
    let out = cluster.plugin().args(args).assert().code(code).get_output().clone();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn eni_mode_check_is_clean_and_usage_shows_the_blocks() {
    let cluster = eni_cluster();
    let (stdout, stderr) = output(&cluster, &["check"], 0);
    assert!(
        stdout.is_empty() && stderr.contains("No problems found") && stderr.contains("IPAM mode eni"),
        "the summary is a note on stderr: {stdout}{stderr}"
    );
    let (stdout, _) = output(&cluster, &["check", "-o", "json"], 0);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["source"]["ipamMode"], "eni");
    assert_eq!(doc["problems"], serde_json::json!([]), "no orphan-block, no unknown-pool-requested");

    let (table, notes) = output(&cluster, &["usage"], 0);
    let row = table.lines().find(|l| l.starts_with("default ")).unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    // 10.1.0.17/32, 10.1.0.18/32, 10.1.0.32/28, 10.1.1.48/28: 4 blocks, 1+1+16+16 addresses
    // (first and last allowed), 3 pods inside, 2 nodes.
    assert_eq!(cells, ["default", "eni", "ipv4", "4", "34", "3", "31", "2", "unknown"], "{table}");
    assert!(notes.contains("capacity lives in AWS"), "{notes}");

    let (stdout, _) = output(&cluster, &["ip", "10.1.0.33", "-o", "json"], 0);
    let answer: Value = serde_json::from_str::<Value>(&stdout).unwrap()["addresses"][0].clone();
    assert_eq!(
        (answer["pool"].as_str(), answer["block"].as_str(), answer["state"].as_str()),
        (Some("default"), Some("10.1.0.32/28"), Some("mode-allocated"))
    );
    assert_eq!(answer["heldBy"][0]["name"], "shop/web-1");
    let (_, stderr) = output(&cluster, &["ip", "10.9.9.9"], 1);
    // Only the footer naming where the answer came from (stderr, as every read command's notes).
    let said: Vec<&str> = stderr.lines().filter(|l| !l.is_empty()).collect();
    assert!(said.len() == 1 && said[0].starts_with("Sources: cluster "), "{stderr}");
}

#[test]
fn without_configmap_read_permission_the_mode_is_unknown() {
    let cluster = eni_cluster();
    cluster.grant_read(
        "dave",
        &[
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("cilium.io", "ciliumpodippools"),
            ("cilium.io", "ciliumnodes"),
            ("cilium.io", "ciliumendpoints"),
            ("", "pods"),
        ],
    );
    // The mode cannot be known: the blocks are orphans of a pool that does not exist (exit 1),
    // and the reader is told why.
    let (stdout, stderr) = output(&cluster, &["check", "-o", "json", "--as", "dave"], 1);
    assert!(stderr.contains("ConfigMap kube-system/cilium-config: forbidden (403) — IPAM mode unknown"), "{stderr}");
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["source"]["ipamMode"], "unknown");
    assert!(doc["problems"].as_array().unwrap().iter().any(|p| p["kind"] == "orphan-block"), "{doc}");
    // --cilium-namespace names where Cilium lives; a namespace without the ConfigMap says so.
    let (_, stderr) = output(&cluster, &["usage", "--cilium-namespace", "cilium"], 0);
    assert!(stderr.contains("ConfigMap cilium/cilium-config: not found"), "{stderr}");
}
