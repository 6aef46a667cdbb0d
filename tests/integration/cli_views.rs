//! The human interface on the example (issue #12): thresholds that say what breached, stdout that
//! is the table alone (notes on stderr, per view), one word per cell under `--no-headers`, one
//! notation for numbers, one set of figures in every view, `inspect -o json` in depth and
//! `check`'s names and hidden counts. Expected values come from the `-o json` figures (checked
//! against the independent oracle elsewhere) or from arithmetic on the example's objects.

use crate::support;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use support::cli::{json_of, run};

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").display().to_string()
}

fn usage_json() -> Value {
    let (code, stdout, stderr) = run(&["usage", "-o", "json", "-f", &example()]);
    assert_eq!(code, 0, "{stderr}");
    json_of(&stdout)
}

/// (pool, family, utilization, free blocks) of every pool family, from the JSON figures.
fn families(doc: &Value) -> Vec<(String, String, f64, u64)> {
    let mut out = Vec::new();
    for pool in doc["pools"].as_array().unwrap() {
        for fam in pool["families"].as_array().unwrap() {
            let allocated = fam["allocatedBlocks"].as_u64().unwrap();
            let free = fam["freeBlocks"].as_u64().unwrap();
            let util = allocated as f64 / (allocated + free) as f64 * 100.0;
            out.push((pool["name"].as_str().unwrap().to_string(), fam["family"].as_str().unwrap().to_string(), util, free));
        }
    }
    out
}

#[test]
fn thresholds_name_what_breached_mark_the_rows_and_filter_names() {
    let ex = example();
    let doc = usage_json();
    for (flag, value) in [("--fail-above", "90"), ("--fail-above", "50"), ("--min-free-blocks", "200"), ("--min-free-blocks", "1")] {
        let limit: f64 = value.parse().unwrap();
        let expected: Vec<(String, String)> = families(&doc)
            .into_iter()
            .filter(|(_, _, util, free)| if flag == "--fail-above" { *util > limit } else { (*free as f64) < limit })
            .map(|(p, f, _, _)| (p, f))
            .collect();
        let (code, stdout, stderr) = run(&["usage", flag, value, "-f", &ex]);
        assert_eq!(code, if expected.is_empty() { 0 } else { 1 }, "{flag} {value}: {stderr}");
        let breach_lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("threshold breached: ")).collect();
        assert_eq!(breach_lines.len(), expected.len(), "{flag} {value}: {stderr}");
        for (pool, family) in &expected {
            assert!(
                breach_lines.iter().any(|l| l.contains(&format!("pool {pool} {family}:")) && l.contains(&format!("{flag} {value}"))),
                "{pool} {family} not named:\n{stderr}"
            );
            let row = stdout.lines().find(|l| l.split_whitespace().take(2).eq([pool.as_str(), family.as_str()])).unwrap();
            assert_ne!(row.split_whitespace().last(), Some("-"), "the breaching row is marked: {row}");
        }
        let marked = stdout.lines().skip(1).filter(|l| l.split_whitespace().last() != Some("-")).count();
        assert_eq!(marked, expected.len(), "only breaching rows are marked:\n{stdout}");
        // -o name lists each breaching pool once, and no other.
        let (_, names, _) = run(&["usage", flag, value, "-o", "name", "-f", &ex]);
        let mut pools: Vec<String> = expected.iter().map(|(p, _)| format!("ciliumpodippool.cilium.io/{p}")).collect();
        pools.dedup();
        assert_eq!(names.lines().collect::<Vec<_>>(), pools, "{flag} {value}");
    }
    assert_eq!(run(&["usage", "-o", "name", "-f", &ex]).1.lines().count(), 4, "without a threshold every pool is named");
}

