//! The allocator at the scale of a large cluster: 5,000 nodes, 200,000 pods, a dual-stack pool
//! with an IPv6 CIDR of 2^64 addresses. Speed targets live here, not in tests:
//! `cargo bench --bench analyze`. Target: the analysis well under a second.

use ciliumpool::allocator::analyze;
use ciliumpool::model::Snapshot;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;

const NODES: u32 = 5_000;
const PODS_PER_NODE: u32 = 40;

fn objects() -> Vec<Value> {
    let mut objects = vec![
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "default"},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/8"], "maskSize": 24,
                              "pool": [{"cidr": "10.0.0.0/8", "reservedRanges": [{"start": "10.255.0.0", "end": "10.255.255.255"}]}]},
                     "ipv6": {"cidrs": ["fd00::/64"], "maskSize": 112}}}),
    ];
    for n in 0..NODES {
        let (hi, lo) = (n / 256, n % 256);
        objects.push(json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": format!("node-{n}")},
            "spec": {"addresses": [{"type": "CiliumInternalIP", "ip": format!("10.{hi}.{lo}.1")}],
                     "ipam": {"pools": {"requested": [{"pool": "default", "needed": {"ipv4-addrs": 48, "ipv6-addrs": 48}}],
                                        "allocated": [{"pool": "default", "cidrs": [format!("10.{hi}.{lo}.0/24"), format!("fd00::{n:x}:0/112")]}]}}}}));
        for p in 0..PODS_PER_NODE {
            objects.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p-{n}-{p}"), "namespace": "default"},
                "spec": {"nodeName": format!("node-{n}")},
                "status": {"phase": "Running", "podIPs": [{"ip": format!("10.{hi}.{lo}.{}", p + 2)}, {"ip": format!("fd00::{n:x}:{:x}", p + 2)}]}}));
        }
    }
    objects
}

fn bench(c: &mut Criterion) {
    let objects = objects();
    let snapshot = Snapshot::from_objects(objects.clone());
    assert_eq!(snapshot.pods.as_ref().map(Vec::len), Some((NODES * PODS_PER_NODE) as usize));
    let mut group = c.benchmark_group("large-cluster");
    group.sample_size(10);
    group.bench_function("snapshot-from-objects", |b| b.iter(|| Snapshot::from_objects(black_box(objects.clone()))));
    group.bench_function("analyze", |b| b.iter(|| analyze(black_box(&snapshot))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
