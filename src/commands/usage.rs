//! `usage`: figures per pool, node or block, with thresholds for scripts.

use super::{Context, analyze, emit, require_pools};
use crate::allocator::{Count, PoolReport, Report};
use crate::cli::{ByKind, Output, UsageArgs};
use crate::error::input;
use crate::model::Snapshot;
use crate::render::{self, usage};
use anyhow::Result;

pub async fn run(args: UsageArgs, ctx: &Context) -> Result<i32> {
    if let Some(pct) = args.fail_above
        && !(0.0..=100.0).contains(&pct)
    {
        return Err(input(format!("--fail-above {pct} is not a percentage between 0 and 100")));
    }
    if args.watch {
        return Err(input("--watch needs a live cluster; it cannot be combined with -f"));
    }
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    emit(&render_usage(&args, ctx, &snapshot, &report))?;
    Ok(if breaches(&args, &selected(&report, &args.pools)) { 1 } else { 0 })
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
