//! A fleet's snapshots: one per input (`-f A -f B --fleet`) or per kubeconfig context
//! (`--context A,B`, `--all-contexts`), live ones read concurrently (docs/fleet.md).

use super::{ConnectOptions, Input};
use crate::model::Snapshot;
use anyhow::Result;

/// Where the clusters of a fleet come from.
#[derive(Clone, Debug)]
pub enum Fleet {
    /// One cluster per `-f` input.
    Files(Vec<String>),
    /// One cluster per context, the other connection flags shared.
    Contexts(ConnectOptions, Vec<String>),
    /// Every context of the kubeconfig.
    AllContexts(ConnectOptions),
}

/// One cluster of the fleet as read: its name and its snapshot, or why it could not be read
/// (one line, credentials redacted).
pub struct Read {
    pub name: String,
    pub snapshot: Result<Snapshot, String>,
}

/// Reads every cluster of `fleet`. A file that cannot be read fails the whole command (bad input,
/// exit 2); a cluster that cannot be read is reported in its `Read` and the others still are.
pub async fn read(fleet: &Fleet, namespace: Option<&str>, verbose: bool) -> Result<Vec<Read>> {
    if let Fleet::Files(paths) = fleet {
        return from_files(paths, namespace, verbose);
    }
    // Each read runs under its own request deadlines (source/limits.rs): a cluster that does not
    // answer ends its own read, not the others'.
    let reads = connections(fleet)?.into_iter().map(|(name, options)| async move {
        let snapshot = super::snapshot(&Input::Cluster(options), namespace, verbose).await;
        Read { name, snapshot: snapshot.map_err(|e| super::secrets::redact(&format!("{e:#}")).into_owned()) }
    });
    Ok(futures::future::join_all(reads).await)
}

/// Each live cluster of `fleet`: its context's name and how to connect to it (none for files).
pub fn connections(fleet: &Fleet) -> Result<Vec<(String, ConnectOptions)>> {
    let (options, contexts) = match fleet {
        Fleet::Files(_) => return Ok(Vec::new()),
        Fleet::Contexts(options, contexts) => (options, contexts.clone()),
        Fleet::AllContexts(options) => (options, super::client::context_names(options.kubeconfig.as_deref())?),
    };
    Ok(contexts.into_iter().map(|context| (context.clone(), ConnectOptions { context: Some(context), ..options.clone() })).collect())
}

/// One snapshot per path, named after its cilium-config `cluster-name`, or after the path when
/// it has none or another input has the same one (names must tell the clusters apart).
fn from_files(paths: &[String], namespace: Option<&str>, verbose: bool) -> Result<Vec<Read>> {
    let snapshots = paths
        .iter()
        .map(|path| super::from_files(std::slice::from_ref(path), namespace, verbose, super::Pools::Read))
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
        })
        .collect())
}

/// The last component of a path (`dumps/east.zip` is `east.zip`), or the path itself.
fn file_name(path: &str) -> String {
    std::path::Path::new(path.trim_end_matches('/')).file_name().map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}
