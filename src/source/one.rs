//! One snapshot: from files (`-f`) or from one cluster, whichever the command was given.

use crate::cluster::ConnectOptions;
use crate::files::{Limits, Pools};
use crate::model::Snapshot;
use anyhow::Result;

/// Where snapshots come from: files (`-f`, no cluster is contacted, each input read within
/// `limits`) or a cluster.
#[derive(Clone, Debug)]
pub enum Input {
    Files { paths: Vec<String>, limits: Limits },
    Cluster(ConnectOptions),
}

/// Reads the snapshot from `input`; `namespace` limits pods and their CiliumEndpoints;
/// `verbose` reports what was read on stderr.
pub async fn snapshot(input: &Input, namespace: Option<&str>, verbose: bool) -> Result<Snapshot> {
    let options = match input {
        Input::Files { paths, limits } => return crate::files::snapshot(paths, namespace, verbose, Pools::Read, *limits),
        Input::Cluster(options) => options,
    };
    let (snapshot, layout) = crate::cluster::read::Cluster::connect(options, namespace).await?.read().await?;
    if verbose {
        let count = |n: Option<usize>| n.map_or_else(|| "not readable".to_string(), |n| n.to_string());
        warn_line!(
            "read {} pools through {}, {} CiliumNodes, pods: {}, CiliumEndpoints: {}{}; Cilium: {}",
            snapshot.pools.len(),
            layout.pools.api_version,
            snapshot.nodes.len(),
            count(snapshot.pods.as_ref().map(Vec::len)),
            count(snapshot.endpoints.as_ref().map(Vec::len)),
            layout.endpoints_how.as_deref().map(|how| format!(" ({how})")).unwrap_or_default(),
            layout.cilium_how.as_deref().unwrap_or("not read"),
        );
    }
    Ok(snapshot)
}
