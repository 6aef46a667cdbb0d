//! The real Cilium operator in the loop: `cilium-operator-generic` v1.20.2 hands out blocks on the
//! project's own kube-apiserver while [`Agent`] writes what Cilium's agent writes, and every figure
//! and every prediction of the plugin is checked against what the operator then did
//! (docs/design/cilium.md, "Checked against the running operator").
//!
//! tools/test.sh runs these last, once the operator's build (cold: many minutes) is done:
//! `tools/test.sh --test integration operator_loop::`.

use crate::support::cli::{family, json_of};
use crate::support::operator::{Agent, OPERATOR_WAIT, Operator, blocks_of, operator_error, request};
use crate::support::{Dialect, TestCluster};
use serde_json::Value;
use std::collections::BTreeMap;

/// `usage -o json` of the live cluster.
fn usage(cluster: &TestCluster) -> Value {
    let out = cluster.plugin().args(["usage", "-o", "json"]).output().expect("run the plugin");
    assert!(out.status.success(), "usage failed: {}", String::from_utf8_lossy(&out.stderr));
    json_of(&String::from_utf8_lossy(&out.stdout))
}

/// `check -o json`'s problems of one kind: (object, severity, message).
fn problems(cluster: &TestCluster, kind: &str) -> Vec<(String, String, String)> {
    let out = cluster.plugin().args(["check", "-o", "json"]).output().expect("run the plugin");
    let doc = json_of(&String::from_utf8_lossy(&out.stdout));
    let text = |p: &Value, key: &str| p[key].as_str().unwrap_or_default().to_string();
    doc["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("no problems[] in {doc:#}"))
        .iter()
        .filter(|p| p["kind"] == kind)
        .map(|p| (text(p, "object"), text(p, "severity"), text(p, "message")))
        .collect()
}

/// A prediction of `usage -o json` for one pool and family.
fn predicted(doc: &Value, pool: &str, fam: &str, key: &str) -> Option<String> {
    family(doc, pool, fam)[key].as_str().map(str::to_string)
}

/// The blocks of one family among a node's blocks of a pool.
fn of_family(blocks: &[String], fam: &str) -> Vec<String> {
    blocks.iter().filter(|b| b.contains(':') == (fam == "ipv6")).cloned().collect()
}

/// What the CiliumNodes the operator wrote hold, per (pool, family): (blocks, nodes holding).
fn truth(agent: &Agent) -> BTreeMap<(String, String), (u64, u64)> {
    let mut figures: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    for node in agent.cilium_nodes() {
        let allocated = node.pointer("/spec/ipam/pools/allocated").and_then(Value::as_array).cloned().unwrap_or_default();
        for entry in allocated {
            let pool = entry["pool"].as_str().unwrap_or_default().to_string();
            for fam in ["ipv4", "ipv6"] {
                let blocks = of_family(&blocks_of(&node, &pool), fam).len() as u64;
                if blocks > 0 {
                    let figure = figures.entry((pool.clone(), fam.to_string())).or_default();
                    *figure = (figure.0 + blocks, figure.1 + 1);
                }
            }
        }
    }
    figures
}

/// The plugin's allocated blocks and nodes holding, for the (pool, family) pairs of `truth`.
fn plugin_figures(doc: &Value, truth: &BTreeMap<(String, String), (u64, u64)>) -> BTreeMap<(String, String), (u64, u64)> {
    truth
        .keys()
        .map(|(pool, fam)| {
            let f = family(doc, pool, fam);
            let count = |key: &str| f[key].as_u64().unwrap_or_else(|| panic!("{pool}/{fam} {key} is not a count: {f}"));
            ((pool.clone(), fam.clone()), (count("allocatedBlocks"), count("nodesHolding")))
        })
        .collect()
}

const DUAL_STACK_POOLS: &str = "
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: blue}
spec:
  ipv4: {cidrs: [10.10.0.0/25, 10.10.1.0/26], maskSize: 27}
  ipv6: {cidrs: ['fd00:10::/121'], maskSize: 123}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: green}
