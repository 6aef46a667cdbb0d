//! The live-cluster read path against a real kube-apiserver (issue 3): live equals offline,
//! plugin dispatch through kubectl, RBAC degradation, failures with exit 3, `--watch` and
//! pagination. Each test runs its own control plane (see tests/support).

use crate::support;

use serde_json::{Value, json};
use std::process::Command;
use std::time::{Duration, Instant};
use support::cli::family;
use support::{Dialect, LineReader, PLUGIN, TestCluster, cilium_endpoint, cilium_node, pod, read_manifests};

/// Parses a command's stdout as JSON, showing stderr when that fails.
fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}); stderr:\n{}\nstdout:\n{}",
            String::from_utf8_lossy(&output.stderr),
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Runs the command, requires exit 0 and returns stdout as JSON.
fn run_json(command: &mut assert_cmd::Command) -> Value {
    run_json_exiting(command, 0)
}

fn run_json_exiting(command: &mut assert_cmd::Command, code: i32) -> Value {
    json_of(&command.assert().code(code).get_output().clone())
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A kubeconfig for `server` with a bearer token nobody issued (TLS not verified).
fn token_kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}', insecure-skip-tls-verify: true}}\n\
         users:\n- name: someone\n  user: {{token: not-issued}}\ncontexts:\n- name: c\n  context: {{cluster: c, user: someone}}\ncurrent-context: c\n"
    );
    std::fs::write(&path, config).expect("write kubeconfig");
    path
}

/// A v2alpha1 pool with one IPv4 CIDR.
fn v2alpha1_pool(name: &str, cidr: &str, mask: u8) -> Value {
    json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": name},
           "spec": {"ipv4": {"cidrs": [cidr], "maskSize": mask}}})
}

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

/// The example cluster (minus the CFP-shaped `green`, which an upstream CRD rejects) loaded into
/// a real apiserver: v2alpha1 pools stored before the move to v2 storage, an upstream v2 pool with
/// reservations after it, 36 CiliumNodes, 534 Pods with seeded status, 515 CiliumEndpoints.
/// `usage`/`check -o json` live must equal the same commands on a `kubectl get -o yaml` dump.
#[test]
fn live_usage_equals_offline_usage_of_a_kubectl_dump() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    let pools = read_manifests("examples/snapshot/pools.yaml");
    let (v2alpha1, v2): (Vec<Value>, Vec<Value>) =
        pools.into_iter().filter(|p| p["metadata"]["name"] != "green").partition(|p| p["apiVersion"] == "cilium.io/v2alpha1");
    cluster.create_objects(v2alpha1);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    cluster.create_objects(v2);
    cluster.create_objects(read_manifests("examples/snapshot/ciliumnodes.yaml"));
    cluster.create_objects(read_manifests("examples/snapshot/pods.yaml"));
    cluster.create_objects(read_manifests("examples/snapshot/ciliumendpoints.json"));

    let dump = tempfile::tempdir().expect("temp dir");
    let objects = cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io,ciliumnodes,pods,ciliumendpoints", "-A", "-o", "yaml"]);
    std::fs::write(dump.path().join("objects.yaml"), objects).expect("write dump");
    let crd = cluster.kubectl(&["get", "crd", "ciliumpodippools.cilium.io", "-o", "yaml"]);
    std::fs::write(dump.path().join("crd.yaml"), crd).expect("write dump");
    // `check` exits 1: the example has problems on purpose.
    let offline = |command: &str, code: i32| {
        let mut doc = run_json_exiting(assert_cmd::Command::new(PLUGIN).args([command, "-o", "json", "-f"]).arg(dump.path()), code);
        assert_eq!(doc["source"]["kind"], "files");
        doc.as_object_mut().expect("object").remove("source");
        doc
    };
    let live = |command: &str, code: i32| {
        let mut doc = run_json_exiting(cluster.plugin().args([command, "-o", "json"]), code);
        assert_eq!(doc["source"], json!({"kind": "cluster", "server": cluster.server, "context": "testenv", "ipamMode": "unknown"}));
        doc.as_object_mut().expect("object").remove("source");
        doc
    };

    let usage = live("usage", 0);
    assert_eq!(usage, offline("usage", 0), "live and offline usage differ");
    assert_eq!(live("check", 1), offline("check", 1), "live and offline check differ");
    assert_eq!(live("inspect", 0), offline("inspect", 0), "live and offline inspect differ");
    // Not vacuous: every pool read, through v2, with used addresses from the seeded pods.
    let names: Vec<&str> = usage["pools"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["batch", "blue", "default"], "the apiserver lists by name");
    assert!(usage["pools"].as_array().unwrap().iter().all(|p| p["apiVersion"] == "cilium.io/v2"));
    assert!(family(&usage, "default", "ipv4")["usedAddresses"].as_u64().unwrap() > 100);
    assert_eq!(usage["nodes"].as_array().unwrap().len(), 36);
    assert!(
        usage["problems"].as_array().unwrap().iter().any(|p| p["kind"] == "storage-migration-pending"),
        "storedVersions [v2alpha1, v2] is read from the CRD"
    );
}

