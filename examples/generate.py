#!/usr/bin/env python3
"""Generate the example snapshot of cluster "prod-eu1" into examples/snapshot/.

Python 3 standard library only. Deterministic: a fixed seed and a fixed "now",
no set/dict iteration that depends on hash randomisation, and a hand-written
YAML emitter that prints keys sorted the way `kubectl get -o yaml` does.
Re-running the script yields byte-identical files.

The blocks on the CiliumNodes are not invented: the script replays the
cluster's history (nodes joining, a pool reconfiguration, nodes deleted,
bursts, a release) through an allocator that behaves like the Cilium operator
after a restart: per pool and family, the lowest free block of the first CIDR
(spec order) that is not full, skipping every block that overlaps a reserved
range. Pod IPs are then drawn from each node's blocks.

After writing, the script re-reads what it wrote (the JSON directly, the YAML
through the emitted objects) and runs an independent consistency check; it
exits non-zero if anything is off.

Usage: python3 examples/generate.py
"""

import datetime
import hashlib
import ipaddress
import json
import os
import random
import re
import sys
import uuid

SEED = 20251120
CLUSTER = "prod-eu1"
REGION = "eu-west-1"
NOW = datetime.datetime(2025, 11, 20, 9, 30, 0, tzinfo=datetime.timezone.utc)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "snapshot")
CILIUM_TAG = "v1.21.2"
# Helm value ipam.multiPoolPreAllocation of this cluster (agent pre-allocation per pool).
PREALLOC = {"default": 8, "blue": 8, "green": 8, "batch": 16}

rng = random.Random(SEED)
DAY = datetime.timedelta(days=1)
HOUR = datetime.timedelta(hours=1)
MIN = datetime.timedelta(minutes=1)
SEC = datetime.timedelta(seconds=1)


# --------------------------------------------------------------------------- helpers

def ts(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


_rv = [41_873_210]


def new_rv():
    _rv[0] += rng.randint(3, 977)
    return str(_rv[0])


SAFE = "bcdfghjklmnpqrstvwxz2456789"  # the alphabet Kubernetes uses for name suffixes


def suffix(n=5):
    return "".join(rng.choice(SAFE) for _ in range(n))


def between(a, b):
    span = int((b - a).total_seconds())
    return a + datetime.timedelta(seconds=rng.randint(0, max(span, 0)))


def ip(s):
    return ipaddress.ip_address(s)


def net(s):
    return ipaddress.ip_network(s)


# --------------------------------------------------------------------------- YAML emitter
# Block style, keys sorted, sequences not indented under their key, strings
# double-quoted only when a plain scalar would be read as something else --
# the way sigs.k8s.io/yaml (go-yaml) prints objects for kubectl.

_WORDS = {"y", "yes", "n", "no", "true", "false", "on", "off", "null", "~"}
_NUM = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$")
_INTLIKE = re.compile(r"^[-+]?(0x[0-9a-fA-F_]+|0o?[0-7_]+|0b[01_]+|[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)$")
_SPECIAL_FLOAT = re.compile(r"^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$")
_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?$")
_BAD_START = set("-?:,[]{}#&*!|>'\"%@` ")


def _needs_quote(s):
    return (s == "" or s.lower() in _WORDS or bool(_NUM.match(s)) or bool(_INTLIKE.match(s))
            or bool(_SPECIAL_FLOAT.match(s)) or bool(_TIMESTAMP.match(s)) or s[0] in _BAD_START
            or s[-1] in " :" or ": " in s or " #" in s or "\n" in s or "\t" in s)


def _scalar(v):
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v) if _needs_quote(v) else v
    raise TypeError("cannot emit %r" % (v,))


def _emit(value, indent, out):
    pad = " " * indent
    if isinstance(value, dict):
        for k in sorted(value):
            v = value[k]
            key = _scalar(k)
            if isinstance(v, dict) and v:
                out.append("%s%s:" % (pad, key))
                _emit(v, indent + 2, out)
            elif isinstance(v, list) and v:
                out.append("%s%s:" % (pad, key))
                _emit(v, indent, out)
            elif isinstance(v, dict):
                out.append("%s%s: {}" % (pad, key))
            elif isinstance(v, list):
                out.append("%s%s: []" % (pad, key))
            else:
                out.append("%s%s: %s" % (pad, key, _scalar(v)))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub = []
                _emit(item, indent + 2, sub)
                sub[0] = pad + "- " + sub[0][indent + 2:]
                out.extend(sub)
            elif isinstance(item, list):
                raise TypeError("nested sequences are not used in this snapshot")
            elif isinstance(item, dict):
                out.append(pad + "- {}")
            else:
                out.append("%s- %s" % (pad, _scalar(item)))
    else:
        raise TypeError("top level must be a mapping or a sequence")


def to_yaml(obj):
    out = []
    _emit(obj, 0, out)
    return "\n".join(out) + "\n"


def to_json(obj):
    return json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=True) + "\n"


def k8s_list(items):
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


# --------------------------------------------------------------------------- allocator (operator semantics)

class Family:
    """One pool family as the operator sees it: CIDRs in spec order, maskSize, reserved ranges."""

    def __init__(self, cidrs, mask, reserved=()):
        self.configure(cidrs, reserved)
        self.mask = mask
        self.owner = {}  # block -> node key (blocks currently handed out)

    def configure(self, cidrs, reserved=()):
        self.cidrs = [net(c) for c in cidrs]
        self.reserved = [(int(ip(a)), int(ip(b))) for a, b in reserved]

    def blocks(self, cidr):
        size = 1 << (cidr.max_prefixlen - self.mask)
        base = int(cidr.network_address)
        cls = type(cidr)
        for i in range(1 << (self.mask - cidr.prefixlen)):
            yield cls((base + i * size, self.mask))

    def withheld(self, blk):
        lo, hi = int(blk.network_address), int(blk.broadcast_address)
        return any(a <= hi and b >= lo for a, b in self.reserved)

    def allocate(self, node_key):
        for cidr in self.cidrs:
            for blk in self.blocks(cidr):
                if blk in self.owner or self.withheld(blk):
                    continue
                self.owner[blk] = node_key
                return blk
        return None

    def release(self, blk):
        del self.owner[blk]


POOLS = {
    "default": {"ipv4": Family(["10.10.0.0/16"], 24), "ipv6": Family(["fd00:10::/104"], 120)},
    # blue started life as a single-CIDR v2alpha1 pool on 10.41.0.0/16
    "blue": {"ipv4": Family(["10.41.0.0/16"], 24)},
    "green": {"ipv4": Family(["10.60.0.0/20", "10.61.0.0/20"], 26, [("10.60.0.0", "10.60.0.31")]),
              "ipv6": Family(["fd00:60::/112"], 120)},
    "batch": {"ipv4": Family(["10.80.0.0/22"], 26)},
}
DUAL_STACK = {"default", "green"}
ALLOW_FIRST = {"green"}


# --------------------------------------------------------------------------- nodes and history

GROUPS = {
    # group: (instance type, extra pool)
    "general": ("m6i.2xlarge", None),
    "blue": ("m6i.4xlarge", "blue"),
    "green": ("r6i.2xlarge", "green"),
    "batch": ("c6i.4xlarge", "batch"),
}
ZONES = [("a", 0), ("b", 16), ("c", 32)]  # subnet 10.0.<base..base+15>.0/20 per zone


class Node:
    def __init__(self, key, group, created):
        self.key = key
        self.group = group
        self.created = created
        self.blocks = {}  # pool -> {"ipv4": [...], "ipv6": [...]} in allocation order
        self.deleted = False
        self.annotations = {}
        self.operator_error = None


NODES = {}
_used_host = set()
_join_counter = [0]


def place_node(node):
    zone, base = ZONES[_join_counter[0] % 3]
    _join_counter[0] += 1
    while True:
        o3, o4 = base + rng.randint(0, 15), rng.randint(4, 250)
        if (o3, o4) not in _used_host:
            _used_host.add((o3, o4))
            break
    node.zone = REGION + zone
    node.ip = "10.0.%d.%d" % (o3, o4)
    node.name = "ip-10-0-%d-%d.%s.compute.internal" % (o3, o4, REGION)
    node.instance_type = GROUPS[node.group][0]
    node.instance_id = "i-0" + "%016x" % rng.getrandbits(64)
    node.uid = new_uid()
    node.node_uid = new_uid()
    node.boot_id = new_uid()