spec:
  ipv6: {cidrs: ['fd00:20::/112'], maskSize: 120}
";

/// Nodes join one at a time. Before each join, `usage` predicts the block of each family the
/// operator hands out next, and its runway predicts how many nodes get one before the operator
/// reports exhaustion; after it, the node holds exactly the predicted blocks, or the operator's
/// error names the family that had none. IPv6 runs out first (4 blocks against IPv4's 6): the
/// operator's one-family error is what `check` then reports, not a stale error.
#[test]
fn each_join_gets_the_predicted_block_until_the_runway_ends() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml(DUAL_STACK_POOLS);
    let mut operator = Operator::start(&cluster);
    let agent = Agent::new(&cluster);

    let before = usage(&cluster);
    let runway = |fam: &str| family(&before, "blue", fam)["runwayNodes"].as_u64().expect("a runway");
    assert_eq!((runway("ipv4"), runway("ipv6")), (6, 4), "no node holds a block yet: one block per node");
    let mut got = BTreeMap::from([("ipv4", 0u64), ("ipv6", 0u64)]);
    for i in 1..=7 {
        let node = format!("node-{i}");
        let doc = usage(&cluster);
        // 20 IPv4 addresses fit one /27 (30 usable), 10 IPv6 one /123; green's 100 one /120.
        agent.join(&node, &[request("blue", 20, 10), request("green", 0, 100)]);
        let written = agent.wait_for_answer(&mut operator, &node);
        for (pool, fam) in [("blue", "ipv4"), ("blue", "ipv6"), ("green", "ipv6")] {
            let held = of_family(&blocks_of(&written, pool), fam);
            match predicted(&doc, pool, fam, "nextBlock") {
                Some(next) => {
                    assert_eq!(held, std::slice::from_ref(&next), "{node} {pool}/{fam}: the plugin predicted {next}");
                    assert_eq!(predicted(&doc, pool, fam, "nextBlockWhileRunning"), Some(next), "nothing was released");
                    if pool == "blue" {
                        *got.get_mut(fam).expect("a family") += 1;
                    }
                }
                None => {
                    assert!(held.is_empty(), "{node} {pool}/{fam}: no free block was predicted, yet it got {held:?}");
                    let error = operator_error(&written).unwrap_or_default();
                    let failed = format!("failed to allocate {fam} address for node \"{node}\" from pool \"{pool}\"");
                    assert!(error.contains(&failed), "{node}: the operator's error {error:?} lacks {failed:?}");
                }
            }
        }
    }
    assert_eq!((got["ipv4"], got["ipv6"]), (runway("ipv4"), runway("ipv6")), "nodes that got a block against the runway predicted");

    // Every figure against what the operator wrote.
    let truth = truth(&agent);
    let after = usage(&cluster);
    assert_eq!(plugin_figures(&after, &truth), truth);
    assert_eq!(family(&after, "blue", "ipv4")["freeBlocks"], 0);
    assert_eq!(family(&after, "blue", "ipv6")["freeBlocks"], 0);
    // A `kubectl get` dump of the same cluster gives the same figures.
    let dir = tempfile::tempdir().expect("temp dir");
    let dump = dir.path().join("dump.yaml");
    std::fs::write(&dump, cluster.kubectl(&["get", "ciliumpodippools,ciliumnodes", "-o", "yaml"])).expect("write the dump");
    let out = crate::support::cli::plugin().args(["usage", "-o", "json", "-f"]).arg(&dump).output().expect("run the plugin");
    assert_eq!(plugin_figures(&json_of(&String::from_utf8_lossy(&out.stdout)), &truth), truth, "usage -f of a dump");
    // `ip` of an address in each block the operator handed node-1 names node-1.
    let node_1 = agent.cilium_node("node-1").expect("node-1");
    for block in blocks_of(&node_1, "blue").iter().chain(&blocks_of(&node_1, "green")) {
        let address = block.split('/').next().expect("a network address").to_string();
        let out = cluster.plugin().args(["ip", &address, "-o", "json"]).output().expect("run the plugin");
        let doc = json_of(&String::from_utf8_lossy(&out.stdout));
        let answer = &doc["addresses"][0];
        assert_eq!((answer["block"].as_str(), answer["state"].as_str()), (Some(block.as_str()), Some("allocated")), "{address}: {answer}");
        assert_eq!(answer["nodes"], serde_json::json!(["node-1"]), "{address}: {answer}");
    }

    // Pods start on node-1 with addresses out of the blocks the operator gave it: the plugin's
    // used addresses are those pods, `ip` names each pod, and they are free again once it stops.
    let blue_v4 = of_family(&blocks_of(&node_1, "blue"), "ipv4");
    let green_v6 = of_family(&blocks_of(&node_1, "green"), "ipv6");
    let started = [agent.start_pods("node-1", &blue_v4[0], 3), agent.start_pods("node-1", &green_v6[0], 2)];
    let used = |doc: &Value, pool: &str, fam: &str| family(doc, pool, fam)["usedAddresses"].as_u64();
    let running = usage(&cluster);
    assert_eq!((used(&running, "blue", "ipv4"), used(&running, "green", "ipv6")), (Some(3), Some(2)), "the pods started");
    assert_eq!(used(&running, "blue", "ipv6"), Some(0));
    for address in started.iter().flatten() {
        let out = cluster.plugin().args(["ip", address, "-o", "json"]).output().expect("run the plugin");
        let answer = json_of(&String::from_utf8_lossy(&out.stdout))["addresses"][0].clone();
        let pod = format!("pods/{}", crate::support::operator::pod_name("node-1", address));
        let holders: Vec<&Value> = answer["heldBy"].as_array().map(|h| h.iter().collect()).unwrap_or_default();
        assert!(holders.iter().any(|h| h["kind"] == "pod" && h["name"] == pod.as_str()), "{address} is held by {pod}: {answer}");
    }
    agent.stop_pods("node-1", &started[0]);
    agent.stop_pods("node-1", &started[1]);
    let stopped = usage(&cluster);
    assert_eq!((used(&stopped, "blue", "ipv4"), used(&stopped, "green", "ipv6")), (Some(0), Some(0)), "the pods stopped");
    assert_eq!(plugin_figures(&stopped, &truth), truth, "the blocks stay with the node");

    // node-5 and node-6 got IPv4 but no IPv6; node-7 got neither. The operator's error is about
    // what is missing, and check says so (it added the families together before).
    let stale = problems(&cluster, "stale-operator-error");
    let of = |node: &str| stale.iter().find(|(object, ..)| object == &format!("CiliumNode/{node}")).cloned();
    for node in ["node-5", "node-6", "node-7"] {
        let (_, severity, message) = of(node).unwrap_or_else(|| panic!("no stale-operator-error for {node}: {stale:?}"));
        assert_eq!(severity, "warning", "{node}: {message}");
        assert!(message.contains("(the node still needs ") && message.contains("ipv6 addresses of pool blue)"), "{node}: {message}");
        assert!(message.contains(&format!("for node \"{node}\" from pool \"blue\"")), "the operator's own words, quoted once: {message}");
    }
    assert!(of("node-7").is_some_and(|(_, _, m)| m.contains("ipv4 addresses of pool blue")), "{stale:?}");
    assert!(of("node-4").is_none(), "node-4 got every block it asked for: {stale:?}");
}

