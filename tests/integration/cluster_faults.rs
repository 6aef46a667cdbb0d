//! A misbehaving API server (issue 28, "every request ends"): a fault-injecting proxy
//! (`support::faults`) in front of the real kube-apiserver repeats `continue` tokens, trickles
//! answers and inflates lists. Each ends with one error line and exit 3; none hangs. The child is
//! killed after [`HANG_GUARD`], which counts as a failure: a hang check, not a speed target.

use crate::support;

use ciliumpool::cluster::limits::MAX_RESPONSE_BYTES;
use std::time::{Duration, Instant};
use support::faults::{Fault, FaultProxy, PROXY_TOKEN, two_contexts};
use support::{BLUE_POOL, Dialect, TestCluster, cilium_node, pod};

/// Far beyond every deadline these tests run under (5 s, the default 30 s).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A cluster with one pool, one node holding a block of it and one pod.
fn seeded_cluster() -> TestCluster {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.apply_yaml(BLUE_POOL);
    cluster.create_objects(vec![cilium_node("n1", &[("blue", &["10.40.0.0/24"])], 16), pod("default", "p", "n1", &["10.40.0.9"])]);
    cluster
}

/// Runs the plugin against the proxy: exit code, stdout, stderr, wall time. Panics on a hang.
fn run(proxy: &FaultProxy, args: &[&str]) -> (i32, String, String, Duration) {
    let started = Instant::now();
    let output = support::cli::plugin()
        .args(args)
        .arg("--kubeconfig")
        .arg(&proxy.kubeconfig)
        .timeout(HANG_GUARD)
        .output()
        .unwrap_or_else(|e| panic!("{args:?} did not end within {HANG_GUARD:?} (killed): {e}"));
    let elapsed = started.elapsed();
    // assert_cmd kills the child at the guard: no exit code then.
    assert!(
        output.status.code().is_some(),
        "{args:?} did not end within {HANG_GUARD:?} (killed): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout).into_owned(), String::from_utf8_lossy(&output.stderr).into_owned());
    assert!(!stdout.contains(PROXY_TOKEN) && !stderr.contains(PROXY_TOKEN), "the token leaked: {stdout}{stderr}");
    eprintln!("{args:?}: exit {:?} after {:.1} s", output.status.code(), elapsed.as_secs_f64());
    (output.status.code().expect("checked above"), stdout, stderr, elapsed)
}

/// Exit 3 with exactly one line on stderr, the `error:` line; returns it.
fn one_error_line(code: i32, stdout: &str, stderr: &str) -> String {
    assert_eq!(code, 3, "stderr: {stderr}");
    assert!(stdout.is_empty(), "nothing on stdout: {stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].starts_with("error: "), "{stderr}");
    lines[0].to_string()
}

#[test]
fn a_repeated_continue_token_ends_the_list_with_one_line() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::RepeatContinue { resources: &["ciliumnodes"] }, dir.path());
    let (code, stdout, stderr, _) = run(&proxy, &["usage"]);
    let line = one_error_line(code, &stdout, &stderr);
    for expected in ["list ciliumnodes.cilium.io", &proxy.url, "page 2 of the list repeated an earlier continue token"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
}

#[test]
fn a_trickling_answer_ends_at_the_request_timeout() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::Trickle { resources: &["ciliumnodes"], every: Duration::from_secs(2) }, dir.path());
    let (code, stdout, stderr, _) = run(&proxy, &["usage", "--request-timeout", "5s"]);
    let line = one_error_line(code, &stdout, &stderr);
    for expected in ["list ciliumnodes.cilium.io", &proxy.url, "the answer did not end within --request-timeout 5s", "bytes arrived"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
    assert!(proxy.sent() > 0, "the answer had begun: the deadline covers the body, not only the headers");
}

#[test]
fn a_trickling_answer_ends_at_the_default_deadline() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::Trickle { resources: &["pods"], every: Duration::from_secs(2) }, dir.path());
    let (code, stdout, stderr, _) = run(&proxy, &["usage"]);
    let line = one_error_line(code, &stdout, &stderr);
    for expected in ["list pods", "the answer did not end within 30s, the default deadline"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
}

