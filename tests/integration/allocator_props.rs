//! Properties of the embedded allocator, through the library API on random snapshots: block
//! states partition capacity; a new node's block is allocated exactly once (and taken from the
//! free or, under a reservation, the withheld blocks); a new address in a block is used exactly
//! once (not twice for two pods, not for host-network or finished pods); a reservation only ever
//! turns free blocks into withheld ones; input order does not matter; IPv4 and IPv6 never mix;
//! and exact IPv6 counts far beyond what could be enumerated. Figures are read from the
//! serialized report, i.e. the JSON contract. Each property runs under the regression seeds and
//! one fresh seed per run; a failure prints its seed (`ALLOCATOR_PROPS_SEED=<n>` reruns it).

use ciliumpool::allocator::analyze;
use ciliumpool::model::{Addr, Dialect, Family, Prefix, Snapshot};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Seeds that once found a bug or that earlier runs used: every run replays them.
const REGRESSION_SEEDS: [u64; 2] = [0x00C1_11A0_0001, 0x0D15_EA5E_0002];

/// The regression seeds and one fresh seed per run; `ALLOCATOR_PROPS_SEED=<n>` runs only `n`.
fn seeds() -> Vec<u64> {
    if let Ok(one) = std::env::var("ALLOCATOR_PROPS_SEED") {
        return vec![one.parse().expect("ALLOCATOR_PROPS_SEED is a u64")];
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock after 1970");
    let fresh = (now.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32);
    REGRESSION_SEEDS.iter().copied().chain([fresh]).collect()
}

/// Runs `test` on values of `strategy` under every seed; a failure names its seed and how to rerun it.
fn check<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    for seed in seeds() {
        let config = Config { cases: 48, rng_seed: RngSeed::Fixed(seed), failure_persistence: None, ..Config::default() };
        if let Err(failure) = TestRunner::new(config).run(&strategy, &test) {
            panic!(
                "{name} fails with seed {seed} (rerun: ALLOCATOR_PROPS_SEED={seed} cargo test --test integration allocator_props:: {name}):\n{failure}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios: indices and offsets that `objects` turns into a consistent set of objects.

/// A reserved range as offsets into one of the family's CIDRs; always a valid range.
#[derive(Clone, Debug)]
struct RangeSpec {
    cidr: usize,
    start: u64,
    span: u64,
}

#[derive(Clone, Debug)]
struct FamilySpec {
    family: Family,
    /// IPv6 only: put the CIDRs at `::10.x.y.z`, the very integers of the IPv4 CIDRs, so that
    /// any mixing of the families shows.
    like_ipv4: bool,
    mask: u8,
    cidr_lens: Vec<u8>,
    ranges: Vec<RangeSpec>,
}

#[derive(Clone, Debug)]
struct PoolSpec {
    dialect: Dialect,
    families: Vec<FamilySpec>,
    allow_first: bool,
    allow_last: bool,
    v2alpha1_copy: bool,
}

#[derive(Clone, Copy, Debug)]
enum Place {
    InCidr,
    /// Outside the pool's CIDRs.
    Orphan,
    /// Under a pool that does not exist.
    Ghost,
}

#[derive(Clone, Debug)]
struct BlockSpec {
    pool: usize,
    ipv6: bool,
    cidr: usize,
    index: u64,
    place: Place,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    ListedBlock,
    PoolCidr,
    Outside,
}

#[derive(Clone, Debug)]
struct IpSpec {
    ipv6: bool,
    target: Target,
    pick: usize,
    offset: u64,
}

#[derive(Clone, Debug)]
struct NodeSpec {
    blocks: Vec<BlockSpec>,
    infrastructure: Vec<IpSpec>,
}

#[derive(Clone, Debug)]
struct PodSpec {
    ips: Vec<IpSpec>,
    host_network: bool,
    completed: bool,
}

#[derive(Clone, Debug)]
struct Scenario {
    pools: Vec<PoolSpec>,
    nodes: Vec<NodeSpec>,
    pods: Vec<PodSpec>,
    endpoints: Vec<Vec<IpSpec>>,
}

fn range_spec() -> impl Strategy<Value = RangeSpec> {
    (0usize..3, any::<u64>(), 0u64..600).prop_map(|(cidr, start, span)| RangeSpec { cidr, start, span })
}

/// Small CIDRs (at most 4096 addresses, at most 256 blocks) so that many fit side by side.
fn family_spec(family: Family) -> impl Strategy<Value = FamilySpec> {
    let (masks, shortest, longest) = match family {
        Family::Ipv4 => (22u8..=32, 20u8, 26u8),
        Family::Ipv6 => (118u8..=128, 116u8, 126u8),
    };
    masks.prop_flat_map(move |mask| {
        let lens = shortest.max(mask - 8)..=longest.min(mask);
        (vec(lens, 1..=3), vec(range_spec(), 0..4), any::<bool>()).prop_map(move |(cidr_lens, ranges, like_ipv4)| FamilySpec {
            family,
            like_ipv4,
            mask,
            cidr_lens,
            ranges,
        })
    })
}

fn pool_spec() -> impl Strategy<Value = PoolSpec> {
    let families = prop_oneof![
        (family_spec(Family::Ipv4), family_spec(Family::Ipv6)).prop_map(|(a, b)| vec![a, b]),
        family_spec(Family::Ipv4).prop_map(|a| vec![a]),
        family_spec(Family::Ipv6).prop_map(|b| vec![b]),
    ];
    let dialect = prop_oneof![Just(Dialect::V2alpha1), Just(Dialect::UpstreamV2), Just(Dialect::CfpV2)];
    (dialect, families, any::<bool>(), any::<bool>(), prop::bool::weighted(0.2)).prop_map(
        |(dialect, families, allow_first, allow_last, copy)| PoolSpec {
            dialect,
            families,
            allow_first,
            allow_last,
            v2alpha1_copy: copy && dialect != Dialect::V2alpha1,
        },
    )
}

fn block_spec() -> impl Strategy<Value = BlockSpec> {
    let place = prop_oneof![8 => Just(Place::InCidr), 1 => Just(Place::Orphan), 1 => Just(Place::Ghost)];
    (0usize..4, any::<bool>(), 0usize..3, 0u64..64, place).prop_map(|(pool, ipv6, cidr, index, place)| BlockSpec {
        pool,
        ipv6,
        cidr,
        index,
        place,
    })
}

fn ip_spec() -> impl Strategy<Value = IpSpec> {
    let target = prop_oneof![6 => Just(Target::ListedBlock), 2 => Just(Target::PoolCidr), 1 => Just(Target::Outside)];
    (any::<bool>(), target, 0usize..64, any::<u64>()).prop_map(|(ipv6, target, pick, offset)| IpSpec { ipv6, target, pick, offset })
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let node = (vec(block_spec(), 0..8), vec(ip_spec(), 0..3)).prop_map(|(blocks, infrastructure)| NodeSpec { blocks, infrastructure });
    let pod = (vec(ip_spec(), 0..3), prop::bool::weighted(0.15), prop::bool::weighted(0.15))
        .prop_map(|(ips, host_network, completed)| PodSpec { ips, host_network, completed });
    (vec(pool_spec(), 1..4), vec(node, 0..5), vec(pod, 0..16), vec(vec(ip_spec(), 1..3), 0..8))
        .prop_map(|(pools, nodes, pods, endpoints)| Scenario { pools, nodes, pods, endpoints })
}

// ---------------------------------------------------------------------------------------------
// From a scenario to Kubernetes objects. Every CIDR gets its own 4096-address slot, so pools
// never overlap; orphan and ghost blocks live in slots no pool uses.

fn slot(family: Family, like_ipv4: bool, n: usize) -> u128 {
    let base: u128 = match family {
        Family::Ipv6 if !like_ipv4 => 0xfd00 << 112,
        _ => 0x0A00_0000,
    };
    base + ((n as u128) << 12)
}

fn size(family: Family, len: u8) -> u128 {
    1u128 << (family.bits() - len)
}

fn cidr(pool: usize, spec: &FamilySpec, c: usize) -> Prefix {
    Prefix { family: spec.family, network: slot(spec.family, spec.like_ipv4, pool * 4 + c), len: spec.cidr_lens[c] }
}

fn addr(family: Family, value: u128) -> String {
    Addr { family, value }.to_string()
}

fn pool_name(p: usize) -> String {
    format!("pool-{p}")
}

/// The pool's family a block or range spec refers to: the one asked for when the pool has it.
fn family_of(pool: &PoolSpec, ipv6: bool) -> &FamilySpec {
    let wanted = if ipv6 { Family::Ipv6 } else { Family::Ipv4 };
    pool.families.iter().find(|f| f.family == wanted).unwrap_or(&pool.families[0])
}

fn range_bounds(pool: usize, spec: &FamilySpec, range: &RangeSpec) -> (String, String) {
    let c = range.cidr % spec.cidr_lens.len();
    let prefix = cidr(pool, spec, c);
    let start = prefix.first() + u128::from(range.start) % size(spec.family, prefix.len);
    let end = (start + u128::from(range.span)).min(prefix.last());
    (addr(spec.family, start), addr(spec.family, end))
}

fn pool_object(p: usize, pool: &PoolSpec, dialect: Dialect) -> Value {
    let mut spec = json!({"allowFirstIP": pool.allow_first, "allowLastIP": pool.allow_last});
    for fam in &pool.families {
        let cidrs: Vec<String> = (0..fam.cidr_lens.len()).map(|c| cidr(p, fam, c).to_string()).collect();
        let mut ranges: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for range in &fam.ranges {
            ranges.entry(cidrs[range.cidr % cidrs.len()].clone()).or_default().push(range_bounds(p, fam, range));
        }
        let mut body = json!({"maskSize": fam.mask, "cidrs": cidrs});
        match dialect {
            Dialect::V2alpha1 => {}
            Dialect::UpstreamV2 => {
                let entries: Vec<Value> = ranges
                    .iter()
                    .map(|(c, list)| json!({"cidr": c, "reservedRanges": list.iter().map(|(s, e)| json!({"start": s, "end": e})).collect::<Vec<_>>()}))
                    .collect();
                body["pool"] = json!(entries);
            }
            Dialect::CfpV2 => {
                // One range per CIDR in this dialect: the first one.
                body["cidrs"] = cidrs
                    .iter()
                    .map(|c| match ranges.get(c).and_then(|list| list.first()) {
                        Some((s, e)) => json!({"cidr": c, "reservedRange": format!("{s}-{e}")}),
                        None => json!({"cidr": c}),
                    })
                    .collect();
            }
        }
        spec[fam.family.name()] = body;
    }
    let api_version = if dialect == Dialect::V2alpha1 { "cilium.io/v2alpha1" } else { "cilium.io/v2" };
    json!({"apiVersion": api_version, "kind": "CiliumPodIPPool", "metadata": {"name": pool_name(p)}, "spec": spec})
}

/// Where a block spec lands: (pool name it is listed under, block).
fn block(scenario: &Scenario, b: &BlockSpec) -> (String, Prefix) {
    let p = b.pool % scenario.pools.len();
    let fam = family_of(&scenario.pools[p], b.ipv6);
    let block_size = size(fam.family, fam.mask);
    let at = |n: usize, index: u64| Prefix {
        family: fam.family,
        network: slot(fam.family, fam.like_ipv4, n) + (u128::from(index) * block_size) % 4096,
        len: fam.mask,
    };
    match b.place {
        Place::InCidr => {
            let c = b.cidr % fam.cidr_lens.len();
            let prefix = cidr(p, fam, c);
            let count = size(fam.family, prefix.len) / block_size;
            let network = prefix.first() + (u128::from(b.index) % count) * block_size;
            (pool_name(p), Prefix { family: fam.family, network, len: fam.mask })
        }
        Place::Orphan => (pool_name(p), at(p * 4 + 3, b.index)),
        Place::Ghost => ("ghost".to_string(), at(100 + b.cidr, b.index)),
    }
}

fn ip(scenario: &Scenario, listed: &[Prefix], spec: &IpSpec) -> String {
    let family = if spec.ipv6 { Family::Ipv6 } else { Family::Ipv4 };
    let pool_cidrs: Vec<Prefix> = scenario
        .pools
        .iter()
        .enumerate()
        .flat_map(|(p, pool)| pool.families.iter().flat_map(move |f| (0..f.cidr_lens.len()).map(move |c| cidr(p, f, c))))
        .filter(|c| c.family == family)
        .collect();
    let blocks: Vec<Prefix> = listed.iter().copied().filter(|b| b.family == family).collect();
    let candidates = match spec.target {
        Target::ListedBlock => blocks,
        Target::PoolCidr => pool_cidrs,
        Target::Outside => Vec::new(),
    };
    match candidates.get(spec.pick % candidates.len().max(1)) {
        Some(prefix) => addr(family, prefix.first() + u128::from(spec.offset) % size(family, prefix.len)),
        None => addr(family, slot(family, false, 300) + u128::from(spec.offset % 4096)),
    }
}

fn objects(scenario: &Scenario) -> Vec<Value> {
    let mut objects = Vec::new();
    for (p, pool) in scenario.pools.iter().enumerate() {
        objects.push(pool_object(p, pool, pool.dialect));
        if pool.v2alpha1_copy {
            objects.push(pool_object(p, pool, Dialect::V2alpha1));
        }
    }
    let listed: Vec<Vec<(String, Prefix)>> = scenario.nodes.iter().map(|n| n.blocks.iter().map(|b| block(scenario, b)).collect()).collect();
    let all_listed: Vec<Prefix> = listed.iter().flatten().map(|(_, prefix)| *prefix).collect();
    for (i, node) in scenario.nodes.iter().enumerate() {
        let mut allocated: Vec<(String, Vec<String>)> = Vec::new();
        for (pool, prefix) in &listed[i] {
            match allocated.iter_mut().find(|(name, _)| name == pool) {
                Some((_, blocks)) => blocks.push(prefix.to_string()),
                None => allocated.push((pool.clone(), vec![prefix.to_string()])),
            }
        }
        let allocated: Vec<Value> = allocated.into_iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect();
        let addresses: Vec<Value> =
            node.infrastructure.iter().map(|s| json!({"type": "CiliumInternalIP", "ip": ip(scenario, &all_listed, s)})).collect();
        objects.push(json!({
            "apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": format!("node-{i}")},
            "spec": {"addresses": addresses, "ipam": {"pools": {"allocated": allocated}}},
        }));
    }
    for (i, pod) in scenario.pods.iter().enumerate() {
        let ips: Vec<Value> = pod.ips.iter().map(|s| json!({"ip": ip(scenario, &all_listed, s)})).collect();
        objects.push(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("pod-{i}"), "namespace": "default"},
            "spec": {"nodeName": "node-0", "hostNetwork": pod.host_network},
            "status": {"phase": if pod.completed { "Succeeded" } else { "Running" }, "podIPs": ips},
        }));
    }
    for (i, addressing) in scenario.endpoints.iter().enumerate() {
        let addressing: Vec<Value> =
            addressing.iter().map(|s| json!({(if s.ipv6 { "ipv6" } else { "ipv4" }): ip(scenario, &all_listed, s)})).collect();
        objects.push(json!({
            "apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": format!("ep-{i}"), "namespace": "default"},
            "status": {"networking": {"addressing": addressing}},
        }));
    }
    objects
}