/// A released block: a running operator continues after the last block it handed out, a
/// restarted one starts at the lowest free block. `inspect` names both, and each happens when it
/// says. A restart changes no allocation.
#[test]
fn a_running_and_a_restarted_operator_hand_out_the_blocks_inspect_names() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: p}\nspec:\n  ipv4: {cidrs: [10.30.0.0/24], maskSize: 27}\n");
    let mut operator = Operator::start(&cluster);
    let agent = Agent::new(&cluster);
    let join = |operator: &mut Operator, node: &str| -> Vec<String> {
        agent.join(node, &[request("p", 10, 0)]);
        blocks_of(&agent.wait_for_answer(operator, node), "p")
    };
    for (i, node) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        assert_eq!(join(&mut operator, node), [format!("10.30.0.{}/27", 32 * i)]);
    }
    agent.leave("b");
    // The operator releases b's block when it sees the deletion; the figures follow at once.
    let doc = usage(&cluster);
    assert_eq!(
        (family(&doc, "p", "ipv4")["allocatedBlocks"].as_u64(), family(&doc, "p", "ipv4")["freeBlocks"].as_u64()),
        (Some(5), Some(3))
    );
    assert_eq!(predicted(&doc, "p", "ipv4", "nextBlock").as_deref(), Some("10.30.0.32/27"));
    assert_eq!(predicted(&doc, "p", "ipv4", "nextBlockWhileRunning").as_deref(), Some("10.30.0.192/27"));
    let inspect = cluster.plugin().args(["inspect", "p"]).output().expect("run the plugin");
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("Next block (prediction): 10.30.0.32/27 after an operator restart,"), "{text}");
    assert!(text.contains("10.30.0.192/27 while it runs (after the highest block held)"), "{text}");

    // Running: the block after the last one handed out, not the released one.
    assert_eq!(join(&mut operator, "g"), ["10.30.0.192/27"]);
    let before_restart = truth_blocks(&agent);
    operator.restart();
    // Restarted: the lowest free block, as `nextBlock` said.
    let doc = usage(&cluster);
    let next = predicted(&doc, "p", "ipv4", "nextBlock").expect("a free block");
    assert_eq!(join(&mut operator, "h"), [next]);
    let mut after_restart = truth_blocks(&agent);
    after_restart.remove("h");
    assert_eq!(after_restart, before_restart, "a restart changes no node's blocks");
    // The last free block, then exhaustion as the operator reports it.
    assert_eq!(join(&mut operator, "i"), ["10.30.0.224/27"]);
    agent.join("j", &[request("p", 10, 0)]);
    let j = agent.wait_for_answer(&mut operator, "j");
    assert!(operator_error(&j).is_some_and(|e| e.contains("failed to allocate ipv4 address for node \"j\" from pool \"p\"")), "{j}");
    let stale = problems(&cluster, "stale-operator-error");
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert_eq!((stale[0].0.as_str(), stale[0].1.as_str()), ("CiliumNode/j", "warning"));
}