/// `kubectl ciliumpool usage` through the real kubectl: plugin lookup on PATH, KUBECONFIG inherited.
#[test]
fn kubectl_dispatches_to_the_plugin() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
               "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}}}),
        cilium_node("node-a", &[("blue", &["10.40.0.0/24", "10.40.1.0/24"])], 16),
    ]);
    let plugin_dir = std::path::Path::new(PLUGIN).parent().expect("plugin directory");
    let mut paths = vec![plugin_dir.to_path_buf(), cluster.bin.clone()];
    paths.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    let path = std::env::join_paths(paths).expect("PATH");
    let output = cluster
        .kubectl_command()
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .args(["ciliumpool", "usage", "--no-headers"])
        .output()
        .expect("run kubectl");
    assert!(output.status.success(), "kubectl ciliumpool failed: {}", stderr_of(&output));
    let table = String::from_utf8_lossy(&output.stdout);
    let row: Vec<&str> = table.lines().next().expect("a row").split_whitespace().collect();
    assert_eq!(row[..4], ["blue", "ipv4", "/24", "2/256"], "{table}");
}

/// A user who may read pools and CiliumNodes but not pods (nor endpoints, nor the CRD) gets the
/// block figures, used = unknown, and notes saying why.
#[test]
fn user_without_pod_access_gets_blocks_and_unknown_used() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
               "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24,
                                 "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.254", "end": "10.40.255.254"}]}]}}}),
        cilium_node("node-a", &[("blue", &["10.40.0.0/24", "10.40.1.0/24"])], 16),
        cilium_node("node-b", &[("blue", &["10.40.2.0/24"])], 16),
        pod("team-blue", "api-1", "node-a", &["10.40.0.10"]),
        pod("team-blue", "api-2", "node-b", &["10.40.2.10"]),
        pod("team-blue", "api-3", "node-b", &["10.40.2.11"]),
        cilium_endpoint("team-blue", "api-1", "10.0.0.1", &["10.40.0.10"]),
    ]);
    // A completed pod keeps its IP in status but no longer uses it.
    cluster.set_pod_status("team-blue", "api-3", &["10.40.2.11"], "Succeeded");
    cluster.grant_read("alice", &[("cilium.io", "ciliumpodippools"), ("cilium.io", "ciliumnodes")]);

    let admin = run_json(cluster.plugin().args(["usage", "-o", "json"]));
    let alice_run = cluster.plugin().args(["usage", "-o", "json", "--as", "alice"]).assert().success().get_output().clone();
    let alice = json_of(&alice_run);
    assert!(stderr_of(&alice_run).contains("warning: pods: forbidden (403) — used addresses unknown"), "JSON cannot say why: stderr does");
    let (admin_v4, alice_v4) = (family(&admin, "blue", "ipv4"), family(&alice, "blue", "ipv4"));
    assert_eq!(admin_v4["usedAddresses"], 2, "api-1 (pod and endpoint) and api-2");
    assert_eq!(alice_v4["usedAddresses"], Value::Null, "used is unknown, not zero");
    assert_eq!(alice_v4["idleAddresses"], Value::Null);
    for figure in ["capacityBlocks", "allocatedBlocks", "withheldBlocks", "freeBlocks", "allocatedAddresses", "freeAddresses"] {
        assert_eq!(alice_v4[figure], admin_v4[figure], "{figure}");
    }
    assert_eq!((alice_v4["allocatedBlocks"].as_u64(), alice_v4["withheldBlocks"].as_u64()), (Some(3), Some(1)));

    // The notes under the table (stderr) say why.
    let notes = cluster.plugin().args(["usage", "--as", "alice"]).assert().success().get_output().stderr.clone();
    let notes = String::from_utf8_lossy(&notes);
    assert!(notes.contains("used: unknown"), "{notes}");
    assert!(notes.contains("pods: forbidden (403) — used addresses unknown"), "{notes}");
    assert!(notes.contains("CiliumEndpoints: forbidden (403)"), "{notes}");
    assert!(notes.contains("served versions from API discovery"), "the CRD is forbidden too: {notes}");
}

