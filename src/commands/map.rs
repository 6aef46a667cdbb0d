//! `usage POOL --map`: one pool's address space as a map of its blocks (render/map.rs). A flag of
//! `usage`, not a command: it is another view of the same figures, as `-o wide` is (docs/usage.md).
//! With `--watch` (usage.rs's loop), each frame marks the cells changed since the previous one.

use crate::allocator::{PoolReport, Report};
use crate::cli::UsageArgs;
use crate::commands::context::{Context, emit};
use crate::commands::steps::{analyze, require_pools};
use crate::error::input;
use crate::render::map::{Cells, MapOptions, cells, changed, draw};
use anyhow::Result;

/// The width of the map when stdout is not a terminal (or one that does not say its size).
const DEFAULT_WIDTH: usize = 80;

pub async fn run(args: &UsageArgs, ctx: &Context) -> Result<i32> {
    one_pool(args)?;
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    let pool = checked(args, &report)?;
    let options = MapOptions { width: width(ctx), node: args.node.as_deref(), changed: None };
    // Never wrapped as prose is: every line already fits the terminal, which may be wider than tables.
    emit(&crate::escape::block(&draw(pool, &options, &ctx.style), ctx.style.color))?;
    Ok(0)
}

/// Refused before anything is read: -o is refused by the view (cli.rs).
pub(super) fn one_pool(args: &UsageArgs) -> Result<()> {
    match args.pools.len() {
        1 => Ok(()),
        n => Err(input(format!("--map draws one pool: name exactly one (got {n})"))),
    }
}

/// The pool's report, once `--node` names a node of the input.
pub(super) fn checked<'r>(args: &UsageArgs, report: &'r Report) -> Result<&'r PoolReport> {
    if let Some(node) = &args.node
        && !report.nodes.iter().any(|n| *n.name == **node)
    {
        return Err(input(format!("node {} not found: no CiliumNode of that name in the input", crate::escape::Field(node))));
    }
    Ok(report.pool(&args.pools[0]).expect("require_pools found it"))
}

/// `--map --watch`: the frames of one pool's map, each compared with the one before.
#[derive(Default)]
pub(super) struct Frames {
    previous: Option<Cells>,
}

impl Frames {
    /// The map of `report` with the cells changed since the previous frame marked, and the same
    /// map unmarked: what says whether anything changed.
    pub(super) fn next(&mut self, args: &UsageArgs, ctx: &Context, report: &Report) -> (String, String) {
        let Some(pool) = report.pool(&args.pools[0]) else {
            let gone = format!("pool {} is not in the cluster now\n", crate::escape::Field(&args.pools[0]));
            self.previous = None;
            return (gone.clone(), gone);
        };
        let mut options = MapOptions { width: width(ctx), node: args.node.as_deref(), changed: None };
        let now = cells(pool, &options);
        let plain = draw(pool, &options, &ctx.style);
        let Some(before) = self.previous.replace(now.clone()) else {
            return (plain.clone(), plain);
        };
        let changed = changed(&before, &now);
        options.changed = Some(&changed);
        (draw(pool, &options, &ctx.style), plain)
    }
}

/// The terminal's width (not capped as tables are), or [`DEFAULT_WIDTH`].
fn width(ctx: &Context) -> usize {
    if !ctx.stdout_terminal {
        return DEFAULT_WIDTH;
    }
    match usize::from(console::Term::stdout().size().1) {
        0 => DEFAULT_WIDTH,
        columns => columns,
    }
}
