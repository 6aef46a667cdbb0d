//! Shared helpers for tests against a real control plane (tools/testenv/README.md).
//!
//! Every `TestCluster::start` runs its own etcd + kube-apiserver through `tools/testenv/up.sh`:
//! the three pool dialects are different versions of the same cluster-scoped CRD, so they cannot
//! share one apiserver. Tests FAIL, never skip, when the harness is missing: a cluster test that
//! silently passes without a cluster cannot fail, which makes it a defect.
//!
//! Use it with `mod support;` from a file in `tests/`:
//!
//! ```ignore
//! let mut cluster = TestCluster::start(Dialect::V2alpha1);
//! cluster.create_objects(vec![pool, cilium_node("n1", &[("blue", &["10.40.0.0/24"])], 16), pod("ns", "p", "n1", &["10.40.0.9"])]);
//! cluster.move_pools_to_v2_storage(Dialect::UpstreamV2); // pools created so far stay stored as v2alpha1
//! cluster.grant_read("alice", &[("cilium.io", "ciliumpodippools")]);
//! cluster.plugin().args(["usage", "--as", "alice"]).assert().code(3);
//! ```
#![allow(dead_code)] // each test binary uses a different subset

pub mod cli;
pub mod faults;
pub mod hostile;
pub mod operator;
pub mod prometheus;
pub mod tables;

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub use ciliumpool::model::Dialect;

/// The plugin binary cargo built for this test run.
pub const PLUGIN: &str = env!("CARGO_BIN_EXE_kubectl-ciliumpool");

/// How many API requests the seeding helpers keep in flight.
const SEED_CONCURRENCY: usize = 32;

/// A private control plane with the Cilium CRDs of one dialect installed.
pub struct TestCluster {
    /// `TESTENV_DIR`: certificates, logs and the kubeconfig; removed by `down.sh`.
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:PORT`
    pub server: String,
    /// Directory holding the real `kubectl` (and kube-apiserver, etcd).
    pub bin: PathBuf,
    /// The pool CRD's dialect; `None` when no Cilium CRD is installed.
    pub dialect: Option<Dialect>,
    /// Seconds `up.sh` took (for reports; never asserted).
    pub startup: Duration,
    /// Held while this control plane runs (see [`ControlPlanePermit`]).
    _permit: ControlPlanePermit,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    /// kind -> resource, so seeding many objects resolves each kind once.
    resources: Mutex<HashMap<GroupVersionKind, ApiResource>>,
}

/// A spawned process killed (SIGKILL) and reaped when dropped, so that a failing test leaves none behind.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `TESTENV_BIN`: the real kubectl, kubectl-krew and validate-krew-manifest (and kube-apiserver,
/// etcd) built by `tools/testenv/build.sh`. Panics when it is not set: such tests fail, never skip.
pub fn testenv_bin() -> PathBuf {
    match std::env::var_os("TESTENV_BIN") {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => panic!(
            "TESTENV_BIN is not set: this test needs the real control plane and tools. Run it as \
             `eval \"$(tools/testenv/up.sh)\" && cargo test` (or `tools/test.sh`); see tools/testenv/README.md"
        ),
    }
}

pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The CiliumPodIPPool CRD of a dialect: Cilium's own for v2alpha1 (a cluster running Cilium
/// 1.20), hand-written fixtures for the v2 shapes no release has served yet.
pub fn pool_crd_fixture(dialect: Dialect) -> PathBuf {
    match dialect {
        Dialect::V2alpha1 => cilium_crd("ciliumpodippools.yaml"),
        Dialect::UpstreamV2 => repo_root().join("tests/fixtures/crds/ciliumpodippools-upstream.yaml"),
        Dialect::CfpV2 => repo_root().join("tests/fixtures/crds/ciliumpodippools-cfp.yaml"),
    }
}

/// One of Cilium's own CRDs (`ciliumpodippools.yaml` of v2alpha1, `ciliumnodes.yaml`,
/// `ciliumendpoints.yaml`) from the release tools/cilium-oracle pins, extracted from the Go
/// module by `tools/cilium-oracle/build.sh --crds` (cached after the first run).
pub fn cilium_crd(name: &str) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let script = repo_root().join("tools/cilium-oracle/build.sh");
        let out = Command::new(&script).arg("--crds").output().unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        assert!(out.status.success(), "{} --crds failed:\n{}", script.display(), String::from_utf8_lossy(&out.stderr));
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    });
    dir.join(name)
}