// ---------------------------------------------------------------------------------------------
// Reading the report.

fn report(objects: Vec<Value>) -> Value {
    serde_json::to_value(analyze(&Snapshot::from_objects(objects))).expect("the report serializes")
}

/// A count of the JSON contract: an integer when it fits in u64, else a decimal string.
fn count(value: &Value) -> u128 {
    match value {
        Value::Number(n) => u128::from(n.as_u64().unwrap_or_else(|| panic!("{n} is not a u64 count"))),
        Value::String(s) => {
            let n: u128 = s.parse().unwrap_or_else(|_| panic!("{s:?} is not a decimal count"));
            assert!(n > u128::from(u64::MAX), "{s:?} fits in u64 and must be a JSON integer");
            n
        }
        other => panic!("{other} is not a count"),
    }
}

/// Family rows keyed by (pool, family).
fn rows(report: &Value) -> BTreeMap<(String, String), Value> {
    let mut rows = BTreeMap::new();
    for pool in report["pools"].as_array().expect("pools") {
        for family in pool["families"].as_array().expect("families") {
            let key = (pool["name"].as_str().unwrap().to_string(), family["family"].as_str().unwrap().to_string());
            rows.insert(key, family.clone());
        }
    }
    rows
}

const BLOCK_FIELDS: [&str; 4] = ["capacityBlocks", "allocatedBlocks", "withheldBlocks", "freeBlocks"];

