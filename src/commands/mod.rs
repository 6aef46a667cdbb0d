//! Command orchestration: read a snapshot, run the allocator, render, choose the exit code.
//! Commands ask (the source layer reads and writes, the pure layers decide) and report.

pub mod check;
pub mod completion;
pub mod context;
pub mod fleet;
pub mod inspect;
pub mod ip;
pub mod map;
pub mod migrate;
pub mod reserve;
mod script;
pub mod serve;
pub mod steps;
pub mod usage;
pub mod version;

pub use context::{Context, Terminal};

use crate::cli::Command;
use anyhow::Result;
use context::emit;

/// Runs a command; returns the exit code for a successful run (0, or 1 for "found it").
pub async fn run(command: Command, ctx: &Context) -> Result<i32> {
    // `serve` follows a fleet itself (each cluster watched, its series labelled).
    if let Some(clusters) = &ctx.fleet
        && !matches!(command, Command::Serve(_))
    {
        return fleet::run(command, clusters, ctx).await;
    }
    match command {
        Command::Usage(args) => usage::run(args, ctx).await,
        Command::Inspect(args) => inspect::run(args, ctx).await,
        Command::Check(args) => check::run(args, ctx).await,
        Command::Ip(args) => ip::run(args, ctx).await,
        Command::ReserveRange(args) => reserve::run(args, ctx).await,
        Command::Migrate(args) => migrate::run(args, ctx).await,
        Command::Completion(args) => {
            emit(&completion::script(args.shell))?;
            Ok(0)
        }
        Command::Serve(args) => serve::run(args, ctx).await,
        Command::Version(args) => version::run(args, ctx).await,
    }
}