/// Reads `export NAME=VALUE` lines as printed by up.sh (`printf %q` quoting).
fn parse_exports(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|line| line.strip_prefix("export ")?.split_once('='))
        .map(|(name, value)| (name.to_string(), unquote_shell(value)))
        .collect()
}

/// Undoes `printf %q` for the characters mktemp paths can contain (backslash escapes, quotes).
fn unquote_shell(value: &str) -> String {
    let value = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')).unwrap_or(value);
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '"' => {}
            other => out.push(other),
        }
    }
    out
}

impl TestCluster {
    /// Starts etcd + kube-apiserver, installs the CRDs of `dialect` (pools, plus CiliumNodes and
    /// CiliumEndpoints) and waits until they are Established. Panics with the reason on failure.
    pub fn start(dialect: Dialect) -> TestCluster {
        let mut cluster = TestCluster::start_bare();
        cluster.install_crds(dialect);
        cluster.dialect = Some(dialect);
        cluster
    }

    /// A control plane with no Cilium CRDs at all (what a cluster without Cilium looks like).
    pub fn start_without_cilium() -> TestCluster {
        TestCluster::start_bare()
    }

    fn start_bare() -> TestCluster {
        testenv_bin();
        let permit = ControlPlanePermit::acquire();
        let up = repo_root().join("tools/testenv/up.sh");
        let started = Instant::now();
        let output = Command::new("bash")
            .arg(&up)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", up.display()));
        let startup = started.elapsed();
        if !output.status.success() {
            panic!(
                "{} failed ({}); the control plane did not start:\n{}",
                up.display(),
                output.status,
                tail(&String::from_utf8_lossy(&output.stderr), 40)
            );
        }
        let exports = parse_exports(&String::from_utf8_lossy(&output.stdout));
        let var = |name: &str| {
            exports
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("up.sh printed no `export {name}=`; stdout was:\n{}", String::from_utf8_lossy(&output.stdout)))
        };
        let dir = PathBuf::from(var("TESTENV_DIR"));
        let kubeconfig = PathBuf::from(var("KUBECONFIG"));
        let bin = PathBuf::from(var("TESTENV_BIN"));
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
        let file = Kubeconfig::read_from(&kubeconfig).unwrap_or_else(|e| panic!("cannot read {}: {e}", kubeconfig.display()));
        let client_and_server = runtime.block_on(async {
            let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
            let server = config.cluster_url.to_string().trim_end_matches('/').to_string();
            anyhow::Ok((kube::Client::try_from(config)?, server))
        });
        // From here on `Drop` stops the control plane, even if a later step panics.
        let (client, server) = match client_and_server {
            Ok(pair) => pair,
            Err(e) => {
                stop(&dir);
                panic!("cannot build a client from {}: {e:#}", kubeconfig.display());
            }
        };
        eprintln!("[support] control plane {server} up in {:.1} s ({})", startup.as_secs_f64(), dir.display());
        TestCluster { dir, kubeconfig, server, bin, dialect: None, startup, _permit: permit, runtime, client, resources: Mutex::default() }
    }

    fn install_crds(&self, dialect: Dialect) {
        // CiliumNode and CiliumEndpoint are Cilium 1.20's own in every dialect: no release has
        // served other shapes of them.
        let pools = pool_crd_fixture(dialect);
        let nodes = cilium_crd("ciliumnodes.yaml");
        let endpoints = cilium_crd("ciliumendpoints.yaml");
        self.kubectl(&["apply", "-f", path_str(&pools), "-f", path_str(&nodes), "-f", path_str(&endpoints)]);
        self.kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/ciliumpodippools.cilium.io",
            "crd/ciliumnodes.cilium.io",
            "crd/ciliumendpoints.cilium.io",
        ]);
    }

    /// The real kubectl, pointed at this cluster (run it with `.output()` to inspect failures).
    /// Its discovery cache is this cluster's own: kubectl keys the shared one (`~/.kube/cache`) by
    /// host and port for 6 hours, and a control plane started on the port of an earlier one with
    /// other CRD versions was dumped through the versions the earlier one served.
    pub fn kubectl_command(&self) -> Command {
        let mut command = Command::new(self.bin.join("kubectl"));
        command.env("KUBECONFIG", &self.kubeconfig).env("KUBECACHEDIR", self.dir.join("kube-cache")).stdin(Stdio::null());
        command
    }

    /// Runs the real kubectl and returns its stdout; panics with stderr when it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let output = self.kubectl_command().args(args).output().expect("run kubectl");
        check_output("kubectl", args, output)
    }

    /// Runs the real kubectl with `stdin` as input and returns its stdout; panics when it fails.
    pub fn kubectl_with_input(&self, args: &[&str], stdin: &str) -> String {
        let mut child = self
            .kubectl_command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run kubectl");
        child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write kubectl stdin");
        check_output("kubectl", args, child.wait_with_output().expect("wait for kubectl"))
    }

    /// `kubectl apply` (server-side: one request per object) of YAML or JSON manifests.
    pub fn apply_yaml(&self, text: &str) {
        self.kubectl_with_input(&["apply", "--server-side", "--force-conflicts", "-f", "-"], text);
    }

    /// The plugin under test with this cluster's kubeconfig, colour off.
    pub fn plugin(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.plugin_process())
    }

    /// The same as `plugin()`, as a std Command for processes that must be spawned (`--watch`,
    /// a pseudo-terminal).
    pub fn plugin_process(&self) -> Command {
        let mut command = cli::plugin_process();
        command.arg("--kubeconfig").arg(&self.kubeconfig);
        command
    }

    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Runs async code (kube client calls) on this cluster's runtime.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Moves the pool CRD from v2alpha1 storage to v2 storage the way a Cilium upgrade does:
    /// applies the `to` dialect's CRD over the v2alpha1-only one, so pools created before stay
    /// stored as v2alpha1 and `status.storedVersions` becomes `[v2alpha1, v2]`.
    pub fn move_pools_to_v2_storage(&mut self, to: Dialect) {
        assert_eq!(self.dialect, Some(Dialect::V2alpha1), "move_pools_to_v2_storage starts from the v2alpha1-only CRD");
        assert_ne!(to, Dialect::V2alpha1, "move_pools_to_v2_storage needs a v2 dialect");
        self.kubectl(&["apply", "-f", path_str(&pool_crd_fixture(to))]);
        self.dialect = Some(to);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let stored = self.kubectl(&["get", "crd", "ciliumpodippools.cilium.io", "-o", "jsonpath={.status.storedVersions}"]);
            let served = self.kubectl_command().args(["get", "ciliumpodippools.v2.cilium.io"]).output().expect("run kubectl");
            if stored.contains("v2alpha1") && stored.contains("\"v2\"") && served.status.success() {
                return;
            }
            assert!(Instant::now() < deadline, "CRD did not reach storedVersions [v2alpha1, v2] with v2 served; storedVersions: {stored}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Creates objects (any kind the cluster serves) concurrently through the API. Server-set
    /// metadata (uid, resourceVersion, ...) is dropped, namespaces are created as needed, and a
    /// Pod's `status` is written afterwards through `pods/status` (the only way to seed podIPs
    /// without a kubelet). Lists are flattened.
    pub fn create_objects(&self, objects: Vec<Value>) {
        let objects: Vec<Value> = objects.into_iter().flat_map(flatten_list).map(strip_server_fields).collect();
        let mut namespaces: Vec<String> =
            objects.iter().filter_map(|o| o.pointer("/metadata/namespace")?.as_str().map(str::to_string)).collect();
        namespaces.sort();
        namespaces.dedup();
        self.block_on(async {
            for namespace in &namespaces {
                self.ensure_namespace(namespace).await;
            }
            futures::stream::iter(objects.into_iter().map(|object| self.create_one(object)))
                .buffer_unordered(SEED_CONCURRENCY)
                .try_collect::<Vec<()>>()
                .await
        })
        .unwrap_or_else(|e| panic!("seeding objects failed: {e:#}"));
    }

    async fn ensure_namespace(&self, name: &str) {
        let api: Api<DynamicObject> =
            Api::all_with(self.client(), &ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Namespace"), "namespaces"));
        let namespace: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})).expect("namespace");
        match api.create(&PostParams::default(), &namespace).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(e) => panic!("cannot create namespace {name}: {e}"),
        }
    }

    async fn create_one(&self, mut object: Value) -> anyhow::Result<()> {
        let api = self.api_for(&object).await?;
        // Pods and Cilium's CiliumNode have a status subresource: create ignores `status`.
        let has_status_subresource = object["kind"] == "Pod" || object["kind"] == "CiliumNode";
        let pod_status = has_status_subresource.then(|| object.as_object_mut().and_then(|o| o.remove("status"))).flatten();
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        let dynamic: DynamicObject = serde_json::from_value(object)?;
        api.create(&PostParams::default(), &dynamic).await.map_err(|e| anyhow::anyhow!("create {name}: {e}"))?;
        if let Some(status) = pod_status {
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({"status": status})))
                .await
                .map_err(|e| anyhow::anyhow!("patch the status of {name}: {e}"))?;
        }
        Ok(())
    }

    /// A namespaced or cluster-wide handle for the object's kind (resolved by discovery, cached).
    async fn api_for(&self, object: &Value) -> anyhow::Result<Api<DynamicObject>> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap_or_default());
        let cached = self.resources.lock().expect("resource cache").get(&gvk).cloned();
        let resource = match cached {
            Some(resource) => resource,
            None => {
                let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk).await?;
                self.resources.lock().expect("resource cache").insert(gvk, resource.clone());
                resource
            }
        };
        Ok(match object.pointer("/metadata/namespace").and_then(Value::as_str) {
            Some(namespace) => Api::namespaced_with(self.client(), namespace, &resource),
            None => Api::all_with(self.client(), &resource),
        })
    }

    /// Writes `status.podIPs` (and `podIP`) and `status.phase` of an existing Pod via `pods/status`.
    pub fn set_pod_status(&self, namespace: &str, name: &str, ips: &[&str], phase: &str) {
        let api: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(self.client(), namespace);
        let patch = json!({"status": pod_status(ips, phase)});
        self.block_on(api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)))
            .unwrap_or_else(|e| panic!("patch pods/status of {namespace}/{name}: {e}"));
    }

    /// Lets `user` get, list and watch the given resources cluster-wide: a ClusterRole and a
    /// ClusterRoleBinding named after the user. Run the plugin with `--as USER` afterwards.
    pub fn grant_read(&self, user: &str, resources: &[(&str, &str)]) {
        let rules: Vec<Value> = resources
            .iter()
            .map(|(group, resource)| json!({"apiGroups": [group], "resources": [resource], "verbs": ["get", "list", "watch"]}))
            .collect();
        let name = format!("test-read-{user}");
        let objects = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}]});
        self.apply_yaml(&objects.to_string());
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        stop(&self.dir);
    }
}