#[test]
fn stdout_is_the_table_and_the_notes_fit_the_view() {
    let ex = example();
    let views: [(&[&str], &[&str], &[&str]); 3] = [
        (&[], &["BLOCKS     allocated blocks / allocatable", "UTIL ", "FREE "], &["NEEDED", "STATE "]),
        (&["--by", "node"], &["NEEDED ", "IDLE ", "NOTE "], &["UTIL ", "STATE "]),
        (&["--show-blocks"], &["STATE ", "USED "], &["NEEDED", "UTIL "]),
    ];
    for (args, defined, absent) in views {
        let (code, stdout, stderr) = run(&[&["usage", "-f", ex.as_str()], args].concat());
        assert_eq!(code, 0);
        assert!(!stdout.contains("Sources:") && !stdout.contains("addresses in"), "stdout carries the table only: {stdout}");
        let header = stdout.lines().next().unwrap();
        for column in defined {
            assert!(stderr.lines().any(|l| l.starts_with(column)), "{args:?}: {column} not defined:\n{stderr}");
            let name = column.split_whitespace().next().unwrap();
            assert!(header.split_whitespace().any(|h| h == name), "{args:?}: {name} is defined but not a column: {header}");
        }
        for column in absent {
            assert!(!stderr.lines().any(|l| l.starts_with(column)), "{args:?}: {column} defined but absent:\n{stderr}");
        }
        assert!(stderr.contains("Sources: 4 pools, 36 CiliumNodes"), "{stderr}");
        // --no-headers: no notes, and every cell is one word so columns split on blanks.
        let (_, bare, notes) = run(&[&["usage", "--no-headers", "-f", ex.as_str()], args].concat());
        assert!(notes.is_empty(), "{notes}");
        // The bar has no header word and is left out without headers.
        let width = header.split_whitespace().count();
        for line in bare.lines() {
            assert_eq!(line.split_whitespace().count(), width, "{args:?}: a cell with a blank in: {line}");
        }
    }
}

#[test]
fn one_notation_for_numbers_and_the_same_block_figures_everywhere() {
    let ex = example();
    let (_, table, _) = run(&["usage", "-f", &ex]);
    // default ipv6 is a /104: 2^24 = 16,777,216 addresses, shown to three digits.
    let row = table.lines().find(|l| l.starts_with("default") && l.contains("ipv6")).unwrap();
    assert!(row.contains(" 16.8M "), "{row}");
    assert!(!table.contains("2^") && !table.contains("e+") && !table.contains("e2"), "{table}");
    // Right-aligned: every count column ends at the same place in every row.
    let header = table.lines().next().unwrap();
    let end = header.find("TOTAL").unwrap() + "TOTAL".len();
    for line in table.lines().skip(1) {
        assert_ne!(line.as_bytes()[end - 1], b' ', "TOTAL right-aligned: {line}");
        assert_eq!(line.as_bytes()[end], b' ', "{line}");
    }
    // blue: allocated / allocatable (allocated + free) in usage, inspect and the JSON.
    let doc = usage_json();
    let blue = &doc["pools"].as_array().unwrap().iter().find(|p| p["name"] == "blue").unwrap()["families"][0];
    let (allocated, free) = (blue["allocatedBlocks"].as_u64().unwrap(), blue["freeBlocks"].as_u64().unwrap());
    let blocks = format!("{allocated}/{}", allocated + free);
    assert!(table.lines().any(|l| l.starts_with("blue ") && l.split_whitespace().nth(3) == Some(&blocks)), "{blocks} in\n{table}");
    let (_, inspect, _) = run(&["inspect", "blue", "-f", &ex]);
    assert!(inspect.contains(&format!("{allocated} of {} allocatable blocks allocated", allocated + free)), "{inspect}");
    // Percentages: the same rounding rule in usage and inspect.
    let util = (allocated as f64 / (allocated + free) as f64 * 100.0).round();
    assert!(inspect.contains(&format!("allocated, {util}%")), "{inspect}");
}

