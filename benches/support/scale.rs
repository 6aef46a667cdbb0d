//! A seeded generator of large clusters, shared by the `gen-scale` example (dumps on disk, loading
//! into a control plane) and the benchmarks (objects in memory). Deterministic for a seed.
//!
//! The cluster: pool `default` (dual-stack, v2alpha1) and `pools - 1` (at most 15) more pools
//! cycling through the three dialects (v2alpha1, upstream v2 with a gateway reservation, CFP v2 with a
//! reserved range), every third of them dual-stack. Node `i` holds one `default` block per family and one
//! block of pool `1 + i % (pools - 1)`; every 97th node also holds a block under a deleted pool and one
//! outside its pool's CIDRs (orphans). Pods take their IPs from their node's blocks, half from
//! `default`; a pod in twenty uses the host network and one in fifty has finished. Realistic objects
//! carry what real ones do (managedFields, several containers with env, resources and mounts,
//! volumes, conditions, ownerReferences), about 6 KB of JSON per pod; compact ones only the fields the
//! plugin reads.

use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{Value, json};

/// What to generate.
#[derive(Clone, Debug)]
pub struct Scale {
    pub nodes: u32,
    pub pods_per_node: u32,
    /// Pools in all, `default` included (at least 1).
    pub pools: u32,
    pub seed: u64,
    /// Objects as large as real ones, or only what the plugin reads.
    pub realistic: bool,
    /// Include CFP-v2 pools (object `cidrs`); a cluster serves one v2 schema, so loading one leaves them out.
    pub cfp: bool,
}

/// Which list an object belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Pool,
    Node,
    Pod,
    Endpoint,
}

/// A seeded generator (proptest's, a dev-dependency already) for names, ids and sizes.
struct Rng(TestRng);

