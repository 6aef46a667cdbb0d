//! Command-line definitions (clap). kubectl does not pass its own flags to plugins, so the
//! kubectl connection flags are defined here, with kubectl's names and meanings.

use crate::render::Format;
use clap::{Args, Parser, Subcommand, ValueEnum, ValueHint};
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-ciliumpool",
    bin_name = "kubectl ciliumpool",
    version,
    about = "Usage, consistency checks, reserved ranges and v2 migration for Cilium multi-pool IPAM",
    long_about = "Usage, consistency checks, reserved ranges and v2 migration for Cilium multi-pool IPAM.\n\n\
        Reads CiliumPodIPPools, CiliumNodes, Pods and CiliumEndpoints from the cluster in your \
        kubeconfig, or from files with -f (no cluster is contacted then), and computes every figure \
        with the operator's block semantics.",
    after_help = "Examples:\n  \
    kubectl ciliumpool usage                          # every pool of the current context\n  \
    kubectl ciliumpool check                          # what is inconsistent, and what to do\n  \
    kubectl ciliumpool usage -f examples/snapshot     # offline, from files or a sysdump\n  \
    kubectl ciliumpool <command> --help               # each command's flags and examples\n\n\
Exit codes: 0 success, 1 a condition you asked about was found (or a question was answered no), 2 invalid input (nothing written), 3 cluster or API failure, 130 interrupted (Ctrl-C)."
)]
#[command(mut_subcommands = with_formats)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The help heading of the flags every command takes that choose the cluster (kubectl's).
const CONNECTION: &str = "Cluster connection (kubectl flags)";
/// The help heading of the flags every command takes that choose input and output.
const INPUT_OUTPUT: &str = "Input and output (every command)";

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, a path list, or ~/.kube/config)
    #[arg(long, global = true, value_name = "PATH", value_hint = ValueHint::FilePath, help_heading = CONNECTION)]
    pub kubeconfig: Option<String>,
    /// The kubeconfig context to use; several (A,B or repeated) read them all as a fleet (usage, check, ip, serve: docs/fleet.md)
    #[arg(long, global = true, value_name = "NAME", value_delimiter = ',', help_heading = CONNECTION)]
    pub context: Vec<String>,
    /// Read every context of the kubeconfig as a fleet (usage, check, ip, serve: docs/fleet.md)
    #[arg(long, global = true, conflicts_with = "context", help_heading = CONNECTION)]
    pub all_contexts: bool,
    /// The kubeconfig cluster to use
    #[arg(long, global = true, value_name = "NAME", help_heading = CONNECTION)]
    pub cluster: Option<String>,
    /// The kubeconfig user to use
    #[arg(long, global = true, value_name = "NAME", help_heading = CONNECTION)]
    pub user: Option<String>,
    /// Username to impersonate
    #[arg(long = "as", global = true, value_name = "USER", help_heading = CONNECTION)]
    pub as_user: Option<String>,
    /// Group to impersonate (repeatable)
    #[arg(long = "as-group", global = true, value_name = "GROUP", help_heading = CONNECTION)]
    pub as_group: Vec<String>,
    /// How long one request may take in all, from connecting to the last byte of the answer, e.g. 5s, 1m; 0 waits forever [default: 30s]
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_timeout, help_heading = CONNECTION)]
    pub request_timeout: Option<Duration>,
    /// The most bytes one API answer may have before it is refused (a page of 500 objects is a few MiB), e.g. 512Mi
    #[arg(long, global = true, value_name = "SIZE", default_value = "128Mi", value_parser = crate::bytes::parse, help_heading = CONNECTION)]
    pub max_response_size: u64,
    /// Namespace to read pods from (pools and nodes are cluster-scoped); default: all namespaces
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", help_heading = CONNECTION)]
    pub namespace: Option<String>,
    /// Namespace of the Cilium installation: its ConfigMap cilium-config names the IPAM mode, its operator and agent images the version
    #[arg(long, global = true, value_name = "NAMESPACE", default_value = "kube-system", help_heading = CONNECTION)]
    pub cilium_namespace: String,
    /// Read objects from files or directories instead of the cluster ('-' for stdin; repeatable)
    #[arg(short = 'f', long = "filename", global = true, value_name = "PATH", value_hint = ValueHint::AnyPath, help_heading = INPUT_OUTPUT)]
    pub filename: Vec<String>,
    /// The most bytes one -f input (a file, stdin, an archive member) may hold, e.g. 4Gi; an archive may expand to 16 times this in all
    #[arg(long, global = true, value_name = "SIZE", default_value = "1Gi", value_parser = crate::bytes::parse, help_heading = INPUT_OUTPUT)]
    pub max_input_size: u64,
    /// The longest line a YAML -f input may have (the parser holds a line's value whole, three times over), e.g. 64Mi
    #[arg(long, global = true, value_name = "SIZE", default_value = "16Mi", value_parser = crate::bytes::parse, help_heading = INPUT_OUTPUT)]
    pub max_line_size: u64,
    /// With -f: each input is one cluster of a fleet (usage, check, ip: docs/fleet.md)
    #[arg(long, global = true, help_heading = INPUT_OUTPUT)]
    pub fleet: bool,
    /// Output format
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table, help_heading = INPUT_OUTPUT)]
    pub output: Format,
    /// Do not print table headers (and footers)
    #[arg(long, global = true, help_heading = INPUT_OUTPUT)]
    pub no_headers: bool,
    /// When to colour output
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, help_heading = INPUT_OUTPUT)]
    pub color: ColorChoice,
    /// Diagnostics on stderr (what was read, what was skipped); kubectl's forms -v=N, -v N and --v=N are taken, any N above 0 turns them on; a bare -v or --verbose is -v=1
    #[arg(short = 'v', long = "v", visible_alias = "verbose", global = true, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "1", default_value_t = 0, hide_default_value = true, help_heading = INPUT_OUTPUT)]
    pub verbosity: u8,
}

