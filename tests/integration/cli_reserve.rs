//! `reserve-range` offline (`-f`): manifests edited, printed or rewritten in place; figures
//! checked against `usage -o json` afterwards.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use support::cli::{self, INVALID_RANGES, json_of, press};

const BLUE: &str = "\
# pools of cluster test
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata:
  name: blue
  annotations:
    example.com/ticket: NET-1   # keep
spec:
  ipv4:
    cidrs:
    - 10.40.0.0/16
    - 10.41.0.0/16
    maskSize: 24
  namespaceSelector:
    matchLabels:
      team: blue
---
# untouched: comments and all
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: green}
spec:
  ipv4:
    cidrs: [\"10.60.0.0/20\"]   # CFP objects stored before the switch keep string cidrs
    maskSize: 26
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: legacy}
spec: {ipv4: {cidrs: [10.70.0.0/16], maskSize: 24}}
";

const NODES: &str = "\
apiVersion: cilium.io/v2
kind: CiliumNode
metadata: {name: node-a}
spec:
  ipam:
    pools:
      allocated:
      - {pool: blue, cidrs: [10.41.3.0/24]}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: team-blue}
spec: {nodeName: node-a}
status: {phase: Running, podIPs: [{ip: 10.41.3.7}]}
";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("pools.yaml"), BLUE).unwrap();
        std::fs::write(root.join("nodes.yaml"), NODES).unwrap();
        Fixture { _dir: dir, root }
    }

    fn pools(&self) -> PathBuf {
        self.root.join("pools.yaml")
    }

    fn read(&self) -> String {
        std::fs::read_to_string(self.pools()).unwrap()
    }

    /// Runs the plugin on the fixture directory.
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        run_on(&self.root, args)
    }
}

fn run_on(path: &Path, args: &[&str]) -> (i32, String, String) {
    cli::output(cli::plugin().args(args).arg("-f").arg(path))
}

