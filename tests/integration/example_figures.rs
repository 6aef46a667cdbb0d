//! The example snapshot's figures that otherwise only insta snapshots hold — USED per block, the
//! `--by node` rows, the runway and the next block — worked out here from the example's objects
//! by plain enumeration (docs/design/cilium.md#blocks, #used-addresses, #figures), never through
//! the crate's allocator, then compared with `usage -o json` and, for what the JSON does not carry
//! (per-block use, runway), with the library's report. The objects are read straight from
//! examples/snapshot with a YAML parser; examples/generate.py writes them.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;

fn snapshot_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot")
}

/// Every object of every file of the example, Lists unpacked.
fn objects() -> Vec<Value> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(snapshot_dir()).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let docs: Vec<Value> = if path.extension().is_some_and(|e| e == "json") {
            vec![serde_json::from_str(&text).unwrap()]
        } else {
            text.split("\n---\n").filter(|d| !d.trim().is_empty()).map(|d| serde_saphyr::from_str(d).unwrap()).collect()
        };
        for doc in docs {
            match doc["items"].as_array() {
                Some(items) => out.extend(items.iter().cloned()),
                None => out.push(doc),
            }
        }
    }
    out
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn addr(text: &str) -> (u8, u128) {
    match text.parse::<IpAddr>().unwrap_or_else(|_| panic!("{text:?} is an address")) {
        IpAddr::V4(a) => (4, u128::from(u32::from(a))),
        IpAddr::V6(a) => (6, u128::from(a)),
    }
}

/// (family, first, last, length) of a CIDR.
fn cidr(text: &str) -> (u8, u128, u128, u32) {
    let (a, len) = text.split_once('/').unwrap();
    let (fam, value) = addr(a);
    let len: u32 = len.parse().unwrap();
    let bits = if fam == 4 { 32 } else { 128 };
    let size = 1u128 << (bits - len);
    let first = value - value % size;
    (fam, first, first + (size - 1), len)
}

/// Distinct addresses in use: running pod-network pods, endpoints, node infrastructure.
fn in_use(objects: &[Value]) -> BTreeSet<(u8, u128)> {
    let mut ips = BTreeSet::new();
    for pod in of_kind(objects, "Pod") {
        let phase = pod["status"]["phase"].as_str().unwrap_or_default();
        if pod["spec"]["hostNetwork"] == true || phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        for ip in pod["status"]["podIPs"].as_array().into_iter().flatten() {
            ips.insert(addr(ip["ip"].as_str().unwrap()));
        }
    }
    for ep in of_kind(objects, "CiliumEndpoint") {
        for pair in ep["status"]["networking"]["addressing"].as_array().into_iter().flatten() {
            for fam in ["ipv4", "ipv6"] {
                if let Some(ip) = pair[fam].as_str() {
                    ips.insert(addr(ip));
                }
            }
        }
    }
    for node in of_kind(objects, "CiliumNode") {
        for a in node["spec"]["addresses"].as_array().into_iter().flatten().filter(|a| a["type"] == "CiliumInternalIP") {
            ips.insert(addr(a["ip"].as_str().unwrap()));
        }
        for field in ["health", "ingress"] {
            for fam in ["ipv4", "ipv6"] {
                if let Some(ip) = node["spec"][field][fam].as_str() {
                    ips.insert(addr(ip));
                }
            }
        }
    }
    ips
}

fn used_in(in_use: &BTreeSet<(u8, u128)>, block: &str) -> u64 {
    let (fam, first, last, _) = cidr(block);
    in_use.iter().filter(|&&(f, a)| f == fam && first <= a && a <= last).count() as u64
}

/// A pool family: CIDRs in spec order with their valid reserved ranges, and the mask.
struct PoolFamily {
    mask: u32,
    cidrs: Vec<(String, Vec<(u128, u128)>)>,
}

