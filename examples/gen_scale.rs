//! Seeded large-cluster generator for benchmarks and scale tests (the objects are described in
//! `benches/support/scale.rs`). Writes a dump the plugin reads with `-f`, or loads the objects into
//! the cluster of `$KUBECONFIG` (the test control plane: pods get `status.podIPs` through
//! `pods/status`, as no kubelet runs there).
//!
//! ```sh
//! cargo run --release --example gen_scale -- --nodes 3000 --pods-per-node 30 --out /tmp/dump
//! cargo run --release --example gen_scale -- --nodes 3000 --pods-per-node 30 --format yaml --layout sysdump --out /tmp/sysdump
//! cargo run --release --example gen_scale -- --nodes 1000 --pods-per-node 10 --load
//! ```

#[path = "../benches/support/scale.rs"]
#[allow(dead_code)] // shared with the benchmarks, which use the in-memory half
mod scale;

use anyhow::{Context as _, Result, bail};
use clap::{Parser, ValueEnum};
use futures::StreamExt;
use scale::{Kind, Scale};
use serde_json::{Value, json};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(about = "Generate a large Cilium multi-pool cluster as a dump or into a test cluster")]
struct Args {
    #[arg(long, default_value_t = 3000)]
    nodes: u32,
    #[arg(long, default_value_t = 30)]
    pods_per_node: u32,
    /// Pools in all, `default` included (1 to 16).
    #[arg(long, default_value_t = 10)]
    pools: u32,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Only the fields the plugin reads, instead of objects as large as real ones.
    #[arg(long)]
    compact: bool,
    #[arg(long, value_enum, default_value_t = Format::Json)]
    format: Format,
    /// `list`: one `kind: List` file per kind; `sysdump`: the file names and shapes `cilium sysdump` writes.
    #[arg(long, value_enum, default_value_t = Layout::List)]
    layout: Layout,
    /// Directory to write the dump into (created).
    #[arg(long, required_unless_present = "load")]
    out: Option<PathBuf>,
    /// Create the objects in the cluster of $KUBECONFIG instead (its CRDs must be installed).
    #[arg(long, conflicts_with = "out")]
    load: bool,
    /// Concurrent requests while loading.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Format {
    Json,
    Yaml,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
enum Layout {
    List,
    Sysdump,
}

/// The timestamp `cilium sysdump` puts in its file names (Go layout 20060102-150405).
const SYSDUMP_TS: &str = "20260105-100000";

/// One streaming list file: items are written as they are generated.
struct ListWriter {
    out: BufWriter<std::fs::File>,
    format: Format,
    items: usize,
    /// Sysdump lists of built-in kinds drop apiVersion/kind from their items.
    strip_type: bool,
}

impl ListWriter {
    fn create(path: &Path, format: Format, typed_list: bool, strip_type: bool) -> Result<ListWriter> {
        let mut out = BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
        match (format, typed_list) {
            (Format::Json, false) => {
                write!(out, "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"metadata\":{{\"resourceVersion\":\"\"}},\"items\":[")?
            }
            (Format::Json, true) => write!(out, "{{\"metadata\":{{\"resourceVersion\":\"987654\"}},\"items\":[")?,
            (Format::Yaml, false) => write!(out, "apiVersion: v1\nkind: List\nmetadata:\n  resourceVersion: \"\"\nitems:\n")?,
            (Format::Yaml, true) => write!(out, "metadata:\n  resourceVersion: \"987654\"\nitems:\n")?,
        }
        Ok(ListWriter { out, format, items: 0, strip_type })
    }