/// The block figures of a family row and of each of its CIDRs.
fn block_figures(row: &Value) -> Vec<(String, [u128; 4])> {
    let figures = |v: &Value| BLOCK_FIELDS.map(|f| count(&v[f]));
    let mut out = vec![("family".to_string(), figures(row))];
    for c in row["cidrs"].as_array().expect("cidrs") {
        out.push((c["cidr"].as_str().unwrap().to_string(), figures(c)));
    }
    out
}

/// Keeps only what belongs to `family`: pool families, listed blocks and every address.
fn only_family(objects: &[Value], family: Family) -> Vec<Value> {
    let other = if family == Family::Ipv4 { Family::Ipv6 } else { Family::Ipv4 };
    let keep_ip = |v: &Value| v.as_str().and_then(Addr::parse).is_some_and(|a| a.family == family);
    objects
        .iter()
        .cloned()
        .map(|mut obj| {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove(other.name());
            }
            for allocation in obj.pointer_mut("/spec/ipam/pools/allocated").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(cidrs) = allocation["cidrs"].as_array_mut() {
                    cidrs.retain(|c| c.as_str().and_then(Prefix::parse).is_some_and(|p| p.family == family));
                }
            }
            if let Some(addresses) = obj.pointer_mut("/spec/addresses").and_then(Value::as_array_mut) {
                addresses.retain(|a| keep_ip(&a["ip"]));
            }
            if let Some(ips) = obj.pointer_mut("/status/podIPs").and_then(Value::as_array_mut) {
                ips.retain(|a| keep_ip(&a["ip"]));
            }
            for pair in obj.pointer_mut("/status/networking/addressing").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(pair) = pair.as_object_mut() {
                    pair.remove(other.name());
                }
            }
            obj
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Properties.

