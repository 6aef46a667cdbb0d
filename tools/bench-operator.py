#!/usr/bin/env python3
"""How long after the operator's write `serve`'s figures equal the truth (issue 54's benchmark).

Starts the test control plane, Cilium's own operator (tools/cilium-operator/build.sh) with
multi-pool IPAM and one pool, loads NODES nodes (a Node and a CiliumNode each, requesting one block)
and waits until the operator has handed each its block; starts `serve` (the release build), then
churns: STEPS times a node joins or the oldest churned node leaves, one after the other. For a join
the write is the operator's, seen on the CiliumNode (polled every 10 ms); for a leave it is the
deletion (the operator writes nothing). The lag is from that write to the first scrape of /metrics
whose `ciliumpool_allocated_blocks` is the new truth (scraped every 10 ms), so it includes serve's
one-second debounce. Prints the lags' percentiles as Markdown. Target (a benchmark, not a test):
p99 <= 2 s at 1,000 nodes.

    cargo build --release && tools/bench-operator.py [--nodes 1000] [--steps 200]
"""
import argparse
import json
import os
import pathlib
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
POOL = "lag"


def log(*args):
    print("[bench-operator]", *args, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """The admin credentials of the test control plane (no kubectl start-up inside a timing)."""

    def __init__(self, env):
        config = subprocess.run(["kubectl", "config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}"],
                                check=True, capture_output=True, text=True, env=env).stdout
        self.server = config.strip()
        d = pathlib.Path(env["TESTENV_DIR"])
        self.context = ssl.create_default_context(cafile=str(d / "ca.crt"))
        self.context.load_cert_chain(str(d / "admin.crt"), str(d / "admin.key"))

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.server + path, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, context=self.context, timeout=30) as answer:
            return json.loads(answer.read() or b"null")

    def join(self, name):
        self.call("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
        requested = [{"pool": POOL, "needed": {"ipv4-addrs": 10}}]
        self.call("POST", "/apis/cilium.io/v2/ciliumnodes", {"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": name},
                                                            "spec": {"ipam": {"pools": {"requested": requested}}}})

    def leave(self, name):
        self.call("DELETE", f"/apis/cilium.io/v2/ciliumnodes/{name}")
        self.call("DELETE", f"/api/v1/nodes/{name}")

    def blocks(self, name):
        node = self.call("GET", f"/apis/cilium.io/v2/ciliumnodes/{name}")
        allocated = node.get("spec", {}).get("ipam", {}).get("pools", {}).get("allocated") or []
        return [c for a in allocated if a.get("pool") == POOL for c in a.get("cidrs", [])]

    def holding(self):
        items = self.call("GET", "/apis/cilium.io/v2/ciliumnodes")["items"]
        allocated = (i.get("spec", {}).get("ipam", {}).get("pools", {}).get("allocated") or [] for i in items)
        return sum(1 for a in allocated if any(e.get("pool") == POOL and e.get("cidrs") for e in a))


def scraped_blocks(url):
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=5) as answer:
            for line in answer.read().decode().splitlines():
                if line.startswith(f'ciliumpool_allocated_blocks{{pool="{POOL}",family="ipv4"}}'):
                    return int(float(line.split()[-1]))
    except OSError:  # not listening yet
        return None
    return None


