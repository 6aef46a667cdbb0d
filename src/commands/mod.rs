//! Command orchestration: read a snapshot, run the allocator, render, choose the exit code.

pub mod check;
pub mod complete;
pub mod inspect;
pub mod migrate;
pub mod reserve;
pub mod usage;
pub mod version;

use crate::allocator::Report;
use crate::cli::{Cli, Command, GlobalArgs};
use crate::error::input;
use crate::model::Snapshot;
use crate::render::Style;
use anyhow::Result;
use clap::CommandFactory;
use std::io::Write;

/// Settings decided once in `main`.
pub struct Context {
    pub global: GlobalArgs,
    pub style: Style,
    /// stdin and stderr are terminals: prompts and pickers are allowed.
    pub interactive: bool,
}

/// Runs a command; returns the exit code for a successful run (0, or 1 for "found it").
pub async fn run(command: Command, ctx: &Context) -> Result<i32> {
    match command {
        Command::Usage(args) => usage::run(args, ctx).await,
        Command::Inspect(args) => inspect::run(args, ctx).await,
        Command::Check(args) => check::run(args, ctx).await,
        Command::ReserveRange(args) => reserve::run(args, ctx).await,
        Command::Migrate(args) => migrate::run(args, ctx).await,
        Command::Completion(args) => {
            let mut buf = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "kubectl-ciliumpool", &mut buf);
            emit(&String::from_utf8_lossy(&buf))?;
            Ok(0)
        }
        Command::Version => version::run(ctx).await,
    }
}

impl Context {
    /// Writes a result to stdout: escaped for a terminal unless it is a JSON/YAML document
    /// (those escape control characters themselves). Use [`emit`] for manifests.
    pub fn print(&self, text: &str) -> Result<()> {
        match self.global.output {
            crate::cli::Output::Json | crate::cli::Output::Yaml => emit(text),
            _ => self.human(text),
        }
    }

    /// Writes a human line or block to stdout, escaped, whatever `-o` says.
    pub fn human(&self, text: &str) -> Result<()> {
        emit(&crate::render::escape::terminal_safe(text, self.style.color))
    }
}

/// Writes results (documents, manifests) to stdout as they are. A closed pipe (`| head`) ends the program quietly in `main`.
pub fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Snapshot and report, the start of every read command.
pub async fn analyze(ctx: &Context) -> Result<(Snapshot, Report)> {
    let snapshot = crate::source::snapshot(&ctx.global).await?;
    warn_unread(&snapshot);
    let report = crate::allocator::analyze(&snapshot);
    Ok((snapshot, report))
}

/// A live read that could not see everything (forbidden pods, an unreadable CRD) says so on
/// stderr, whatever the output format: `-o json` marks such figures null but cannot say why.
pub fn warn_unread(snapshot: &Snapshot) {
    if snapshot.origin.kind == "cluster" {
        for note in &snapshot.notes {
            warn_line!("warning: {note}");
        }
    }
}

/// Checks that every requested pool exists, suggesting close names otherwise.
pub fn require_pools(snapshot: &Snapshot, names: &[String]) -> Result<()> {
    for name in names {
        if snapshot.pool(name).is_none() {
            let mut close: Vec<&str> = snapshot
                .pools
                .iter()
                .map(|p| p.name.as_str())
                .filter(|p| strsim::levenshtein(p, name) <= 2 || p.contains(name.as_str()) || name.contains(p))
                .collect();
            close.sort();
            let hint = if close.is_empty() {
                let all: Vec<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();
                format!("known pools: {}", if all.is_empty() { "none".to_string() } else { all.join(", ") })
            } else {
                format!("did you mean {}?", close.join(" or "))
            };
            return Err(input(format!("pool {name:?} not found; {hint}")));
        }
    }
    Ok(())
}