#[test]
fn inflated_lists_are_refused_while_they_stream_in() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    const LISTS: &[&str] = &["ciliumpodippools", "ciliumnodes", "pods", "ciliumendpoints"];
    let bytes = 300 << 20;
    let proxy = FaultProxy::start(&cluster, Fault::Inflate { resources: LISTS, bytes }, dir.path());
    // No deadline: the byte bound must end the read, not the clock (on a loaded machine 128 MiB
    // through the proxy took longer than the default 30 s once: 103.9 MiB had arrived).
    let (code, stdout, stderr, _) = run(&proxy, &["usage", "--request-timeout", "0"]);
    let line = one_error_line(code, &stdout, &stderr);
    // The first list refused ends the read (the others are dropped): any of the four.
    assert!(LISTS.iter().any(|list| line.contains(&format!("list {list}"))), "names the list: {line}");
    for expected in ["larger than 128Mi (--max-response-size", "was not read further"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
    // Each answer was cut at the bound: beyond it, only what the sockets' buffers took was sent.
    let slack = 32 << 20;
    let sent = proxy.sent();
    eprintln!("the proxy sent {} MiB of {} MiB", sent >> 20, (LISTS.len() as u64 * bytes) >> 20);
    assert!(sent <= LISTS.len() as u64 * (MAX_RESPONSE_BYTES + slack), "sent {sent} bytes");
}

/// Issue 40: one page under the response bound can hold millions of objects (40 MiB of `{}`
/// items: 14 million). The object cap counts the items while the page is parsed, so the page is
/// refused after the first million instead of after all of them were built (past 1 GiB before).
#[test]
fn a_page_of_millions_of_items_is_refused_while_it_is_parsed() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::EmptyItems { resources: &["ciliumnodes"], bytes: 40 << 20 }, dir.path());
    let kubeconfig = proxy.kubeconfig.to_str().expect("a UTF-8 path");
    let started = Instant::now();
    let (code, stderr, rss) = support::cli::measured(&["usage", "--kubeconfig", kubeconfig]);
    let elapsed = started.elapsed();
    eprintln!("a 40 MiB page of {{}} items: exit {code}, peak RSS {} MiB, {:.1} s", rss >> 10, elapsed.as_secs_f64());
    let line = one_error_line(code, "", &stderr);
    for expected in ["list ciliumnodes.cilium.io", "the list held more than 1000000 objects"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
    assert!(rss < 256 << 10, "peak RSS {} MiB", rss >> 10);
    assert!(elapsed < Duration::from_secs(10), "{:.1} s", elapsed.as_secs_f64());
}

#[test]
fn unusable_list_items_are_counted_in_a_warning() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::JunkItems { resources: &["ciliumnodes"] }, dir.path());
    let (code, stdout, stderr, _) = run(&proxy, &["usage", "-o", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let doc = support::cli::json_of(&stdout);
    assert_eq!(doc["pools"][0]["name"], "blue", "the usable objects are read: {stdout}");
    let warning = "warning: the list of ciliumnodes.cilium.io held 2 item(s) that are not objects with a metadata.name; they are left out of the figures";
    assert!(stderr.lines().any(|l| l == warning), "{stderr}");
}

#[test]
fn verbose_shows_each_request_and_says_when_it_waits() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let delay = Duration::from_secs(3);
    let proxy = FaultProxy::start(&cluster, Fault::Delay { resources: &["pods"], by: delay }, dir.path());
    let (code, _, stderr, _) = run(&proxy, &["usage", "-v"]);
    assert_eq!(code, 0, "{stderr}");
    // `GET URL STATUS in N ms`, as kubectl -v=6 prints a request.
    let answered = |resource: &str| -> Vec<u128> {
        let prefix = format!("GET {}/", proxy.url);
        stderr
            .lines()
            .filter(|l| {
                let url = l.split(' ').nth(1).unwrap_or_default();
                l.starts_with(&prefix) && url.split('?').next().is_some_and(|path| path.ends_with(&format!("/{resource}")))
            })
            .map(|l| {
                let (_, after) = l.rsplit_once(" 200 OK in ").unwrap_or_else(|| panic!("status and time: {l}"));
                after.strip_suffix(" ms").and_then(|ms| ms.parse().ok()).unwrap_or_else(|| panic!("milliseconds: {l}"))
            })
            .collect()
    };
    assert_eq!(answered("ciliumnodes").len(), 1, "one list request of ciliumnodes: {stderr}");
    // The CiliumEndpoints as one Table per namespace (`cluster/endpoint_table.rs`).
    let tables = stderr.lines().filter(|l| l.contains("/ciliumendpoints?includeObject=None 200 OK in ")).count();
    assert!(tables >= 1 && tables == answered("ciliumendpoints").len(), "a Table per namespace: {stderr}");
    assert!(stderr.contains(" (as the Tables of "), "the proxy passes a Table on: {stderr}");
    let pods = answered("pods");
    assert_eq!(pods.len(), 1, "{stderr}");
    assert!(pods[0] >= delay.as_millis(), "the time of the delayed answer is its real time: {stderr}");
    let waiting: Vec<&str> = stderr.lines().filter(|l| l.starts_with("waiting for ")).collect();
    assert_eq!(waiting.len(), 1, "one waiting line, for the slow list only: {stderr}");
    assert!(waiting[0].starts_with(&format!("waiting for {}: GET {}/api/v1/pods has not answered", proxy.url, proxy.url)), "{stderr}");

    let (code, _, quiet, _) = run(&proxy, &["usage"]);
    assert_eq!(code, 0, "{quiet}");
    assert!(!quiet.contains("GET ") && !quiet.contains("waiting for"), "requests only under -v: {quiet}");
}