// The output contract (docs/design/json-contract.md#formats): the `-o` formats each view prints.
// A command line asking for another is refused before anything is read or written.
const USAGE: &[Format] = &[Format::Table, Format::Wide, Format::Json, Format::Yaml, Format::Name, Format::OpenMetrics];
const LISTS: &[Format] = &[Format::Table, Format::Wide, Format::Json, Format::Yaml, Format::Name];
const INSPECT: &[Format] = &[Format::Table, Format::Json, Format::Yaml, Format::Name];
const RESERVE: &[Format] = INSPECT;
const DOCUMENTS: &[Format] = &[Format::Table, Format::Json, Format::Yaml];
const TEXT: &[Format] = &[Format::Table];

/// What a command line prints, as far as `-o` goes: its name in a refusal and the formats it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    pub name: &'static str,
    pub formats: &'static [Format],
}

impl View {
    /// `None` when the view prints `output`, else the one-line refusal (kubectl's wording).
    pub fn refusal(&self, output: Format) -> Option<String> {
        if self.formats.contains(&output) {
            return None;
        }
        let allowed: Vec<&str> = self.formats.iter().map(|f| f.name()).collect();
        Some(format!(
            "unable to match a printer suitable for the output format \"{}\" of {}, allowed formats are: {}",
            output.name(),
            self.name,
            allowed.join(", ")
        ))
    }
}

