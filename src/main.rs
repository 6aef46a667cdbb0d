//! kubectl-ciliumpool: parse, decide colour and interactivity, run, map errors to exit codes.

use ciliumpool::cli::{Cli, ColorChoice};
use ciliumpool::commands::{self, Context};
use ciliumpool::render::Style;
use clap::Parser;
use std::io::IsTerminal;

fn main() {
    let cli = Cli::parse();
    let global = cli.global.clone();
    let color = match global.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal(),
    };
    let ctx = Context {
        style: Style { color, headers: !global.no_headers },
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        global,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let code = match runtime.block_on(commands::run(cli.command, &ctx)) {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => 0,
        Err(error) => {
            eprintln!("error: {error:#}");
            ciliumpool::error::exit_code(&error)
        }
    };
    std::process::exit(code);
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