/// Whether the block `prefix` of pool `p` touches a reserved range that counts in that pool's
/// dialect (all ranges upstream, the first per CIDR in CFP, none in v2alpha1).
fn reserved(scenario: &Scenario, p: usize, fam: &FamilySpec, prefix: &Prefix) -> bool {
    let pool = &scenario.pools[p];
    let mut seen_cidrs = Vec::new();
    fam.ranges.iter().any(|range| {
        let c = range.cidr % fam.cidr_lens.len();
        let first_of_cidr = !seen_cidrs.contains(&c);
        seen_cidrs.push(c);
        let counts = match pool.dialect {
            Dialect::V2alpha1 => false,
            Dialect::CfpV2 => first_of_cidr,
            Dialect::UpstreamV2 => true,
        };
        let (start, end) = range_bounds(p, fam, range);
        let (start, end) = (Addr::parse(&start).unwrap().value, Addr::parse(&end).unwrap().value);
        counts && start <= prefix.last() && prefix.first() <= end
    })
}

fn figure(row: &Value, field: &str) -> u128 {
    count(&row[field])
}

/// Every string anywhere in the objects (to pick an address nothing uses yet).
fn strings(value: &Value, out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn running_pod(name: &str, node: &str, ip: &str, host_network: bool, phase: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "props"},
           "spec": {"nodeName": node, "hostNetwork": host_network}, "status": {"phase": phase, "podIPs": [{"ip": ip}]}})
}

