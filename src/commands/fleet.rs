//! `usage`, `check` and `ip` over several clusters at once (docs/fleet.md): each cluster read and
//! analysed as alone, the fleet checks between them, one view of all. A cluster that cannot be read
//! does not hide the others; the run then ends with exit 3 after printing what was read.

use crate::allocator::fleet::{self, FleetProblem, Member};
use crate::allocator::ip::{IpAnswer, lookup};
use crate::allocator::{Report, Severity};
use crate::cli::{Command, MinSeverity};
use crate::commands::context::Context;
use crate::commands::steps::warn_unread_of;
use crate::error::{cluster, input};
use crate::model::{Addr, Snapshot};
use crate::render::fleet::{Cluster, Fleet as View};
use crate::source::fleet::{Fleet, Read};
use anyhow::Result;

/// One cluster read and analysed, or why it could not be read.
struct Analysed {
    name: String,
    /// The other contexts of the same API server, not read again.
    aliases: Vec<String>,
    server: Option<String>,
    /// The other contexts with this cluster's cluster-id and cluster-name, shown once as this one.
    twins: Vec<String>,
    result: Result<(Snapshot, Report), String>,
}

pub async fn run(command: Command, clusters: &Fleet, ctx: &Context) -> Result<i32> {
    let addresses = match &command {
        Command::Ip(args) => super::ip::parse(&args.addresses)?,
        _ => Vec::new(),
    };
    let reads = crate::source::fleet::read(clusters, ctx.namespace.as_deref(), ctx.verbose).await?;
    let analysed: Vec<Analysed> = reads.into_iter().map(analyse).collect();
    let members: Vec<Member> =
        analysed.iter().filter_map(|a| Some(Member { name: &a.name, snapshot: &a.result.as_ref().ok()?.0 })).collect();
    let mut problems = fleet::check(&members);
    // Contexts of one API server were read once, as the first (source::fleet::plan).
    for read in analysed.iter().filter(|a| !a.aliases.is_empty()) {
        let names: Vec<&str> = std::iter::once(read.name.as_str()).chain(read.aliases.iter().map(String::as_str)).collect();
        let server = crate::secrets::safe_url(read.server.as_deref().unwrap_or_default());
        problems.push(fleet::same_cluster(&server, &names));
    }
    for read in analysed.iter().filter(|a| !a.twins.is_empty()) {
        let names: Vec<&str> = std::iter::once(read.name.as_str()).chain(read.twins.iter().map(String::as_str)).collect();
        let config = read.result.as_ref().ok().and_then(|(s, _)| s.ipam.as_ref());
        let id = config.and_then(|c| Some((c.cluster_id.as_deref()?, c.cluster_name.as_deref()?)));
        problems.push(fleet::same_cluster_identity(id.unwrap_or_default(), &names));
    }
    fleet::sort(&mut problems);
    let code = match command {
        Command::Usage(args) => usage(&args, &analysed, &problems, ctx)?,
        Command::Check(args) => check(args.severity, &analysed, &problems, ctx)?,
        Command::Ip(_) => ip(&addresses, &analysed, &problems, ctx)?,
        _ => unreachable!("check_flags allows usage, check and ip only"),
    };
    // Whatever -o says, each cluster not read is one line on stderr (JSON has it as `error` too).
    for a in &analysed {
        if let Err(why) = &a.result {
            warn_line!("cluster {}: not read: {why}", a.name);
        }
    }
    let unread: Vec<&str> = analysed.iter().filter(|a| a.result.is_err()).map(|a| a.name.as_str()).collect();
    if !unread.is_empty() {
        return Err(cluster(format!("{} of {} clusters could not be read: {}", unread.len(), analysed.len(), unread.join(", "))));
    }
    Ok(code)
}

fn analyse(read: Read) -> Analysed {
    let result = read.snapshot.map(|snapshot| {
        warn_unread_of(&snapshot, Some(&read.name));
        let report = crate::allocator::analyze(&snapshot);
        (snapshot, report)
    });
    Analysed { name: read.name, aliases: read.aliases, server: read.server, twins: read.twins, result }
}

/// Each cluster's result built by `view`, in a fleet view.
fn view<'a, R>(analysed: &'a [Analysed], problems: Vec<&'a FleetProblem>, view: impl Fn(&'a Snapshot, &'a Report) -> R) -> View<'a, R> {
    let clusters = analysed
        .iter()
        .map(|a| Cluster { name: &a.name, result: a.result.as_ref().map(|(s, r)| view(s, r)).map_err(String::as_str) })
        .collect();
    View { clusters, problems, problem_table: false }
}

fn usage(args: &crate::cli::UsageArgs, analysed: &[Analysed], problems: &[FleetProblem], ctx: &Context) -> Result<i32> {
    // A pool asked for must be in some cluster; clusters without it show no row for it.
    for name in &args.pools {
        if !analysed.iter().any(|a| a.result.as_ref().is_ok_and(|(s, _)| s.pool(name).is_some())) {
            return Err(input(format!("pool {name:?} is in no cluster of the fleet")));
        }
    }
    let fleet = view(analysed, problems.iter().collect(), |s, r| super::usage::view(args, s, r));
    ctx.show(&fleet)?;
    let mut breached = false;
    for cluster in &fleet.clusters {
        let Ok(usage) = &cluster.result else { continue };
        for line in usage.thresholds.breach_lines(&usage.pools()) {
            ctx.note(&format!("{}: {line}\n", cluster.name));
            breached = true;
        }
    }
    Ok(i32::from(breached))
}

fn check(severity: MinSeverity, analysed: &[Analysed], problems: &[FleetProblem], ctx: &Context) -> Result<i32> {
    let floor = match severity {
        MinSeverity::Error => Severity::Error,
        MinSeverity::Warning => Severity::Warning,
        MinSeverity::Info => Severity::Info,
    };
    let between = problems.iter().filter(|p| p.problem.severity <= floor).collect();
    let checks = view(analysed, between, |s, r| {
        let problems: Vec<_> = r.problems.iter().filter(|p| p.severity <= floor).collect();
        let hidden = r.problems.len() - problems.len();
        crate::render::check::Check { origin: &s.origin, problems, hidden, ipam: &r.ipam }
    });
    let fleet = View { problem_table: true, ..checks };
    ctx.show(&fleet)?;
    let found = !fleet.problems.is_empty()
        || fleet.clusters.iter().any(|c| c.result.as_ref().is_ok_and(|c| c.problems.iter().any(|p| p.fails_check())));
    Ok(i32::from(found))
}

fn ip(addresses: &[Addr], analysed: &[Analysed], problems: &[FleetProblem], ctx: &Context) -> Result<i32> {
    let answers: Vec<Vec<IpAnswer>> = analysed
        .iter()
        .map(|a| a.result.as_ref().map(|(s, r)| addresses.iter().map(|&addr| lookup(s, r, addr)).collect()).unwrap_or_default())
        .collect();
    let clusters = analysed
        .iter()
        .zip(&answers)
        .map(|(a, answers)| {
            let ip = a.result.as_ref().map(|(s, r)| crate::render::ip::Ip { origin: &s.origin, mode: &r.ipam.mode, answers });
            Cluster { name: &a.name, result: ip.map_err(String::as_str) }
        })
        .collect();
    let fleet = View { clusters, problems: problems.iter().collect(), problem_table: false };
    ctx.show(&fleet)?;
    // An address counts as found when some cluster has it in a pool.
    let nowhere = (0..addresses.len()).any(|i| answers.iter().filter(|a| !a.is_empty()).all(|a| a[i].in_no_pool()));
    Ok(i32::from(nowhere))
}