/// No answer from the server: exit 3 after the request timeout, naming the server.
#[test]
fn unreachable_server_exits_3_within_the_request_timeout() {
    // A socket that is listening but never accepts: the TLS handshake hangs, as with a
    // blackholed address, so only --request-timeout can end the wait.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let server = format!("https://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = token_kubeconfig(dir.path(), &server);
    let started = Instant::now();
    let output = assert_cmd::Command::new(PLUGIN)
        .env_remove("KUBECONFIG")
        .args(["usage", "--request-timeout", "3s", "--kubeconfig"])
        .arg(&kubeconfig)
        .timeout(Duration::from_secs(60))
        .assert()
        .code(3)
        .get_output()
        .clone();
    let elapsed = started.elapsed();
    let stderr = stderr_of(&output);
    assert!(stderr.contains(&server), "names the server: {stderr}");
    assert!(stderr.contains("--request-timeout 3s"), "says why: {stderr}");
    // An acceptance bound, not a benchmark: without the timeout this would hang forever.
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
    eprintln!("unreachable server: exit 3 after {:.1} s", elapsed.as_secs_f64());
}

/// A user with no RBAC at all: exit 3 with verb, resource and user.
#[test]
fn forbidden_pools_exit_3_naming_verb_resource_and_user() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let output = cluster.plugin().args(["usage", "--as", "mallory"]).assert().code(3).get_output().clone();
    let stderr = stderr_of(&output);
    let first_line = stderr.lines().next().unwrap_or_default();
    for expected in ["403", "mallory", "list", "ciliumpodippools.cilium.io", &cluster.server] {
        assert!(first_line.contains(expected), "first line should name {expected:?}: {stderr}");
    }
    // Pools alone are not enough: CiliumNodes hold the blocks, so they are required too.
    cluster.grant_read("carol", &[("cilium.io", "ciliumpodippools")]);
    let output = cluster.plugin().args(["usage", "--as", "carol"]).assert().code(3).get_output().clone();
    let stderr = stderr_of(&output);
    assert!(stderr.lines().next().unwrap_or_default().contains("user carol cannot list ciliumnodes.cilium.io"), "{stderr}");
}

/// Credentials the server does not accept: exit 3, unauthorized. A `KUBECONFIG` path list merges
/// as kubectl merges it (the first file's current-context wins) and `--context` picks another.
#[test]
fn rejected_credentials_exit_3_and_context_selects_a_merged_kubeconfig() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().expect("temp dir");
    let rejected = token_kubeconfig(dir.path(), &cluster.server);
    let output = assert_cmd::Command::new(PLUGIN).arg("usage").arg("--kubeconfig").arg(&rejected).assert().code(3).get_output().clone();
    let stderr = stderr_of(&output);
    assert!(stderr.contains("unauthorized (401)") && stderr.contains(&cluster.server) && stderr.contains("someone"), "{stderr}");

    let merged = std::env::join_paths([&rejected, &cluster.kubeconfig]).expect("KUBECONFIG");
    assert_cmd::Command::new(PLUGIN).env("KUBECONFIG", &merged).arg("usage").assert().code(3);
    assert_cmd::Command::new(PLUGIN).env("KUBECONFIG", &merged).args(["usage", "--context", "testenv"]).assert().success();
}

/// A cluster without Cilium's CRDs: exit 3 with the question that helps.
#[test]
fn no_cilium_crds_exit_3() {
    let cluster = TestCluster::start_without_cilium();
    for command in ["usage", "inspect", "check"] {
        let output = cluster.plugin().arg(command).assert().code(3).get_output().clone();
        let stderr = stderr_of(&output);
        assert!(stderr.contains("is Cilium installed with multi-pool IPAM?"), "{command}: {stderr}");
        assert!(stderr.contains(&cluster.server), "{command}: {stderr}");
    }
    let version = cluster.plugin().arg("version").assert().success().get_output().stdout.clone();
    let version = String::from_utf8_lossy(&version);
    assert!(version.contains("Server version: v1."), "{version}");
    assert!(version.contains("is Cilium installed with multi-pool IPAM?"), "{version}");
}

