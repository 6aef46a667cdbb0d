//! Honest unknowns (issue 42, item 6): a figure the input cannot show is `?` in tables, null in
//! JSON and no series in OpenMetrics, never 0; a figure it bounds is shown as the bound (`≥94%`);
//! and a sysdump that names a Cilium before 1.21 hides no reserved ranges, so its figures are
//! exact. Expected values come from the example's objects (batch: 15 of its 16 /26 blocks are
//! allocated, no reservation), not from the plugin's output.

use crate::cli_inputs::{dumps, example_file, json_of, path, run};
use serde_json::Value;

/// The batch ipv4 family of a usage document.
fn batch(doc: &Value) -> &Value {
    let pool = doc["pools"].as_array().unwrap().iter().find(|p| p["name"] == "batch").expect("pool batch");
    &pool["families"][0]
}

/// The `--no-headers` row of pool batch.
fn batch_row(table: &str) -> Vec<String> {
    let row = table.lines().find(|l| l.starts_with("batch ")).unwrap_or_else(|| panic!("no batch row:\n{table}"));
    row.split_whitespace().map(str::to_string).collect()
}

#[test]
fn without_cilium_nodes_allocation_figures_are_unknown_not_zero() {
    let pools = example_file("pools.yaml");
    let (code, table, stderr) = run(&["usage", "-f", &pools, "--no-headers", "-o", "wide"]);
    assert_eq!(code, 0, "{stderr}");
    let row = batch_row(&table);
    // POOL FAMILY MASK BLOCKS TOTAL RESERVED ALLOCATED USED FREE UTIL CAPACITY WITHHELD FREE-BLOCKS IDLE ORPHANS NODES RUNWAY
    assert_eq!(row[3], "?/16", "allocated unknown, allocatable known: {row:?}");
    assert_eq!((row[5].as_str(), row[6].as_str(), row[8].as_str(), row[9].as_str()), ("0", "?", "?", "?"), "{row:?}");
    assert_eq!((row[12].as_str(), row[15].as_str(), row[16].as_str()), ("?", "?", "?"), "FREE-BLOCKS, NODES, RUNWAY: {row:?}");

    let doc = json_of(&["usage", "-o", "json", "-f", &pools], 0);
    let fam = batch(&doc);
    for field in [
        "allocatedBlocks",
        "freeBlocks",
        "allocatedAddresses",
        "freeAddresses",
        "utilization",
        "utilizationAtLeast",
        "nodesHolding",
        "runwayNodes",
        "nextBlock",
    ] {
        assert_eq!(fam[field], Value::Null, "{field} is unknown: {fam}");
    }
    assert_eq!((fam["capacityBlocks"].as_u64(), fam["withheldBlocks"].as_u64()), (Some(16), Some(0)), "{fam}");
    assert_eq!((&fam["cidrs"][0]["allocatedBlocks"], &fam["cidrs"][0]["freeBlocks"]), (&Value::Null, &Value::Null), "{fam}");

    let (_, metrics, _) = run(&["usage", "-o", "openmetrics", "-f", &pools]);
    for family in
        ["allocated_blocks", "free_blocks", "allocated_addresses", "free_addresses", "runway_nodes", "nodes_holding", "nodes_waiting"]
    {
        assert!(!metrics.contains(&format!("ciliumpool_{family}{{")), "{family}: no sample when unknown\n{metrics}");
    }
    assert!(metrics.contains("ciliumpool_capacity_blocks{pool=\"batch\",family=\"ipv4\"} 16"), "{metrics}");

    let (code, text, stderr) = run(&["inspect", "batch", "-f", &pools]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("? of 16 allocatable blocks allocated, utilization unknown"), "{text}");
    let cidr: Vec<&str> = text.lines().find(|l| l.trim_start().starts_with("10.80.0.0/22")).unwrap().split_whitespace().collect();
    assert_eq!(cidr, ["10.80.0.0/22", "16", "?", "0", "?", "unknown"], "{text}");
    assert!(text.contains("Nodes holding blocks: unknown") && text.contains("Next block: unknown"), "{text}");
}

