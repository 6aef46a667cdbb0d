//! A fleet on files (docs/fleet.md): `-f east.yaml -f west.yaml --fleet` reads one cluster per
//! input. Each cluster's part of the fleet document equals that cluster's own document read alone,
//! and the fleet checks find what the example fleet was built with: the same cluster-id, pool
//! CIDRs that overlap with blocks held in the overlap by both clusters, a pod address in both.

use crate::support;

use serde_json::Value;
use std::path::PathBuf;
use support::cli::{json_of, run};

fn example(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fleet").join(name).display().to_string()
}

fn fleet(args: &[&str]) -> (i32, String, String) {
    let (east, west) = (example("east.yaml"), example("west.yaml"));
    run(&[args, &["-f", &east, "-f", &west, "--fleet"]].concat())
}

#[test]
fn each_clusters_part_is_its_own_document() {
    for command in [&["usage", "-o", "json"][..], &["check", "-o", "json"], &["ip", "10.10.128.7", "10.20.0.9", "-o", "json"]] {
        let (_, stdout, stderr) = fleet(command);
        let doc = json_of(&stdout);
        let clusters = doc["clusters"].as_array().unwrap_or_else(|| panic!("{command:?}: {stdout}{stderr}"));
        let names: Vec<&str> = clusters.iter().map(|c| c["cluster"].as_str().unwrap()).collect();
        assert_eq!(names, ["east", "west"], "named after cilium-config cluster-name");
        for (cluster, file) in clusters.iter().zip(["east.yaml", "west.yaml"]) {
            let mut part = cluster.clone();
            part.as_object_mut().unwrap().remove("cluster");
            let alone = json_of(&run(&[command, &["-f", &example(file)]].concat()).1);
            assert_eq!(part, alone, "{command:?} {file}");
        }
    }
}

fn fleet_problems(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    let problems = doc["fleetProblems"].as_array().unwrap();
    problems
        .iter()
        .map(|p| {
            let clusters = p["clusters"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_string()).collect();
            (p["severity"].as_str().unwrap().to_string(), p["kind"].as_str().unwrap().to_string(), clusters)
        })
        .collect()
}

#[test]
fn check_finds_what_breaks_a_cluster_mesh() {
    let (code, stdout, stderr) = fleet(&["check", "-o", "json"]);
    assert_eq!(code, 1, "{stderr}");
    let doc = json_of(&stdout);
    let both = vec!["east".to_string(), "west".to_string()];
    let error = |kind: &str| ("error".to_string(), kind.to_string(), both.clone());
    assert_eq!(fleet_problems(&doc), [error("fleet-overlapping-cidrs"), error("fleet-duplicate-cluster-id"), error("fleet-shared-pod-ip")]);
    let messages: Vec<&str> = doc["fleetProblems"].as_array().unwrap().iter().map(|p| p["message"].as_str().unwrap()).collect();
    assert!(messages[0].contains("in 10.10.128.0/17") && messages[0].contains("east: east-2 and west: west-1"), "{}", messages[0]);
    assert!(messages[2].contains("10.10.128.7 (shop/cart-2 in east, shop/pay-1 in west)"), "{}", messages[2]);
    // --severity filters the fleet problems as it filters each cluster's.
    let (_, stdout, _) = fleet(&["check", "-o", "json", "--severity", "error"]);
    assert_eq!(fleet_problems(&json_of(&stdout)).len(), 3);
}

#[test]
fn a_cluster_against_itself_breaks_everything_and_names_fall_back_to_files() {
    let east = example("east.yaml");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("east-copy.yaml");
    std::fs::copy(&east, &copy).unwrap();
    let (code, stdout, stderr) = run(&["check", "-o", "json", "-f", &east, "-f", copy.to_str().unwrap(), "--fleet"]);
    assert_eq!(code, 1, "{stderr}");
    let doc = json_of(&stdout);
    let kinds: Vec<String> = fleet_problems(&doc)
        .into_iter()
        .map(|(_, kind, clusters)| {
            assert_eq!(clusters, ["east.yaml", "east-copy.yaml"], "the same cluster-name twice: file names tell them apart");
            kind
        })
        .collect();
    assert_eq!(kinds, ["fleet-overlapping-cidrs", "fleet-duplicate-cluster-name", "fleet-duplicate-cluster-id", "fleet-shared-pod-ip"]);
}

