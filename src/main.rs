//! kubectl-ciliumpool: parse, decide colour and interactivity, run, map errors to exit codes.

use ciliumpool::cli::{COMPLETE, Cli, ColorChoice, complete_command};
use ciliumpool::commands::{self, Context};
use ciliumpool::render::Style;
use clap::{CommandFactory, FromArgMatches};
use std::io::IsTerminal;

fn main() {
    let matches = Cli::command().subcommand(complete_command()).get_matches();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    if let Some((COMPLETE, args)) = matches.subcommand() {
        let words: Vec<String> = args.get_many::<String>("words").into_iter().flatten().cloned().collect();
        std::process::exit(exit_code(runtime.block_on(commands::complete::run(&words))));
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut Cli::command()).exit());
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
    std::process::exit(exit_code(runtime.block_on(commands::run(cli.command, &ctx))));
}

/// The exit code of a run; its error, if any, on stderr.
fn exit_code(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => 0,
        Err(error) => {
            // Error text quotes files and cluster data: nothing reaches the terminal raw.
            eprintln!("error: {}", ciliumpool::render::escape::escape(&ciliumpool::source::secrets::redact(&format!("{error:#}"))));
            ciliumpool::error::exit_code(&error)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