/// The pools' families as all three dialects write them (v2alpha1: no reservations; CFP:
/// `cidrs[].reservedRange`; upstream: `pool[].reservedRanges` matched by the CIDR string).
fn pool_families(objects: &[Value]) -> BTreeMap<(String, &'static str), PoolFamily> {
    let mut out = BTreeMap::new();
    for pool in of_kind(objects, "CiliumPodIPPool") {
        let name = pool["metadata"]["name"].as_str().unwrap().to_string();
        for fam in ["ipv4", "ipv6"] {
            let spec = &pool["spec"][fam];
            let Some(list) = spec["cidrs"].as_array() else { continue };
            let mut cidrs = Vec::new();
            for c in list {
                let text = c.as_str().or(c["cidr"].as_str()).unwrap().to_string();
                let mut ranges = Vec::new();
                if let Some((a, b)) = c["reservedRange"].as_str().and_then(|r| r.split_once('-')) {
                    ranges.push((addr(a).1, addr(b).1));
                }
                for entry in spec["pool"].as_array().into_iter().flatten().filter(|e| e["cidr"] == text.as_str()) {
                    for r in entry["reservedRanges"].as_array().into_iter().flatten() {
                        ranges.push((addr(r["start"].as_str().unwrap()).1, addr(r["end"].as_str().unwrap()).1));
                    }
                }
                cidrs.push((text, ranges));
            }
            out.insert((name.clone(), fam), PoolFamily { mask: spec["maskSize"].as_u64().unwrap() as u32, cidrs });
        }
    }
    out
}

/// (node, pool, block) for every block the nodes list.
fn listed(objects: &[Value]) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for node in of_kind(objects, "CiliumNode") {
        let name = node["metadata"]["name"].as_str().unwrap();
        for entry in node["spec"]["ipam"]["pools"]["allocated"].as_array().into_iter().flatten() {
            for block in entry["cidrs"].as_array().into_iter().flatten() {
                out.push((name.to_string(), entry["pool"].as_str().unwrap().to_string(), block.as_str().unwrap().to_string()));
            }
        }
    }
    out
}

fn family_name(fam: u8) -> &'static str {
    if fam == 4 { "ipv4" } else { "ipv6" }
}

struct Expected {
    next_block: Option<String>,
    free_blocks: u128,
    runway: u128,
}

/// Per pool family: walk every block of every CIDR in order.
fn expected_figures(objects: &[Value]) -> BTreeMap<(String, &'static str), Expected> {
    let listed = listed(objects);
    let mut out = BTreeMap::new();
    for ((pool, fam), family) in pool_families(objects) {
        let bits = if fam == "ipv4" { 32 } else { 128 };
        let block_size = 1u128 << (bits - family.mask);
        let mine: Vec<&(String, String, String)> = listed.iter().filter(|(_, p, b)| *p == pool && family_name(cidr(b).0) == fam).collect();
        let held: BTreeSet<u128> = mine.iter().map(|(_, _, b)| cidr(b).1).collect();
        let (mut next_block, mut free_blocks) = (None, 0u128);
        let mut in_cidrs: BTreeMap<&str, u128> = BTreeMap::new();
        for (text, ranges) in &family.cidrs {
            let (_, first, last, _) = cidr(text);
            let mut start = first;
            loop {
                let end = start + (block_size - 1);
                let reserved = ranges.iter().any(|&(a, b)| a <= end && start <= b);
                if !held.contains(&start) && !reserved {
                    free_blocks += 1;
                    let network = if fam == "ipv4" {
                        std::net::Ipv4Addr::from(start as u32).to_string()
                    } else {
                        std::net::Ipv6Addr::from(start).to_string()
                    };
                    next_block.get_or_insert(format!("{network}/{}", family.mask));
                }
                if held.contains(&start) {
                    for (node, _, _) in mine.iter().filter(|(_, _, b)| cidr(b).1 == start) {
                        *in_cidrs.entry(node.as_str()).or_default() += 1;
                    }
                }
                if end == last {
                    break;
                }
                start = end + 1;
            }
        }
        let mut per_node: Vec<u128> = in_cidrs.values().copied().collect();
        per_node.sort();
        let median_up = match per_node.len() {
            0 => 1,
            n if n % 2 == 1 => per_node[n / 2],
            n => (per_node[n / 2 - 1] + per_node[n / 2]).div_ceil(2),
        };
        out.insert((pool, fam), Expected { next_block, free_blocks, runway: free_blocks / median_up.max(1) });
    }
    out
}

