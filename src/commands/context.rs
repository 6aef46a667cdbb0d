//! What every command is given: the [`Context`] resolved once from the flags and the terminal
//! (the input, a fleet, the format and styles), the flag combinations refused before any IO, and
//! the ways a command writes to stdout.

use crate::cli::{Cli, Command, DryRun, GlobalArgs};
use crate::error::input;
use crate::render::{self, Format, Render, Script, Style};
use crate::source::fleet::Fleet;
use crate::source::{ConnectOptions, Input};
use anyhow::Result;
use std::io::Write;

/// Every setting a command needs, resolved once from the flags and the terminal
/// ([`Context::from_cli`]). Commands read these, never the flags' raw form.
pub struct Context {
    /// Files (`-f`) or the cluster's connection flags.
    pub input: Input,
    /// Several clusters at once (`--fleet`, `--context A,B`, `--all-contexts`): `usage`, `check`, `ip`.
    pub fleet: Option<Fleet>,
    /// `-n`: the namespace pods (and their CiliumEndpoints) are read from; `None`: all.
    pub namespace: Option<String>,
    /// `-v`: diagnostics on stderr.
    pub verbose: bool,
    pub format: Format,
    /// `-o jsonpath=…`, `-o custom-columns=…`: the script over the JSON document, parsed once.
    pub script: Option<Script>,
    /// How stdout is styled.
    pub style: Style,
    /// How text on stderr is styled while stdout carries the result.
    pub stderr_style: Style,
    /// stdout is a terminal: `--watch` redraws in place.
    pub stdout_terminal: bool,
    /// stdin and stderr are terminals: prompts and pickers are allowed.
    pub interactive: bool,
}

/// What `main` found out about the terminal (the only place that looks).
#[derive(Clone, Copy, Debug)]
pub struct Terminal {
    /// Colour is wanted on stdout (`--color`, `NO_COLOR`, stdout a terminal).
    pub color: bool,
    /// Colour is wanted on stderr, for text shown there while stdout carries the result.
    pub stderr_color: bool,
    pub stdout: bool,
    /// A person can be asked: stdin and stderr are terminals, and the process is in the
    /// terminal's foreground ([`Terminal::can_ask`]).
    pub interactive: bool,
}

impl Terminal {
    /// Whether a person can be asked here ([`crate::terminal::interactive`]).
    pub fn can_ask() -> bool {
        crate::terminal::interactive()
    }
}

impl Context {
    /// The settings for a parsed command line. Flag combinations clap cannot express (they
    /// depend on whether `-f` was given) are refused here, before anything is read (exit 2).
    pub fn from_cli(cli: &Cli, terminal: Terminal) -> Result<Context> {
        let global = &cli.global;
        let format = global.output.format;
        check_combinations(&cli.command, !global.filename.is_empty(), format)?;
        let script = super::script::of(&global.output)?;
        let headers = !global.no_headers;
        check_fleet_flags(&cli.command, global)?;
        Ok(Context {
            input: input_of(global),
            fleet: fleet_of(global),
            namespace: global.namespace.clone(),
            verbose: global.verbosity > 0,
            format,
            script,
            style: Style { color: terminal.color, headers, width: table_width(terminal, format), terminal: terminal.stdout },
            stderr_style: Style { color: terminal.stderr_color, headers, width: notes_width(), terminal: notes_width().is_some() },
            stdout_terminal: terminal.stdout,
            interactive: terminal.interactive,
        })
    }

    /// The context for tests and `__complete`: plain output, no terminal.
    pub fn plain(input: Input) -> Context {
        Context {
            input,
            fleet: None,
            namespace: None,
            verbose: false,
            format: Format::Table,
            script: None,
            style: Style::plain(),
            stderr_style: Style::plain(),
            stdout_terminal: false,
            interactive: false,
        }
    }
}

