//! Cilium's own operator in the loop: the real `cilium-operator-generic` (built from the Go module
//! proxy by tools/cilium-operator/build.sh, `CILIUM_OPERATOR`) running multi-pool IPAM against a
//! [`TestCluster`], and [`Agent`], a stand-in for Cilium's agent that writes what the agent writes:
//! a Node and a CiliumNode per node with `spec.ipam.pools.requested`, then pods and CiliumEndpoints
//! whose addresses come from the blocks the operator allocated ([`Agent::start_pods`]), and
//! releases them.
//!
//! The operator is a process of its own, stopped by PID when the [`Operator`] is dropped, so a
//! failing test leaves none behind. Its log is kept in the control plane's directory and printed
//! when a wait times out.

use super::{KillOnDrop, TestCluster, cilium_crd, path_str};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `CILIUM_OPERATOR`: the operator binary `tools/go-tools.sh` exports. Panics when it is not set:
/// such tests fail, never skip.
pub fn operator_binary() -> PathBuf {
    match std::env::var_os("CILIUM_OPERATOR") {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => panic!(
            "CILIUM_OPERATOR is not set: this test runs Cilium's own operator. Run it through tools/test.sh, \
             or export CILIUM_OPERATOR=\"$(tools/cilium-operator/build.sh)\""
        ),
    }
}

/// How long the operator gets to act on a change (it acts within a second; the rest is a loaded
/// 2-core machine running other tests).
pub const OPERATOR_WAIT: Duration = Duration::from_secs(60);

/// Every CRD of the release the operator is built from, applied before it starts
/// (`--skip-crd-creation`: it would otherwise write them itself, and wait for each).
pub fn install_every_cilium_crd(cluster: &TestCluster) {
    let dir = cilium_crd("ciliumnodes.yaml").parent().expect("the CRD directory").to_path_buf();
    let mut crds: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read the CRD directory")
        .map(|e| e.expect("a CRD file").path())
        // The pool CRD is the test's own choice of dialect (TestCluster::start installed it).
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && !p.ends_with("ciliumpodippools.yaml"))
        .collect();
    crds.sort();
    let mut args = vec!["apply".to_string(), "--server-side".into(), "--force-conflicts".into()];
    for crd in &crds {
        args.extend(["-f".to_string(), path_str(crd).to_string()]);
    }
    cluster.kubectl(&args.iter().map(String::as_str).collect::<Vec<_>>());
    cluster.kubectl(&["wait", "--for=condition=Established", "--timeout=60s", "crd", "--all"]);
}

/// The running operator.
pub struct Operator {
    process: Option<KillOnDrop>,
    kubeconfig: PathBuf,
    dir: PathBuf,
    /// Starts so far: each run logs to a file of its own.
    runs: u32,
}

impl Operator {
    /// Installs every Cilium CRD and starts the operator with multi-pool IPAM, both families.
    pub fn start(cluster: &TestCluster) -> Operator {
        install_every_cilium_crd(cluster);
        let dir = cluster.dir.join("operator");
        std::fs::create_dir_all(&dir).expect("the operator's directory");
        let mut operator = Operator { process: None, kubeconfig: cluster.kubeconfig.clone(), dir, runs: 0 };
        operator.spawn();
        operator
    }

