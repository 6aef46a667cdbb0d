//! Command-line definitions (clap). kubectl does not pass its own flags to plugins, so the
//! kubectl connection flags are defined here, with kubectl's names and meanings.

mod args;
mod values;

pub use args::*;

use crate::render::Format;
use clap::{Args, Parser, ValueEnum, ValueHint};
use std::time::Duration;
pub use values::Output;
use values::parse_timeout;

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
    /// Path to the kubeconfig file
    #[arg(long, global = true, value_name = "PATH", value_hint = ValueHint::FilePath, help_heading = CONNECTION)]
    pub kubeconfig: Option<String>,
    /// Context(s) to use; several: a fleet
    #[arg(long, global = true, value_name = "NAME", value_delimiter = ',', help_heading = CONNECTION)]
    pub context: Vec<String>,
    /// Read every context, as a fleet
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
    /// Per-request deadline [default: 30s]
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_timeout, help_heading = CONNECTION)]
    pub request_timeout: Option<Duration>,
    /// Largest API answer
    #[arg(long, global = true, value_name = "SIZE", default_value = "128Mi", value_parser = crate::bytes::parse, help_heading = CONNECTION)]
    pub max_response_size: u64,
    /// Namespace of the pods (default: all)
    #[arg(short = 'n', long, global = true, value_name = "NAMESPACE", help_heading = CONNECTION)]
    pub namespace: Option<String>,
    /// Cilium namespace
    #[arg(long, global = true, value_name = "NAMESPACE", default_value = "kube-system", help_heading = CONNECTION)]
    pub cilium_namespace: String,
    /// Files or directories to read ('-': stdin)
    #[arg(short = 'f', long = "filename", global = true, value_name = "PATH", value_hint = ValueHint::AnyPath, help_heading = INPUT_OUTPUT)]
    pub filename: Vec<String>,
    /// Largest -f input
    #[arg(long, global = true, value_name = "SIZE", default_value = "1Gi", value_parser = crate::bytes::parse, help_heading = INPUT_OUTPUT)]
    pub max_input_size: u64,
    /// Longest YAML line
    #[arg(long, global = true, value_name = "SIZE", default_value = "16Mi", value_parser = crate::bytes::parse, help_heading = INPUT_OUTPUT)]
    pub max_line_size: u64,
    /// With -f: each input is one cluster
    #[arg(long, global = true, help_heading = INPUT_OUTPUT)]
    pub fleet: bool,
    /// Output format
    #[arg(short = 'o', long, global = true, value_parser = values::OutputParser { shown: ALL.to_vec() }, default_value = "table", help_heading = INPUT_OUTPUT)]
    pub output: Output,
    /// Do not print table headers (and footers)
    #[arg(long, global = true, help_heading = INPUT_OUTPUT)]
    pub no_headers: bool,
    /// Colour: auto, always or never
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto, hide_default_value = true, hide_possible_values = true, help_heading = INPUT_OUTPUT)]
    pub color: ColorChoice,
    /// Diagnostics on stderr (-v=N)
    #[arg(short = 'v', long = "v", visible_alias = "verbose", global = true, value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "1", default_value_t = 0, hide_default_value = true, help_heading = INPUT_OUTPUT)]
    pub verbosity: u8,
}

// The output contract (docs/design/json-contract.md#formats): the `-o` formats each view prints.
// A command line asking for another is refused before anything is read or written.
// Every view that prints JSON also takes kubectl's script formats over it (`render::script`).
use Format::{CustomColumns as CC, CustomColumnsFile as CCF, JsonPath as JP, JsonPathAsJson as JPJ, JsonPathFile as JPF};
const USAGE: &[Format] =
    &[Format::Table, Format::Wide, Format::Json, Format::Yaml, Format::Name, Format::OpenMetrics, JP, JPJ, JPF, CC, CCF];
const LISTS: &[Format] = &[Format::Table, Format::Wide, Format::Json, Format::Yaml, Format::Name, JP, JPJ, JPF, CC, CCF];
const INSPECT: &[Format] = &[Format::Table, Format::Json, Format::Yaml, Format::Name, JP, JPJ, JPF, CC, CCF];
const DOCUMENTS: &[Format] = &[Format::Table, Format::Json, Format::Yaml, JP, JPJ, JPF, CC, CCF];
/// Every format (the global flag's parser; each subcommand lists its own).
const ALL: &[Format] = USAGE;
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

