//! `usage POOL --map`: one pool's address space as a map of its blocks (render/map.rs). A flag of
//! `usage`, not a command: it is another view of the same figures, as `-o wide` is (docs/usage.md).

use crate::cli::UsageArgs;
use crate::commands::context::{Context, emit};
use crate::commands::steps::{analyze, require_pools};
use crate::error::input;
use crate::render::map::{MapOptions, draw};
use anyhow::Result;

/// The width of the map when stdout is not a terminal (or one that does not say its size).
const DEFAULT_WIDTH: usize = 80;

pub async fn run(args: &UsageArgs, ctx: &Context) -> Result<i32> {
    // Refused before anything is read: -o is refused by the view (cli.rs), --watch by clap.
    let [pool] = args.pools.as_slice() else {
        return Err(input(format!("--map draws one pool: name exactly one (got {})", args.pools.len())));
    };
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    if let Some(node) = &args.node
        && !report.nodes.iter().any(|n| *n.name == **node)
    {
        return Err(input(format!("node {} not found: no CiliumNode of that name in the input", crate::escape::Field(node))));
    }
    let pool = report.pool(pool).expect("require_pools found it");
    let options = MapOptions { width: width(ctx), node: args.node.as_deref() };
    // Never wrapped as prose is: every line already fits the terminal, which may be wider than tables.
    emit(&crate::escape::block(&draw(pool, &options, &ctx.style), ctx.style.color))?;
    Ok(0)
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