impl Command {
    /// The view this command line selects (`offline`: with `-f`), and the formats it prints.
    pub fn view(&self, offline: bool) -> View {
        let view = |name, formats| View { name, formats };
        match self {
            // A picture for a person: no document, no names.
            Command::Usage(a) if a.map => view("usage --map", TEXT),
            Command::Usage(a) if a.show_blocks => view("usage --show-blocks", DOCUMENTS),
            Command::Usage(a) if a.by == ByKind::Node => view("usage --by node", DOCUMENTS),
            // A stream of frames is not one OpenMetrics exposition (it ends with `# EOF`): serve is.
            Command::Usage(a) if a.watch => view("usage --watch", LISTS),
            Command::Usage(_) => view("usage", USAGE),
            Command::Inspect(_) => view("inspect", INSPECT),
            Command::Check(_) => view("check", LISTS),
            Command::Ip(_) => view("ip", LISTS),
            Command::ReserveRange(a) if a.list => view("reserve-range --list", INSPECT),
            Command::ReserveRange(_) => view("reserve-range", DOCUMENTS),
            // Offline, manifests are printed as they are written (YAML), or files are named.
            Command::Migrate(_) if offline => view("migrate -f", TEXT),
            Command::Migrate(a) if a.status => view("migrate --status", DOCUMENTS),
            Command::Migrate(a) if a.dry_run != DryRun::None => view("migrate --dry-run", DOCUMENTS),
            Command::Migrate(_) => view("migrate", TEXT),
            Command::Completion(_) => view("completion", TEXT),
            Command::Serve(_) => view("serve", TEXT),
            Command::Version(_) => view("version", DOCUMENTS),
        }
    }
}

/// Every format some view of `subcommand` prints: what its `-o` help lists.
fn formats_of(subcommand: &str) -> &'static [Format] {
    match subcommand {
        "usage" => USAGE,
        "inspect" => INSPECT,
        "check" | "ip" => LISTS,
        "reserve-range" => RESERVE,
        "migrate" | "version" => DOCUMENTS,
        _ => TEXT,
    }
}

