//! The subcommands and the flags of each (clap).

use super::values::{parse_percent, parse_timeout};
use clap::{Args, Subcommand, ValueEnum};
use std::time::Duration;

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
    /// Reserve, release or list a pool's address ranges; drain a CIDR
    ReserveRange(ReserveArgs),
    /// Move CiliumPodIPPools from cilium.io/v2alpha1 to v2, in the cluster or in manifests (-f)
    Migrate(MigrateArgs),
    /// Print a shell completion script
    Completion(CompletionArgs),
    /// Serve the figures of usage as Prometheus metrics (/metrics, /healthz, /readyz) until SIGTERM
    Serve(ServeArgs),
    /// Print the plugin's version, commit and build date and, when reachable, the server, CRD and Cilium versions
    #[command(after_help = "Examples:\n  \
    # The server part gives up after 2s\n  \
    kubectl ciliumpool version\n  \
    # The plugin only, no cluster contacted\n  \
    kubectl ciliumpool version --client\n  \
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
    # Every pool, IPv4 and IPv6\n  \
    kubectl ciliumpool usage\n  \
    # One row per block: node, state, range\n  \
    kubectl ciliumpool usage blue --show-blocks\n  \
    # One row per node and pool\n  \
    kubectl ciliumpool usage --by node\n  \
    # The pool's address space, one cell per block\n  \
    kubectl ciliumpool usage blue --map\n  \
    # Exit 1 when breached (CI, cron)\n  \
    kubectl ciliumpool usage --fail-above 90% --min-free-blocks 8\n  \
    # For node_exporter's textfile collector\n  \
    kubectl ciliumpool usage -o openmetrics > ciliumpool.prom\n  \
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
    /// Draw one pool's CIDRs as a map of its blocks: allocated, free, withheld, draining, orphan, grandfathered, next (with --watch: the cells that changed marked)
    #[arg(long, conflicts_with_all = ["by", "show_blocks", "fail_above", "min_free_blocks"])]
    pub map: bool,
    /// With --map: highlight the blocks this node holds
    #[arg(long, value_name = "NAME", requires = "map")]
    pub node: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    # Http://127.0.0.1:9967/ (loopback only)\n  \
    kubectl ciliumpool serve\n  \
    # Every interface, as deploy/\n  \
    kubectl ciliumpool serve --listen 0.0.0.0:9967 --node-metrics\n\n\
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
    /// Take each initial listing as a streaming list (WatchList), not one list answer: slower to ready, lighter for API servers that read whole lists from etcd (docs/metrics.md)
    #[arg(long)]
    pub streaming_lists: bool,
    /// Resident memory past which a growing watch store is let go (stale, relisted after a backoff) instead of the process being killed; about 3/4 of the pod's memory limit, e.g. 768Mi
    #[arg(long, value_name = "SIZE", default_value = "384Mi", value_parser = crate::bytes::parse)]
    pub memory_budget: u64,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    # Reservations, draining, nodes, next block\n  \
    kubectl ciliumpool inspect blue\n  \
    # A picker on a terminal (Esc cancels)\n  \
    kubectl ciliumpool inspect\n  \
    kubectl ciliumpool inspect blue -o json")]
pub struct InspectArgs {
    /// The pool to inspect (default: a picker on a terminal, all pools otherwise)
    pub pool: Option<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    # Which pool, block and pod\n  \
    kubectl ciliumpool ip 10.40.3.17\n  \
    kubectl ciliumpool ip 10.40.255.254 fd00:10::1a -o json\n\n\
Exit codes: 0 every address is in a pool (or in a block a node lists), 1 some address is in no pool, 2 an argument is not an IP address.")]
pub struct IpArgs {
    /// The addresses to look up (IPv4 or IPv6)
    #[arg(required = true, value_name = "ADDR")]
    pub addresses: Vec<String>,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    # Every problem, with what to do\n  \
    kubectl ciliumpool check\n  \
    # Only the problems of these pools\n  \
    kubectl ciliumpool check blue green\n  \
    # The objects with errors, for scripts\n  \
    kubectl ciliumpool check --severity error -o name\n  \
    # Offline, from an extracted cilium sysdump\n  \
    kubectl ciliumpool check -f ./sysdump/\n\n\
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
#[command(after_help = "Examples:
  # Keep a gateway IP out of the pool (previewed, then asked)
  kubectl ciliumpool reserve-range blue 10.40.255.254

