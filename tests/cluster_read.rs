//! The live-cluster read path against a real kube-apiserver (issue 3).

mod support;

use support::{Dialect, TestCluster};

/// The harness itself: pools created under v2alpha1 storage stay readable through v2 after the
/// CRD moves to v2 storage, and storedVersions records both.
#[test]
fn harness_moves_pool_storage_to_v2() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: early}\nspec: {ipv4: {cidrs: [10.1.0.0/16], maskSize: 24}}\n");
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let stored = cluster.kubectl(&["get", "crd", "ciliumpodippools.cilium.io", "-o", "jsonpath={.status.storedVersions}"]);
    assert_eq!(stored, r#"["v2alpha1","v2"]"#);
    let through_v2 = cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io", "early", "-o", "jsonpath={.apiVersion} {.spec.ipv4.cidrs}"]);
    assert_eq!(through_v2, r#"cilium.io/v2 ["10.1.0.0/16"]"#);
}