#[test]
fn max_response_size_bounds_each_answer_and_names_itself() {
    let cluster = seeded_cluster();
    let refused = cluster.plugin().args(["usage", "--max-response-size", "1Ki"]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    let line = one_error_line(refused.status.code().unwrap(), &stdout, &stderr);
    for expected in ["larger than 1Ki (--max-response-size", "raise --max-response-size"] {
        assert!(line.contains(expected), "names {expected:?}: {line}");
    }
    let read = cluster.plugin().args(["usage", "-o", "json", "--max-response-size", "64Ki"]).output().unwrap();
    assert_eq!(read.status.code(), Some(0), "{}", String::from_utf8_lossy(&read.stderr));
    assert_eq!(support::cli::json_of(&String::from_utf8_lossy(&read.stdout))["pools"][0]["name"], "blue");
}

// --- watches: serve outlives whatever its API server does (issue 40) ---------------------------------

/// How long each watch fault lasts.
const FAULT: Duration = Duration::from_secs(15);

/// How long the watch-fault test waits for `faulty` to be fresh again after a fault is lifted.
const RECOVERY_GUARD: Duration = Duration::from_secs(30);

/// `serve --stale-after` in the watch-fault test.
const STALE_AFTER: Duration = Duration::from_secs(5);

/// The most memory `serve` may reach in the watch-fault test: half the Deployment's limit.
const SERVE_MEMORY: u64 = 256 << 20;

/// `serve` across two contexts of one control plane: `healthy` straight to the API server,
/// `faulty` through the proxy. Killed when dropped.
/// `serve` of two contexts, `healthy` straight to the control plane and `faulty` through a
/// passing fault proxy (set its faults afterwards).
fn served_through_a_proxy(cluster: &TestCluster, dir: &std::path::Path) -> (FaultProxy, Served) {
    let proxy = FaultProxy::passing(cluster, dir);
    let kubeconfig = dir.join("two-contexts");
    two_contexts(cluster, &proxy, &kubeconfig);
    let serve = Served::start(&kubeconfig);
    (proxy, serve)
}

struct Served {
    address: String,
    process: support::KillOnDrop,
}

impl Served {
    fn start(kubeconfig: &std::path::Path) -> Served {
        Served::start_contexts(kubeconfig, "healthy,faulty")
    }

    fn start_contexts(kubeconfig: &std::path::Path, contexts: &str) -> Served {
        Served::start_with(kubeconfig, contexts, &[])
    }

    /// `serve` of the current context with `flags`, its stderr read line by line.
    fn start_logged(kubeconfig: &std::path::Path, flags: &[&str]) -> (Served, support::LineReader) {
        let address = format!("127.0.0.1:{}", support::prometheus::free_port());
        let mut command = support::cli::plugin_process();
        command
            .args(["serve", "--listen", &address])
            .args(flags)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = command.spawn().expect("start serve");
        let stderr = support::LineReader::new(child.stderr.take().unwrap());
        (Served { address, process: support::KillOnDrop(child) }, stderr)
    }

    fn start_with(kubeconfig: &std::path::Path, contexts: &str, flags: &[&str]) -> Served {
        let address = format!("127.0.0.1:{}", support::prometheus::free_port());
        let mut command = support::cli::plugin_process();
        command
            .args(["serve", "--context", contexts, "--listen", &address, "--request-timeout", "5s"])
            .args(flags)
            .args(["--stale-after", &format!("{}s", STALE_AFTER.as_secs()), "--max-watch-objects", "20000", "--kubeconfig"])
            .arg(kubeconfig)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit());
        Served { address, process: support::KillOnDrop(command.spawn().expect("start serve")) }
    }

    /// `metric{cluster="...",...}` of the exposition, when there.
    fn sample(&mut self, metric: &str, cluster: &str, more: &str) -> Option<f64> {
        assert!(self.process.0.try_wait().unwrap().is_none(), "serve exited (killed by its memory, or failed)");
        let (_, text) = support::prometheus::get(&self.address, "/metrics", None).ok()?;
        let prefix = format!("{metric}{{cluster=\"{cluster}\"{more}}} ");
        text.lines().find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
    }

    fn ready(&mut self, cluster: &str) -> bool {
        self.sample("ciliumpool_exporter_ready", cluster, "") == Some(1.0)
    }

    /// Ready, and every watch proved current within the last 5 s (its `--request-timeout` makes
    /// each healthy watch end, a proof, every 4 s).
    fn fresh(&mut self, cluster: &str) -> bool {
        self.ready(cluster) && self.sample("ciliumpool_exporter_staleness_seconds", cluster, "").is_some_and(|s| s <= 5.0)
    }

    /// Waits until `cluster` is fresh; the time it took. Panics past `within`.
    fn wait_fresh(&mut self, cluster: &str, within: Duration, what: &str) -> Duration {
        let start = Instant::now();
        while !self.fresh(cluster) {
            assert!(start.elapsed() < within, "{what}: {cluster} not fresh within {within:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
        start.elapsed()
    }

    /// Waits until `cluster` is ready (`true`) or not; the time it took. Panics past `within`.
    fn wait_ready(&mut self, cluster: &str, ready: bool, within: Duration, what: &str) -> Duration {
        let start = Instant::now();
        while self.ready(cluster) != ready {
            assert!(start.elapsed() < within, "{what}: {cluster} not ready={ready} within {within:?}");
            std::thread::sleep(Duration::from_millis(250));
        }
        start.elapsed()
    }

    /// The highest resident memory the process has had (Linux's VmHWM).
    fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.0.id())).expect("/proc status");
        let kib: u64 =
            status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).expect("VmHWM");
        kib << 10
    }
}