impl Rng {
    fn seeded(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn hex(&mut self, len: usize) -> String {
        let mut s = format!("{:016x}{:016x}", self.next(), self.next());
        s.truncate(len);
        s
    }
}

/// The pool a node's second block comes from (pools 1..), or None with a single pool.
fn group_of(scale: &Scale, node: u32) -> Option<u32> {
    (scale.pools > 1).then(|| 1 + node % (scale.pools - 1))
}

fn dual_stack(pool: u32) -> bool {
    pool == 0 || pool.is_multiple_of(3)
}

/// IPv4 block of node `n` in `default`: 10.0.0.0/8 in /24 blocks (65,280 usable before the reserved tail).
fn default_v4_block(n: u32) -> (String, [u32; 3]) {
    let (a, b) = (n / 256, n % 256);
    (format!("10.{a}.{b}.0/24"), [10, a, b])
}

/// First address of pool `p`'s IPv4 CIDR: 100.64.0.0/10 split into one /14 per pool (4,096 /26 blocks).
fn pool_v4_base(p: u32) -> u32 {
    (100u32 << 24) | ((64 + 4 * (p - 1)) << 16)
}

/// IPv4 block of the `k`-th node in pool `p`.
fn pool_v4_block(p: u32, k: u32) -> (String, u32) {
    let base = pool_v4_base(p) + ((k % 4096) << 6);
    (format!("{}/26", v4(base)), base)
}

fn v4(addr: u32) -> String {
    std::net::Ipv4Addr::from(addr).to_string()
}

fn v4_of(octets: [u32; 3], host: u32) -> String {
    format!("{}.{}.{}.{host}", octets[0], octets[1], octets[2])
}

/// IPv6 block of node `n` in pool `p`: fd00:p::/96 in /112 blocks (65,536 blocks).
fn v6_block(p: u32, n: u32) -> String {
    format!("fd00:{p:x}::{:x}:0/112", n % 65536)
}

fn v6_of(p: u32, n: u32, host: u32) -> String {
    format!("fd00:{p:x}::{:x}:{host:x}", n % 65536)
}

fn pool_name(p: u32) -> String {
    if p == 0 { "default".to_string() } else { format!("pool-{p}") }
}

fn pool_object(p: u32, cfp: bool) -> Value {
    let name = pool_name(p);
    let v4_cidr = if p == 0 { "10.0.0.0/8".to_string() } else { format!("{}/14", v4(pool_v4_base(p))) };
    let v6_cidr = format!("fd00:{p:x}::/96");
    let labels = json!({"app.kubernetes.io/managed-by": "Helm", "team": format!("team-{}", p % 7)});
    let (api_version, ipv4) = match (p == 0, p % 3) {
        (true, _) => ("cilium.io/v2alpha1", json!({"cidrs": [v4_cidr], "maskSize": 24})),
        (false, 1) | (false, 2) if p % 3 == 1 || !cfp => {
            let gateway = v4(pool_v4_base(p) + 1);
            (
                "cilium.io/v2",
                json!({"cidrs": [v4_cidr.clone()], "maskSize": 26,
                "pool": [{"cidr": v4_cidr, "reservedRanges": [{"start": gateway, "end": gateway}]}]}),
            )
        }
        (false, 2) => {
            let last_block = pool_v4_base(p) + (1 << 18) - 64;
            let range = format!("{}-{}", v4(last_block), v4(last_block + 63));
            ("cilium.io/v2", json!({"cidrs": [{"cidr": v4_cidr, "reservedRange": range}], "maskSize": 26}))
        }
        _ => ("cilium.io/v2alpha1", json!({"cidrs": [v4_cidr], "maskSize": 26})),
    };
    let mut spec = json!({"ipv4": ipv4});
    if dual_stack(p) {
        spec["ipv6"] = json!({"cidrs": [v6_cidr], "maskSize": 112});
    }
    if p > 0 {
        spec["podSelector"] = json!({"matchLabels": {"ipam.example.com/pool": name}});
    }
    json!({"apiVersion": api_version, "kind": "CiliumPodIPPool",
        "metadata": {"name": name, "labels": labels, "resourceVersion": (1000 + p).to_string(),
                     "uid": format!("00000000-0000-4000-8000-{p:012x}"), "generation": 1,
                     "creationTimestamp": "2026-01-05T10:00:00Z"},
        "spec": spec})
}

fn node_name(n: u32) -> String {
    format!("ip-10-250-{}-{}.eu-west-1.compute.internal", n / 256, n % 256)
}

fn node_ip(n: u32) -> String {
    format!("10.250.{}.{}", n / 256 % 256, n % 256)
}

/// A node's blocks per pool: (pool, [blocks]).
fn node_blocks(scale: &Scale, n: u32) -> Vec<(String, Vec<String>)> {
    let mut out = vec![("default".to_string(), vec![default_v4_block(n).0, v6_block(0, n)])];
    if let Some(p) = group_of(scale, n) {
        let k = n / (scale.pools - 1);
        let mut blocks = vec![pool_v4_block(p, k).0];
        if dual_stack(p) {
            blocks.push(v6_block(p, k));
        }
        out.push((pool_name(p), blocks));
    }
    if n % 97 == 96 {
        out.push(("decommissioned".to_string(), vec![format!("192.168.{}.0/24", n / 97 % 256)]));
        out[0].1.push(format!("172.31.{}.0/24", n / 97 % 256));
    }
    out
}

fn node_object(scale: &Scale, n: u32, rng: &mut Rng) -> Value {
    let name = node_name(n);
    let blocks = node_blocks(scale, n);
    let allocated: Vec<Value> = blocks.iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect();
    let requested: Vec<Value> = blocks
        .iter()
        .filter(|(pool, _)| pool != "decommissioned")
        .map(|(pool, _)| json!({"pool": pool, "needed": {"ipv4-addrs": 16 + scale.pods_per_node / 2, "ipv6-addrs": 16 + scale.pods_per_node / 2}}))
        .collect();
    let octets = default_v4_block(n).1;
    let mut object = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode",
        "metadata": {"name": name, "resourceVersion": (50_000 + n).to_string(),
                     "uid": format!("{}-{}-4{}-8{}-{}", rng.hex(8), rng.hex(4), rng.hex(3), rng.hex(3), rng.hex(12))},
        "spec": {"addresses": [{"type": "InternalIP", "ip": node_ip(n)}, {"type": "CiliumInternalIP", "ip": v4_of(octets, 1)}],
                 "health": {"ipv4": v4_of(octets, 2)},
                 "ipam": {"pools": {"requested": requested, "allocated": allocated}}},
        "status": {"ipam": {"operator-status": {}}}});
    if scale.realistic {
        object["metadata"]["labels"] = json!({
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m6i.4xlarge",
            "beta.kubernetes.io/os": "linux", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "m6i.4xlarge", "topology.kubernetes.io/region": "eu-west-1",
            "topology.kubernetes.io/zone": format!("eu-west-1{}", ["a", "b", "c"][(n % 3) as usize])});
        object["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Node", "name": name, "uid": format!("{}-0000-4000-8000-{}", rng.hex(8), rng.hex(12))}]);
        object["spec"]["encryption"] = json!({});
        object["spec"]["eni"] = json!({});
        object["spec"]["instance-id"] = json!(format!("i-{}", rng.hex(17)));
        object["spec"]["bootid"] = json!(format!("{}-{}-{}", rng.hex(8), rng.hex(4), rng.hex(12)));
    }
    object
}