    fn spawn(&mut self) {
        self.runs += 1;
        let log = std::fs::File::create(self.log_path(self.runs)).expect("the operator's log");
        let args = [
            format!("--k8s-kubeconfig-path={}", self.kubeconfig.display()),
            "--ipam=multi-pool".into(),
            "--enable-ipv4=true".into(),
            "--enable-ipv6=true".into(),
            "--identity-allocation-mode=crd".into(),
            "--enable-lb-ipam=false".into(),
            "--k8s-namespace=kube-system".into(),
            "--cluster-name=operator-loop".into(),
            "--skip-crd-creation=true".into(),
            // Off every shared port and path: several tests run an operator at once.
            "--operator-api-serve-addr=127.0.0.1:0".into(),
            "--operator-prometheus-serve-addr=".into(),
            "--enable-metrics=false".into(),
            "--enable-gops=false".into(),
            format!("--shell-sock-path={}", self.dir.join(format!("shell-{}.sock", self.runs)).display()),
            "--unmanaged-pod-watcher-interval=0".into(),
            // Leader election cannot be turned off: a restarted operator takes the lease at once.
            "--leader-election-lease-duration=2s".into(),
            "--leader-election-renew-deadline=1s".into(),
            "--leader-election-retry-period=200ms".into(),
        ];
        let child = Command::new(operator_binary())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log, twice"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", operator_binary().display()));
        self.process = Some(KillOnDrop(child));
    }

    fn log_path(&self, run: u32) -> PathBuf {
        self.dir.join(format!("operator-{run}.log"))
    }

    /// The log of the current run (the last lines, for a failure message).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path(self.runs)).unwrap_or_default();
        super::tail(&text, 30)
    }

    /// Stops the operator (SIGTERM, as Kubernetes stops a pod; SIGKILL after 10 s) and starts it
    /// again: a new process that restores what the CiliumNodes hold, as after a rollout.
    pub fn restart(&mut self) {
        self.stop();
        // The old lease is released on a clean stop; a new process takes it within a retry period.
        self.spawn();
    }

    /// Stops the operator and waits for the process to end.
    pub fn stop(&mut self) {
        // Dropped at the end: killed (a no-op once it exited) and reaped.
        let Some(mut process) = self.process.take() else { return };
        // SAFETY: kill(2) on the pid of a child this struct spawned and has not reaped.
        unsafe { libc::kill(process.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && process.0.try_wait().ok().flatten().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Panics, with the operator's log, when it is no longer running.
    pub fn assert_running(&mut self) {
        let process = self.process.as_mut().expect("the operator was stopped");
        if let Ok(Some(status)) = process.0.try_wait() {
            panic!("the operator exited ({status}):\n{}", self.log_tail());
        }
    }
}

/// What a node asks of one pool: addresses per family (`spec.ipam.pools.requested[].needed`).
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub pool: &'a str,
    pub ipv4: u64,
    pub ipv6: u64,
}

pub fn request(pool: &str, ipv4: u64, ipv6: u64) -> Request<'_> {
    Request { pool, ipv4, ipv6 }
}

/// Cilium's agent, as far as the operator and the plugin see it.
pub struct Agent<'a> {
    cluster: &'a TestCluster,
    nodes: Api<DynamicObject>,
    cilium_nodes: Api<DynamicObject>,
}

impl<'a> Agent<'a> {
    pub fn new(cluster: &'a TestCluster) -> Agent<'a> {
        let node = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Node"), "nodes");
        let cilium_node = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("cilium.io", "v2", "CiliumNode"), "ciliumnodes");
        Agent { cluster, nodes: Api::all_with(cluster.client(), &node), cilium_nodes: Api::all_with(cluster.client(), &cilium_node) }
    }