/// Every view of every subcommand and the formats it prints: the one place they are written.
/// `Command::view` picks a command line's view from it; a subcommand's `-o` help lists what any
/// of its views prints.
const VIEWS: &[(&str, View)] = &[
    // A picture for a person: no document, no names.
    ("usage", View { name: "usage --map", formats: TEXT }),
    ("usage", View { name: "usage --show-blocks", formats: DOCUMENTS }),
    ("usage", View { name: "usage --by node", formats: DOCUMENTS }),
    // A stream of frames is not one OpenMetrics exposition (it ends with `# EOF`): serve is.
    ("usage", View { name: "usage --watch", formats: LISTS }),
    ("usage", View { name: "usage", formats: USAGE }),
    ("inspect", View { name: "inspect", formats: INSPECT }),
    ("check", View { name: "check", formats: LISTS }),
    ("ip", View { name: "ip", formats: LISTS }),
    ("reserve-range", View { name: "reserve-range --list", formats: INSPECT }),
    ("reserve-range", View { name: "reserve-range", formats: DOCUMENTS }),
    // Offline, manifests are printed as they are written (YAML), or files are named.
    ("migrate", View { name: "migrate -f", formats: TEXT }),
    ("migrate", View { name: "migrate --status", formats: DOCUMENTS }),
    ("migrate", View { name: "migrate --dry-run", formats: DOCUMENTS }),
    ("migrate", View { name: "migrate", formats: TEXT }),
    ("completion", View { name: "completion", formats: TEXT }),
    ("serve", View { name: "serve", formats: TEXT }),
    ("version", View { name: "version", formats: DOCUMENTS }),
];

/// The view of [`VIEWS`] named `name`.
fn view_named(name: &str) -> View {
    VIEWS.iter().map(|(_, view)| *view).find(|view| view.name == name).expect("every view is listed in VIEWS")
}

impl Command {
    /// The view this command line selects (`offline`: with `-f`), and the formats it prints.
    pub fn view(&self, offline: bool) -> View {
        view_named(match self {
            Command::Usage(a) if a.map => "usage --map",
            Command::Usage(a) if a.show_blocks => "usage --show-blocks",
            Command::Usage(a) if a.by == ByKind::Node => "usage --by node",
            Command::Usage(a) if a.watch => "usage --watch",
            Command::Usage(_) => "usage",
            Command::Inspect(_) => "inspect",
            Command::Check(_) => "check",
            Command::Ip(_) => "ip",
            Command::ReserveRange(a) if a.list => "reserve-range --list",
            Command::ReserveRange(_) => "reserve-range",
            Command::Migrate(_) if offline => "migrate -f",
            Command::Migrate(a) if a.status => "migrate --status",
            Command::Migrate(a) if a.dry_run != DryRun::None => "migrate --dry-run",
            Command::Migrate(_) => "migrate",
            Command::Completion(_) => "completion",
            Command::Serve(_) => "serve",
            Command::Version(_) => "version",
        })
    }
}

/// Every format some view of `subcommand` prints (what its `-o` help lists), in [`ALL`]'s order.
fn formats_of(subcommand: &str) -> Vec<Format> {
    let views: Vec<&View> = VIEWS.iter().filter(|(of, _)| *of == subcommand).map(|(_, view)| view).collect();
    ALL.iter().copied().filter(|format| views.iter().any(|view| view.formats.contains(format))).collect()
}

/// Gives each subcommand its own copy of the global flags, in their order, whose `-o` help lists
/// only the formats the command prints (clap does not propagate a global flag a subcommand has).
/// The other formats still parse, so that `Context::from_cli` refuses them in one line.
fn with_formats(subcommand: clap::Command) -> clap::Command {
    let formats = formats_of(subcommand.get_name());
    let output = values::OutputParser { shown: formats.clone() };
    let globals = GlobalArgs::augment_args(clap::Command::new("globals"));
    globals.get_arguments().fold(subcommand, |subcommand, arg| {
        // The command's formats on one line (`One of table|json|...`), as kubectl's help lists them.
        let names: Vec<&str> = formats.iter().map(|f| f.name()).collect();
        let arg = match arg.get_id().as_str() {
            "output" => arg.clone().value_parser(output.clone()).help(format!("One of: {}", names.join(", "))).hide_possible_values(true),
            _ => arg.clone(),
        };
        subcommand.arg(arg)
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
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
    use super::values::{parse_percent, parse_timeout};
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
