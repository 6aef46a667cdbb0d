//! Command orchestration: read a snapshot, run the allocator, render, choose the exit code.
//! Commands ask (the source layer reads and writes, the pure layers decide) and report.

pub mod check;
pub mod complete;
pub mod completion;
pub mod fleet;
pub mod inspect;
pub mod ip;
pub mod map;
pub mod migrate;
pub mod reserve;
pub mod serve;
pub mod usage;
pub mod version;

use crate::allocator::Report;
use crate::cli::{Cli, Command, DryRun, GlobalArgs, Output};
use crate::error::input;
use crate::model::Snapshot;
use crate::render::{self, Format, Render, Style};
use crate::source::{ConnectOptions, Input};
use crate::terminal::Prompter;
use anyhow::Result;
use std::io::Write;

/// Every setting a command needs, resolved once from the flags and the terminal
/// ([`Context::from_cli`]). Commands read these, never the flags' raw form.
pub struct Context {
    /// Files (`-f`) or the cluster's connection flags.
    pub input: Input,
    /// Several clusters at once (`--fleet`, `--context A,B`, `--all-contexts`): `usage`, `check`, `ip`.
    pub fleet: Option<crate::source::fleet::Fleet>,
    /// `-n`: the namespace pods (and their CiliumEndpoints) are read from; `None`: all.
    pub namespace: Option<String>,
    /// `-v`: diagnostics on stderr.
    pub verbose: bool,
    pub format: Format,
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
    /// stdin and stderr are terminals.
    pub interactive: bool,
}

