//! `usage`: figures per pool, node or block, with thresholds for scripts.

use super::{Context, analyze, emit, require_pools, warn_unread};
use crate::render::escape::terminal_safe;
use crate::allocator::{Count, PoolReport, Report};
use crate::cli::{ByKind, UsageArgs};
use crate::model::Snapshot;
use crate::render::{self, usage::{Table, Usage, selected}};
use crate::source::Input;
use crate::source::cluster::Cluster;
use crate::source::watch::Watch;
use anyhow::Result;
use std::time::Duration;

pub async fn run(args: UsageArgs, ctx: &Context) -> Result<i32> {
    if args.watch {
        return watch(args, ctx).await;
    }
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    ctx.print(&render_usage(&args, ctx, &snapshot, &report))?;
    Ok(if breaches(&args, &selected(&report, &args.pools)) { 1 } else { 0 })
}

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// `--watch`: render, then re-render whenever the figures change, until Ctrl-C (exit 0).
async fn watch(args: UsageArgs, ctx: &Context) -> Result<i32> {
    let Input::Cluster(options) = &ctx.input else { unreachable!("Context::from_cli refuses --watch with -f") };
    let cluster = Cluster::connect(options, ctx.namespace.as_deref()).await?;
    let (snapshot, layout) = cluster.read().await?;
    warn_unread(&snapshot);
    require_pools(&snapshot, &args.pools)?;
    let mut screen = Screen { terminal: ctx.stdout_terminal, colour: ctx.style.color, machine: ctx.format.is_document(), shown: None };
    screen.show(render_snapshot(&args, ctx, &snapshot))?;
    let mut watch = Watch::start(&cluster, &layout);
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        tokio::select! {
            _ = &mut interrupted => return Ok(0),
            changed = watch.changed() => changed?,
        }
        tokio::select! {
            _ = &mut interrupted => return Ok(0),
            _ = watch.settle(DEBOUNCE) => {}
        }
        screen.show(render_snapshot(&args, ctx, &watch.snapshot(&layout)))?;
    }
}

fn render_snapshot(args: &UsageArgs, ctx: &Context, snapshot: &Snapshot) -> String {
    render_usage(args, ctx, snapshot, &crate::allocator::analyze(snapshot))
}

/// Where `--watch` output goes: redrawn in place on a terminal, one block per change in a pipe.
struct Screen {
    terminal: bool,
    colour: bool,
    /// JSON/YAML frames are documents, already escaped.
    machine: bool,
    shown: Option<String>,
}

impl Screen {
    /// Shows `text` unless it is what is already shown (events that change no figure).
    fn show(&mut self, text: String) -> Result<()> {
        if self.shown.as_ref() == Some(&text) {
            return Ok(());
        }
        let safe = if self.machine { text.as_str().into() } else { terminal_safe(&text, self.colour) };
        emit(&frame(&safe, self.shown.is_none(), self.terminal))?;
        self.shown = Some(text);
        Ok(())
    }
}

/// The bytes that replace the previous output. On a terminal: cursor home, each line cleared
/// to its end as it is overwritten, then the rest of the screen cleared — no blank flash
/// between frames. Elsewhere: blocks separated by a blank line.
fn frame(text: &str, first: bool, terminal: bool) -> String {
    const HOME: &str = "\x1b[H";
    const CLEAR_SCREEN: &str = "\x1b[2J";
    const CLEAR_LINE_END: &str = "\x1b[K";
    const CLEAR_BELOW: &str = "\x1b[J";
    match (terminal, first) {
        (false, true) => text.to_string(),
        (false, false) => format!("\n{text}"),
        (true, _) => {
            let mut out = String::from(HOME);
            if first {
                out.push_str(CLEAR_SCREEN);
            }
            for line in text.lines() {
                out.push_str(line);
                out.push_str(CLEAR_LINE_END);
                out.push('\n');
            }
            out.push_str(CLEAR_BELOW);
            out
        }
    }
}

/// The whole output for one snapshot (also what `--watch` re-renders).
fn render_usage(args: &UsageArgs, ctx: &Context, snapshot: &Snapshot, report: &Report) -> String {
    let table = if args.show_blocks {
        Table::Blocks
    } else if args.by == ByKind::Node {
        Table::Nodes
    } else {
        Table::Pools
    };
    render::output(&Usage { snapshot, report, names: &args.pools, table }, ctx.format, &ctx.style)
}

/// `--fail-above` and `--min-free-blocks`: does any selected pool breach?
pub fn breaches(args: &UsageArgs, pools: &[&PoolReport]) -> bool {
    pools.iter().flat_map(|p| p.families.iter()).any(|fam| {
        let above = args.fail_above.is_some_and(|pct| fam.utilization().is_some_and(|u| u * 100.0 > pct));
        let short = args.min_free_blocks.is_some_and(|n| fam.free_blocks < Count::from(n));
        above || short
    })
}

#[cfg(test)]
mod tests {
    use super::frame;

    #[test]
    fn watch_frames() {
        assert_eq!(frame("a\n", true, false), "a\n");
        assert_eq!(frame("b\n", false, false), "\nb\n");
        assert_eq!(frame("a\nb\n", false, true), "\x1b[Ha\x1b[K\nb\x1b[K\n\x1b[J");
        assert!(frame("a\n", true, true).starts_with("\x1b[H\x1b[2J"));
    }
}
