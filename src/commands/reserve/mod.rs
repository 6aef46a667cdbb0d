//! `reserve-range`: validate, preview, confirm, write (docs/reserve-range.md).
//!
//! Live: the pool is read through cilium.io/v2 and replaced with the resourceVersion it was
//! read at; a conflict re-reads, re-validates and retries. Offline (`-f`): the manifest is
//! edited and printed, or rewritten with `--in-place`. Either way the preview comes from
//! analysing the snapshot before and after the edit.

use crate::allocator::reserve::{self, Change};
use crate::cli::ReserveArgs;
use crate::cluster::read::Cluster;
use crate::commands::context::Context;
use crate::commands::steps::require_pools;
use crate::error::input;
use crate::files;
use crate::render::Format;
use crate::render::reserve::{self as view};
use crate::source::Input;
use crate::terminal::Dialoguer;
use anyhow::Result;

mod guided;
mod live;
mod offline;
mod request;

pub use guided::guided;
use live::live_edit;
use offline::offline_edit;
pub use request::Request;
use request::V2_NOT_SERVED;

pub async fn run(args: ReserveArgs, ctx: &Context) -> Result<i32> {
    if args.list {
        return list(&args, ctx).await;
    }
    // Flags are checked before anything is read: bad input never waits for a cluster.
    let from_args = request_from_args(&args)?;
    if from_args.is_none() && !ctx.interactive {
        return Err(input(
            "missing arguments: kubectl ciliumpool reserve-range POOL RANGE | POOL --remove RANGE | POOL --drain CIDR | --list",
        ));
    }
    let (snapshot, cluster) = match &ctx.input {
        Input::Files { paths, limits } => {
            files::read::refuse_archives(paths)?;
            // Printed, the edited pool is written whole: every field of it is kept. Edited in
            // place, only the fields the plan reads and changes are (the rest stays text).
            let pools = if args.in_place { files::Pools::Read } else { files::Pools::Whole };
            (files::snapshot(paths, ctx.namespace.as_deref(), ctx.verbose, pools, *limits)?, None)
        }
        Input::Cluster(options) => {
            let cluster = Cluster::connect(options, ctx.namespace.as_deref()).await?;
            let (snapshot, _) = cluster.read().await?;
            (snapshot, Some(cluster))
        }
    };
    // What files cannot show (no CiliumNodes: allocated blocks unknown), once, before the plan.
    if cluster.is_none() {
        crate::commands::steps::warn_unread(&snapshot);
    }
    let request = match from_args {
        Some(request) => request,
        None => {
            // What cannot be written is said before the first question, not after the range.
            if cluster.is_some() && snapshot.crd.as_ref().is_some_and(|c| !c.serves("v2")) {
                return Err(input(V2_NOT_SERVED));
            }
            match guided(&Dialoguer, &snapshot, &args, cluster.is_none())? {
                Some(request) => request,
                None => return crate::commands::steps::declined(),
            }
        }
    };
    require_pools(&snapshot, std::slice::from_ref(&request.pool))?;
    match (cluster, &ctx.input) {
        (Some(cluster), _) => live_edit(&args, ctx, &cluster, snapshot, &request).await,
        (None, Input::Files { paths, limits }) => offline_edit(&args, ctx, (paths, *limits), snapshot, &request),
        (None, Input::Cluster(_)) => unreachable!("a cluster input is connected above"),
    }
}

/// The request the flags describe; `None` when something is missing (the guided flow's job).
fn request_from_args(args: &ReserveArgs) -> Result<Option<Request>> {
    let Some(pool) = args.pool.clone() else { return Ok(None) };
    let parse = |text: &str| reserve::parse_range(text).map_err(|e| input(format!("invalid range: {e}")));
    let change = match (&args.range, &args.remove, &args.drain) {
        (Some(range), None, None) => Change::Reserve(parse(range)?),
        (None, Some(range), None) => Change::Remove(reserve::written_range(range)),
        (None, None, Some(cidr)) => Change::Drain(cidr.clone()),
        (None, None, None) => return Ok(None),
        _ => return Err(input("give one of RANGE, --remove RANGE or --drain CIDR")),
    };
    Ok(Some(Request { pool, change, cidr: args.cidr.clone() }))
}

