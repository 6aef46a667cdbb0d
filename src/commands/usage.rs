//! `usage`: figures per pool, node or block, with thresholds for scripts.

use super::{Context, analyze, emit, require_pools, warn_unread};
use crate::render::escape::terminal_safe;
use crate::allocator::{Count, PoolReport, Report};
use crate::cli::{ByKind, Output, UsageArgs};
use crate::error::input;
use crate::model::Snapshot;
use crate::render::{self, usage};
use crate::source::cluster::Cluster;
use crate::source::watch::Watch;
use anyhow::Result;
use std::io::IsTerminal;
use std::time::Duration;

pub async fn run(args: UsageArgs, ctx: &Context) -> Result<i32> {
    if let Some(pct) = args.fail_above
        && !(0.0..=100.0).contains(&pct)
    {
        return Err(input(format!("--fail-above {pct} is not a percentage between 0 and 100")));
    }
    if args.watch {
        if !ctx.global.filename.is_empty() {
            return Err(input("--watch needs a live cluster; it cannot be combined with -f"));
        }
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
    let cluster = Cluster::connect(&ctx.global).await?;
    let (snapshot, layout) = cluster.read().await?;
    warn_unread(&snapshot);
    require_pools(&snapshot, &args.pools)?;
    let mut screen = Screen { terminal: std::io::stdout().is_terminal(), colour: ctx.style.color, machine: matches!(ctx.global.output, Output::Json | Output::Yaml), shown: None };
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

fn selected<'a>(report: &'a Report, names: &[String]) -> Vec<&'a PoolReport> {
    report.pools.iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect()
}

/// The whole output for one snapshot (also what `--watch` re-renders).
pub fn render_usage(args: &UsageArgs, ctx: &Context, snapshot: &Snapshot, report: &Report) -> String {
    let pools = selected(report, &args.pools);
    let style = &ctx.style;
    match ctx.global.output {
        Output::Json | Output::Yaml => {
            let doc = usage::UsageDocument::new(report, &pools, &snapshot.origin, args.pools.is_empty());
            render::serialize(&doc, ctx.global.output == Output::Yaml)
        }
        Output::Name => pools.iter().map(|p| format!("ciliumpodippool/{}\n", p.name)).collect(),
        Output::Table | Output::Wide => {
            let wide = ctx.global.output == Output::Wide;
            let selected_name = |name: &str| args.pools.is_empty() || args.pools.iter().any(|p| p == name);
            let mut out = if args.show_blocks {
                usage::blocks_table(&pools, style)
            } else if args.by == ByKind::Node {
                usage::nodes_table(report, &selected_name, style)
            } else {
                usage::pools_table(&pools, wide, style)
            };
            if style.headers {
                out.push_str(&usage::footer(&report.used_sources, &snapshot.origin, &snapshot.notes, snapshot.pools.len(), snapshot.nodes.len(), style));
            }
            out
        }
    }
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