/// A streaming list (`--streaming-lists`) that outlasts the short timeout of the watches that
/// follow it (150,000 pods on a busy API server) is not cut at that timeout: `serve` asks a
/// streaming list for minutes and becomes ready; before, each attempt was cut and begun again
/// from nothing, for ever.
#[test]
fn serve_becomes_ready_through_a_streaming_list_longer_than_a_watch() {
    use support::faults::WatchFault;
    let cluster = seeded_cluster();
    let pods: Vec<_> = (0..60).map(|i| pod("default", &format!("slow-{i}"), "n1", &[&format!("10.40.0.{}", 100 + i)])).collect();
    cluster.create_objects(pods);
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::passing(&cluster, dir.path());
    let kubeconfig = dir.path().join("two-contexts");
    two_contexts(&cluster, &proxy, &kubeconfig);
    // 61 pods, one every 100 ms: about 6 s, past the 4 s each watch of `serve --request-timeout 5s` asks.
    proxy.set_watch_fault(Some(("pods", WatchFault::SlowInitialEvents(Duration::from_millis(100)))));
    let mut serve = Served::start_with(&kubeconfig, "healthy,faulty", &["--streaming-lists"]);
    serve.wait_ready("healthy", true, Duration::from_secs(90), "first sync");
    serve.wait_ready("faulty", true, Duration::from_secs(90), "first sync through a slow streaming list");
    let (watches, lists) = proxy.requests("pods");
    // The list is the first read of `serve`; then one streaming list and its watches.
    assert!(watches <= 6 && lists <= 1, "one streaming list, then watches: {watches} watch and {lists} list requests of pods");
    // The first read only learns that pods can be listed: the streaming list reads them (issue 44).
    for resource in ["pods", "ciliumendpoints", "ciliumnodes"] {
        assert_eq!(proxy.list_limits(resource), ["1"], "{resource}: the first read asks for one object");
    }
}