/// Every node's blocks, by node name.
fn truth_blocks(agent: &Agent) -> BTreeMap<String, Value> {
    agent
        .cilium_nodes()
        .into_iter()
        .map(|n| (n["metadata"]["name"].as_str().unwrap_or_default().to_string(), n["spec"]["ipam"]["pools"]["allocated"].clone()))
        .collect()
}

/// Replaces pool `name`'s IPv4 CIDRs (a user's `kubectl edit`).
fn set_cidrs(cluster: &TestCluster, name: &str, cidrs: &[&str]) {
    let patch = serde_json::json!({"spec": {"ipv4": {"cidrs": cidrs}}}).to_string();
    cluster.kubectl(&["patch", "ciliumpodippools.v2alpha1.cilium.io", name, "--type=merge", "-p", &patch]);
}

/// CIDRs added, inserted at the front and removed while nodes hold blocks, then the pool deleted
/// in use: the operator's answer to each, and the plugin's figures and words at every step.
#[test]
fn cidrs_added_inserted_and_removed_and_a_pool_deleted_in_use() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: q}\nspec:\n  ipv4: {cidrs: [10.40.1.0/26], maskSize: 27}\n");
    let mut operator = Operator::start(&cluster);
    let agent = Agent::new(&cluster);
    let join = |operator: &mut Operator, node: &str| -> Value {
        agent.join(node, &[request("q", 10, 0)]);
        agent.wait_for_answer(operator, node)
    };
    assert_eq!(blocks_of(&join(&mut operator, "a"), "q"), ["10.40.1.0/27"]);
    assert_eq!(blocks_of(&join(&mut operator, "b"), "q"), ["10.40.1.32/27"]);
    let c = join(&mut operator, "c");
    assert!(blocks_of(&c, "q").is_empty() && operator_error(&c).is_some(), "the pool is exhausted: {c}");
    assert_eq!(problems(&cluster, "stale-operator-error").len(), 1);

    // A CIDR appended: the waiting node gets its block from it without a change of its own, and
    // the plugin predicted which.
    set_cidrs(&cluster, "q", &["10.40.1.0/26", "10.40.2.0/27"]);
    let next = predicted(&usage(&cluster), "q", "ipv4", "nextBlock");
    assert_eq!(next.as_deref(), Some("10.40.2.0/27"));
    let c = agent.wait_for(&mut operator, "c", "a block from the appended CIDR", |o| !blocks_of(o, "q").is_empty());
    assert_eq!(blocks_of(&c, "q"), ["10.40.2.0/27"]);
    let c = agent.wait_for(&mut operator, "c", "its operator error cleared", |o| operator_error(o).is_none());
    assert!(operator_error(&c).is_none());
    assert!(problems(&cluster, "stale-operator-error").is_empty());

    // Another appended, then one inserted at the front: a restarted operator tries the CIDRs in
    // the pool's order, a running one those it learned since it started after the others.
    set_cidrs(&cluster, "q", &["10.40.1.0/26", "10.40.2.0/27", "10.40.3.0/27"]);
    set_cidrs(&cluster, "q", &["10.40.0.0/27", "10.40.1.0/26", "10.40.2.0/27", "10.40.3.0/27"]);
    let doc = usage(&cluster);
    assert_eq!(predicted(&doc, "q", "ipv4", "nextBlock").as_deref(), Some("10.40.0.0/27"));
    let inspect = cluster.plugin().args(["inspect", "q"]).output().expect("run the plugin");
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(text.contains("a CIDR added while the operator runs is tried after those it had"), "{text}");
    // The operator learned 10.40.3.0/27 before 10.40.0.0/27: it hands out from it first.
    assert_eq!(blocks_of(&join(&mut operator, "d"), "q"), ["10.40.3.0/27"]);
    operator.restart();
    let next = predicted(&usage(&cluster), "q", "ipv4", "nextBlock").expect("one free block left");
    assert_eq!(blocks_of(&join(&mut operator, "e"), "q"), [next.as_str()]);
    assert_eq!(next, "10.40.0.0/27");

    // A CIDR removed while a and b hold its blocks: the operator leaves them with the nodes
    // (orphans) and hands out nothing more from it; the plugin counts them as orphans.
    set_cidrs(&cluster, "q", &["10.40.0.0/27", "10.40.2.0/27", "10.40.3.0/27"]);
    let f = join(&mut operator, "f");
    assert!(blocks_of(&f, "q").is_empty(), "nothing is free once 10.40.1.0/26 is gone: {f}");
    let a = agent.wait_for(&mut operator, "a", "its block kept", |o| !blocks_of(o, "q").is_empty());
    assert_eq!(blocks_of(&a, "q"), ["10.40.1.0/27"], "the operator keeps a removed CIDR's blocks on their nodes");
    let doc = usage(&cluster);
    assert_eq!(family(&doc, "q", "ipv4")["orphanBlocks"], 2);
    assert_eq!(family(&doc, "q", "ipv4")["allocatedBlocks"], 3);
    let orphans = problems(&cluster, "orphan-block");
    assert_eq!(orphans.len(), 2, "{orphans:?}");
    assert!(orphans.iter().all(|(_, _, m)| m.contains("the operator leaves it with the node until the node releases it")), "{orphans:?}");

    // The pool deleted while nodes hold its blocks: they keep them, and the plugin says whose.
    cluster.kubectl(&["delete", "ciliumpodippools.v2alpha1.cilium.io", "q"]);
    // a asks for more: the operator answers it, with an error, and leaves its block listed.
    agent.request("a", &[request("q", 11, 0)]);
    let still = agent.wait_for(&mut operator, "a", "an operator error", |o| operator_error(o).is_some());
    assert_eq!(blocks_of(&still, "q"), ["10.40.1.0/27"], "{still}");
    assert!(operator_error(&still).is_some_and(|e| e.contains("non-existing pool")), "{still}");
    let orphans = problems(&cluster, "orphan-block");
    let a = orphans.iter().find(|(object, ..)| object == "CiliumNode/a").unwrap_or_else(|| panic!("{orphans:?}"));
    assert!(a.2.contains("10.40.1.0/27") && a.2.contains("the operator leaves it with the node until the node releases it"), "{a:?}");
}

