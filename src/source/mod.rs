//! Where snapshots come from: files (`-f`) or a live cluster. The only reading IO.

pub mod atomic;
pub mod client;
pub mod cluster;
pub mod files;
pub mod pools;
pub mod secrets;
pub mod watch;

use crate::cli::GlobalArgs;
use crate::model::{Origin, Snapshot};
use anyhow::Result;

/// Reads the snapshot the flags ask for.
pub async fn snapshot(global: &GlobalArgs) -> Result<Snapshot> {
    if global.filename.is_empty() {
        let (snapshot, layout) = cluster::Cluster::connect(global).await?.read().await?;
        if global.verbose {
            let count = |n: Option<usize>| n.map_or_else(|| "not readable".to_string(), |n| n.to_string());
            warn_line!(
                "read {} pools through {}, {} CiliumNodes, pods: {}, CiliumEndpoints: {}",
                snapshot.pools.len(),
                layout.pools.api_version,
                snapshot.nodes.len(),
                count(snapshot.pods.as_ref().map(Vec::len)),
                count(snapshot.endpoints.as_ref().map(Vec::len)),
            );
        }
        return Ok(snapshot);
    }
    from_files(global)
}

pub fn from_files(global: &GlobalArgs) -> Result<Snapshot> {
    let loaded = files::load(&global.filename)?;
    files::warn_duplicates(&loaded);
    let names = loaded.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    let mut snapshot = Snapshot::from_objects(loaded.into_iter().flat_map(|f| f.documents));
    // -n limits pods and their CiliumEndpoints, as a live read in that namespace would.
    if let Some(ns) = &global.namespace {
        if let Some(pods) = snapshot.pods.as_mut() {
            pods.retain(|p| &p.namespace == ns);
        }
        if let Some(endpoints) = snapshot.endpoints.as_mut() {
            endpoints.retain(|e| &e.namespace == ns);
        }
    }
    snapshot.origin = Origin { kind: "files", files: global.filename.clone(), ..Default::default() };
    if global.verbose {
        warn_line!("read {} file(s): {}", names.len(), names.join(", "));
        for (kind, n) in &snapshot.skipped {
            warn_line!("skipped {n} object(s) of kind {kind}");
        }
    }
    Ok(snapshot)
}
