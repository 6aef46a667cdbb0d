//! `version`: the plugin's version and, when a cluster is reachable, the server's version and
//! the CiliumPodIPPool CRD's versions. An unreachable cluster is reported, not an error: the
//! plugin version alone is still an answer.

use super::Context;
use crate::cli::Output;
use crate::model::CrdInfo;
use crate::render;
use crate::source::cluster::Cluster;
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionDocument {
    plugin_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_version: Option<String>,
    #[serde(rename = "ciliumPodIPPool", skip_serializing_if = "Option::is_none")]
    cilium_pod_ip_pool: Option<CrdInfo>,
    /// Why a part is missing (unreachable, forbidden, not installed, offline).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

pub async fn run(ctx: &Context) -> anyhow::Result<i32> {
    let mut doc = VersionDocument {
        plugin_version: env!("CARGO_PKG_VERSION"),
        server: None,
        server_version: None,
        cilium_pod_ip_pool: None,
        notes: Vec::new(),
    };
    if ctx.global.filename.is_empty() {
        ask_cluster(ctx, &mut doc).await;
    } else {
        doc.notes.push("server: not contacted (-f)".to_string());
    }
    let text = match ctx.global.output {
        Output::Json | Output::Yaml => render::serialize(&doc, ctx.global.output == Output::Yaml),
        _ => human(&doc),
    };
    ctx.print(&text)?;
    Ok(0)
}

/// Fills in what the cluster tells; failures become notes.
async fn ask_cluster(ctx: &Context, doc: &mut VersionDocument) {
    let cluster = match Cluster::connect(&ctx.global).await {
        Ok(cluster) => cluster,
        Err(e) => return doc.notes.push(format!("server: {e:#}")),
    };
    let connection = &cluster.connection;
    doc.server = Some(connection.server.clone());
    match connection.client.apiserver_version().await {
        Ok(info) => doc.server_version = Some(info.git_version),
        Err(e) => return doc.notes.push(format!("server: {:#}", connection.request_failed(e, "get", "/version"))),
    }
    match cluster.pool_crd().await {
        Ok((info, note)) => {
            doc.cilium_pod_ip_pool = Some(info);
            doc.notes.extend(note);
        }
        Err(e) => doc.notes.push(format!("{e:#}")),
    }
}

fn human(doc: &VersionDocument) -> String {
    let mut out = format!("Plugin version: {}\n", doc.plugin_version);
    if let (Some(server), Some(version)) = (&doc.server, &doc.server_version) {
        out.push_str(&format!("Server version: {version} ({server})\n"));
    }
    if let Some(crd) = &doc.cilium_pod_ip_pool {
        out.push_str(&format!("CiliumPodIPPool: {}\n", crd_line(crd)));
    }
    for note in &doc.notes {
        out.push_str(&format!("Note: {note}\n"));
    }
    out
}

/// `served v2 (storage), v2alpha1; storedVersions v2alpha1, v2; dialect upstream-v2`
fn crd_line(crd: &CrdInfo) -> String {
    let served: Vec<String> = crd
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| if v.storage { format!("{} (storage)", v.name) } else { v.name.clone() })
        .collect();
    let mut line = format!("served {}", if served.is_empty() { "none".to_string() } else { served.join(", ") });
    if let Some(stored) = &crd.stored_versions {
        line.push_str(&format!("; storedVersions {}", stored.join(", ")));
    }
    line.push_str(&format!("; dialect {}", crd.cluster_dialect().name()));
    line
}
