//! Crash safety, outages, races and concurrent writers against a real kube-apiserver (issue #15):
//! `migrate` and `reserve-range` killed with SIGKILL never leave a pool whose spec differs from
//! the intended change, and a rerun converges; a stopped API server gives exit 3 with one line;
//! a backup file created meanwhile is never overwritten; a concurrent writer's edit survives.
//!
//! Every kill point is a barrier, never a sleep or a count of output lines (docs/reliability.md):
//! the confirmation prompt (the plugin has read and validated, written nothing) or a write held
//! inside the API server by a webhook ([`support::WriteBarrier`]: the writes before it are
//! stored, the held one and those after are not). Which trial stops where is chosen by a seeded
//! generator (the seed is printed). The default run is short; `CILIUMPOOL_LONG_TESTS=1` runs
//! the long variant (20 trials, 300 pools each for `migrate`).

use crate::support;

use ciliumpool::model::pool::MIGRATED_ANNOTATION;
use rexpect::process::signal::Signal;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use support::cli::{self, json_of, press};
use support::{Afterwards, BLUE_POOL, Dialect, TestCluster};

/// (trials, pools per `migrate` trial).
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

/// SIGKILLs the plugin in the terminal and reaps it.
fn kill(term: &mut rexpect::session::PtySession) {
    term.process.signal(Signal::SIGKILL).unwrap();
    term.process.wait().unwrap();
}

/// Runs the plugin to its prompt, stops the API server (SIGSTOP), answers yes and resumes the
/// API server once the plugin has ended with exit 3; returns what the plugin showed.
fn confirm_while_the_api_server_is_stopped(cluster: &TestCluster, dir: &Path, args: &[&str]) -> String {
    let (mut term, _) = cluster.plugin_at_prompt(dir, args);
    cluster.signal_apiserver("STOP");
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    cluster.signal_apiserver("CONT");
    assert_eq!(code, 3, "{args:?}: {shown}");
    shown
}

// --- migrate ----------------------------------------------------------------------------------

fn batch_pool(batch: &str, i: usize) -> Value {
    json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
        "metadata": {"name": format!("{batch}-p{i:03}"), "labels": {"batch": batch}},
        "spec": {"ipv4": {"cidrs": [format!("10.{}.{}.0/24", i / 256, i % 256), format!("172.16.{}.0/24", i % 256)], "maskSize": 28},
                 "podSelector": {"matchLabels": {"app": format!("a{i}")}}}})
}

/// Creates `count` pools of a batch through v2alpha1 (each needs migrating); returns them by name.
fn create_batch(cluster: &TestCluster, batch: &str, count: usize) -> BTreeMap<String, Value> {
    let pools: Vec<Value> = (0..count).map(|i| batch_pool(batch, i)).collect();
    cluster.create_objects(pools.clone());
    pools.into_iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p)).collect()
}

/// Every pool through v2, by name.
fn pools(cluster: &TestCluster) -> BTreeMap<String, Value> {
    let list: Value = serde_json::from_str(&cluster.kubectl(&["get", "--raw", "/apis/cilium.io/v2/ciliumpodippools"])).expect("list JSON");
    list["items"].as_array().expect("items").iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect()
}

/// Checks that every pool of `original` keeps its spec and labels; returns the migrated names.
fn migrated(cluster: &TestCluster, original: &BTreeMap<String, Value>, stage: &str) -> Vec<String> {
    let now = pools(cluster);
    let mut done = Vec::new();
    for (name, old) in original {
        let pool = &now[name];
        assert_eq!(pool["spec"], old["spec"], "{stage}: {name}: the spec is exactly what it was");
        assert_eq!(pool["metadata"]["labels"], old["metadata"]["labels"], "{stage}: {name}: labels kept");
        if pool["metadata"]["annotations"][MIGRATED_ANNOTATION] == "true" {
            done.push(name.clone());
        }
    }
    done
}

