//! deploy/ and the exposition, checked with the real promtool (tools/prometheus/build.sh;
//! `tools/test.sh` exports `PROMETHEUS_DIR`): the alert rules load and every alert's unit test
//! passes (it fires, and stays quiet where it should), the PrometheusRule holds exactly the rule
//! file's groups, and the exposition — hostile pool names included — passes `promtool check
//! metrics` (0.0.4) and the strict OpenMetrics parser.

use ciliumpool::render::metrics::{self, Encoding, Options};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::support;

/// `PROMETHEUS_DIR/promtool`. Unset fails the test, never skips it.
fn promtool() -> PathBuf {
    match std::env::var_os("PROMETHEUS_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("promtool"),
        _ => panic!(
            "PROMETHEUS_DIR is not set: run `PROMETHEUS_DIR=$(tools/prometheus/build.sh) cargo test --test integration deploy::`, or tools/test.sh"
        ),
    }
}

fn run(args: &[&str], stdin: Option<&str>) -> (bool, String) {
    let mut child = Command::new(promtool())
        .args(args)
        .current_dir(support::repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn the_alert_rules_load_and_every_alert_fires_and_stays_quiet_in_its_unit_test() {
    let (ok, out) = run(&["check", "rules", "deploy/prometheus/rules.yml"], None);
    assert!(ok && out.contains("SUCCESS: 8 rules found"), "{out}");
    let (ok, out) = run(&["test", "rules", "deploy/prometheus/rules_test.yml"], None);
    assert!(ok && out.contains("SUCCESS"), "{out}");
    // Every alert of the rule file has a unit test.
    let rules = std::fs::read_to_string(support::repo_root().join("deploy/prometheus/rules.yml")).unwrap();
    let tests = std::fs::read_to_string(support::repo_root().join("deploy/prometheus/rules_test.yml")).unwrap();
    for line in rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")) {
        assert!(tests.contains(&format!("alertname: {line}")), "no unit test for alert {line}");
    }
}

#[test]
fn the_prometheus_rule_holds_exactly_the_rule_files_groups() {
    let read = |path: &str| -> serde_json::Value {
        serde_saphyr::from_str(&std::fs::read_to_string(support::repo_root().join(path)).unwrap()).unwrap()
    };
    let file = read("deploy/prometheus/rules.yml");
    let object = read("deploy/prometheus-operator/prometheusrule.yaml");
    assert_eq!(object["kind"], "PrometheusRule");
    assert!(file["groups"].as_array().is_some_and(|g| !g.is_empty()));
    assert_eq!(object["spec"]["groups"], file["groups"], "regenerate the PrometheusRule from rules.yml (its header says how)");
}

/// GitHub's anchor of a Markdown heading: lower case, spaces as `-`, punctuation dropped.
fn anchor_of(heading: &str) -> String {
    let kept =
        heading.trim().to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_').collect::<String>();
    kept.replace(' ', "-")
}

/// Issue 43 §6: every alert links to the section of docs/metrics.md that says what to do, and
/// that section exists and says something.
#[test]
fn every_alert_has_a_runbook_section_in_the_docs() {
    let rules: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(support::repo_root().join("deploy/prometheus/rules.yml")).unwrap()).unwrap();
    let docs = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    let sections: Vec<(String, usize)> =
        docs.lines().enumerate().filter_map(|(at, line)| Some((anchor_of(line.strip_prefix('#')?.trim_start_matches('#')), at))).collect();
    let prefix = "https://github.com/kubectl-ciliumpool/kubectl-ciliumpool/blob/main/docs/metrics.md#";
    for rule in rules["groups"].as_array().unwrap().iter().flat_map(|g| g["rules"].as_array().unwrap()) {
        let (alert, url) = (rule["alert"].as_str().unwrap(), rule["annotations"]["runbook_url"].as_str().unwrap_or_default());
        let anchor = url.strip_prefix(prefix).unwrap_or_else(|| panic!("{alert}: runbook_url {url:?} is not a section of docs/metrics.md"));
        let &(_, at) =
            sections.iter().find(|(a, _)| a == anchor).unwrap_or_else(|| panic!("{alert}: no heading #{anchor} in docs/metrics.md"));
        let body: Vec<&str> = docs.lines().skip(at + 1).take_while(|l| !l.starts_with('#')).filter(|l| !l.trim().is_empty()).collect();
        assert!(body.len() >= 2, "{alert}: the runbook section #{anchor} says too little: {body:?}");
    }
}

/// Issue 43 §6: the dashboard has a `cluster` variable (serve across a fleet labels every series
/// with `cluster`) and every panel and the `pool` variable use it; the forecast and the fleet
/// panel are there. tests/integration/cluster_serve.rs evaluates every expression against a real Prometheus.
#[test]
fn the_dashboard_filters_every_panel_by_cluster() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(support::repo_root().join("deploy/grafana/ciliumpool-dashboard.json")).unwrap())
            .unwrap();
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let variable = |name: &str| variables.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no ${name} variable"));
    assert_eq!(variable("cluster")["query"], "label_values(ciliumpool_pool_info, cluster)");
    assert!(variable("pool")["query"].as_str().unwrap().contains("cluster=~\"$cluster\""), "the pools of the clusters chosen");
    let mut titles = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        titles.push(panel["title"].as_str().unwrap());
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap();
            // The problems between clusters belong to a pair: no cluster label to filter by.
            let selectors = expr.matches("ciliumpool_").count() - expr.matches("ciliumpool_fleet_").count();
            assert_eq!(expr.matches("cluster=~\"$cluster\"").count(), selectors, "{}: {expr}", panel["title"]);
        }
    }
    assert!(titles.iter().any(|t| t.starts_with("Fullest pools across clusters")), "{titles:?}");
    assert!(titles.iter().any(|t| t.starts_with("Forecast")), "{titles:?}");
    assert!(titles.iter().any(|t| t.starts_with("Fleet conflicts")), "{titles:?}");
}

