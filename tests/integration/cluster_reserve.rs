//! `reserve-range` against a real kube-apiserver (issue 5): dialects, validation, dry runs,
//! confirmation, conflicts, and the preview compared with `usage` after the write.

use crate::support;

use ciliumpool::cluster::writes::{Replaced, RetryError, Target, replace_retrying};
use serde_json::{Value, json};
use std::time::Duration;
use support::cli::{self, INVALID_RANGES, json_of, press};
use support::{BLUE_POOL, Dialect, TestCluster, cilium_node, pod};

/// An upstream cluster with pool blue, a node holding 10.41.3.0/24 and a pod inside it.
fn blue_cluster() -> TestCluster {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.apply_yaml(BLUE_POOL);
    cluster.create_objects(vec![
        cilium_node("node-a", &[("blue", &["10.41.3.0/24"])], 16),
        pod("team-blue", "db-0", "node-a", &["10.41.3.7"]),
    ]);
    cluster
}

fn get_pool(cluster: &TestCluster, name: &str) -> Value {
    serde_json::from_str(&cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io", name, "-o", "json"])).unwrap()
}

fn resource_version(cluster: &TestCluster, name: &str) -> String {
    get_pool(cluster, name)["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

/// Runs the plugin; returns exit code, stdout, stderr.
fn plugin(cluster: &TestCluster, args: &[&str]) -> (i32, String, String) {
    cli::output(cluster.plugin().args(args))
}

/// The plugin in a pseudo-terminal.
fn terminal(cluster: &TestCluster, args: &[&str]) -> rexpect::session::PtySession {
    let mut command = cluster.plugin_process();
    command.args(args);
    cli::terminal(command, Duration::from_secs(60))
}

fn ipv4_usage(cluster: &TestCluster, pool: &str) -> Value {
    let (code, out, err) = plugin(cluster, &["usage", pool, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    json_of(&out)["pools"][0]["families"][0].clone()
}

/// The figures a preview and `usage` share.
fn assert_preview_matches_usage(impact_after: &Value, usage: &Value) {
    for field in ["capacityBlocks", "allocatedBlocks", "withheldBlocks", "freeBlocks", "reservedAddresses", "freeAddresses"] {
        assert_eq!(impact_after[field], usage[field], "{field}: preview {impact_after} vs usage {usage}");
    }
}

#[test]
fn upstream_blue_gateway_and_drain_then_usage_agrees() {
    let cluster = blue_cluster();
    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "10.40.255.240-10.40.255.254", "--yes", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let first = json_of(&out);
    assert_eq!((first["written"].clone(), first["dryRun"].clone(), first["conflicts"].clone()), (json!(true), json!("none"), json!(0)));
    assert_eq!(first["impact"]["newlyWithheld"], json!([{"first": "10.40.255.0/24", "last": "10.40.255.0/24", "blocks": 1}]));
    assert_preview_matches_usage(&first["impact"]["after"], &ipv4_usage(&cluster, "blue"));

    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "--drain", "10.41.0.0/16", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Allocated block 10.41.3.0/24 on node-a: 1 pod(s) use addresses of the range: team-blue/db-0 — not evicted: drain node node-a to free it"), "{out}");
    assert!(out.contains("ciliumpodippool.cilium.io/blue edited: draining 10.41.0.0/16 (reserved end to end)"), "{out}");

    let pool = get_pool(&cluster, "blue");
    assert_eq!(
        pool["spec"]["ipv4"]["pool"],
        json!([
        {"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.240", "end": "10.40.255.254"}]},
        {"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.255.255"}]}])
    );
    assert_eq!(pool["spec"]["ipv4"]["cidrs"], json!(["10.40.0.0/16", "10.41.0.0/16"]));
    assert_eq!(pool["spec"]["namespaceSelector"], json!({"matchLabels": {"team": "blue"}}));
    assert_eq!(pool["metadata"]["annotations"]["example.com/ticket"], json!("NET-1"));

    let usage = ipv4_usage(&cluster, "blue");
    assert_eq!(
        (usage["allocatedBlocks"].clone(), usage["withheldBlocks"].clone(), usage["freeBlocks"].clone()),
        (json!(1), json!(256), json!(255))
    );

    // The preview of the drain, asked again as a dry run of the undo, reports the same "before".
    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "--remove", "10.41.0.0/16", "--dry-run", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_preview_matches_usage(&json_of(&out)["impact"]["before"], &usage);

    // inspect: draining with node and pod; --list shows both ranges.
    let (_, out, _) = plugin(&cluster, &["inspect", "blue"]);
    assert!(out.contains("Draining 10.41.0.0/16: still held by node-a (10.41.3.0/24); 1 pod(s) inside:\n    team-blue/db-0\n"), "{out}");
    let (code, out, _) = plugin(&cluster, &["reserve-range", "--list", "blue", "-o", "json"]);
    assert_eq!(code, 0);
    let listed: Vec<String> = json_of(&out)["reservedRanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| format!("{}-{}", r["start"].as_str().unwrap(), r["end"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, ["10.40.255.240-10.40.255.254", "10.41.0.0-10.41.255.255"]);
}

#[test]
fn upstream_refusals_dry_runs_and_conflicts() {
    let cluster = blue_cluster();
    let (code, _, err) = plugin(&cluster, &["reserve-range", "blue", "10.40.255.240-10.40.255.254", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let version = resource_version(&cluster, "blue");

    // Every invalid range: exit 2, one clear line, nothing written.
    for (args, message) in INVALID_RANGES {
        let full = [&["reserve-range"], *args, &["--yes"]].concat();
        let (code, out, err) = plugin(&cluster, &full);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(message) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?} printed {out}");
        assert_eq!(resource_version(&cluster, "blue"), version, "{args:?} wrote");
    }
    // The whole pool needs --force.
    let (code, _, err) = plugin(&cluster, &["reserve-range", "blue", "--drain", "10.41.0.0/16", "--yes"]);
    assert_eq!(code, 0, "{err}");
    let version = resource_version(&cluster, "blue");
    let (code, _, err) = plugin(&cluster, &["reserve-range", "blue", "--drain", "10.40.0.0/16", "--yes"]);
    assert_eq!((code, err.contains("pass --force")), (2, true), "{err}");
    assert_eq!(resource_version(&cluster, "blue"), version);

    // No terminal and no --yes: the preview is shown, nothing is written, exit 2.
    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "10.40.0.0/28"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.contains("Blocks newly withheld: 10.40.0.0/24"), "{out}");
    assert!(err.contains("not on a terminal; pass --yes"), "{err}");
    assert_eq!(resource_version(&cluster, "blue"), version);

    // Server dry run: the API server sees the request, nothing is persisted.
    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "10.40.0.0/28", "--dry-run=server", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!((json_of(&out)["dryRun"].clone(), json_of(&out)["written"].clone()), (json!("server"), json!(false)));
    let (code, out, err) = plugin(&cluster, &["reserve-range", "blue", "10.40.0.0/28", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.ends_with("edited: reserved 10.40.0.0-10.40.0.15 in 10.40.0.0/16 (dry run)\n"), "{out}");
    assert_eq!(resource_version(&cluster, "blue"), version);
    assert!(!get_pool(&cluster, "blue").to_string().contains("10.40.0.15"));

    // A concurrent writer between read and write: the plugin has read the pool when it asks for
    // confirmation, so a label written then makes its replace conflict (409). It re-reads,
    // re-validates and writes again, without asking again; both changes survive.
    // Every question names the kubeconfig context and the API server (issue 42).
    let question = format!("Write this change to ciliumpodippool blue on context testenv ({})? [y/N]", cluster.server);
    let mut term = terminal(&cluster, &["reserve-range", "blue", "10.40.0.0/28", "-o", "json"]);
    term.exp_string(&question).unwrap();
    cluster.kubectl(&["label", "ciliumpodippools.v2.cilium.io", "blue", "raced=yes", "--overwrite"]);
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("changed since it was read") && shown.contains("re-validating (1/5)"), "{shown}");
    assert!(shown.contains("\"conflicts\": 1"), "{shown}");
    let pool = get_pool(&cluster, "blue");
    assert_eq!(pool["metadata"]["labels"]["raced"], json!("yes"));
    // A new range goes in address order (issue 42), before the gateway's 10.40.255.240.
    assert_eq!(pool["spec"]["ipv4"]["pool"][0]["reservedRanges"][0], json!({"start": "10.40.0.0", "end": "10.40.0.15"}));

    // On a terminal: the guided flow (one pool, so no pool picker), the preview, a confirmation.
    let mut term = terminal(&cluster, &["reserve-range"]);
    term.exp_string("CIDR").unwrap();
    press(&mut term, "\r");
    term.exp_string("Range to reserve in 10.40.0.0/16").unwrap();
    press(&mut term, "10.40.2.0/28\r");
    term.exp_string("Blocks newly withheld: 10.40.2.0/24").unwrap();
    term.exp_string(&question).unwrap();
    let version = resource_version(&cluster, "blue");
    press(&mut term, "y\r");
    term.exp_string("edited: reserved 10.40.2.0-10.40.2.15 in 10.40.0.0/16").unwrap();
    term.exp_eof().unwrap();
    assert_ne!(resource_version(&cluster, "blue"), version);
    assert!(
        get_pool(&cluster, "blue")["spec"]["ipv4"]["pool"][0]["reservedRanges"]
            .as_array()
            .unwrap()
            .contains(&json!({"start": "10.40.2.0", "end": "10.40.2.15"}))
    );
    // Answering no writes nothing.
    let version = resource_version(&cluster, "blue");
    let mut term = terminal(&cluster, &["reserve-range", "blue", "10.40.3.0"]);
    term.exp_string(&question).unwrap();
    press(&mut term, "n\r");
    term.exp_string("aborted; nothing was written").unwrap();
    term.exp_eof().unwrap();
    assert_eq!(resource_version(&cluster, "blue"), version);
}

#[test]
fn v2alpha1_only_is_refused_then_cfp_after_the_upgrade() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: green}\nspec: {ipv4: {cidrs: [10.60.0.0/20, 10.61.0.0/20], maskSize: 26}}\n");
    let version =
        || cluster.kubectl(&["get", "ciliumpodippools.v2alpha1.cilium.io", "green", "-o", "jsonpath={.metadata.resourceVersion}"]);
    let before = version();
    let (code, _, err) = plugin(&cluster, &["reserve-range", "green", "10.60.0.0-10.60.0.31", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err, "error: cilium.io/v2 is not served by this cluster; upgrade Cilium (reserved ranges need the v2 CiliumPodIPPool)\n");
    assert_eq!(version(), before);

    // Cilium upgraded to the CFP dialect: the pool, stored before the switch, still has string
    // cidrs; the first range converts the family's cidrs to objects.
    cluster.move_pools_to_v2_storage(Dialect::CfpV2);
    let (code, out, err) = plugin(&cluster, &["reserve-range", "green", "10.60.0.0-10.60.0.31", "--yes", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out)["impact"]["newlyWithheld"], json!([{"first": "10.60.0.0/26", "last": "10.60.0.0/26", "blocks": 1}]));
    let pool = get_pool(&cluster, "green");
    assert_eq!(
        pool["spec"]["ipv4"]["cidrs"],
        json!([{"cidr": "10.60.0.0/20", "reservedRange": "10.60.0.0-10.60.0.31"}, {"cidr": "10.61.0.0/20"}])
    );
    let usage = ipv4_usage(&cluster, "green");
    assert_preview_matches_usage(&json_of(&out)["impact"]["after"], &usage);

    let written = get_pool(&cluster, "green")["metadata"]["resourceVersion"].clone();
    let (code, _, err) = plugin(&cluster, &["reserve-range", "green", "10.60.8.1", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("the CFP dialect holds one reservedRange per CIDR and 10.60.0.0/20 already reserves 10.60.0.0-10.60.0.31"),
        "{err}"
    );
    assert_eq!(get_pool(&cluster, "green")["metadata"]["resourceVersion"], written);
    // Another CIDR of the same pool takes its own range.
    let (code, _, err) = plugin(&cluster, &["reserve-range", "green", "10.61.0.1", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        get_pool(&cluster, "green")["spec"]["ipv4"]["cidrs"][1],
        json!({"cidr": "10.61.0.0/20", "reservedRange": "10.61.0.1-10.61.0.1"})
    );
}

/// The write loop itself against the real API server, with the concurrent writer in the edit:
/// the write made between the read and the replace makes it conflict, every time if the writer
/// never stops. The attempts are bounded and a conflicting write never lands.
#[test]
fn replace_retrying_rereads_after_a_conflict_and_gives_up_on_a_writer_that_never_stops() {
    let cluster = blue_cluster();
    let target = Target::pools(&cluster.client(), false);
    let annotate =
        |value: String| cluster.kubectl(&["annotate", "ciliumpodippools.v2.cilium.io", "blue", &format!("writer={value}"), "--overwrite"]);
    let ours = |mut pool: Value, label: &str| {
        pool["metadata"]["labels"] = json!({"ours": label});
        Ok(Some(pool))
    };

    // Once: the second read sees the other write, and the second replace carries both.
    let mut reads = 0;
    let once = cluster.block_on(replace_retrying(&target, "blue", 3, |current| {
        reads += 1;
        if reads == 1 {
            annotate("once".into());
        }
        ours(current, "once")
    }));
    assert!(matches!(once, Ok(Replaced::Written { attempts: 2, .. })), "{once:?}");
    let pool = get_pool(&cluster, "blue");
    assert_eq!(
        (pool["metadata"]["annotations"]["writer"].clone(), pool["metadata"]["labels"]["ours"].clone()),
        (json!("once"), json!("once"))
    );

    // Always: every attempt conflicts; after the last one nothing of ours is stored.
    let mut reads = 0;
    let storm = cluster.block_on(replace_retrying(&target, "blue", 4, |current| {
        reads += 1;
        annotate(format!("storm-{reads}"));
        ours(current, "storm")
    }));
    assert!(matches!(storm, Err(RetryError::Conflicts(4))), "{storm:?}");
    assert_eq!(reads, 4);
    let pool = get_pool(&cluster, "blue");
    assert_eq!(
        (pool["metadata"]["annotations"]["writer"].clone(), pool["metadata"]["labels"]["ours"].clone()),
        (json!("storm-4"), json!("once"))
    );
}