fn node_row<'a>(report: &'a Value, node: &str, pool: &str) -> Option<&'a Value> {
    report["nodes"].as_array()?.iter().find(|n| n["name"] == node)?["pools"].as_array()?.iter().find(|p| p["pool"] == pool)
}

/// Every block of a CIDR is exactly one of allocated, withheld or free; a family's figures
/// are the sums over its CIDRs; addresses follow blocks at one usable size per block.
#[test]
fn block_states_partition_capacity() {
    check("block_states_partition_capacity", scenario(), |scenario| {
        let report = report(objects(&scenario));
        let rows = rows(&report);
        prop_assert!(!rows.is_empty());
        for ((pool, family), row) in &rows {
            let figures = block_figures(row);
            for (what, [capacity, allocated, withheld, free]) in &figures {
                prop_assert_eq!(allocated + withheld + free, *capacity, "{} {} {}", pool, family, what);
            }
            for i in 0..4 {
                let over_cidrs: u128 = figures[1..].iter().map(|(_, f)| f[i]).sum();
                prop_assert_eq!(over_cidrs, figures[0].1[i], "{} {} {} summed over CIDRs", pool, family, BLOCK_FIELDS[i]);
            }
            let [_, allocated, _, free] = figures[0].1;
            let (allocated_addresses, free_addresses) = (count(&row["allocatedAddresses"]), count(&row["freeAddresses"]));
            prop_assert_eq!(allocated_addresses * free, free_addresses * allocated, "{} {}: one usable size per block", pool, family);
            let used = count(&row["usedAddresses"]);
            prop_assert_eq!(count(&row["idleAddresses"]), allocated_addresses.saturating_sub(used), "{} {} idle", pool, family);
        }
        Ok(())
    });
}