/// The families of the example snapshot plus a pool whose name holds what a label must escape.
fn example_families() -> Vec<metrics::Family> {
    let dir = tempfile::tempdir().unwrap();
    let hostile = r#"{"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "evil\"} 1\nciliumpool_free_blocks{pool=\"x\\"},
        "spec": {"ipv4": {"cidrs": ["10.250.0.0/24"], "maskSize": 26}}}"#;
    std::fs::write(dir.path().join("hostile.json"), hostile).unwrap();
    let example = support::repo_root().join("examples/snapshot").to_string_lossy().into_owned();
    let snapshot = ciliumpool::files::snapshot(
        &[example, dir.path().to_string_lossy().into_owned()],
        None,
        false,
        ciliumpool::files::Pools::Read,
        ciliumpool::files::Limits::default(),
    )
    .unwrap();
    let report = ciliumpool::allocator::analyze(&snapshot);
    assert!(report.pools.iter().any(|p| p.name.contains('\n')), "the hostile pool is read");
    let pools: Vec<_> = report.pools.iter().collect();
    metrics::families(&report, &pools, &snapshot.origin, Options { nodes: true, deleted_pools: true })
}

#[test]
fn both_encodings_pass_promtool_check_metrics_and_nothing_is_injected() {
    let families = example_families();
    for encoding in [Encoding::Prometheus, Encoding::OpenMetrics] {
        let mut text = metrics::encode(&families, encoding);
        if encoding == Encoding::OpenMetrics {
            text.push_str(metrics::EOF);
            // promtool reads the 0.0.4 format only; the strict OpenMetrics parser checks this one.
            openmetrics_parser::openmetrics::parse_openmetrics(&text)
                .unwrap_or_else(|e| panic!("strict OpenMetrics parser: {e:?}\n{text}"));
        } else {
            let (ok, out) = run(&["check", "metrics"], Some(&text));
            assert!(ok, "promtool check metrics:\n{out}\n{text}");
        }
        // The hostile name stays one label value: one sample line per pool family, none forged.
        let forged = text.lines().filter(|l| l.starts_with("ciliumpool_free_blocks{pool=\"x")).count();
        assert_eq!(forged, 0, "{text}");
        assert!(text.contains(r#"ciliumpool_free_blocks{pool="evil\"} 1\nciliumpool_free_blocks{pool=\"x\\",family="ipv4"} 4"#), "{text}");
    }
}

/// Mebibytes of a memory quantity as the Deployment writes them (`Mi` or `Gi`).
fn mebibytes(quantity: &str) -> u64 {
    match (quantity.strip_suffix("Mi"), quantity.strip_suffix("Gi")) {
        (Some(mi), _) => mi.parse().unwrap(),
        (_, Some(gi)) => gi.parse::<u64>().unwrap() * 1024,
        _ => panic!("memory quantity {quantity}: write it in Mi or Gi"),
    }
}

/// The Deployment has CPU and memory requests and a memory limit above the request, and
/// docs/metrics.md, which derives them from the measurements of docs/performance.md, gives the
/// same values: a change to one without the other fails here.
#[test]
fn the_deployment_has_the_requests_and_limits_docs_metrics_derives() {
    let deployment: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(support::repo_root().join("deploy/deployment.yaml")).unwrap()).unwrap();
    let resources = &deployment["spec"]["template"]["spec"]["containers"][0]["resources"];
    let docs = std::fs::read_to_string(support::repo_root().join("docs/metrics.md")).unwrap();
    let mut quantities = Vec::new();
    for (kind, resource) in [("requests", "cpu"), ("requests", "memory"), ("limits", "memory")] {
        let value = resources[kind][resource].as_str().unwrap_or_else(|| panic!("no {kind}.{resource} in deploy/deployment.yaml"));
        let documented = format!("`{kind}.{resource}: {value}`");
        assert!(docs.contains(&documented), "docs/metrics.md does not give {documented}");
        quantities.push(value);
    }
    assert!(mebibytes(quantities[2]) > mebibytes(quantities[1]), "the memory limit is not above the request: {resources}");
}

/// Issue 42: `serve` listens on loopback unless told (as kubectl proxy does), so the Deployment
/// must pass `--listen 0.0.0.0:9967` for the Service and Prometheus to reach it.
#[test]
fn serve_listens_on_loopback_by_default_and_the_deployment_on_every_interface() {
    use clap::Parser;
    let cli = ciliumpool::cli::Cli::try_parse_from(["kubectl-ciliumpool", "serve"]).expect("serve parses");
    let ciliumpool::cli::Command::Serve(args) = cli.command else { panic!("not serve: {:?}", cli.command) };
    assert_eq!(args.listen, "127.0.0.1:9967");
    let deployment = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/deployment.yaml")).unwrap();
    assert!(deployment.contains(r#"args: ["serve", "--listen", "0.0.0.0:9967""#), "{deployment}");
}
