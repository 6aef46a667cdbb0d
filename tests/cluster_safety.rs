//! Crash safety against a real kube-apiserver (issue #15): `migrate` killed with SIGKILL at
//! random points never leaves a pool whose spec differs from the intended change, and a rerun
//! converges.
//!
//! Kill points are chosen by a seeded generator (the seed is printed) and reached through a
//! barrier — the plugin's own per-pool output lines — never through sleeps: what passes does not
//! depend on timing. The default run is short;
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
        let mut child = support::KillOnDrop(
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
