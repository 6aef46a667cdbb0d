//! A misbehaving API server (issue 28, "every request ends"): a fault-injecting proxy
//! (`support::faults`) in front of the real kube-apiserver repeats `continue` tokens, trickles
//! answers and inflates lists. Each ends with one error line and exit 3; none hangs. The child is
//! killed after [`HANG_GUARD`], which counts as a failure: a hang check, not a speed target.

mod support;

use ciliumpool::source::limits::MAX_RESPONSE_BYTES;
use std::time::{Duration, Instant};
use support::faults::{Fault, FaultProxy, PROXY_TOKEN};
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
    let (code, stdout, stderr, _) = run(&proxy, &["usage"]);
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
            .filter(|l| l.starts_with(&prefix) && l.split('?').next().is_some_and(|path| path.ends_with(&format!("/{resource}"))))
            .map(|l| {
                let (_, after) = l.rsplit_once(" 200 OK in ").unwrap_or_else(|| panic!("status and time: {l}"));
                after.strip_suffix(" ms").and_then(|ms| ms.parse().ok()).unwrap_or_else(|| panic!("milliseconds: {l}"))
            })
            .collect()
    };
    for resource in ["ciliumnodes", "ciliumendpoints"] {
        assert_eq!(answered(resource).len(), 1, "one list request of {resource}: {stderr}");
    }
    let pods = answered("pods");
    assert_eq!(pods.len(), 1, "{stderr}");
    assert!(pods[0] >= delay.as_millis(), "the time of the delayed answer is its real time: {stderr}");
    let waiting: Vec<&str> = stderr.lines().filter(|l| l.starts_with("waiting for ")).collect();
    assert_eq!(waiting.len(), 1, "one waiting line, for the slow list only: {stderr}");
    assert!(waiting[0].starts_with(&format!("waiting for {}: GET {}/api/v1/pods?", proxy.url, proxy.url)), "{stderr}");

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
