//! `migrate` against a real kube-apiserver (issue 4): 40 pools created through v2alpha1 before
//! the CRD moved to v2 storage, in the upstream and the CFP dialect.

use crate::support;

use ciliumpool::model::pool::MIGRATED_ANNOTATION;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use support::cli::{self, press};
use support::{Afterwards, Dialect, TestCluster};

const POOLS: usize = 40;
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Pool `i` of the test set: IPv4 always, IPv6 on every 4th, selectors, allowFirstIP, labels and
/// annotations on some, and a non-canonical CIDR spelling on every 6th (written back verbatim).
fn test_pool(i: usize) -> Value {
    let v4 = if i.is_multiple_of(6) { format!("10.{i}.0.5/16") } else { format!("10.{i}.0.0/16") };
    let mut pool = json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
        "metadata": {"name": format!("pool-{i:02}")},
        "spec": {"ipv4": {"cidrs": [v4, format!("10.{}.0.0/16", 100 + i)], "maskSize": 24}}});
    if i.is_multiple_of(4) {
        pool["spec"]["ipv6"] = json!({"cidrs": [format!("fd00:{i:x}::/104")], "maskSize": 120});
    }
    if i.is_multiple_of(5) {
        pool["spec"]["podSelector"] = json!({"matchLabels": {"app": format!("app-{i}")}});
        pool["spec"]["namespaceSelector"] = json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a", "b"]}]});
    }
    if i.is_multiple_of(7) {
        pool["spec"]["allowFirstIP"] = json!(true);
        pool["spec"]["allowLastIP"] = json!(false);
    }
    if i.is_multiple_of(2) {
        pool["metadata"]["labels"] = json!({"team": format!("t{}", i % 3), "tier": "prod"});
    }
    if i.is_multiple_of(3) {
        pool["metadata"]["annotations"] = json!({"example.com/owner": format!("owner-{i}")});
    }
    pool
}

/// A cluster of `dialect` whose 40 pools were created through v2alpha1 before the CRD moved to
/// v2 storage (storedVersions [v2alpha1, v2]).
fn migrated_cluster_setup(dialect: Dialect) -> TestCluster {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects((0..POOLS).map(test_pool).collect());
    cluster.move_pools_to_v2_storage(dialect);
    cluster
}

/// Every pool through one version, by name (the raw objects the apiserver returns).
fn pools(cluster: &TestCluster, version: &str) -> BTreeMap<String, Value> {
    let text = cluster.kubectl(&["get", "--raw", &format!("/apis/cilium.io/{version}/ciliumpodippools")]);
    let list: Value = serde_json::from_str(&text).expect("list JSON");
    list["items"].as_array().expect("items").iter().map(|p| (p["metadata"]["name"].as_str().unwrap().to_string(), p.clone())).collect()
}

fn resource_versions(cluster: &TestCluster) -> BTreeMap<String, String> {
    pools(cluster, "v2").into_iter().map(|(name, p)| (name, p["metadata"]["resourceVersion"].as_str().unwrap().to_string())).collect()
}

fn stored_versions(cluster: &TestCluster) -> String {
    cluster.kubectl(&["get", "crd", "ciliumpodippools.cilium.io", "-o", "jsonpath={.status.storedVersions}"])
}

/// Annotations without the ones migration and `kubectl apply` add.
fn user_annotations(pool: &Value) -> Value {
    let mut annotations = pool["metadata"]["annotations"].clone();
    if let Some(map) = annotations.as_object_mut() {
        map.remove(MIGRATED_ANNOTATION);
        map.remove(LAST_APPLIED);
        if map.is_empty() {
            return Value::Null;
        }
    }
    annotations
}

/// Runs the plugin in `dir` and returns (exit code, stdout, stderr).
fn plugin(cluster: &TestCluster, dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli::output(cluster.plugin().current_dir(dir).args(args))
}