    /// A node joins: its Node (the operator deletes CiliumNodes without one) and its CiliumNode
    /// requesting addresses from each pool.
    pub fn join(&self, node: &str, requests: &[Request]) {
        self.cluster.create_objects(vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}),
            json!({
                "apiVersion": "cilium.io/v2", "kind": "CiliumNode",
                "metadata": {"name": node},
                "spec": {"ipam": {"pools": {"requested": requested(requests)}}},
            }),
        ]);
    }

    /// The node asks for other amounts (its pods came or went).
    pub fn request(&self, node: &str, requests: &[Request]) {
        let patch = json!({"spec": {"ipam": {"pools": {"requested": requested(requests)}}}});
        self.cluster
            .block_on(self.cilium_nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)))
            .unwrap_or_else(|e| panic!("patch the requests of CiliumNode {node}: {e}"));
    }

    /// The node leaves: its CiliumNode and Node are deleted (the operator releases its blocks).
    pub fn leave(&self, node: &str) {
        self.cluster.block_on(async {
            self.cilium_nodes.delete(node, &DeleteParams::default()).await.unwrap_or_else(|e| panic!("delete CiliumNode {node}: {e}"));
            self.nodes.delete(node, &DeleteParams::default()).await.unwrap_or_else(|e| panic!("delete Node {node}: {e}"));
        });
    }

    /// Pods start on `node`: a Pod and its CiliumEndpoint for each of `count` addresses the agent
    /// hands out of `block` (one the operator allocated; the first addresses after the network
    /// address), in namespace `pods`. Returns their addresses; the pods are named
    /// `NODE-ADDRESS` (`:` and `.` as `-`).
    pub fn start_pods(&self, node: &str, block: &str, count: u32) -> Vec<String> {
        let network: std::net::IpAddr = block.split('/').next().and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("a block: {block}"));
        let addresses: Vec<String> = (1..=count)
            .map(|i| match network {
                std::net::IpAddr::V4(ip) => std::net::Ipv4Addr::from(u32::from(ip) + i).to_string(),
                std::net::IpAddr::V6(ip) => std::net::Ipv6Addr::from(u128::from(ip) + u128::from(i)).to_string(),
            })
            .collect();
        let objects = addresses.iter().flat_map(|address| {
            let name = pod_name(node, address);
            [super::pod("pods", &name, node, &[address]), super::cilium_endpoint("pods", &name, "192.0.2.1", &[address])]
        });
        self.cluster.create_objects(objects.collect());
        addresses
    }

    /// The pods of `node` at `addresses` stop: their Pods and CiliumEndpoints are deleted.
    pub fn stop_pods(&self, node: &str, addresses: &[String]) {
        let names: Vec<String> = addresses.iter().map(|a| pod_name(node, a)).collect();
        // No kubelet confirms a graceful deletion here: the Pods go at once, as a kubelet's would.
        let mut args = vec!["delete", "pods,ciliumendpoints", "-n", "pods", "--grace-period=0", "--force"];
        args.extend(names.iter().map(String::as_str));
        self.cluster.kubectl(&args);
    }

    /// The CiliumNode as it is now (`None` once deleted).
    pub fn cilium_node(&self, node: &str) -> Option<Value> {
        let object = self.cluster.block_on(self.cilium_nodes.get_opt(node)).unwrap_or_else(|e| panic!("get CiliumNode {node}: {e}"));
        object.map(|o| serde_json::to_value(o).expect("a CiliumNode as JSON"))
    }

    /// Every CiliumNode, as JSON.
    pub fn cilium_nodes(&self) -> Vec<Value> {
        let list = self.cluster.block_on(self.cilium_nodes.list(&Default::default())).expect("list CiliumNodes");
        list.items.into_iter().map(|o| serde_json::to_value(o).expect("a CiliumNode as JSON")).collect()
    }

    /// Waits until `done` holds for the CiliumNode `node` and returns it; panics with the
    /// operator's log when it does not within [`OPERATOR_WAIT`].
    pub fn wait_for(&self, operator: &mut Operator, node: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + OPERATOR_WAIT;
        loop {
            if let Some(object) = self.cilium_node(node).filter(|o| done(o)) {
                return object;
            }
            operator.assert_running();
            if Instant::now() > deadline {
                panic!(
                    "CiliumNode {node}: {what} not seen within {OPERATOR_WAIT:?}; it is now:\n{}\noperator log:\n{}",
                    self.cilium_node(node).map(|o| o["spec"]["ipam"].to_string()).unwrap_or_else(|| "<deleted>".into()),
                    operator.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the operator has handed `node` enough blocks for what it requests (its
    /// allocated blocks cover each requested family) or has written an operator error, and
    /// returns the CiliumNode.
    pub fn wait_for_answer(&self, operator: &mut Operator, node: &str) -> Value {
        self.wait_for(operator, node, "an allocation or an operator error", answered)
    }
}

/// The name of the pod of `node` at `address`.
pub fn pod_name(node: &str, address: &str) -> String {
    format!("{node}-{}", address.replace([':', '.'], "-"))
}

/// `spec.ipam.pools.requested` of `requests`.
fn requested(requests: &[Request]) -> Value {
    requests.iter().map(|r| json!({"pool": r.pool, "needed": {"ipv4-addrs": r.ipv4, "ipv6-addrs": r.ipv6}})).collect()
}

/// The blocks the operator wrote for `pool` on a CiliumNode.
pub fn blocks_of(cilium_node: &Value, pool: &str) -> Vec<String> {
    let allocated = cilium_node.pointer("/spec/ipam/pools/allocated").and_then(Value::as_array).cloned().unwrap_or_default();
    allocated
        .iter()
        .filter(|a| a["pool"] == pool)
        .flat_map(|a| a["cidrs"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c.as_str().map(str::to_string))
        .collect()
}

/// The operator's error on a CiliumNode (`status.ipam.operator-status.error`), if any.
pub fn operator_error(cilium_node: &Value) -> Option<String> {
    cilium_node.pointer("/status/ipam/operator-status/error").and_then(Value::as_str).filter(|e| !e.is_empty()).map(str::to_string)
}

/// Whether the operator has answered a node's requests: an error, or for every requested pool
/// and family asking for addresses, at least one block of that family.
fn answered(cilium_node: &Value) -> bool {
    if operator_error(cilium_node).is_some() {
        return true;
    }
    let requests = cilium_node.pointer("/spec/ipam/pools/requested").and_then(Value::as_array).cloned().unwrap_or_default();
    requests.iter().all(|r| {
        let pool = r["pool"].as_str().unwrap_or_default();
        let blocks = blocks_of(cilium_node, pool);
        let has = |v6: bool| blocks.iter().any(|b| b.contains(':') == v6);
        let wants = |key: &str| r["needed"][key].as_u64().unwrap_or(0) > 0;
        (!wants("ipv4-addrs") || has(false)) && (!wants("ipv6-addrs") || has(true))
    })
}
