//! A fleet of three real control planes (docs/fleet.md), read with one kubeconfig of three
//! contexts: alpha and beta have overlapping pool CIDRs with blocks held in the overlap by both, the
//! same cluster-id and a pod address in common; gamma is apart. Each cluster's part of the fleet
//! equals its single-context run, the same fleet dumped to files gives the same answers, and a
//! cluster whose kube-apiserver is stopped is reported while the others still print (exit 3).
//! `serve --all-contexts` follows the same fleet: each cluster's series (under its `cluster` label)
//! equal its `usage -o json`, and the stopped cluster's series alone go stale.
//! The three control planes run on one thread, so they hold one permit (tests/support).

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::prometheus::{Prometheus, free_port, get, promql_of, substitute};
use support::{Dialect, KillOnDrop, TestCluster, cilium_node, pod};

fn config(name: &str, id: u32) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
           "data": {"ipam": "multi-pool", "cluster-name": name, "cluster-id": id.to_string()}})
}

fn pool(name: &str, cidr: &str) -> Value {
    json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name},
           "spec": {"ipv4": {"cidrs": [cidr], "maskSize": 24}}})
}

/// (cluster-name, cluster-id, pool, its CIDR, the node's block, a pod address)
const CLUSTERS: [(&str, u32, &str, &str, &str, &str); 3] = [
    ("alpha", 1, "blue", "10.60.0.0/16", "10.60.128.0/24", "10.60.128.5"),
    ("beta", 1, "green", "10.60.128.0/17", "10.60.129.0/24", "10.60.128.5"),
    ("gamma", 3, "red", "10.70.0.0/16", "10.70.0.0/24", "10.70.0.5"),
];

fn start(spec: &(&str, u32, &str, &str, &str, &str)) -> TestCluster {
    let (name, id, pool_name, cidr, block, ip) = *spec;
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let node = format!("{name}-node");
    cluster.create_objects(vec![
        config(name, id),
        pool(pool_name, cidr),
        cilium_node(&node, &[(pool_name, &[block])], 1),
        pod("shop", &format!("{name}-web"), &node, &[ip]),
    ]);
    cluster
}

/// One kubeconfig with a context per cluster (`c1`, `c2`, `c3`), written from their own.
fn kubeconfig(clusters: &[TestCluster], path: &Path) {
    let mut merged = json!({"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": [], "current-context": "c1"});
    for (i, cluster) in clusters.iter().enumerate() {
        let name = format!("c{}", i + 1);
        let text = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
        let own: Value = serde_saphyr::from_str(&text).expect("the testenv's kubeconfig");
        let mut entry = |list: &str, item: &str, body: Value| {
            merged[list].as_array_mut().unwrap().push(json!({"name": name, item: body}));
        };
        entry("clusters", "cluster", own["clusters"][0]["cluster"].clone());
        entry("users", "user", own["users"][0]["user"].clone());
        entry("contexts", "context", json!({"cluster": name, "user": name}));
    }
    std::fs::write(path, serde_json::to_string_pretty(&merged).unwrap()).unwrap();
}

/// Adds context `name` to the kubeconfig at `path`: its own cluster and user entries, copies of
/// the first context's, with the server URL `server` makes of the first one's.
fn add_context(path: &Path, name: &str, server: impl Fn(&str) -> String) {
    let mut merged: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    for list in ["clusters", "users", "contexts"] {
        let mut copy = merged[list][0].clone();
        copy["name"] = json!(name);
        merged[list].as_array_mut().unwrap().push(copy);
    }
    let last = merged["contexts"].as_array().unwrap().len() - 1;
    merged["contexts"][last]["context"] = json!({"cluster": name, "user": name});
    let url = server(merged["clusters"][0]["cluster"]["server"].as_str().unwrap());
    merged["clusters"][last]["cluster"]["server"] = json!(url);
    std::fs::write(path, merged.to_string()).unwrap();
}

fn plugin(kubeconfig: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = support::cli::plugin().args(["--kubeconfig", kubeconfig.to_str().unwrap()]).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), doc, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn kinds(doc: &Value) -> Vec<(String, String, Value)> {
    let list = doc["fleetProblems"].as_array().unwrap_or_else(|| panic!("{doc}"));
    list.iter().map(|p| (p["severity"].as_str().unwrap().into(), p["kind"].as_str().unwrap().into(), p["clusters"].clone())).collect()
}