/// Runs `migrate --yes` where nothing is to be written: it says so (`counts`), exits 0, no
/// pool's resourceVersion moves and `dir` still holds `backups` files (no new backup).
fn assert_migrate_writes_nothing(cluster: &TestCluster, dir: &Path, counts: &str, backups: usize) {
    let before = resource_versions(cluster);
    let (code, out, err) = plugin(cluster, dir, &["migrate", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with(&format!("Nothing to do: {counts}")), "{out}");
    assert_eq!(resource_versions(cluster), before, "migrate wrote to a pool although nothing was to be written");
    assert_eq!(std::fs::read_dir(dir).unwrap().count(), backups, "no backup when nothing is written");
}

/// The objects in one marked section of a backup file.
fn backup_section(text: &str, api_version: &str) -> String {
    let begin = format!("# BEGIN view {api_version} (");
    let start = text.find(&begin).unwrap_or_else(|| panic!("no {begin} in the backup"));
    let end = text[start..].find(&format!("# END view {api_version}\n")).expect("end marker") + start;
    text[start..end].to_string()
}

fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).expect("backup YAML").into_iter().filter(|d| !d.is_null()).collect()
}

#[test]
fn upstream_plan_apply_rerun_status_finalize() {
    let cluster = migrated_cluster_setup(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let before_alpha = pools(&cluster, "v2alpha1");
    let before_rv = resource_versions(&cluster);
    assert_eq!(before_rv.len(), POOLS);

    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "status before migration: {out}{err}");
    assert!(out.contains("safe to remove v2alpha1: no"), "{out}");

    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert_eq!(code, 1, "writes pending, as kubectl diff: {err}");
    assert!(out.contains("40 pools: 0 migrated, 40 rewrite, 0 convert, 0 conflict, 0 blocked"), "{out}");
    // Pages of 7 objects (pagination through both versions); --exit-code: 1 = something to write.
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run", "--exit-code", "--chunk-size", "7"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("40 pools: 0 migrated, 40 rewrite"), "{out}");
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run=server", "-o", "json"]);
    assert_eq!(code, 1, "{err}");
    let plan: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(plan["counts"]["rewrite"], 40);
    assert!(plan["serverDryRun"].as_object().unwrap().values().all(|v| v == "accepted"), "{out}");
    // Without --yes and without a terminal: refused, nothing written.
    let (code, _, err) = plugin(&cluster, dir.path(), &["migrate"]);
    assert_eq!(code, 2, "{err}");
    // One line, a refusal rather than the terminal's question.
    assert_eq!(
        err.trim_end(),
        "error: refusing to migrate 40 CiliumPodIPPool(s) to cilium.io/v2 without confirmation: not on a terminal; pass --yes (or --dry-run=server to preview); nothing was written"
    );
    assert_eq!(resource_versions(&cluster), before_rv, "dry runs and a refused run change no resourceVersion");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no backup written before confirmation");

    let backup = dir.path().join("backup.yaml");
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Summary: 40 written (0 converted)"), "{out}");
    assert!(err.contains(&format!("backup written to {}", backup.display())), "{err}");
    assert_eq!(std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&backup).unwrap();
    for version in ["cilium.io/v2alpha1", "cilium.io/v2"] {
        let docs = documents(&backup_section(&text, version));
        assert_eq!(docs.len(), POOLS, "{version} view in the backup");
        assert!(docs.iter().all(|d| d["apiVersion"] == version && d["metadata"].get("resourceVersion").is_none()));
    }

    let after_alpha = pools(&cluster, "v2alpha1");
    for (name, before) in &before_alpha {
        let after = &after_alpha[name];
        assert_eq!(after["spec"], before["spec"], "{name}: spec through v2alpha1 unchanged");
        assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"], "{name}: labels");
        assert_eq!(user_annotations(after), user_annotations(before), "{name}: annotations");
        assert_eq!(after["metadata"]["annotations"][MIGRATED_ANNOTATION], "true", "{name}: marked");
    }

    // A rerun writes nothing; the one backup in `dir` is the first run's.
    assert_migrate_writes_nothing(&cluster, dir.path(), "40 pools: 40 migrated, 0 rewrite", 1);

    let (code, _, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run", "--exit-code"]);
    assert_eq!(code, 0, "nothing left to write: {err}");
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "finalize is still pending: {out}");
    assert!(out.contains("status.storedVersions is [v2alpha1, v2]"), "{out}");
    let (code, _, err) = plugin(&cluster, dir.path(), &["migrate", "--finalize"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        "error: refusing to set status.storedVersions of ciliumpodippools.cilium.io to [v2] without confirmation: not on a terminal; pass --yes (or --status to preview); nothing was written"
    );
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--finalize", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("downgrade"), "the downgrade consequence is explained: {err}");
    assert!(err.contains("docs/migration.md#6-") && !err.contains("schema-version label"), "in one line: {err}");
    assert_eq!(stored_versions(&cluster), r#"["v2"]"#);
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status", "-o", "json"]);
    assert_eq!(code, 0, "{out}");
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["verdict"]["safeToRemoveV2alpha1"], true);
    assert_eq!(status["counts"]["migrated"], 40);
    assert_eq!(status["crd"]["storedVersions"], json!(["v2"]));

    // A client still writing v2alpha1 after migration (managedFields are per second) is reported.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    cluster.kubectl(&["label", "ciliumpodippools.v2alpha1.cilium.io", "pool-03", "cost-center=42"]);
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("because kubectl-label (Update) still write(s) cilium.io/v2alpha1 after migration"), "{out}");
}