/// A node joining with one block of a pool's CIDR: if no node listed that block before, the
/// pool family gains exactly one allocated block, taken from the free blocks — or from the
/// withheld ones when a counting reservation touches it — and nothing else in the report moves
/// but the new node's row; if some node listed it already, no figure moves.
#[test]
fn a_new_nodes_block_is_allocated_exactly_once() {
    let added = (any::<usize>(), any::<bool>(), 0usize..3, 0u64..64);
    check("a_new_nodes_block_is_allocated_exactly_once", (scenario(), added), |(scenario, (which, ipv6, cidr, index))| {
        let p = which % scenario.pools.len();
        let fam = family_of(&scenario.pools[p], ipv6).clone();
        let (_, prefix) = block(&scenario, &BlockSpec { pool: p, ipv6, cidr, index, place: Place::InCidr });
        let already =
            scenario.nodes.iter().flat_map(|n| &n.blocks).map(|b| block(&scenario, b)).any(|(pool, b)| pool == pool_name(p) && b == prefix);
        let before_objects = objects(&scenario);
        let mut after_objects = before_objects.clone();
        after_objects.push(json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "node-new"},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": pool_name(p), "cidrs": [prefix.to_string()]}]}}}}));
        let (before, after) = (report(before_objects), report(after_objects));
        let key = (pool_name(p), fam.family.name().to_string());
        let (rows_before, rows_after) = (rows(&before), rows(&after));
        for (other, row) in &rows_before {
            if *other != key {
                prop_assert_eq!(row, &rows_after[other], "{:?} moved", other);
            }
        }
        let (b, a) = (&rows_before[&key], &rows_after[&key]);
        let gained = u128::from(!already);
        let was_withheld = !already && reserved(&scenario, p, &fam, &prefix);
        prop_assert_eq!(figure(a, "capacityBlocks"), figure(b, "capacityBlocks"));
        prop_assert_eq!(
            figure(a, "allocatedBlocks"),
            figure(b, "allocatedBlocks") + gained,
            "{} {}",
            prefix,
            if already { "was listed" } else { "was not listed" }
        );
        prop_assert_eq!(figure(a, "withheldBlocks") + u128::from(was_withheld), figure(b, "withheldBlocks"), "{}", prefix);
        prop_assert_eq!(figure(a, "freeBlocks") + gained - u128::from(was_withheld), figure(b, "freeBlocks"), "{}", prefix);
        prop_assert_eq!(figure(a, "orphanBlocks"), figure(b, "orphanBlocks"));
        let row = node_row(&after, "node-new", &pool_name(p));
        prop_assert_eq!(row.map(|r| r["blocks"].clone()), Some(json!([prefix.to_string()])));
        prop_assert_eq!(
            &before["nodes"],
            &json!(after["nodes"].as_array().unwrap().iter().filter(|n| n["name"] != "node-new").cloned().collect::<Vec<_>>())
        );
        Ok(())
    });
}

/// A running pod with an address nothing used yet, inside a block a node lists under a pool
/// (in its CIDRs): that pool family and that node's row count exactly one more used address.
/// A second pod with the same address, a host-network pod or a finished one count for nothing.
#[test]
fn a_new_address_in_a_block_is_used_exactly_once() {
    check("a_new_address_in_a_block_is_used_exactly_once", (scenario(), any::<usize>(), any::<u64>()), |(scenario, pick, offset)| {
        let listed: Vec<(usize, String, Prefix)> = scenario
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.blocks.iter().filter(|b| matches!(b.place, Place::InCidr)).map(move |b| (i, b)))
            .map(|(i, b)| {
                let (pool, prefix) = block(&scenario, b);
                (i, pool, prefix)
            })
            .collect();
        prop_assume!(!listed.is_empty());
        let (node, pool, prefix) = listed[pick % listed.len()].clone();
        let objects = objects(&scenario);
        let mut taken = std::collections::BTreeSet::new();
        objects.iter().for_each(|o| strings(o, &mut taken));
        let size = 1u128 << (prefix.family.bits() - prefix.len);
        let fresh =
            (0..size.min(64)).map(|k| addr(prefix.family, prefix.first() + (u128::from(offset) + k) % size)).find(|ip| !taken.contains(ip));
        prop_assume!(fresh.is_some());
        let ip = fresh.unwrap();
        let node_name = format!("node-{node}");
        let used = |extra: Vec<Value>| {
            let mut all = objects.clone();
            all.extend(extra);
            let report = report(all);
            let family = count(&rows(&report)[&(pool.clone(), prefix.family.name().to_string())]["usedAddresses"]);
            let row = count(&node_row(&report, &node_name, &pool).expect("the node's row")["usedAddresses"]);
            (family, row)
        };
        let (family_before, row_before) = used(Vec::new());
        let pod = |name: &str, host: bool, phase: &str| running_pod(name, &node_name, &ip, host, phase);
        prop_assert_eq!(used(vec![pod("new", false, "Running")]), (family_before + 1, row_before + 1), "{} in {}", ip, prefix);
        prop_assert_eq!(
            used(vec![pod("new", false, "Running"), pod("twin", false, "Pending")]),
            (family_before + 1, row_before + 1),
            "{} twice",
            ip
        );
        prop_assert_eq!(
            used(vec![pod("host", true, "Running"), pod("done", false, "Succeeded"), pod("failed", false, "Failed")]),
            (family_before, row_before),
            "{} not held",
            ip
        );
        Ok(())
    });
}

