//! Least privilege against a real kube-apiserver (issue #15): the ClusterRoles of docs/rbac.md,
//! read from the document itself, let each command group work, and removing any one rule gives
//! the documented effect. Impersonation (`--as`, `--as-group`) with a denied user.
//!
//! RBAC changes reach the authorizer through an informer: after each change the test waits on a
//! barrier (`kubectl auth can-i` answering as expected), never a sleep.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use support::{Dialect, TestCluster, cilium_endpoint, cilium_node, pod};

/// The ClusterRoles documented in docs/rbac.md, by name.
fn documented_roles() -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(support::repo_root().join("docs/rbac.md")).unwrap();
    let mut roles = BTreeMap::new();
    for block in text.split("```yaml\n").skip(1) {
        let yaml = block.split("```").next().unwrap();
        let role: Value = serde_saphyr::from_str(yaml).expect("a YAML block of docs/rbac.md");
        assert_eq!(role["kind"], "ClusterRole");
        roles.insert(role["metadata"]["name"].as_str().unwrap().to_string(), role);
    }
    assert_eq!(roles.len(), 3, "reader, reserver, migrator");
    roles
}

fn rules(role: &Value) -> Vec<Value> {
    role["rules"].as_array().unwrap().clone()
}

/// Binds a ClusterRole holding `rules` to `user` (or, with `group`, to that group).
fn grant(cluster: &TestCluster, name: &str, rules: &[Value], subject: (&str, &str)) {
    let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": subject.0, "name": subject.1}]}]});
    cluster.apply_yaml(&objects.to_string());
}

/// Barrier: waits until the authorizer answers `expected` for `user` doing `verb` on `resource`.
fn await_can_i(cluster: &TestCluster, user: &str, verb: &str, resource: &str, expected: bool) {
    for _ in 0..600 {
        let mut words = resource.split(' ');
        let out = cluster.kubectl_command().args(["auth", "can-i", verb]).args(words.by_ref()).args(["--as", user]).output().unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == if expected { "yes" } else { "no" } {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the authorizer never answered {expected} for {user} {verb} {resource}");
}

/// (exit code, stdout, stderr) of the plugin run as `user`.
fn run_as(cluster: &TestCluster, user: &str, args: &[&str]) -> (i32, String, String) {
    let out = cluster.plugin().args(args).args(["--as", user]).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn cluster_with_pools() -> TestCluster {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}}}),
        json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "red"}, "spec": {"ipv4": {"cidrs": ["10.50.0.0/16"], "maskSize": 24}}}),
    ]);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    cluster.create_objects(vec![
        cilium_node("node-a", &[("blue", &["10.40.3.0/24"])], 16),
        pod("team", "db-0", "node-a", &["10.40.3.7"]),
        cilium_endpoint("team", "db-0", "192.168.0.1", &["10.40.3.7"]),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": {"ipam": "multi-pool"}}),
    ]);
    cluster
}

#[test]
fn reader_role_is_sufficient_and_each_rule_is_needed() {
    let cluster = cluster_with_pools();
    let reader = rules(&documented_roles()["ciliumpool-reader"]);
    grant(&cluster, "reader", &reader, ("User", "reader"));
    await_can_i(&cluster, "reader", "list", "ciliumendpoints.cilium.io", true);
    for args in [&["usage"][..], &["inspect", "blue"], &["check"], &["reserve-range", "--list"]] {
        let (code, out, err) = run_as(&cluster, "reader", args);
        assert!(code <= 1, "{args:?}: {out}{err}");
        assert!(!err.contains("warning:") && !err.contains("forbidden"), "{args:?} sees everything: {err}");
    }
    let (_, _, err) = run_as(&cluster, "reader", &["usage", "-v"]);
    assert!(err.contains("CiliumEndpoints: 1 (as the Tables of ") && !err.contains(" 403 "), "the cheaper read of endpoints: {err}");
    // The documented effect of removing each rule (docs/rbac.md).
    let expected = [
        (3, "forbidden (403): user reader-0 cannot list ciliumpodippools"),
        (0, "warning: pods: forbidden (403) — used addresses from CiliumEndpoints only"),
        (0, "warning: CiliumEndpoints: forbidden (403)"),
        (0, "warning: CRD ciliumpodippools.cilium.io: forbidden (403)"),
        (0, "warning: ConfigMap kube-system/cilium-config: forbidden (403) — IPAM mode unknown"),
        (0, "CiliumEndpoints: 1 (in one list: namespaces: forbidden (403))"),
        (0, "Cilium: unknown (deployment kube-system/cilium-operator: forbidden (403; needs get on deployments.apps)"),
    ];
    assert_eq!(expected.len(), reader.len(), "every documented rule is tested");
    let probes = [
        ("list", "ciliumpodippools.cilium.io"),
        ("list", "pods"),
        ("list", "ciliumendpoints.cilium.io"),
        ("get", "customresourcedefinitions/ciliumpodippools.cilium.io"),
        ("get", "configmaps/cilium-config -n kube-system"),
        ("list", "namespaces"),
        ("get", "deployments/cilium-operator -n kube-system"),
    ];
    for (k, (code, line)) in expected.iter().enumerate() {
        let user = format!("reader-{k}");
        let without: Vec<Value> = reader.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, r)| r.clone()).collect();
        grant(&cluster, &user, &without, ("User", &user));
        let kept = (k + 1) % reader.len();
        await_can_i(&cluster, &user, probes[kept].0, probes[kept].1, true);
        let (got, out, err) = run_as(&cluster, &user, &["usage", "-v"]);
        assert_eq!(got, *code, "without rule {k}: {out}{err}");
        assert!(err.contains(line), "without rule {k}: expected {line:?} in {err}");
    }
}