/// How many private control planes run at once: `CILIUMPOOL_CONTROL_PLANES`, else one per core.
/// An etcd + kube-apiserver pair keeps a core busy while it starts, then mostly waits with the
/// test (the suite on one control plane at a time left 2 cores at a load average under 1);
/// more of them than the machine has cores starve each other and the plugin.
fn control_plane_limit() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::env::var("CILIUMPOOL_CONTROL_PLANES").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(cores.max(1))
}

static RUNNING: (Mutex<usize>, std::sync::Condvar) = (Mutex::new(0), std::sync::Condvar::new());

std::thread_local! {
    /// Permits this thread holds: a test that runs two control planes at once takes one permit.
    static HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One slot of [`control_plane_limit`], released when the cluster is dropped.
struct ControlPlanePermit {
    counted: bool,
}

impl ControlPlanePermit {
    fn acquire() -> ControlPlanePermit {
        if HELD.get() > 0 {
            HELD.set(HELD.get() + 1);
            return ControlPlanePermit { counted: false };
        }
        let (lock, freed) = &RUNNING;
        let mut running = lock.lock().unwrap_or_else(|e| e.into_inner());
        while *running >= control_plane_limit() {
            running = freed.wait(running).unwrap_or_else(|e| e.into_inner());
        }
        *running += 1;
        HELD.set(1);
        ControlPlanePermit { counted: true }
    }
}

impl Drop for ControlPlanePermit {
    fn drop(&mut self) {
        HELD.set(HELD.get().saturating_sub(1));
        if self.counted {
            let (lock, freed) = &RUNNING;
            *lock.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
            freed.notify_one();
        }
    }
}

fn stop(dir: &Path) {
    let down = repo_root().join("tools/testenv/down.sh");
    match Command::new("bash").arg(&down).arg(dir).stdin(Stdio::null()).output() {
        Ok(output) if output.status.success() => {}
        Ok(output) => eprintln!("[support] {} failed: {}", down.display(), String::from_utf8_lossy(&output.stderr)),
        Err(e) => eprintln!("[support] cannot run {}: {e}", down.display()),
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("fixture paths are UTF-8")
}

fn check_output(program: &str, args: &[&str], output: Output) -> String {
    if !output.status.success() {
        panic!("{program} {} failed ({}):\n{}", args.join(" "), output.status, String::from_utf8_lossy(&output.stderr));
    }
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn flatten_list(object: Value) -> Vec<Value> {
    match object.get("items").and_then(Value::as_array) {
        Some(items) if object["kind"].as_str().is_some_and(|k| k.ends_with("List")) => {
            let item_kind = object["kind"].as_str().and_then(|k| k.strip_suffix("List")).filter(|k| !k.is_empty()).map(str::to_string);
            items
                .iter()
                .cloned()
                .map(|mut item| {
                    if item.get("kind").is_none()
                        && let Some(kind) = &item_kind
                    {
                        item["kind"] = json!(kind);
                    }
                    item
                })
                .collect()
        }
        _ => vec![object],
    }
}

/// Drops what the apiserver sets itself, so objects dumped from one cluster can be created in another.
fn strip_server_fields(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink"] {
            meta.remove(field);
        }
    }
    object
}

fn pod_status(ips: &[&str], phase: &str) -> Value {
    let mut status = json!({"phase": phase, "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()});
    if let Some(first) = ips.first() {
        status["podIP"] = json!(first);
    }
    status
}

/// The upstream-v2 pool `blue` of the reserve-range cluster tests: two /16 CIDRs, blocks of /24, an
/// annotation and a namespace selector (which a reservation must leave alone).
pub const BLUE_POOL: &str = "\
apiVersion: cilium.io/v2
kind: CiliumPodIPPool
metadata:
  name: blue
  annotations: {example.com/ticket: NET-1}
spec:
  ipv4: {cidrs: [10.40.0.0/16, 10.41.0.0/16], maskSize: 24}
  namespaceSelector: {matchLabels: {team: blue}}
";

/// A Pod on `node` with the given IPs, phase Running (its status is written by `create_objects`).
pub fn pod(namespace: &str, name: &str, node: &str, ips: &[&str]) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "registry.invalid/pause:1"}]},
        "status": pod_status(ips, "Running"),
    })
}