def wait(what, done, bound=120.0, every=0.01):
    deadline = time.monotonic() + bound
    while True:
        value = done()
        if value:
            return value
        if time.monotonic() > deadline:
            sys.exit(f"[bench-operator] {what}: not within {bound} s")
        time.sleep(every)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * p + 0.999999) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--binary", default=str(ROOT / "target" / "release" / "kubectl-ciliumpool"))
    args = parser.parse_args()
    binary = pathlib.Path(args.binary)
    if not binary.exists():
        sys.exit("[bench-operator] build the release binary first: cargo build --release")
    operator = subprocess.run([ROOT / "tools" / "cilium-operator" / "build.sh"], check=True, capture_output=True, text=True).stdout.strip()
    crds = subprocess.run([ROOT / "tools" / "cilium-oracle" / "build.sh", "--crds"], check=True, capture_output=True, text=True).stdout.strip()
    up = subprocess.run(["bash", ROOT / "tools" / "testenv" / "up.sh"], check=True, capture_output=True, text=True, cwd=ROOT).stdout
    env = dict(os.environ)
    for line in up.splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = subprocess.run(["bash", "-c", f"printf %s {value}"], capture_output=True, text=True).stdout
    processes = []
    work = tempfile.mkdtemp(prefix="bench-operator.")
    try:
        kubectl = lambda *a: subprocess.run(["kubectl", *a], check=True, capture_output=True, text=True, env=env)
        kubectl("apply", "--server-side", "-f", crds)
        kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
        cidr_bits = max(16, 32 - 6 - (args.nodes + args.steps).bit_length() - 1)
        pool = {"apiVersion": "cilium.io/v2alpha1", "kind": "CiliumPodIPPool", "metadata": {"name": POOL},
                "spec": {"ipv4": {"cidrs": [f"10.64.0.0/{cidr_bits}"], "maskSize": 26}}}
        api = Api(env)
        api.call("POST", "/apis/cilium.io/v2alpha1/ciliumpodippools", pool)
        flags = [f"--k8s-kubeconfig-path={env['KUBECONFIG']}", "--ipam=multi-pool", "--enable-ipv6=false", "--identity-allocation-mode=crd",
                 "--enable-lb-ipam=false", "--k8s-namespace=kube-system", "--cluster-name=bench", "--skip-crd-creation=true",
                 "--operator-api-serve-addr=127.0.0.1:0", "--operator-prometheus-serve-addr=", "--enable-metrics=false",
                 "--enable-gops=false", f"--shell-sock-path={work}/shell.sock", "--unmanaged-pod-watcher-interval=0",
                 "--leader-election-lease-duration=2s", "--leader-election-renew-deadline=1s", "--leader-election-retry-period=200ms"]
        processes.append(subprocess.Popen([operator, *flags], stdout=open(f"{work}/operator.log", "w"), stderr=subprocess.STDOUT))
        log(f"loading {args.nodes} nodes")
        for i in range(args.nodes):
            api.join(f"node-{i:05}")
        wait("every node holding its block", lambda: api.holding() == args.nodes, bound=600, every=1)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        processes.append(subprocess.Popen([binary, "serve", "--listen", f"127.0.0.1:{port}", "--kubeconfig", env["KUBECONFIG"]],
                                          stdout=subprocess.DEVNULL, stderr=open(f"{work}/serve.log", "w")))
        wait("serve ready", lambda: scraped_blocks(url) == args.nodes, bound=120, every=0.05)
        log(f"{args.steps} churn steps")
        lags, held, churned = [], args.nodes, []
        for step in range(args.steps):
            if step % 2 == 0 or not churned:
                name = f"churn-{step:05}"
                api.join(name)
                churned.append(name)
                wait(f"{name}'s block", lambda: api.blocks(name))
                held += 1
            else:
                api.leave(churned.pop(0))
                held -= 1
            written = time.monotonic()
            wait(f"serve showing {held} blocks", lambda: scraped_blocks(url) == held, bound=60)
            lags.append(time.monotonic() - written)
        print(f"| nodes | steps | p50 | p90 | p99 | max |\n|---|---|---|---|---|---|")
        print(f"| {args.nodes} | {args.steps} | " + " | ".join(f"{percentile(lags, p):.2f} s" for p in (0.5, 0.9, 0.99, 1.0)) + " |")
    finally:
        for process in processes:
            process.terminate()
            process.wait()
        subprocess.run(["bash", ROOT / "tools" / "testenv" / "down.sh", env.get("TESTENV_DIR", "")], capture_output=True)


if __name__ == "__main__":
    main()
