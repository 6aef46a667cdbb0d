//! `usage`: figures per pool, node or block, with thresholds for scripts.

use crate::allocator::{PoolReport, Report};
use crate::cli::{ByKind, UsageArgs};
use crate::cluster::read::Cluster;
use crate::cluster::watch::{STALL_WATCH_TIMEOUT, SourceHealth, Watch, WatchOptions};
use crate::commands::context::{Context, emit};
use crate::commands::steps::{analyze, require_pools, warn_unread};
use crate::escape::block;
use crate::model::Snapshot;
use crate::render::usage::{Table, Thresholds, Usage, selected};
use crate::render::{self, Format, watch::Change};
use crate::source::Input;
use anyhow::Result;
use std::time::{Duration, Instant};

pub async fn run(args: UsageArgs, ctx: &Context) -> Result<i32> {
    if args.map && !args.watch {
        return super::map::run(&args, ctx).await;
    }
    if args.watch {
        return watch(args, ctx).await;
    }
    let (snapshot, report) = analyze(ctx).await?;
    require_pools(&snapshot, &args.pools)?;
    let usage = Usage { table_width: ctx.style.width, ..view(&args, &snapshot, &report) };
    ctx.show(&usage)?;
    let breaches = usage.thresholds.breach_lines(&usage.pools());
    for line in &breaches {
        ctx.note(&format!("{line}\n"));
    }
    Ok(if breaches.is_empty() { 0 } else { 1 })
}

/// The `usage` result the flags ask for.
pub(super) fn view<'a>(args: &'a UsageArgs, snapshot: &'a Snapshot, report: &'a Report) -> Usage<'a> {
    let table = if args.show_blocks {
        Table::Blocks
    } else if args.by == ByKind::Node {
        Table::Nodes
    } else {
        Table::Pools
    };
    let thresholds = Thresholds { fail_above: args.fail_above, min_free_blocks: args.min_free_blocks };
    Usage { snapshot, report, names: &args.pools, table, thresholds, table_width: None }
}

/// How long a burst of changes may last before the figures are recomputed once.
const DEBOUNCE: Duration = Duration::from_secs(1);

/// `--watch`: render, then re-render whenever the figures change, until Ctrl-C (exit 0).
async fn watch(args: UsageArgs, ctx: &Context) -> Result<i32> {
    let Input::Cluster(options) = &ctx.input else { unreachable!("Context::from_cli refuses --watch with -f") };
    let mut map = args.map.then(super::map::Frames::default);
    if map.is_some() {
        super::map::one_pool(&args)?;
    }
    let cluster = Cluster::connect(options, ctx.namespace.as_deref()).await?;
    let (snapshot, layout) = cluster.read().await?;
    warn_unread(&snapshot);
    require_pools(&snapshot, &args.pools)?;
    let report = crate::allocator::analyze(&snapshot);
    if map.is_some() {
        super::map::checked(&args, &report)?;
    }
    let usage = Usage { table_width: ctx.style.width, ..view(&args, &snapshot, &report) };
    let mut screen = Screen::new(ctx);
    // The notes once, on stderr (a terminal shows them again when the alternate screen closes).
    let notes = if map.is_some() { String::new() } else { render::notes(&usage, ctx.format, &ctx.stderr_style) };
    if !screen.terminal {
        ctx.note(&notes);
    }
    let (text, same) = frame(&args, ctx, &usage, &mut map);
    screen.show(&text, &same, &[], &pool_figures(&usage))?;
    // The watch lists every object again into its own stores: the first read's are not kept.
    drop((report, snapshot));
    // serve's stall detection: a stalled API server is said on stderr within about a minute.
    let options = WatchOptions { watch_timeout: Some(STALL_WATCH_TIMEOUT), ..WatchOptions::default() };
    let mut watch = Watch::start(&cluster, &layout, options);
    let result = follow(&args, ctx, &mut screen, &mut watch, &layout, &mut map).await;
    screen.close();
    if screen.terminal {
        ctx.note(&notes);
    }
    result
}

