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
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
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
    #[arg(long, default_value_t = 32)]
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

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    ApiResource { group: group.into(), version: version.into(), api_version, kind: kind.into(), plural: plural.into() }
}

async fn load(scale: &Scale, concurrency: usize) -> Result<()> {
    let client = kube::Client::try_default().await.context("connecting to the cluster of $KUBECONFIG")?;
    let mut objects = Vec::new();
    scale::generate(scale, &mut |kind, object| objects.push((kind, object)));
    let namespaces: std::collections::BTreeSet<String> =
        objects.iter().filter_map(|(_, o)| o["metadata"]["namespace"].as_str().map(str::to_string)).collect();
    let namespace_api: Api<DynamicObject> = Api::all_with(client.clone(), &resource("", "v1", "Namespace", "namespaces"));
    for namespace in &namespaces {
        let object: DynamicObject =
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))?;
        match namespace_api.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {}
            Err(error) => return Err(error).context(format!("creating namespace {namespace}")),
        }
    }
    // Pools and nodes first, so that a reader never sees pods in blocks that do not exist yet.
    for phase in [vec![Kind::Pool], vec![Kind::Node], vec![Kind::Pod, Kind::Endpoint]] {
        let batch: Vec<&(Kind, Value)> = objects.iter().filter(|(kind, _)| phase.contains(kind)).collect();
        futures::stream::iter(batch.into_iter().map(|(kind, object)| create(&client, *kind, object)))
            .buffer_unordered(concurrency)
            .try_collect::<Vec<()>>()
            .await?;
    }
    eprintln!("loaded {} objects", objects.len());
    Ok(())
}

async fn create(client: &kube::Client, kind: Kind, object: &Value) -> Result<()> {
    let version = object["apiVersion"].as_str().unwrap_or("v1");
    let (group, version) = version.split_once('/').unwrap_or(("", version));
    let resource = match kind {
        Kind::Pool => resource(group, version, "CiliumPodIPPool", "ciliumpodippools"),
        Kind::Node => resource(group, version, "CiliumNode", "ciliumnodes"),
        Kind::Pod => resource(group, version, "Pod", "pods"),
        Kind::Endpoint => resource(group, version, "CiliumEndpoint", "ciliumendpoints"),
    };
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut body = object.clone();
    let map = body["metadata"].as_object_mut().expect("metadata");
    for field in ["resourceVersion", "uid", "creationTimestamp", "managedFields", "ownerReferences", "generation"] {
        map.remove(field);
    }
    let name = body["metadata"]["name"].as_str().unwrap_or_default().to_string();
    let typed: DynamicObject = serde_json::from_value(body)?;
    match api.create(&PostParams::default(), &typed).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => return Err(error).context(format!("creating {} {name}", resource.kind)),
    }
    if kind == Kind::Pod {
        let status = json!({"status": object["status"]});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .with_context(|| format!("writing the status of pod {name}"))?;
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
