//! The guided flow of `reserve-range` on a terminal: pick pool → pick CIDR → type a range.

use super::Request;
use super::offline::offline_dialect;
use crate::allocator::Report;
use crate::allocator::reserve::{self, Change};
use crate::cli::ReserveArgs;
use crate::commands::steps::require_pools;
use crate::error::input;
use crate::model::{Dialect, Pool, Snapshot};
use crate::terminal::Prompter;
use anyhow::Result;

/// The guided flow for a terminal: pick pool → pick CIDR → type a range (validated against the
/// pool on entry, impact shown by the caller) — confirmation follows as for any write. `None`
/// when the user cancels a picker or the range prompt. `offline`: manifests are edited, and
/// v2alpha1 manifests cannot hold reserved ranges, so such pools are not offered (a note says
/// which and why before the first question).
pub fn guided(prompter: &dyn Prompter, snapshot: &Snapshot, args: &ReserveArgs, offline: bool) -> Result<Option<Request>> {
    let report = crate::allocator::analyze(snapshot);
    let named: Vec<&Pool> = match &args.pool {
        Some(name) => {
            require_pools(snapshot, std::slice::from_ref(name))?;
            snapshot.pools.iter().filter(|p| &p.name == name).collect()
        }
        None => snapshot.pools.iter().collect(),
    };
    if named.is_empty() {
        return Err(input("no CiliumPodIPPools found"));
    }
    let (pools, alpha): (Vec<&Pool>, Vec<&Pool>) = named.into_iter().partition(|p| !(offline && p.dialect == Dialect::V2alpha1));
    if let Some(first) = alpha.first()
        && pools.is_empty()
    {
        return Err(offline_dialect(first, snapshot.crd.as_ref()).expect_err("a v2alpha1 pool is refused"));
    }
    if !alpha.is_empty() {
        let names: Vec<&str> = alpha.iter().map(|p| p.name.as_str()).collect();
        prompter.note(&format!(
            "not offered: {} (cilium.io/v2alpha1 manifests cannot hold reserved ranges; convert them first with kubectl ciliumpool migrate -f FILE)",
            names.join(", ")
        ));
    }
    let Some(pool) = pick_pool(prompter, &report, &pools)? else { return Ok(None) };
    let Some(cidr) = pick_cidr(prompter, &report, pool)? else { return Ok(None) };
    let cidr = &cidr;
    let dialect = if pool.dialect == Dialect::V2alpha1 { Dialect::UpstreamV2 } else { pool.dialect };
    let validate = |text: &str| -> Result<(), String> {
        let range = reserve::parse_range(text)?;
        reserve::prepare(snapshot, &pool.name, dialect, &Change::Reserve(range), Some(cidr), args.force).map(|_| ())
    };
    let Some(text) = prompter.text(&format!("Range to reserve in {cidr} (A-B, A..B, IP or CIDR)"), &validate)? else { return Ok(None) };
    let range = reserve::parse_range(&text).map_err(input)?;
    Ok(Some(Request { pool: pool.name.clone(), change: Change::Reserve(range), cidr: Some(cidr.clone()) }))
}

/// A picker figure, or `?` when the input cannot show it (no CiliumNodes, hidden reservations).
fn shown(known: bool, figure: impl std::fmt::Display) -> String {
    if known { figure.to_string() } else { "?".to_string() }
}

/// The pool to edit: the only one, or the one picked (each shown with its blocks allocated).
fn pick_pool<'a>(prompter: &dyn Prompter, report: &Report, pools: &[&'a Pool]) -> Result<Option<&'a Pool>> {
    if let [only] = pools {
        return Ok(Some(only));
    }
    let items: Vec<String> = pools
        .iter()
        .map(|p| {
            let figures: Vec<String> = report
                .pool(&p.name)
                .into_iter()
                .flat_map(|r| r.families.iter())
                .map(|f| {
                    let allocatable = f.allocated_blocks + f.free_blocks;
                    let (allocated, allocatable) =
                        (shown(f.allocation_known, f.allocated_blocks), shown(f.reservations_known, allocatable));
                    format!("{} {allocated}/{allocatable} blocks allocated", f.family)
                })
                .collect();
            format!("{} ({}; {})", p.name, p.dialect.name(), figures.join(", "))
        })
        .collect();
    Ok(prompter.select("Pool", &items)?.map(|choice| pools[choice]))
}

/// The CIDR of `pool` to reserve in: the only one, or the one picked (each with its blocks).
fn pick_cidr(prompter: &dyn Prompter, report: &Report, pool: &Pool) -> Result<Option<String>> {
    let cidrs: Vec<(crate::model::Family, String)> =
        pool.families.iter().flat_map(|f| f.cidrs.iter().map(move |c| (f.family, c.original.clone()))).collect();
    if cidrs.is_empty() {
        return Err(input(format!("pool {} has no CIDRs", pool.name)));
    }
    let items: Vec<String> = cidrs
        .iter()
        .map(|(family, cidr)| {
            let fam = report.pool(&pool.name).and_then(|r| r.family(*family));
            let c = fam.and_then(|f| f.cidrs.iter().find(|c| &c.cidr == cidr).map(|c| (f, c)));
            c.map_or(cidr.clone(), |(f, c)| {
                let (nodes, reservations) = (f.allocation_known, f.reservations_known);
                format!(
                    "{cidr} ({} free, {} withheld, {} allocated of {} blocks)",
                    shown(nodes && reservations, c.free_blocks),
                    shown(reservations, c.withheld_blocks),
                    shown(nodes, c.allocated_blocks),
                    c.capacity_blocks
                )
            })
        })
        .collect();
    let choice = match items.len() {
        1 => Some(0),
        _ => prompter.select("CIDR", &items)?,
    };
    Ok(choice.map(|choice| cidrs[choice].1.clone()))
}