#[test]
fn cfp_converts_cidrs_and_the_backup_restores_the_previous_state() {
    let cluster = migrated_cluster_setup(Dialect::CfpV2);
    let dir = tempfile::tempdir().unwrap();
    let before_alpha = pools(&cluster, "v2alpha1");

    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("40 pools: 0 migrated, 0 rewrite, 40 convert"), "{out}");
    let backup = dir.path().join("backup.yaml");
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("Summary: 40 written (40 converted)"), "{out}");

    let after_v2 = pools(&cluster, "v2");
    for (name, before) in &before_alpha {
        let after = &after_v2[name];
        for family in ["ipv4", "ipv6"] {
            let Some(strings) = before["spec"][family]["cidrs"].as_array() else { continue };
            let objects: Vec<Value> = strings.iter().map(|s| json!({"cidr": s})).collect();
            assert_eq!(after["spec"][family]["cidrs"], json!(objects), "{name}: {family} cidrs keep the original strings");
        }
        assert_eq!(after["spec"]["podSelector"], before["spec"]["podSelector"], "{name}");
        assert_eq!(after["metadata"]["annotations"][MIGRATED_ANNOTATION], "true", "{name}");
    }
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("40 pools: 40 migrated"), "{out}");

    // Restore as docs/migration.md says: apply the v2alpha1 view, drop the migration mark.
    let text = std::fs::read_to_string(&backup).unwrap();
    cluster.kubectl_with_input(&["apply", "-f", "-"], &backup_section(&text, "cilium.io/v2alpha1"));
    cluster.kubectl(&["annotate", "ciliumpodippools.v2alpha1.cilium.io", "--all", &format!("{MIGRATED_ANNOTATION}-")]);
    let restored = pools(&cluster, "v2alpha1");
    assert_eq!(restored.len(), POOLS);
    for (name, before) in &before_alpha {
        let after = &restored[name];
        assert_eq!(after["spec"], before["spec"], "{name}: spec restored");
        assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"], "{name}: labels restored");
        assert_eq!(user_annotations(after), user_annotations(before), "{name}: annotations restored");
        assert!(after["metadata"]["annotations"].get(MIGRATED_ANNOTATION).is_none(), "{name}: no longer marked");
    }
    let (_, out, _) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert!(out.contains("40 pools: 0 migrated, 0 rewrite, 40 convert"), "back to the pre-migration plan: {out}");
}

