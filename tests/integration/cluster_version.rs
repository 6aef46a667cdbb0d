//! `version -o json` against a real kube-apiserver: the server version, the CiliumPodIPPool CRD's
//! versions, storedVersions and dialect, and the Cilium version from the operator's (or agent's)
//! image tag — each compared with what the real kubectl reads from the same apiserver. Without
//! a kubelet nothing runs; the Deployment and DaemonSet objects are all `version` reads.

use crate::support;

use serde_json::{Value, json};
use std::process::Command;
use support::{Dialect, PLUGIN, TestCluster, repo_root};

const DIGEST: &str = "sha256:4b0c1a9a5e0f6d3c2b1a09f8e7d6c5b4a3928170f6e5d4c3b2a1908f7e6d5c4b";

fn version_json(cluster: &TestCluster, args: &[&str]) -> Value {
    let output = cluster.plugin().args(["version", "-o", "json"]).args(args).assert().success().get_output().stdout.clone();
    serde_json::from_slice(&output).unwrap_or_else(|e| panic!("version -o json is not JSON ({e}): {}", String::from_utf8_lossy(&output)))
}

fn workload(kind: &str, namespace: &str, name: &str, container: &str, image: &str) -> String {
    json!({
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {"metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "sidecar", "image": "busybox:1.37"}, {"name": container, "image": image}]}}}
    })
    .to_string()
}

/// HEAD of this repository as git says, when the repository is a git checkout.
fn head_commit() -> Option<String> {
    let output = Command::new("git").arg("-C").arg(repo_root()).args(["rev-parse", "--show-toplevel", "HEAD"]).output().ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let mut lines = text.lines();
    let toplevel = std::fs::canonicalize(lines.next()?).ok()?;
    (output.status.success() && toplevel == std::fs::canonicalize(repo_root()).ok()?).then(|| lines.next().map(str::to_string)).flatten()
}

#[test]
fn version_reads_server_crd_and_cilium_versions_from_the_apiserver() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let operator_image = format!("quay.io/cilium/operator-generic:v1.20.2@{DIGEST}");
    cluster.apply_yaml(&workload("Deployment", "kube-system", "cilium-operator", "cilium-operator", &operator_image));

    let doc = version_json(&cluster, &[]);
    assert_eq!(doc["schemaVersion"], 1);
    // The plugin's build, as build.rs embedded it.
    assert_eq!(doc["plugin"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["plugin"]["gitCommit"], head_commit().unwrap_or_else(|| "unknown".to_string()).as_str());
    let date = doc["plugin"]["buildDate"].as_str().expect("buildDate");
    humantime::parse_rfc3339(date).unwrap_or_else(|e| panic!("buildDate {date:?} is not RFC 3339: {e}"));
    assert!(doc["plugin"]["platform"].as_str().is_some_and(|p| p.starts_with(std::env::consts::ARCH)), "{}", doc["plugin"]);

    // The server and the CRD, as the real kubectl sees them.
    let kubectl_version: Value = serde_json::from_str(&cluster.kubectl(&["version", "-o", "json"])).expect("kubectl version JSON");
    assert_eq!(doc["server"], json!({"url": cluster.server, "version": kubectl_version["serverVersion"]["gitVersion"]}));
    let crd: Value = serde_json::from_str(&cluster.kubectl(&["get", "crd", "ciliumpodippools.cilium.io", "-o", "json"])).expect("CRD JSON");
    let versions: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .expect("spec.versions")
        .iter()
        .map(|v| json!({"name": v["name"], "served": v["served"], "storage": v["storage"]}))
        .collect();
    assert_eq!(crd["status"]["storedVersions"], json!(["v2alpha1", "v2"]), "the fixture's upgrade did not happen");
    assert_eq!(
        doc["ciliumPodIPPool"],
        json!({"versions": versions, "storedVersions": crd["status"]["storedVersions"], "dialect": "upstream-v2"})
    );

    // Cilium: the operator container's tag, not the sidecar's, and not the digest.
    assert_eq!(
        doc["cilium"],
        json!({"version": "v1.20.2", "image": operator_image, "source": "deployment/cilium-operator", "namespace": "kube-system"})
    );
    assert_eq!(doc["notes"], json!([]));

    let yaml = cluster.plugin().args(["version", "-o", "yaml"]).assert().success().get_output().stdout.clone();
    let yaml: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&yaml)).expect("version -o yaml is YAML");
    assert_eq!(yaml["cilium"], doc["cilium"]);
    assert_eq!(yaml["ciliumPodIPPool"], doc["ciliumPodIPPool"]);

    let human = cluster.plugin().arg("version").assert().success().get_output().stdout.clone();
    let human = String::from_utf8_lossy(&human);
    assert!(
        human.contains(&format!(
            "Server version: {} ({})",
            kubectl_version["serverVersion"]["gitVersion"].as_str().unwrap(),
            cluster.server
        )),
        "{human}"
    );
    assert!(human.contains("CiliumPodIPPool: served v2 (storage), v2alpha1; storedVersions v2alpha1, v2; dialect upstream-v2"), "{human}");
    assert!(
        human.contains(&format!("Cilium version: v1.20.2 (image {operator_image} of deployment/cilium-operator in kube-system)")),
        "{human}"
    );

    // A user who may read the CRD but no workloads: the rest is still answered, Cilium is a note.
    cluster.grant_read("crd-reader", &[("apiextensions.k8s.io", "customresourcedefinitions")]);
    let limited = version_json(&cluster, &["--as", "crd-reader"]);
    assert_eq!(limited["server"], doc["server"]);
    assert_eq!(limited["ciliumPodIPPool"], doc["ciliumPodIPPool"]);
    assert_eq!(limited["cilium"], Value::Null);
    let notes = limited["notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = notes[0].as_str().unwrap();
    for part in [
        "Cilium version: unknown",
        "deployment kube-system/cilium-operator: forbidden (403",
        "daemonset kube-system/cilium: forbidden (403",
        "--cilium-namespace",
    ] {
        assert!(note.contains(part), "{part:?} missing from {note}");
    }

    // Cilium elsewhere, agent only: --cilium-namespace, and the agent DaemonSet's image.
    let agent_image = "quay.io/cilium/cilium:v1.20.1";
    cluster.apply_yaml(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cilium-system"}}).to_string());
    cluster.apply_yaml(&workload("DaemonSet", "cilium-system", "cilium", "cilium-agent", agent_image));
    let elsewhere = version_json(&cluster, &["--cilium-namespace", "cilium-system"]);
    assert_eq!(
        elsewhere["cilium"],
        json!({"version": "v1.20.1", "image": agent_image, "source": "daemonset/cilium", "namespace": "cilium-system"})
    );
    assert_eq!(elsewhere["notes"], json!([]));
}

/// A server that accepts connections and never answers: `version` still answers, after its
/// deadline, with the plugin's own version and a note (never a hang, never an error exit).
#[test]
fn version_gives_up_on_a_silent_server_at_its_deadline() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: 'https://{}', insecure-skip-tls-verify: true}}\n\
             users:\n- name: u\n  user: {{token: t}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\n",
            silent.local_addr().expect("address")
        ),
    )
    .expect("write kubeconfig");
    let output = Command::new(PLUGIN).args(["version", "-o", "json", "--kubeconfig"]).arg(&kubeconfig).output().expect("run plugin");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(doc["plugin"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(doc["notes"], json!(["server: no answer within 2s"]));
    assert_eq!(doc["server"]["version"], Value::Null);

    // --client: the plugin only, the server not even connected to (no note about it).
    silent.set_nonblocking(true).expect("non-blocking listener");
    let pending = |listener: &std::net::TcpListener| std::iter::from_fn(|| listener.accept().ok()).count();
    assert!(pending(&silent) >= 1, "the run above connected");
    let output =
        Command::new(PLUGIN).args(["version", "--client", "-o", "json", "--kubeconfig"]).arg(&kubeconfig).output().expect("run plugin");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let doc: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(doc["plugin"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!((&doc["server"], &doc["notes"]), (&Value::Null, &json!([])), "{doc}");
    assert_eq!(pending(&silent), 0, "version --client connected to the server");
    drop(silent);
}