def alloc(node, pool, fam):
    blk = POOLS[pool][fam].allocate(node.key)
    if blk is None:
        return None
    node.blocks.setdefault(pool, {"ipv4": [], "ipv6": []})[fam].append(blk)
    return blk


def join(key, group, when):
    node = Node(key, group, when)
    place_node(node)
    NODES[key] = node
    assert alloc(node, "default", "ipv4") and alloc(node, "default", "ipv6")
    extra = GROUPS[group][1]
    if extra:
        for fam in POOLS[extra]:
            assert alloc(node, extra, fam)
    return node


def delete(key):
    node = NODES[key]
    for pool, fams in node.blocks.items():
        for fam, blks in fams.items():
            for blk in blks:
                POOLS[pool][fam].release(blk)
    node.deleted = True


# Phase 1 -- cluster creation, ~7 months ago.
PHASE1 = [("g1", "general"), ("bdel1", "blue"), ("gr1", "green"), ("bt1", "batch"), ("g2", "general"),
          ("bdel2", "blue"), ("g3", "general"), ("gdel", "general"), ("gr2", "green"), ("bdel3", "blue"),
          ("bt2", "batch"), ("g4", "general"), ("bgrand", "blue"), ("gr3", "green"), ("g5", "general"),
          ("bt3", "batch")]
CLUSTER_BIRTH = NOW - 212 * DAY
for i, (k, g) in enumerate(PHASE1):
    join(k, g, CLUSTER_BIRTH + i * 17 * MIN + rng.randint(0, 300) * SEC)

# g3 still holds a block of the long-deleted pool "legacy" (10.99.0.0/16).
NODES["g3"].blocks["legacy"] = {"ipv4": [net("10.99.7.0/24")], "ipv6": []}

# Phase 2 -- ~10 weeks ago: blue moves to 10.40.0.0/16. The pool is migrated to cilium.io/v2,
# 10.40.0.0/16 is put first, the gateway 10.40.255.254 is reserved and 10.41.0.0/16 is
# reserved as a whole (decommission). Three of the four nodes holding 10.41 blocks are
# drained and replaced; bgrand is still waiting for its drain. One general node is retired.
BLUE_RECONFIG = NOW - 71 * DAY
POOLS["blue"]["ipv4"].configure(["10.40.0.0/16", "10.41.0.0/16"],
                                [("10.40.255.254", "10.40.255.254"), ("10.41.0.0", "10.41.255.255")])
for k in ("bdel1", "bdel2", "bdel3", "gdel"):
    delete(k)

# Phase 3 -- growth over the last ten weeks.
PHASE3 = [("b1", "blue"), ("b2", "blue"), ("b3", "blue"), ("g6", "general"), ("b4", "blue"),
          ("gr4", "green"), ("b5", "blue"), ("bt4", "batch"), ("b6", "blue"), ("g7", "general"),
          ("b7", "blue"), ("gr5", "green"), ("b8", "blue"), ("bt5", "batch"), ("g8", "general"),
          ("b9", "blue"), ("gr6", "green"), ("b10", "blue"), ("g9", "general"), ("bt6", "batch"),
          ("b11", "blue"), ("gr7", "green"), ("g10", "general"), ("gr8", "green")]
for i, (k, g) in enumerate(PHASE3):
    join(k, g, BLUE_RECONFIG + 1 * DAY + i * 60 * HOUR + rng.randint(0, 20 * 3600) * SEC)

# g9 is being debugged: the operator has been told to leave it alone.
NODES["g9"].annotations["ipam.cilium.io/ignore"] = "true"

# Phase 4 -- bursts in the last days (the operator hands out the lowest free block).
DEFAULT_EXTRA = [("g1", 2), ("g2", 1), ("g3", 1), ("g4", 2), ("g5", 1), ("g6", 1), ("g7", 2), ("g8", 1)]
for rnd in (1, 2):
    for k, n in DEFAULT_EXTRA:
        if n >= rnd:
            assert alloc(NODES[k], "default", "ipv4")
for k in ("b2", "b5"):
    assert alloc(NODES[k], "blue", "ipv4")
for rnd in (1, 2):
    for k in ("gr1", "gr5"):
        assert alloc(NODES[k], "green", "ipv4")
# The nightly ETL burst eats the whole batch pool; bt6 asks for one more block and fails.
for k in ("bt1", "bt2", "bt3", "bt4", "bt5", "bt6"):
    assert alloc(NODES[k], "batch", "ipv4")
for k in ("bt1", "bt2", "bt3", "bt4"):
    assert alloc(NODES[k], "batch", "ipv4")
assert alloc(NODES["bt6"], "batch", "ipv4") is None
NODES["bt6"].operator_error = "unable to allocate from pool batch: pool exhausted"
# Phase 5 -- after the burst bt2's agent hands back its emptied second block. bt6's need has
# dropped since, so it never retried: its operator error is stale.
released = NODES["bt2"].blocks["batch"]["ipv4"].pop(1)
POOLS["batch"]["ipv4"].release(released)

LIVE = sorted((n for n in NODES.values() if not n.deleted), key=lambda n: n.name)
assert len(LIVE) == 36


def usable_addrs(pool, blk):
    """Addresses a pod may get in a block (ints), per allowFirstIP/allowLastIP."""
    lo, hi = int(blk.network_address), int(blk.broadcast_address)
    if pool not in ALLOW_FIRST:
        lo += 1
    hi -= 1  # allowLastIP is false everywhere
    return lo, hi


def random_in(pool, blk, taken):
    lo, hi = usable_addrs(pool, blk)
    while True:
        a = rng.randint(lo, hi)
        if a not in taken:
            taken.add(a)
            return a


def addr_str(version, a):
    return str(ipaddress.IPv4Address(a) if version == 4 else ipaddress.IPv6Address(a))


# Infrastructure IPs: router (CiliumInternalIP) and health IPs from the first default blocks.
TAKEN = {}  # node key -> set of ints already used on that node (v4 and v6 ints never collide here)
for node in LIVE:
    taken = TAKEN.setdefault(node.key, set())
    b4 = node.blocks["default"]["ipv4"][0]
    b6 = node.blocks["default"]["ipv6"][0]
    node.router4 = addr_str(4, random_in("default", b4, taken))
    node.router6 = addr_str(6, random_in("default", b6, taken))
    node.health4 = addr_str(4, random_in("default", b4, taken))
    node.health6 = addr_str(6, random_in("default", b6, taken))


# --------------------------------------------------------------------------- workloads