/// Re-renders on every settled change until Ctrl-C or SIGTERM.
async fn follow(
    args: &UsageArgs,
    ctx: &Context,
    screen: &mut Screen,
    watch: &mut Watch,
    layout: &crate::cluster::read::Layout,
    map: &mut Option<super::map::Frames>,
) -> Result<i32> {
    let interrupted = crate::commands::steps::interrupted();
    tokio::pin!(interrupted);
    let mut behind: Option<(u64, String)> = None;
    loop {
        // While behind, the status line's age is redrawn every second.
        let tick = async {
            match behind {
                Some(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                None => std::future::pending().await,
            }
        };
        let changed = tokio::select! {
            _ = &mut interrupted => return Ok(0),
            changed = watch.step() => changed?,
            _ = tick => false,
        };
        if changed && watch.listed() {
            tokio::select! {
                _ = &mut interrupted => return Ok(0),
                _ = watch.settle(DEBOUNCE) => {}
            }
            let snapshot = watch.snapshot(layout);
            let report = crate::allocator::analyze(&snapshot);
            let usage = view(args, &snapshot, &report);
            let figures = pool_figures(&usage);
            let changes = render::watch::changes(&screen.figures, &figures);
            let (text, same) = frame(args, ctx, &usage, map);
            screen.show(&text, &same, &changes, &figures)?;
        }
        let now = behind_of(watch.health(), Instant::now());
        if now.is_some() || behind.is_some() {
            screen.behind(now.as_ref())?;
        }
        behind = now;
    }
}

/// What the status line says while a watch fails: for how long the figures have had no proof
/// that they are current, then which watches fail and why. `None` while every watch follows.
fn behind_of(health: &[SourceHealth], now: Instant) -> Option<(u64, String)> {
    let failing: Vec<&SourceHealth> = health.iter().filter(|h| h.failing_since.is_some()).collect();
    let since = failing.iter().map(|h| h.staleness(now)).max()?;
    // Short names (the line is cut at the terminal's width), each with its reason.
    let which: Vec<String> = failing
        .iter()
        .map(|h| {
            let name = h.resource.split('.').next().unwrap_or(&h.resource);
            h.reason.as_ref().map_or(name.to_string(), |reason| format!("{name} ({reason})"))
        })
        .collect();
    Some((since.as_secs(), format!("watches failing: {}", which.join(", "))))
}

/// A frame's text, and the text that says whether it differs from the one shown: the table
/// itself, or with `--map` the map with its changed cells marked, compared unmarked.
fn frame(args: &UsageArgs, ctx: &Context, usage: &Usage, map: &mut Option<super::map::Frames>) -> (String, String) {
    match map {
        Some(frames) => frames.next(args, ctx, usage.report),
        None => {
            let text = ctx.render(usage);
            (text.clone(), text)
        }
    }
}

/// The per pool-family figures `--watch` compares between frames.
fn pool_figures(usage: &Usage) -> Vec<render::watch::Figures> {
    let pools: Vec<&PoolReport> = selected(usage.report, usage.names);
    render::watch::figures(&pools)
}

/// Where `--watch` output goes: an alternate screen redrawn in place on a terminal (restored on
/// exit), one block per change in a pipe.
struct Screen {
    terminal: bool,
    colour: bool,
    /// JSON/YAML frames are documents, already escaped.
    machine: bool,
    yaml: bool,
    /// `-o name`: records only on stdout (`| xargs`), the status line on stderr.
    records: bool,
    shown: Option<String>,
    /// On a terminal, the status line and the escaped text of the frame shown (redrawn while behind).
    last: Option<(String, String)>,
    figures: Vec<render::watch::Figures>,
    opened: bool,
}

impl Screen {
    fn new(ctx: &Context) -> Screen {
        Screen {
            terminal: ctx.stdout_terminal && !ctx.format.is_document() && ctx.format != Format::OpenMetrics,
            colour: ctx.style.color,
            machine: ctx.format.is_document(),
            yaml: ctx.format == Format::Yaml,
            records: ctx.format == Format::Name,
            shown: None,
            last: None,
            figures: Vec::new(),
            opened: false,
        }
    }

    /// Shows `text` unless `same` is what is already shown (events that change no figure).
    fn show(&mut self, text: &str, same: &str, changes: &[Change], figures: &[render::watch::Figures]) -> Result<()> {
        self.figures = figures.to_vec();
        if self.shown.as_deref() == Some(same) {
            return Ok(());
        }
        let safe = if self.machine { text.into() } else { block(text, self.colour) };
        let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let status = render::watch::status_line(&now, self.shown.is_none(), changes);
        if self.terminal {
            self.last = Some((status.clone(), safe.clone().into_owned()));
        }
        let bytes = if self.terminal {
            let (rows, columns) = console::Term::stdout().size();
            let mut out = String::new();
            if !self.opened {
                out.push_str(render::watch::ENTER);
                self.opened = true;
            }
            out.push_str(&render::watch::screen(&status, &safe, rows.into(), columns.into()));
            out
        } else if self.machine {
            // Documents stay parseable one after another (a JSON stream; YAML documents).
            if self.yaml && self.shown.is_some() { format!("---\n{safe}") } else { safe.into_owned() }
        } else {
            if self.records {
                crate::stderr::line(&status);
            }
            render::watch::block(&status, &safe, self.shown.is_none(), self.records)
        };
        emit(&bytes)?;
        self.shown = Some(same.to_string());
        Ok(())
    }

    /// On a terminal, redraws the last frame with its status line saying how far behind the
    /// cluster it is (`None`: no longer behind). In a pipe, stderr says it (`Watch`).
    fn behind(&mut self, behind: Option<&(u64, String)>) -> Result<()> {
        let Some((status, text)) = &self.last else { return Ok(()) };
        let status = match behind {
            Some((seconds, which)) => render::watch::behind_line(*seconds, status, which),
            None => status.clone(),
        };
        let (rows, columns) = console::Term::stdout().size();
        emit(&render::watch::screen(&status, text, rows.into(), columns.into()))
    }

    /// Leaves the alternate screen, the last frame printed to the normal screen so it stays
    /// (a map unmarked).
    fn close(&mut self) {
        if self.opened {
            let last = self.shown.as_deref().map(|t| block(t, self.colour).into_owned()).unwrap_or_default();
            let _ = emit(&format!("{}{last}", render::watch::LEAVE));
            self.opened = false;
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.close();
    }
}