fn migrate_cluster() -> TestCluster {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    cluster
}

#[test]
fn migrate_killed_at_random_points_never_changes_a_spec_and_a_rerun_converges() {
    let (trials, count) = size();
    let mut rng = Rng::new();
    let cluster = migrate_cluster();
    let dir = tempfile::tempdir().unwrap();
    let mut kill_points = Vec::new();
    for trial in 0..trials {
        let batch = format!("t{trial:02}");
        let original = create_batch(&cluster, &batch, count);
        let names: Vec<&String> = original.keys().collect();
        // Where the run is killed: k = 0 at the prompt (nothing written; the first trial), else
        // inside the write of pool k (exactly the k pools before it written).
        let k = if trial == 0 { 0 } else { 1 + rng.below(count - 1) };
        let backup = format!("backup-{trial}.yaml");
        if k == 0 {
            let (mut term, _) = cluster.plugin_at_prompt(dir.path(), &["migrate", "--backup", &backup]);
            kill(&mut term);
        } else {
            let mut barrier = cluster.hold_writes_of(names[k], Afterwards::Fail);
            let _child = support::KillOnDrop(
                cluster
                    .plugin_process()
                    .current_dir(dir.path())
                    .args(["migrate", "--yes", "--backup", &backup])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            barrier.wait_for_write(Duration::from_secs(600));
            drop(_child); // SIGKILL while the write of pool k is inside the API server
            barrier.release();
        }
        kill_points.push(k);
        let done = migrated(&cluster, &original, &format!("trial {trial}, after SIGKILL in pool {k}"));
        assert_eq!(
            done,
            names[..k].iter().map(|n| n.to_string()).collect::<Vec<_>>(),
            "trial {trial}: exactly the pools before the kill point are migrated"
        );

        let out = cluster
            .plugin()
            .current_dir(dir.path())
            .args(["migrate", "--yes", "--backup", &format!("rerun-{trial}.yaml")])
            .output()
            .unwrap();
        assert!(out.status.success(), "rerun: {}", String::from_utf8_lossy(&out.stderr));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(&format!("Summary: {} written", count - k)),
            "the rerun writes only the rest"
        );
        assert_eq!(migrated(&cluster, &original, "after the rerun").len(), count, "trial {trial}: the rerun migrates the rest");
    }
    eprintln!(
        "[measure] migrate: {trials} SIGKILL trials over {count} pools each, killed in pool {kill_points:?} (0 = at the prompt); every spec unchanged, exactly the pools before the kill point migrated, every rerun converged"
    );
}

