//! `check`: the cluster-wide consistency report; exit 1 when it finds problems.

use super::{Context, analyze};
use crate::allocator::Severity;
use crate::cli::{CheckArgs, MinSeverity, Output};
use crate::render::{self, check};
use anyhow::Result;
use serde::Serialize;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckDocument<'a> {
    schema_version: u32,
    source: &'a crate::model::Origin,
    problems: Vec<&'a crate::allocator::Problem>,
}

pub async fn run(args: CheckArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = analyze(ctx).await?;
    let floor = match args.severity {
        MinSeverity::Error => Severity::Error,
        MinSeverity::Warning => Severity::Warning,
        MinSeverity::Info => Severity::Info,
    };
    let problems: Vec<_> = report.problems.iter().filter(|p| p.severity <= floor).collect();
    let text = match ctx.global.output {
        Output::Json | Output::Yaml => {
            let doc = CheckDocument { schema_version: render::usage::SCHEMA_VERSION, source: &snapshot.origin, problems: problems.clone() };
            render::serialize(&doc, ctx.global.output == Output::Yaml)
        }
        Output::Name => problems.iter().map(|p| format!("{}\n", p.object)).collect(),
        Output::Table | Output::Wide => {
            let mut out = if problems.is_empty() { String::new() } else { check::problems_table(&problems, ctx.global.output == Output::Wide, &ctx.style) };
            if ctx.style.headers {
                out.push_str(&check::summary(&problems));
                out.push('\n');
            }
            out
        }
    };
    ctx.print(&text)?;
    Ok(if problems.is_empty() { 0 } else { 1 })
}