/// A CiliumNode holding `allocated` blocks per pool and requesting `needed_ipv4` addresses from
/// each of those pools (multi-pool fields as the agent and operator write them, docs/design/cilium.md#nodes).
pub fn cilium_node(name: &str, allocated: &[(&str, &[&str])], needed_ipv4: u64) -> Value {
    json!({
        "apiVersion": "cilium.io/v2", "kind": "CiliumNode",
        "metadata": {"name": name},
        "spec": {"ipam": {"pools": {
            "requested": allocated.iter().map(|(pool, _)| json!({"pool": pool, "needed": {"ipv4-addrs": needed_ipv4}})).collect::<Vec<_>>(),
            "allocated": allocated.iter().map(|(pool, cidrs)| json!({"pool": pool, "cidrs": cidrs})).collect::<Vec<_>>(),
        }}},
    })
}

/// A CiliumEndpoint with the given addresses (at most one of each family) as Cilium writes them:
/// one pair, `status.networking.addressing[0]` (docs/design/cilium.md).
pub fn cilium_endpoint(namespace: &str, name: &str, node_ip: &str, ips: &[&str]) -> Value {
    let (ipv6, ipv4): (Vec<&str>, Vec<&str>) = ips.iter().partition(|ip| ip.contains(':'));
    assert!(ipv4.len() <= 1 && ipv6.len() <= 1, "one address of each family: {ips:?}");
    let mut pair = serde_json::Map::new();
    pair.extend(ipv4.first().map(|ip| ("ipv4".to_string(), json!(ip))));
    pair.extend(ipv6.first().map(|ip| ("ipv6".to_string(), json!(ip))));
    json!({
        "apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint",
        "metadata": {"namespace": namespace, "name": name},
        "status": {"networking": {"node": node_ip, "addressing": [pair]}},
    })
}

