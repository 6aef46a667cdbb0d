//! The CLI on files (no cluster): human output as insta snapshots (colour off), JSON asserted
//! exactly against figures known independently of the allocator (the example generator's own
//! bookkeeping, or arithmetic done here), and bad input.

use crate::support;

use serde_json::Value;
use std::path::PathBuf;
use support::cli::{family, run};

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").display().to_string()
}

fn usage_json(args: &[&str]) -> Value {
    let (code, stdout, stderr) = run(&[&["usage", "-o", "json"], args].concat());
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn example_usage_table() {
    let (code, stdout, _) = run(&["usage", "-f", &example()]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout.replace(&example(), "examples/snapshot"));
}

#[test]
fn example_wide_by_node_and_blocks() {
    let ex = example();
    insta::assert_snapshot!("wide", run(&["usage", "-o", "wide", "--no-headers", "-f", &ex]).1);
    insta::assert_snapshot!("by_node", run(&["usage", "blue", "--by", "node", "--no-headers", "-f", &ex]).1);
    insta::assert_snapshot!("blocks", run(&["usage", "blue", "green", "--show-blocks", "--no-headers", "-f", &ex]).1);
}

#[test]
fn example_inspect_and_check() {
    let ex = example();
    let (code, inspect, _) = run(&["inspect", "blue", "-f", &ex]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("inspect_blue", inspect);
    let (code, check, _) = run(&["check", "-f", &ex]);
    assert_eq!(code, 1, "problems found means exit 1");
    insta::assert_snapshot!("check", check);
}

/// Figures the example generator reported from its own allocation bookkeeping.
#[test]
fn example_figures_match_the_generator() {
    let doc = usage_json(&["-f", &example()]);
    assert_eq!(doc["schemaVersion"], 1);
    assert_eq!(doc["source"]["kind"], "files");
    let expect = [
        // pool, family, allocated, capacity, withheld
        ("default", "ipv4", 47, 256, 0),
        ("default", "ipv6", 36, 65536, 0),
        ("blue", "ipv4", 14, 512, 256),
        ("green", "ipv4", 12, 128, 1),
        ("green", "ipv6", 8, 256, 0),
        ("batch", "ipv4", 15, 16, 0),
    ];
    for (pool, fam, allocated, capacity, withheld) in expect {
        let f = family(&doc, pool, fam);
        assert_eq!(f["allocatedBlocks"], allocated, "{pool} {fam}");
        assert_eq!(f["capacityBlocks"], capacity, "{pool} {fam}");
        assert_eq!(f["withheldBlocks"], withheld, "{pool} {fam}");
        assert_eq!(f["freeBlocks"], capacity - allocated - withheld, "{pool} {fam}");
        assert_eq!(f["orphanBlocks"], 0, "{pool} {fam}");
    }
    let blue = family(&doc, "blue", "ipv4");
    assert_eq!(blue["totalAddresses"], 131072);
    assert_eq!(blue["reservedAddresses"], 65536 + 1);
    assert_eq!(blue["allocatedAddresses"], 14 * 254);
    assert_eq!(blue["freeAddresses"], 242 * 254);
    let drained = &blue["cidrs"][1];
    assert_eq!(
        (drained["cidr"].as_str(), drained["allocatedBlocks"].as_u64(), drained["withheldBlocks"].as_u64(), drained["freeBlocks"].as_u64()),
        (Some("10.41.0.0/16"), Some(1), Some(255), Some(0))
    );
    // green allows the first IP: 64 − 1 usable addresses per /26 block.
    assert_eq!(family(&doc, "green", "ipv4")["allocatedAddresses"], 12 * 63);
    // The grandfathered block carries the generator's four pods.
    let node = doc["nodes"].as_array().unwrap().iter().find(|n| n["name"] == "ip-10-0-10-228.eu-west-1.compute.internal").unwrap();
    let blue_entry = node["pools"].as_array().unwrap().iter().find(|p| p["pool"] == "blue").unwrap();
    assert_eq!(blue_entry["blocks"], serde_json::json!(["10.41.3.0/24"]));
    assert_eq!(blue_entry["usedAddresses"], 4);
    let kinds: Vec<&str> = doc["problems"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    for kind in ["orphan-block", "reservation-over-allocated", "pool-nearly-exhausted", "storage-migration-pending", "stale-operator-error"]
    {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
}

#[test]
fn selected_pools_and_yaml() {
    let doc = usage_json(&["blue", "-f", &example()]);
    assert_eq!(doc["pools"].as_array().unwrap().len(), 1);
    assert!(doc["problems"].as_array().unwrap().iter().all(|p| p["pool"] == "blue"));
    let (code, yaml, _) = run(&["usage", "batch", "-o", "yaml", "-f", &example()]);
    assert_eq!(code, 0);
    assert!(yaml.contains("schemaVersion: 1") && yaml.contains("name: batch"), "{yaml}");
    let (code, names, _) = run(&["usage", "-o", "name", "-f", &example()]);
    assert_eq!((code, names.lines().count()), (0, 4));
}

#[test]
fn thresholds_exit_one() {
    let ex = example();
    assert_eq!(run(&["usage", "--fail-above", "90", "-f", &ex]).0, 1, "batch is 94% allocated");
    assert_eq!(run(&["usage", "blue", "--fail-above", "90", "-f", &ex]).0, 0);
    assert_eq!(run(&["usage", "--min-free-blocks", "2", "-f", &ex]).0, 1, "batch has 1 free block");
    assert_eq!(run(&["usage", "default", "--min-free-blocks", "2", "-f", &ex]).0, 0);
    assert_eq!(run(&["usage", "--fail-above", "120", "-f", &ex]).0, 2);
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// IPv6 pools are computed without enumeration: exact counts, big ones as decimal strings.
#[test]
fn huge_ipv6_pools_are_exact() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "pools.yaml",
        r#"
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: cfp6}
spec:
  ipv6:
    cidrs: [{cidr: "fd00:20::/104"}]
    maskSize: 120
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: half}
spec:
  ipv6: {cidrs: ["::/1"], maskSize: 17}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata: {name: wide}
spec:
  ipv6: {cidrs: ["::/1"], maskSize: 64}
---
# A node holding no block: which blocks are allocated is known (none), so free figures are too.
apiVersion: cilium.io/v2
kind: CiliumNode
metadata: {name: idle}
"#,
    );
    let doc = usage_json(&["-f", &file]);
    let cfp = family(&doc, "cfp6", "ipv6");
    assert_eq!(cfp["capacityBlocks"], 65536);
    assert_eq!(cfp["totalAddresses"], 1u64 << 24);
    assert_eq!(cfp["freeAddresses"], 65536 * 254);
    let half = family(&doc, "half", "ipv6");
    let two_pow = |n: u32| 2u128.pow(n);
    assert_eq!(half["capacityBlocks"], 1u64 << 16);
    assert_eq!(half["totalAddresses"], Value::String(two_pow(127).to_string()));
    // 2^16 blocks × (2^111 − 2) usable addresses = 2^127 − 2^17
    assert_eq!(half["freeAddresses"], Value::String((two_pow(127) - two_pow(17)).to_string()));
    assert_eq!(half["totalAddresses"], "170141183460469231731687303715884105728");
    // ::/1 with /64 blocks is 2^63 blocks: the operator rejects the whole pool.
    let wide = family(&doc, "wide", "ipv6");
    assert_eq!(wide["capacityBlocks"], 0);
    assert_eq!(wide["totalAddresses"], Value::String(two_pow(127).to_string()));
    // The pools' own problems (the input also lacks Pods: input-incomplete).
    let problems: Vec<&str> =
        doc["problems"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).filter(|k| *k != "input-incomplete").collect();
    assert_eq!(problems, vec!["ipv6-too-many-blocks", "invalid-pool"]);
}

#[test]
fn malformed_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = write(&dir, "bad.yaml", "apiVersion: v1\nkind: List\nitems: [\n  {a: 1\n");
    let (code, stdout, stderr) = run(&["usage", "-f", &yaml]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(stderr.starts_with(&format!("error: {yaml}:")) && stderr.contains("invalid YAML"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    let json = write(&dir, "bad.json", "{\n  \"kind\": \"List\",\n  \"items\": [,]\n}\n");
    let (code, _, stderr) = run(&["usage", "-f", &json]);
    assert_eq!(code, 2);
    assert!(stderr.contains(&format!("{json}:3: invalid JSON")), "{stderr}");
    let (code, _, stderr) = run(&["usage", "-f", "/nonexistent/pools.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("cannot read /nonexistent/pools.yaml"), "{stderr}");
    let (code, _, stderr) = run(&["usage", "nosuchpool", "-f", &example()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("pool \"nosuchpool\" not found"), "{stderr}");
    let (code, _, stderr) = run(&["usage", "bleu", "-f", &example()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("did you mean blue?"), "{stderr}");
}

#[test]
fn invalid_pools_are_problems_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "pool.yaml",
        r#"
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: broken}
spec:
  ipv4:
    cidrs: ["10.0.0.0/16"]
    maskSize: 24
    pool:
    - cidr: 10.0.0.0/16
      reservedRanges:
      - {start: 10.0.0.9, end: 10.0.0.1}
      - {start: fd00::1, end: fd00::2}
      - {start: gateway, end: 10.0.0.1}
      - {start: 10.1.0.0, end: 10.1.0.5}
      - {start: 10.0.0.0, end: 10.0.0.255}
---
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata: {name: rejected}
spec:
  ipv4:
    cidrs: ["10.1.0.0/16", "not-a-cidr", "10.1.0.0/8"]
    maskSize: 24
"#,
    );
    let doc = usage_json(&["-f", &file]);
    assert_eq!(family(&doc, "rejected", "ipv4")["capacityBlocks"], 0, "the operator rejects a pool with an invalid or overlapping CIDR");
    let f = family(&doc, "broken", "ipv4");
    assert_eq!(f["capacityBlocks"], 256);
    assert_eq!(f["withheldBlocks"], 1);
    assert_eq!(f["reservedAddresses"], 256);
    let kinds: Vec<&str> = doc["problems"].as_array().unwrap().iter().map(|p| p["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "invalid-reserved-range").count(), 4, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "invalid-pool").count(), 2, "{kinds:?}");
}

#[test]
fn lists_streams_stdin_and_directories_agree() {
    let ex = example();
    let from_dir = usage_json(&["-f", &ex]);
    let files: Vec<String> = ["crd-ciliumpodippools.yaml", "pools.yaml", "ciliumnodes.yaml", "pods.yaml", "ciliumendpoints.json"]
        .iter()
        .map(|f| format!("{ex}/{f}"))
        .collect();
    let mut args: Vec<&str> = Vec::new();
    for f in &files {
        args.extend(["-f", f.as_str()]);
    }
    let from_files = usage_json(&args);
    assert_eq!(from_dir["pools"], from_files["pools"]);
    let pools = std::fs::read_to_string(format!("{ex}/pools.yaml")).unwrap();
    let out = support::cli::plugin().args(["usage", "-o", "json", "-f", "-", "-f", &files[2]]).write_stdin(pools).output().unwrap();
    let from_stdin: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_stdin["pools"][1]["families"][0]["allocatedBlocks"], from_dir["pools"][1]["families"][0]["allocatedBlocks"]);
}

#[test]
fn closed_pipe_is_a_normal_exit() {
    let bin = assert_cmd::cargo::cargo_bin!("kubectl-ciliumpool");
    let script = format!("'{}' usage --by node -f '{}' | true; echo \"${{PIPESTATUS[0]}}\"", bin.display(), example());
    let out = std::process::Command::new("bash").args(["-c", &script]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0");
    let head = std::process::Command::new("bash")
        .args(["-c", &format!("'{}' usage -f '{}' | head -1", bin.display(), example())])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&head.stdout).starts_with("POOL"));
    assert!(!String::from_utf8_lossy(&head.stderr).contains("panicked"));
}