#[test]
fn reserver_and_migrator_roles_are_sufficient_and_each_rule_is_needed() {
    let cluster = cluster_with_pools();
    let roles = documented_roles();
    let reader = rules(&roles["ciliumpool-reader"]);
    let reserver: Vec<Value> = reader.iter().chain(&rules(&roles["ciliumpool-reserver"])).cloned().collect();
    let migrator = rules(&roles["ciliumpool-migrator"]);

    // reserve-range: reader's rules are not enough; with the reserver's it works.
    grant(&cluster, "res-0", &reader, ("User", "res-0"));
    await_can_i(&cluster, "res-0", "list", "ciliumnodes.cilium.io", true);
    let (code, _, err) = run_as(&cluster, "res-0", &["reserve-range", "red", "10.50.0.1", "--yes"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("forbidden (403): user res-0 cannot update ciliumpodippools.cilium.io/red"), "{err}");
    grant(&cluster, "res", &reserver, ("User", "res"));
    await_can_i(&cluster, "res", "update", "ciliumpodippools.cilium.io", true);
    let (code, out, err) = run_as(&cluster, "res", &["reserve-range", "red", "10.50.0.1", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");

    // migrate: each rule removed, in turn; nothing is written by any of these runs.
    let expected = [
        "forbidden (403): user mig-0 cannot list ciliumpodippools",
        "missing permission: mig-1 may not",
        "forbidden (403): user mig-2 cannot get customresourcedefinitions",
    ];
    let dir = tempfile::tempdir().unwrap();
    for (k, line) in expected.iter().enumerate() {
        let user = format!("mig-{k}");
        let mut without = migrator.clone();
        // (rule removed, a permission kept to wait for)
        let kept = match k {
            0 => {
                without.remove(0);
                ("get", "customresourcedefinitions/ciliumpodippools.cilium.io")
            }
            1 => {
                without[0]["verbs"] = json!(["get", "list"]);
                ("list", "ciliumpodippools.cilium.io")
            }
            _ => {
                without.remove(1);
                ("list", "ciliumpodippools.cilium.io")
            }
        };
        grant(&cluster, &user, &without, ("User", &user));
        await_can_i(&cluster, &user, kept.0, kept.1, true);
        let out = cluster.plugin().current_dir(dir.path()).args(["migrate", "--yes", "--as", &user]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "without rule {k}: {err}");
        assert!(err.contains(line), "without rule {k}: expected {line:?} in {err}");
    }
    let marked = cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io", "-o", "jsonpath={.items[*].metadata.annotations}"]);
    assert!(!marked.contains("migrated-to-v2"), "no refused run wrote anything: {marked}");

    // The full role: plan, status, apply, finalize.
    grant(&cluster, "mig", &migrator, ("User", "mig"));
    await_can_i(
        &cluster,
        "mig",
        "update",
        "customresourcedefinitions.apiextensions.k8s.io/ciliumpodippools.cilium.io --subresource=status",
        true,
    );
    for args in [&["migrate", "--dry-run"][..], &["migrate", "--status"], &["migrate", "--yes"]] {
        let out = cluster.plugin().current_dir(dir.path()).args(args).args(["--as", "mig"]).output().unwrap();
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    // --finalize without the status rule, then with it.
    let mut no_status = migrator.clone();
    no_status.remove(2);
    grant(&cluster, "mig-3", &no_status, ("User", "mig-3"));
    await_can_i(&cluster, "mig-3", "list", "ciliumpodippools.cilium.io", true);
    let out = cluster.plugin().args(["migrate", "--finalize", "--yes", "--as", "mig-3"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("missing permission: mig-3 may not update customresourcedefinitions/status"), "{err}");
    let out = cluster.plugin().args(["migrate", "--finalize", "--yes", "--as", "mig"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn impersonated_users_and_groups() {
    let cluster = cluster_with_pools();
    let reader = rules(&documented_roles()["ciliumpool-reader"]);
    grant(&cluster, "group-readers", &reader, ("Group", "pool-readers"));
    // A user with no role at all is denied and named.
    let (code, _, err) = run_as(&cluster, "nobody", &["usage"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("forbidden (403): user nobody cannot list ciliumpodippools"), "{err}");
    assert_eq!(err.lines().filter(|l| l.starts_with("error:")).count(), 1, "{err}");
    // The same user through the group is allowed.
    for _ in 0..600 {
        let out = cluster
            .kubectl_command()
            .args(["auth", "can-i", "list", "ciliumendpoints.cilium.io", "--as", "nobody", "--as-group", "pool-readers"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).trim() == "yes" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = cluster.plugin().args(["usage", "-o", "name", "--as", "nobody", "--as-group", "pool-readers"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ciliumpodippool.cilium.io/blue\nciliumpodippool.cilium.io/red\n");
    // A reserve-range as that group is refused (the group only reads) and names the user.
    let out = cluster
        .plugin()
        .args(["reserve-range", "blue", "10.40.0.1", "--yes", "--as", "nobody", "--as-group", "pool-readers"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("user nobody cannot update ciliumpodippools.cilium.io/blue"), "{err}");
}