/// `usage --watch --no-headers` with its output piped, and a reader of its lines.
fn watch_piped(cluster: &TestCluster) -> (std::process::Child, LineReader) {
    let mut child = cluster
        .plugin_process()
        .args(["usage", "--watch", "--no-headers"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the plugin");
    let lines = LineReader::new(child.stdout.take().expect("stdout"));
    (child, lines)
}

/// `usage --watch` piped: one block first, a new block after a CiliumNode gets a block, exit 0
/// on SIGINT.
#[test]
fn watch_rerenders_when_a_node_gets_a_block() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![
        v2alpha1_pool("default", "10.10.0.0/16", 24),
        cilium_node("node-a", &[("default", &["10.10.0.0/24", "10.10.1.0/24"])], 16),
    ]);
    let (mut child, lines) = watch_piped(&cluster);
    let blocks_column = |line: &str| line.split_whitespace().nth(3).map(str::to_string);
    let first = lines.read_until(Duration::from_secs(30), "first render", |l| l.starts_with("default"));
    assert_eq!(blocks_column(first.last().unwrap()).as_deref(), Some("2/256"), "{first:?}");

    cluster.kubectl(&[
        "patch",
        "ciliumnode",
        "node-a",
        "--type=merge",
        "-p",
        r#"{"spec":{"ipam":{"pools":{"allocated":[{"pool":"default","cidrs":["10.10.0.0/24","10.10.1.0/24","10.10.2.0/24"]}]}}}}"#,
    ]);
    let next = lines.read_until(Duration::from_secs(30), "a re-render with 3 blocks", |l| l.starts_with("default"));
    assert_eq!(next.first().map(String::as_str), Some(""), "blocks are separated by a blank line: {next:?}");
    assert_eq!(blocks_column(next.last().unwrap()).as_deref(), Some("3/256"), "{next:?}");

    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().expect("kill -INT");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("wait") {
            break exit;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("--watch did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exit.code(), Some(0), "Ctrl-C ends --watch with exit 0");
}

/// `usage --watch` follows pods: one created, one moved to an address outside the pool, one
/// deleted, one finished. Each change moves USED by the address it adds or frees, so a frame
/// built from pods decoded before the change (a stale cache) fails.
#[test]
fn watch_follows_pods_that_come_change_and_go() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![
        v2alpha1_pool("default", "10.10.0.0/16", 24),
        cilium_node("node-a", &[("default", &["10.10.0.0/24"])], 16),
        pod("shop", "p1", "node-a", &["10.10.0.5"]),
        pod("shop", "p2", "node-a", &["10.10.0.6"]),
        pod("shop", "p3", "node-a", &["10.10.0.7"]),
    ]);
    let (mut child, lines) = watch_piped(&cluster);
    let used =
        |line: &str| line.starts_with("default").then(|| line.split_whitespace().nth(7).and_then(|u| u.parse::<u64>().ok())).flatten();
    let first = lines.read_until(Duration::from_secs(30), "first render", |l| used(l).is_some());
    let start = used(first.last().unwrap()).unwrap();
    assert!(start >= 3, "three running pods in the block: {first:?}");
    let expect = |value: u64, what: &str| {
        lines.read_until(Duration::from_secs(30), what, |l| used(l) == Some(value));
    };
    cluster.create_objects(vec![pod("shop", "p4", "node-a", &["10.10.0.8"])]);
    expect(start + 1, "USED + 1 after a pod is created");
    cluster.set_pod_status("shop", "p1", &["10.99.0.1"], "Running");
    expect(start, "USED - 1 after a pod's address leaves the pool");
    cluster.kubectl(&["delete", "pod", "-n", "shop", "p2", "--grace-period=0", "--force"]);
    expect(start - 1, "USED - 1 after a pod is deleted");
    cluster.set_pod_status("shop", "p3", &["10.10.0.7"], "Succeeded");
    expect(start - 2, "USED - 1 after a pod finishes");
    child.kill().ok();
    child.wait().ok();
}

