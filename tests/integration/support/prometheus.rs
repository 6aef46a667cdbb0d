//! A real Prometheus (built by tools/prometheus/build.sh; `tools/test.sh` exports
//! `PROMETHEUS_DIR`) scraping one target every second and evaluating rule files, queried through
//! its HTTP API; and the plain HTTP GET the tests use for it and for `serve`'s endpoints.

use super::KillOnDrop;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `PROMETHEUS_DIR`, holding `prometheus` and `promtool`. Unset fails the test, never skips it.
pub fn prometheus_dir() -> PathBuf {
    match std::env::var_os("PROMETHEUS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => panic!(
            "PROMETHEUS_DIR is not set: run `PROMETHEUS_DIR=$(tools/prometheus/build.sh) cargo test ...`, or tools/test.sh --test ..."
        ),
    }
}

/// A loopback port nobody listens on now (the OS picks it; taken again by the caller right away).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free loopback port").port()
}

/// `GET http://HOST:PORT/PATH` as HTTP/1.0 (the answer ends with the connection, no chunking):
/// the status code and the body. `accept` is sent as the `Accept` header when given.
pub fn get(address: &str, path: &str, accept: Option<&str>) -> std::io::Result<(u16, String)> {
    get_within(address, path, accept, Duration::from_secs(30))
}

/// [`get`] waiting at most `bound` for each read of the answer.
pub fn get_within(address: &str, path: &str, accept: Option<&str>, bound: Duration) -> std::io::Result<(u16, String)> {
    let mut stream = std::net::TcpStream::connect(address)?;
    stream.set_read_timeout(Some(bound))?;
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n{accept}\r\n")?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head.split_whitespace().nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
    Ok((status, body.to_string()))
}

/// Percent-encodes a query parameter (everything but unreserved characters).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// A Prometheus in its own temporary directory; killed when dropped.
pub struct Prometheus {
    /// `127.0.0.1:PORT` of its HTTP API.
    pub address: String,
    log: PathBuf,
    _process: KillOnDrop,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Scrapes `target` (`HOST:PORT`) as job `ciliumpool` every second and evaluates `rule_files`
    /// every second; returns once it is ready.
    pub fn start(target: &str, rule_files: &[&Path]) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let rules: Vec<String> = rule_files.iter().map(|p| format!("  - {}\n", p.display())).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nrule_files:\n{}\
             scrape_configs:\n  - job_name: ciliumpool\n    static_configs:\n      - targets: ['{target}']\n",
            rules.concat()
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("write prometheus.yml");
        let address = format!("127.0.0.1:{}", free_port());
        let log = dir.path().join("prometheus.log");
        let process = Command::new(prometheus_dir().join("prometheus"))
            .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.path().join("prometheus.out")).expect("log file"))
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("start prometheus");
        let prometheus = Prometheus { address, log, _process: KillOnDrop(process), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !matches!(get(&prometheus.address, "/-/ready", None), Ok((200, _))) {
            assert!(Instant::now() < deadline, "Prometheus was not ready within 60 s:\n{}", prometheus.log());
            std::thread::sleep(Duration::from_millis(200));
        }
        prometheus
    }

    /// What Prometheus logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Evaluates `promql` now (`/api/v1/query`): the result vector. Panics when Prometheus
    /// refuses the expression.
    pub fn query(&self, promql: &str) -> Vec<Value> {
        let (status, body) = get(&self.address, &format!("/api/v1/query?query={}", encode(promql)), None).expect("query Prometheus");
        let answer: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{promql}: not JSON ({e}): {body}"));
        assert!(status == 200 && answer["status"] == "success", "{promql}: Prometheus answered {status}: {body}");
        answer["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

/// The value of one sample of a query result, as Prometheus holds it.
pub fn sample_value(sample: &Value) -> f64 {
    sample["value"][1].as_str().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no value in {sample}"))
}

/// The PromQL of a Grafana dashboard: each `expr` of a panel target, and each query variable's
/// `label_values(SELECTOR, LABEL)` as its selector.
pub fn promql_of(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(expr)) = map.get("expr") {
                found.push(expr.clone());
            }
            if map.get("type") == Some(&json!("query"))
                && let Some(Value::String(query)) = map.get("query")
            {
                let inner = query.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')')).and_then(|q| q.rsplit_once(','));
                found.push(inner.map_or(query.as_str(), |(selector, _)| selector).to_string());
            }
            map.values().for_each(|v| promql_of(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| promql_of(v, found)),
        _ => {}
    }
}

/// Grafana's template variables as "any value" (`$cluster` and `$pool` are used with `=~`; one
/// cluster's series have no `cluster` label, which `.*` matches) and its interval.
pub fn substitute(expr: &str) -> String {
    ["${cluster}", "$cluster", "${pool}", "$pool"]
        .iter()
        .fold(expr.to_string(), |e, var| e.replace(var, ".*"))
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "1m")
}
