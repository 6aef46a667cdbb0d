//! `serve` proven with real parts (issue 30, "Prove it"): the real control plane seeded with
//! pools, CiliumNodes, pods, CiliumEndpoints and `cilium-config`; `serve` running with the token
//! of a ServiceAccount bound to deploy/rbac.yaml; a real Prometheus (tools/prometheus/build.sh)
//! scraping it every second and evaluating deploy/prometheus/rules.yml. What Prometheus holds must
//! equal `usage -o json` / `inspect -o json` on the same cluster, before and after the cluster
//! changes and after the API server was stopped and resumed under a running `serve`. Every PromQL
//! expression of the rules and the dashboard must return series in some phase of the run, so a
//! renamed metric cannot leave a dead panel or a silent alert. One verb less in the role breaks a
//! named part. Waits are polls with generous bounds: none is a speed target.

use crate::support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use support::prometheus::{Prometheus, free_port, get, promql_of, sample_value, substitute};
use support::{Dialect, KillOnDrop, LineReader, TestCluster, cilium_endpoint, cilium_node, pod, read_manifests, repo_root};

/// Where deploy/ puts the exporter's ServiceAccount and Cilium's ConfigMap.
const NAMESPACE: &str = "kube-system";
/// Every poll of this file ends within it: a bound for a hang, not a speed target.
const BOUND: Duration = Duration::from_secs(90);

/// Per pool and family, the `usage -o json` field each metric carries.
const FIGURES: [(&str, &str); 12] = support::cli::METRIC_FIELDS;

/// The metrics [`expected`] computes, all of which are compared.
const COMPARED: [&str; 7] = [
    "ciliumpool_utilization_ratio",
    "ciliumpool_nodes_holding",
    "ciliumpool_runway_nodes",
    "ciliumpool_nodes_waiting",
    "ciliumpool_problems",
    "ciliumpool_problems_by_kind",
    "ciliumpool_pool_info",
];

#[test]
fn serve_with_the_deployed_role_feeds_a_real_prometheus_the_figures_of_usage_through_changes_and_an_outage() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    seed(&cluster);
    let dir = tempfile::tempdir().expect("temp dir");
    let deployed = grant(&cluster, "ciliumpool", Role::AsDeployed, dir.path());

    one_verb_less_breaks_a_named_part(&cluster, dir.path());

    let mut serve = Serve::start_with(&deployed, &["-v=2"]);
    // Its first read only learns the layout: one object of each big list (the watches list them).
    let first = serve.stderr.read_until(BOUND, "the first read of pods", |l| l.contains("/api/v1/pods?"));
    assert!(first.last().unwrap().contains("/api/v1/pods?limit=1 "), "{first:?}");
    serve.wait_ready();
    let (_, metrics) = get(&serve.address, "/metrics", None).unwrap();
    assert!(
        metrics.contains("ciliumpool_source_info{source=\"cluster\",ipam_mode=\"multi-pool\"} 1"),
        "the Role reads cilium-config:\n{metrics}"
    );
    let rules = repo_root().join("deploy/prometheus/rules.yml");
    let prometheus = Prometheus::start(&serve.address, &[&rules]);
    let mut expressions = Expressions::of_deploy();

    // 1. Every pool and family: what Prometheus scraped is what `usage` says.
    let before = expected(&deployed);
    wait_for_figures(&prometheus, &before, "the first scrape");
    expressions.evaluate(&prometheus, "healthy");

    // 2. Nodes, blocks and pods change; the series follow.
    change(&cluster);
    let after = expected(&deployed);
    assert_ne!(before, after, "the change moves figures");
    wait_for_figures(&prometheus, &after, "the change");
    // Pools that shrank: the forecast (alert and panel) has a pace to extrapolate.
    expressions.evaluate(&prometheus, "changed");

    // 3. The control plane stops under a running `serve`, and resumes.
    {
        let _resume = Resumed(&cluster);
        cluster.signal_apiserver("STOP");
        let reason = serve.wait_readyz(503);
        let names_a_watch = ["ciliumpodippools.cilium.io (", "ciliumnodes.cilium.io (", "pods (", "ciliumendpoints.cilium.io ("]
            .iter()
            .any(|r| reason.contains(r));
        assert!(
            reason.starts_with("stale: no proof that the state is current for ") && names_a_watch,
            "readyz names the failing watches and why: {reason}"
        );
        let (_, metrics) = get(&serve.address, "/metrics", None).expect("scrape serve");
        assert!(!metrics.contains("ciliumpool_free_blocks{"), "no pool figure is served as fresh while stale:\n{metrics}");
        let first = sample_value(&wait_for(&prometheus, "ciliumpool_exporter_staleness_seconds > 0", "a staleness above 0")[0]);
        let second = rising(&prometheus, first);
        assert!(second > first, "the staleness rises: {first} then {second}");
        wait_for(&prometheus, "ciliumpool_exporter_ready == 0", "ready 0 in Prometheus");
        expressions.evaluate(&prometheus, "stale");
    }
    serve.wait_readyz(200);
    wait_for_figures(&prometheus, &after, "the resumed control plane");
    // A change after the outage is followed too: the watches were restarted, not only re-listed once.
    cluster.kubectl(&["delete", "ciliumnode", "n3"]);
    let resumed = expected(&deployed);
    assert_ne!(after, resumed);
    wait_for_figures(&prometheus, &resumed, "a change after the outage");
    assert!(serve.running(), "the same serve process throughout");

    // 4. The exporter gone: the down alert's expression returns its series.
    drop(serve);
    wait_for(&prometheus, "up{job=\"ciliumpool\"} == 0", "the failed scrape");
    expressions.evaluate(&prometheus, "exporter down");
    expressions.assert_all_returned_series();
}