#[test]
fn concurrent_label_writer_keeps_every_change_and_every_pool_is_migrated() {
    let cluster = migrated_cluster_setup(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    // While the plugin's replace of pool-17 is held inside the API server (it has read the
    // pool), another user relabels pool-17: that replace conflicts (409), deterministically.
    // The writer then relabels every pool while the run goes on; each such write may or may not
    // land between the plugin's read and its replace of that pool — either way nothing is lost.
    cluster.kubectl_as_other_writer(&["get", "ciliumpodippools.v2.cilium.io", "pool-17"]); // its RBAC in place before the hold
    let mut barrier = cluster.hold_writes_of("pool-17", Afterwards::Proceed);
    let mut child = support::KillOnDrop(
        cluster
            .plugin_process()
            .current_dir(dir.path())
            .args(["migrate", "--yes", "--backup", "b.yaml"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    barrier.wait_for_write(std::time::Duration::from_secs(300));
    cluster.kubectl_as_other_writer(&["label", "ciliumpodippools.v2.cilium.io", "pool-17", "writer=first"]);
    barrier.release();
    for i in (0..POOLS).rev() {
        cluster.kubectl_as_other_writer(&[
            "label",
            "--overwrite",
            "ciliumpodippools.v2.cilium.io",
            &format!("pool-{i:02}"),
            &format!("writer=w{i}"),
        ]);
    }
    let mut shown = String::new();
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut shown).unwrap();
    assert!(child.0.wait().unwrap().success(), "{shown}");
    assert!(shown.contains("ciliumpodippool.cilium.io/pool-17 rewritten after 1 conflict(s)"), "a 409 was seen and retried: {shown}");
    let conflicts = shown.lines().filter(|l| l.contains("conflict(s)") && !l.starts_with("Summary")).count();
    eprintln!("[measure] concurrent writer: {conflicts} pool(s) needed a retry after 409");
    let after = pools(&cluster, "v2");
    for i in 0..POOLS {
        let name = format!("pool-{i:02}");
        assert_eq!(after[&name]["metadata"]["labels"]["writer"], format!("w{i}").as_str(), "{name}: the writer's label survives");
    }
    assert!(after.values().all(|p| p["metadata"]["annotations"][MIGRATED_ANNOTATION] == "true"), "every pool migrated");
    // Labels the pools had before are kept too.
    assert_eq!(after["pool-00"]["metadata"]["labels"]["tier"], "prod");
}

#[test]
fn read_only_user_is_refused_before_any_write() {
    let cluster = migrated_cluster_setup(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    cluster.grant_read("alice", &[("cilium.io", "ciliumpodippools"), ("apiextensions.k8s.io", "customresourcedefinitions")]);
    let before = resource_versions(&cluster);
    let (code, out, err) = plugin(&cluster, dir.path(), &["--as", "alice", "migrate", "--yes"]);
    assert_eq!(code, 3, "{out}{err}");
    let first = err.lines().next().unwrap_or_default();
    assert!(
        first.contains("missing permission") && first.contains("alice") && first.contains("update ciliumpodippools.cilium.io"),
        "{err}"
    );
    assert_eq!(resource_versions(&cluster), before, "nothing written");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "not even a backup");
    // The plan is still readable, with the blocked pools and the reason.
    let (code, out, _) = plugin(&cluster, dir.path(), &["--as", "alice", "migrate", "--dry-run"]);
    assert_eq!(code, 3);
    assert!(out.contains("40 blocked"), "{out}");

    // Finalize needs customresourcedefinitions/status, which alice lacks either.
    let (code, _, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", "b.yaml"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = plugin(&cluster, dir.path(), &["--as", "alice", "migrate", "--finalize", "--yes"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("update customresourcedefinitions/status.apiextensions.k8s.io"), "{err}");
    assert_eq!(stored_versions(&cluster), r#"["v2alpha1","v2"]"#);
}

#[test]
fn v2alpha1_only_cluster_is_reported_and_nothing_is_written() {
    let cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects((0..3).map(test_pool).collect());
    let dir = tempfile::tempdir().unwrap();
    let rv = || cluster.kubectl(&["get", "ciliumpodippools.v2alpha1.cilium.io", "-o", "jsonpath={.items[*].metadata.resourceVersion}"]);
    let before = rv();
    let (code, _, err) = plugin(&cluster, dir.path(), &["migrate", "--yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cilium.io/v2 is not served") && err.contains("cilium/cilium#44383"), "{err}");
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1);
    assert!(out.contains("safe to remove v2alpha1: no — because cilium.io/v2 is not served"), "{out}");
    assert_eq!(rv(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn interrupted_run_is_completed_by_rerunning() {
    let cluster = migrated_cluster_setup(Dialect::CfpV2);
    let dir = tempfile::tempdir().unwrap();
    let before = pools(&cluster, "v2");
    // SIGKILL (no cleanup) while the write of pool-10 is held inside the API server: pools 00-09
    // are written, pool-10 and the rest are not (a barrier, not a count of output lines).
    let mut barrier = cluster.hold_writes_of("pool-10", Afterwards::Fail);
    let child = support::KillOnDrop(
        cluster
            .plugin_process()
            .current_dir(dir.path())
            .args(["migrate", "--yes", "--backup", "b.yaml"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    barrier.wait_for_write(std::time::Duration::from_secs(300));
    drop(child);
    barrier.release();

    // Every pool is either fully migrated or untouched: never half-written.
    let after_kill = pools(&cluster, "v2");
    let mut done = 0;
    for (name, old) in &before {
        let now = &after_kill[name];
        if now["metadata"]["annotations"][MIGRATED_ANNOTATION] == "true" {
            assert!(now["spec"]["ipv4"]["cidrs"].as_array().unwrap().iter().all(Value::is_object), "{name}: converted with the mark");
            done += 1;
        } else {
            assert_eq!(now["metadata"]["resourceVersion"], old["metadata"]["resourceVersion"], "{name}: untouched");
        }
    }
    assert_eq!(done, 10, "exactly the pools before pool-10 are migrated");

    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", "b2.yaml"]);
    assert_eq!(code, 0, "{out}{err}");
    let rest = POOLS - done;
    assert!(out.contains(&format!("Summary: {rest} written ({rest} converted)")), "only the rest is written: {out}");
    let (_, out, _) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert!(out.contains("40 pools: 40 migrated"), "{out}");
}

/// Runs the plugin in a pseudo-terminal and types `key` (an answer and Enter) at the prompt; returns the exit code and
/// what the terminal showed.
fn plugin_on_terminal(cluster: &TestCluster, dir: &Path, args: &[&str], key: &str) -> (i32, String) {
    let (mut term, before) = cluster.plugin_at_prompt(dir, args);
    press(&mut term, key);
    let (code, rest) = cli::finish(term);
    (code, before + "[y/N]" + &rest)
}

#[test]
fn confirmation_on_a_terminal() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects((0..3).map(test_pool).collect());
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let before = resource_versions(&cluster);
    let (code, prompt) = plugin_on_terminal(&cluster, dir.path(), &["migrate", "--backup", "b.yaml"], "n\r");
    assert_eq!(code, 1, "declined (docs/design/exit-codes.md): {prompt}");
    assert!(prompt.contains("Migrate 3 CiliumPodIPPool(s)"), "{prompt}");
    assert_eq!(resource_versions(&cluster), before, "declining writes nothing");
    assert!(!dir.path().join("b.yaml").exists(), "not even the backup");
    let (code, prompt) = plugin_on_terminal(&cluster, dir.path(), &["migrate", "--backup", "b.yaml"], "y\r");
    assert_eq!(code, 0, "{prompt}");
    assert!(pools(&cluster, "v2").values().all(|p| p["metadata"]["annotations"][MIGRATED_ANNOTATION] == "true"));
}

/// Issue 42: every question before a live write names the kubeconfig context and the API server;
/// `--dry-run` exits as `kubectl diff` (1 while writes are pending, 0 after); after a full
/// migration `--status` advises `--finalize` only, not `migrate` again.
#[test]
fn questions_name_the_cluster_and_dry_run_exits_as_kubectl_diff() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    cluster.create_objects((0..2).map(test_pool).collect());
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let on = format!("on context testenv ({})", cluster.server);
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert_eq!(code, 1, "writes pending: {out}{err}");
    let (code, prompt) = plugin_on_terminal(&cluster, dir.path(), &["migrate", "--backup", "b.yaml"], "n\r");
    assert_eq!(code, 1, "{prompt}");
    assert!(prompt.contains(&format!("Migrate 2 CiliumPodIPPool(s) {on} to cilium.io/v2 (backup first to b.yaml)? [y/N]")), "{prompt}");
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", "b.yaml"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert_eq!(code, 0, "nothing to write: {out}{err}");
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "finalize is pending: {out}");
    assert!(out.contains("run `kubectl ciliumpool migrate --finalize`") && !out.contains("run `kubectl ciliumpool migrate`,"), "{out}");
    let (code, prompt) = plugin_on_terminal(&cluster, dir.path(), &["migrate", "--finalize"], "n\r");
    assert_eq!(code, 1, "{prompt}");
    let question = format!("Set status.storedVersions of ciliumpodippools.cilium.io from [v2alpha1, v2] to [v2] {on}? [y/N]");
    assert!(prompt.contains(&question), "{prompt}");
}

#[test]
fn invalid_pool_is_blocked_named_and_left_alone() {
    let mut cluster = TestCluster::start(Dialect::V2alpha1);
    // The apiserver accepts an IPv4 CIDR under ipv6 (format: cidr); the operator would not.
    let mut odd = test_pool(1);
    odd["metadata"]["name"] = json!("odd");
    odd["spec"]["ipv6"] = json!({"cidrs": ["10.99.0.0/16"], "maskSize": 120});
    cluster.create_objects(vec![test_pool(0), odd]);
    cluster.move_pools_to_v2_storage(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let before = resource_versions(&cluster);
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--yes", "--backup", "b.yaml"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains(
            r#"ciliumpodippool.cilium.io/odd not migrated: invalid object: spec.ipv6.cidrs[0] "10.99.0.0/16" is not an ipv6 CIDR"#
        ),
        "{err}"
    );
    let after = resource_versions(&cluster);
    assert_eq!(after["odd"], before["odd"], "the invalid pool is not written");
    assert_ne!(after["pool-00"], before["pool-00"], "the valid pool is migrated");
    let (code, _, _) = plugin(&cluster, dir.path(), &["migrate", "--finalize", "--yes"]);
    assert_eq!(code, 1, "no finalize while a pool is blocked");
}

/// What Cilium's operator does for a CRD whose storage version changed (cilium/cilium#48210,
/// #48411; docs/design/cilium.md#migration): a no-op merge patch of each object, which makes the
/// apiserver re-encode it in the storage version. Returns the resourceVersion after the patch.
fn operator_no_op_write(cluster: &TestCluster, name: &str) -> String {
    let api = ciliumpool::cluster::client::pools_api(&cluster.client(), "v2");
    let written = cluster
        .block_on(api.patch(name, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(json!({}))))
        .unwrap_or_else(|e| panic!("no-op patch of {name}: {e}"));
    written.metadata.resource_version.expect("resourceVersion")
}

#[test]
fn operator_storage_migration_midway_then_trimmed_needs_no_write() {
    let cluster = migrated_cluster_setup(Dialect::UpstreamV2);
    let dir = tempfile::tempdir().unwrap();
    let before = resource_versions(&cluster);
    let names: Vec<String> = before.keys().cloned().collect();
    let (first_half, second_half) = names.split_at(POOLS / 2);

    // The operator has rewritten half of the pools but not trimmed storedVersions yet.
    for name in first_half {
        let after = operator_no_op_write(&cluster, name);
        assert_ne!(after, before[name], "{name}: the no-op patch re-encoded the v2alpha1-stored object as v2 (a new resourceVersion)");
    }
    let again = operator_no_op_write(&cluster, &first_half[0]);
    assert_eq!(again, resource_versions(&cluster)[&first_half[0]], "a second no-op patch of a v2-stored object writes nothing");
    assert_eq!(stored_versions(&cluster), r#"["v2alpha1","v2"]"#);
    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "mid-way is not done: {out}{err}");
    assert!(out.contains("storage:         pending: v2 is the storage version, but storedVersions [v2alpha1, v2] means objects may still be stored as v2alpha1"), "{out}");
    assert!(out.contains("safe to remove v2alpha1: no — because 40 of 40 pools are not migrated yet"), "{out}");
    assert!(out.contains("status.storedVersions is [v2alpha1, v2]: objects may still be stored as v2alpha1"), "{out}");
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status", "-o", "json"]);
    assert_eq!(code, 1);
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["storage"]["state"], "pending", "{out}");
    assert_eq!(status["storage"]["migratedByStorage"], 0, "no pool can be proven stored as v2 before the trim");
    let (_, out, _) = plugin(&cluster, dir.path(), &["migrate", "--dry-run"]);
    assert!(out.contains("40 pools: 0 migrated, 40 rewrite"), "unproven pools are still planned for a rewrite: {out}");

    // The operator finishes: the other half, then storedVersions trimmed through /status.
    for name in second_half {
        operator_no_op_write(&cluster, name);
    }
    std::thread::sleep(std::time::Duration::from_millis(1100));
    cluster.kubectl(&[
        "patch",
        "crd",
        "ciliumpodippools.cilium.io",
        "--subresource",
        "status",
        "--type",
        "merge",
        "--field-manager",
        "cilium-operator-generic",
        "-p",
        r#"{"status":{"storedVersions":["v2"]}}"#,
    ]);
    let trimmed_rv = resource_versions(&cluster);

    let (code, out, err) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("storage:         every object stored as v2 (storedVersions [v2], set by cilium-operator-generic at "), "{out}");
    assert!(out.contains("pools:           40 (40 migrated (40 by storage), 0 rewrite, 0 convert, 0 conflict, 0 blocked)"), "{out}");
    assert!(out.contains("safe to remove v2alpha1: yes"), "{out}");
    assert!(out.contains("note: downgrade to a Cilium that only knows v2alpha1"), "the downgrade caveat is stated: {out}");
    // Once, in one line linking the runbook; the paragraph only under -v.
    let downgrade: Vec<&str> = out.lines().filter(|l| l.starts_with("note: downgrade")).collect();
    assert_eq!(downgrade.len(), 1, "{out}");
    assert!(downgrade[0].contains("docs/migration.md#6-") && !out.contains("schema-version label"), "{out}");
    let (_, verbose, _) = plugin(&cluster, dir.path(), &["migrate", "--status", "-v"]);
    assert!(verbose.contains("schema-version label") && !verbose.contains("docs/migration.md#6-"), "{verbose}");
    let (_, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status", "-o", "json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(status["storage"]["state"], "v2");
    assert_eq!(status["storage"]["migratedByStorage"], POOLS);
    assert_eq!(status["storage"]["storedVersionsWritten"]["manager"], "cilium-operator-generic");
    assert!(status["pools"].as_array().unwrap().iter().all(|p| p["state"] == "migrated" && p["migratedBy"] == "storage"), "{out}");
    // Every pool was created through v2alpha1: those writers are known, but wrote before the trim.
    let writers = status["v2alpha1Writers"].as_array().unwrap();
    assert!(!writers.is_empty() && writers.iter().all(|w| w["afterMigration"] == false), "{out}");

    // `migrate` writes nothing: no resourceVersion moves, no backup is taken.
    assert_eq!(resource_versions(&cluster), trimmed_rv, "--status wrote nothing");
    assert_migrate_writes_nothing(&cluster, dir.path(), "40 pools: 40 migrated (40 by storage), 0 rewrite", 0);
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--finalize", "--yes"]);
    assert_eq!(code, 0);
    assert!(out.contains("already [v2]"), "{out}");

    // The downgrade caveat, checked: Cilium 1.20's v2alpha1-only CRD is refused while storedVersions lists v2.
    let refused = cluster.kubectl_command().args(["apply", "-f"]).arg(support::cilium_crd("ciliumpodippools.yaml")).output().unwrap();
    assert!(!refused.status.success(), "the apiserver accepted a CRD without the stored version v2");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("missing from spec.versions"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    // A client writing v2alpha1 after the trim: the verdict turns to no and names it.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    cluster.kubectl(&["label", "ciliumpodippools.v2alpha1.cilium.io", "pool-03", "cost-center=42"]);
    let (code, out, _) = plugin(&cluster, dir.path(), &["migrate", "--status"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("safe to remove v2alpha1: no — because kubectl-label (Update) still write(s) cilium.io/v2alpha1 after migration"),
        "{out}"
    );
}