    fn push(&mut self, mut item: Value) -> Result<()> {
        if self.strip_type {
            let map = item.as_object_mut().expect("objects are maps");
            map.remove("apiVersion");
            map.remove("kind");
        }
        match self.format {
            Format::Json => {
                if self.items > 0 {
                    self.out.write_all(b",")?;
                }
                serde_json::to_writer(&mut self.out, &item)?;
            }
            Format::Yaml => {
                let text = serde_saphyr::to_string(&item)?;
                for (i, line) in text.lines().enumerate() {
                    self.out.write_all(if i == 0 { b"- " } else { b"  " })?;
                    self.out.write_all(line.as_bytes())?;
                    self.out.write_all(b"\n")?;
                }
            }
        }
        self.items += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<()> {
        match self.format {
            Format::Json => self.out.write_all(b"]}\n")?,
            Format::Yaml if self.items == 0 => self.out.write_all(b"  []\n")?,
            Format::Yaml => {}
        }
        self.out.flush()?;
        Ok(())
    }
}

fn write_dump(scale: &Scale, args: &Args, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let ext = if args.format == Format::Json { "json" } else { "yaml" };
    let sysdump = args.layout == Layout::Sysdump;
    if sysdump && args.format == Format::Json {
        bail!("a sysdump's lists are YAML: use --format yaml with --layout sysdump");
    }
    let name = |kind: &str, sysdump_kind: &str| {
        dir.join(if sysdump { format!("{sysdump_kind}-{SYSDUMP_TS}.yaml") } else { format!("{kind}.{ext}") })
    };
    let mut pools = ListWriter::create(&name("pools", "ciliumpodippools"), args.format, sysdump, false)?;
    let mut nodes = ListWriter::create(&name("ciliumnodes", "ciliumnodes"), args.format, sysdump, false)?;
    let mut pods = ListWriter::create(&name("pods", "k8s-pods"), args.format, sysdump, sysdump)?;
    let mut endpoints = ListWriter::create(&name("ciliumendpoints", "ciliumendpoints"), args.format, sysdump, false)?;
    let mut failure = None;
    scale::generate(scale, &mut |kind, mut object| {
        if failure.is_some() {
            return;
        }
        // A sysdump reads pools through v2alpha1: the v2-only fields are not in it.
        if sysdump && kind == Kind::Pool {
            object["apiVersion"] = json!("cilium.io/v2alpha1");
            for family in ["ipv4", "ipv6"] {
                if let Some(spec) = object["spec"][family].as_object_mut() {
                    spec.remove("pool");
                }
            }
        }
        let result = match kind {
            Kind::Pool => pools.push(object),
            Kind::Node => nodes.push(object),
            Kind::Pod => pods.push(object),
            Kind::Endpoint => endpoints.push(object),
        };
        failure = result.err();
    });
    if let Some(error) = failure {
        return Err(error);
    }
    for list in [pools, nodes, pods, endpoints] {
        list.finish()?;
    }
    if sysdump {
        write_sysdump_extras(dir)?;
    }
    Ok(())
}

/// What else a sysdump holds: the Cilium ConfigMap, JSON Lines flows, logs and a binary profile.
fn write_sysdump_extras(dir: &Path) -> Result<()> {
    std::fs::write(
        dir.join(format!("cilium-configmap-{SYSDUMP_TS}.yaml")),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cilium-config\n  namespace: kube-system\ndata:\n  ipam: multi-pool\n  enable-ipv4: \"true\"\n  enable-ipv6: \"true\"\n",
    )?;
    let flows: String = (0..200)
        .map(|i| format!("{{\"flow\":{{\"time\":\"2026-01-05T10:00:{:02}Z\",\"verdict\":\"FORWARDED\",\"IP\":{{\"source\":\"10.0.0.{}\",\"destination\":\"10.0.1.{}\"}}}}}}\n", i % 60, i % 250, (i * 7) % 250))
        .collect();
    std::fs::write(dir.join(format!("hubble-flows-cilium-abcde-{SYSDUMP_TS}.json")), flows)?;
    std::fs::write(
        dir.join(format!("cilium-operator-logs-{SYSDUMP_TS}.log")),
        "level=info msg=\"Starting multi-pool allocator\"\n".repeat(500),
    )?;
    std::fs::write(
        dir.join(format!("cilium-agent-pprof-heap-{SYSDUMP_TS}.pprof")),
        (0..4096u32).map(|i| (i * 131 % 251) as u8).collect::<Vec<u8>>(),
    )?;
    Ok(())
}

/// One request of the load: a create, and for a pod the status a kubelet would write.
struct Create {
    kind: Kind,
    /// The collection to POST to.
    path: String,
    body: Vec<u8>,
    /// A pod's `{"status": ...}` merge patch and its path.
    status: Option<(String, Vec<u8>)>,
    /// Everything before it is created first, and it before anything after it (a namespace).
    barrier: bool,
}

fn collection(kind: Kind, object: &Value) -> String {
    let version = object["apiVersion"].as_str().unwrap_or("v1");
    let root = if version.contains('/') { format!("/apis/{version}") } else { format!("/api/{version}") };
    let plural = match kind {
        Kind::Pool => "ciliumpodippools",
        Kind::Node => "ciliumnodes",
        Kind::Pod => "pods",
        Kind::Endpoint => "ciliumendpoints",
    };
    match object["metadata"]["namespace"].as_str() {
        Some(namespace) => format!("{root}/namespaces/{namespace}/{plural}"),
        None => format!("{root}/{plural}"),
    }
}

/// The request bodies of one object, serialized on the generator's thread.
fn prepare(kind: Kind, mut object: Value) -> Result<Create> {
    let path = collection(kind, &object);
    let status = if kind == Kind::Pod {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        Some((format!("{path}/{name}/status"), serde_json::to_vec(&json!({"status": object["status"]}))?))
    } else {
        None
    };
    if kind == Kind::Pod && object["spec"]["containers"].is_null() {
        // A compact pod has only what the plugin reads; the API server wants a container.
        object["spec"]["containers"] = json!([{"name": "app", "image": "registry.k8s.io/pause:3.10"}]);
    }
    let metadata = object["metadata"].as_object_mut().expect("metadata");
    for field in ["resourceVersion", "uid", "creationTimestamp", "managedFields", "ownerReferences", "generation"] {
        metadata.remove(field);
    }
    Ok(Create { kind, path, body: serde_json::to_vec(&object)?, status, barrier: false })
}

/// Loads the generated cluster into the cluster of $KUBECONFIG: the objects are generated and
/// serialized on a thread of their own and sent as they come, `concurrency` requests in flight,
/// so memory holds a channel's worth of objects whatever the size. Pools and nodes are all
/// created before the first pod, so a reader never sees pods in blocks that do not exist yet.
async fn load(scale: &Scale, concurrency: usize) -> Result<()> {
    let client = kube::Client::try_default().await.context("connecting to the cluster of $KUBECONFIG")?;
    let started = std::time::Instant::now();
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Result<Create>>(4 * concurrency);
    let generator = {
        let scale = scale.clone();
        std::thread::spawn(move || {
            let mut namespaces = std::collections::BTreeSet::new();
            scale::generate(&scale, &mut |kind, object| {
                if let Some(namespace) = object["metadata"]["namespace"].as_str()
                    && namespaces.insert(namespace.to_string())
                {
                    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
                    let path = "/api/v1/namespaces".into();
                    let namespace = Create { kind, path, body: body.to_string().into_bytes(), status: None, barrier: true };
                    let _ = sender.blocking_send(Ok(namespace));
                }
                let _ = sender.blocking_send(prepare(kind, object));
            });
        })
    };
    let mut in_flight = futures::stream::FuturesUnordered::new();
    let (mut sent, mut pods_started) = (0usize, false);
    while let Some(create) = receiver.recv().await {
        let create = create?;
        let first_pod = matches!(create.kind, Kind::Pod | Kind::Endpoint) && !pods_started;
        if first_pod || create.barrier {
            while let Some(result) = in_flight.next().await {
                result?;
            }
        }
        if first_pod {
            pods_started = true;
            eprintln!("pools and nodes created in {:.1} s", started.elapsed().as_secs_f64());
        }
        if create.barrier {
            send(&client, create).await?;
            continue;
        }
        if in_flight.len() >= concurrency
            && let Some(result) = in_flight.next().await
        {
            result?;
        }
        in_flight.push(send(&client, create));
        sent += 1;
        if sent % 20_000 == 0 {
            eprintln!("{sent} objects sent in {:.1} s", started.elapsed().as_secs_f64());
        }
    }
    while let Some(result) = in_flight.next().await {
        result?;
    }
    generator.join().map_err(|_| anyhow::anyhow!("the generator panicked"))?;
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("loaded {sent} objects in {seconds:.1} s ({:.0} objects/s)", sent as f64 / seconds);
    Ok(())
}

/// POSTs one object (an existing one is left as it is) and, for a pod, patches its status.
async fn send(client: &kube::Client, create: Create) -> Result<()> {
    let request = http::Request::post(&create.path).header("Content-Type", "application/json").body(create.body)?;
    match client.request_text(request).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error).context(format!("creating in {}", create.path)),
    }
    if let Some((path, patch)) = create.status {
        let request = http::Request::patch(&path).header("Content-Type", "application/merge-patch+json").body(patch)?;
        client.request_text(request).await.with_context(|| format!("patching {path}"))?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let scale = Scale {
        nodes: args.nodes,
        pods_per_node: args.pods_per_node,
        pools: args.pools,
        seed: args.seed,
        realistic: !args.compact,
        cfp: !args.load,
    };
    if !(1..=16).contains(&scale.pools) {
        bail!("--pools takes 1 to 16");
    }
    if args.load {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        return runtime.block_on(load(&scale, args.concurrency));
    }
    let dir = args.out.as_deref().expect("clap requires --out without --load");
    write_dump(&scale, &args, dir)
}