/// More objects than one page (500) of CiliumNodes and Pods: every one is read; `-n` limits pods.
#[test]
fn large_lists_are_read_in_one_answer_each() {
    const NODES: usize = 600;
    const PODS: usize = 1100;
    const PODS_IN_B: usize = 100;
    let cluster = TestCluster::start(Dialect::V2alpha1);
    // Node i holds block 10.64.i.0/24 (10.64.0.0/14 has 1024 of them); pod j runs on node j % NODES.
    let block = |i: usize| format!("10.{}.{}.0/24", 64 + i / 256, i % 256);
    let pod_ip = |j: usize| format!("10.{}.{}.{}", 64 + (j % NODES) / 256, (j % NODES) % 256, 10 + j / NODES);
    let mut objects = vec![v2alpha1_pool("big", "10.64.0.0/14", 24)];
    objects.extend((0..NODES).map(|i| cilium_node(&format!("node-{i:04}"), &[("big", &[block(i).as_str()])], 8)));
    objects.extend((0..PODS).map(|j| {
        let namespace = if j < PODS - PODS_IN_B { "pages-a" } else { "pages-b" };
        pod(namespace, &format!("pod-{j:04}"), &format!("node-{:04}", j % NODES), &[pod_ip(j).as_str()])
    }));
    let seeding = Instant::now();
    cluster.create_objects(objects);
    eprintln!("seeded {NODES} CiliumNodes and {PODS} Pods in {:.1} s", seeding.elapsed().as_secs_f64());

    let output = cluster.plugin().args(["usage", "-o", "json", "-v"]).output().expect("run the plugin");
    let all = json_of(&output);
    // One request per list, without a limit (served from the API server's watch cache); the
    // CiliumEndpoints as one Table per namespace.
    let stderr = stderr_of(&output);
    assert!(stderr.contains("CiliumEndpoints: 0 (as the Tables of "), "{stderr}");
    for list in ["/api/v1/pods", "/apis/cilium.io/v2/ciliumnodes"] {
        let requests: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("GET ") && (l.contains(&format!("{list} ")) || l.contains(&format!("{list}?"))))
            .collect();
        assert_eq!(requests.len(), 1, "one request of {list}: {stderr}");
        assert!(requests[0].contains(&format!("{list} 200 OK")), "without a limit: {stderr}");
    }
    let big = family(&all, "big", "ipv4");
    assert_eq!(big["allocatedBlocks"], NODES, "every CiliumNode page was read");
    assert_eq!(big["usedAddresses"], PODS, "every Pod page was read");
    assert_eq!(all["nodes"].as_array().unwrap().len(), NODES);

    let in_b = run_json(cluster.plugin().args(["usage", "-o", "json", "-n", "pages-b"]));
    assert_eq!(family(&in_b, "big", "ipv4")["usedAddresses"], PODS_IN_B);
}