/// A server that refuses streaming lists (the WatchList feature off) answers one Status, with
/// or without a final line break: `serve --streaming-lists` lists that resource in one answer and
/// becomes ready. Before, the Status was read as a watch stream cut inside an event, which is no
/// refusal, so the streaming list was asked again after every backoff and the cluster was never ready.
#[test]
fn serve_lists_where_streaming_lists_are_refused() {
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::start(&cluster, Fault::RefuseStreamingLists { resources: &["pods", "ciliumendpoints"] }, dir.path());
    let kubeconfig = dir.path().join("two-contexts");
    two_contexts(&cluster, &proxy, &kubeconfig);
    let mut serve = Served::start_with(&kubeconfig, "healthy,faulty", &["--streaming-lists"]);
    serve.wait_ready("healthy", true, Duration::from_secs(90), "first sync");
    serve.wait_ready("faulty", true, Duration::from_secs(90), "first sync through lists where streaming lists are refused");
    assert_eq!(serve.sample("ciliumpool_used_addresses", "faulty", ",pool=\"blue\",family=\"ipv4\""), Some(1.0), "the pod was read");
    for resource in ["pods", "ciliumendpoints"] {
        let limits = proxy.list_limits(resource);
        assert_eq!(limits.first().map(String::as_str), Some("1"), "{resource}: the first read probes");
        assert_eq!(&limits[1..], [""], "{resource}: then one list, after the refusal");
    }
}

#[test]
fn serve_outlives_every_watch_fault_and_keeps_the_healthy_cluster_served() {
    use support::faults::WatchFault;
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let (proxy, mut serve) = served_through_a_proxy(&cluster, dir.path());
    serve.wait_ready("healthy", true, Duration::from_secs(90), "first sync");
    serve.wait_ready("faulty", true, Duration::from_secs(90), "first sync");
    // Each resource was listed in one answer (which the API server serves from its watch cache:
    // docs/performance.md, "One answer per list"), then watched from that list's version.
    for resource in ["pods", "ciliumendpoints", "ciliumnodes"] {
        assert_eq!(proxy.list_limits(resource), ["1", ""], "{resource}: the first read probes, then one list without a limit");
        assert!(proxy.requests(resource).0 >= 1, "{resource}: watched after its list");
    }
    let restarts =
        |serve: &mut Served| serve.sample("ciliumpool_exporter_watch_restarts_total", "faulty", ",resource=\"pods\"").unwrap_or(0.0);
    // Silent and frozen servers must be found stale; the others fail loudly and are stale anyway.
    let faults = [
        (Some(WatchFault::CutMidEvent), false),
        (Some(WatchFault::Empty), false),
        (Some(WatchFault::Silent), true),
        (Some(WatchFault::Endless), false),
        (Some(WatchFault::Huge(200 << 20)), false),
        (Some(WatchFault::Flood), false),
        (Some(WatchFault::Gone), false),
        (Some(WatchFault::Garbage), false),
        (None, true), // the proxy frozen, as a SIGSTOPped API server
    ];
    for (fault, must_go_stale) in faults {
        let what = fault.map_or("frozen".to_string(), |f| format!("{f:?}"));
        let (restarts_before, requests_before) = (restarts(&mut serve), proxy.requests("pods"));
        match fault {
            Some(fault) => proxy.set_watch_fault(Some(("pods", fault))),
            None => proxy.freeze(true),
        }
        let start = Instant::now();
        let mut went_stale = None;
        while start.elapsed() < FAULT || (must_go_stale && went_stale.is_none()) {
            assert!(serve.ready("healthy"), "{what}: the healthy cluster stays served throughout");
            if went_stale.is_none() && !serve.ready("faulty") {
                went_stale = Some(start.elapsed());
            }
            assert!(start.elapsed() < STALE_AFTER + Duration::from_secs(40), "{what}: not found stale within --stale-after + 40 s");
            std::thread::sleep(Duration::from_millis(250));
        }
        let lasted = start.elapsed();
        let requests_after = proxy.requests("pods");
        let requests = (requests_after.0 - requests_before.0) + (requests_after.1 - requests_before.1);
        proxy.set_watch_fault(None);
        proxy.freeze(false);
        // The target is 10 s (at most 4 s of backoff, then a 2 s watch whose close proves it);
        // the bound is a hang guard for a loaded 2-core CI machine, the measured time is printed.
        let recovered = serve.wait_fresh("faulty", RECOVERY_GUARD, &format!("{what}: fresh again after the recovery"));
        let restarted = restarts(&mut serve) - restarts_before;
        eprintln!(
            "{what}: {requests} pods requests in {lasted:.1?}, {restarted} restarts, stale after {went_stale:?}, fresh {recovered:.1?} after recovery"
        );
        assert!(
            requests as f64 <= lasted.as_secs_f64(),
            "{what}: {requests} watch and list requests of pods in {lasted:?}: more than one a second"
        );
        assert!(restarted >= 1.0, "{what}: the restarts are counted");
    }
    let peak = serve.peak_memory();
    eprintln!("serve's peak resident memory: {} MiB", peak >> 20);
    assert!(peak <= SERVE_MEMORY, "serve reached {} MiB", peak >> 20);
}