/// The operator Deployment Cilium's chart creates, naming the image the plugin reads the running
/// version from (no controller runs it here: the operator process is the test's own).
fn operator_deployment(tag: &str) -> Value {
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"namespace": "kube-system", "name": "cilium-operator"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"name": "cilium-operator"}},
            "template": {
                "metadata": {"labels": {"name": "cilium-operator"}},
                "spec": {"containers": [{"name": "cilium-operator", "image": format!("quay.io/cilium/operator-generic:{tag}")}]},
            },
        },
    })
}

/// The upgrade window: a CRD serving cilium.io/v2 (with reservedRanges) is installed while the
/// 1.20 operator runs. It reads its pools as v2alpha1 and hands out blocks inside a reservation;
/// `reserve-range` says so before writing, and `check` flags the block it handed out.
#[test]
fn a_reservation_the_running_operator_ignores_is_said_before_writing_and_flagged_after() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: r}\nspec:\n  ipv4: {cidrs: [10.50.0.0/26], maskSize: 28}\n");
    cluster.create_objects(vec![operator_deployment("v1.20.2")]);
    let mut operator = Operator::start(&cluster);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let agent = Agent::new(&cluster);
    agent.join("a", &[request("r", 5, 0)]);
    assert_eq!(blocks_of(&agent.wait_for_answer(&mut operator, "a"), "r"), ["10.50.0.0/28"]);

    let out = cluster.plugin().args(["reserve-range", "r", "10.50.0.17-10.50.0.20", "--yes"]).output().expect("run the plugin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("the running Cilium (quay.io/cilium/operator-generic:v1.20.2, deployment/cilium-operator in namespace kube-system) does not honour reservedRanges"),
        "{stderr}"
    );
    let listed = cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io", "r", "-o", "jsonpath={.spec.ipv4.pool[0].reservedRanges}"]);
    assert!(listed.contains("10.50.0.17"), "the reservation was written: {listed}");

    // The operator hands out the reserved block all the same: the next one after a's.
    agent.join("b", &[request("r", 5, 0)]);
    assert_eq!(blocks_of(&agent.wait_for_answer(&mut operator, "b"), "r"), ["10.50.0.16/28"]);
    let flagged = problems(&cluster, "reservation-over-allocated");
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    let (object, severity, message) = &flagged[0];
    assert_eq!((object.as_str(), severity.as_str()), ("CiliumPodIPPool/r", "error"));
    assert!(message.contains("10.50.0.16/28 held by b") && message.contains("does not honour reserved ranges"), "{message}");
}