  # Preview a range, validated by the API server, nothing written
  kubectl ciliumpool reserve-range blue 10.40.255.240/28 --dry-run=server

  # Step 1 of decommissioning a CIDR; release a range; list them all
  kubectl ciliumpool reserve-range blue --drain 10.41.0.0/16
  kubectl ciliumpool reserve-range blue --remove 10.40.255.254
  kubectl ciliumpool reserve-range --list

  # Edit a manifest instead of the cluster; no arguments: a guided flow
  kubectl ciliumpool reserve-range blue 10.40.0.0/28 -f pools.yaml --in-place
  kubectl ciliumpool reserve-range

A reservation withholds every block it touches; blocks on nodes are not evicted.
More: docs/reserve-range.md")]
pub struct ReserveArgs {
    /// The pool (none: a guided flow, on a terminal)
    pub pool: Option<String>,
    /// The range to reserve: A-B, A..B, an IP or a CIDR
    pub range: Option<String>,
    /// The pool CIDR the range must lie in
    #[arg(long, value_name = "CIDR")]
    pub cidr: Option<String>,
    /// Remove this reserved range (as --list shows it)
    #[arg(long, value_name = "RANGE", conflicts_with_all = ["range", "drain", "list"])]
    pub remove: Option<String>,
    /// Reserve a whole CIDR: step 1 of removing it
    #[arg(long, value_name = "CIDR", conflicts_with_all = ["range", "list"])]
    pub drain: Option<String>,
    /// List reserved ranges and what they withhold
    #[arg(long, conflicts_with = "range")]
    pub list: bool,
    /// Allow reserving every block of the pool
    #[arg(long)]
    pub force: bool,
    /// Write without asking (needed off a terminal)
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Preview only: client (bare --dry-run), or server: validated by the API server too
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true, default_missing_value = "client", default_value_t = DryRun::None, hide_default_value = true, hide_possible_values = true)]
    pub dry_run: DryRun,
    /// With -f: rewrite the file instead of printing it
    #[arg(long)]
    pub in_place: bool,
}

/// `--dry-run` as kubectl spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DryRun {
    // Described in the flag's own line (a described value would make `--help` list each on its own).
    // none: write for real.
    None,
    // client: validate and show what would change; send nothing that writes.
    Client,
    // server: also send every write as a server-side dry run (validated, not persisted).
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
    # The plan: what would be written, and why\n  \
    kubectl ciliumpool migrate --dry-run\n  \
    # Backup, then migrate (asks first)\n  \
    kubectl ciliumpool migrate\n  \
    # Exit 0 once v2alpha1 can be removed\n  \
    kubectl ciliumpool migrate --status\n  \
    # StoredVersions [v2]\n  \
    kubectl ciliumpool migrate --finalize\n  \
    # CI: exit 1 while a manifest needs converting\n  \
    kubectl ciliumpool migrate -f manifests/ --check\n  \
    # What --in-place would change, as a diff\n  \
    kubectl ciliumpool migrate -f manifests/ --diff\n  \
    kubectl ciliumpool migrate -f manifests/ --in-place\n\n\
Runbook: docs/migration.md. Offline (-f): prints only the documents that change (each after a `# Source:` line), a diff with --diff, or rewrites the files with --in-place; --dry-run writes nothing.")]
pub struct MigrateArgs {
    /// The plan only, nothing written; exit 1 when it would write (kubectl diff); =server: validated by the API server too
    #[arg(long, value_enum, num_args = 0..=1, require_equals = true, default_missing_value = "client", value_name = "MODE", default_value_t = DryRun::None, hide_default_value = true, hide_possible_values = true)]
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
    #[allow(rustdoc::broken_intra_doc_links)] // help text: `[v2]` is what is written
    #[arg(long, conflicts_with_all = ["dry_run", "backup"])]
    pub finalize: bool,
    /// With --dry-run: exit 1 when the plan would write something (what --dry-run does; kept for scripts)
    #[arg(long, requires = "dry_run")]
    pub exit_code: bool,
    /// List pools in pages of this many objects
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk_size: u32,
    /// Offline (-f): the v2 shape, upstream (cidrs stay strings) or cfp (CFP-42466 objects) [default: upstream]
    #[arg(long, value_enum, default_value_t = Schema::Upstream, hide_default_value = true, hide_possible_values = true)]
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
