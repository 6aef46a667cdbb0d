//! `inspect`: one pool in depth; all pools when no pool is named and nobody is at a terminal.

use super::{Context, analyze, emit, require_pools};
use crate::cli::{InspectArgs, Output};
use crate::render::{self, inspect};
use anyhow::Result;

pub async fn run(args: InspectArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = analyze(ctx).await?;
    let names: Vec<String> = match args.pool {
        Some(name) => vec![name],
        None => snapshot.pools.iter().map(|p| p.name.clone()).collect(),
    };
    require_pools(&snapshot, &names)?;
    let pools: Vec<_> = report.pools.iter().filter(|p| names.contains(&p.name)).collect();
    let text = match ctx.global.output {
        Output::Json | Output::Yaml => {
            let doc = render::usage::UsageDocument::new(&report, &pools, &snapshot.origin, false);
            render::serialize(&doc, ctx.global.output == Output::Yaml)
        }
        Output::Name => pools.iter().map(|p| format!("ciliumpodippool/{}\n", p.name)).collect(),
        Output::Table | Output::Wide => {
            let mut out = String::new();
            for (i, pool_report) in pools.iter().enumerate() {
                if i > 0 {
                    out.push_str("\n---\n\n");
                }
                let pool = snapshot.pool(&pool_report.name).expect("report pools come from the snapshot");
                let problems: Vec<_> = report.problems.iter().filter(|p| p.pool.as_deref() == Some(pool.name.as_str())).collect();
                let draining: Vec<inspect::DrainingPods> = pool_report
                    .families
                    .iter()
                    .flat_map(|f| f.cidrs.iter())
                    .filter(|c| c.draining)
                    .map(|c| inspect::DrainingPods {
                        cidr: &c.cidr,
                        pods: snapshot
                            .pods
                            .iter()
                            .flatten()
                            .filter(|p| p.holds_pod_ips() && p.ips.iter().any(|ip| c.prefix.contains(*ip)))
                            .map(|p| format!("{}/{}", p.namespace, p.name))
                            .collect(),
                    })
                    .collect();
                out.push_str(&inspect::pool_details(pool, pool_report, snapshot.crd.as_ref(), &problems, &draining, &ctx.style));
            }
            out
        }
    };
    emit(&text)?;
    Ok(0)
}
