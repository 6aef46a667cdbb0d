//! kubectl-ciliumpool: parse, decide colour and interactivity, run, map errors to exit codes.

use ciliumpool::cli::{COMPLETE, Cli, ColorChoice, complete_command, kubectl_verbosity};
use ciliumpool::commands::{self, Context, Terminal};
use clap::{CommandFactory, FromArgMatches};
use std::io::IsTerminal;

/// mimalloc, tuned by `heap::tune` (src/heap.rs says why).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    ciliumpool::heap::tune();
    let matches = Cli::command()
        .subcommand(complete_command())
        .try_get_matches_from(kubectl_verbosity(std::env::args_os()))
        .unwrap_or_else(|e| command_line_error(e));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    if let Some((COMPLETE, args)) = matches.subcommand() {
        let words: Vec<String> = args.get_many::<String>("words").into_iter().flatten().cloned().collect();
        std::process::exit(exit_code(runtime.block_on(commands::completion::protocol::run(&words))));
    }
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| command_line_error(e.format(&mut Cli::command())));
    let stdout = std::io::stdout().is_terminal();
    let terminal = Terminal {
        color: match cli.global.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && stdout,
        },
        // A preview on stderr beside an edited manifest on stdout stays plain.
        stderr_color: false,
        stdout,
        interactive: Terminal::can_ask(),
    };
    let result = Context::from_cli(&cli, terminal).and_then(|ctx| runtime.block_on(commands::run(cli.command, &ctx)));
    std::process::exit(exit_code(result));
}

/// `--help` and `--version` as clap prints them; any other command-line error as one `error:`
/// line (escaped: it quotes the arguments), exit 2.
fn command_line_error(error: clap::Error) -> ! {
    use clap::error::ErrorKind::{DisplayHelp, DisplayHelpOnMissingArgumentOrSubcommand, DisplayVersion};
    if matches!(error.kind(), DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand) {
        error.exit()
    }
    ciliumpool::stderr::line(&ciliumpool::cli::one_line_error(&error.render().to_string()));
    std::process::exit(2)
}

/// The exit code of a run; its error, if any, on stderr.
fn exit_code(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(error) if is_broken_pipe(&error) => 0,
        Err(error) => {
            // Error text quotes files and cluster data: one line, nothing reaches the terminal raw.
            ciliumpool::stderr::line(&format!("error: {error:#}"));
            ciliumpool::error::exit_code(&error)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}