/// How wide a table may be: on a terminal, its whole width (`render::TABLE_WIDTH` when it does
/// not say); into a pipe and with `-o wide`, unlimited (the full text, as kubectl prints it).
fn table_width(terminal: Terminal, output: Format) -> Option<usize> {
    if !terminal.stdout || output != Format::Table {
        return None;
    }
    let (_, columns) = console::Term::stdout().size();
    // A terminal that does not say its size (0 columns) gets the default width.
    Some(match usize::from(columns) {
        0 => render::TABLE_WIDTH,
        columns => columns,
    })
}

/// How wide notes on stderr may be: on a terminal, as tables are (they wrap to it); else unlimited.
fn notes_width() -> Option<usize> {
    let term = console::Term::stderr();
    term.is_term().then(|| match usize::from(term.size().1) {
        0 => render::TABLE_WIDTH,
        columns => columns,
    })
}

/// What every reader of -f input (files, stdin, archives, sysdumps) may read: `--max-input-size`
/// and `--max-line-size`.
fn limits_of(global: &GlobalArgs) -> crate::files::Limits {
    crate::files::Limits { input_bytes: global.max_input_size, line_bytes: global.max_line_size }
}

/// Files when `-f` was given, else the cluster kubectl's flags select.
pub fn input_of(global: &GlobalArgs) -> Input {
    if !global.filename.is_empty() {
        return Input::Files { paths: global.filename.clone(), limits: limits_of(global) };
    }
    Input::Cluster(ConnectOptions {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.first().cloned(),
        cluster: global.cluster.clone(),
        user: global.user.clone(),
        as_user: global.as_user.clone(),
        as_group: global.as_group.clone(),
        deadlines: crate::cluster::Deadlines { request: global.request_timeout },
        cilium_namespace: global.cilium_namespace.clone(),
        trace_requests: global.verbosity > 0,
        max_response_bytes: global.max_response_size,
        max_event_bytes: crate::cluster::limits::MAX_EVENT_BYTES,
    })
}

/// The fleet the flags ask for, if any: `--fleet` with `-f`, several `--context`s, `--all-contexts`.
pub fn fleet_of(global: &GlobalArgs) -> Option<Fleet> {
    let options = || match input_of(global) {
        Input::Cluster(options) => options,
        Input::Files { .. } => unreachable!("no -f when contexts are read"),
    };
    if global.fleet {
        Some(Fleet::Files { paths: global.filename.clone(), limits: limits_of(global) })
    } else if global.all_contexts {
        Some(Fleet::AllContexts(options()))
    } else if global.context.len() > 1 {
        Some(Fleet::Contexts(options(), global.context.clone()))
    } else {
        None
    }
}

/// Refuses fleet flags where they mean nothing (exit 2, before anything is read).
fn check_fleet_flags(command: &Command, global: &GlobalArgs) -> Result<()> {
    let offline = !global.filename.is_empty();
    let live_fleet = global.all_contexts || global.context.len() > 1;
    if global.fleet && !offline {
        return Err(input("--fleet reads one cluster per -f input; for live clusters use --context A,B or --all-contexts"));
    }
    if live_fleet && offline {
        return Err(input("--context A,B and --all-contexts read live clusters; they cannot be combined with -f (use -f A -f B --fleet)"));
    }
    let fleet = global.fleet || live_fleet;
    match command {
        Command::Usage(args) if fleet && args.watch => Err(input("--watch follows one cluster; drop --watch to read a fleet")),
        Command::Usage(args) if fleet && args.map => Err(input("--map draws one pool of one cluster; drop --fleet or name one cluster")),
        Command::Usage(_) | Command::Check(_) | Command::Ip(_) => Ok(()),
        // `serve` follows live clusters only (it refuses -f, so --fleet, on its own).
        Command::Serve(_) => Ok(()),
        _ if fleet => Err(input("a fleet (--fleet, several --context, --all-contexts) is read by usage, check, ip and serve only")),
        _ => Ok(()),
    }
}

