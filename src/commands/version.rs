//! `version`: what was built (version, git commit, build date, target — embedded by build.rs) and,
//! when a cluster is reachable within a short deadline, the server's version, the CiliumPodIPPool
//! CRD's versions and dialect, and the Cilium version. Whatever cannot be read becomes a note, not
//! an error: the plugin's own version is always an answer.

use crate::cli::VersionArgs;
use crate::cluster::cilium;
use crate::cluster::read::Cluster;
use crate::commands::context::Context;
use crate::render::version::{Build, PoolCrd, Server, VersionDocument};
use crate::source::{ConnectOptions, Input};
use std::time::Duration;
use tokio::time::{Instant, timeout_at};

/// How long the cluster part may take in all unless `--request-timeout` says otherwise: `version`
/// is asked when something is wrong, and must not hang on an unreachable server.
const DEADLINE: Duration = Duration::from_secs(2);
/// A deadline that never comes (`--request-timeout 0`).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

pub const BUILD: Build = Build {
    version: env!("CARGO_PKG_VERSION"),
    git_commit: env!("CILIUMPOOL_GIT_COMMIT"),
    build_date: env!("CILIUMPOOL_BUILD_DATE"),
    platform: env!("CILIUMPOOL_TARGET"),
};

pub async fn run(args: VersionArgs, ctx: &Context) -> anyhow::Result<i32> {
    let mut doc = VersionDocument::new(BUILD);
    match &ctx.input {
        _ if args.client => {}
        Input::Cluster(options) => {
            ask_cluster(options, &mut doc).await;
            // Notes quote client errors, which can quote kubeconfig credentials.
            doc.notes = doc.notes.iter().map(|note| crate::secrets::redact(note).into_owned()).collect();
        }
        Input::Files { .. } => doc.notes.push("server: not contacted (-f)".to_string()),
    }
    ctx.show(&doc)?;
    Ok(0)
}

/// Fills in what the cluster tells before the deadline; failures become notes. `/version` first:
/// when the server does not answer that, one note says so instead of three.
async fn ask_cluster(options: &ConnectOptions, doc: &mut VersionDocument) {
    let cluster = match Cluster::connect(options, None).await {
        Ok(cluster) => cluster,
        Err(e) => return doc.notes.push(format!("server: {e:#}")),
    };
    let connection = &cluster.connection;
    // --request-timeout N allows N for the whole cluster part; 0 waits forever, as everywhere.
    let budget = connection.deadlines.request.unwrap_or(DEADLINE);
    let deadline = if budget.is_zero() { Instant::now() + FOREVER } else { Instant::now() + budget };
    let late = |what: &str| format!("{what}: no answer within {}", humantime::format_duration(budget));
    let server = doc.server.insert(Server { url: connection.server.clone(), version: None });
    match timeout_at(deadline, cluster.server_version()).await {
        Ok(Ok(version)) => server.version = Some(version),
        Ok(Err(e)) => return doc.notes.push(format!("server: {e:#}")),
        Err(_) => return doc.notes.push(late("server")),
    }
    let (crd, cilium) = tokio::join!(
        timeout_at(deadline, cluster.pool_crd()),
        timeout_at(deadline, cilium::version(&connection.client, &options.cilium_namespace)),
    );
    match crd {
        Ok(Ok((info, note))) => {
            doc.cilium_pod_ip_pool = Some(PoolCrd::new(&info));
            doc.notes.extend(note);
        }
        Ok(Err(e)) => doc.notes.push(format!("{e:#}")),
        Err(_) => doc.notes.push(late("CiliumPodIPPool CRD")),
    }
    match cilium {
        Ok(Ok(version)) => doc.cilium = Some(version),
        Ok(Err(why)) => doc.notes.push(format!("Cilium version: {why}")),
        Err(_) => doc.notes.push(late("Cilium version")),
    }
}
