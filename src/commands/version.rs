//! `version`: the plugin's version and, when a cluster is reachable, the server's version and
//! the CiliumPodIPPool CRD's versions. An unreachable cluster is reported, not an error: the
//! plugin version alone is still an answer.

use super::Context;
use crate::render::version::VersionDocument;
use crate::source::Input;
use crate::source::cluster::Cluster;

pub async fn run(ctx: &Context) -> anyhow::Result<i32> {
    let mut doc = VersionDocument {
        plugin_version: env!("CARGO_PKG_VERSION"),
        server: None,
        server_version: None,
        cilium_pod_ip_pool: None,
        notes: Vec::new(),
    };
    match &ctx.input {
        Input::Cluster(options) => ask_cluster(options, ctx, &mut doc).await,
        Input::Files(_) => doc.notes.push("server: not contacted (-f)".to_string()),
    }
    ctx.show(&doc)?;
    Ok(0)
}

/// Fills in what the cluster tells; failures become notes.
async fn ask_cluster(options: &crate::source::ConnectOptions, ctx: &Context, doc: &mut VersionDocument) {
    let cluster = match Cluster::connect(options, ctx.namespace.as_deref()).await {
        Ok(cluster) => cluster,
        Err(e) => return doc.notes.push(format!("server: {e:#}")),
    };
    doc.server = Some(cluster.connection.server.clone());
    match cluster.server_version().await {
        Ok(version) => doc.server_version = Some(version),
        Err(e) => return doc.notes.push(format!("server: {e:#}")),
    }
    match cluster.pool_crd().await {
        Ok((info, note)) => {
            doc.cilium_pod_ip_pool = Some(info);
            doc.notes.extend(note);
        }
        Err(e) => doc.notes.push(format!("{e:#}")),
    }
}