/// Every file below `dir` (anything that is not a directory; symlinks are not followed), as a
/// path relative to `dir`, sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&relative)).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.join(&relative).display()))
        {
            let entry = entry.expect("directory entry");
            let path = relative.join(entry.file_name());
            if entry.file_type().expect("file type").is_dir() { pending.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    files
}

/// Reads a YAML/JSON file of the repository into documents (e.g. `examples/snapshot/pools.yaml`).
pub fn read_manifests(relative: &str) -> Vec<Value> {
    let path = repo_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    ciliumpool::manifest::parse(&text, relative).unwrap_or_else(|e| panic!("{e:#}"))
}

/// Reads lines from a spawned process's stdout on a thread, so tests can wait with a deadline.
pub struct LineReader {
    lines: std::sync::mpsc::Receiver<String>,
}

impl LineReader {
    pub fn new(stdout: impl std::io::Read + Send + 'static) -> LineReader {
        let (sender, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        LineReader { lines }
    }

    /// Every line read within `duration`.
    pub fn read_for(&self, duration: Duration) -> Vec<String> {
        let deadline = Instant::now() + duration;
        let mut seen = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            seen.push(line);
        }
        seen
    }

    /// Reads until a line satisfies `found`; returns everything read. Panics after `timeout`.
    pub fn read_until(&self, timeout: Duration, what: &str, found: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = found(&line);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => panic!("no {what} within {timeout:?}; output so far:\n{}", seen.join("\n")),
            }
        }
    }
}