// --- the cluster --------------------------------------------------------------------------------

/// Pool `blue` (dual stack, roomy) and pool `full` (two blocks, both held, one by two nodes, and
/// a node waiting for more): every alert of rules.yml has a series to fire on. Pods and an
/// endpoint use addresses; `cilium-config` says multi-pool.
fn seed(cluster: &TestCluster) {
    let pools = [
        ("blue", json!({"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}, "ipv6": {"cidrs": ["fd00:40::/112"], "maskSize": 120}})),
        ("full", json!({"ipv4": {"cidrs": ["10.60.0.0/27"], "maskSize": 28}})),
    ];
    let mut objects: Vec<Value> = pools
        .into_iter()
        .map(
            |(name, spec)| json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": name}, "spec": spec}),
        )
        .collect();
    objects.extend([
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": NAMESPACE, "name": "cilium-config"}, "data": {"ipam": "multi-pool"}}),
        cilium_node("n1", &[("blue", &["10.40.0.0/24", "fd00:40::/120"])], 16),
        cilium_node("n2", &[("blue", &["10.40.1.0/24"])], 16),
        cilium_node("f1", &[("full", &["10.60.0.0/28", "10.60.0.16/28"])], 64),
        cilium_node("f2", &[("full", &["10.60.0.16/28"])], 8),
        pod("shop", "web-1", "n1", &["10.40.0.5", "fd00:40::5"]),
        pod("shop", "web-2", "n1", &["10.40.0.6"]),
        pod("shop", "db-1", "n2", &["10.40.1.5"]),
        pod("batch", "job-1", "f1", &["10.60.0.3"]),
        cilium_endpoint("shop", "web-3", "192.168.0.2", &["10.40.1.9"]),
    ]);
    cluster.create_objects(objects);
}

/// A new node with two blocks, a block more for n2, pods added and one deleted.
fn change(cluster: &TestCluster) {
    cluster.create_objects(vec![
        cilium_node("n3", &[("blue", &["10.40.2.0/24", "10.40.3.0/24"])], 16),
        pod("shop", "web-4", "n3", &["10.40.2.7"]),
        pod("shop", "web-5", "n3", &["10.40.3.8"]),
    ]);
    let allocated = r#"{"spec":{"ipam":{"pools":{"allocated":[{"pool":"blue","cidrs":["10.40.1.0/24","10.40.4.0/24"]}]}}}}"#;
    cluster.kubectl(&["patch", "ciliumnode", "n2", "--type=merge", "-p", allocated]);
    // No kubelet confirms a graceful deletion: the pod goes at once.
    cluster.kubectl(&["delete", "pod", "-n", "shop", "web-2", "--grace-period=0", "--force"]);
}

/// Sends SIGCONT to the API server when dropped, so that a failing assertion never leaves it stopped.
struct Resumed<'a>(&'a TestCluster);

impl Drop for Resumed<'_> {
    fn drop(&mut self) {
        self.0.signal_apiserver("CONT");
    }
}

// --- RBAC ---------------------------------------------------------------------------------------

/// deploy/rbac.yaml as shipped, or with one permission less.
#[derive(Clone, Copy, Debug)]
enum Role {
    AsDeployed,
    /// The ClusterRole without `watch` of CiliumNodes.
    NoWatchOfNodes,
    /// Without the Role (and its binding) for `cilium-config`.
    NoCiliumConfigAccess,
}

/// Applies deploy/serviceaccount.yaml and deploy/rbac.yaml (as `account`, changed as `role` says)
/// and returns a kubeconfig holding a token of that ServiceAccount (TokenRequest API).
fn grant(cluster: &TestCluster, account: &str, role: Role, dir: &Path) -> PathBuf {
    let mut objects = read_manifests("deploy/serviceaccount.yaml");
    objects.extend(read_manifests("deploy/rbac.yaml"));
    for object in &mut objects {
        rename(object, account);
    }
    match role {
        Role::AsDeployed => {}
        Role::NoWatchOfNodes => {
            let rules = objects.iter_mut().find(|o| o["kind"] == "ClusterRole").expect("a ClusterRole")["rules"].as_array_mut().unwrap();
            let shared = rules.iter_mut().find(|r| r["resources"].as_array().unwrap().contains(&json!("ciliumnodes"))).unwrap();
            shared["resources"].as_array_mut().unwrap().retain(|r| r != "ciliumnodes");
            let verbs: Vec<Value> = shared["verbs"].as_array().unwrap().iter().filter(|v| *v != "watch").cloned().collect();
            rules.push(json!({"apiGroups": ["cilium.io"], "resources": ["ciliumnodes"], "verbs": verbs}));
        }
        Role::NoCiliumConfigAccess => objects.retain(|o| o["kind"] != "Role" && o["kind"] != "RoleBinding"),
    }
    cluster.apply_yaml(&json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string());
    let user = format!("system:serviceaccount:{NAMESPACE}:{account}");
    // RBAC reaches the API server's authorizer asynchronously: wait until it says yes.
    let deadline = Instant::now() + BOUND;
    while !cluster
        .kubectl_command()
        .args(["auth", "can-i", "list", "ciliumnodes.cilium.io", "--as", &user])
        .output()
        .unwrap()
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "{user} may not list CiliumNodes within {BOUND:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let token = cluster.kubectl(&["create", "token", account, "-n", NAMESPACE, "--duration", "1h"]);
    let kubeconfig = dir.join(format!("{account}.kubeconfig"));
    let config = json!({"apiVersion": "v1", "kind": "Config", "current-context": account,
        "clusters": [{"name": "test", "cluster": {"server": cluster.server, "certificate-authority": cluster.dir.join("ca.crt")}}],
        "users": [{"name": account, "user": {"token": token.trim()}}],
        "contexts": [{"name": account, "context": {"cluster": "test", "user": account}}]});
    std::fs::write(&kubeconfig, config.to_string()).expect("write the kubeconfig");
    kubeconfig
}

/// Gives deploy/'s objects their own names for `account`, so that variants coexist.
fn rename(object: &mut Value, account: &str) {
    let renamed = |name: &Value| json!(name.as_str().unwrap().replacen("ciliumpool", account, 1));
    object["metadata"]["name"] = renamed(&object["metadata"]["name"]);
    if object.get("roleRef").is_some() {
        object["roleRef"]["name"] = renamed(&object["roleRef"]["name"]);
        for subject in object["subjects"].as_array_mut().unwrap() {
            subject["name"] = json!(account);
        }
    }
}

/// Without `watch` of CiliumNodes, that watch is down by name (readyz, watch_up, a warning),
/// the others up; without the cilium-config Role, the IPAM mode is unknown and a warning names
/// the ConfigMap. The deployed role has neither defect (the main test: ready, multi-pool).
fn one_verb_less_breaks_a_named_part(cluster: &TestCluster, dir: &Path) {
    let serve = Serve::start(&grant(cluster, "ciliumpool-nowatch", Role::NoWatchOfNodes, dir));
    let warning = serve.stderr.read_until(BOUND, "a warning about the CiliumNode watch", |l| l.contains("ciliumnodes.cilium.io"));
    assert!(warning.last().unwrap().contains("forbidden") || warning.last().unwrap().contains("403"), "{warning:?}");
    // The other watches list and come up; the one without its verb stays down, by name. Its
    // resource is listed once (the list verb), so its figures stand until `--stale-after` (5s).
    // The warning may come from the refused streaming list, before that listing: until /readyz
    // says stale, "down and no figures" can still be the first sync, which the listing ends.
    let up = |resource: &str, up: u8| format!("ciliumpool_exporter_watch_up{{resource=\"{resource}\"}} {up}");
    let others = ["ciliumpodippools.cilium.io", "pods", "ciliumendpoints.cilium.io"];
    let deadline = Instant::now() + BOUND;
    let metrics = loop {
        let (code, reason) = get(&serve.address, "/readyz", None).unwrap();
        let stale = code == 503 && reason.starts_with("stale:") && reason.contains("ciliumnodes.cilium.io (");
        let (_, metrics) = get(&serve.address, "/metrics", None).unwrap();
        let stale = stale && metrics.lines().any(|l| l == up("ciliumnodes.cilium.io", 0)) && !metrics.contains("ciliumpool_free_blocks{");
        if others.iter().all(|r| metrics.lines().any(|l| l == up(r, 1))) && stale {
            break metrics;
        }
        assert!(
            Instant::now() < deadline,
            "the other watches up, the CiliumNode one down and stale, its figures gone, within {BOUND:?}:\n{reason}\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(metrics.contains("ciliumpool_exporter_ready 0"), "{metrics}");
    let (code, reason) = get(&serve.address, "/readyz", None).unwrap();
    assert_eq!(code, 503, "not ready without the watch: {reason}");
    drop(serve);

    let mut serve = Serve::start(&grant(cluster, "ciliumpool-noconfig", Role::NoCiliumConfigAccess, dir));
    serve.wait_ready();
    let (_, metrics) = get(&serve.address, "/metrics", None).unwrap();
    assert!(metrics.contains("ciliumpool_source_info{source=\"cluster\",ipam_mode=\"unknown\"} 1"), "{metrics}");
    serve.stderr.read_until(BOUND, "a warning naming cilium-config", |l| l.starts_with("warning:") && l.contains("cilium-config"));
}

// --- serve ----------------------------------------------------------------------------------------

/// A running `serve` on a free loopback port, its stderr read line by line.
struct Serve {
    address: String,
    stderr: LineReader,
    process: KillOnDrop,
}

impl Serve {
    /// Short bounds, so that an outage shows within seconds: each request (and each read of a
    /// watch stream) 5 s, stale after 5 s of failing.
    fn start(kubeconfig: &Path) -> Serve {
        Serve::start_with(kubeconfig, &[])
    }

    /// [`Serve::start`] with more flags.
    fn start_with(kubeconfig: &Path, flags: &[&str]) -> Serve {
        let address = format!("127.0.0.1:{}", free_port());
        let mut command = support::cli::plugin_process();
        command
            .args(["serve", "--listen", &address, "--stale-after", "5s", "--request-timeout", "5s", "--kubeconfig"])
            .arg(kubeconfig)
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("start serve");
        let stderr = LineReader::new(child.stderr.take().unwrap());
        stderr.read_until(BOUND, "serve's listening line", |l| l.contains("serving /metrics"));
        Serve { address, stderr, process: KillOnDrop(child) }
    }

    fn wait_ready(&mut self) {
        self.wait_readyz(200);
    }

    /// Polls `/readyz` until it answers `code`; returns its body.
    fn wait_readyz(&mut self, code: u16) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let answer = get(&self.address, "/readyz", None);
            if let Ok((status, body)) = &answer
                && *status == code
            {
                return body.clone();
            }
            assert!(self.process.0.try_wait().unwrap().is_none(), "serve exited: {answer:?}");
            assert!(Instant::now() < deadline, "/readyz did not answer {code} within {BOUND:?}: {answer:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn running(&mut self) -> bool {
        self.process.0.try_wait().unwrap().is_none()
    }
}

// --- the figures ------------------------------------------------------------------------------------

/// Series key → value: `metric{label="value",...}` with the labels sorted.
type Figures = BTreeMap<String, f64>;

fn key(metric: &str, labels: &[(&str, &str)]) -> String {
    let mut labels = labels.to_vec();
    labels.sort();
    let labels: Vec<String> = labels.iter().map(|(name, value)| format!("{name}={value:?}")).collect();
    format!("{metric}{{{}}}", labels.join(","))
}

fn number(value: &Value) -> f64 {
    value.as_f64().or_else(|| value.as_str()?.parse().ok()).unwrap_or_else(|| panic!("not a number: {value}"))
}

/// What the exporter must serve, from `usage -o json` and `inspect -o json` (its per-family
/// runway and nodes holding) run with the same credentials on the same cluster.
fn expected(kubeconfig: &Path) -> Figures {
    let run = |args: &[&str]| -> Value {
        let (code, stdout, stderr) = support::cli::output(support::cli::plugin().args(args).arg("--kubeconfig").arg(kubeconfig));
        assert_eq!(code, 0, "{args:?}: {stderr}");
        support::cli::json_of(&stdout)
    };
    let usage = run(&["usage", "-o", "json"]);
    let inspect = run(&["inspect", "-o", "json"]);
    let mut figures = Figures::new();
    let mut waiting: BTreeMap<(String, String), f64> = BTreeMap::new();
    for pool in usage["pools"].as_array().unwrap() {
        let name = pool["name"].as_str().unwrap();
        figures.insert(
            key(
                "ciliumpool_pool_info",
                &[("pool", name), ("api_version", pool["apiVersion"].as_str().unwrap()), ("dialect", pool["dialect"].as_str().unwrap())],
            ),
            1.0,
        );
        for fam in pool["families"].as_array().unwrap() {
            let family = fam["family"].as_str().unwrap();
            let labels = [("pool", name), ("family", family)];
            for (metric, field) in FIGURES {
                figures.insert(key(metric, &labels), number(&fam[field]));
            }
            let (allocated, free) = (number(&fam["allocatedBlocks"]), number(&fam["freeBlocks"]));
            if allocated + free > 0.0 {
                figures.insert(key("ciliumpool_utilization_ratio", &labels), allocated / (allocated + free));
            }
            let detail = inspected(&inspect, name, family);
            figures.insert(key("ciliumpool_nodes_holding", &labels), number(&detail["nodesHolding"]));
            if !detail["runwayNodes"].is_null() {
                figures.insert(key("ciliumpool_runway_nodes", &labels), number(&detail["runwayNodes"]));
            }
            waiting.insert((name.to_string(), family.to_string()), 0.0);
        }
    }
    // A node waits when it requests more addresses of a pool and family than its blocks hold.
    for node in usage["nodes"].as_array().unwrap() {
        for pool in node["pools"].as_array().unwrap() {
            for fam in pool["families"].as_array().unwrap() {
                if number(&fam["neededAddresses"]) > number(&fam["usableAddresses"]) {
                    let entry = (pool["pool"].as_str().unwrap().to_string(), fam["family"].as_str().unwrap().to_string());
                    // Only pools that exist have series.
                    if let Some(n) = waiting.get_mut(&entry) {
                        *n += 1.0;
                    }
                }
            }
        }
    }
    for ((pool, family), n) in waiting {
        figures.insert(key("ciliumpool_nodes_waiting", &[("pool", &pool), ("family", &family)]), n);
    }
    let problems = usage["problems"].as_array().unwrap();
    for severity in ["error", "warning", "info"] {
        let n = problems.iter().filter(|p| p["severity"] == severity).count();
        figures.insert(key("ciliumpool_problems", &[("severity", severity)]), n as f64);
    }
    for problem in problems {
        let labels = [("kind", problem["kind"].as_str().unwrap()), ("severity", problem["severity"].as_str().unwrap())];
        *figures.entry(key("ciliumpool_problems_by_kind", &labels)).or_default() += 1.0;
    }
    figures
}

/// The family `family` of pool `pool` in an `inspect -o json` document.
fn inspected<'a>(inspect: &'a Value, pool: &str, family: &str) -> &'a Value {
    let pools = inspect["pools"].as_array().or(inspect.as_array()).unwrap_or_else(|| panic!("no pools in {inspect}"));
    let pool = pools.iter().find(|p| p["name"] == pool).unwrap_or_else(|| panic!("no pool {pool} in {inspect}"));
    pool["families"].as_array().unwrap().iter().find(|f| f["family"] == family).unwrap()
}

/// What Prometheus holds now of the metrics [`expected`] computes.
fn scraped(prometheus: &Prometheus) -> Figures {
    let names: Vec<&str> = FIGURES.iter().map(|(metric, _)| *metric).chain(COMPARED).collect();
    let selector = format!("{{__name__=~\"{}\"}}", names.join("|"));
    let mut figures = Figures::new();
    for sample in prometheus.query(&selector) {
        let metric = sample["metric"].as_object().unwrap();
        let name = metric["__name__"].as_str().unwrap();
        let labels: Vec<(&str, &str)> = metric
            .iter()
            .filter(|(label, _)| !["__name__", "job", "instance"].contains(&label.as_str()))
            .map(|(l, v)| (l.as_str(), v.as_str().unwrap()))
            .collect();
        figures.insert(key(name, &labels), sample_value(&sample));
    }
    figures
}

/// Polls Prometheus until it holds exactly `want` (a new scrape every second).
fn wait_for_figures(prometheus: &Prometheus, want: &Figures, after: &str) {
    let deadline = Instant::now() + BOUND;
    loop {
        let got = scraped(prometheus);
        if &got == want {
            eprintln!("[cluster_serve] {} series equal usage/inspect after {after}", want.len());
            return;
        }
        if Instant::now() >= deadline {
            let differ: Vec<String> = want
                .keys()
                .chain(got.keys())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|k| want.get(*k) != got.get(*k))
                .map(|k| format!("{k}: usage {:?}, Prometheus {:?}", want.get(k), got.get(k)))
                .collect();
            panic!("after {after}, Prometheus still differs from usage after {BOUND:?}:\n{}\n{}", differ.join("\n"), prometheus.log());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Polls until `promql` returns series; returns them.
fn wait_for(prometheus: &Prometheus, promql: &str, what: &str) -> Vec<Value> {
    let deadline = Instant::now() + BOUND;
    loop {
        let result = prometheus.query(promql);
        if !result.is_empty() {
            return result;
        }
        assert!(Instant::now() < deadline, "no {what} ({promql}) within {BOUND:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Polls the staleness until it is above `than`; returns it.
fn rising(prometheus: &Prometheus, than: f64) -> f64 {
    let deadline = Instant::now() + BOUND;
    loop {
        let now = prometheus.query("ciliumpool_exporter_staleness_seconds").first().map(sample_value).unwrap_or(0.0);
        if now > than || Instant::now() >= deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

// --- the PromQL of deploy/ ------------------------------------------------------------------------

/// Every PromQL expression of deploy/prometheus/rules.yml and deploy/grafana/*.json, and the
/// phases in which each returned series.
struct Expressions {
    /// (where it is, the expression as evaluated, phases that returned series)
    all: Vec<(String, String, Vec<&'static str>)>,
}

impl Expressions {
    fn of_deploy() -> Expressions {
        let mut all = Vec::new();
        let rules: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(repo_root().join("deploy/prometheus/rules.yml")).unwrap()).unwrap();
        for group in rules["groups"].as_array().unwrap() {
            for rule in group["rules"].as_array().unwrap() {
                let name = rule["alert"].as_str().or(rule["record"].as_str()).unwrap();
                let expr = rule["expr"].as_str().unwrap().to_string();
                // One cluster serves no series between clusters: those are a fleet's, checked by
                // tests/integration/cluster_fleet.rs against `check` and by the rules' promtool unit test.
                if expr.contains("ciliumpool_fleet_") {
                    continue;
                }
                all.push((format!("rules.yml {name}"), expr));
            }
        }
        let grafana = repo_root().join("deploy/grafana");
        for file in support::files_under(&grafana) {
            let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(grafana.join(&file)).unwrap()).unwrap();
            let mut found = Vec::new();
            promql_of(&dashboard, &mut found);
            // As for the rules: the fleet panel is evaluated by tests/cluster_fleet.rs.
            found.retain(|expr| !expr.contains("ciliumpool_fleet_"));
            all.extend(found.into_iter().map(|expr| (format!("{} {expr}", file.display()), expr)));
        }
        assert!(all.len() >= 6 + 6, "the rules and the dashboard hold expressions: {all:?}");
        Expressions { all: all.into_iter().map(|(place, expr)| (place, substitute(&expr), Vec::new())).collect() }
    }

    fn evaluate(&mut self, prometheus: &Prometheus, phase: &'static str) {
        for (_, expr, phases) in &mut self.all {
            if !prometheus.query(expr).is_empty() {
                phases.push(phase);
            }
        }
    }

    fn assert_all_returned_series(&self) {
        for (place, expr, phases) in &self.all {
            eprintln!("[cluster_serve] {place} ({expr}): series in {phases:?}");
        }
        let dead: Vec<String> =
            self.all.iter().filter(|(_, _, phases)| phases.is_empty()).map(|(place, expr, _)| format!("{place}: {expr}")).collect();
        assert!(dead.is_empty(), "expressions that never returned a series:\n{}", dead.join("\n"));
    }
}