/// CiliumEndpoints are read as one Table per namespace (the printer columns of their one address
/// pair), which gives the figures of the whole list; that list is read where the CRD has no such
/// columns. An endpoint without its pod, in a namespace without pods too, is found either way.
#[test]
fn endpoints_read_as_tables_give_the_figures_of_the_whole_list() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "dual"},
            "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24}, "ipv6": {"cidrs": ["fd00:40::/96"], "maskSize": 112}}}),
        cilium_node("node-a", &[("dual", &["10.40.1.0/24", "fd00:40::1:0/112"])], 8),
        pod("shop", "web-1", "node-a", &["10.40.1.10", "fd00:40::1:10"]),
        cilium_endpoint("shop", "web-1", "192.168.0.1", &["10.40.1.10", "fd00:40::1:10"]),
        // Left behind by pods that are gone: their addresses are still in use.
        cilium_endpoint("shop", "web-2", "192.168.0.1", &["10.40.1.11", "fd00:40::1:11"]),
        cilium_endpoint("leftovers", "job-7", "192.168.0.1", &["10.40.1.12"]),
        cilium_endpoint("leftovers", "job-8", "192.168.0.1", &["fd00:40::1:13"]),
    ]);
    let read = |args: &[&str]| {
        let output = cluster.plugin().args(["usage", "-o", "json", "-v"]).args(args).output().expect("run the plugin");
        (json_of(&output), stderr_of(&output))
    };
    let used = |usage: &Value, family_name: &str| family(usage, "dual", family_name)["usedAddresses"].clone();

    let (tables, stderr) = read(&[]);
    assert!(stderr.contains("CiliumEndpoints: 4 (as the Tables of "), "{stderr}");
    assert!(stderr.contains("/apis/cilium.io/v2/namespaces/leftovers/ciliumendpoints?includeObject=None 200 OK"), "{stderr}");
    assert_eq!((used(&tables, "ipv4"), used(&tables, "ipv6")), (json!(3), json!(3)), "every endpoint's addresses");
    let (in_leftovers, stderr) = read(&["-n", "leftovers"]);
    assert!(stderr.contains("CiliumEndpoints: 2 (as the Tables of 1 namespace(s))"), "{stderr}");
    assert_eq!((used(&in_leftovers, "ipv4"), used(&in_leftovers, "ipv6")), (json!(1), json!(1)));

    // A CRD without the address columns: the whole list, and the same figures.
    let versions: Value =
        serde_json::from_str(&cluster.kubectl(&["get", "crd", "ciliumendpoints.cilium.io", "-o", "jsonpath={.spec.versions}"])).unwrap();
    let v2 = versions.as_array().unwrap().iter().position(|v| v["name"] == "v2").expect("v2 is served");
    let patch = json!([{"op": "remove", "path": format!("/spec/versions/{v2}/additionalPrinterColumns")}]).to_string();
    cluster.kubectl(&["patch", "crd", "ciliumendpoints.cilium.io", "--type=json", "-p", &patch]);
    let (whole, stderr) = read(&[]);
    assert!(
        stderr.contains("CiliumEndpoints: 4 (in one list: the CiliumEndpoint CRD has no printer columns of the endpoints' addresses)"),
        "{stderr}"
    );
    assert!(stderr.contains("/apis/cilium.io/v2/ciliumendpoints 200 OK"), "{stderr}");
    assert_eq!(whole, tables, "as Tables and in one list alike");
}

/// A cluster that moved to CFP v2: pools stored as v2alpha1 before the move are read through v2
/// with string cidrs, CFP pools with their reservedRange; `version` reports the dialect.
#[test]
fn cfp_cluster_is_read_through_v2() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects(vec![v2alpha1_pool("old", "10.20.0.0/16", 24)]);
    cluster.move_pools_to_v2_storage(Dialect::CfpV2);
    cluster.create_objects(vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "green"},
               "spec": {"ipv4": {"cidrs": [{"cidr": "10.60.0.0/20", "reservedRange": "10.60.0.0-10.60.0.31"}], "maskSize": 26}}}),
        cilium_node("node-a", &[("old", &["10.20.0.0/24"]), ("green", &["10.60.0.64/26"])], 16),
    ]);
    let usage = run_json(cluster.plugin().args(["usage", "-o", "json"]));
    let pools = usage["pools"].as_array().unwrap();
    assert!(pools.iter().all(|p| p["apiVersion"] == "cilium.io/v2" && p["dialect"] == "cfp-v2"), "{pools:#?}");
    assert_eq!(family(&usage, "old", "ipv4")["allocatedBlocks"], 1);
    let green = family(&usage, "green", "ipv4");
    assert_eq!(
        (green["allocatedBlocks"].as_u64(), green["withheldBlocks"].as_u64(), green["freeBlocks"].as_u64()),
        (Some(1), Some(1), Some(62))
    );

    let version = cluster.plugin().arg("version").assert().success().get_output().stdout.clone();
    let version = String::from_utf8_lossy(&version);
    assert!(version.contains("CiliumPodIPPool: served v2 (storage), v2alpha1; storedVersions v2alpha1, v2; dialect cfp-v2"), "{version}");
}

/// Issue 42: `usage --watch -o name` into a pipe writes records only (`| xargs kubectl get`): its
/// first line is a record, not a `# status` comment; the status goes to stderr.
#[test]
fn watch_o_name_in_a_pipe_writes_records_only() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster
        .create_objects(vec![v2alpha1_pool("default", "10.10.0.0/16", 24), cilium_node("node-a", &[("default", &["10.10.0.0/24"])], 16)]);
    let mut child = cluster
        .plugin_process()
        .args(["usage", "--watch", "-o", "name"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the plugin");
    let lines = LineReader::new(child.stdout.take().expect("stdout"));
    let mut child = support::KillOnDrop(child);
    let first = lines.read_until(Duration::from_secs(30), "the first line", |_| true);
    assert_eq!(first, ["ciliumpodippool.cilium.io/default"], "the first line is a record");
    child.0.kill().ok();
}