impl Context {
    /// The settings for a parsed command line. Flag combinations clap cannot express (they
    /// depend on whether `-f` was given) are refused here, before anything is read (exit 2).
    pub fn from_cli(cli: &Cli, terminal: Terminal) -> Result<Context> {
        let global = &cli.global;
        check_combinations(&cli.command, !global.filename.is_empty(), global.output)?;
        // Process-wide: every reader of -f input (files, stdin, archives, sysdumps) obeys it.
        crate::source::inputs::set_max_input_bytes(global.max_input_size);
        crate::source::inputs::set_max_line_bytes(global.max_line_size);
        let headers = !global.no_headers;
        fleet::check_flags(&cli.command, global)?;
        Ok(Context {
            input: input_of(global),
            fleet: fleet::of(global),
            namespace: global.namespace.clone(),
            verbose: global.verbosity > 0,
            format: match global.output {
                Output::Table => Format::Table,
                Output::Wide => Format::Wide,
                Output::Json => Format::Json,
                Output::Yaml => Format::Yaml,
                Output::Name => Format::Name,
                Output::OpenMetrics => Format::OpenMetrics,
            },
            style: Style { color: terminal.color, headers, width: table_width(terminal, global.output), terminal: terminal.stdout },
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
            style: Style::plain(),
            stderr_style: Style::plain(),
            stdout_terminal: false,
            interactive: false,
        }
    }
}

/// How wide a table may be: on a terminal, its width and at most `render::TABLE_WIDTH`; into a
/// pipe and with `-o wide`, unlimited (the full text, as kubectl prints it).
fn table_width(terminal: Terminal, output: Output) -> Option<usize> {
    if !terminal.stdout || output != Output::Table {
        return None;
    }
    let (_, columns) = console::Term::stdout().size();
    // A terminal that does not say its size (0 columns) gets the default width.
    Some(match usize::from(columns) {
        0 => render::TABLE_WIDTH,
        columns => columns.min(render::TABLE_WIDTH),
    })
}

/// How wide notes on stderr may be: on a terminal, as tables are (they wrap to it); else unlimited.
fn notes_width() -> Option<usize> {
    let term = console::Term::stderr();
    term.is_term().then(|| match usize::from(term.size().1) {
        0 => render::TABLE_WIDTH,
        columns => columns.min(render::TABLE_WIDTH),
    })
}

/// Files when `-f` was given, else the cluster kubectl's flags select.
pub fn input_of(global: &GlobalArgs) -> Input {
    if !global.filename.is_empty() {
        return Input::Files(global.filename.clone());
    }
    Input::Cluster(ConnectOptions {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.first().cloned(),
        cluster: global.cluster.clone(),
        user: global.user.clone(),
        as_user: global.as_user.clone(),
        as_group: global.as_group.clone(),
        timeout: global.request_timeout,
        cilium_namespace: global.cilium_namespace.clone(),
        trace_requests: global.verbosity > 0,
        max_response_bytes: global.max_response_size,
        max_event_bytes: crate::source::limits::MAX_EVENT_BYTES,
    })
}

/// Refuses flags that need (or cannot have) a cluster, and values clap does not check.
fn check_combinations(command: &Command, offline: bool, output: Output) -> Result<()> {
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

impl Context {
    /// Prints a command's result in the format `-o` asked for.
    pub fn show(&self, result: &impl Render) -> Result<()> {
        self.print(&render::output(result, self.format, &self.style))?;
        self.note(&render::notes(result, self.format, &self.stderr_style));
        Ok(())
    }

    /// Writes human notes to stderr, escaped.
    pub fn note(&self, text: &str) {
        match self.stderr_style.width {
            Some(width) => crate::source::stderr::block(&render::fit_prose(text, width), self.stderr_style.color),
            None => crate::source::stderr::block(text, self.stderr_style.color),
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

/// The one rule before a write: `--yes` (`yes`), or a yes to `question` on a terminal; without
/// a terminal and without `--yes` nothing is written (exit 2, `refusal` says why). A false
/// answer ends the command with [`declined`].
pub fn confirm(ctx: &Context, yes: bool, prompter: &dyn Prompter, question: &str, refusal: &str) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !ctx.interactive {
        return Err(input(refusal.to_string()));
    }
    prompter.confirm(question)
}

/// The end of every command whose question was answered no (`n`, Enter, Esc) or whose picker
/// or prompt was cancelled (Esc): one line on stderr, nothing written, exit
/// [`crate::error::DECLINED`].
pub fn declined() -> Result<i32> {
    warn_line!("aborted; nothing was written");
    Ok(crate::error::DECLINED)
}

/// A read-only command's picker was cancelled (Esc): nothing was going to be written.
pub fn cancelled() -> Result<i32> {
    warn_line!("cancelled");
    Ok(crate::error::DECLINED)
}

/// Resolves when the user interrupts (Ctrl-C) or the process is asked to stop (SIGTERM), so that
/// long-running commands can restore the terminal and exit 0 instead of dying mid-frame.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Snapshot and report, the start of every read command.
pub async fn analyze(ctx: &Context) -> Result<(Snapshot, Report)> {
    let snapshot = crate::source::snapshot(&ctx.input, ctx.namespace.as_deref(), ctx.verbose).await?;
    warn_unread(&snapshot);
    let report = crate::allocator::analyze(&snapshot);
    Ok((snapshot, report))
}

/// A live read that could not see everything (forbidden pods, an unreadable CRD) says so on
/// stderr, whatever the output format: `-o json` marks such figures null but cannot say why.
/// So does each caveat of the input (`model::caveat`), one `warning:` line each.
pub fn warn_unread(snapshot: &Snapshot) {
    warn_unread_of(snapshot, None);
}

/// [`warn_unread`] for one cluster of a fleet: each line names it (`warning: cluster east: …`).
pub fn warn_unread_of(snapshot: &Snapshot, cluster: Option<&str>) {
    let of = cluster.map(|name| format!("cluster {name}: ")).unwrap_or_default();
    if snapshot.origin.kind == "cluster" {
        for note in &snapshot.notes {
            warn_line!("warning: {of}{note}");
        }
    }
    for caveat in &snapshot.origin.caveats {
        warn_line!("warning: {of}{}", caveat.message);
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
            let hint = if snapshot.is_mode_pool(name) && snapshot.nodes.iter().any(|n| n.allocated.iter().any(|a| *a.pool == **name)) {
                // The agent's pool of a non-multi-pool mode (ENI): nodes list it, no object defines it.
                let mode = snapshot.ipam.as_ref().map(|c| c.mode.name().to_string()).unwrap_or_default();
                format!("it is IPAM mode {mode}'s pool, which no CiliumPodIPPool defines: `kubectl ciliumpool usage` shows it")
            } else if close.is_empty() {
                let mut all: Vec<&str> = snapshot.pools.iter().map(|p| p.name.as_str()).collect();
                all.sort();
                format!("known pools: {}", if all.is_empty() { "none".to_string() } else { all.join(", ") })
            } else {
                format!("did you mean {}?", close.join(" or "))
            };
            return Err(input(format!("pool {name:?} not found; {hint}")));
        }
    }
    Ok(())
}