/// Dumps a cluster as `kubectl get -o yaml` would for a user: pools, nodes, pods, cilium-config.
fn dump(cluster: &TestCluster, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let objects = cluster.kubectl(&["get", "ciliumpodippools,ciliumnodes", "-o", "yaml"]);
    let pods = cluster.kubectl(&["get", "pods", "-A", "-o", "yaml"]);
    let config = cluster.kubectl(&["get", "configmap", "cilium-config", "-n", "kube-system", "-o", "yaml"]);
    for (file, text) in [("objects.yaml", objects), ("pods.yaml", pods), ("cilium-config.yaml", config)] {
        std::fs::write(dir.join(file), text).unwrap();
    }
}

#[test]
fn three_clusters_read_together_equal_each_alone_and_a_stopped_one_is_reported() {
    let clusters: Vec<TestCluster> = CLUSTERS.iter().map(start).collect();
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("kubeconfig");
    kubeconfig(&clusters, &config);

    let (code, usage, stderr) = plugin(&config, &["usage", "-o", "json", "--context", "c1,c2", "--context", "c3"]);
    assert_eq!(code, 0, "{stderr}");
    let parts = usage["clusters"].as_array().unwrap();
    assert_eq!(parts.iter().map(|c| c["cluster"].clone()).collect::<Vec<_>>(), ["c1", "c2", "c3"]);
    for (i, part) in parts.iter().enumerate() {
        let mut part = part.clone();
        part.as_object_mut().unwrap().remove("cluster");
        let context = format!("c{}", i + 1);
        let (_, alone, _) = plugin(&config, &["usage", "-o", "json", "--context", &context]);
        assert_eq!(part, alone, "{context}: the fleet's part equals the single-context run");
        assert_eq!(alone["pools"][0]["name"], CLUSTERS[i].2);
    }

    let (code, check, stderr) = plugin(&config, &["check", "-o", "json", "--all-contexts"]);
    assert_eq!(code, 1, "{stderr}");
    let pair = json!(["c1", "c2"]);
    let error = |kind: &str| ("error".to_string(), kind.to_string(), pair.clone());
    assert_eq!(kinds(&check), [error("fleet-overlapping-cidrs"), error("fleet-duplicate-cluster-id"), error("fleet-shared-pod-ip")]);
    assert!(check["fleetProblems"][0]["message"].as_str().unwrap().contains("c1: alpha-node and c2: beta-node"), "{check}");
    // The problems between clusters are counted in the fleet's OpenMetrics, without a cluster label.
    let counted = fleet_problem_counts(&check);
    let out = support::cli::plugin()
        .args(["--kubeconfig", config.to_str().unwrap(), "usage", "-o", "openmetrics", "--all-contexts"])
        .output()
        .unwrap();
    assert_eq!(fleet_problem_series(&String::from_utf8_lossy(&out.stdout)), counted, "usage -o openmetrics");

    // The same fleet from files: the same problems, the same pool figures per cluster.
    let dirs: Vec<String> = clusters
        .iter()
        .enumerate()
        .map(|(i, cluster)| {
            let dir = scratch.path().join(format!("dump-{i}"));
            dump(cluster, &dir);
            dir.display().to_string()
        })
        .collect();
    let files: Vec<&str> = dirs.iter().flat_map(|d| ["-f", d.as_str()]).collect();
    let (code, offline, stderr) = plugin(&config, &[&["check", "-o", "json", "--fleet"], &files[..]].concat());
    assert_eq!(code, 1, "{stderr}");
    let names = json!(["alpha", "beta"]);
    let offline_kinds: Vec<(String, String)> = kinds(&offline).into_iter().map(|(s, k, c)| (assert_eq!(c, names), (s, k)).1).collect();
    let live_kinds: Vec<(String, String)> = kinds(&check).into_iter().map(|(s, k, _)| (s, k)).collect();
    assert_eq!(offline_kinds, live_kinds);
    let (_, offline_usage, _) = plugin(&config, &[&["usage", "-o", "json", "--fleet"], &files[..]].concat());
    for i in 0..3 {
        assert_eq!(offline_usage["clusters"][i]["pools"], usage["clusters"][i]["pools"], "cluster {i} from files");
    }

    // serve follows the fleet: each cluster's series are its own usage figures.
    let serve = Serve::start(&config, Stdio::null());
    serve.wait_readyz(200);
    let metrics = serve.metrics();
    for (i, part) in parts.iter().enumerate() {
        let context = format!("c{}", i + 1);
        assert_eq!(series(&metrics, &context), figures(part), "{context}: serve's series\n{metrics}");
        assert!(metrics.contains(&format!("ciliumpool_exporter_ready{{cluster=\"{context}\"}} 1")), "{metrics}");
    }
    assert_eq!(fleet_problem_series(&metrics), counted, "serve counts the problems between clusters\n{metrics}");
    fleet_expressions_return_series(&serve.address);

    // gamma stops answering: it is reported, alpha and beta still print, exit 3.
    clusters[2].signal_apiserver("STOP");
    let (code, stopped, stderr) = plugin(&config, &["usage", "-o", "json", "--all-contexts", "--request-timeout", "3s"]);
    // serve: gamma's series alone go stale, /readyz says which cluster.
    let reason = serve.wait_readyz(503);
    let metrics = serve.metrics();
    clusters[2].signal_apiserver("CONT");
    assert!(
        reason.starts_with("cluster c3: stale: no proof that the state is current for ")
            && !reason.contains("c1")
            && !reason.contains("c2"),
        "{reason}"
    );
    assert!(series(&metrics, "c3").is_empty(), "no figure of the stopped cluster is served as fresh:\n{metrics}");
    assert!(fleet_problem_series(&metrics).is_empty(), "no check between clusters from stale state:\n{metrics}");
    for (i, context) in ["c1", "c2"].iter().enumerate() {
        assert_eq!(series(&metrics, context), figures(&parts[i]), "{context} stays fresh\n{metrics}");
    }
    let ready = |context: &str, value: u8| metrics.contains(&format!("ciliumpool_exporter_ready{{cluster=\"{context}\"}} {value}"));
    assert!(ready("c1", 1) && ready("c2", 1) && ready("c3", 0), "{metrics}");
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(stopped["clusters"][0]["pools"], usage["clusters"][0]["pools"]);
    assert_eq!(stopped["clusters"][1]["pools"], usage["clusters"][1]["pools"]);
    assert!(stopped["clusters"][2]["pools"].is_null(), "{stopped}");
    let why = stopped["clusters"][2]["error"].as_str().unwrap_or_else(|| panic!("{stopped}"));
    assert!(why.contains(&clusters[2].server), "{why}");
    assert!(stderr.contains("cluster c3: not read") && stderr.contains("1 of 3 clusters could not be read: c3"), "{stderr}");
    for cluster in &clusters {
        let secret = std::fs::read_to_string(&cluster.kubeconfig).unwrap();
        for line in secret.lines().filter(|l| l.contains("data:")) {
            let value = line.split_once(':').unwrap().1.trim();
            assert!(!stderr.contains(value) && !stopped.to_string().contains(value), "a credential in the output");
        }
    }
}