#[test]
fn by_node_rows_are_per_family_and_show_blocks_lists_orphans_of_missing_pools() {
    let ex = example();
    let doc = usage_json();
    let (_, rows, _) = run(&["usage", "--by", "node", "--no-headers", "-f", &ex]);
    // Every node's dual-stack default pool: one row per family with that family's blocks.
    for node in doc["nodes"].as_array().unwrap() {
        for pool in node["pools"].as_array().unwrap() {
            for fam in pool["families"].as_array().unwrap() {
                let key = [node["name"].as_str().unwrap(), pool["pool"].as_str().unwrap(), fam["family"].as_str().unwrap()];
                let row = rows.lines().find(|l| l.split_whitespace().take(3).eq(key)).unwrap_or_else(|| panic!("no row {key:?}"));
                let cells: Vec<&str> = row.split_whitespace().collect();
                assert_eq!(cells[3], fam["blocks"].to_string(), "{row}");
            }
            // The families' blocks are exactly the node's valid blocks of the pool (no family counted twice).
            let sum: u64 = pool["families"].as_array().unwrap().iter().map(|f| f["blocks"].as_u64().unwrap()).sum();
            assert!(sum as usize <= pool["blocks"].as_array().unwrap().len());
        }
    }
    let default_v6 =
        rows.lines().filter(|l| l.split_whitespace().nth(1) == Some("default") && l.split_whitespace().nth(2) == Some("ipv6")).count();
    assert_eq!(default_v6, 36, "the dual-stack default pool has an IPv6 row on each of the 36 nodes");
    // The example's orphan: 10.99.7.0/24 under pool "legacy", which does not exist.
    let (_, blocks, _) = run(&["usage", "--show-blocks", "--no-headers", "-f", &ex]);
    assert!(blocks.lines().any(|l| l.split_whitespace().take(3).eq(["10.99.7.0/24", "legacy", "orphan"])), "{blocks}");
    assert!(rows.lines().any(|l| l.split_whitespace().nth(1) == Some("legacy") && l.ends_with("pool-missing")), "{rows}");
}

#[test]
fn inspect_json_is_the_pool_in_depth() {
    let (code, stdout, _) = run(&["inspect", "blue", "-o", "json", "-f", &example()]);
    assert_eq!(code, 0);
    let doc = json_of(&stdout);
    let pool = &doc["pools"][0];
    assert_eq!(pool["name"], "blue");
    let fam = &pool["families"][0];
    // 10.41.0.0-10.41.255.255 covers the whole /16: all 256 /24 blocks withheld.
    let drain = fam["reservations"].as_array().unwrap().iter().find(|r| r["start"] == "10.41.0.0").unwrap();
    assert_eq!(
        (drain["withheldBlocks"].as_u64(), drain["firstWithheldBlock"].as_str(), drain["lastWithheldBlock"].as_str()),
        (Some(256), Some("10.41.0.0/24"), Some("10.41.255.0/24"))
    );
    assert_eq!(drain["reservedAddresses"], 65536);
    // The gateway 10.40.255.254: one address, its block 10.40.255.0/24 withheld.
    let gateway = fam["reservations"].as_array().unwrap().iter().find(|r| r["start"] == "10.40.255.254").unwrap();
    assert_eq!((gateway["withheldBlocks"].as_u64(), gateway["firstWithheldBlock"].as_str()), (Some(1), Some("10.40.255.0/24")));
    let draining = fam["draining"].as_array().unwrap();
    assert_eq!(draining.len(), 1);
    assert_eq!(draining[0]["cidr"], "10.41.0.0/16");
    assert_eq!(draining[0]["heldBy"].as_array().unwrap().len() as u64, draining[0]["allocatedBlocks"].as_u64().unwrap());
    assert!(fam["nextBlock"].is_string() && fam["runwayNodes"].is_number(), "{fam}");
    assert!(pool["problems"].as_array().unwrap().iter().all(|p| p["pool"] == "blue"), "{pool}");
    assert!(pool["nodes"].as_array().unwrap().iter().all(|n| n["pools"].as_array().unwrap().iter().all(|p| p["pool"] == "blue")));
    assert!(doc.get("nodes").is_none(), "not the usage document");
}