fn usage_ipv4(fx: &Fixture, pool: &str) -> Value {
    let (code, out, err) = fx.run(&["usage", pool, "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    json_of(&out)["pools"][0]["families"][0].clone()
}

#[test]
fn blue_gateway_and_drain_in_place_then_usage_agrees() {
    let fx = Fixture::new();
    let (code, out, err) = fx.run(&["reserve-range", "blue", "10.40.255.240-10.40.255.254", "--in-place", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let first = json_of(&out);
    assert_eq!(first["impact"]["newlyWithheld"], json!([{"first": "10.40.255.0/24", "last": "10.40.255.0/24", "blocks": 1}]));
    assert_eq!((first["impact"]["rangeAddresses"].clone(), first["impact"]["touchedAddresses"].clone()), (json!(15), json!(256)));
    assert_eq!(first["written"], json!(true));

    let (code, out, err) = fx.run(&["reserve-range", "blue", "--drain", "10.41.0.0/16", "--in-place", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let drain = json_of(&out);
    assert_eq!(
        drain["impact"]["allocatedInRange"],
        json!([{"block": "10.41.3.0/24", "nodes": ["node-a"], "podsInRange": ["team-blue/db-0"]}])
    );
    assert_eq!(
        drain["impact"]["newlyWithheld"],
        json!([
        {"first": "10.41.0.0/24", "last": "10.41.2.0/24", "blocks": 3},
        {"first": "10.41.4.0/24", "last": "10.41.255.0/24", "blocks": 252}])
    );
    assert_eq!(
        drain["impact"]["after"],
        json!({"capacityBlocks": 512, "allocatedBlocks": 1, "withheldBlocks": 256, "freeBlocks": 255,
        "allocatableBlocks": 256, "reservedAddresses": 65551, "freeAddresses": 64770, "runwayNodes": 255})
    );

    let fam = usage_ipv4(&fx, "blue");
    for (preview, usage) in [
        ("capacityBlocks", "capacityBlocks"),
        ("allocatedBlocks", "allocatedBlocks"),
        ("withheldBlocks", "withheldBlocks"),
        ("freeBlocks", "freeBlocks"),
        ("reservedAddresses", "reservedAddresses"),
        ("freeAddresses", "freeAddresses"),
    ] {
        assert_eq!(drain["impact"]["after"][preview], fam[usage], "{preview}");
    }
    assert_eq!(
        (fam["allocatedBlocks"].clone(), fam["withheldBlocks"].clone(), fam["freeBlocks"].clone()),
        (json!(1), json!(256), json!(255))
    );

    // The pool document holds both entries, keyed by the exact cidrs strings; nothing else moved.
    let text = fx.read();
    let docs: Vec<Value> =
        text.split("\n---\n").map(|d| serde_json::to_value(serde_saphyr::from_str::<Value>(d).unwrap()).unwrap()).collect();
    assert_eq!(
        docs[0]["spec"]["ipv4"]["pool"],
        json!([
        {"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.240", "end": "10.40.255.254"}]},
        {"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.255.255"}]}])
    );
    assert_eq!(docs[0]["spec"]["namespaceSelector"], json!({"matchLabels": {"team": "blue"}}));
    assert_eq!(docs[0]["metadata"]["annotations"], json!({"example.com/ticket": "NET-1"}));
    assert!(text.starts_with("# pools of cluster test\n"), "leading comment kept");
    let untouched = BLUE.split_once("---\n").unwrap().1;
    assert!(text.ends_with(untouched), "the other documents are byte-for-byte unchanged:\n{text}");

    // inspect shows the CIDR draining with its node and pod; check reports it once empty.
    let (_, out, _) = fx.run(&["inspect", "blue"]);
    assert!(out.contains("Draining 10.41.0.0/16: still held by node-a (10.41.3.0/24); 1 pod(s) inside:\n    team-blue/db-0\n"), "{out}");
    // Without any CiliumNode, whether a node still holds a block is unknown: never "safe to remove".
    std::fs::write(fx.root.join("nodes.yaml"), "").unwrap();
    let (_, out, _) = fx.run(&["inspect", "blue"]);
    assert!(out.contains("draining: allocation unknown") && !out.contains("safe to remove"), "{out}");
    let (_, out, _) = fx.run(&["check", "-o", "json"]);
    let kinds: Vec<Value> = json_of(&out)["problems"].as_array().unwrap().iter().map(|p| p["kind"].clone()).collect();
    assert!(!kinds.contains(&json!("cidr-drained")), "{kinds:?}");
    let (_, out, _) = fx.run(&["reserve-range", "--list"]);
    assert!(out.contains("whether nodes still hold blocks is unknown") && !out.contains("safe to remove"), "{out}");
    // The node gone from 10.41.0.0/16 (it holds nothing now): drained.
    std::fs::write(
        fx.root.join("nodes.yaml"),
        NODES.replace("allocated:\n      - {pool: blue, cidrs: [10.41.3.0/24]}", "allocated: []").split("---").next().unwrap(),
    )
    .unwrap();
    let (_, out, _) = fx.run(&["inspect", "blue"]);
    assert!(out.contains("10.41.0.0/16      256           0        256      0   drained: safe to remove from cidrs"), "{out}");
    assert!(out.contains("Draining 10.41.0.0/16: empty — safe to remove it from spec.ipv4.cidrs"), "{out}");
    let (code, out, _) = fx.run(&["check", "-o", "json"]);
    assert_eq!(code, 1);
    let kinds: Vec<Value> = json_of(&out)["problems"].as_array().unwrap().iter().map(|p| p["kind"].clone()).collect();
    assert!(kinds.contains(&json!("cidr-drained")), "{kinds:?}");
}

#[test]
fn invalid_ranges_exit_2_and_change_nothing() {
    let fx = Fixture::new();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.40.255.240-10.40.255.254", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let before = fx.read();
    let offline_only: &[(&[&str], &str)] = &[
        (&["legacy", "10.70.0.1"], "cilium.io/v2alpha1 manifest"),
        (&["blue", "10.40.0.1", "--dry-run=server"], "--dry-run=server needs a cluster"),
    ];
    for (args, message) in INVALID_RANGES.iter().chain(offline_only) {
        let mut full = vec!["reserve-range"];
        full.extend_from_slice(args);
        full.push("--in-place");
        let (code, out, err) = fx.run(&full);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.contains(message), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(fx.read(), before, "{args:?} changed the file");
    }
    // The whole pool only with --force.
    let (code, _, err) = fx.run(&["reserve-range", "blue", "--drain", "10.41.0.0/16", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let before = fx.read();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "--drain", "10.40.0.0/16", "--in-place"]);
    assert_eq!((code, err.contains("--force")), (2, true), "{err}");
    assert_eq!(fx.read(), before);
    let (code, out, err) = fx.run(&["reserve-range", "blue", "--drain", "10.40.0.0/16", "--force", "--dry-run", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Replaces the existing range 10.40.255.240-10.40.255.254"), "{out}");
    assert_eq!(fx.read(), before, "a client dry run writes nothing");
}

#[test]
fn print_mode_emits_only_the_edited_pool_and_leaves_the_file() {
    let fx = Fixture::new();
    let (code, out, err) = fx.run(&["reserve-range", "green", "10.60.0.0-10.60.0.31", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(fx.read(), BLUE);
    assert_eq!(
        json_of(&out),
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "green"},
        "spec": {"ipv4": {"cidrs": ["10.60.0.0/20"], "maskSize": 26,
            "pool": [{"cidr": "10.60.0.0/20", "reservedRanges": [{"start": "10.60.0.0", "end": "10.60.0.31"}]}]}}}),
        "without a CRD saying otherwise, a v2 pool without a pool[] list is edited in its own (string cidrs = upstream) dialect"
    );
    assert!(err.contains("Blocks newly withheld: 10.60.0.0/26"), "{err}");
}

#[test]
fn cfp_dialect_first_range_then_second_refused() {
    let fx = Fixture::new();
    let crd = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot/crd-ciliumpodippools.yaml")).unwrap();
    // Make the example CRD's v2 schema CFP-shaped: cidrs items are objects.
    let mut crd: Value = serde_saphyr::from_str(&crd).unwrap();
    let v2 = crd["spec"]["versions"].as_array_mut().unwrap().iter_mut().find(|v| v["name"] == "v2").unwrap();
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ipv4"]["properties"]["cidrs"]["items"] = json!({"type": "object"});
    std::fs::write(fx.root.join("crd.json"), serde_json::to_string(&crd).unwrap()).unwrap();
    let (code, _, err) = fx.run(&["reserve-range", "green", "10.60.0.0-10.60.0.31", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = fx.run(&["reserve-range", "--list", "-o", "json"]);
    assert_eq!(
        json_of(&out)["reservedRanges"],
        json!([{"pool": "green", "family": "ipv4", "cidr": "10.60.0.0/20", "start": "10.60.0.0", "end": "10.60.0.31",
        "reservedAddresses": 32, "firstBlock": "10.60.0.0/26", "lastBlock": "10.60.0.0/26", "blocks": 1, "allocatedBlocks": [], "draining": false}])
    );
    // The flow list stays a flow list (and keeps its comment): only the edited value changes.
    assert!(fx.read().contains("    cidrs: [{cidr: 10.60.0.0/20, reservedRange: 10.60.0.0-10.60.0.31}]   # CFP objects"), "{}", fx.read());
    let before = fx.read();
    let (code, _, err) = fx.run(&["reserve-range", "green", "10.60.8.1", "--in-place"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the CFP dialect holds one reservedRange per CIDR and 10.60.0.0/20 already reserves 10.60.0.0-10.60.0.31"),
        "{err}"
    );
    assert_eq!(fx.read(), before);
}

#[test]
fn remove_restores_the_figures_and_list_on_the_example() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot");
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&example).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let (code, out, err) = run_on(dir.path(), &["reserve-range", "blue", "--remove", "10.40.255.254", "--in-place", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc = json_of(&out);
    assert_eq!(doc["impact"]["released"], json!([{"first": "10.40.255.0/24", "last": "10.40.255.0/24", "blocks": 1}]));
    assert_eq!((doc["impact"]["before"]["freeBlocks"].clone(), doc["impact"]["after"]["freeBlocks"].clone()), (json!(242), json!(243)));
    let (code, out, _) = run_on(dir.path(), &["reserve-range", "--list", "blue", "-o", "json"]);
    assert_eq!(code, 0);
    let listed: Vec<(Value, Value)> =
        json_of(&out)["reservedRanges"].as_array().unwrap().iter().map(|r| (r["start"].clone(), r["end"].clone())).collect();
    assert_eq!(listed, vec![(json!("10.41.0.0"), json!("10.41.255.255"))]);
}

#[test]
fn list_is_sorted_by_pool_name_then_address() {
    // Pools written zeta before alpha, and zeta's ranges written out of address order.
    let pools = "\
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: zeta}
spec: {ipv4: {cidrs: [10.80.0.0/16], maskSize: 24, pool: [{cidr: 10.80.0.0/16, reservedRanges: [
  {start: 10.80.9.0, end: 10.80.9.9}, {start: 10.80.1.0, end: 10.80.1.9}, {start: 10.80.100.1, end: 10.80.100.1}]}]}}
---
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: alpha}
spec: {ipv4: {cidrs: [10.90.0.0/16], maskSize: 24, pool: [{cidr: 10.90.0.0/16, reservedRanges: [{start: 10.90.5.0, end: 10.90.5.1}]}]}}
";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pools.yaml"), pools).unwrap();
    let (code, out, err) = run_on(dir.path(), &["reserve-range", "--list", "-o", "json"]);
    assert_eq!(code, 0, "{err}");
    let listed: Vec<(String, String)> = json_of(&out)["reservedRanges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["pool"].as_str().unwrap().to_string(), r["start"].as_str().unwrap().to_string()))
        .collect();
    let mut expected = listed.clone();
    expected.sort_by_key(|(pool, start)| (pool.clone(), start.parse::<std::net::Ipv4Addr>().unwrap()));
    assert_eq!(listed, expected);
    assert_eq!(listed.len(), 4);
    let (_, table, _) = run_on(dir.path(), &["reserve-range", "--list", "--no-headers"]);
    let starts: Vec<&str> = table.lines().map(|l| l.split_whitespace().nth(2).unwrap()).collect();
    assert_eq!(starts, ["10.90.5.0-10.90.5.1", "10.80.1.0-10.80.1.9", "10.80.9.0-10.80.9.9", "10.80.100.1"], "{table}");
}

#[test]
fn an_empty_list_is_said_on_stderr_not_a_bare_header() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pools.yaml"), BLUE).unwrap();
    for (args, whose) in
        [(&["reserve-range", "--list"][..], "any pool"), (&["reserve-range", "blue", "--list", "--no-headers"], "pool blue")]
    {
        let (code, out, err) = run_on(dir.path(), args);
        assert_eq!((code, out.as_str()), (0, ""), "no table, not even its header: {err}");
        assert!(err.lines().any(|l| l == format!("No reserved ranges in {whose}.")), "{err}");
    }
    // JSON stays a document with an empty list.
    let (_, out, err) = run_on(dir.path(), &["reserve-range", "--list", "-o", "json"]);
    assert_eq!(json_of(&out)["reservedRanges"], json!([]));
    assert!(!err.contains("No reserved ranges"), "{err}");
}

/// Missing arguments on a terminal: the v2alpha1 manifest is not offered (and why is said first),
/// pick pool, pick CIDR, type ranges until one is valid, confirm the rewrite.
#[test]
fn guided_flow_in_a_real_terminal() {
    let fx = Fixture::new();
    let mut cmd = cli::plugin_process();
    cmd.args(["reserve-range", "--color", "never", "-f", ".", "--in-place"]).current_dir(&fx.root);
    let mut term = cli::terminal(cmd, std::time::Duration::from_secs(30));
    term.exp_string("not offered: legacy (cilium.io/v2alpha1 manifests cannot hold reserved ranges").unwrap();
    term.exp_string("green (upstream-v2; ipv4 0/64 blocks allocated)").unwrap();
    press(&mut term, "\r");
    term.exp_string("10.41.0.0/16 (255 free, 0 withheld, 1 allocated of 256 blocks)").unwrap();
    press(&mut term, "\x1b[B");
    press(&mut term, "\r");
    term.exp_string("Range to reserve in 10.41.0.0/16").unwrap();
    press(&mut term, "10.40.0.1\r");
    term.exp_string("not inside the chosen CIDR").unwrap();
    press(&mut term, "10.41.0.0/28\r");
    term.exp_string("Rewrite ./pools.yaml with this change to ciliumpodippool blue? [y/N]").unwrap();
    press(&mut term, "y\r");
    term.exp_string("edited in ./pools.yaml: reserved 10.41.0.0-10.41.0.15 in 10.41.0.0/16").unwrap();
    term.exp_eof().unwrap();
    let blue: Value = serde_saphyr::from_str(fx.read().split("\n---\n").next().unwrap()).unwrap();
    assert_eq!(
        blue["spec"]["ipv4"]["pool"],
        json!([{"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.0.15"}]}])
    );
}

/// The preview (stderr) on a pools-only file: without CiliumNodes which blocks are allocated is
/// unknown, so a `warning:` line says so once and the figures show `?`, not "allocated blocks 0"; with the nodes beside
/// it, node-a's block 10.41.3.0/24 is the one allocated block.
#[test]
fn preview_without_ciliumnodes_says_allocated_blocks_are_unknown() {
    let fx = Fixture::new();
    let figure = |table: &str, name: &str| -> Vec<String> {
        let row = table.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {table}"));
        row.trim_start()[name.len()..].split_whitespace().map(str::to_string).collect()
    };
    let (code, _, stderr) = run_on(&fx.pools(), &["reserve-range", "blue", "10.40.100.0-10.40.100.10"]);
    assert_eq!(code, 0, "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.starts_with("warning: the input holds no CiliumNodes")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    for name in ["allocated blocks", "free blocks", "allocatable blocks", "free addresses"] {
        assert_eq!(figure(&stderr, name), ["?", "?"], "{name}: {stderr}");
    }
    assert_eq!(figure(&stderr, "capacity blocks"), ["512", "512"], "{stderr}");
    let (code, _, stderr) = fx.run(&["reserve-range", "blue", "10.40.100.0-10.40.100.10"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("no CiliumNodes"), "{stderr}");
    assert_eq!(figure(&stderr, "allocated blocks"), ["1", "1"], "{stderr}");
}

/// Issue 40, finding 7: a `%YAML 1.2` directive before the document was read by `usage` but the
/// editor split it off as a document of its own and refused it. It is kept byte for byte now.
#[test]
fn a_yaml_directive_is_kept_by_the_in_place_edit() {
    let fx = Fixture::new();
    let text = format!("%YAML 1.2\n# directive above\n{}", BLUE.replacen("# pools of cluster test\n", "--- # pools of cluster test\n", 1));
    std::fs::write(fx.pools(), &text).unwrap();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.40.255.254", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let after = fx.read();
    assert!(after.starts_with("%YAML 1.2\n# directive above\n--- # pools of cluster test\n"), "{after}");
    assert!(after.contains("end: \"10.40.255.254\"") || after.contains("end: 10.40.255.254"), "{after}");
    assert!(after.ends_with(BLUE.split_once("---\n").unwrap().1), "the other documents are copied: {after}");
}

/// Issue 40, finding 7: a document the patcher cannot edit in place (an alias) is written whole,
/// without its comments; that used to happen without a word. Now one note names the file and line.
#[test]
fn a_document_written_whole_says_its_comments_were_not_kept() {
    let fx = Fixture::new();
    let aliased = BLUE.replacen(
        "  namespaceSelector:\n    matchLabels:\n      team: blue\n",
        "  namespaceSelector: &sel\n    matchLabels:\n      team: blue  # owner\n  podSelector: *sel\n",
        1,
    );
    std::fs::write(fx.pools(), &aliased).unwrap();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.40.255.254", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let path = fx.pools().display().to_string();
    let note = format!(
        "note: {path}: the document at line 1 was written whole (anchors, aliases or tags cannot be edited in place), without the comments inside it"
    );
    assert_eq!(err.lines().filter(|l| l.starts_with("note: ")).collect::<Vec<_>>(), [note.as_str()], "{err}");
    assert!(!fx.read().contains("# owner"), "the comment is gone, as the note says");
    // A document that is patched keeps its comments and gets no note.
    let fx = Fixture::new();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.40.255.254", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("note: ") && fx.read().contains("NET-1   # keep"), "{err}");
}

/// Issue 42: a range added in place was written quoted among plain neighbours
/// (`end: "10.40.0.20"`) and appended after them; it is now written as they are, in address
/// order, above the comment of the range it goes before, and nothing else of the file changes.
#[test]
fn a_range_added_in_place_is_written_plain_in_address_order() {
    let fx = Fixture::new();
    let ranges = "    pool:\n    - cidr: 10.40.0.0/16\n      reservedRanges:\n      - end: 10.40.0.1\n        start: 10.40.0.1\n      # the gateway\n      - end: 10.40.255.254\n        start: 10.40.255.254\n";
    let before = BLUE.replacen("    maskSize: 24\n", &format!("    maskSize: 24\n{ranges}"), 1);
    std::fs::write(fx.pools(), &before).unwrap();
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.40.9.0-10.40.9.255", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let added = "      - end: 10.40.9.255\n        start: 10.40.9.0\n";
    let expected = before.replacen("      # the gateway\n", &format!("{added}      # the gateway\n"), 1);
    assert_eq!(fx.read(), expected);
    // A range of a CIDR without an entry yet gets its entry after the entries of earlier CIDRs.
    let (code, _, err) = fx.run(&["reserve-range", "blue", "10.41.0.5", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    let entry = "    - cidr: 10.41.0.0/16\n      reservedRanges:\n      - end: 10.41.0.5\n        start: 10.41.0.5\n";
    let expected = expected.replacen("        start: 10.40.255.254\n", &format!("        start: 10.40.255.254\n{entry}"), 1);
    assert_eq!(fx.read(), expected);
}

/// Issue 42 and a fuzz finding: a repeated key was the YAML parser's own message with its advice
/// (`set DuplicateKeyPolicy in Options if acceptable`), and in JSON the whole-text decoder kept the
/// last value while the streaming one kept the first. Both refuse it now in one line, exit 2,
/// nothing written.
#[test]
fn a_repeated_key_is_refused_in_one_line_and_nothing_is_written() {
    let said = "duplicate key `kind` in one object; a Kubernetes object names each field once: remove one of them";
    let fx = Fixture::new();
    let yaml = BLUE.replacen(
        "kind: CiliumPodIPPool\nmetadata:\n  name: blue\n",
        "kind: CiliumPodIPPool\nmetadata:\n  name: blue\nkind: CiliumNode\n",
        1,
    );
    std::fs::write(fx.pools(), &yaml).unwrap();
    let json = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-1", "namespace": "team-blue"},
 "kind": "CiliumNode"}"#;
    std::fs::write(fx.root.join("pod.json"), json).unwrap();
    // The JSON through `usage` (the streaming reader first), the YAML through the in-place edit.
    for (args, file, line) in
        [(&["usage"][..], "pod.json", 2), (&["reserve-range", "blue", "10.40.0.1", "--in-place"][..], "pools.yaml", 6)]
    {
        let path = fx.root.join(file);
        let (code, out, err) = cli::output(cli::plugin().args(args).arg("-f").arg(&path));
        let expected = format!("error: {}:{line}: {said}\n", path.display());
        assert_eq!((code, out.as_str(), err.as_str()), (2, "", expected.as_str()), "{args:?}");
    }
    assert_eq!(fx.read(), yaml, "nothing written");
}