/// `migrate` while the operator allocates: nodes join before, during and after the migration and
/// each gets its blocks; no block is handed out twice, the figures stay the operator's, and
/// `--status` keeps v2alpha1 while a Cilium that reads its pools only through it runs.
#[test]
fn migrate_while_the_operator_allocates_loses_nothing() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml(
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: m1}\nspec:\n  ipv4: {cidrs: [10.60.0.0/24], maskSize: 28}\n\
         ---\napiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: m2}\nspec:\n  ipv6: {cidrs: ['fd00:60::/120'], maskSize: 124}\n",
    );
    cluster.create_objects(vec![operator_deployment("v1.20.2")]);
    let mut operator = Operator::start(&cluster);
    let wants = [request("m1", 10, 0), request("m2", 0, 10)];
    {
        let agent = Agent::new(&cluster);
        for node in ["n1", "n2", "n3"] {
            agent.join(node, &wants);
            agent.wait_for_answer(&mut operator, node);
        }
    }
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let agent = Agent::new(&cluster);
    // Its backup goes to a directory of the test's own.
    let dir = tempfile::tempdir().expect("temp dir");
    let migration = cluster
        .plugin_process()
        .current_dir(dir.path())
        .args(["migrate", "--yes"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let migration = migration.expect("start migrate");
    for node in ["n4", "n5", "n6"] {
        agent.join(node, &wants);
    }
    let migrated = migration.wait_with_output().expect("migrate ends");
    assert!(migrated.status.success(), "migrate failed: {}", String::from_utf8_lossy(&migrated.stderr));
    agent.join("n7", &wants);
    for node in ["n4", "n5", "n6", "n7"] {
        agent.wait_for_answer(&mut operator, node);
    }

    // Every node holds one block of each pool, none twice, and the plugin counts what it holds.
    let nodes = agent.cilium_nodes();
    let mut seen = std::collections::BTreeSet::new();
    for node in &nodes {
        for pool in ["m1", "m2"] {
            let blocks = blocks_of(node, pool);
            assert_eq!(blocks.len(), 1, "{}: {pool} {blocks:?}", node["metadata"]["name"]);
            assert!(seen.insert(blocks[0].clone()), "{} handed out twice", blocks[0]);
        }
    }
    let truth = truth(&agent);
    assert_eq!(plugin_figures(&usage(&cluster), &truth), truth);
    assert!(problems(&cluster, "block-multiple-owners").is_empty());

    let status = cluster.plugin().args(["migrate", "--status"]).output().expect("run the plugin");
    let text = String::from_utf8_lossy(&status.stdout);
    assert_eq!(status.status.code(), Some(1), "{text}");
    assert!(text.contains("3 migrated") || text.contains("2 migrated"), "{text}");
    assert!(text.contains("reads its pools as cilium.io/v2alpha1: upgrade it to 1.21 or later first"), "{text}");
}

/// `serve` follows the operator's churn into a real Prometheus: after each block the operator
/// hands out, the scraped free blocks are what the CiliumNodes say; when the pool runs out and the
/// operator reports it, the problem is in the metrics and the exhaustion alert fires (its `for`
/// shortened to 0 s: the expressions are the deployed ones).
#[test]
fn serve_follows_the_operator_and_its_exhaustion_fires_the_alert() {
    use crate::support::prometheus::{Prometheus, free_port, get, sample_value};
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.apply_yaml("apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: s}\nspec:\n  ipv4: {cidrs: [10.70.0.0/27], maskSize: 29}\n");
    let mut operator = Operator::start(&cluster);
    let agent = Agent::new(&cluster);

    let address = format!("127.0.0.1:{}", free_port());
    let mut command = cluster.plugin_process();
    command
        .args(["serve", "--listen", &address, "--stale-after", "5s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _serve = crate::support::KillOnDrop(command.spawn().expect("start serve"));
    let ready = std::time::Instant::now() + OPERATOR_WAIT;
    while !matches!(get(&address, "/readyz", None), Ok((200, _))) {
        assert!(std::time::Instant::now() < ready, "serve not ready");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let rules = std::fs::read_to_string(crate::support::repo_root().join("deploy/prometheus/rules.yml")).expect("the alert rules");
    let immediate = regex::Regex::new(r"(?m)^(\s+for:) \S+$").expect("a pattern").replace_all(&rules, "$1 0s").into_owned();
    std::fs::write(dir.path().join("rules.yml"), immediate).expect("write the rules");
    let prometheus = Prometheus::start(&address, &[&dir.path().join("rules.yml")]);
    let scraped = |promql: &str| prometheus.query(promql).first().map(sample_value);
    let wait_scraped = |promql: &str, want: f64, what: &str| {
        let deadline = std::time::Instant::now() + OPERATOR_WAIT;
        while scraped(promql) != Some(want) {
            assert!(std::time::Instant::now() < deadline, "{what}: {promql} is {:?}, not {want}", scraped(promql));
            std::thread::sleep(std::time::Duration::from_millis(250));
        }
    };
    let watch = Watch::start(&cluster, "s");
    let free = "ciliumpool_free_blocks{pool=\"s\",family=\"ipv4\"}";
    wait_scraped(free, 4.0, "before any node");
    for (i, node) in ["a", "b", "c", "d"].iter().enumerate() {
        agent.join(node, &[request("s", 4, 0)]);
        agent.wait_for_answer(&mut operator, node);
        wait_scraped(free, 3.0 - i as f64, &format!("after {node} got its block"));
        watch.wait_for_allocated("s", i as u64 + 1);
    }
    agent.join("e", &[request("s", 4, 0)]);
    let e = agent.wait_for_answer(&mut operator, "e");
    assert!(operator_error(&e).is_some(), "{e}");
    wait_scraped("ciliumpool_nodes_waiting{pool=\"s\",family=\"ipv4\"}", 1.0, "the node the operator could not serve");
    wait_scraped("sum(ciliumpool_problems_by_kind{kind=\"stale-operator-error\",severity=\"warning\"})", 1.0, "the operator's error");
    wait_scraped("count(ALERTS{alertname=\"CiliumPoolExhausted\",alertstate=\"firing\",pool=\"s\"})", 1.0, "the alert");
    // A node leaves: the operator hands its block to the waiting node, and the alert clears.
    agent.leave("a");
    let e = agent.wait_for(&mut operator, "e", "a's released block", |o| !blocks_of(o, "s").is_empty());
    assert_eq!(blocks_of(&e, "s"), ["10.70.0.0/29"]);
    wait_scraped(free, 0.0, "e holding a's block");
    let deadline = std::time::Instant::now() + OPERATOR_WAIT;
    while !prometheus.query("ALERTS{alertname=\"CiliumPoolExhausted\",alertstate=\"firing\"}").is_empty() {
        assert!(std::time::Instant::now() < deadline, "the alert did not clear");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// `usage POOL --watch -o json` in a pipe: one JSON document per change, read as they come.
struct Watch {
    documents: std::sync::mpsc::Receiver<Value>,
    _process: crate::support::KillOnDrop,
}

impl Watch {
    fn start(cluster: &TestCluster, pool: &str) -> Watch {
        let mut command = cluster.plugin_process();
        command.args(["usage", pool, "--watch", "-o", "json"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
        let mut child = command.spawn().expect("start usage --watch");
        let stdout = child.stdout.take().expect("its stdout");
        let (send, documents) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for document in serde_json::Deserializer::from_reader(stdout).into_iter::<Value>() {
                let Ok(document) = document else { return };
                if send.send(document).is_err() {
                    return;
                }
            }
        });
        Watch { documents, _process: crate::support::KillOnDrop(child) }
    }

    /// Reads documents until one shows `blocks` allocated blocks of the pool's IPv4.
    fn wait_for_allocated(&self, pool: &str, blocks: u64) {
        let deadline = std::time::Instant::now() + OPERATOR_WAIT;
        let mut last = None;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            match self.documents.recv_timeout(left) {
                Ok(document) if family(&document, pool, "ipv4")["allocatedBlocks"] == blocks => return,
                Ok(document) => last = Some(document),
                Err(_) => break,
            }
        }
        panic!("usage --watch showed no frame with {blocks} allocated blocks; the last: {last:?}");
    }
}