#[test]
fn check_names_each_object_once_and_counts_what_severity_hides() {
    let ex = example();
    let (_, stdout, _) = run(&["check", "-o", "json", "-f", &ex]);
    let problems = json_of(&stdout)["problems"].as_array().unwrap().clone();
    let (_, names, _) = run(&["check", "-o", "name", "-f", &ex]);
    let names: Vec<&str> = names.lines().collect();
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "each object once: {names:?}");
    for name in &names {
        let (kind, _) = name.split_once('/').unwrap();
        assert!(
            ["ciliumnode.cilium.io", "ciliumpodippool.cilium.io", "customresourcedefinition.apiextensions.k8s.io", "pod", "configmap"]
                .contains(&kind),
            "{name}"
        );
    }
    assert!(names.contains(&"ciliumpodippool.cilium.io/blue"), "{names:?}");
    for (severity, shown) in [("error", ["error"].as_slice()), ("warning", &["error", "warning"])] {
        let hidden = problems.iter().filter(|p| !shown.contains(&p["severity"].as_str().unwrap())).count();
        let (_, _, notes) = run(&["check", "--severity", severity, "-f", &ex]);
        assert!(notes.contains(&format!("({hidden} below --severity not shown)")), "{severity}: {notes}");
    }
    let (_, _, wide_notes) = run(&["check", "-o", "wide", "-f", &ex]);
    assert!(!wide_notes.contains("-o wide"), "check -o wide does not suggest -o wide: {wide_notes}");
}

#[test]
fn notes_per_view() {
    let ex = example();
    for (name, args) in [
        ("notes_pools", &[][..]),
        ("notes_pools_wide", &["-o", "wide"][..]),
        ("notes_nodes", &["--by", "node"][..]),
        ("notes_blocks", &["--show-blocks"][..]),
    ] {
        let (_, _, notes) = run(&[&["usage", "-f", ex.as_str()], args].concat());
        insta::assert_snapshot!(name, notes.replace(&ex, "examples/snapshot"));
    }
}

#[test]
fn check_of_named_pools_reports_exactly_their_problems() {
    let ex = example();
    let (_, stdout, _) = run(&["check", "-o", "json", "-f", &ex]);
    let all = json_of(&stdout)["problems"].as_array().unwrap().clone();
    let pools: std::collections::BTreeSet<&str> = all.iter().filter_map(|p| p["pool"].as_str()).collect();
    assert!(
        pools.len() >= 2 && all.iter().any(|p| p.get("pool").is_none()),
        "the example has problems of several pools and cluster-wide ones"
    );
    for pool in &pools {
        let (code, stdout, stderr) = run(&["check", pool, "-o", "json", "-f", &ex]);
        let theirs: Vec<&serde_json::Value> = all.iter().filter(|p| p["pool"] == *pool).collect();
        assert_eq!(code, 1, "{pool}: problems found: {stderr}");
        let got = json_of(&stdout)["problems"].as_array().unwrap().clone();
        assert_eq!(got.iter().collect::<Vec<_>>(), theirs, "{pool}");
    }
    let two: Vec<&str> = pools.iter().take(2).copied().collect();
    let (_, stdout, _) = run(&["check", two[0], two[1], "-o", "json", "-f", &ex]);
    let expected = all.iter().filter(|p| two.iter().any(|name| p["pool"] == *name)).count();
    assert_eq!(json_of(&stdout)["problems"].as_array().unwrap().len(), expected);
    let (code, stdout, stderr) = run(&["check", "no-such-pool", "-f", &ex]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty() && stderr.starts_with("error: pool \"no-such-pool\" not found"), "{stderr}");
}