#[test]
fn thresholds_do_not_take_unknown_allocation_for_zero() {
    let pools = example_file("pools.yaml");
    // Without CiliumNodes utilization is unknown: --fail-above cannot be breached by it.
    let (code, _, stderr) = run(&["usage", "-f", &pools, "--fail-above", "0"]);
    assert_eq!(code, 0, "{stderr}");
    // 16 blocks not withheld are at most 16 free ones: fewer than 20 for certain, said as a bound.
    let (code, _, stderr) = run(&["usage", "-f", &pools, "--min-free-blocks", "20"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("pool batch ipv4: at most 16 free block(s), fewer than --min-free-blocks 20"), "{stderr}");
}

#[test]
fn a_sysdump_shows_the_utilization_it_bounds() {
    let d = dumps();
    let (code, table, stderr) = run(&["usage", "-f", path(&d.zip), "--no-headers"]);
    assert_eq!(code, 0, "{stderr}");
    let row = batch_row(&table);
    assert_eq!((row[3].as_str(), row[9].as_str()), ("15/?", "≥94%"), "15 of at most 16 allocatable blocks: {row:?}");
    let doc = json_of(&["usage", "-o", "json", "-f", path(&d.zip)], 0);
    let fam = batch(&doc);
    assert_eq!((&fam["utilization"], fam["utilizationAtLeast"].as_f64()), (&Value::Null, Some(15.0 / 16.0)), "{fam}");
    assert_eq!(fam["nodesHolding"].as_u64(), Some(6), "the nodes are in the sysdump: {fam}");
}

#[test]
fn reserve_range_list_on_a_sysdump_says_the_ranges_are_unknown() {
    let d = dumps();
    for (args, expected) in [
        (vec!["reserve-range", "--list"], "Reserved ranges are unknown: the input cannot show them."),
        (vec!["reserve-range", "blue", "--list"], "Reserved ranges of pool blue are unknown: the input cannot show them."),
    ] {
        let (code, stdout, stderr) = run(&[args.as_slice(), &["-f", path(&d.sysdump)]].concat());
        assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("No reserved ranges"), "blue has one, the sysdump cannot show it: {stderr}");
    }
    // With the example's v2 pools the ranges are known again, and a pool without any says so.
    let (_, _, stderr) = run(&["reserve-range", "batch", "--list", "-f", &example_file("pools.yaml")]);
    assert!(stderr.contains("No reserved ranges in pool batch."), "{stderr}");
}

/// The sysdump with the agent DaemonSet `cilium sysdump` writes (`cilium-daemonset-<ts>.yaml`,
/// an object without apiVersion and kind) whose agent image is `image`.
fn with_agent_image(sysdump: &std::path::Path, image: &str) {
    let daemonset = format!(
        "metadata:\n  name: cilium\n  namespace: kube-system\nspec:\n  template:\n    spec:\n      containers:\n      - name: cilium-agent\n        image: {image}\n"
    );
    std::fs::write(sysdump.join("cilium-daemonset-20251120-093000.yaml"), daemonset).unwrap();
}

#[test]
fn a_sysdump_of_cilium_before_1_21_has_exact_figures() {
    let d = dumps();
    with_agent_image(&d.sysdump, "quay.io/cilium/cilium:v1.20.2@sha256:0123456789abcdef");
    let doc = json_of(&["usage", "-o", "json", "-f", path(&d.sysdump)], 0);
    assert!(doc["source"].get("caveats").is_none(), "no release before 1.21 serves v2 pools: {}", doc["source"]);
    assert_eq!(doc["source"]["ciliumVersions"][0]["version"], "v1.20.2", "{}", doc["source"]);
    let fam = batch(&doc);
    assert_eq!(
        (fam["utilization"].as_f64(), fam["freeBlocks"].as_u64(), fam["reservedAddresses"].as_u64()),
        (Some(0.9375), Some(1), Some(0))
    );
    assert_eq!(fam["nextBlock"], "10.80.1.192/26", "{fam}");
    let (code, table, stderr) = run(&["usage", "-f", path(&d.sysdump)]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(batch_row(&table)[9], "94%", "{table}");
    assert!(stderr.contains("; Cilium v1.20.2 (daemonset/cilium)"), "{stderr}");
    assert!(!stderr.contains("warning:"), "{stderr}");
    let (_, _, stderr) = run(&["reserve-range", "--list", "-f", path(&d.sysdump)]);
    assert!(stderr.contains("No reserved ranges in any pool."), "{stderr}");

    // 1.21 and later may hide v2 reservations; a tag that names no release, a digest alone or
    // an unprintable tag is an unknown version: the figures stay unknown.
    for image in [
        "quay.io/cilium/cilium:v1.21.0",
        "quay.io/cilium/cilium:1.22.0-rc.1",
        "quay.io/cilium/cilium:latest",
        "quay.io/cilium/cilium@sha256:0123456789abcdef",
        "\"quay.io/cilium/cilium:v1.20\\e[31m\"",
    ] {
        with_agent_image(&d.sysdump, image);
        let (code, stdout, stderr) = run(&["usage", "-o", "json", "-f", path(&d.sysdump)]);
        assert_eq!(code, 0, "{image}: {stderr}");
        assert!(!stderr.contains('\u{1b}'), "{image}: escaped: {stderr:?}");
        let doc: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(doc["source"]["caveats"][0]["kind"], "pools-through-v2alpha1", "{image}: {}", doc["source"]);
        assert_eq!(batch(&doc)["utilization"], Value::Null, "{image}");
    }
}