/// The PromQL of deploy/ about the problems between clusters (the dashboard's fleet panel, the
/// rules' fleet alert), which one cluster's serve cannot feed (tests/cluster_serve.rs evaluates
/// the others): each returns series in a real Prometheus scraping `serve` of this fleet.
fn fleet_expressions_return_series(serve: &str) {
    let deploy = support::repo_root().join("deploy");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(deploy.join("grafana/ciliumpool-dashboard.json")).unwrap()).unwrap();
    let mut found = Vec::new();
    promql_of(&dashboard, &mut found);
    let rules: Value = serde_saphyr::from_str(&std::fs::read_to_string(deploy.join("prometheus/rules.yml")).unwrap()).unwrap();
    let exprs = rules["groups"].as_array().unwrap().iter().flat_map(|g| g["rules"].as_array().unwrap());
    found.extend(exprs.filter_map(|r| r["expr"].as_str()).map(str::to_string));
    found.retain(|expr| expr.contains("ciliumpool_fleet_"));
    assert!(found.len() >= 2, "the fleet panel and the fleet alert: {found:?}");
    let rules = deploy.join("prometheus/rules.yml");
    let prometheus = Prometheus::start(serve, &[&rules]);
    for expr in found.iter().map(|e| substitute(e)) {
        let deadline = Instant::now() + BOUND;
        while prometheus.query(&expr).is_empty() {
            assert!(Instant::now() < deadline, "{expr}: no series within {BOUND:?}\n{}", prometheus.log());
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// Every poll here ends within it: a bound for a hang, not a speed target.
const BOUND: Duration = Duration::from_secs(90);

/// `serve --all-contexts`, stale after 3 s of failing; killed when dropped.
struct Serve {
    address: String,
    _process: KillOnDrop,
}

impl Serve {
    fn start(kubeconfig: &Path, stderr: Stdio) -> Serve {
        let address = format!("127.0.0.1:{}", free_port());
        let mut command = support::cli::plugin_process();
        command
            .args(["serve", "--all-contexts", "--listen", &address, "--stale-after", "3s", "--request-timeout", "3s", "--kubeconfig"])
            .arg(kubeconfig)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        Serve { address, _process: KillOnDrop(command.spawn().expect("start serve")) }
    }

    /// Polls `/readyz` until it answers `code`; returns its body.
    fn wait_readyz(&self, code: u16) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            match get(&self.address, "/readyz", None) {
                Ok((status, body)) if status == code => return body,
                answer => assert!(Instant::now() < deadline, "/readyz did not answer {code} within {BOUND:?}: {answer:?}"),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn metrics(&self) -> String {
        get(&self.address, "/metrics", None).expect("scrape serve").1
    }
}

/// The pool figures of one cluster in an exposition: `metric{pool,family}` → value, for the
/// metrics of `support::cli::METRIC_FIELDS`, from the samples labelled `cluster="context"`.
/// `check -o json`'s fleet problems counted by (kind, severity).
fn fleet_problem_counts(check: &Value) -> BTreeMap<(String, String), f64> {
    let mut counts = BTreeMap::new();
    for (severity, kind, _) in kinds(check) {
        *counts.entry((kind, severity)).or_default() += 1.0;
    }
    counts
}

/// The `ciliumpool_fleet_problems_by_kind` samples of an exposition by (kind, severity).
fn fleet_problem_series(exposition: &str) -> BTreeMap<(String, String), f64> {
    exposition
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("ciliumpool_fleet_problems_by_kind{kind=\"")?;
            let (kind, rest) = rest.split_once("\",severity=\"")?;
            let (severity, value) = rest.split_once("\"} ")?;
            Some(((kind.to_string(), severity.to_string()), value.parse().expect("a sample value")))
        })
        .collect()
}

fn series(exposition: &str, context: &str) -> BTreeMap<String, f64> {
    let own = format!("{{cluster=\"{context}\",");
    exposition
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(&own)?;
            support::cli::METRIC_FIELDS.iter().any(|(metric, _)| *metric == name).then_some(())?;
            let (labels, value) = rest.rsplit_once("} ")?;
            Some((format!("{name}{{{labels}}}"), value.parse().expect("a sample value")))
        })
        .collect()
}

