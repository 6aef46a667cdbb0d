//! `inspect`: one pool in depth; all pools when no pool is named and nobody is at a terminal.

use super::{Context, analyze, require_pools};
use crate::cli::{InspectArgs, Output};
use crate::render::{self, inspect};
use crate::allocator::Report;
use crate::terminal::Prompter;
use anyhow::Result;

/// The picker shown when no pool is named at a terminal: each pool with its utilization.
pub fn pick_pool(report: &Report, prompter: &dyn Prompter) -> Result<Option<String>> {
    let items: Vec<String> = report
        .pools
        .iter()
        .map(|p| {
            let figures: Vec<String> = p
                .families
                .iter()
                .map(|f| format!("{} {}", f.family, f.utilization().map_or("-".to_string(), |u| format!("{:.0}%", u * 100.0))))
                .collect();
            format!("{:<20} {}", p.name, figures.join("  "))
        })
        .collect();
    let choice = prompter.select("Pool to inspect", &items)?;
    Ok(choice.map(|i| report.pools[i].name.clone()))
}

pub async fn run(args: InspectArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = analyze(ctx).await?;
    let names: Vec<String> = match args.pool {
        Some(name) => vec![name],
        None if ctx.interactive && !snapshot.pools.is_empty() => match pick_pool(&report, &crate::terminal::Dialoguer)? {
            Some(name) => vec![name],
            None => return Ok(0),
        },
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
    ctx.print(&text)?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::Scripted;
    use std::cell::RefCell;

    #[test]
    fn picker_returns_the_chosen_pool_or_none() {
        let snapshot = crate::model::Snapshot::from_objects([
            serde_json::json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "a"}, "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}}),
            serde_json::json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "b"}, "spec": {"ipv4": {"cidrs": ["10.1.0.0/16"], "maskSize": 24}}}),
        ]);
        let report = crate::allocator::analyze(&snapshot);
        let scripted = Scripted { selections: RefCell::new(vec![Some(1), None]), ..Default::default() };
        assert_eq!(pick_pool(&report, &scripted).unwrap().as_deref(), Some("b"));
        assert_eq!(pick_pool(&report, &scripted).unwrap(), None);
    }
}
