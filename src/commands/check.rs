//! `check`: the cluster-wide consistency report; exit 1 when it finds problems.

use crate::allocator::Severity;
use crate::cli::{CheckArgs, MinSeverity};
use crate::commands::context::Context;
use crate::commands::steps::{analyze, require_pools};
use crate::render::check::Check;
use anyhow::Result;

pub async fn run(args: CheckArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    // Named pools: only the problems that concern one of them (cluster-wide ones name no pool).
    let selected = |pool: &Option<String>| args.pools.is_empty() || pool.as_ref().is_some_and(|p| args.pools.contains(p));
    let report_problems: Vec<_> = report.problems.iter().filter(|p| selected(&p.pool)).collect();
    let floor = match args.severity {
        MinSeverity::Error => Severity::Error,
        MinSeverity::Warning => Severity::Warning,
        MinSeverity::Info => Severity::Info,
    };
    let problems: Vec<_> = report_problems.iter().copied().filter(|p| p.severity <= floor).collect();
    let found = problems.iter().any(|p| p.fails_check());
    let hidden = report_problems.len() - problems.len();
    ctx.show(&Check { origin: &snapshot.origin, problems, hidden, ipam: &report.ipam })?;
    Ok(if found { 1 } else { 0 })
}