/// A barrier inside the API server, with no hook in the plugin: every UPDATE of one
/// CiliumPodIPPool (except those of [`OTHER_WRITER`]) is sent to a validating webhook this test
/// serves and never answers. When the webhook is called, the writer of that pool is provably
/// inside that write — everything it wrote before is stored, nothing after is sent yet.
pub struct WriteBarrier<'a> {
    cluster: &'a TestCluster,
    pool: String,
    config: String,
    calls: std::sync::mpsc::Receiver<std::net::TcpStream>,
    held: Vec<std::net::TcpStream>,
}

/// What a write held by a [`WriteBarrier`] does once released.
#[derive(Clone, Copy)]
pub enum Afterwards {
    /// It fails (`failurePolicy: Fail`): it never lands.
    Fail,
    /// It goes on (`failurePolicy: Ignore`), as if there were no webhook — a 409 if the object
    /// changed meanwhile.
    Proceed,
}

/// The user whose writes a [`WriteBarrier`] lets through: the concurrent writer of conflict tests.
pub const OTHER_WRITER: &str = "ciliumpool-test-writer";

impl TestCluster {
    /// Holds every update of `pool` (which must exist) at the API server until released; returns
    /// once the API server calls the webhook (checked with server-side dry runs, never a sleep).
    pub fn hold_writes_of(&self, pool: &str, afterwards: Afterwards) -> WriteBarrier<'_> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the webhook port");
        let port = listener.local_addr().expect("webhook address").port();
        let (sender, calls) = std::sync::mpsc::channel();
        // The API server's TLS handshake is never answered: the call hangs until it is dropped.
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let _ = sender.send(stream); // once the barrier is gone, the call is dropped at once
            }
        });
        let policy = match afterwards {
            Afterwards::Fail => "Fail",
            Afterwards::Proceed => "Ignore",
        };
        let config = format!("test-hold-{pool}");
        self.apply_yaml(
            &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": config},
                "webhooks": [{"name": "hold.ciliumpool.test", "clientConfig": {"url": format!("https://127.0.0.1:{port}/hold")},
                    "rules": [{"apiGroups": ["cilium.io"], "apiVersions": ["*"], "operations": ["UPDATE"], "resources": ["ciliumpodippools"], "scope": "Cluster"}],
                    "matchConditions": [{"name": "the-pool", "expression": format!("object.metadata.name == '{pool}' && request.userInfo.username != '{OTHER_WRITER}'")}],
                    "failurePolicy": policy, "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 30}]})
            .to_string(),
        );
        let mut barrier = WriteBarrier { cluster: self, pool: pool.to_string(), config, calls, held: Vec::new() };
        // The API server loads webhook configurations asynchronously: probe until it calls ours.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !barrier.probe_calls_webhook() {
            assert!(Instant::now() < deadline, "the API server did not call the webhook of {} within 60 s", barrier.config);
        }
        barrier
    }
}