/// Refuses flags that need (or cannot have) a cluster, and values clap does not check.
fn check_combinations(command: &Command, offline: bool, output: Format) -> Result<()> {
    // The output contract: a format the view does not print is refused before any IO.
    if let Some(refusal) = command.view(offline).refusal(output) {
        return Err(input(refusal));
    }
    match command {
        Command::Usage(args) if args.watch && offline => {
            return Err(input("--watch needs a live cluster; it cannot be combined with -f"));
        }
        Command::Serve(_) if offline => {
            return Err(input("serve watches a live cluster; it cannot be combined with -f"));
        }
        Command::ReserveRange(args) => {
            if args.in_place && !offline {
                return Err(input("--in-place edits files; pass the manifest with -f FILE"));
            }
            if args.dry_run == DryRun::Server && offline {
                return Err(input(
                    "--dry-run=server needs a cluster; with -f use --dry-run=client (or no dry run: the edited manifest is printed)",
                ));
            }
        }
        Command::Migrate(args) => {
            if offline && (args.status || args.finalize || args.backup.is_some()) {
                return Err(input(
                    "--status, --finalize and --backup work on a live cluster; with -f, manifests are converted (print, --diff, --in-place or --check)",
                ));
            }
            if offline && args.dry_run == DryRun::Server {
                return Err(input("--dry-run=server needs a cluster; with -f use --dry-run (the changes are shown, nothing is written)"));
            }
            if !offline && (args.in_place || args.check || args.diff) {
                return Err(input("--in-place, --check and --diff convert manifests: pass -f FILE|DIR"));
            }
        }
        _ => {}
    }
    Ok(())
}

impl Context {
    /// Prints a command's result in the format `-o` asked for.
    pub fn show(&self, result: &impl Render) -> Result<()> {
        self.print(&self.render(result))?;
        self.note(&render::notes(result, self.format, &self.stderr_style));
        Ok(())
    }

    /// A command's result as `-o` asks: through the script of `-o jsonpath|custom-columns`, else
    /// `render::output`.
    pub fn render(&self, result: &impl Render) -> String {
        match &self.script {
            Some(script) => render::scripted(result, script, &self.style),
            None => render::output(result, self.format, &self.style),
        }
    }

    /// Writes human notes to stderr, escaped.
    pub fn note(&self, text: &str) {
        match self.stderr_style.width {
            Some(width) => crate::stderr::block(&render::fit_prose(text, width), self.stderr_style.color),
            None => crate::stderr::block(text, self.stderr_style.color),
        }
    }

    /// Writes text in the `-o` format to stdout: escaped for a terminal unless it is a JSON/YAML
    /// document (those escape what they hold themselves). OpenMetrics passes unchanged: it holds
    /// no character to escape (`render::metrics` leaves out what it cannot show). Use [`emit`]
    /// for manifests.
    pub fn print(&self, text: &str) -> Result<()> {
        if self.format.is_document() { emit(text) } else { self.human(text) }
    }

    /// Writes result records (`<resource>/<name> <verb> …`, as kubectl prints after a change) in
    /// the `-o` format: escaped but never wrapped on a terminal, so that each stays one line for
    /// `grep`.
    pub fn record(&self, text: &str) -> Result<()> {
        if self.format.is_document() { emit(text) } else { emit(&crate::escape::block(text, self.style.color)) }
    }

    /// Writes a human line or block to stdout, escaped (and on a terminal, prose wider than it
    /// wrapped: `render::fit_prose`), whatever `-o` says.
    pub fn human(&self, text: &str) -> Result<()> {
        let escaped = crate::escape::block(text, self.style.color);
        match self.style.width {
            Some(width) => emit(&render::fit_prose(&escaped, width)),
            None => emit(&escaped),
        }
    }
}

/// Writes results (documents, manifests) to stdout as they are. A closed pipe (`| head`) ends the program quietly in `main`.
pub fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}