/// Gives each subcommand its own copy of the global flags, in their order, whose `-o` help lists
/// only the formats the command prints (clap does not propagate a global flag a subcommand has).
/// The other formats still parse, so that `Context::from_cli` refuses them in one line.
fn with_formats(subcommand: clap::Command) -> clap::Command {
    use clap::builder::TypedValueParser;
    let formats = formats_of(subcommand.get_name());
    let values = Format::value_variants().iter().map(|o| o.to_possible_value().expect("no variant is skipped").hide(!formats.contains(o)));
    let output = clap::builder::PossibleValuesParser::new(values).map(|v| Format::from_str(&v, false).expect("a listed value"));
    let globals = GlobalArgs::augment_args(clap::Command::new("globals"));
    globals.get_arguments().fold(subcommand, |subcommand, arg| {
        let arg = if arg.get_id() == "output" { arg.clone().value_parser(output.clone()) } else { arg.clone() };
        subcommand.arg(arg)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Free, reserved, allocated and used addresses and blocks per pool
    #[command(visible_alias = "utilization")]
    Usage(UsageArgs),
    /// One pool in depth: versions, reservations, draining CIDRs, nodes, next block, problems
    Inspect(InspectArgs),
    /// Consistency report for the whole cluster (exit 1 when problems are found)
    Check(CheckArgs),
    /// Where addresses stand: pool, CIDR, block and its state, reservation, the pod or node holding them (exit 1 when one is in no pool)
    Ip(IpArgs),
    /// Reserve, release or list address ranges of a pool; drain a CIDR before removing it
    ReserveRange(ReserveArgs),
    /// Move CiliumPodIPPools from cilium.io/v2alpha1 to v2, in the cluster or in manifests (-f)
    Migrate(MigrateArgs),
    /// Print a shell completion script
    Completion(CompletionArgs),
    /// Serve the figures of usage as Prometheus metrics (/metrics, /healthz, /readyz) until SIGTERM
    Serve(ServeArgs),
    /// Print the plugin's version, commit and build date and, when reachable, the server, CRD and Cilium versions
    #[command(after_help = "Examples:\n  \
    kubectl ciliumpool version                        # the server part gives up after 2s\n  \
    kubectl ciliumpool version --client               # the plugin only, no cluster contacted\n  \
    kubectl ciliumpool version -o json")]
    Version(VersionArgs),
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    /// The plugin's own version only; the cluster is not contacted (as kubectl version --client)
    #[arg(long)]
    pub client: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ByKind {
    Pool,
    Node,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool usage                          # every pool, IPv4 and IPv6\n  \
    kubectl ciliumpool usage blue --show-blocks       # one row per block: node, state, range\n  \
    kubectl ciliumpool usage --by node                # one row per node and pool\n  \
    kubectl ciliumpool usage blue --map               # the pool's address space, one cell per block\n  \
    kubectl ciliumpool usage --fail-above 90% --min-free-blocks 8   # exit 1 when breached (CI, cron)\n  \
    kubectl ciliumpool usage -o openmetrics > /var/lib/node_exporter/ciliumpool.prom\n  \
    kubectl ciliumpool usage --watch")]
pub struct UsageArgs {
    /// Pools to show (default: all)
    pub pools: Vec<String>,
    /// Group rows by pool (default) or by node
    #[arg(long, value_enum, default_value_t = ByKind::Pool)]
    pub by: ByKind,
    /// One row per allocated, withheld or orphan block; free blocks as ranges
    #[arg(long, conflicts_with = "by")]
    pub show_blocks: bool,
    /// Exit 1 when any selected pool's utilization is above PCT percent (90 or 90%)
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub fail_above: Option<f64>,
    /// Exit 1 when any selected pool has fewer than N free blocks
    #[arg(long, value_name = "N")]
    pub min_free_blocks: Option<u64>,
    /// Re-render when pools, CiliumNodes or pods change (live cluster only)
    #[arg(short = 'w', long)]
    pub watch: bool,
    /// Draw one pool's CIDRs as a map of its blocks: allocated, free, withheld, draining, orphan, grandfathered, next
    #[arg(long, conflicts_with_all = ["by", "show_blocks", "fail_above", "min_free_blocks", "watch"])]
    pub map: bool,
    /// With --map: highlight the blocks this node holds
    #[arg(long, value_name = "NAME", requires = "map")]
    pub node: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool serve                          # http://127.0.0.1:9967/ (loopback only)\n  \
    kubectl ciliumpool serve --listen 0.0.0.0:9967 --node-metrics  # every interface, as deploy/\n\n\
In a pod without a kubeconfig it uses the pod's service account (deploy/). Metrics, alerts and \
the dashboard: docs/metrics.md.")]
pub struct ServeArgs {
    /// Where to listen: loopback by default, as kubectl proxy (Cilium's own components use 9962-9966)
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9967")]
    pub listen: String,
    /// Also export per-node series (nodes x pools series: high cardinality)
    #[arg(long)]
    pub node_metrics: bool,
    /// Stop serving pool figures and report not ready when a watch has been failing this long
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_timeout)]
    pub stale_after: Duration,
    /// The most objects one watched resource may hold; past it the resource is stale and relisted after a backoff (raise the memory limit with it: docs/metrics.md)
    #[arg(long, value_name = "N", default_value = "200000")]
    pub max_watch_objects: usize,
    /// The most bytes one watch event may have; a larger one makes its resource stale until it is watched again, e.g. 32Mi
    #[arg(long, value_name = "SIZE", default_value = "16Mi", value_parser = crate::bytes::parse)]
    pub max_event_size: u64,
    /// Resident memory past which a growing watch store is let go (stale, relisted after a backoff) instead of the process being killed; about 3/4 of the pod's memory limit, e.g. 768Mi
    #[arg(long, value_name = "SIZE", default_value = "384Mi", value_parser = crate::bytes::parse)]
    pub memory_budget: u64,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool inspect blue                   # reservations, draining, nodes, next block\n  \
    kubectl ciliumpool inspect                        # a picker on a terminal (Esc cancels)\n  \
    kubectl ciliumpool inspect blue -o json")]
pub struct InspectArgs {
    /// The pool to inspect (default: a picker on a terminal, all pools otherwise)
    pub pool: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool ip 10.40.3.17                 # which pool, block and pod\n  \
    kubectl ciliumpool ip 10.40.255.254 fd00:10::1a -o json\n\n\
Exit codes: 0 every address is in a pool (or in a block a node lists), 1 some address is in no pool, 2 an argument is not an IP address.")]
pub struct IpArgs {
    /// The addresses to look up (IPv4 or IPv6)
    #[arg(required = true, value_name = "ADDR")]
    pub addresses: Vec<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool check                          # every problem, with what to do\n  \
    kubectl ciliumpool check blue green               # only the problems of these pools\n  \
    kubectl ciliumpool check --severity error -o name # the objects with errors, for scripts\n  \
    kubectl ciliumpool check -f ./sysdump/            # offline, from an extracted cilium sysdump\n\n\
Exit codes: 0 no problem at or above --severity (input-incomplete, which describes the input, does not count), 1 problems found.")]
pub struct CheckArgs {
    /// Pools whose problems to report (default: every problem, the cluster-wide ones too)
    pub pools: Vec<String>,
    /// Only report problems of at least this severity
    #[arg(long, value_enum, default_value_t = MinSeverity::Info)]
    pub severity: MinSeverity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MinSeverity {
    Error,
    Warning,
    Info,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    source <(kubectl ciliumpool completion bash)\n  \
    kubectl ciliumpool completion zsh > \"${fpath[1]}/_kubectl-ciliumpool\"\n\n\
`kubectl ciliumpool <TAB>` completes through kubectl_complete-ciliumpool (installed beside the plugin).")]
pub struct CompletionArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool reserve-range blue 10.40.255.254            # keep a gateway IP out of the pool\n  \
    kubectl ciliumpool reserve-range blue 10.40.255.240-10.40.255.254 --dry-run=server\n  \
    kubectl ciliumpool reserve-range blue --drain 10.41.0.0/16     # step 1 of decommissioning a CIDR\n  \
    kubectl ciliumpool reserve-range blue --remove 10.40.255.254\n  \
    kubectl ciliumpool reserve-range --list\n  \
    kubectl ciliumpool reserve-range blue 10.40.0.0/28 -f pools.yaml --in-place\n  \
    kubectl ciliumpool reserve-range                   # guided: pool, CIDR, range, preview, [y/N]\n\n\
Reservations act on whole blocks: every block the range touches is withheld. Blocks already on a \
node are not evicted. The impact is shown before anything is written.")]
pub struct ReserveArgs {
    /// The pool (a guided flow starts on a terminal when it is missing)
    pub pool: Option<String>,
    /// The range to reserve: A-B, A..B, a single IP or a CIDR
    pub range: Option<String>,
    /// The pool CIDR the range must lie in
    #[arg(long, value_name = "CIDR")]
    pub cidr: Option<String>,
    /// Remove this reserved range (as listed by --list)
    #[arg(long, value_name = "RANGE", conflicts_with_all = ["range", "drain", "list"])]
    pub remove: Option<String>,
    /// Reserve a whole CIDR of the pool: step 1 of decommissioning it
    #[arg(long, value_name = "CIDR", conflicts_with_all = ["range", "list"])]
    pub drain: Option<String>,
    /// List the reserved ranges of POOL (or of every pool) and what they withhold
    #[arg(long, conflicts_with = "range")]
    pub list: bool,
    /// Allow a change that reserves every block of the pool
    #[arg(long)]
    pub force: bool,
    /// Write without asking for confirmation (required when not on a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// client: validate and preview only; server: also have the API server validate the write without persisting it
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client", default_value_t = DryRun::None)]
    pub dry_run: DryRun,
    /// With -f: rewrite the file holding the pool (atomically) instead of printing the edited pool
    #[arg(long)]
    pub in_place: bool,
}

/// `--dry-run` as kubectl spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    /// Write for real
    None,
    /// Validate and show what would change; send nothing that writes
    Client,
    /// Also send every write as a server-side dry run (validated by the API server, not persisted)
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Schema {
    /// cidrs stay strings; reservations live in pool[].reservedRanges (cilium/cilium#44383)
    Upstream,
    /// cidrs become {cidr, reservedRange} objects (CFP-42466)
    Cfp,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    kubectl ciliumpool migrate --dry-run              # the plan: what would be written, and why\n  \
    kubectl ciliumpool migrate                        # backup, then migrate (asks first)\n  \
    kubectl ciliumpool migrate --status               # exit 0 once v2alpha1 can be removed\n  \
    kubectl ciliumpool migrate --finalize             # storedVersions [v2]\n  \
    kubectl ciliumpool migrate -f manifests/ --check  # CI: exit 1 while a manifest needs converting\n  \
    kubectl ciliumpool migrate -f manifests/ --diff   # what --in-place would change, as a diff\n  \
    kubectl ciliumpool migrate -f manifests/ --in-place\n\n\
Runbook: docs/migration.md. Offline (-f): prints only the documents that change (each after a `# Source:` line), a diff with --diff, or rewrites the files with --in-place; --dry-run writes nothing.")]
pub struct MigrateArgs {
    /// Print the plan and stop (with -f: show the changes, write nothing); =server also sends every write as a server-side dry run
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", value_name = "MODE", default_value_t = DryRun::None)]
    pub dry_run: DryRun,
    /// Do not ask for confirmation (required when not on a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Where to write the backup (default: ./ciliumpool-backup-<UTC timestamp>.yaml)
    #[arg(long, value_name = "PATH")]
    pub backup: Option<std::path::PathBuf>,
    /// Report progress and whether v2alpha1 can be removed; exit 1 while work is pending
    #[arg(long, conflicts_with_all = ["dry_run", "finalize", "backup"])]
    pub status: bool,
    /// Once every pool is migrated: set the CRD's status.storedVersions to [v2]
    #[arg(long, conflicts_with_all = ["dry_run", "backup"])]
    pub finalize: bool,
    /// With --dry-run: exit 1 when the plan would write something (for CI)
    #[arg(long, requires = "dry_run")]
    pub exit_code: bool,
    /// List pools in pages of this many objects
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
    /// Offline (-f): the v2 shape to convert manifests to
    #[arg(long, value_enum, default_value_t = Schema::Upstream)]
    pub schema: Schema,
    /// Offline (-f): rewrite the files instead of printing the changed documents (with --dry-run: write nothing)
    #[arg(long)]
    pub in_place: bool,
    /// Offline (-f): write nothing; exit 1 when any manifest still needs conversion
    #[arg(long, conflicts_with = "in_place")]
    pub check: bool,
    /// Offline (-f): a unified diff per changed file instead of the documents; exit 1 when anything changes (as kubectl diff)
    #[arg(long, conflicts_with = "check")]
    pub diff: bool,
}

/// The hidden `__complete` subcommand (Cobra's protocol, for `kubectl_complete-ciliumpool`). It is
/// added to `Cli::command()` only for parsing, so that the `completion` scripts, generated from
/// `Cli::command()`, never offer it. The words come after `--`, so that none is taken for a flag.
pub fn complete_command() -> clap::Command {
    clap::Command::new(COMPLETE)
        .hide(true)
        .about("Completion candidates in Cobra's __complete protocol")
        .arg(clap::Arg::new("words").raw(true).help("The words after `kubectl ciliumpool`; the last one is the word being completed"))
}

/// The name of the hidden completion subcommand.
pub const COMPLETE: &str = "__complete";

/// `--request-timeout`: a bare number is seconds; else `30s`, `1m`, `1h2m`; `0` means none.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => humantime::parse_duration(text).map_err(|e| format!("not a duration ({e}); use e.g. 30s, 1m or 0")),
    }
}

/// `--fail-above`: a number of percent, with or without `%`, from 0 to 100.
fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim_end();
    match number.parse::<f64>() {
        Ok(pct) if (0.0..=100.0).contains(&pct) => Ok(pct),
        Ok(_) => Err("not a percentage between 0 and 100".to_string()),
        Err(_) => Err("not a percentage; use e.g. 90 or 90%".to_string()),
    }
}

/// A command-line error of clap (a bad flag value, an unknown flag) as one line, as every other
/// error of the plugin is: clap's lines joined (`[possible values: …]`, its tips), the usage
/// synopsis left out, and its pointer to `--help` kept at the end of the line.
pub fn one_line_error(rendered: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let mut help = None;
    for line in rendered.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("Usage:")) {
        match line.strip_prefix("For more information, ") {
            Some(hint) => help = Some(hint.trim_end_matches('.')),
            None => parts.push(line),
        }
    }
    let mut line = String::new();
    for (i, part) in parts.iter().enumerate() {
        // `[possible values: …]` reads on from the sentence it lists the values for; a tip is a clause.
        line.push_str(match i {
            0 => "",
            _ if part.starts_with('[') => " ",
            _ => "; ",
        });
        line.push_str(part);
    }
    if let Some(hint) = help {
        line = format!("{line}; {hint}");
    }
    if line.starts_with("error:") { line } else { format!("error: {line}") }
}

/// kubectl's spellings of its verbosity flag, `-v N`, `--v N` and `-vN`, as the `-v=N` clap
/// reads (a bare `-v` stays `-v`: it means `-v=1`). Arguments after `--` are left alone.
pub fn kubectl_verbosity(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out: Vec<std::ffi::OsString> = Vec::new();
    let mut args = args.into_iter().peekable();
    let is_level = |word: &str| !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit());
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args);
            break;
        }
        let word = arg.to_str().unwrap_or_default();
        if word == "-v" || word == "--v" {
            if let Some(level) = args.next_if(|next| next.to_str().is_some_and(is_level)) {
                out.push(format!("--v={}", level.to_string_lossy()).into());
                continue;
            }
        } else if let Some(level) = word.strip_prefix("-v").filter(|rest| is_level(rest)) {
            out.push(format!("--v={level}").into());
            continue;
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_error_is_one_line() {
        use clap::CommandFactory;
        let rendered = "error: invalid value 'bogus' for '--output <OUTPUT>'\n  [possible values: table, wide]\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line_error(rendered),
            "error: invalid value 'bogus' for '--output <OUTPUT>' [possible values: table, wide]; try '--help'"
        );
        let unknown = "error: unexpected argument '--bogus' found\n\n  tip: to pass '--bogus' as a value, use '-- --bogus'\n\nUsage: kubectl ciliumpool usage [OPTIONS] [POOLS]...\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line_error(unknown),
            "error: unexpected argument '--bogus' found; tip: to pass '--bogus' as a value, use '-- --bogus'; try '--help'"
        );
        // Every error of clap is rendered through it: it is one line whatever clap adds.
        let err = Cli::command().try_get_matches_from(["kubectl-ciliumpool", "usage", "--fail-above", "abc"]).unwrap_err();
        let line = one_line_error(&err.render().to_string());
        assert!(!line.contains('\n') && line.starts_with("error: invalid value 'abc' for '--fail-above"), "{line}");
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("95%"), Ok(95.0));
        assert_eq!(parse_percent("95"), Ok(95.0));
        assert_eq!(parse_percent("12.5 %"), Ok(12.5));
        assert!(parse_percent("101%").is_err());
        assert!(parse_percent("ninety").is_err());
    }

    #[test]
    fn verbosity_in_kubectl_forms() {
        let parsed = |words: &[&str]| {
            let args = kubectl_verbosity(["kubectl-ciliumpool"].iter().chain(words).map(std::ffi::OsString::from));
            Cli::try_parse_from(args).map(|cli| cli.global.verbosity).map_err(|e| e.to_string())
        };
        for words in
            [&["-v=4", "version"][..], &["-v", "4", "version"], &["--v=4", "version"], &["--v", "4", "version"], &["version", "-v4"]]
        {
            assert_eq!(parsed(words), Ok(4), "{words:?}");
        }
        assert_eq!(parsed(&["-v", "version"]), Ok(1));
        assert_eq!(parsed(&["usage", "-v", "-f", "x"]), Ok(1));
        assert_eq!(parsed(&["usage", "--verbose"]), Ok(1));
        assert_eq!(parsed(&["usage"]), Ok(0));
        // After `--` (the completion protocol's words) nothing is rewritten.
        assert_eq!(
            kubectl_verbosity(["x", "--", "-v", "4"].map(std::ffi::OsString::from)),
            ["x", "--", "-v", "4"].map(std::ffi::OsString::from)
        );
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_timeout("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_timeout("3s").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_timeout("1m30s").unwrap(), Duration::from_secs(90));
        assert!(parse_timeout("soon").is_err());
    }
}
