//! Crash safety against a real kube-apiserver (issue #15): `migrate` and `reserve-range` killed
//! with SIGKILL at random points never leave a pool whose spec differs from the intended change,
//! and a rerun converges; an apiserver that stops answering mid-run gives exit 3 with a clear
//! line, and once it answers again the rerun completes.
//!
//! Kill points are chosen by a seeded generator (the seed is printed) and reached through
//! barriers — the plugin's own per-pool output lines, or its debug-build before-write hook —
//! never through sleeps: what passes does not depend on timing. The default run is short;
//! `CILIUMPOOL_LONG_TESTS=1` runs the long variant (20 trials over 300 pools each).

mod support;

use ciliumpool::model::pool::MIGRATED_ANNOTATION;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;
use support::{Dialect, TestCluster};

/// (trials, pools per trial).
fn size() -> (usize, usize) {
    if std::env::var_os("CILIUMPOOL_LONG_TESTS").is_some_and(|v| !v.is_empty()) { (20, 300) } else { (3, 40) }
}

/// A small deterministic generator (xorshift), seeded from `CILIUMPOOL_SEED` or a fixed value.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::env::var("CILIUMPOOL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed_c111);
        eprintln!("[measure] seed {seed} (CILIUMPOOL_SEED={seed} repeats this run)");
        Rng(seed | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn pool(trial: usize, i: usize) -> Value {
    json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
        "metadata": {"name": format!("t{trial}-p{i:03}"), "labels": {"trial": format!("{trial}")}},
        "spec": {"ipv4": {"cidrs": [format!("10.{}.{}.0/24", trial, i % 256), format!("172.{}.{}.0/24", 16 + trial, i / 256)], "maskSize": 28},
                 "podSelector": {"matchLabels": {"app": format!("a{i}")}}}})
}

/// Every pool through v2, by name.
fn pools(cluster: &TestCluster) -> BTreeMap<String, Value> {
    let list: Value = serde_json::from_str(&cluster.kubectl(&["get", "--raw", "/apis/cilium.io/v2/ciliumpodippools"])).expect("list JSON");
    list["items"].as_array().expect("items").iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect()
}

struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn migrate_killed_at_random_points_never_changes_a_spec_and_a_rerun_converges() {
    let (trials, count) = size();
    let mut rng = Rng::new();
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let mut killed_after = Vec::new();
    for trial in 0..trials {
        let batch: Vec<Value> = (0..count).map(|i| pool(trial, i)).collect();
        cluster.create_objects(batch.clone());
        let original: BTreeMap<String, Value> = batch.iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect();
        // Barrier: SIGKILL once the plugin has reported `kill_after` pools written.
        let kill_after = 1 + rng.below(count - 1);
        let mut child = KillOnDrop(
            cluster
                .plugin_process()
                .current_dir(dir.path())
                .args(["migrate", "--yes", "--backup", &format!("backup-{trial}.yaml")])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let stdout = support::LineReader::new(child.0.stdout.take().unwrap());
        let written = std::cell::Cell::new(0);
        stdout.read_until(Duration::from_secs(300), "the kill point", |line| {
            written.set(written.get() + usize::from(line.starts_with("ciliumpodippool.cilium.io/t")));
            written.get() == kill_after
        });
        child.0.kill().unwrap();
        child.0.wait().unwrap();
        killed_after.push(kill_after);

        let check = |stage: &str| -> usize {
            let now = pools(&cluster);
            let mut migrated = 0;
            for (name, old) in &original {
                let pool = &now[name];
                assert_eq!(pool["spec"], old["spec"], "{stage}: {name}: the spec is exactly what it was");
                assert_eq!(pool["metadata"]["labels"], old["metadata"]["labels"], "{stage}: {name}: labels kept");
                migrated += usize::from(pool["metadata"]["annotations"][MIGRATED_ANNOTATION] == "true");
            }
            migrated
        };
        let migrated = check("after SIGKILL");
        assert!(migrated >= kill_after && migrated < count, "trial {trial}: killed midway ({migrated} of {count} migrated, killed after {kill_after})");
        let out = cluster.plugin().current_dir(dir.path()).args(["migrate", "--yes", "--backup", &format!("rerun-{trial}.yaml")]).output().unwrap();
        assert!(out.status.success(), "rerun: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(check("after the rerun"), count, "trial {trial}: the rerun migrates the rest");
    }
    eprintln!("[measure] migrate: {trials} SIGKILL trials over {count} pools each, killed after {killed_after:?} written pools; every spec unchanged, every rerun converged");
}

#[test]
fn reserve_range_killed_before_its_write_changes_nothing_and_a_rerun_converges() {
    let (trials, count) = size();
    let mut rng = Rng::new();
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let batch: Vec<Value> = (0..count)
        .map(|i| {
            let mut p = pool(0, i);
            p["apiVersion"] = json!("cilium.io/v2");
            p
        })
        .collect();
    cluster.create_objects(batch);
    for trial in 0..trials {
        let i = rng.below(count);
        let name = format!("t0-p{i:03}");
        let gateway = format!("10.0.{}.{}", i % 256, 1 + trial);
        let before = pools(&cluster)[&name].clone();
        // Barrier: the debug build's before-write hook SIGKILLs the plugin itself.
        let out = cluster.plugin().args(["reserve-range", &name, &gateway, "--yes"]).env("KUBECTL_CILIUMPOOL_TEST_BEFORE_WRITE", "kill -9 $PPID").output().unwrap();
        assert_eq!(out.status.code(), None, "killed by a signal");
        let after = pools(&cluster)[&name].clone();
        assert_eq!(after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"], "{name}: untouched by the killed run");
        let out = cluster.plugin().args(["reserve-range", &name, &gateway, "--yes"]).output().unwrap();
        assert!(out.status.success(), "rerun: {}", String::from_utf8_lossy(&out.stderr));
        let after = pools(&cluster)[&name].clone();
        // The intended change and nothing else: one reservation added to the first CIDR.
        let mut intended = before["spec"].clone();
        let first = before["spec"]["ipv4"]["cidrs"][0].clone();
        let mut entries = before["spec"]["ipv4"]["pool"].as_array().cloned().unwrap_or_default();
        match entries.iter_mut().find(|e| e["cidr"] == first) {
            Some(entry) => entry["reservedRanges"].as_array_mut().unwrap().push(json!({"start": gateway, "end": gateway})),
            None => entries.push(json!({"cidr": first, "reservedRanges": [{"start": gateway, "end": gateway}]})),
        }
        intended["ipv4"]["pool"] = json!(entries);
        assert_eq!(after["spec"], intended, "{name}: exactly the intended change");
        assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"]);
    }
    eprintln!("[measure] reserve-range: {trials} SIGKILL trials before the write over {count} pools; nothing written by a killed run, every rerun wrote exactly the intended change");
}

#[test]
fn apiserver_that_stops_answering_is_exit_3_and_the_rerun_completes() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    let mut blue = pool(0, 1);
    blue["apiVersion"] = json!("cilium.io/v2");
    blue["metadata"]["name"] = json!("blue");
    cluster.create_objects(vec![blue]);
    let pid = std::fs::read_to_string(cluster.dir.join("kube-apiserver.pid")).expect("apiserver pid").trim().to_string();
    // Barrier: the apiserver is stopped (SIGSTOP) right before the write.
    let out = cluster
        .plugin()
        .args(["reserve-range", "blue", "10.0.1.1", "--yes", "--request-timeout", "3s"])
        .env("KUBECTL_CILIUMPOOL_TEST_BEFORE_WRITE", format!("kill -STOP {pid}"))
        .output()
        .unwrap();
    let resumed = std::process::Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    assert!(resumed.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    assert!(stderr.contains("cannot reach the API server") && stderr.contains("no answer within --request-timeout 3s"), "{stderr}");
    let out = cluster.plugin().args(["reserve-range", "blue", "10.0.1.1", "--yes"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(pools(&cluster)["blue"]["spec"]["ipv4"]["pool"][0]["reservedRanges"], json!([{"start": "10.0.1.1", "end": "10.0.1.1"}]));
}