/// The same figures from a `usage -o json` document (the metric-to-field table of the docs).
fn figures(usage: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for pool in usage["pools"].as_array().unwrap() {
        for fam in pool["families"].as_array().unwrap() {
            for (metric, field) in support::cli::METRIC_FIELDS {
                if let Some(value) = fam[field].as_f64() {
                    out.insert(
                        format!("{metric}{{pool=\"{}\",family=\"{}\"}}", pool["name"].as_str().unwrap(), fam["family"].as_str().unwrap()),
                        value,
                    );
                }
            }
        }
    }
    out
}

/// Issue 43 §1 and §3 on one control plane reached by two contexts (an admin and a read-only one,
/// each with its kubeconfig cluster entry: the common case). `--all-contexts` reads it once, as
/// the first context, in usage, check, ip and -o name; the warning names both. A mistyped
/// context among good ones is exit 2 before any request (`-v` traces none); it was exit 3 after
/// reading the good one.
#[test]
fn two_contexts_of_one_control_plane_print_once_and_a_typo_asks_nothing() {
    let cluster = start(&CLUSTERS[0]);
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("kubeconfig");
    kubeconfig(std::slice::from_ref(&cluster), &config);
    add_context(&config, "viewer", str::to_string);

    let same = ("warning".to_string(), "fleet-same-cluster".to_string(), json!(["c1", "viewer"]));
    for args in [&["usage", "-o", "json"][..], &["check", "-o", "json"], &["ip", CLUSTERS[0].5, "-o", "json"]] {
        let (code, doc, stderr) = plugin(&config, &[args, &["--all-contexts"]].concat());
        // check reports the warning (exit 1, as any problem it finds); usage and ip print.
        assert_eq!(code, i32::from(args[0] == "check"), "{args:?}: {stderr}");
        let names: Vec<&str> = doc["clusters"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
        assert_eq!(names, ["c1"], "{args:?}: read and shown once, as the first context");
        assert_eq!(kinds(&doc), std::slice::from_ref(&same), "{args:?}");
        assert!(stderr.contains("contexts c1, viewer reach the same API server"), "{stderr}");
    }
    let out =
        support::cli::plugin().args(["--kubeconfig", config.to_str().unwrap(), "usage", "-o", "name", "--all-contexts"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "c1 ciliumpodippool.cilium.io/blue\n");
    let out = support::cli::plugin()
        .args(["--kubeconfig", config.to_str().unwrap(), "usage", "--no-headers", "--context", "viewer,c1"])
        .output()
        .unwrap();
    let rows: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].starts_with("viewer "), "under the first context named: {rows:?}");

    let out =
        support::cli::plugin().args(["--kubeconfig", config.to_str().unwrap(), "-v", "usage", "--context", "c1,nope"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(stderr.contains("--context \"nope\": the kubeconfig has no such context; its contexts: c1, viewer"), "{stderr}");
    assert!(!stderr.contains("GET "), "no request before the contexts are checked: {stderr}");
}

/// `cilium-config` of a multi-pool cluster in native routing over `native`, BPF masquerading on.
fn routed_config(name: &str, id: u32, native: &str) -> Value {
    let mut config = config(name, id);
    let data = config["data"].as_object_mut().unwrap();
    for (key, value) in [
        ("routing-mode", "native"),
        ("ipv4-native-routing-cidr", native),
        ("enable-bpf-masquerade", "true"),
        ("enable-ipv4-masquerade", "true"),
    ] {
        data.insert(key.into(), json!(value));
    }
    config
}

/// (kind, object, clusters) of the routing problems of a fleet `check -o json`: each cluster's
/// own (clusters: its name) and those between clusters.
fn routing_problems(doc: &Value) -> Vec<(String, String, String)> {
    let routing = |p: &&Value| p["kind"].as_str().is_some_and(|k| k.contains("routing") || k.contains("unrouted"));
    let mut out = Vec::new();
    for cluster in doc["clusters"].as_array().unwrap_or_else(|| panic!("{doc}")) {
        for p in cluster["problems"].as_array().unwrap().iter().filter(routing) {
            out.push((p["kind"].as_str().unwrap().into(), p["object"].as_str().unwrap().into(), json!([cluster["cluster"]]).to_string()));
        }
    }
    for p in doc["fleetProblems"].as_array().unwrap().iter().filter(routing) {
        out.push((p["kind"].as_str().unwrap().into(), p["object"].as_str().unwrap().into(), p["clusters"].to_string()));
    }
    out
}

/// Issue 43 §5 and §1 on two live clusters. east routes 10.60.0.0/16 natively and masquerades the
/// rest, its pool `edge` (10.99.0.0/24) lies outside: `pool-outside-native-routing-cidr`; west
/// routes 10.80.0.0/16, so each cluster's pools lie outside the other's native-routing CIDR:
/// `fleet-unrouted-pool-cidr` both ways. With 10.0.0.0/8 as both native-routing CIDRs (the
/// ConfigMaps updated live) neither kind is found. Then a third context reaches east by another
/// URL (`localhost` for `127.0.0.1`): its servers differ, but its cilium-config has east's
/// cluster-id and cluster-name, so it is one cluster, shown once as the first context.
#[test]
fn routing_checks_on_live_clusters_and_one_cluster_by_id_and_name() {
    let specs = [("east", 1, "10.60.0.0/16", "10.60.0.0/17"), ("west", 2, "10.80.0.0/16", "10.80.0.0/17")];
    let clusters: Vec<TestCluster> = specs
        .iter()
        .map(|(name, id, native, cidr)| {
            let cluster = TestCluster::start(Dialect::UpstreamV2);
            let mut objects = vec![routed_config(name, *id, native), pool("default", cidr)];
            if *name == "east" {
                objects.push(pool("edge", "10.99.0.0/24"));
            }
            cluster.create_objects(objects);
            cluster
        })
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("kubeconfig");
    kubeconfig(&clusters, &config);

    let (code, doc, stderr) = plugin(&config, &["check", "-o", "json", "--context", "c1,c2"]);
    assert_eq!(code, 1, "{stderr}");
    let mut found = routing_problems(&doc);
    found.sort();
    let expected = [
        ("fleet-unrouted-pool-cidr", "CiliumPodIPPool/default", json!(["c1", "c2"])),
        ("fleet-unrouted-pool-cidr", "CiliumPodIPPool/default", json!(["c2", "c1"])),
        ("fleet-unrouted-pool-cidr", "CiliumPodIPPool/edge", json!(["c1", "c2"])),
        ("pool-outside-native-routing-cidr", "CiliumPodIPPool/edge", json!(["c1"])),
    ];
    let expected: Vec<(String, String, String)> = expected.into_iter().map(|(k, o, c)| (k.into(), o.into(), c.to_string())).collect();
    assert_eq!(found, expected, "{doc}");

    for (cluster, (name, id, ..)) in clusters.iter().zip(specs) {
        cluster.apply_yaml(&routed_config(name, id, "10.0.0.0/8").to_string());
    }
    let (code, doc, stderr) = plugin(&config, &["check", "-o", "json", "--context", "c1,c2"]);
    assert_eq!(routing_problems(&doc), [], "{doc}");
    assert_eq!(code, 0, "{stderr}");

    // A third context: east by name instead of address.
    add_context(&config, "c3", |server| server.replace("127.0.0.1", "localhost"));
    for args in [&["usage", "-o", "json"][..], &["check", "-o", "json"]] {
        let (code, doc, stderr) = plugin(&config, &[args, &["--context", "c1,c2,c3"]].concat());
        assert_eq!(code, i32::from(args[0] == "check"), "{args:?}: {stderr}");
        let names: Vec<&str> = doc["clusters"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
        assert_eq!(names, ["c1", "c2"], "{args:?}: c3 is c1, shown once");
        let same = ("warning".to_string(), "fleet-same-cluster".to_string(), json!(["c1", "c3"]));
        assert_eq!(kinds(&doc), [same], "{args:?}: no overlap, no duplicate name or id between c1 and c3");
        assert!(stderr.contains("warning: contexts c1, c3 reach clusters with the same cluster-id 1 and cluster-name east"), "{stderr}");
    }
}

/// Issue 43 §1 for `serve`: one control plane reached by two contexts with different server URLs
/// (`127.0.0.1` and `localhost`), whose cilium-config has one cluster-id and cluster-name.
/// `serve --all-contexts` follows it once, under the first context: each pool's series appear
/// once, labelled `cluster="c1"`, nothing is labelled `c2`, a warning names both contexts and the
/// fleet problem series count one `fleet-same-cluster`. (Before, both contexts were followed: every
/// series twice, and the cluster overlapped itself.)
#[test]
fn serve_follows_two_urls_of_one_cluster_once_as_the_first_context() {
    let cluster = start(&CLUSTERS[0]);
    let scratch = tempfile::tempdir().unwrap();
    let config = scratch.path().join("kubeconfig");
    kubeconfig(std::slice::from_ref(&cluster), &config);
    add_context(&config, "c2", |server| server.replace("127.0.0.1", "localhost"));
    let (_, alone, stderr) = plugin(&config, &["usage", "-o", "json", "--context", "c1"]);
    let want = figures(&alone);
    assert!(!want.is_empty(), "{alone}\n{stderr}");

    let log = scratch.path().join("serve.stderr");
    let serve = Serve::start(&config, Stdio::from(std::fs::File::create(&log).unwrap()));
    serve.wait_readyz(200);
    let same = (String::from("fleet-same-cluster"), String::from("warning"));
    let deadline = Instant::now() + BOUND;
    let metrics = loop {
        let metrics = serve.metrics();
        if fleet_problem_series(&metrics).contains_key(&same) {
            break metrics;
        }
        assert!(Instant::now() < deadline, "no fleet-same-cluster series within {BOUND:?}:\n{metrics}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(series(&metrics, "c1"), want, "c1's series are its usage figures\n{metrics}");
    assert!(!metrics.contains("cluster=\"c2\""), "nothing is served under the second context:\n{metrics}");
    let capacity: Vec<&str> = metrics.lines().filter(|l| l.starts_with("ciliumpool_capacity_blocks{")).collect();
    assert_eq!(capacity.len(), 1, "the pool's series once: {capacity:?}");
    assert_eq!(fleet_problem_series(&metrics), BTreeMap::from([(same, 1.0)]), "the cluster is not compared with itself\n{metrics}");
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(
        stderr.contains(
            "warning: contexts c1, c2 reach clusters with the same cluster-id 1 and cluster-name alpha: one cluster, followed once as c1"
        ),
        "{stderr}"
    );
}