#[test]
fn migrate_backup_race_outage_and_concurrent_writer() {
    let cluster = migrate_cluster();
    let dir = tempfile::tempdir().unwrap();
    let original = create_batch(&cluster, "race", 3);
    let versions = || pools(&cluster).into_iter().map(|(n, p)| (n, p["metadata"]["resourceVersion"].clone())).collect::<BTreeMap<_, _>>();
    let before = versions();

    // Backup race: the file does not exist when the plugin checks, and is created while it asks.
    // It is never overwritten, and nothing is migrated.
    let race = dir.path().join("race.yaml");
    let (mut term, _) = cluster.plugin_at_prompt(dir.path(), &["migrate", "--backup", "race.yaml"]);
    std::fs::write(&race, "precious\n").unwrap();
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    assert_eq!(code, 2, "{shown}");
    assert!(shown.contains("race.yaml already exists (created meanwhile?); it was left as it is"), "{shown}");
    assert_eq!(std::fs::read_to_string(&race).unwrap(), "precious\n", "the file created meanwhile is untouched");
    // The same with a dangling symlink: its target is not created.
    let (mut term, _) = cluster.plugin_at_prompt(dir.path(), &["migrate", "--backup", "link.yaml"]);
    std::os::unix::fs::symlink(dir.path().join("target.yaml"), dir.path().join("link.yaml")).unwrap();
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    assert_eq!(code, 2, "{shown}");
    assert!(!dir.path().join("target.yaml").exists(), "nothing written through the link");
    assert_eq!(versions(), before, "nothing migrated after a refused backup");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temporary file left: {:?}",
        std::fs::read_dir(dir.path()).unwrap().collect::<Vec<_>>()
    );

    // Outage: the API server stops (SIGSTOP) while the plugin asks; every pool fails after
    // --request-timeout with one line each, exit 3. Each pool is read again right before its
    // replace, so the request that gets no answer is a read: nothing can be written later.
    let shown =
        confirm_while_the_api_server_is_stopped(&cluster, dir.path(), &["migrate", "--request-timeout", "2s", "--backup", "outage.yaml"]);
    for name in original.keys() {
        assert!(shown.contains(&format!("ciliumpodippool.cilium.io/{name} failed: ")), "{name}: {shown}");
    }
    assert!(shown.contains("no answer within --request-timeout 2s"), "{shown}");
    assert_eq!(versions(), before, "nothing written while the API server was stopped");
    assert_eq!(mode(&dir.path().join("outage.yaml")), 0o600, "the backup is private");

    // A concurrent writer: while the plugin's replace of race-p001 is held inside the API server
    // (it has read the pool), another user relabels and annotates every pool. That replace
    // conflicts (409); the pool is re-read, converted again and written; every edit survives.
    cluster.kubectl_as_other_writer(&["get", "ciliumpodippools.v2.cilium.io", "race-p001"]); // its RBAC in place before the hold
    let mut barrier = cluster.hold_writes_of("race-p001", Afterwards::Proceed);
    let mut child = support::KillOnDrop(
        cluster
            .plugin_process()
            .current_dir(dir.path())
            .args(["migrate", "--yes", "--backup", "writer.yaml"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    barrier.wait_for_write(Duration::from_secs(300));
    for name in original.keys().rev() {
        cluster.kubectl_as_other_writer(&["label", "ciliumpodippools.v2.cilium.io", name, "writer=w"]);
        cluster.kubectl_as_other_writer(&["annotate", "ciliumpodippools.v2.cilium.io", name, &format!("example.com/writer={name}")]);
    }
    barrier.release();
    let mut shown = String::new();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut shown).unwrap();
    assert!(child.0.wait().unwrap().success(), "{shown}");
    assert!(shown.contains("ciliumpodippool.cilium.io/race-p001 rewritten after 1 conflict(s)"), "a 409 was seen and retried: {shown}");
    let after = pools(&cluster);
    for (name, old) in &original {
        let pool = &after[name];
        assert_eq!(pool["spec"], old["spec"], "{name}");
        assert_eq!(
            (pool["metadata"]["labels"]["writer"].clone(), pool["metadata"]["labels"]["batch"].clone()),
            (json!("w"), json!("race")),
            "{name}: both label edits kept"
        );
        assert_eq!(pool["metadata"]["annotations"]["example.com/writer"], json!(name), "{name}: the writer's annotation kept");
        assert_eq!(pool["metadata"]["annotations"][MIGRATED_ANNOTATION], "true", "{name}");
    }
    assert_eq!(mode(&dir.path().join("writer.yaml")), 0o600, "the backup is private");
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

// --- reserve-range ----------------------------------------------------------------------------

fn get_blue(cluster: &TestCluster) -> Value {
    serde_json::from_str(&cluster.kubectl(&["get", "ciliumpodippools.v2.cilium.io", "blue", "-o", "json"])).unwrap()
}

/// The reserved ranges of blue's 10.40.0.0/16 as `start-end`.
fn reserved(pool: &Value) -> Vec<String> {
    let Some(cidrs) = pool["spec"]["ipv4"]["pool"].as_array() else { return Vec::new() };
    let first = cidrs.iter().find(|c| c["cidr"] == "10.40.0.0/16").expect("10.40.0.0/16");
    first["reservedRanges"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| format!("{}-{}", r["start"].as_str().unwrap(), r["end"].as_str().unwrap()))
        .collect()
}

/// What reserve-range may change of blue: the ranges; everything else stays.
fn assert_rest_of_blue_unchanged(pool: &Value) {
    assert_eq!(pool["spec"]["namespaceSelector"], json!({"matchLabels": {"team": "blue"}}));
    assert_eq!(pool["spec"]["ipv4"]["maskSize"], json!(24));
    assert_eq!(pool["metadata"]["annotations"]["example.com/ticket"], json!("NET-1"));
    assert_eq!(pool["spec"]["ipv4"]["cidrs"], json!(["10.40.0.0/16", "10.41.0.0/16"]));
}

fn reserve_yes(cluster: &TestCluster, range: &str) -> Value {
    let (code, out, err) = cli::output(cluster.plugin().args(["reserve-range", "blue", range, "--yes", "-o", "json"]));
    assert_eq!(code, 0, "{range}: {err}");
    json_of(&out)
}

#[test]
fn reserve_range_killed_at_the_prompt_or_inside_its_write_writes_nothing_and_a_rerun_converges() {
    let (trials, _) = size();
    let mut rng = Rng::new();
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.apply_yaml(BLUE_POOL);
    let dir = tempfile::tempdir().unwrap();
    let mut intended: Vec<String> = Vec::new();
    let mut points = Vec::new();
    for trial in 0..trials {
        let range = format!("10.40.{trial}.0/28");
        let before = get_blue(&cluster);
        // Both kill points in every run, then chosen at random.
        let in_write = if trial < 2 { trial == 1 } else { rng.below(2) == 1 };
        if in_write {
            let mut barrier = cluster.hold_writes_of("blue", Afterwards::Fail);
            let child = support::KillOnDrop(
                cluster
                    .plugin_process()
                    .args(["reserve-range", "blue", &range, "--yes"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            barrier.wait_for_write(Duration::from_secs(300));
            drop(child);
            barrier.release();
        } else {
            let (mut term, shown) = cluster.plugin_at_prompt(dir.path(), &["reserve-range", "blue", &range]);
            assert!(shown.contains("Write this change to ciliumpodippool blue on context testenv ("), "{shown}");
            kill(&mut term);
        }
        points.push(if in_write { "write" } else { "prompt" });
        let after = get_blue(&cluster);
        assert_eq!(
            after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
            "trial {trial} ({}): nothing written",
            points[trial]
        );

        let out = reserve_yes(&cluster, &range);
        assert_eq!((out["written"].clone(), out["conflicts"].clone()), (json!(true), json!(0)), "{out}");
        intended.push(format!("10.40.{trial}.0-10.40.{trial}.15"));
        let pool = get_blue(&cluster);
        assert_eq!(reserved(&pool), intended, "trial {trial}: exactly the intended ranges");
        assert_rest_of_blue_unchanged(&pool);
    }
    eprintln!(
        "[measure] reserve-range: {trials} SIGKILL trials, killed at {points:?}; nothing written by a killed run, every rerun wrote exactly the intended range"
    );
}

#[test]
fn reserve_range_outage_and_concurrent_writers() {
    let cluster = TestCluster::start(Dialect::UpstreamV2);
    cluster.apply_yaml(BLUE_POOL);
    let dir = tempfile::tempdir().unwrap();
    let first = reserve_yes(&cluster, "10.40.255.240-10.40.255.254");
    assert_eq!(first["conflicts"], json!(0));

    // Outage: the API server stops (SIGSTOP) while the plugin asks, so its write gets no
    // answer: exit 3 with one line that says the write may still be applied. It may: the API
    // server, running again, can still apply the request it had received. Either way the pool is
    // as it was or holds exactly the intended change, and the rerun converges.
    let before = get_blue(&cluster);
    let shown = confirm_while_the_api_server_is_stopped(
        &cluster,
        dir.path(),
        &["reserve-range", "blue", "10.40.1.0/28", "--request-timeout", "2s"],
    );
    let error: Vec<&str> = shown.lines().filter(|l| l.contains("error: ")).collect();
    assert!(
        error.len() == 1 && error[0].contains("cannot reach the API server") && error[0].contains("no answer within --request-timeout 2s"),
        "{shown}"
    );
    // After the confirmation the plugin reads the pool again before writing (plan → confirm →
    // write): the outage hits that read (nothing was sent, so nothing is said to be pending) or
    // the write itself, which the API server may still apply.
    let read_failed = error[0].contains("(get ciliumpodippools.cilium.io/blue)");
    let pending = "the write may still be applied: check with `kubectl ciliumpool reserve-range --list blue` before retrying";
    assert_eq!(error[0].ends_with(pending), !read_failed, "{shown}");
    let landed = get_blue(&cluster)["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"];
    assert!(!(read_failed && landed), "a run whose read failed wrote nothing: {shown}");
    let (code, _, err) = cli::output(cluster.plugin().args(["reserve-range", "blue", "10.40.1.0/28", "--yes"]));
    if landed {
        assert_eq!(code, 2, "the rerun finds the range reserved: {err}");
        assert!(err.contains("is already reserved in 10.40.0.0/16 of pool blue"), "{err}");
    } else {
        assert_eq!(code, 0, "the rerun writes the range: {err}");
    }
    eprintln!(
        "[measure] reserve-range outage: the unanswered write was {} by the API server once it ran again",
        if landed { "applied" } else { "not applied" }
    );
    let pool = get_blue(&cluster);
    // In address order (issue 42).
    assert_eq!(reserved(&pool), ["10.40.1.0-10.40.1.15", "10.40.255.240-10.40.255.254"]);
    assert_rest_of_blue_unchanged(&pool);

    // Another writer between read and write: a label, an annotation and a second reservation
    // (another reserve-range) land while the plugin asks. Its write conflicts (409), it re-reads
    // and re-validates, and the result holds both edits.
    let (mut term, _) = cluster.plugin_at_prompt(dir.path(), &["reserve-range", "blue", "10.40.2.0/28", "-o", "json"]);
    cluster.kubectl(&["label", "ciliumpodippools.v2.cilium.io", "blue", "raced=yes"]);
    cluster.kubectl(&["annotate", "ciliumpodippools.v2.cilium.io", "blue", "example.com/raced=yes"]);
    reserve_yes(&cluster, "10.40.3.0/28");
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("changed since it was read") && shown.contains("\"conflicts\": 1"), "a 409 was seen and retried: {shown}");
    let pool = get_blue(&cluster);
    assert_eq!(reserved(&pool), ["10.40.1.0-10.40.1.15", "10.40.2.0-10.40.2.15", "10.40.3.0-10.40.3.15", "10.40.255.240-10.40.255.254"]);
    assert_eq!(
        (pool["metadata"]["labels"]["raced"].clone(), pool["metadata"]["annotations"]["example.com/raced"].clone()),
        (json!("yes"), json!("yes"))
    );
    assert_rest_of_blue_unchanged(&pool);

    // The other writer reserves an overlapping range meanwhile: re-validation refuses ours
    // (exit 2, one line), the other's stays, nothing of ours is written.
    let (mut term, _) = cluster.plugin_at_prompt(dir.path(), &["reserve-range", "blue", "10.40.4.0/28"]);
    reserve_yes(&cluster, "10.40.4.8-10.40.4.20");
    let other = get_blue(&cluster);
    press(&mut term, "y\r");
    let (code, shown) = cli::finish(term);
    assert_eq!(code, 2, "{shown}");
    assert!(shown.contains("overlaps the reserved range(s) 10.40.4.8-10.40.4.20"), "{shown}");
    assert_eq!(get_blue(&cluster)["metadata"]["resourceVersion"], other["metadata"]["resourceVersion"], "nothing of ours written");
}
