//! `inspect`: one pool in depth; all pools when no pool is named and nobody is at a terminal.

use crate::allocator::Report;
use crate::cli::InspectArgs;
use crate::commands::context::Context;
use crate::commands::steps::{analyze, require_pools};
use crate::render::inspect::Inspect;
use crate::terminal::Prompter;
use anyhow::Result;

/// The picker shown when no pool is named at a terminal: each pool with its utilization.
pub fn pick_pool(report: &Report, prompter: &dyn Prompter) -> Result<Option<String>> {
    let items: Vec<String> = report
        .pools
        .iter()
        .map(|p| {
            let figures: Vec<String> =
                p.families.iter().map(|f| format!("{} {}", f.family, crate::render::percent(f.utilization()))).collect();
            format!("{:<20} {}", p.name, figures.join("  "))
        })
        .collect();
    let choice = prompter.select("Pool to inspect", &items)?;
    Ok(choice.map(|i| report.pools[i].name.clone()))
}

/// Where the pools of a non-multi-pool IPAM mode are shown (they are the agent's, not objects).
fn mode_pools_hint(report: &Report) -> String {
    let ipam = &report.ipam;
    if ipam.mode_pools.is_empty() {
        String::new()
    } else {
        format!(" IPAM mode {}: its pools are the agent's; `usage` shows them.", ipam.mode)
    }
}

pub async fn run(args: InspectArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = analyze(ctx).await?;
    let names: Vec<String> = match args.pool {
        Some(name) => vec![name],
        None if ctx.interactive && !snapshot.pools.is_empty() => match pick_pool(&report, &crate::terminal::Dialoguer)? {
            Some(name) => vec![name],
            None => return crate::commands::steps::cancelled(),
        },
        None => snapshot.pools.iter().map(|p| p.name.clone()).collect(),
    };
    require_pools(&snapshot, &names)?;
    ctx.show(&Inspect { snapshot: &snapshot, report: &report, names: &names })?;
    if names.is_empty() && matches!(ctx.format, crate::render::Format::Table) {
        // An empty report says nothing: say why (kubectl's "No resources found" is on stderr too).
        warn_line!("No CiliumPodIPPools in the input.{}", mode_pools_hint(&report));
    }
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
