//! The allocator and the decoder at cluster scale. Speed targets live here, never in tests:
//! `cargo bench --bench analyze` (docs/performance.md has the targets and the last figures).
//! Under `cargo test` each benchmark runs once on a cluster a hundred times smaller, so the suite
//! proves they work without spending minutes on them.

#[path = "support/scale.rs"]
mod scale;

use ciliumpool::allocator::analyze;
use ciliumpool::model::Snapshot;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use scale::{Kind, Scale};
use serde_json::{Value, json};
use std::hint::black_box;

/// The binary's allocator, so the figures are the product's (src/heap.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Full sizes with `cargo bench`; a hundredth under `cargo test` (which passes no `--bench`).
fn sized(n: u32) -> u32 {
    if std::env::args().any(|a| a == "--bench") { n } else { (n / 100).max(1) }
}

fn cluster(nodes: u32, pods_per_node: u32, pools: u32) -> Snapshot {
    let scale = Scale { nodes: sized(nodes), pods_per_node, pools, seed: 7, realistic: false, cfp: true };
    Snapshot::from_objects(scale::objects(&scale))
}

/// One IPv6 pool `cidr` split into 65,536 blocks of `/mask`, every block held by one of 5,000 nodes.
fn full_ipv6_pool(cidr: &str, prefix: u32, mask: u32) -> Snapshot {
    let nodes = sized(5_000);
    let blocks: u32 = 1 << (mask - prefix);
    let base: u128 = cidr.split('/').next().unwrap().parse::<std::net::Ipv6Addr>().unwrap().into();
    let step = 1u128 << (128 - mask);
    let mut objects: Vec<Value> = vec![json!({"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": "v6"},
        "spec": {"ipv6": {"cidrs": [cidr], "maskSize": mask}}})];
    let per_node = blocks.div_ceil(nodes);
    for n in 0..nodes {
        let first = n * per_node;
        let cidrs: Vec<String> = (first..(first + per_node).min(blocks))
            .map(|b| format!("{}/{mask}", std::net::Ipv6Addr::from(base + u128::from(b) * step)))
            .collect();
        objects.push(json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": format!("node-{n}")},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": "v6", "cidrs": cidrs}]}}}}));
    }
    Snapshot::from_objects(objects)
}

fn allocator(c: &mut Criterion) {
    ciliumpool::heap::tune();
    let mut group = c.benchmark_group("analyze");
    group.sample_size(10);
    for (nodes, pods_per_node, pools) in [(5_000, 30, 10), (20_000, 25, 10)] {
        let snapshot = cluster(nodes, pods_per_node, pools);
        let label = format!("{}-nodes-{}-pods", sized(nodes), sized(nodes) * pods_per_node);
        group.bench_function(BenchmarkId::new("cluster", label), |b| b.iter(|| analyze(black_box(&snapshot))));
    }
    // Same number of blocks, 2^111 versus 2^8 addresses each: the cost must not follow the addresses.
    for (cidr, prefix, mask) in [("fd00::/104", 104, 120), ("::/1", 1, 17)] {
        let snapshot = full_ipv6_pool(cidr, prefix, mask);
        group.bench_function(BenchmarkId::new("ipv6-65536-blocks-full", cidr), |b| b.iter(|| analyze(black_box(&snapshot))));
    }
    group.finish();
}

/// Bytes on disk to a snapshot: the realistic dump (pods with managedFields, containers, volumes).
fn decoding(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let scale = Scale { nodes: sized(3_000), pods_per_node: 30, pools: 10, seed: 7, realistic: true, cfp: true };
    let mut lists: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
    scale::generate(&scale, &mut |kind, object| {
        let file = match kind {
            Kind::Pool => "pools",
            Kind::Node => "ciliumnodes",
            Kind::Pod => "pods",
            Kind::Endpoint => "ciliumendpoints",
        };
        lists.entry(file).or_default().push(object)
    });
    let mut paths = Vec::new();
    for (kind, items) in lists {
        let path = dir.path().join(format!("{kind}.json"));
        std::fs::write(&path, serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "List", "items": items})).unwrap()).unwrap();
        paths.push(path.display().to_string());
    }
    let mut group = c.benchmark_group("decode");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("realistic-json-dump", format!("{}-pods", scale.nodes * scale.pods_per_node)), |b| {
        b.iter(|| {
            let files = ciliumpool::files::read::load(black_box(&paths), ciliumpool::files::Limits::default()).expect("dump loads");
            ciliumpool::files::read::snapshot_of(files)
        })
    });
    group.finish();
}

criterion_group!(benches, allocator, decoding);
criterion_main!(benches);