# (namespace, name, kind, replicas, image, port, cpu, memory)
DEFAULT_WL = [
    ("kube-system", "coredns", "Deployment", 2, "registry.k8s.io/coredns/coredns:v1.11.3", 53, "100m", "70Mi"),
    ("kube-system", "ebs-csi-controller", "Deployment", 2, "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.37.0", 9808, "10m", "40Mi"),
    ("kube-system", "hubble-relay", "Deployment", 1, "quay.io/cilium/hubble-relay:" + CILIUM_TAG, 4245, "50m", "64Mi"),
    ("kube-system", "hubble-ui", "Deployment", 1, "quay.io/cilium/hubble-ui:v0.13.1", 8081, "50m", "64Mi"),
    ("kube-system", "metrics-server", "Deployment", 2, "registry.k8s.io/metrics-server/metrics-server:v0.7.2", 10250, "100m", "200Mi"),
    ("kube-system", "cluster-autoscaler", "Deployment", 1, "registry.k8s.io/autoscaling/cluster-autoscaler:v1.31.0", 8085, "100m", "300Mi"),
    ("kube-system", "aws-load-balancer-controller", "Deployment", 2, "public.ecr.aws/eks/aws-load-balancer-controller:v2.9.2", 9443, "100m", "128Mi"),
    ("kube-system", "external-dns", "Deployment", 1, "registry.k8s.io/external-dns/external-dns:v0.15.0", 7979, "50m", "64Mi"),
    ("monitoring", "alertmanager-main", "StatefulSet", 3, "quay.io/prometheus/alertmanager:v0.27.0", 9093, "100m", "128Mi"),
    ("monitoring", "prometheus-k8s", "StatefulSet", 2, "quay.io/prometheus/prometheus:v2.55.1", 9090, "1", "6Gi"),
    ("monitoring", "loki", "StatefulSet", 3, "docker.io/grafana/loki:3.2.1", 3100, "500m", "2Gi"),
    ("monitoring", "grafana", "Deployment", 1, "docker.io/grafana/grafana:11.3.0", 3000, "100m", "256Mi"),
    ("monitoring", "kube-state-metrics", "Deployment", 1, "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0", 8080, "100m", "190Mi"),
    ("monitoring", "prometheus-operator", "Deployment", 1, "quay.io/prometheus-operator/prometheus-operator:v0.78.1", 8080, "100m", "100Mi"),
    ("monitoring", "blackbox-exporter", "Deployment", 1, "quay.io/prometheus/blackbox-exporter:v0.25.0", 9115, "10m", "20Mi"),
    ("monitoring", "otel-collector", "Deployment", 4, "docker.io/otel/opentelemetry-collector-contrib:0.113.0", 4317, "200m", "512Mi"),
    ("default", "echo-server", "Deployment", 2, "registry.k8s.io/e2e-test-images/agnhost:2.52", 8080, "10m", "16Mi"),
    ("default", "nginx-test", "Deployment", 2, "docker.io/library/nginx:1.27.2", 80, "10m", "16Mi"),
    ("ingress-nginx", "ingress-nginx-controller", "Deployment", 3, "registry.k8s.io/ingress-nginx/controller:v1.11.3", 443, "200m", "256Mi"),
    ("cert-manager", "cert-manager", "Deployment", 1, "quay.io/jetstack/cert-manager-controller:v1.16.1", 9402, "10m", "64Mi"),
    ("cert-manager", "cert-manager-cainjector", "Deployment", 1, "quay.io/jetstack/cert-manager-cainjector:v1.16.1", None, "10m", "64Mi"),
    ("cert-manager", "cert-manager-webhook", "Deployment", 1, "quay.io/jetstack/cert-manager-webhook:v1.16.1", 10250, "10m", "32Mi"),
    ("argocd", "argocd-server", "Deployment", 2, "quay.io/argoproj/argocd:v2.13.0", 8080, "100m", "128Mi"),
    ("argocd", "argocd-repo-server", "Deployment", 2, "quay.io/argoproj/argocd:v2.13.0", 8081, "100m", "256Mi"),
    ("argocd", "argocd-application-controller", "StatefulSet", 1, "quay.io/argoproj/argocd:v2.13.0", 8082, "250m", "1Gi"),
    ("argocd", "argocd-applicationset-controller", "Deployment", 1, "quay.io/argoproj/argocd:v2.13.0", 7000, "50m", "64Mi"),
    ("argocd", "argocd-redis", "Deployment", 1, "public.ecr.aws/docker/library/redis:7.4.1-alpine", 6379, "50m", "64Mi"),
    ("shop", "frontend", "Deployment", 18, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/frontend:2025.11.3", 8080, "100m", "64Mi"),
    ("shop", "cartservice", "Deployment", 8, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/cartservice:2025.11.3", 7070, "200m", "128Mi"),
    ("shop", "checkoutservice", "Deployment", 6, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/checkoutservice:2025.11.3", 5050, "100m", "64Mi"),
    ("shop", "productcatalogservice", "Deployment", 8, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/productcatalogservice:2025.11.3", 3550, "100m", "64Mi"),
    ("shop", "recommendationservice", "Deployment", 6, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/recommendationservice:2025.11.3", 8080, "100m", "220Mi"),
    ("shop", "currencyservice", "Deployment", 4, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/currencyservice:2025.11.3", 7000, "100m", "64Mi"),
    ("shop", "paymentservice", "Deployment", 4, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/paymentservice:2025.11.3", 50051, "100m", "64Mi"),
    ("shop", "shippingservice", "Deployment", 4, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/shippingservice:2025.11.3", 50051, "100m", "64Mi"),
    ("shop", "emailservice", "Deployment", 3, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/emailservice:2025.11.3", 8080, "100m", "64Mi"),
    ("shop", "adservice", "Deployment", 3, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/adservice:2025.11.3", 9555, "200m", "180Mi"),
    ("shop", "loadgenerator", "Deployment", 1, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/loadgenerator:2025.11.3", None, "300m", "256Mi"),
    ("shop", "redis-cart", "StatefulSet", 1, "public.ecr.aws/docker/library/redis:7.4.1-alpine", 6379, "70m", "200Mi"),
    ("search", "search-api", "Deployment", 16, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/search/search-api:1.42.0", 8080, "250m", "512Mi"),
    ("search", "search-indexer", "Deployment", 4, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/search/search-indexer:1.42.0", 8080, "500m", "1Gi"),
    ("search", "opensearch", "StatefulSet", 3, "public.ecr.aws/opensearchproject/opensearch:2.18.0", 9200, "1", "4Gi"),
    ("payments", "payments-api", "Deployment", 10, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/payments/payments-api:3.7.1", 8443, "250m", "256Mi"),
    ("payments", "fraud-scoring", "Deployment", 8, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/payments/fraud-scoring:3.7.1", 8080, "500m", "768Mi"),
    ("payments", "ledger-sync", "Deployment", 4, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/payments/ledger-sync:3.7.1", 8080, "100m", "128Mi"),
    ("payments", "payments-worker", "Deployment", 10, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/payments/payments-worker:3.7.1", None, "250m", "256Mi"),
]
DAEMONSETS = [  # non-hostNetwork DaemonSets on every node (default pool)
    ("kube-system", "ebs-csi-node", "public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver:v1.37.0", 9808, "10m", "40Mi"),
    ("monitoring", "fluent-bit", "cr.fluentbit.io/fluent/fluent-bit:3.1.9", 2020, "50m", "64Mi"),
    ("kube-system", "node-problem-detector", "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.20", 20257, "10m", "80Mi"),
]
BLUE_WL = [
    ("team-blue", "api-gateway", "Deployment", 8, 8080),
    ("team-blue", "orders", "Deployment", 16, 8080),
    ("team-blue", "inventory", "Deployment", 10, 8080),
    ("team-blue", "pricing", "Deployment", 6, 8080),
    ("team-blue", "notifications", "Deployment", 6, 8080),
    ("team-blue", "blue-worker", "Deployment", 18, None),
    ("team-blue", "postgres-proxy", "Deployment", 5, 5432),
    ("team-blue", "ledger", "StatefulSet", 3, 7000),
]
GREEN_WL = [
    ("team-green", "ml-inference", "Deployment", 18, 8501),
    ("team-green", "feature-store", "Deployment", 8, 6566),
    ("team-green", "model-registry", "Deployment", 3, 5000),
    ("team-green", "green-web", "Deployment", 10, 8080),
    ("team-green", "embeddings", "Deployment", 8, 8080),
    ("team-green", "vector-db", "StatefulSet", 3, 6333),
]
BATCH_JOBS = [  # CronJob-created Jobs in batch-jobs, pods annotated with the batch pool
    ("etl-nightly", 48, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/data/etl:2025.11.18", "500m", "1Gi"),
    ("feature-backfill", 30, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/data/feature-backfill:0.9.4", "1", "2Gi"),
    ("report-builder", 20, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/data/report-builder:4.1.0", "250m", "512Mi"),
]
SPARK_EXECUTORS = 24

PODS = []  # pod records (dicts), rendered later
LOAD = {}


def schedule(group_keys):
    best = min(group_keys, key=lambda k: (LOAD.get(k, 0), rng.random()))
    LOAD[best] = LOAD.get(best, 0) + 1
    return NODES[best]


def group_keys(group):
    return [n.key for n in LIVE if n.group == group]


def owner(api, kind, name, uid, controller=True):
    return {"apiVersion": api, "blockOwnerDeletion": True, "controller": controller,
            "kind": kind, "name": name, "uid": uid}


def add_pod(ns, name, node, pool, image, port, cpu, mem, labels, owner_ref, created,
            generate_name=None, annotations=None, host=False, restart="Always", sa=None,
            node_selector=None, container=None, phase="Running", finished=None):
    rec = {
        "ns": ns, "name": name, "node": node, "pool": None if host else pool, "image": image,
        "port": port, "cpu": cpu, "mem": mem, "labels": labels, "owner": owner_ref,
        "created": created, "generate_name": generate_name, "annotations": annotations or {},
        "host": host, "restart": restart, "sa": sa or "default", "node_selector": node_selector,
        "container": container or name, "phase": phase, "finished": finished, "ips": [],
        "uid": new_uid(),
    }
    PODS.append(rec)
    return rec


def deployment_pods(ns, name, replicas, keys, pool, image, port, cpu, mem, extra_labels=None,
                    annotations=None, host=False, node_selector=None, sa=None):
    h = suffix(rng.choice((9, 10)))
    rs = "%s-%s" % (name, h)
    rs_uid = new_uid()
    recs = []
    for _ in range(replicas):
        node = schedule(keys)
        labels = {"app.kubernetes.io/name": name, "pod-template-hash": h}
        labels.update(extra_labels or {})
        created = between(max(node.created + 5 * MIN, NOW - 19 * DAY), NOW - 2 * HOUR)
        recs.append(add_pod(ns, rs + "-" + suffix(), node, pool, image, port, cpu, mem, labels,
                            owner("apps/v1", "ReplicaSet", rs, rs_uid), created, generate_name=rs + "-",
                            annotations=dict(annotations or {}), host=host, node_selector=node_selector,
                            sa=sa or name, container=name))
    return recs


def statefulset_pods(ns, name, replicas, keys, pool, image, port, cpu, mem, node_selector=None):
    rev = "%s-%s" % (name, suffix(10))
    sts_uid = new_uid()
    recs = []
    for i in range(replicas):
        node = schedule(keys)
        pod = "%s-%d" % (name, i)
        labels = {"app.kubernetes.io/name": name, "apps.kubernetes.io/pod-index": str(i),
                  "controller-revision-hash": rev, "statefulset.kubernetes.io/pod-name": pod}
        created = between(max(node.created + 5 * MIN, NOW - 25 * DAY), NOW - 6 * HOUR)
        recs.append(add_pod(ns, pod, node, pool, image, port, cpu, mem, labels,
                            owner("apps/v1", "StatefulSet", name, sts_uid), created,
                            node_selector=node_selector, sa=name, container=name))
    return recs


def daemonset_pods(ns, name, nodes, image, port, cpu, mem, host=False, pool="default"):
    rev = suffix(rng.choice((9, 10)))
    ds_uid = new_uid()
    recs = []
    for node in nodes:
        labels = {"app.kubernetes.io/name": name, "controller-revision-hash": rev,
                  "pod-template-generation": "3"}
        created = max(node.created + rng.randint(20, 90) * SEC, NOW - 16 * DAY + rng.randint(0, 7200) * SEC)
        recs.append(add_pod(ns, "%s-%s" % (name, suffix()), node, pool, image, port, cpu, mem, labels,
                            owner("apps/v1", "DaemonSet", name, ds_uid), created,
                            generate_name=name + "-", host=host, sa=name, container=name))
    return recs


def job_pods(cron, scheduled, count, keys, image, cpu, mem, node_selector, phase="Running",
             finished=None, node=None):
    job = "%s-%d" % (cron, int(scheduled.timestamp()) // 60)
    job_uid = new_uid()
    recs = []
    for _ in range(count):
        n = node or schedule(keys)
        labels = {"app.kubernetes.io/name": cron, "batch.kubernetes.io/controller-uid": job_uid,
                  "batch.kubernetes.io/job-name": job, "controller-uid": job_uid, "job-name": job}
        created = scheduled + rng.randint(1, 40) * SEC
        recs.append(add_pod("batch-jobs", "%s-%s" % (job, suffix()), n, "batch", image, None, cpu, mem,
                            labels, owner("batch/v1", "Job", job, job_uid), created,
                            generate_name=job + "-", annotations={"ipam.cilium.io/ip-pool": "batch"},
                            restart="Never", sa="batch-runner", node_selector=node_selector,
                            container=cron, phase=phase, finished=finished))
    return recs


GENERAL = group_keys("general")
for ns, name, kind, reps, image, port, cpu, mem in DEFAULT_WL:
    if kind == "Deployment":
        deployment_pods(ns, name, reps, GENERAL, "default", image, port, cpu, mem)
    else:
        statefulset_pods(ns, name, reps, GENERAL, "default", image, port, cpu, mem)
for ns, name, image, port, cpu, mem in DAEMONSETS:
    daemonset_pods(ns, name, LIVE, image, port, cpu, mem)

# hostNetwork pods: the operator and the spot-interruption handler.
deployment_pods("kube-system", "cilium-operator", 2, GENERAL, None,
                "quay.io/cilium/operator-aws:" + CILIUM_TAG, 9963, "100m", "128Mi", host=True)
SPOT = [NODES[k] for k in ("bt3", "bt4", "bt5", "bt6")]
daemonset_pods("kube-system", "aws-node-termination-handler", sorted(SPOT, key=lambda n: n.name),
               "public.ecr.aws/aws-ec2/aws-node-termination-handler:v1.22.0", 9092, "50m", "64Mi",
               host=True, pool=None)

# team-blue (namespace labelled team=blue, matched by blue's namespaceSelector).
BLUE_KEYS = [k for k in group_keys("blue") if k != "bgrand"]
BLUE_SEL = {"eks.amazonaws.com/nodegroup": "blue"}
blue_by_wl = {}
for ns, name, kind, reps, port in BLUE_WL:
    image = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/blue/%s:5.3.0" % name
    ann = {"ipam.cilium.io/ip-pool": "blue"} if name == "postgres-proxy" else None
    if kind == "Deployment":
        blue_by_wl[name] = deployment_pods(ns, name, reps, BLUE_KEYS, "blue", image, port, "200m", "256Mi",
                                           annotations=ann, node_selector=BLUE_SEL)
    else:
        blue_by_wl[name] = statefulset_pods(ns, name, reps, BLUE_KEYS, "blue", image, port, "500m", "1Gi",
                                            node_selector=BLUE_SEL)
# bgrand (holding the grandfathered 10.41.3.0/24) was cordoned before all its pods moved.
for name, idx in (("orders", 3), ("inventory", 1), ("ledger", 2), ("blue-worker", 7)):
    rec = blue_by_wl[name][idx]
    LOAD[rec["node"].key] -= 1
    rec["node"] = NODES["bgrand"]
    rec["created"] = between(NODES["bgrand"].created + DAY, BLUE_RECONFIG - DAY)

# team-green (namespace annotated ipam.cilium.io/ip-pool=green).
GREEN_KEYS = group_keys("green")
GREEN_SEL = {"eks.amazonaws.com/nodegroup": "green"}
for ns, name, kind, reps, port in GREEN_WL:
    image = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/green/%s:2.8.1" % name
    if kind == "Deployment":
        deployment_pods(ns, name, reps, GREEN_KEYS, "green", image, port, "500m", "1Gi", node_selector=GREEN_SEL)
    else:
        statefulset_pods(ns, name, reps, GREEN_KEYS, "green", image, port, "1", "4Gi", node_selector=GREEN_SEL)

# batch-jobs: tonight's CronJob runs plus a Spark application.
BATCH_KEYS = group_keys("batch")
BATCH_SEL = {"eks.amazonaws.com/nodegroup": "batch"}
for i, (cron, count, image, cpu, mem) in enumerate(BATCH_JOBS):
    job_pods(cron, NOW - (5 - i) * HOUR, count, BATCH_KEYS, image, cpu, mem, BATCH_SEL)
spark_app = "spark-aggregate-%08x" % rng.getrandbits(32)
spark_sel = "spark-%032x" % rng.getrandbits(128)
spark_img = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/data/spark:3.5.3"
spark_start = NOW - 3 * HOUR
driver = add_pod("batch-jobs", spark_app + "-driver", schedule(BATCH_KEYS), "batch", spark_img, 7078,
                 "1", "4Gi", {"spark-app-name": "spark-aggregate", "spark-app-selector": spark_sel,
                              "spark-role": "driver"}, None, spark_start,
                 annotations={"ipam.cilium.io/ip-pool": "batch"}, restart="Never", sa="spark",
                 node_selector=BATCH_SEL, container="spark-kubernetes-driver")
for i in range(1, SPARK_EXECUTORS + 1):
    add_pod("batch-jobs", "%s-exec-%d" % (spark_app, i), schedule(BATCH_KEYS), "batch", spark_img, 7079,
            "2", "8Gi", {"spark-app-name": "spark-aggregate", "spark-app-selector": spark_sel,
                         "spark-exec-id": str(i), "spark-role": "executor"},
            owner("v1", "Pod", driver["name"], driver["uid"]), spark_start + rng.randint(30, 90) * SEC,
            annotations={"ipam.cilium.io/ip-pool": "batch"}, restart="Never", sa="spark",
            node_selector=BATCH_SEL, container="spark-kubernetes-executor")

# billing-adapter: the last pod holding an IP of the deleted pool "legacy" (on g3).
legacy_pod = deployment_pods("billing", "billing-adapter", 1, ["g3"], "legacy",
                             "123456789012.dkr.ecr.eu-west-1.amazonaws.com/billing/adapter:0.14.2", 8080,
                             "100m", "128Mi", annotations={"ipam.cilium.io/ip-pool": "legacy"})[0]
legacy_pod["created"] = NODES["g3"].created + 40 * DAY


# --------------------------------------------------------------------------- pod IPs

def node_blocks(node, pool, fam):
    return node.blocks.get(pool, {}).get(fam, [])


def assign_ips():
    by_np = {}
    for rec in PODS:
        if rec["host"] or rec["phase"] != "Running":
            continue
        by_np.setdefault((rec["node"].key, rec["pool"]), []).append(rec)
    for (key, pool), recs in by_np.items():
        node = NODES[key]
        taken = TAKEN[key]
        fams = ["ipv4", "ipv6"] if pool in DUAL_STACK else ["ipv4"]
        order = list(recs)
        rng.shuffle(order)
        for fam in fams:
            blks = node_blocks(node, pool, fam)
            assert blks, (node.name, pool, fam)
            version = 4 if fam == "ipv4" else 6
            for i, rec in enumerate(order):
                # the first pods go one per block, so no block on a node is empty
                blk = blks[i] if i < len(blks) else rng.choice(blks)
                rec["ips"].append(addr_str(version, random_in(pool, blk, taken)))


# allowFirstIP in action: the first green pod on gr1 gets the network addresses of its blocks.
assign_ips()
GR1_BLK0 = node_blocks(NODES["gr1"], "green", "ipv4")[0]
gr1_first = sorted((r for r in PODS if r["node"].key == "gr1" and r["pool"] == "green" and not r["host"]
                    and ip(r["ips"][0]) in GR1_BLK0), key=lambda r: r["name"])[0]
for i, fam in enumerate(("ipv4", "ipv6")):
    blk = node_blocks(NODES["gr1"], "green", fam)[0]
    old = gr1_first["ips"][i]
    version = 4 if fam == "ipv4" else 6
    TAKEN["gr1"].discard(int(ip(old)))
    TAKEN["gr1"].add(int(blk.network_address))
    gr1_first["ips"][i] = addr_str(version, int(blk.network_address))

# Completed pods: kubelet keeps the podIP of terminated pods; the IPs are reused since.
RUNNING = [r for r in PODS if r["phase"] == "Running" and not r["host"]]


def completed_pod(ns, name, gen, kind_owner, pool, phase, mode, node_key, labels, image, started, ended,
                  annotations=None):
    node = NODES[node_key]
    if mode == "dup":
        victim = sorted((r for r in RUNNING if r["node"].key == node_key and r["pool"] == pool),
                        key=lambda r: r["name"])[rng.randint(0, 2)]
        ips = list(victim["ips"])
    else:
        ips = []
        for fam in (["ipv4", "ipv6"] if pool in DUAL_STACK else ["ipv4"]):
            blk = rng.choice(node_blocks(node, pool, fam))
            ips.append(addr_str(4 if fam == "ipv4" else 6, random_in(pool, blk, TAKEN[node_key])))
    rec = add_pod(ns, name, node, pool, image, None, "100m", "128Mi", labels, kind_owner, started,
                  generate_name=gen, annotations=annotations, restart="Never", sa="default",
                  phase=phase, finished=ended)
    rec["ips"] = ips
    return rec


def job_ref(job):
    uid = new_uid()
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": job,
              "controller-uid": uid, "job-name": job}
    return owner("batch/v1", "Job", job, uid), labels


yesterday = NOW - DAY - 5 * HOUR
etl_prev = "etl-nightly-%d" % (int(yesterday.timestamp()) // 60)
etl_ref, etl_labels = job_ref(etl_prev)
COMPLETED = []
for node_key in ("bt1", "bt3"):
    COMPLETED.append(completed_pod("batch-jobs", "%s-%s" % (etl_prev, suffix()), etl_prev + "-", etl_ref, "batch",
                                   "Succeeded", "dup", node_key, dict(etl_labels), BATCH_JOBS[0][2],
                                   yesterday + 20 * SEC, yesterday + 2 * HOUR,
                                   {"ipam.cilium.io/ip-pool": "batch"}))
fb_prev = "feature-backfill-%d" % (int((yesterday + HOUR).timestamp()) // 60)
ref, lab = job_ref(fb_prev)
COMPLETED.append(completed_pod("batch-jobs", "%s-%s" % (fb_prev, suffix()), fb_prev + "-", ref, "batch", "Succeeded",
                               "free", "bt5", lab, BATCH_JOBS[1][2], yesterday + HOUR, yesterday + 3 * HOUR,
                               {"ipam.cilium.io/ip-pool": "batch"}))
rb_prev = "report-builder-%d" % (int((yesterday + 2 * HOUR).timestamp()) // 60)
ref, lab = job_ref(rb_prev)
COMPLETED.append(completed_pod("batch-jobs", "%s-%s" % (rb_prev, suffix()), rb_prev + "-", ref, "batch", "Failed",
                               "dup", "bt6", lab, BATCH_JOBS[2][2], yesterday + 2 * HOUR,
                               yesterday + 2 * HOUR + 7 * MIN, {"ipam.cilium.io/ip-pool": "batch"}))
ref, lab = job_ref("shop-db-migrate-57")
COMPLETED.append(completed_pod("shop", "shop-db-migrate-57-%s" % suffix(), "shop-db-migrate-57-", ref, "default",
                               "Succeeded", "dup", "g4", lab,
                               "123456789012.dkr.ecr.eu-west-1.amazonaws.com/shop/db-migrate:2025.11.3",
                               NOW - 2 * DAY, NOW - 2 * DAY + 3 * MIN))
pb = "prometheus-backup-%d" % (int((NOW - 9 * HOUR).timestamp()) // 60)
ref, lab = job_ref(pb)
COMPLETED.append(completed_pod("monitoring", "%s-%s" % (pb, suffix()), pb + "-", ref, "default", "Succeeded",
                               "free", "g7", lab, "docker.io/bitnami/kubectl:1.31.2",
                               NOW - 9 * HOUR, NOW - 9 * HOUR + 11 * MIN))
ref, lab = job_ref("orders-schema-check")
COMPLETED.append(completed_pod("team-blue", "orders-schema-check-%s" % suffix(), "orders-schema-check-", ref, "blue",
                               "Failed", "dup", "b3", lab,
                               "123456789012.dkr.ecr.eu-west-1.amazonaws.com/blue/orders:5.3.0",
                               NOW - 30 * HOUR, NOW - 30 * HOUR + 2 * MIN, {"ipam.cilium.io/ip-pool": "blue"}))
mt = "model-train-%d" % (int((NOW - 14 * HOUR).timestamp()) // 60)
ref, lab = job_ref(mt)
COMPLETED.append(completed_pod("team-green", "%s-%s" % (mt, suffix()), mt + "-", ref, "green", "Failed", "free",
                               "gr5", lab, "123456789012.dkr.ecr.eu-west-1.amazonaws.com/green/model-train:2.8.1",
                               NOW - 14 * HOUR, NOW - 13 * HOUR))

# hostNetwork pods use the node's InternalIP.
for rec in PODS:
    if rec["host"]:
        rec["ips"] = [rec["node"].ip]

# Five freshly started pods whose CiliumEndpoint the agent has not written yet.
candidates = sorted((r for r in RUNNING if r["pool"] in ("default", "blue", "green")),
                    key=lambda r: (r["ns"], r["name"]))
NO_CEP = set()
for rec in rng.sample(candidates, 5):
    rec["created"] = NOW - rng.randint(4, 25) * SEC
    NO_CEP.add((rec["ns"], rec["name"]))


# --------------------------------------------------------------------------- rendering

def render_pod(rec):
    node = rec["node"]
    created = rec["created"]
    meta = {"creationTimestamp": ts(created), "labels": rec["labels"], "name": rec["name"],
            "namespace": rec["ns"], "resourceVersion": new_rv(), "uid": rec["uid"]}
    if rec["generate_name"]:
        meta["generateName"] = rec["generate_name"]
    if rec["owner"]:
        meta["ownerReferences"] = [rec["owner"]]
    if rec["annotations"]:
        meta["annotations"] = rec["annotations"]
    container = {"image": rec["image"], "imagePullPolicy": "IfNotPresent", "name": rec["container"],
                 "resources": {"limits": {"memory": rec["mem"]}, "requests": {"cpu": rec["cpu"], "memory": rec["mem"]}},
                 "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
    if rec["port"]:
        container["ports"] = [{"containerPort": rec["port"], "name": "metrics" if rec["host"] else "http",
                               "protocol": "TCP"}]
    spec = {"containers": [container], "dnsPolicy": "ClusterFirstWithHostNet" if rec["host"] else "ClusterFirst",
            "enableServiceLinks": True, "nodeName": node.name, "preemptionPolicy": "PreemptLowerPriority",
            "priority": 2000000000 if rec["ns"] == "kube-system" and rec["host"] else 0,
            "restartPolicy": rec["restart"], "schedulerName": "default-scheduler", "securityContext": {},
            "serviceAccount": rec["sa"], "serviceAccountName": rec["sa"], "terminationGracePeriodSeconds": 30}
    if rec["host"]:
        spec["hostNetwork"] = True
        spec["priorityClassName"] = "system-cluster-critical"
    if rec["node_selector"]:
        spec["nodeSelector"] = rec["node_selector"]
    t_sched = created + SEC
    t_ready = created + rng.randint(3, 40) * SEC
    if rec["phase"] == "Running":
        conds = [("PodReadyToStartContainers", "True", t_ready, None), ("Initialized", "True", t_sched, None),
                 ("Ready", "True", t_ready, None), ("ContainersReady", "True", t_ready, None),
                 ("PodScheduled", "True", created, None)]
    else:
        reason = "PodCompleted" if rec["phase"] == "Succeeded" else "PodFailed"
        conds = [("PodReadyToStartContainers", "False", rec["finished"], None),
                 ("Initialized", "True", t_sched, reason), ("Ready", "False", rec["finished"], reason),
                 ("ContainersReady", "False", rec["finished"], reason), ("PodScheduled", "True", created, None)]
    conditions = []
    for ctype, status, when, reason in conds:
        c = {"lastProbeTime": None, "lastTransitionTime": ts(when), "status": status, "type": ctype}
        if reason:
            c["reason"] = reason
        conditions.append(c)
    status = {"conditions": conditions, "hostIP": node.ip, "hostIPs": [{"ip": node.ip}], "phase": rec["phase"],
              "podIP": rec["ips"][0], "podIPs": [{"ip": a} for a in rec["ips"]],
              "qosClass": "Burstable", "startTime": ts(created + SEC)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


IDENTITIES = {}


def render_cep(rec):
    key = (rec["ns"], rec["labels"].get("app.kubernetes.io/name") or rec["labels"].get("spark-role"))
    if key not in IDENTITIES:
        IDENTITIES[key] = rng.randint(10000, 65000)
    addressing = {"ipv4": rec["ips"][0]}
    if len(rec["ips"]) > 1:
        addressing["ipv6"] = rec["ips"][1]
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumEndpoint",
        "metadata": {
            "creationTimestamp": ts(rec["created"] + rng.randint(2, 6) * SEC),
            "generation": 1,
            "name": rec["name"],
            "namespace": rec["ns"],
            "ownerReferences": [{"apiVersion": "v1", "blockOwnerDeletion": True, "kind": "Pod",
                                 "name": rec["name"], "uid": rec["uid"]}],
            "resourceVersion": new_rv(),
            "uid": new_uid(),
        },
        "status": {
            "encryption": {},
            "external-identifiers": {"k8s-namespace": rec["ns"], "k8s-pod-name": rec["name"],
                                     "pod-name": "%s/%s" % (rec["ns"], rec["name"])},
            "id": rec["endpoint_id"],
            "identity": {"id": IDENTITIES[key], "labels": [
                "k8s:app.kubernetes.io/name=%s" % key[1],
                "k8s:io.cilium.k8s.policy.cluster=%s" % CLUSTER,
                "k8s:io.cilium.k8s.policy.serviceaccount=%s" % rec["sa"],
                "k8s:io.kubernetes.pod.namespace=%s" % rec["ns"]]},
            "networking": {"addressing": [addressing], "node": rec["node"].ip},
            "state": "ready",
        },
    }


def used_counts():
    """(node key, pool, family) -> addresses in use (running pods + infrastructure IPs)."""
    counts = {}
    for rec in PODS:
        if rec["host"] or rec["phase"] != "Running":
            continue
        for a in rec["ips"]:
            fam = "ipv4" if ip(a).version == 4 else "ipv6"
            k = (rec["node"].key, rec["pool"], fam)
            counts[k] = counts.get(k, 0) + 1
    for node in LIVE:
        for fam in ("ipv4", "ipv6"):
            k = (node.key, "default", fam)
            counts[k] = counts.get(k, 0) + 2  # router + health
    return counts


def render_node(node, counts):
    requested, allocated = [], []
    for pool, fams in node.blocks.items():
        needed = {}
        for fam in ("ipv4", "ipv6"):
            if fams[fam]:
                needed[fam + "-addrs"] = counts.get((node.key, pool, fam), 0) + PREALLOC.get(pool, 0)
        requested.append({"pool": pool, "needed": needed})
        entry = {"pool": pool, "cidrs": [str(b) for b in sorted(fams["ipv4"])] + [str(b) for b in sorted(fams["ipv6"])]}
        if pool in ALLOW_FIRST:
            entry["allowFirstIP"] = True
        allocated.append(entry)
    meta = {
        "creationTimestamp": ts(node.created + 95 * SEC),
        "generation": rng.randint(12, 180),
        "labels": {
            "alpha.eksctl.io/cluster-name": CLUSTER,
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/instance-type": node.instance_type,
            "beta.kubernetes.io/os": "linux",
            "eks.amazonaws.com/capacityType": "SPOT" if node in SPOT else "ON_DEMAND",
            "eks.amazonaws.com/nodegroup": node.group,
            "failure-domain.beta.kubernetes.io/region": REGION,
            "failure-domain.beta.kubernetes.io/zone": node.zone,
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": node.name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": node.instance_type,
            "topology.kubernetes.io/region": REGION,
            "topology.kubernetes.io/zone": node.zone,
        },
        "name": node.name,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.node_uid}],
        "resourceVersion": new_rv(),
        "uid": node.uid,
    }
    if node.annotations:
        meta["annotations"] = dict(node.annotations)
    operator_status = {"error": node.operator_error} if node.operator_error else {}
    return {
        "apiVersion": "cilium.io/v2",
        "kind": "CiliumNode",
        "metadata": meta,
        "spec": {
            "addresses": [{"ip": node.ip, "type": "InternalIP"},
                          {"ip": node.router4, "type": "CiliumInternalIP"},
                          {"ip": node.router6, "type": "CiliumInternalIP"}],
            "alibaba-cloud": {},
            "azure": {},
            "bootid": node.boot_id,
            "encryption": {},
            "eni": {},
            "health": {"ipv4": node.health4, "ipv6": node.health6},
            "ingress": {},
            "instance-id": node.instance_id,
            "ipam": {"pools": {"allocated": allocated, "requested": requested}},
        },
        "status": {"alibaba-cloud": {}, "azure": {}, "eni": {}, "ipam": {"operator-status": operator_status}},
    }


# ---- CRD

def label_selector_schema():
    return {
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {
            "matchExpressions": {
                "type": "array",
                "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                        "values": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
                    },
                },
            },
            "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }


def immutable(field):
    return [{"message": "%s is immutable" % field, "rule": "self == oldSelf"}]


def family_schema(bits, upstream):
    fam = {
        "type": "object",
        "required": ["cidrs", "maskSize"],
        "properties": {
            "cidrs": {"type": "array", "minItems": 1, "maxItems": 32,
                      "items": {"type": "string", "format": "cidr"}},
            "maskSize": {"type": "integer", "minimum": 1, "maximum": bits,
                         "x-kubernetes-validations": immutable("maskSize")},
        },
    }
    if upstream:
        fam["properties"]["pool"] = {
            "type": "array",
            "maxItems": 32,
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["cidr"],
            "items": {
                "type": "object",
                "required": ["cidr"],
                "properties": {
                    "cidr": {"type": "string", "format": "cidr"},
                    "reservedRanges": {
                        "type": "array",
                        "maxItems": 32,
                        "items": {"type": "object", "required": ["start", "end"],
                                  "properties": {"start": {"type": "string"}, "end": {"type": "string"}}},
                    },
                },
            },
        }
        fam["x-kubernetes-validations"] = [{
            "message": "every pool[].cidr must be listed in cidrs",
            "rule": "!has(self.pool) || self.pool.all(p, p.cidr in self.cidrs)",
        }]
    return fam


def pool_schema(upstream):
    return {"openAPIV3Schema": {
        "type": "object",
        "description": "CiliumPodIPPool defines an IP pool that can be used for pooled IPAM "
                       "(i.e. the multi-pool IPAM mode).",
        "required": ["metadata", "spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    "ipv4": family_schema(32, upstream),
                    "ipv6": family_schema(128, upstream),
                    "namespaceSelector": label_selector_schema(),
                    "podSelector": label_selector_schema(),
                    "allowFirstIP": {"type": "boolean", "x-kubernetes-validations": immutable("allowFirstIP")},
                    "allowLastIP": {"type": "boolean", "x-kubernetes-validations": immutable("allowLastIP")},
                },
            },
        },
    }}


def render_crd():
    names = {"categories": ["cilium", "ciliumpod"], "kind": "CiliumPodIPPool", "listKind": "CiliumPodIPPoolList",
             "plural": "ciliumpodippools", "shortNames": ["cpip"], "singular": "ciliumpodippool"}
    established = CLUSTER_BIRTH - 4 * MIN
    printer = [{"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "creationTimestamp": ts(established),
            "generation": 3,
            "name": "ciliumpodippools.cilium.io",
            "resourceVersion": new_rv(),
            "uid": new_uid(),
        },
        "spec": {
            "conversion": {"strategy": "None"},
            "group": "cilium.io",
            "names": names,
            "scope": "Cluster",
            "versions": [
                {"additionalPrinterColumns": printer, "name": "v2alpha1", "schema": pool_schema(False),
                 "served": True, "storage": False},
                {"additionalPrinterColumns": printer, "name": "v2", "schema": pool_schema(True),
                 "served": True, "storage": True},
            ],
        },
        "status": {
            "acceptedNames": names,
            "conditions": [
                {"lastTransitionTime": ts(established), "message": "no conflicts found", "reason": "NoConflicts",
                 "status": "True", "type": "NamesAccepted"},
                {"lastTransitionTime": ts(established), "message": "the initial names have been accepted",
                 "reason": "InitialNamesAccepted", "status": "True", "type": "Established"},
            ],
            "storedVersions": ["v2alpha1", "v2"],
        },
    }


def render_pools():
    def meta(name, created, generation, annotations=None):
        m = {"creationTimestamp": ts(created), "generation": generation, "name": name,
             "resourceVersion": new_rv(), "uid": new_uid()}
        if annotations:
            m["annotations"] = annotations
        return m

    return [
        {"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
         "metadata": meta("default", CLUSTER_BIRTH - 2 * MIN, 1),
         "spec": {"ipv4": {"cidrs": ["10.10.0.0/16"], "maskSize": 24},
                  "ipv6": {"cidrs": ["fd00:10::/104"], "maskSize": 120}}},
        {"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool",
         "metadata": meta("blue", CLUSTER_BIRTH - 1 * MIN, 4, {
             "cilium.io/migrated-to-v2": "true",
             "network.prod-eu1.example.com/change-ticket": "NET-4821",
             "network.prod-eu1.example.com/note": "drain 10.41.0.0/16; 10.40.255.254 is the gateway",
         }),
         "spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24,
                           "pool": [{"cidr": "10.40.0.0/16",
                                     "reservedRanges": [{"start": "10.40.255.254", "end": "10.40.255.254"}]},
                                    {"cidr": "10.41.0.0/16",
                                     "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.255.255"}]}]},
                  "namespaceSelector": {"matchLabels": {"team": "blue"}}}},
        {"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool",
         "metadata": meta("green", NODES["gr1"].created - 30 * MIN, 1),
         "spec": {"allowFirstIP": True,
                  "ipv4": {"cidrs": [{"cidr": "10.60.0.0/20", "reservedRange": "10.60.0.0-10.60.0.31"},
                                     {"cidr": "10.61.0.0/20"}], "maskSize": 26},
                  "ipv6": {"cidrs": [{"cidr": "fd00:60::/112"}], "maskSize": 120}}},
        {"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool",
         "metadata": meta("batch", NODES["bt1"].created - 20 * MIN, 1),
         "spec": {"ipv4": {"cidrs": ["10.80.0.0/22"], "maskSize": 26}}},
    ]


def build(crd, pools):
    counts = used_counts()
    # endpoint ids are unique per node
    ids = {}
    for rec in PODS:
        taken = ids.setdefault(rec["node"].key, set())
        while True:
            e = rng.randint(40, 4000)
            if e not in taken:
                taken.add(e)
                rec["endpoint_id"] = e
                break
    pods_sorted = sorted(PODS, key=lambda r: (r["ns"], r["name"]))
    pod_objs = [render_pod(r) for r in pods_sorted]
    ceps = [render_cep(r) for r in pods_sorted
            if r["phase"] == "Running" and not r["host"] and (r["ns"], r["name"]) not in NO_CEP]
    node_objs = [render_node(n, counts) for n in LIVE]
    files = {
        "crd-ciliumpodippools.yaml": to_yaml(crd),
        "pools.yaml": "---\n".join(to_yaml(p) for p in pools),
        "ciliumnodes.yaml": to_yaml(k8s_list(node_objs)),
        "pods.yaml": to_yaml(k8s_list(pod_objs)),
        "ciliumendpoints.json": to_json(k8s_list(ceps)),
        "cilium-config.yaml": to_yaml(render_cilium_config()),
    }
    return files, {"pods": pod_objs, "nodes": node_objs}


def render_cilium_config():
    """ConfigMap cilium-config: the IPAM mode (key `ipam`) and the multi-pool settings."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "cilium-config",
            "namespace": "kube-system",
            "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/part-of": "cilium"},
            "annotations": {"meta.helm.sh/release-name": "cilium", "meta.helm.sh/release-namespace": "kube-system"},
            "creationTimestamp": "2025-04-22T09:20:00Z",
            "resourceVersion": "41870112",
            "uid": "0d9e8c1a-5b7f-4e36-a2c4-7f1e9b3d6a58",
        },
        "data": {
            "cluster-name": CLUSTER,
            "ipam": "multi-pool",
            "ipam-default-ip-pool": "default",
            "enable-ipv4": "true",
            "enable-ipv6": "true",
            "auto-create-cilium-pod-ip-pools": "",
            "routing-mode": "native",
            "enable-cluster-pool-to-multi-pool-migration": "false",
        },
    }


# --------------------------------------------------------------------------- independent check

def check(pools, nodes, pods, ceps, crd):
    """Re-derive everything from the emitted objects only; return a list of problems."""
    problems = []

    def err(msg):
        problems.append(msg)

    # pools: all three dialects
    P = {}
    for obj in pools:
        spec, name = obj["spec"], obj["metadata"]["name"]
        fams = {}
        for fam in ("ipv4", "ipv6"):
            f = spec.get(fam)
            if not f:
                continue
            cidrs, reserved = [], []
            raw = []
            for c in f["cidrs"]:
                if isinstance(c, dict):
                    cidrs.append(net(c["cidr"]))
                    raw.append(c["cidr"])
                    if "reservedRange" in c:
                        a, b = c["reservedRange"].split("-")
                        reserved.append((int(ip(a)), int(ip(b))))
                else:
                    cidrs.append(net(c))
                    raw.append(c)
            for p in f.get("pool", []):
                if p["cidr"] not in raw:
                    err("pool %s: pool[].cidr %s not in cidrs" % (name, p["cidr"]))
                for r in p.get("reservedRanges", []):
                    reserved.append((int(ip(r["start"])), int(ip(r["end"]))))
            fams[fam] = {"cidrs": cidrs, "mask": f["maskSize"], "reserved": reserved}
        P[name] = {"fams": fams, "first": spec.get("allowFirstIP", False), "last": spec.get("allowLastIP", False)}

    # nodes: blocks
    block_owner = {}  # block -> (node, pool)
    node_by_name = {}
    infra = {}
    special = {"orphan": [], "reserved": []}
    for n in nodes:
        name = n["metadata"]["name"]
        node_by_name[name] = n
        internal = [a["ip"] for a in n["spec"]["addresses"] if a["type"] == "InternalIP"]
        cilium = [a["ip"] for a in n["spec"]["addresses"] if a["type"] == "CiliumInternalIP"]
        infra[name] = set(cilium + [n["spec"]["health"]["ipv4"], n["spec"]["health"]["ipv6"]])
        n["_internal"] = internal[0]
        requested = {r["pool"]: r["needed"] for r in n["spec"]["ipam"]["pools"]["requested"]}
        for entry in n["spec"]["ipam"]["pools"]["allocated"]:
            pool = entry["pool"]
            if pool not in requested:
                err("%s: allocated pool %s not requested" % (name, pool))
            for c in entry["cidrs"]:
                blk = net(c)
                if str(blk) != c:
                    err("%s: non-canonical block %s" % (name, c))
                for other in block_owner:
                    if other.version == blk.version and other.overlaps(blk):
                        err("%s: block %s overlaps %s of %s" % (name, c, other, block_owner[other]))
                block_owner[blk] = (name, pool)
                if pool not in P:
                    special["orphan"].append((name, pool, c))
                    continue
                fam = "ipv4" if blk.version == 4 else "ipv6"
                spec = P[pool]["fams"].get(fam)
                if spec is None or blk.prefixlen != spec["mask"] or not any(blk.subnet_of(x) for x in spec["cidrs"]
                                                                             if x.version == blk.version):
                    err("%s: block %s not a %s block of pool %s" % (name, c, fam, pool))
                    continue
                lo, hi = int(blk.network_address), int(blk.broadcast_address)
                if any(a <= hi and b >= lo for a, b in spec["reserved"]):
                    special["reserved"].append((name, pool, c))
                if bool(entry.get("allowFirstIP", False)) != bool(P[pool]["first"]):
                    err("%s: allowFirstIP of %s differs from the pool" % (name, pool))

    def containing(addr):
        a = ip(addr)
        for blk, owner_ in block_owner.items():
            if blk.version == a.version and a in blk:
                return blk, owner_
        return None, None

    # infrastructure IPs inside the node's default blocks
    for name, ips in infra.items():
        for a in ips:
            blk, owner_ = containing(a)
            if blk is None or owner_ != (name, "default"):
                err("%s: infrastructure IP %s not in its default blocks" % (name, a))
            elif int(ip(a)) in (int(blk.network_address), int(blk.broadcast_address)):
                err("%s: infrastructure IP %s is a block edge" % (name, a))

    # pods
    ns_pool = {"team-blue": "blue", "team-green": "green", "batch-jobs": "batch", "billing": "legacy"}
    running_ips = {}
    used = {}
    all_infra = set().union(*infra.values())
    completed = []
    for p in pods:
        md, spec, st = p["metadata"], p["spec"], p["status"]
        who = "%s/%s" % (md["namespace"], md["name"])
        node = node_by_name.get(spec["nodeName"])
        if node is None:
            err("%s: unknown node" % who)
            continue
        ips = [x["ip"] for x in st["podIPs"]]
        if st["podIP"] != ips[0]:
            err("%s: podIP != podIPs[0]" % who)
        if spec.get("hostNetwork"):
            if ips != [node["_internal"]] or containing(ips[0])[0] is not None:
                err("%s: hostNetwork pod IP wrong" % who)
            continue
        if st["phase"] != "Running":
            completed.append((who, spec["nodeName"], ips))
            continue
        pool = ns_pool.get(md["namespace"], "default")
        fams = []
        for a in ips:
            blk, owner_ = containing(a)
            if blk is None:
                err("%s: %s in no block" % (who, a))
                continue
            if owner_ != (spec["nodeName"], pool):
                err("%s: %s in block %s of %s, expected node %s pool %s" % (who, a, blk, owner_, spec["nodeName"], pool))
            first = P.get(pool, {}).get("first", False)
            if int(ip(a)) == int(blk.network_address) and not first:
                err("%s: %s is a network address" % (who, a))
            if int(ip(a)) == int(blk.broadcast_address):
                err("%s: %s is the last address" % (who, a))
            if a in all_infra:
                err("%s: %s is an infrastructure IP" % (who, a))
            if a in running_ips:
                err("%s: %s also used by %s" % (who, a, running_ips[a]))
            running_ips[a] = who
            used.setdefault(blk, 0)
            used[blk] += 1
            fams.append(ip(a).version)
        want = [4, 6] if pool in ("default", "green") else [4]
        if sorted(fams) != want:
            err("%s: families %s, want %s" % (who, fams, want))
        ann = md.get("annotations", {}).get("ipam.cilium.io/ip-pool")
        if ann and ann != pool:
            err("%s: annotation %s but pool %s" % (who, ann, pool))
    for who, node_name, ips in completed:
        for a in ips:
            blk, owner_ = containing(a)
            if a not in running_ips and (blk is None or owner_[0] != node_name):
                err("%s (completed): %s neither reused nor inside its node's blocks" % (who, a))
    for a in all_infra:
        blk, _ = containing(a)
        used[blk] = used.get(blk, 0) + 1
    for blk, (name, pool) in block_owner.items():
        if not used.get(blk):
            err("%s: block %s (%s) holds no IP in use" % (name, blk, pool))

    # needed vs usable
    for n in nodes:
        name = n["metadata"]["name"]
        for r in n["spec"]["ipam"]["pools"]["requested"]:
            for key, need in r["needed"].items():
                version = 4 if key == "ipv4-addrs" else 6
                blks = [b for b, o in block_owner.items() if o == (name, r["pool"]) and b.version == version]
                first = P.get(r["pool"], {}).get("first", False)
                usable = sum(b.num_addresses - (0 if first else 1) - 1 for b in blks)
                if need > usable:
                    err("%s: pool %s needs %d %s, holds %d" % (name, r["pool"], need, key, usable))

    # endpoints
    running = {}
    for p in pods:
        if p["status"]["phase"] == "Running" and not p["spec"].get("hostNetwork"):
            running[(p["metadata"]["namespace"], p["metadata"]["name"])] = p
    seen = set()
    for c in ceps:
        k = (c["metadata"]["namespace"], c["metadata"]["name"])
        p = running.get(k)
        if p is None:
            err("CEP %s/%s has no running pod" % k)
            continue
        seen.add(k)
        addr = c["status"]["networking"]["addressing"][0]
        cep_ips = [addr["ipv4"]] + ([addr["ipv6"]] if "ipv6" in addr else [])
        if cep_ips != [x["ip"] for x in p["status"]["podIPs"]]:
            err("CEP %s/%s addresses differ from the pod" % k)
        if c["status"]["networking"]["node"] != node_by_name[p["spec"]["nodeName"]]["_internal"]:
            err("CEP %s/%s node differs" % k)
    missing = sorted(set(running) - seen)

    # CRD
    v2 = [v for v in crd["spec"]["versions"] if v["name"] == "v2"][0]
    ipv4 = v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ipv4"]["properties"]
    if "pool" not in ipv4 or ipv4["cidrs"]["items"]["type"] != "string" or not v2["storage"]:
        err("CRD: v2 is not the upstream schema / not the storage version")

    for n in nodes:
        n.pop("_internal", None)
    return problems, special, missing


# --------------------------------------------------------------------------- main

def main():
    crd = render_crd()
    pools = render_pools()
    files, objs = build(crd, pools)
    os.makedirs(OUT, exist_ok=True)
    for name in sorted(files):
        with open(os.path.join(OUT, name), "w", encoding="utf-8", newline="\n") as fh:
            fh.write(files[name])

    with open(os.path.join(OUT, "ciliumendpoints.json"), encoding="utf-8") as fh:
        ceps = json.load(fh)["items"]
    problems, special, missing = check(pools, objs["nodes"], objs["pods"], ceps, crd)

    expected_orphan = [(NODES["g3"].name, "legacy", "10.99.7.0/24")]
    expected_reserved = [(NODES["bgrand"].name, "blue", "10.41.3.0/24")]
    if special["orphan"] != expected_orphan:
        problems.append("orphan blocks: %s" % special["orphan"])
    if special["reserved"] != expected_reserved:
        problems.append("blocks over reservations: %s" % special["reserved"])
    if len(missing) != 5:
        problems.append("pods without CiliumEndpoint: %d" % len(missing))
    if len(objs["nodes"]) != 36 or len(objs["pods"]) < 520:
        problems.append("counts: %d nodes, %d pods" % (len(objs["nodes"]), len(objs["pods"])))
    total = sum(len(v.encode()) for v in files.values())
    if total > 3_000_000:
        problems.append("snapshot too large: %d bytes" % total)

    for name in sorted(files):
        data = files[name].encode()
        print("%-28s %9d bytes  sha256 %s" % (name, len(data), hashlib.sha256(data).hexdigest()[:16]))
    print("pods %d, endpoints %d, nodes %d" % (len(objs["pods"]), len(ceps), len(objs["nodes"])))
    if problems:
        for p in problems:
            print("CHECK FAILED: " + p, file=sys.stderr)
        sys.exit(1)
    print("check: ok (orphan %s, grandfathered %s, %d pods without endpoint)"
          % (expected_orphan[0][2], expected_reserved[0][2], len(missing)))


if __name__ == "__main__":
    main()