/// Issue 53: the staleness grows from the last proof of freshness while a watch is silent; it
/// read 0 until the silence was taken for a stall, then jumped (to 32 s at the default timeouts).
#[test]
fn serve_staleness_grows_while_a_watch_is_silent() {
    use support::faults::WatchFault;
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    // Two contexts: the series of each have a `cluster` label.
    let (proxy, mut serve) = served_through_a_proxy(&cluster, dir.path());
    serve.wait_ready("faulty", true, Duration::from_secs(90), "first sync");
    proxy.set_watch_fault(Some(("pods", WatchFault::Silent)));
    let restarts = |serve: &mut Served| serve.sample("ciliumpool_exporter_watch_restarts_total", "faulty", ",resource=\"pods\"");
    let before = restarts(&mut serve);
    // Until the silent watch is taken for a stall (4 s asked + 5 s), no failure is counted; the
    // staleness must rise meanwhile. Past that it rises anyway, so only samples before count.
    let start = Instant::now();
    let mut seen = Vec::new();
    while start.elapsed() < Duration::from_secs(30) {
        let staleness = serve.sample("ciliumpool_exporter_staleness_seconds", "faulty", "").expect("the staleness");
        if restarts(&mut serve) != before {
            break;
        }
        seen.push(staleness);
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("staleness before the stall was found: {seen:?}");
    assert!(seen.iter().any(|s| *s >= 2.0), "the staleness rose while the watch was silent: {seen:?}");
}

/// Issue 53: a `410 Gone` after every relisting logs its failures while the backoff grows, then
/// says it goes quiet and is quiet (it logged a failure and a recovery per retry).
#[test]
fn serve_goes_quiet_on_a_recurring_gone() {
    use support::faults::WatchFault;
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::passing(&cluster, dir.path());
    let (_serve, stderr) = Served::start_logged(&proxy.kubeconfig, &["--request-timeout", "5s"]);
    stderr.read_until(Duration::from_secs(90), "serving", |line| line.contains("serving"));
    proxy.set_watch_fault(Some(("pods", WatchFault::Gone)));
    let quiet = stderr.read_until(Duration::from_secs(60), "the quiet line", |line| line.contains("from now on quietly"));
    let after = stderr.read_for(Duration::from_secs(25));
    eprintln!("until quiet: {quiet:#?}\nafter: {after:#?}");
    let (gone_requests, _) = proxy.requests("pods");
    let failures = after.iter().filter(|l| l.contains("the watch of pods failed")).count();
    let recoveries = after.iter().filter(|l| l.contains("the watch of pods follows the cluster again")).count();
    assert!(gone_requests >= 4, "the watch kept failing: {gone_requests} watches");
    assert_eq!((failures, recoveries), (0, 0), "quiet after saying so: {after:#?}");
}

#[test]
fn serve_lets_a_flooded_store_go_at_its_memory_budget() {
    use support::faults::WatchFault;
    let cluster = seeded_cluster();
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::passing(&cluster, dir.path());
    // No object cap to speak of: only the budget stands between the flood and the process's end.
    let flags = ["--request-timeout", "5s", "--max-watch-objects", "100000000", "--memory-budget", "96Mi"];
    let (mut serve, stderr) = Served::start_logged(&proxy.kubeconfig, &flags);
    let ready = |serve: &mut Served| {
        let (_, text) = support::prometheus::get(&serve.address, "/metrics", None).unwrap_or_default();
        text.lines().any(|l| l == "ciliumpool_exporter_ready 1")
    };
    let start = Instant::now();
    while !ready(&mut serve) {
        assert!(start.elapsed() < Duration::from_secs(90), "first sync");
        std::thread::sleep(Duration::from_millis(250));
    }
    proxy.set_watch_fault(Some(("pods", WatchFault::Flood)));
    stderr.read_until(Duration::from_secs(60), "the budget's warning", |line| line.contains("over its memory budget (--memory-budget)"));
    std::thread::sleep(FAULT);
    assert!(serve.process.0.try_wait().unwrap().is_none(), "serve is alive");
    proxy.set_watch_fault(None);
    let start = Instant::now();
    while !ready(&mut serve) {
        assert!(start.elapsed() < Duration::from_secs(30), "ready again after the flood");
        std::thread::sleep(Duration::from_millis(250));
    }
    let peak = serve.peak_memory();
    eprintln!("serve's peak resident memory under a 96 MiB budget: {} MiB", peak >> 20);
    assert!(peak <= 160 << 20, "serve reached {} MiB", peak >> 20);
}

/// A listing past `--max-watch-objects` is refused as it is read (the one-answer list counts its
/// objects): that resource is stale by name, the others are listed, and `serve` lives on.
#[test]
fn serve_refuses_a_listing_past_its_object_cap_and_names_the_resource() {
    let cluster = seeded_cluster();
    cluster.create_objects(vec![pod("default", "q", "n1", &["10.40.0.10"])]);
    let (mut serve, stderr) = Served::start_logged(&cluster.kubeconfig, &["--max-watch-objects", "1"]);
    let refused =
        stderr.read_until(Duration::from_secs(60), "the refused listing", |line| line.starts_with("warning: the watch of pods failed"));
    let line = refused.last().unwrap();
    assert!(line.contains("more than 1 objects (--max-watch-objects); its objects are let go"), "{line}");
    let (_, metrics) = support::prometheus::get(&serve.address, "/metrics", None).unwrap();
    assert!(metrics.lines().any(|l| l == "ciliumpool_exporter_ready 0"), "not ready without its pods:\n{metrics}");
    assert!(serve.process.0.try_wait().unwrap().is_none(), "serve is alive");
}

/// Issue 43 §1 for `serve`, when the first context's first read fails: `faulty` (the proxy,
/// frozen) and `healthy` reach one cluster with one cilium-config cluster-id and cluster-name.
/// `healthy` is not held back by a context that does not answer: it is followed under its own
/// name. When the proxy thaws, `faulty`'s first read succeeds and it takes the cluster over: its
/// series appear, `healthy`'s are withdrawn (its watches dropped), and the cluster is served once.
#[test]
fn serve_hands_one_cluster_to_the_first_context_once_that_one_is_read() {
    let cluster = seeded_cluster();
    cluster.create_objects(vec![serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cilium-config", "namespace": "kube-system"},
        "data": {"ipam": "multi-pool", "cluster-name": "east", "cluster-id": "4"}})]);
    let dir = tempfile::tempdir().expect("temp dir");
    let proxy = FaultProxy::passing(&cluster, dir.path());
    let kubeconfig = dir.path().join("two-contexts");
    two_contexts(&cluster, &proxy, &kubeconfig);
    proxy.freeze(true);
    let mut serve = Served::start_contexts(&kubeconfig, "faulty,healthy");
    let bound = Duration::from_secs(90);
    serve.wait_ready("healthy", true, bound, "healthy followed while faulty does not answer");
    assert!(serve.sample("ciliumpool_capacity_blocks", "healthy", ",pool=\"blue\",family=\"ipv4\"").is_some());
    proxy.freeze(false);
    serve.wait_ready("faulty", true, bound, "faulty read at last");
    let start = Instant::now();
    while serve.sample("ciliumpool_exporter_ready", "healthy", "").is_some() {
        assert!(start.elapsed() < bound, "healthy still served after faulty took the cluster over");
        std::thread::sleep(Duration::from_millis(250));
    }
    let (_, text) = support::prometheus::get(&serve.address, "/metrics", None).unwrap();
    assert!(!text.contains("cluster=\"healthy\""), "{text}");
    let capacity: Vec<&str> = text.lines().filter(|l| l.starts_with("ciliumpool_capacity_blocks{")).collect();
    assert_eq!(capacity.len(), 1, "{text}");
    assert!(capacity[0].starts_with("ciliumpool_capacity_blocks{cluster=\"faulty\",pool=\"blue\",family=\"ipv4\"} "), "{text}");
}