#[test]
fn ip_says_which_cluster_holds_an_address() {
    let (code, stdout, stderr) = fleet(&["ip", "10.10.128.7", "10.20.0.9", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc = json_of(&stdout);
    let pool = |cluster: usize, address: usize| doc["clusters"][cluster]["addresses"][address]["pool"].clone();
    assert_eq!([pool(0, 0), pool(1, 0), pool(0, 1), pool(1, 1)], [Value::from("blue"), "green".into(), Value::Null, "red".into()]);
    let (code, stdout, _) = fleet(&["ip", "10.10.128.7", "10.99.0.1"]);
    assert_eq!(code, 1, "10.99.0.1 is in no pool of any cluster");
    let first = stdout.lines().next().unwrap();
    assert!(first.starts_with("CLUSTER"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("west") && l.contains("pay-1")), "{stdout}");
}

#[test]
fn tables_metrics_and_the_summary() {
    let (code, stdout, stderr) = fleet(&["usage"]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(rows[0].starts_with("CLUSTER") && rows[0].contains("POOL"), "{stdout}");
    let pools: Vec<(&str, &str)> = rows[1..4].iter().map(|r| r.split_whitespace().collect::<Vec<_>>()).map(|r| (r[0], r[1])).collect();
    assert_eq!(pools, [("east", "blue"), ("west", "green"), ("west", "red")]);
    assert!(stderr.contains("3 pools in 2 clusters; fullest pool: blue (ipv4) in east at 1%; 3 problem(s) between clusters"), "{stderr}");
    let (code, metrics, _) = fleet(&["usage", "-o", "openmetrics"]);
    assert_eq!(code, 0);
    let types: Vec<&str> = metrics.lines().filter(|l| l.starts_with("# TYPE")).collect();
    let mut unique = types.clone();
    unique.dedup();
    assert_eq!(types, unique, "each family once");
    assert!(metrics.contains("ciliumpool_cluster_up{cluster=\"west\"} 1"), "{metrics}");
    assert!(metrics.contains("ciliumpool_free_blocks{cluster=\"west\",pool=\"red\",family=\"ipv4\"} 255"), "{metrics}");
    assert!(metrics.ends_with("# EOF\n"));
}

#[test]
fn fleet_flags_where_they_mean_nothing_are_refused() {
    let (code, _, stderr) = run(&["usage", "--fleet"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--fleet reads one cluster per -f input"), "{stderr}");
    let (code, _, stderr) = fleet(&["inspect", "blue"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = run(&["usage", "--context", "a,b", "-f", &example("east.yaml")]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn a_cell_with_three_spaces_does_not_shift_the_columns() {
    // A pool name from a file may hold runs of spaces: its row keeps the header's columns.
    let dir = tempfile::tempdir().unwrap();
    let west = std::fs::read_to_string(example("west.yaml")).unwrap().replace("name: red", "name: red   hot");
    let hostile = dir.path().join("west.yaml");
    std::fs::write(&hostile, west).unwrap();
    let (code, stdout, stderr) = run(&["usage", "-f", &example("east.yaml"), "-f", hostile.to_str().unwrap(), "--fleet"]);
    assert_eq!(code, 0, "{stderr}");
    let header = stdout.lines().next().unwrap();
    let family = header.find("FAMILY").unwrap();
    let row = stdout.lines().find(|l| l.contains("red   hot")).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(row.get(family..family + 4), Some("ipv4"), "{stdout}");
    assert_eq!(row.split("   hot").count(), 2, "{stdout}");
}

/// A caveat of one cluster's input names that cluster (issue 31 §2): in a fleet, a bare
/// "the input holds no CiliumNodes" would not say which input.
#[test]
fn each_warning_names_its_cluster() {
    let pools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot/pools.yaml").display().to_string();
    let (code, _, stderr) = run(&["usage", "-f", &example("east.yaml"), "-f", &pools, "--fleet"]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "no CiliumNodes, no pods: {stderr}");
    assert!(warnings.iter().all(|w| w.starts_with("warning: cluster pools.yaml: the input holds no ")), "{stderr}");
}

/// Fleet `-o name` keeps the cluster: `CLUSTER RESOURCE.GROUP/NAME` per line, one record per
/// cluster and object (east holds pool blue, west green and red: examples/fleet/*.yaml).
#[test]
fn o_name_says_which_cluster() {
    let (code, stdout, stderr) = fleet(&["usage", "-o", "name"]);
    assert_eq!(code, 0, "{stderr}");
    let records: Vec<Vec<&str>> = stdout.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(
        records,
        [
            ["east", "ciliumpodippool.cilium.io/blue"],
            ["west", "ciliumpodippool.cilium.io/green"],
            ["west", "ciliumpodippool.cilium.io/red"]
        ]
    );
}

/// A kubeconfig of `contexts` (name, server URL), without credentials, written to a temporary file.
fn kubeconfig_of(contexts: &[(&str, String)]) -> tempfile::NamedTempFile {
    let entry = |(name, server): &(&str, String)| {
        (
            serde_json::json!({"name": name, "cluster": {"server": server}}),
            serde_json::json!({"name": name, "user": {}}),
            serde_json::json!({"name": name, "context": {"cluster": name, "user": name}}),
        )
    };
    let (clusters, (users, contexts)): (Vec<Value>, (Vec<Value>, Vec<Value>)) =
        contexts.iter().map(entry).map(|(c, u, x)| (c, (u, x))).unzip();
    let config = serde_json::json!({"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": contexts,
                                    "current-context": contexts[0]["name"]});
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config.to_string()).unwrap();
    file
}

/// A port that accepts connections and never answers; counts those accepted (still open or not).
struct Silent {
    listener: std::net::TcpListener,
    held: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Silent {
    fn new() -> Silent {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (accepting, kept) = (listener.try_clone().unwrap(), held.clone());
        std::thread::spawn(move || {
            for stream in accepting.incoming().flatten() {
                kept.lock().unwrap().push(stream);
            }
        });
        Silent { listener, held }
    }

    fn url(&self) -> String {
        format!("http://{}", self.listener.local_addr().unwrap())
    }

    fn accepted(&self) -> usize {
        self.held.lock().unwrap().len()
    }
}

/// Issue 43 §3: a mistyped context among several is bad input (exit 2), said before any cluster
/// is asked, as a single mistyped `--context` is (before: prod was read, then exit 3).
#[test]
fn a_mistyped_context_is_bad_input_before_any_request() {
    let prod = Silent::new();
    let config = kubeconfig_of(&[("prod-eu1", prod.url()), ("staging", prod.url())]);
    for contexts in ["prod-eu1,nope", "nope,prod-eu1", "nope"] {
        let (code, stdout, stderr) =
            run(&["usage", "--kubeconfig", config.path().to_str().unwrap(), "--request-timeout", "2s", "--context", contexts]);
        assert_eq!(code, 2, "--context {contexts}: {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(stderr.contains("\"nope\": the kubeconfig has no such context") && stderr.contains("prod-eu1, staging"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert_eq!(prod.accepted(), 0, "no request before the contexts are known to exist");
}

/// Issue 43 §3: `--context` values complete the kubeconfig's context names, also after `A,`.
#[test]
fn context_names_complete() {
    let config = kubeconfig_of(&[
        ("prod-eu1", "http://127.0.0.1:1".into()),
        ("prod-us1", "http://127.0.0.1:1".into()),
        ("staging", "http://127.0.0.1:1".into()),
    ]);
    let path = config.path().to_str().unwrap();
    let complete = |words: &[&str]| {
        let (code, stdout, stderr) = run(&[&["__complete", "--", "usage", "--kubeconfig", path][..], words].concat());
        assert_eq!(code, 0, "{stderr}");
        stdout.lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(complete(&["--context", "prod"]), ["prod-eu1", "prod-us1", ":4"]);
    assert_eq!(complete(&["--context", "prod-eu1,s"]), ["prod-eu1,staging", ":4"]);
    assert_eq!(complete(&["--context=st"]), ["--context=staging", ":4"]);
    assert_eq!(complete(&["--context", ""]).len(), 4);
}

/// Issue 43 §1: two contexts of one API server are one cluster, read once (one connection
/// attempt's worth of clusters), shown once under the first, and the warning names both.
#[test]
fn two_contexts_of_one_server_are_read_and_shown_once() {
    let server = Silent::new();
    let config = kubeconfig_of(&[("admin", server.url()), ("viewer", server.url() + "/")]);
    let (code, stdout, stderr) =
        run(&["usage", "-o", "json", "--kubeconfig", config.path().to_str().unwrap(), "--request-timeout", "1s", "--all-contexts"]);
    assert_eq!(code, 3, "{stderr}");
    let doc = json_of(&stdout);
    let names: Vec<&str> = doc["clusters"].as_array().unwrap().iter().map(|c| c["cluster"].as_str().unwrap()).collect();
    assert_eq!(names, ["admin"], "{stdout}");
    let problems = fleet_problems(&doc);
    assert_eq!(problems, [("warning".to_string(), "fleet-same-cluster".to_string(), vec!["admin".to_string(), "viewer".to_string()])]);
    assert!(stderr.contains("contexts admin, viewer reach the same API server"), "{stderr}");
    assert!(stderr.contains("1 of 1 clusters could not be read: admin"), "{stderr}");
}

/// Issue 43 §4: `--all-contexts` reads at most `CLUSTERS_AT_ONCE` (16) clusters at once. 40
/// contexts, each a server that accepts and never answers: once 16 are connected, no 17th is for
/// 3 s (before: all 40 connected at once). Only the first 16 contexts are asked (the order of the
/// kubeconfig).
#[test]
fn at_most_clusters_at_once_are_read_together() {
    const AT_ONCE: usize = ciliumpool::source::fleet::CLUSTERS_AT_ONCE;
    let servers: Vec<Silent> = (0..40).map(|_| Silent::new()).collect();
    let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    let contexts: Vec<(&str, String)> = names.iter().zip(&servers).map(|(n, s)| (n.as_str(), s.url())).collect();
    let config = kubeconfig_of(&contexts);
    let mut child = support::cli::plugin_process()
        .args(["usage", "--kubeconfig", config.path().to_str().unwrap(), "--request-timeout", "0", "--all-contexts"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let asked = || servers.iter().filter(|s| s.accepted() > 0).count();
    let start = std::time::Instant::now();
    while asked() < AT_ONCE && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // No server answers and no deadline ends a read: one cluster more could only start if reads
    // were not bounded. The grace period only gives an unbounded run the time to show it.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let connected: Vec<usize> = (0..40).filter(|&i| servers[i].accepted() > 0).collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(connected, (0..AT_ONCE).collect::<Vec<_>>());
}

/// Issue 43 §2: files of two clusters (different cilium-config cluster-name) without --fleet are
/// refused with one line saying to pass --fleet (before: merged into one cluster, with false
/// block-multiple-owners and overlapping-pools errors). A single input holding both is refused
/// with --fleet too.
#[test]
fn files_of_two_clusters_without_fleet_are_refused() {
    let (east, west) = (example("east.yaml"), example("west.yaml"));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/fleet").display().to_string();
    for args in [
        vec!["check", "-f", &east, "-f", &west],
        vec!["usage", "-f", &east, "-f", &west],
        vec!["ip", "10.10.128.7", "-f", &east, "-f", &west],
        vec!["usage", "-o", "json", "-f", &dir],
        vec!["check", "-f", &dir, "-f", &east, "--fleet"],
    ] {
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, 2, "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains("2 clusters (east, west)") && stderr.contains("--fleet"), "{stderr}");
    }
}
