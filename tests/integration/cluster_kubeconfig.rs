//! `--cluster` and `--user` pick a kubeconfig cluster and user other than the current
//! context's, as kubectl does, against a real kube-apiserver: a kubeconfig whose current context
//! points at nowhere with a stranger's token works only when both flags name the real ones.

use crate::support;

use serde_json::{Value, json};
use support::{Dialect, TestCluster};

#[test]
fn cluster_and_user_flags_override_the_context() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
        "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}}})]);
    let mut config: Value = serde_saphyr::from_str(&std::fs::read_to_string(&cluster.kubeconfig).unwrap()).unwrap();
    let real_cluster = config["clusters"][0]["name"].as_str().unwrap().to_string();
    let real_user = config["users"][0]["name"].as_str().unwrap().to_string();
    // Nothing listens on port 1 of loopback; the stranger's token is no token the server knows.
    let mut nowhere = config["clusters"][0].clone();
    nowhere["name"] = json!("nowhere");
    nowhere["cluster"]["server"] = json!("https://127.0.0.1:1");
    config["clusters"].as_array_mut().unwrap().push(nowhere);
    config["users"].as_array_mut().unwrap().push(json!({"name": "stranger", "user": {"token": "not-a-token"}}));
    config["contexts"].as_array_mut().unwrap().push(json!({"name": "wrong", "context": {"cluster": "nowhere", "user": "stranger"}}));
    config["current-context"] = json!("wrong");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, config.to_string()).unwrap();

    let run = |flags: &[&str]| {
        let out = assert_cmd::cargo::cargo_bin_cmd!("kubectl-ciliumpool")
            .arg("--kubeconfig")
            .arg(&path)
            .args(["usage", "-o", "name"])
            .args(flags)
            .output()
            .unwrap();
        (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, _, err) = run(&[]);
    assert_eq!(code, 3, "the current context reaches nothing: {err}");
    let (code, _, err) = run(&["--user", &real_user]);
    assert_eq!(code, 3, "the right user at the wrong cluster: {err}");
    let (code, _, err) = run(&["--cluster", &real_cluster]);
    assert_eq!(code, 3, "the right cluster with the stranger's token: {err}");
    assert!(err.contains("401") || err.to_lowercase().contains("unauthorized"), "{err}");
    let (code, out, err) = run(&["--cluster", &real_cluster, "--user", &real_user]);
    assert_eq!((code, out.as_str()), (0, "ciliumpodippool.cilium.io/blue\n"), "{err}");
    // The context flag names both at once.
    let (code, out, err) = run(&["--context", config["contexts"][0]["name"].as_str().unwrap()]);
    assert_eq!((code, out.as_str()), (0, "ciliumpodippool.cilium.io/blue\n"), "{err}");
}