impl WriteBarrier<'_> {
    /// A server-side dry-run update of the pool; true when it reached the webhook (the calls it
    /// caused are dropped).
    fn probe_calls_webhook(&mut self) -> bool {
        let mut probe = self
            .cluster
            .kubectl_command()
            .args(["label", "--dry-run=server", "--overwrite", "ciliumpodippools.cilium.io", &self.pool, "ciliumpool.test/probe=1"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run kubectl");
        let mut called = false;
        loop {
            match self.calls.recv_timeout(Duration::from_millis(50)) {
                Ok(call) => {
                    called = true;
                    drop(call);
                }
                Err(_) if probe.try_wait().expect("wait for kubectl").is_some() => break,
                Err(_) => {}
            }
        }
        while self.calls.try_recv().is_ok() {}
        called
    }

    /// Waits until a write of the pool reaches the API server's webhook call and holds it there.
    pub fn wait_for_write(&mut self, timeout: Duration) {
        let call = self
            .calls
            .recv_timeout(timeout)
            .unwrap_or_else(|_| panic!("no write of {} reached the API server within {timeout:?}", self.pool));
        self.held.push(call);
    }

    /// Drops the held call (the write fails or goes on, see [`Afterwards`]), removes the
    /// webhook and waits until the API server no longer calls it.
    pub fn release(mut self) {
        self.held.clear();
        self.cluster.kubectl(&["delete", "validatingwebhookconfiguration", &self.config, "--ignore-not-found"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.probe_calls_webhook() {
            assert!(Instant::now() < deadline, "the API server still calls the webhook {} 60 s after its removal", self.config);
        }
    }
}

impl TestCluster {
    /// Runs the real kubectl as [`OTHER_WRITER`] (impersonated), who may get and change pools;
    /// returns its stdout.
    pub fn kubectl_as_other_writer(&self, args: &[&str]) -> String {
        static GRANTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
        let mut granted = GRANTED.lock().unwrap_or_else(|e| e.into_inner());
        if !granted.contains(&self.dir) {
            let name = "test-other-writer";
            self.apply_yaml(
                &json!({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
                 "rules": [{"apiGroups": ["cilium.io"], "resources": ["ciliumpodippools"], "verbs": ["get", "list", "patch", "update"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OTHER_WRITER}]}]})
                .to_string(),
            );
            // RBAC is cached by the API server: wait until it answers yes.
            let deadline = Instant::now() + Duration::from_secs(60);
            while self
                .kubectl_command()
                .args(["auth", "can-i", "patch", "ciliumpodippools.cilium.io", "--as", OTHER_WRITER])
                .output()
                .is_ok_and(|o| !o.status.success())
            {
                assert!(Instant::now() < deadline, "{OTHER_WRITER} was not allowed to patch pools within 60 s");
                std::thread::sleep(Duration::from_millis(100));
            }
            granted.push(self.dir.clone());
        }
        drop(granted);
        self.kubectl(&[&["--as", OTHER_WRITER], args].concat())
    }
}

impl TestCluster {
    /// Sends a signal (`STOP`, `CONT`, ...) to this control plane's kube-apiserver.
    pub fn signal_apiserver(&self, signal: &str) {
        let pid = std::fs::read_to_string(self.dir.join("kube-apiserver.pid")).expect("kube-apiserver.pid");
        let status = Command::new("kill").args([&format!("-{signal}"), pid.trim()]).status().expect("run kill");
        assert!(status.success(), "kill -{signal} kube-apiserver ({})", pid.trim());
        // The signal takes effect asynchronously: wait until /proc shows the state it asked for.
        let stopped = signal == "STOP";
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).expect("kube-apiserver runs");
            let state = stat.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')).unwrap_or(false);
            if state == stopped {
                return;
            }
            assert!(Instant::now() < deadline, "kube-apiserver ({}) did not reach the state of SIG{signal}: {stat}", pid.trim());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl TestCluster {
    /// The plugin in a pseudo-terminal, run in `dir`, waiting at its `[y/N]` confirmation: it
    /// has read and validated everything and written nothing yet. The barrier of the kill,
    /// outage, race and conflict tests. Returns the session and what it showed so far.
    pub fn plugin_at_prompt(&self, dir: &Path, args: &[&str]) -> (rexpect::session::PtySession, String) {
        let mut command = self.plugin_process();
        command.current_dir(dir).args(args);
        let mut term = cli::terminal(command, Duration::from_secs(300));
        let shown = term.exp_string("[y/N]").unwrap_or_else(|e| panic!("{args:?}: no confirmation prompt: {e}"));
        (term, shown)
    }
}