/// Addresses of pod `j` on node `n`: from `default` for even `j`, else from the node's other pool.
fn pod_ips(scale: &Scale, n: u32, j: u32) -> Vec<String> {
    let host = 10 + j / 2;
    match group_of(scale, n) {
        Some(p) if j % 2 == 1 => {
            let k = n / (scale.pools - 1);
            let base = pool_v4_block(p, k).1;
            let mut ips = vec![v4(base + 1 + host % 62)];
            if dual_stack(p) {
                ips.push(v6_of(p, k, host));
            }
            ips
        }
        _ => vec![v4_of(default_v4_block(n).1, host % 254), v6_of(0, n, host)],
    }
}

fn managed_fields() -> Value {
    json!([
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kube-controller-manager", "operation": "Update", "time": "2026-01-05T10:00:00Z",
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app.kubernetes.io/name": {}, "f:pod-template-hash": {}},
                                     "f:ownerReferences": {".": {}, "k:{\"uid\":\"0\"}": {}}},
                      "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {".": {}, "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}}},
                                 "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                                 "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                                 "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}, "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/app\"}": {".": {}, "f:mountPath": {}, "f:name": {}}}}},
                                 "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}}}}}},
        {"apiVersion": "v1", "fieldsType": "FieldsV1", "manager": "kubelet", "operation": "Update", "subresource": "status", "time": "2026-01-05T10:00:09Z",
         "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                                    "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                                                    "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                                   "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"0\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}}
    ])
}

/// `port`: distinct per container of a pod, since a host-network pod's container ports are host
/// ports, which the apiserver refuses to see twice (same width, so the dumps keep their size).
fn container(name: &str, image: String, port: u16, rng: &mut Rng) -> Value {
    let env: Vec<Value> = (0..8)
        .map(|i| json!({"name": format!("{}_SETTING_{i}", name.to_uppercase()), "value": rng.hex(12 + (i % 3) * 8)}))
        .chain([json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})])
        .collect();
    json!({"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "env": env,
        "ports": [{"containerPort": port, "name": "http", "protocol": "TCP"}],
        "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "250m", "memory": "256Mi"}},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"}, "failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "volumeMounts": [{"mountPath": "/etc/app", "name": "config"}, {"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "name": "kube-api-access", "readOnly": true}]})
}

