//! A fleet's snapshots: one per input (`-f A -f B --fleet`) or per kubeconfig context
//! (`--context A,B`, `--all-contexts`), live ones read concurrently (docs/fleet.md).

use super::one::Input;
use crate::cluster::ConnectOptions;
use crate::model::Snapshot;
use anyhow::Result;
use futures::StreamExt;

/// Where the clusters of a fleet come from.
#[derive(Clone, Debug)]
pub enum Fleet {
    /// One cluster per `-f` input, each read within `limits`.
    Files { paths: Vec<String>, limits: crate::files::Limits },
    /// One cluster per context, the other connection flags shared.
    Contexts(ConnectOptions, Vec<String>),
    /// Every context of the kubeconfig.
    AllContexts(ConnectOptions),
}

/// How many clusters of a live fleet are read at once: each read opens a few connections of its
/// own (paginated, concurrent lists: five), so 50 contexts must not open 250 connections together.
/// 16 reads 10 remote clusters in one round (with 8, the 9th waited for a whole read: 10 clusters
/// took at least twice the slowest alone, docs/performance.md). Each cluster still has its own
/// deadlines (docs/fleet.md).
pub const CLUSTERS_AT_ONCE: usize = 16;

/// One cluster of the fleet as read: its name and its snapshot, or why it could not be read
/// (one line, credentials redacted).
pub struct Read {
    pub name: String,
    pub snapshot: Result<Snapshot, String>,
    /// The other contexts that reach the same API server (`server`): not read again.
    pub aliases: Vec<String>,
    pub server: Option<String>,
    /// The other contexts whose `cilium-config` has this cluster's `cluster-id` and `cluster-name`
    /// (another server URL of the same cluster): read, but shown once, as this one.
    pub twins: Vec<String>,
}

/// One live cluster to read: the first context that reaches its API server, how to connect, and
/// the other contexts that reach the same server (one cluster, read and shown once).
pub struct Planned {
    pub name: String,
    pub options: ConnectOptions,
    pub server: Option<String>,
    pub aliases: Vec<String>,
}

/// Reads every cluster of `fleet`. A file that cannot be read fails the whole command (bad input,
/// exit 2); a cluster that cannot be read is reported in its `Read` and the others still are.
pub async fn read(fleet: &Fleet, namespace: Option<&str>, verbose: bool) -> Result<Vec<Read>> {
    if let Fleet::Files { paths, limits } = fleet {
        return from_files(paths, *limits, namespace, verbose);
    }
    // Each read runs under its own request deadlines (cluster/limits.rs): a cluster that does not
    // answer ends its own read, not the others'. At most CLUSTERS_AT_ONCE are read together, in
    // the order of the contexts.
    let reads = plan(fleet)?.into_iter().map(|planned| async move {
        let snapshot = super::one::snapshot(&Input::Cluster(planned.options), namespace, verbose).await;
        let snapshot = snapshot.map_err(|e| crate::secrets::redact(&format!("{e:#}")).into_owned());
        Read { name: planned.name, snapshot, aliases: planned.aliases, server: planned.server, twins: Vec::new() }
    });
    let reads = futures::stream::iter(reads).buffered(CLUSTERS_AT_ONCE).collect().await;
    Ok(one_per_identity(reads))
}

/// A cluster's Cluster Mesh identity, when its `cilium-config` sets one: a non-zero `cluster-id`
/// and a `cluster-name` other than the agent's `default`.
fn identity(read: &Read) -> Option<(u32, &str)> {
    mesh_identity(read.snapshot.as_ref().ok()?)
}

/// A snapshot's Cluster Mesh identity (`cluster-id`, `cluster-name`), when its `cilium-config`
/// sets one (`serve` tells its clusters apart by it too).
pub fn mesh_identity(snapshot: &Snapshot) -> Option<(u32, &str)> {
    let config = snapshot.ipam.as_ref()?;
    let id = config.cluster_id.as_deref()?.trim().parse::<u32>().ok().filter(|id| *id != 0)?;
    let name = config.cluster_name.as_deref().filter(|n| !n.is_empty() && *n != "default")?;
    Some((id, name))
}

/// Reads of contexts whose servers differ but whose `cilium-config` has the same `cluster-id` and
/// `cluster-name` are one cluster (two URLs of one server, or a load balancer and a node): kept
/// once, as the first, the others named in its `twins` and in a warning line.
pub fn one_per_identity(reads: Vec<Read>) -> Vec<Read> {
    let mut kept: Vec<Read> = Vec::new();
    for read in reads {
        let same = identity(&read).and_then(|id| kept.iter().position(|k| identity(k) == Some(id)));
        match same {
            Some(first) => {
                let first = &mut kept[first];
                first.twins.push(read.name);
                first.twins.extend(read.aliases);
            }
            None => kept.push(read),
        }
    }
    for read in kept.iter().filter(|r| !r.twins.is_empty()) {
        let (id, name) = identity(read).unwrap_or_default();
        warn_line!(
            "warning: contexts {}, {} reach clusters with the same cluster-id {id} and cluster-name {name}: one cluster, shown once as {}",
            read.name,
            read.twins.join(", "),
            read.name
        );
    }
    kept
}