async fn list(args: &ReserveArgs, ctx: &Context) -> Result<i32> {
    let (snapshot, report) = crate::commands::steps::analyze(ctx).await?;
    let names: Vec<String> = args.pool.iter().cloned().collect();
    require_pools(&snapshot, &names)?;
    let pools: Vec<_> = report.pools.iter().filter(|p| names.is_empty() || names.contains(&p.name)).collect();
    let invalid = report
        .problems
        .iter()
        .filter(|p| {
            p.kind == crate::allocator::ProblemKind::InvalidReservedRange
                && (names.is_empty() || p.pool.as_ref().is_some_and(|n| names.contains(n)))
        })
        .collect();
    let listed = view::Reservations { origin: &snapshot.origin, ranges: view::listed_ranges(&pools), invalid };
    ctx.show(&listed)?;
    if listed.ranges.is_empty() && listed.invalid.is_empty() && matches!(ctx.format, Format::Table | Format::Wide) {
        // An empty table is no header alone: say so on stderr, as kubectl's "No resources found".
        let whose = match names.as_slice() {
            [name] => format!("pool {name}"),
            _ => "any pool".to_string(),
        };
        // Reserved ranges the input cannot show are unknown, not absent (the warning above says why).
        let unknown = pools.iter().any(|p| p.families.iter().any(|f| !f.reservations_known));
        if unknown {
            let of = whose.strip_prefix("pool ").map_or_else(String::new, |name| format!(" of pool {name}"));
            warn_line!("Reserved ranges{of} are unknown: the input cannot show them.");
        } else {
            warn_line!("No reserved ranges in {whose}.");
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::request::confirmed;
    use super::*;
    use crate::cli::DryRun;
    use crate::model::Snapshot;
    use crate::terminal::Scripted;
    use clap::Parser;
    use serde_json::json;
    use std::cell::RefCell;

    fn snapshot() -> Snapshot {
        Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
                "spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24,
                    "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.254", "end": "10.40.255.254"}]}]}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "red"},
                "spec": {"ipv4": {"cidrs": ["10.50.0.0/16"], "maskSize": 24}}}),
        ])
    }

    fn args(extra: &[&str]) -> ReserveArgs {
        let cli = crate::cli::Cli::parse_from([&["kubectl-ciliumpool", "reserve-range"], extra].concat());
        match cli.command {
            crate::cli::Command::ReserveRange(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn guided_flow_picks_pool_and_cidr_and_revalidates_ranges() {
        let script = Scripted {
            selections: RefCell::new(vec![Some(0), Some(1)]),
            texts: RefCell::new(vec!["10.40.0.1".to_string(), "nonsense".into(), "10.41.0.0-10.41.0.15".into()]),
            ..Default::default()
        };
        // Read from files with one CiliumNode: allocation is known.
        let mut snap = snapshot();
        snap.nodes = Snapshot::from_objects(vec![json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"},
            "spec": {"ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.40.1.0/24"]}]}}}})])
        .nodes;
        snap.set_origin(crate::model::Origin { kind: "files", ..Default::default() });
        let request = guided(&script, &snap, &args(&[]), true).unwrap();
        let expected = Request {
            pool: "blue".into(),
            change: Change::Reserve(reserve::parse_range("10.41.0.0-10.41.0.15").unwrap()),
            cidr: Some("10.41.0.0/16".into()),
        };
        assert_eq!(request, Some(expected));
        let asked = script.asked.borrow();
        assert!(asked[0].starts_with("Pool: blue (upstream-v2; ipv4 1/511 blocks allocated) | red"), "{asked:?}");
        assert!(asked[1].contains("10.40.0.0/16 (254 free, 1 withheld, 1 allocated of 256 blocks)"), "{asked:?}");
        let refused = script.refused.borrow();
        assert_eq!(refused.len(), 2, "outside the chosen CIDR, then unparsable: {refused:?}");
        assert!(refused[0].contains("not inside the chosen CIDR"));
        // Files without CiliumNodes cannot show what is allocated, nor so what is free.
        let mut no_nodes = snapshot();
        no_nodes.set_origin(crate::model::Origin { kind: "files", ..Default::default() });
        let script = Scripted { selections: RefCell::new(vec![Some(0), None]), ..Default::default() };
        assert_eq!(guided(&script, &no_nodes, &args(&[]), true).unwrap(), None);
        let asked = script.asked.borrow();
        assert!(asked[0].starts_with("Pool: blue (upstream-v2; ipv4 ?/511 blocks allocated) | red"), "{asked:?}");
        assert!(asked[1].contains("10.40.0.0/16 (? free, 1 withheld, ? allocated of 256 blocks)"), "{asked:?}");
        // Cancelling a picker ends the flow without a request.
        let cancel = Scripted { selections: RefCell::new(vec![None]), ..Default::default() };
        assert_eq!(guided(&cancel, &snapshot(), &args(&[]), true).unwrap(), None);
    }

    #[test]
    fn confirmation_rules() {
        let not_tty = Context::plain(crate::source::Input::Files { paths: Vec::new(), limits: Default::default() });
        let err = confirmed(&args(&["blue", "10.40.0.1"]), &not_tty, &Scripted::default(), "blue", "context prod").unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 2);
        assert!(confirmed(&args(&["blue", "10.40.0.1", "--yes"]), &not_tty, &Scripted::default(), "blue", "context prod").unwrap());
        let tty = Context { interactive: true, ..not_tty };
        let no = Scripted { confirmations: RefCell::new(vec![false]), ..Default::default() };
        assert!(!confirmed(&args(&["blue", "10.40.0.1"]), &tty, &no, "blue", "context prod").unwrap());
    }

    #[test]
    fn arguments_become_requests() {
        assert_eq!(request_from_args(&args(&["blue"])).unwrap(), None);
        let drain = request_from_args(&args(&["blue", "--drain", "10.41.0.0/16"])).unwrap().unwrap();
        assert_eq!(drain.change, Change::Drain("10.41.0.0/16".into()));
        let err = request_from_args(&args(&["blue", "10.0.0.x"])).unwrap_err();
        assert_eq!((crate::error::exit_code(&err), err.to_string()), (2, "invalid range: \"10.0.0.x\" is not an IP address".to_string()));
        assert!(
            crate::cli::Cli::try_parse_from(["kubectl-ciliumpool", "reserve-range", "blue", "10.0.0.1", "--drain", "10.0.0.0/8"]).is_err()
        );
        assert_eq!(args(&["blue", "--dry-run", "10.40.0.1"]).dry_run, DryRun::Client);
        assert_eq!(args(&["blue", "10.40.0.1", "--dry-run=server"]).dry_run, DryRun::Server);
    }
}
