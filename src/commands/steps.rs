//! The steps commands share: read and analyse, warn about what could not be read, require the
//! named pools, confirm before a write, and the ends of a declined or interrupted command.

use super::context::Context;
use crate::allocator::Report;
use crate::error::input;
use crate::model::Snapshot;
use crate::terminal::Prompter;
use anyhow::Result;

/// The one rule before a write: `--yes` (`yes`), or a yes to `question` on a terminal; without
/// a terminal and without `--yes` nothing is written (exit 2, `refusal` says why). A false
/// answer ends the command with [`declined`].
pub fn confirm(ctx: &Context, yes: bool, prompter: &dyn Prompter, question: &str, refusal: &str) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !ctx.interactive {
        return Err(input(refusal.to_string()));
    }
    prompter.confirm(question)
}

/// Where a write to a live cluster goes, as every question before one names it: `context NAME
/// (SERVER)`, or the server alone when no kubeconfig context was used (in-cluster configuration).
/// The server is the kubeconfig's URL without credentials (`secrets::safe_url`); the prompt
/// escapes the whole question (`terminal::Dialoguer`).
pub fn destination(conn: &crate::cluster::client::Connection) -> String {
    match &conn.context {
        Some(context) => format!("context {context} ({})", conn.server),
        None => conn.server.clone(),
    }
}

/// The end of every command whose question was answered no (`n`, Enter, Esc) or whose picker
/// or prompt was cancelled (Esc): one line on stderr, nothing written, exit
/// [`crate::error::DECLINED`].
pub fn declined() -> Result<i32> {
    warn_line!("aborted; nothing was written");
    Ok(crate::error::DECLINED)
}

/// A read-only command's picker was cancelled (Esc): nothing was going to be written.
pub fn cancelled() -> Result<i32> {
    warn_line!("cancelled");
    Ok(crate::error::DECLINED)
}

/// Resolves when the user interrupts (Ctrl-C) or the process is asked to stop (SIGTERM), so that
/// long-running commands can restore the terminal and exit 0 instead of dying mid-frame. Claimed
/// at once (`interrupt::claim`): an exec credential plugin's signal action then leaves the end to it.
pub fn interrupted() -> impl std::future::Future<Output = ()> {
    crate::interrupt::claim();
    listen()
}

async fn listen() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Snapshot and report, the start of every read command.
pub async fn analyze(ctx: &Context) -> Result<(Snapshot, Report)> {
    let snapshot = crate::source::snapshot(&ctx.input, ctx.namespace.as_deref(), ctx.verbose).await?;
    warn_unread(&snapshot);
    let report = crate::allocator::analyze(&snapshot);
    Ok((snapshot, report))
}

/// A live read that could not see everything (forbidden pods, an unreadable CRD) says so on
/// stderr, whatever the output format: `-o json` marks such figures null but cannot say why.
/// So does each caveat of the input (`model::caveat`), one `warning:` line each.
pub fn warn_unread(snapshot: &Snapshot) {
    warn_unread_of(snapshot, None);
}

/// [`warn_unread`] for one cluster of a fleet: each line names it (`warning: cluster east: …`).
pub fn warn_unread_of(snapshot: &Snapshot, cluster: Option<&str>) {
    let of = cluster.map(|name| format!("cluster {name}: ")).unwrap_or_default();
    if snapshot.origin.kind == "cluster" {
        for note in &snapshot.notes {
            warn_line!("warning: {of}{note}");
        }
    }
    for caveat in &snapshot.origin.caveats {
        warn_line!("warning: {of}{}", caveat.message);
    }
}

/// Checks that every requested pool exists, suggesting close names otherwise.
pub fn require_pools(snapshot: &Snapshot, names: &[String]) -> Result<()> {
    for name in names {
        if snapshot.pool(name).is_none() {
            let mut close: Vec<&str> = snapshot
                .pools
                .iter()
                .map(|p| p.name.as_str())
                .filter(|p| strsim::levenshtein(p, name) <= 2 || p.contains(name.as_str()) || name.contains(p))
                .collect();
            close.sort();
            let hint = if snapshot.is_mode_pool(name) && snapshot.nodes.iter().any(|n| n.allocated.iter().any(|a| *a.pool == **name)) {
                // The agent's pool of a non-multi-pool mode (ENI): nodes list it, no object defines it.
                let mode = snapshot.ipam.as_ref().map(|c| c.mode.name().to_string()).unwrap_or_default();
                format!("it is IPAM mode {mode}'s pool, which no CiliumPodIPPool defines: `kubectl ciliumpool usage` shows it")
            } else if close.is_empty() {
                let mut all: Vec<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();
                all.sort();
                format!("known pools: {}", if all.is_empty() { "none".to_string() } else { all.join(", ") })
            } else {
                format!("did you mean {}?", close.join(" or "))
            };
            return Err(input(format!("pool {name:?} not found; {hint}")));
        }
    }
    Ok(())
}