/// Issue 42: `--no-headers` into a pipe keeps the spaces of the last column (prose a script
/// `grep`s; `awk` reaches it as `$N` onwards) and every other column one word (`\x20`); on a
/// terminal a person reads it and no cell is escaped for `awk`.
#[test]
fn no_headers_keeps_the_last_columns_spaces_and_escapes_none_on_a_terminal() {
    let (code, stdout, stderr) = run(&["check", "--no-headers", "-f", &example()]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stdout.contains(r#"block 10.99.7.0/24 is listed under pool "legacy", which does not exist"#), "{stdout}");
    let ip = ["ip", "10.40.5.128", "--no-headers", "-f", &example()].map(String::from);
    let (_, stdout, _) = run(&ip.each_ref().map(String::as_str));
    let fields: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(fields[4], r"allocated\x20to\x20ip-10-0-11-70.eu-west-1.compute.internal", "{stdout}");
    assert!(stdout.contains(" pod team-blue/api-gateway-s8bsnncjnm-7m6rm on ip-10-0-11-70"), "{stdout}");
    let shown = support::cli::on_terminal(&ip, 200);
    assert!(shown.contains("allocated to ip-10") && !shown.contains(r"\x20"), "{shown}");
}

/// Issue 42: `ip` writes its `Sources:` line on stderr, as `usage` does: stdout is the table alone.
#[test]
fn ip_writes_its_sources_line_on_stderr() {
    let (code, stdout, stderr) = run(&["ip", "10.40.5.128", "-f", &example()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stdout.contains("Sources:") && stdout.lines().all(|l| !l.is_empty()), "stdout carries the table only: {stdout}");
    assert!(stderr.contains("Sources: files "), "{stderr}");
}

/// Issue 42: `usage -o json` has the derived figures the table, `-o wide` and OpenMetrics show:
/// `utilization` (the ratio), `nodesHolding` and `runwayNodes`, each family the same as its series.
#[test]
fn usage_json_has_utilization_nodes_holding_and_runway_as_openmetrics_does() {
    let doc = usage_json();
    let (code, metrics, stderr) = run(&["usage", "-o", "openmetrics", "-f", &example()]);
    assert_eq!(code, 0, "{stderr}");
    let series = |name: &str, pool: &str, family: &str| -> Option<f64> {
        let prefix = format!("{name}{{pool=\"{pool}\",family=\"{family}\"}} ");
        metrics.lines().find_map(|l| l.strip_prefix(&prefix)).map(|v| v.parse().unwrap())
    };
    let mut checked = 0;
    for pool in doc["pools"].as_array().unwrap() {
        let name = pool["name"].as_str().unwrap();
        for fam in pool["families"].as_array().unwrap() {
            let family = fam["family"].as_str().unwrap();
            let what = format!("{name} {family}: {fam}");
            let (json, exposed) = (fam["utilization"].as_f64(), series("ciliumpool_utilization_ratio", name, family));
            assert!(json.is_some() && exposed.is_some_and(|e| (e - json.unwrap()).abs() < 1e-12), "{what}: {exposed:?}");
            assert_eq!(fam["nodesHolding"].as_f64(), series("ciliumpool_nodes_holding", name, family), "{what}");
            assert_eq!(fam["runwayNodes"].as_f64(), series("ciliumpool_runway_nodes", name, family), "{what}");
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
}

/// The map's legend counts are the table's (issue 55): its free blocks, the next block among
/// them, are `usage -o json`'s freeBlocks, and its allocated blocks are allocatedBlocks, for
/// every pool and family of the example.
#[test]
fn the_map_legend_counts_what_usage_counts() {
    let example = crate::support::repo_root().join("examples/snapshot");
    let example = example.to_str().expect("a UTF-8 path");
    let (_, json, _) = run(&["usage", "-o", "json", "-f", example]);
    let doc = crate::support::cli::json_of(&json);
    let counted = regex::Regex::new(r"(allocated|free) (\d+)").expect("a pattern");
    for pool in doc["pools"].as_array().expect("pools") {
        let name = pool["name"].as_str().expect("a name");
        let (_, map, _) = run(&["usage", name, "--map", "--color", "never", "-f", example]);
        for family in pool["families"].as_array().expect("families") {
            let fam = family["family"].as_str().expect("a family");
            let part = map.split(&format!("pool {name} {fam}:")).nth(1).unwrap_or_else(|| panic!("no {name} {fam} map:\n{map}"));
            let part = part.split("\npool ").next().unwrap_or_default();
            let legend: BTreeMap<String, u64> =
                counted.captures_iter(part).map(|c| (c[1].to_string(), c[2].parse().expect("a count"))).collect();
            for (state, key) in [("allocated", "allocatedBlocks"), ("free", "freeBlocks")] {
                assert_eq!(legend.get(state).copied(), family[key].as_u64(), "{name} {fam} {state}:\n{part}");
            }
        }
    }
}