/// A reservation can only turn free blocks into withheld ones: it never frees a block,
/// never evicts one, and touches no other pool or family.
#[test]
fn adding_a_reservation_never_frees_or_evicts() {
    let strategy = (scenario(), any::<usize>(), any::<bool>(), range_spec());
    check("adding_a_reservation_never_frees_or_evicts", strategy, |(scenario, which, ipv6, added)| {
        let mut before = scenario;
        let p = which % before.pools.len();
        // Upstream v2 holds any number of ranges per CIDR, so the new one is always written.
        before.pools[p].dialect = Dialect::UpstreamV2;
        let family = family_of(&before.pools[p], ipv6).family;
        let mut after = before.clone();
        after.pools[p].families.iter_mut().find(|f| f.family == family).unwrap().ranges.push(added);

        let (rows_before, rows_after) = (rows(&report(objects(&before))), rows(&report(objects(&after))));
        prop_assert_eq!(rows_before.keys().collect::<Vec<_>>(), rows_after.keys().collect::<Vec<_>>());
        for (key, row_before) in &rows_before {
            let row_after = &rows_after[key];
            if *key != (pool_name(p), family.name().to_string()) {
                prop_assert_eq!(row_before, row_after, "{:?} changed by another pool's reservation", key);
                continue;
            }
            for ((what, [cap_b, alloc_b, withheld_b, free_b]), (_, [cap_a, alloc_a, withheld_a, free_a])) in
                block_figures(row_before).iter().zip(block_figures(row_after))
            {
                prop_assert_eq!(*cap_b, cap_a, "{:?} {} capacity", key, what);
                prop_assert_eq!(*alloc_b, alloc_a, "{:?} {} allocated", key, what);
                prop_assert!(free_a <= *free_b, "{:?} {}: free went from {} to {}", key, what, free_b, free_a);
                prop_assert_eq!(*withheld_b + (*free_b - free_a), withheld_a, "{:?} {}: what stops being free becomes withheld", key, what);
            }
            prop_assert!(count(&row_after["reservedAddresses"]) > 0, "{:?}: a valid range reserves at least one address", key);
            prop_assert!(count(&row_after["reservedAddresses"]) >= count(&row_before["reservedAddresses"]));
            prop_assert_eq!(&row_before["usedAddresses"], &row_after["usedAddresses"]);
        }
        Ok(())
    });
}

/// The same objects in any order give the same report, problems included.
#[test]
fn input_order_does_not_matter() {
    let strategy = scenario().prop_flat_map(|s| {
        let objects = objects(&s);
        (Just(objects.clone()), Just(objects).prop_shuffle())
    });
    check("input_order_does_not_matter", strategy, |(ordered, shuffled)| {
        prop_assert_eq!(report(ordered), report(shuffled));
        Ok(())
    });
}