fn pod_object(scale: &Scale, n: u32, j: u32, rng: &mut Rng) -> Value {
    let app = format!("app-{}", (n * 7 + j) % 113);
    let name = format!("{app}-{}-{}", rng.hex(10), rng.hex(5));
    let namespace = format!("team-{}", (n + j) % 17);
    let host_network = j % 20 == 19;
    let phase = if j % 50 == 49 { "Succeeded" } else { "Running" };
    let ips = if host_network { vec![node_ip(n)] } else { pod_ips(scale, n, j) };
    let pod_ips: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    let mut object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"nodeName": node_name(n), "hostNetwork": host_network},
        "status": {"phase": phase, "podIP": ips[0], "podIPs": pod_ips}});
    if !scale.realistic {
        return object;
    }
    let uid = format!("{}-{}-4{}-8{}-{}", rng.hex(8), rng.hex(4), rng.hex(3), rng.hex(3), rng.hex(12));
    object["metadata"] = json!({"name": object["metadata"]["name"], "namespace": object["metadata"]["namespace"],
        "generateName": format!("{app}-{}-", rng.hex(10)), "uid": uid, "resourceVersion": (100_000 + n * 100 + j).to_string(),
        "creationTimestamp": "2026-01-05T10:00:00Z",
        "labels": {"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "pod-template-hash": rng.hex(10), "ipam.example.com/pool": group_of(scale, n).map_or("default".into(), pool_name)},
        "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-01-04T08:00:00Z", "prometheus.io/scrape": "true", "prometheus.io/port": "8080"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-{}", rng.hex(10)), "uid": format!("{}-0000-4000-8000-{}", rng.hex(8), rng.hex(12)), "controller": true, "blockOwnerDeletion": true}],
        "managedFields": managed_fields()});
    let containers = vec![
        container("app", format!("registry.example.com/shop/{app}:1.{}.{}", j % 9, n % 13), 8080, rng),
        container("sidecar", "registry.example.com/mesh/proxy:2.4.1".to_string(), 9090, rng),
    ];
    let spec = &mut object["spec"];
    spec["containers"] = Value::Array(containers);
    spec["initContainers"] = json!([{"name": "init", "image": "registry.example.com/tools/init:0.3", "command": ["/bin/sh", "-c", "until nslookup db; do sleep 1; done"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]);
    spec["volumes"] = json!([{"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
        {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]);
    spec["tolerations"] = json!([{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
        {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}]);
    for (key, value) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("restartPolicy", json!("Always")),
        ("schedulerName", json!("default-scheduler")),
        ("serviceAccountName", json!("default")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("priority", json!(0)),
        ("enableServiceLinks", json!(true)),
    ] {
        spec[key] = value;
    }
    let condition =
        |kind: &str| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-01-05T10:00:09Z"});
    let status = &mut object["status"];
    status["conditions"] = json!([
        condition("PodReadyToStartContainers"),
        condition("Initialized"),
        condition("Ready"),
        condition("ContainersReady"),
        condition("PodScheduled")
    ]);
    status["hostIP"] = json!(node_ip(n));
    status["hostIPs"] = json!([{"ip": node_ip(n)}]);
    status["qosClass"] = json!("Burstable");
    status["startTime"] = json!("2026-01-05T10:00:01Z");
    status["containerStatuses"] = json!(["app", "sidecar"].iter().map(|c| json!({"name": c, "ready": true, "restartCount": 0, "started": true,
        "image": "registry.example.com/shop/app:1.0", "imageID": format!("registry.example.com/shop/app@sha256:{}{}{}{}", rng.hex(16), rng.hex(16), rng.hex(16), rng.hex(16)),
        "containerID": format!("containerd://{}{}{}{}", rng.hex(16), rng.hex(16), rng.hex(16), rng.hex(16)),
        "state": {"running": {"startedAt": "2026-01-05T10:00:08Z"}}, "lastState": {}})).collect::<Vec<_>>());
    object
}

fn endpoint_object(pod: &Value, n: u32, rng: &mut Rng, realistic: bool) -> Value {
    let ips: Vec<&str> = pod["status"]["podIPs"].as_array().into_iter().flatten().filter_map(|ip| ip["ip"].as_str()).collect();
    let mut addressing = json!({"ipv4": ips[0]});
    if let Some(v6) = ips.get(1) {
        addressing["ipv6"] = json!(v6);
    }
    let (name, namespace) = (&pod["metadata"]["name"], &pod["metadata"]["namespace"]);
    let mut object = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint",
        "metadata": {"name": name, "namespace": namespace},
        "status": {"networking": {"addressing": [addressing], "node": node_ip(n)}, "state": "ready", "id": rng.below(4000)}});
    if realistic {
        object["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": pod["metadata"]["uid"], "blockOwnerDeletion": true}]);
        object["metadata"]["uid"] = json!(format!("{}-0000-4000-8000-{}", rng.hex(8), rng.hex(12)));
        object["status"]["identity"] = json!({"id": 10_000 + rng.below(50_000), "labels": [format!("k8s:app.kubernetes.io/name={}", pod["metadata"]["labels"]["app.kubernetes.io/name"].as_str().unwrap_or("")),
            format!("k8s:io.kubernetes.pod.namespace={}", namespace.as_str().unwrap_or("")), "k8s:io.cilium.k8s.policy.cluster=prod".to_string()]});
        object["status"]["external-identifiers"] = json!({"k8s-namespace": namespace, "k8s-pod-name": name});
        object["status"]["encryption"] = json!({});
    }
    object
}

/// Every object of the cluster, in list order (pools, nodes, then per node its pods and endpoints),
/// handed to `sink` one at a time so that a dump of any size needs no memory for the whole.
pub fn generate(scale: &Scale, sink: &mut dyn FnMut(Kind, Value)) {
    assert!((1..=16).contains(&scale.pools), "1 to 16 pools");
    let mut rng = Rng::seeded(scale.seed);
    for p in 0..scale.pools {
        sink(Kind::Pool, pool_object(p, scale.cfp));
    }
    for n in 0..scale.nodes {
        sink(Kind::Node, node_object(scale, n, &mut rng));
    }
    for n in 0..scale.nodes {
        for j in 0..scale.pods_per_node {
            let pod = pod_object(scale, n, j, &mut rng);
            let with_endpoint = pod["spec"]["hostNetwork"] != json!(true) && pod["status"]["phase"] == json!("Running");
            let endpoint = with_endpoint.then(|| endpoint_object(&pod, n, &mut rng, scale.realistic));
            sink(Kind::Pod, pod);
            if let Some(endpoint) = endpoint {
                sink(Kind::Endpoint, endpoint);
            }
        }
    }
}

/// All objects in memory (benchmarks).
pub fn objects(scale: &Scale) -> Vec<Value> {
    let mut out = Vec::new();
    generate(scale, &mut |_, object| out.push(object));
    out
}