/// The live clusters of `fleet`, before any request: every context must be in the kubeconfig
/// (a typo is bad input, exit 2), and contexts that reach the same API server are read once, as
/// the first of them; a warning line names the others.
pub fn plan(fleet: &Fleet) -> Result<Vec<Planned>> {
    let (options, contexts) = match fleet {
        Fleet::Files { .. } => return Ok(Vec::new()),
        Fleet::Contexts(options, contexts) => (options, contexts.clone()),
        Fleet::AllContexts(options) => (options, crate::cluster::client::context_names(options.kubeconfig.as_deref())?),
    };
    let servers = crate::cluster::client::context_servers(
        options.kubeconfig.as_deref(),
        &contexts,
        options.cluster.as_deref(),
        options.user.as_deref(),
    )?;
    let mut planned: Vec<Planned> = Vec::new();
    for (context, server) in contexts.into_iter().zip(servers) {
        match planned.iter_mut().find(|p| server.is_some() && p.server == server) {
            Some(first) => first.aliases.push(context),
            None => planned.push(Planned {
                options: ConnectOptions { context: Some(context.clone()), ..options.clone() },
                name: context,
                server,
                aliases: Vec::new(),
            }),
        }
    }
    for p in planned.iter().filter(|p| !p.aliases.is_empty()) {
        let server = crate::secrets::safe_url(p.server.as_deref().unwrap_or_default());
        warn_line!(
            "warning: contexts {}, {} reach the same API server {server}: one cluster, read once as {}",
            p.name,
            p.aliases.join(", "),
            p.name
        );
    }
    Ok(planned)
}

/// One snapshot per path, named after its cilium-config `cluster-name`, or after the path when
/// it has none or another input has the same one (names must tell the clusters apart).
fn from_files(paths: &[String], limits: crate::files::Limits, namespace: Option<&str>, verbose: bool) -> Result<Vec<Read>> {
    let snapshots = paths
        .iter()
        .map(|path| crate::files::snapshot(std::slice::from_ref(path), namespace, verbose, crate::files::Pools::Read, limits))
        .collect::<Result<Vec<_>>>()?;
    let declared = |s: &Snapshot| s.ipam.as_ref().and_then(|c| c.cluster_name.clone());
    let names: Vec<Option<String>> = snapshots.iter().map(declared).collect();
    let unique = |name: &String| names.iter().flatten().filter(|n| *n == name).count() == 1;
    Ok(paths
        .iter()
        .zip(snapshots)
        .zip(&names)
        .map(|((path, snapshot), name)| Read {
            name: name.clone().filter(unique).unwrap_or_else(|| file_name(path)),
            snapshot: Ok(snapshot),
            aliases: Vec::new(),
            server: None,
            twins: Vec::new(),
        })
        .collect())
}

/// The last component of a path (`dumps/east.zip` is `east.zip`), or the path itself.
fn file_name(path: &str) -> String {
    std::path::Path::new(path.trim_end_matches('/')).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(name: &str, cluster: Option<(&str, &str)>) -> Read {
        let objects = cluster.map(|(id, cluster_name)| {
            json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
                   "data": {"ipam": "multi-pool", "cluster-id": id, "cluster-name": cluster_name}})
        });
        let snapshot = Ok(Snapshot::from_objects(objects));
        let server = Some(format!("https://{name}:6443"));
        Read { name: name.into(), snapshot, aliases: vec![format!("{name}-viewer")], server, twins: Vec::new() }
    }

    #[test]
    fn contexts_of_one_cluster_id_and_name_are_shown_once_as_the_first() {
        let reads = vec![
            read("lb", Some(("7", "east"))),
            read("other-name", Some(("7", "west"))),
            read("node", Some(("7", "east"))),
            read("zero-id", Some(("0", "east"))),
            read("zero-id-too", Some(("0", "east"))),
            read("default-name", Some(("7", "default"))),
            read("default-name-too", Some(("7", "default"))),
            read("no-config", None),
            read("no-config-too", None),
            Read { snapshot: Err("unreachable".into()), ..read("down", None) },
            read("by-address", Some((" 7", "east"))),
        ];
        let kept = one_per_identity(reads);
        let names: Vec<&str> = kept.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["lb", "other-name", "zero-id", "zero-id-too", "default-name", "default-name-too", "no-config", "no-config-too", "down"]
        );
        assert_eq!(kept[0].twins, ["node", "node-viewer", "by-address", "by-address-viewer"]);
        assert!(kept[1..].iter().all(|r| r.twins.is_empty()));
    }
}
