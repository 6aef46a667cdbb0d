//! Snapshots from files (`-f`): manifests, directories, archives and sysdumps, read without a
//! cluster (`read.rs` walks the paths, `inputs.rs` streams one input within its limits,
//! `parse.rs` decodes it as it streams, `limits.rs` what one read may cost, `archive.rs` and `sysdump.rs` the archive and sysdump formats, `comments.rs` the YAML
//! comment filter), and the atomic, compare-and-swap writes of edited files (`atomic.rs`,
//! `fingerprint.rs`). A new input kind is added in `inputs.rs` (what it is) and `read.rs` (where it
//! is found).

pub mod archive;
pub mod atomic;
pub mod comments;
pub mod fingerprint;
pub mod inputs;
mod limits;
mod parse;
pub mod read;
pub mod sysdump;

pub use inputs::Pools;
pub use limits::Limits;

use crate::model::{Origin, Snapshot};
use anyhow::Result;

/// The snapshot the files at `paths` make, its pools kept whole or as far as they are read, each
/// input read within `limits`.
pub fn snapshot(paths: &[String], namespace: Option<&str>, verbose: bool, pools: Pools, limits: Limits) -> Result<Snapshot> {
    let inputs = read::load_inputs(paths, pools, limits)?;
    let duplicates = read::duplicate_pools(&inputs.files);
    let names = inputs.files.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    let mut snapshot = read::snapshot_of(inputs.files);
    one_cluster(&snapshot)?;
    for duplicate in duplicates {
        warn_line!("warning: {duplicate}; the figures use only one copy — pass the files one at a time to see each");
    }
    let origin = Origin { kind: "files", files: paths.to_vec(), namespace: namespace.map(str::to_string), ..Default::default() };
    snapshot.set_origin(origin);
    // -n limits pods and their CiliumEndpoints, as a live read in that namespace would.
    if let Some(ns) = namespace {
        if let Some(pods) = snapshot.pods.as_mut() {
            pods.retain(|p| &*p.namespace == ns);
        }
        if let Some(endpoints) = snapshot.endpoints.as_mut() {
            endpoints.retain(|e| &*e.namespace == ns);
        }
    }
    // A mistyped path, a text file or an empty directory must not pass as "No problems found".
    if snapshot.pools.is_empty() && snapshot.nodes.is_empty() && snapshot.crd.is_none() {
        let read = match (names.is_empty(), inputs.skipped.as_slice()) {
            (false, _) => format!("read {}", names.join(", ")),
            (true, []) => "no manifest file found".to_string(),
            // Name what was skipped and why, so that "nothing usable" is never a mystery.
            (true, skipped) => {
                let shown: Vec<String> = skipped.iter().take(3).map(|s| format!("{}: {}", s.name, s.reason)).collect();
                let more = if skipped.len() > 3 { format!("; and {} more (-v lists them)", skipped.len() - 3) } else { String::new() };
                format!("skipped {} file(s): {}{more}", skipped.len(), shown.join("; "))
            }
        };
        return Err(crate::error::input(format!(
            "no Cilium object in the input ({read}): expected CiliumPodIPPools, CiliumNodes or the CiliumPodIPPool CRD, e.g. `kubectl get ciliumpodippools,ciliumnodes -o yaml` output or an extracted cilium sysdump"
        )));
    }
    if verbose {
        warn_line!("read {} file(s): {}", names.len(), names.join(", "));
        if !inputs.skipped.is_empty() {
            warn_line!("skipped {} file(s) that hold no Kubernetes objects:", inputs.skipped.len());
            for skipped in &inputs.skipped {
                warn_line!("  {}: {}", skipped.name, skipped.reason);
            }
        }
        for (kind, n) in &snapshot.skipped {
            warn_line!("skipped {n} object(s) of kind {kind}");
        }
    }
    Ok(snapshot)
}

/// Several `cilium-config` with different `cluster-name`s are several clusters: merged into one
/// snapshot their pools and blocks would collide into false problems. Refused (exit 2) before
/// anything is printed.
fn one_cluster(snapshot: &Snapshot) -> Result<()> {
    match snapshot.cluster_names.as_slice() {
        [] | [_] => Ok(()),
        names => Err(crate::error::input(format!(
            "the input holds the cilium-config of {} clusters ({}): one snapshot is one cluster; pass each cluster's files as its own input with --fleet (-f east.yaml -f west.yaml --fleet), or split the inputs",
            names.len(),
            names.join(", ")
        ))),
    }
}
