//! Error lines against a real kube-apiserver: a cluster with Cilium's pool CRD but without the
//! CiliumNode CRD says which CRD is missing and what that means, not a raw 404.

use crate::support;

use support::{Dialect, TestCluster};

#[test]
fn a_missing_ciliumnode_crd_is_named() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.kubectl(&["delete", "crd", "ciliumnodes.cilium.io", "--wait=true"]);
    let out = cluster.plugin().args(["usage"]).output().expect("the plugin runs");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(out.stdout.is_empty());
    assert!(err.starts_with("error: CiliumNode (ciliumnodes.cilium.io, cilium.io/v2) is not served by https://"), "{err}");
    assert!(err.contains("the CiliumNode CRD is missing, so which blocks the nodes hold cannot be read"), "{err}");
    // The server's URL is left out: its random port may hold the digits 404.
    assert!(!err.replace(&cluster.server, "SERVER").contains("404"), "no raw status: {err}");
}