/// Removing everything of one family (pool families, blocks, addresses) leaves the other
/// family's figures exactly as they were.
#[test]
fn ipv4_and_ipv6_never_mix() {
    check("ipv4_and_ipv6_never_mix", scenario(), |scenario| {
        let objects = objects(&scenario);
        let full = rows(&report(objects.clone()));
        for family in Family::ALL {
            let alone = rows(&report(only_family(&objects, family)));
            let kept: BTreeMap<_, _> = full.iter().filter(|((_, f), _)| f == family.name()).collect();
            prop_assert_eq!(kept.len(), alone.len(), "{} rows", family);
            for (key, row) in kept {
                prop_assert_eq!(Some(row), alone.get(key), "{:?} depends on the other family", key);
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// Exact IPv6 figures: computed here with u128 (or, past u128, by decimal arithmetic on strings).

fn family_row(report: &Value, pool: &str, family: &str) -> Value {
    rows(report).remove(&(pool.to_string(), family.to_string())).unwrap_or_else(|| panic!("no {pool}/{family} row"))
}

/// Adds one to a decimal string: 2^128 is one past u128::MAX.
fn decimal_plus_one(digits: &str) -> String {
    let mut out: Vec<u8> = digits.bytes().rev().collect();
    for d in out.iter_mut() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return out.iter().rev().map(|&b| b as char).collect();
        }
    }
    out.push(b'1');
    out.iter().rev().map(|&b| b as char).collect()
}

#[test]
fn decimal_plus_one_carries() {
    assert_eq!(decimal_plus_one("0"), "1");
    assert_eq!(decimal_plus_one("199"), "200");
    assert_eq!(decimal_plus_one("999"), "1000");
    assert_eq!(decimal_plus_one(&u64::MAX.to_string()), (u128::from(u64::MAX) + 1).to_string());
}

#[test]
fn cfp_pool_of_65536_blocks_is_counted_exactly() {
    let blocks = 1u128 << (120 - 104);
    let usable = (1u128 << 8) - 2;
    let report = report(vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "big"}, "spec": {"ipv6": {
            "maskSize": 120,
            "cidrs": [{"cidr": "fd00:20::/104", "reservedRange": "fd00:20::10-fd00:20::20"}],
        }}}),
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}, "spec": {"ipam": {"pools": {"allocated": [
            {"pool": "big", "cidrs": ["fd00:20::100/120", "fd00:20::ff:ff00/120", "fd00:99::/120"]},
        ]}}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "fd00:20::ff:ff05"}, {"ip": "fd00:20::5"}]}}),
    ]);
    let row = family_row(&report, "big", "ipv6");
    let figures: BTreeMap<&str, u128> = BTreeMap::from([
        ("totalAddresses", 1 << 24),
        ("capacityBlocks", blocks),
        ("allocatedBlocks", 2),
        ("withheldBlocks", 1),
        ("freeBlocks", blocks - 3),
        ("orphanBlocks", 1),
        ("reservedAddresses", 0x20 - 0x10 + 1),
        ("allocatedAddresses", 2 * usable),
        ("usedAddresses", 1),
        ("idleAddresses", 2 * usable - 1),
        ("freeAddresses", (blocks - 3) * usable),
    ]);
    for (field, want) in figures {
        assert_eq!(count(&row[field]), want, "{field}");
        assert!(row[field].is_u64(), "{field} fits in u64 and must be an integer");
    }
}

#[test]
fn half_of_ipv6_is_counted_exactly_with_strings_beyond_u64() {
    let report = report(vec![json!({
        "apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "half"},
        // 2^16 blocks: the most the operator accepts for one IPv6 CIDR (cidrset.NewCIDRSet).
        "spec": {"ipv6": {"cidrs": ["::/1"], "maskSize": 17}},
    })]);
    let row = family_row(&report, "half", "ipv6");
    let blocks: u128 = 1 << 16;
    let usable: u128 = (1 << 111) - 2;
    assert_eq!(row["capacityBlocks"], json!(65_536));
    assert_eq!(row["freeBlocks"], json!(65_536));
    assert_eq!(row["totalAddresses"], json!((1u128 << 127).to_string()));
    assert_eq!(row["totalAddresses"], json!("170141183460469231731687303715884105728"));
    assert_eq!(row["freeAddresses"], json!((blocks * usable).to_string()));
    assert_eq!(row["allocatedAddresses"], json!(0));
    assert_eq!(row["withheldBlocks"], json!(0));
}

#[test]
fn all_of_ipv6_in_single_addresses_goes_past_u128() {
    let everything = decimal_plus_one(&u128::MAX.to_string());
    assert_eq!(everything, "340282366920938463463374607431768211456");
    let report = report(vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "all"}, "spec": {"ipv6": {
            // /16 blocks: 2^16 of them, the most the operator accepts for one IPv6 CIDR.
            "cidrs": ["::/0"], "maskSize": 16,
            "pool": [{"cidr": "::/0", "reservedRanges": [{"start": "::", "end": "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"}]}],
        }}}),
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}, "spec": {"ipam": {"pools": {"allocated": [
            {"pool": "all", "cidrs": ["fd00::/16", "fd01::/16"]},
        ]}}}}),
    ]);
    let row = family_row(&report, "all", "ipv6");
    assert_eq!(row["totalAddresses"], json!(everything));
    assert_eq!(row["capacityBlocks"], json!(65_536));
    assert_eq!(row["reservedAddresses"], json!(everything));
    assert_eq!(row["allocatedBlocks"], json!(2));
    assert_eq!(row["allocatedAddresses"], json!((2 * ((1u128 << 112) - 2)).to_string()));
    assert_eq!(row["withheldBlocks"], json!(65_534));
    assert_eq!(row["freeBlocks"], json!(0));
    assert_eq!(row["freeAddresses"], json!(0));
}