fn usage_json() -> Value {
    let out = cargo_bin_cmd!("kubectl-ciliumpool").args(["usage", "-o", "json", "-f"]).arg(snapshot_dir()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn report() -> ciliumpool::allocator::Report {
    let snapshot = ciliumpool::files::snapshot(
        &[snapshot_dir().display().to_string()],
        None,
        false,
        ciliumpool::files::Pools::Read,
        ciliumpool::files::Limits::default(),
    )
    .unwrap();
    ciliumpool::allocator::analyze(&snapshot)
}

#[test]
fn used_per_block_is_the_addresses_in_use_inside_it() {
    let objects = objects();
    let in_use = in_use(&objects);
    let mut expected: BTreeMap<String, (BTreeSet<String>, u64)> = BTreeMap::new();
    for (node, _, block) in listed(&objects) {
        expected.entry(block.clone()).or_insert_with(|| (BTreeSet::new(), used_in(&in_use, &block))).0.insert(node);
    }
    let mut actual: BTreeMap<String, (BTreeSet<String>, u64)> = BTreeMap::new();
    for pool in &report().pools {
        for fam in &pool.families {
            for held in fam.cidrs.iter().flat_map(|c| c.allocated.iter()).chain(&fam.orphans) {
                let used = held.used.to_u64().unwrap();
                actual.insert(held.prefix.to_string(), (held.node_names().into_iter().collect(), used));
            }
        }
    }
    // The legacy pool was deleted: its block is listed under no pool the report has.
    let legacy = expected.remove("10.99.7.0/24").expect("the example keeps the deleted legacy pool's block");
    assert_eq!(legacy.1, 1, "one pod of the deleted pool still runs in its block (10.99.7.193, pod and endpoint)");
    assert_eq!(actual, expected);
    assert!(expected.len() > 100 && expected.values().any(|(_, used)| *used > 20), "the example has many blocks, some busy");
}

#[test]
fn by_node_rows_are_each_nodes_blocks_use_and_request() {
    let objects = objects();
    let in_use = in_use(&objects);
    let json = usage_json();
    let rows: BTreeMap<&str, &Value> = json["nodes"].as_array().unwrap().iter().map(|n| (n["name"].as_str().unwrap(), n)).collect();
    let nodes = of_kind(&objects, "CiliumNode");
    assert_eq!(rows.len(), nodes.len());
    for node in nodes {
        let name = node["metadata"]["name"].as_str().unwrap();
        let pools = &node["spec"]["ipam"]["pools"];
        let mut want = Vec::new();
        for entry in pools["allocated"].as_array().into_iter().flatten() {
            let blocks: Vec<&str> = entry["cidrs"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
            let used: u64 = blocks.iter().map(|b| used_in(&in_use, b)).sum();
            let request = pools["requested"].as_array().into_iter().flatten().find(|r| r["pool"] == entry["pool"]);
            let needed = |key: &str| request.and_then(|r| r["needed"][key].as_u64()).unwrap_or(0);
            want.push(serde_json::json!({
                "pool": entry["pool"], "blocks": blocks, "usedAddresses": used,
                "neededAddresses": {"ipv4": needed("ipv4-addrs"), "ipv6": needed("ipv6-addrs")},
            }));
        }
        let requested_only = pools["requested"].as_array().into_iter().flatten().filter(|r| !want.iter().any(|w| w["pool"] == r["pool"]));
        assert_eq!(requested_only.count(), 0, "{name}: every pool the example's nodes request is also allocated");
        // Only the fields worked out here (rows carry more, e.g. per-family detail).
        let keys = ["pool", "blocks", "usedAddresses", "neededAddresses"];
        let got: Vec<Value> =
            rows[name]["pools"].as_array().unwrap().iter().map(|r| keys.iter().map(|k| (k.to_string(), r[*k].clone())).collect()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn next_block_and_runway_follow_from_the_free_blocks() {
    let objects = objects();
    let expected = expected_figures(&objects);
    let json = usage_json();
    let report = report();
    let mut checked = 0;
    for pool in json["pools"].as_array().unwrap() {
        let name = pool["name"].as_str().unwrap();
        for fam in pool["families"].as_array().unwrap() {
            let family = fam["family"].as_str().unwrap();
            let want = &expected[&(name.to_string(), if family == "ipv4" { "ipv4" } else { "ipv6" })];
            assert_eq!(fam["freeBlocks"].as_u64().map(u128::from), Some(want.free_blocks), "{name}/{family} freeBlocks");
            assert_eq!(fam["nextBlock"].as_str(), want.next_block.as_deref(), "{name}/{family} nextBlock");
            let ours = report.pool(name).and_then(|p| p.families.iter().find(|f| f.family.name() == family)).unwrap();
            assert_eq!(ours.runway_nodes.and_then(|r| r.to_u128()), Some(want.runway), "{name}/{family} runway");
            checked += 1;
        }
    }
    assert_eq!(checked, 6, "four pools, two of them dual-stack");
    // Anchors from the example's story (examples/README.md): blue's 10.41.0.0/16 is drained by a
    // whole-CIDR reservation, 10.40.255.0/24 is withheld by the gateway's, so blue hands out
    // from 10.40 only.
    assert!(expected[&("blue".to_string(), "ipv4")].next_block.as_deref().is_some_and(|b| b.starts_with("10.40.")));
}
