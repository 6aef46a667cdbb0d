//! `__complete`: completion candidates in Cobra's protocol, which kubectl (≥ 1.26) expects from
//! `kubectl_complete-ciliumpool` for `kubectl ciliumpool <TAB>`: one candidate per line (optionally
//! `candidate<TAB>description`), then `:<directive>`. The candidates come from clap's command tree,
//! so they cannot drift from the real flags; pool names are read best-effort with a short deadline.
//! Completion never fails: whatever goes wrong, the answer is just fewer candidates.

use crate::cli::{Cli, GlobalArgs};
use crate::cluster::read::Cluster;
use crate::commands::context::emit;
use crate::model::Pool;
use crate::model::pool::ReservedRange;
use crate::source::Input;
use clap::{Arg, ArgAction, CommandFactory, FromArgMatches, ValueHint};
use std::time::Duration;

/// Cobra's ShellCompDirectiveDefault: the shell may fall back to file names.
const FILE_COMPLETION: u32 = 0;
/// Cobra's ShellCompDirectiveNoFileComp.
const NO_FILE_COMPLETION: u32 = 4;

/// How long a pool lookup may take: a TAB must not hang on an unreachable cluster.
const POOL_LOOKUP_DEADLINE: Duration = Duration::from_secs(2);

/// What to offer for the word being completed.
#[derive(Debug, Default, PartialEq)]
pub struct Completion {
    /// `(candidate, description)`
    pub candidates: Vec<(String, String)>,
    pub directive: u32,
    /// The word is a value the input holds: add those that start with the typed text.
    pub lookup: Option<(Lookup, String)>,
}

/// Values read from the files or the cluster the completed words point at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    /// Pool names (`usage [POOL...]`, `inspect POOL`, `reserve-range POOL`).
    Pools,
    /// The reserved ranges of the pool named before, as `--list` shows them (`--remove`).
    Ranges,
    /// The CIDRs of the pool named before (`--drain`, `--cidr`).
    Cidrs,
    /// The kubeconfig's context names (`--context`, also after `A,` and in `--context=`).
    Contexts,
}

/// The values that complete `typed`: for a list (`--context=a,b`) the last item is completed
/// and what comes before it is kept.
fn candidates_for(typed: &str, values: Vec<String>) -> Vec<(String, String)> {
    let (head, tail) = typed.rfind([',', '=']).map_or(("", typed), |at| typed.split_at(at + 1));
    values.into_iter().filter(|value| value.starts_with(tail)).map(|value| (format!("{head}{value}"), String::new())).collect()
}

/// The context names of the kubeconfig the completed words point at; none on any failure.
fn context_names(completed: &[String]) -> Vec<String> {
    let kubeconfig = global_args(completed).and_then(|global| global.kubeconfig);
    crate::cluster::client::context_names(kubeconfig.as_deref()).unwrap_or_default()
}

/// Prints the candidates for `words` (the last one is being completed).
pub async fn run(words: &[String]) -> anyhow::Result<i32> {
    let mut completion = complete(&cli_tree(), words);
    if let Some((lookup, typed)) = completion.lookup.take() {
        let completed = &words[..words.len().saturating_sub(1)];
        let found = if lookup == Lookup::Contexts {
            context_names(completed)
        } else {
            let pools = tokio::time::timeout(POOL_LOOKUP_DEADLINE, read_pools(completed)).await.unwrap_or_default();
            lookup_values(&pools, lookup, named_pool(completed).as_deref())
        };
        completion.candidates.extend(candidates_for(&typed, found));
    }
    emit(&protocol(&completion))?;
    Ok(0)
}

/// The command tree with global flags propagated to every subcommand.
fn cli_tree() -> clap::Command {
    let mut command = Cli::command();
    command.build();
    command
}

/// Cobra's output format. Newline and TAB are the protocol's separators and pool names are
/// data: each candidate and description is escaped as one word (`escape::word`), so a name can
/// neither add a candidate nor reach the shell's terminal as a control sequence.
fn protocol(completion: &Completion) -> String {
    let mut out = String::new();
    for (candidate, description) in &completion.candidates {
        out.push_str(&crate::escape::word(candidate));
        if !description.is_empty() {
            out.push('\t');
            out.push_str(&crate::escape::field(description));
        }
        out.push('\n');
    }
    out.push_str(&format!(":{}\n", completion.directive));
    out
}

/// The candidates for the last word, given the words before it.
pub fn complete(root: &clap::Command, words: &[String]) -> Completion {
    let (current, completed) = match words.split_last() {
        Some((current, completed)) => (current.as_str(), completed),
        None => ("", &[][..]),
    };
    let mut command = root;
    let mut positionals = 0;
    let mut pending: Option<&Arg> = None;
    let mut after_dashes = false;
    for word in completed {
        if pending.take().is_some() {
            continue;
        }
        if !after_dashes && word == "--" {
            after_dashes = true;
        } else if !after_dashes && word.starts_with('-') && word.len() > 1 {
            pending = flag(command, word).filter(|arg| takes_separate_value(arg, word));
        } else if positionals == 0
            && let Some(sub) = command.find_subcommand(word)
        {
            command = sub;
        } else {
            positionals += 1;
        }
    }
    if let Some(arg) = pending {
        return match arg.get_id().as_str() {
            "remove" => looked_up(Lookup::Ranges, current),
            "drain" | "cidr" => looked_up(Lookup::Cidrs, current),
            "context" => looked_up(Lookup::Contexts, current),
            _ => values(arg, current, ""),
        };
    }
    if !after_dashes && current.starts_with('-') {
        if let Some((name, _)) = current.split_once('=') {
            if flag(command, name).is_some_and(|arg| arg.get_id() == "context") {
                return looked_up(Lookup::Contexts, current);
            }
            return flag(command, name).map_or_else(no_candidates, |arg| values(arg, current, &format!("{name}=")));
        }
        return flags(command, current);
    }
    if positionals == 0 && command.has_subcommands() {
        return subcommands(command, current);
    }
    let mut args = command.get_positionals();
    let positional = args.nth(positionals).or_else(|| command.get_positionals().last().filter(|arg| is_multiple(arg)));
    match positional {
        Some(arg) if is_pool(arg) => looked_up(Lookup::Pools, current),
        Some(arg) => values(arg, current, ""),
        None => no_candidates(),
    }
}

fn looked_up(lookup: Lookup, current: &str) -> Completion {
    Completion { directive: NO_FILE_COMPLETION, lookup: Some((lookup, current.to_string())), ..Completion::default() }
}

fn no_candidates() -> Completion {
    Completion { directive: NO_FILE_COMPLETION, ..Completion::default() }
}

/// The flag a word names: `--long`, `--long=value`, `-s` or `-svalue`.
fn flag<'a>(command: &'a clap::Command, word: &str) -> Option<&'a Arg> {
    if let Some(long) = word.strip_prefix("--") {
        let long = long.split_once('=').map_or(long, |(name, _)| name);
        return command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(long) || arg.get_all_aliases().is_some_and(|a| a.contains(&long)));
    }
    let short = word.strip_prefix('-')?.chars().next()?;
    command.get_arguments().find(|arg| arg.get_short() == Some(short))
}

/// Whether the next word is this flag's value (`-o json`, not `-ojson`, `--output=json` or `-v`).
fn takes_separate_value(arg: &Arg, word: &str) -> bool {
    let inline = if word.starts_with("--") { word.contains('=') } else { word.len() > 2 };
    takes_values(arg) && !inline && !arg.is_require_equals_set()
}

fn takes_values(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
        && !matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count)
}

fn is_multiple(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.max_values() > 1)
}

/// Positional arguments that name pools (`usage [POOL...]`, `inspect [POOL]`, `reserve-range POOL`).
fn is_pool(arg: &Arg) -> bool {
    matches!(arg.get_id().as_str(), "pool" | "pools")
}

/// The values of a flag or positional: its enum values, or file names for paths.
fn values(arg: &Arg, current: &str, prefix: &str) -> Completion {
    let typed = current.strip_prefix(prefix).unwrap_or(current);
    let candidates: Vec<(String, String)> = arg
        .get_possible_values()
        .into_iter()
        .filter(|value| !value.is_hide_set() && value.get_name().starts_with(typed))
        .map(|value| (format!("{prefix}{}", value.get_name()), value.get_help().map(ToString::to_string).unwrap_or_default()))
        .collect();
    let paths = matches!(arg.get_value_hint(), ValueHint::AnyPath | ValueHint::FilePath | ValueHint::DirPath);
    let directive = if paths && candidates.is_empty() { FILE_COMPLETION } else { NO_FILE_COMPLETION };
    Completion { candidates, directive, lookup: None }
}

/// `--long` (and `-s`) flags of a command that start with `current`.
fn flags(command: &clap::Command, current: &str) -> Completion {
    let mut candidates = Vec::new();
    for arg in command.get_arguments().filter(|arg| !arg.is_hide_set() && !arg.is_positional()) {
        let help = first_line(arg.get_help());
        let names = arg.get_long().map(|long| format!("--{long}")).into_iter().chain(arg.get_short().map(|short| format!("-{short}")));
        candidates.extend(names.filter(|name| name.starts_with(current)).map(|name| (name, help.clone())));
    }
    Completion { candidates, directive: NO_FILE_COMPLETION, lookup: None }
}

/// Subcommand names that start with `current`; their visible aliases when no name does.
fn subcommands(command: &clap::Command, current: &str) -> Completion {
    let visible = || command.get_subcommands().filter(|sub| !sub.is_hide_set());
    let mut candidates: Vec<(String, String)> = visible()
        .filter(|sub| sub.get_name().starts_with(current))
        .map(|sub| (sub.get_name().to_string(), first_line(sub.get_about())))
        .collect();
    if candidates.is_empty() {
        for sub in visible() {
            let aliases = sub.get_visible_aliases().filter(|alias| alias.starts_with(current));
            candidates.extend(aliases.map(|alias| (alias.to_string(), first_line(sub.get_about()))));
        }
    }
    Completion { candidates, directive: NO_FILE_COMPLETION, lookup: None }
}

fn first_line(text: Option<&clap::builder::StyledStr>) -> String {
    text.map(|t| t.to_string().lines().next().unwrap_or_default().to_string()).unwrap_or_default()
}

/// The pools of the files or the cluster the completed words point at; none on any failure.
/// Never reads stdin (`-f -`): kubectl hands the completion helper the terminal.
async fn read_pools(completed: &[String]) -> Vec<Pool> {
    let Some(global) = global_args(completed) else { return Vec::new() };
    if global.filename.iter().any(|name| name == "-") {
        return Vec::new();
    }
    match crate::commands::context::input_of(&global) {
        Input::Cluster(options) => match Cluster::connect(&options, global.namespace.as_deref()).await {
            Ok(cluster) => cluster.pools().await.unwrap_or_default(),
            Err(_) => Vec::new(),
        },
        Input::Files { paths, limits } => {
            crate::files::snapshot(&paths, global.namespace.as_deref(), false, crate::files::Pools::Read, limits)
                .map(|snapshot| snapshot.pools)
                .unwrap_or_default()
        }
    }
}

/// The values `lookup` offers, sorted: of the pool `pool` when one is named, else of every pool.
fn lookup_values(pools: &[Pool], lookup: Lookup, pool: Option<&str>) -> Vec<String> {
    let chosen = pools.iter().filter(|p| lookup == Lookup::Pools || pool.is_none_or(|name| p.name == name));
    let cidrs = || chosen.clone().flat_map(|p| p.families.iter().flat_map(|f| f.cidrs.iter()));
    let mut values: Vec<String> = match lookup {
        Lookup::Pools => chosen.clone().map(|p| p.name.clone()).collect(),
        Lookup::Ranges => cidrs().flat_map(|c| c.reserved.iter().map(ReservedRange::to_string)).collect(),
        Lookup::Cidrs => cidrs().map(|c| c.original.clone()).collect(),
        Lookup::Contexts => Vec::new(),
    };
    values.sort();
    values.dedup();
    values
}

/// The POOL argument among the completed words of `reserve-range`.
fn named_pool(completed: &[String]) -> Option<String> {
    let argv = std::iter::once("kubectl-ciliumpool").chain(completed.iter().map(String::as_str));
    let matches = Cli::command().ignore_errors(true).try_get_matches_from(argv).ok()?;
    matches.subcommand_matches("reserve-range")?.get_one::<String>("pool").cloned()
}

/// The global flags among the completed words (`--kubeconfig`, `--context`, `-f`, ...).
fn global_args(completed: &[String]) -> Option<GlobalArgs> {
    let argv = std::iter::once("kubectl-ciliumpool").chain(completed.iter().map(String::as_str));
    let matches = Cli::command().ignore_errors(true).try_get_matches_from(argv).ok()?;
    GlobalArgs::from_arg_matches(&matches).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(words: &[&str]) -> (Vec<String>, u32, Option<(Lookup, String)>) {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let completion = complete(&cli_tree(), &words);
        (completion.candidates.into_iter().map(|(c, _)| c).collect(), completion.directive, completion.lookup)
    }

    #[test]
    fn subcommands_by_prefix_without_the_hidden_one() {
        let (all, directive, _) = offered(&[""]);
        assert!(all.contains(&"usage".to_string()) && all.contains(&"completion".to_string()), "{all:?}");
        assert!(!all.iter().any(|c| c.starts_with("__")), "{all:?}");
        assert_eq!(directive, NO_FILE_COMPLETION);
        assert_eq!(offered(&["us"]).0, ["usage"]);
        assert_eq!(offered(&["util"]).0, ["utilization"]);
    }

    #[test]
    fn flags_of_the_current_subcommand_with_globals() {
        let (flags, _, _) = offered(&["usage", "--"]);
        for flag in ["--by", "--show-blocks", "--fail-above", "--output", "--kubeconfig", "--filename"] {
            assert!(flags.contains(&flag.to_string()), "{flag} missing from {flags:?}");
        }
        assert!(!offered(&["check", "--"]).0.contains(&"--by".to_string()));
        assert_eq!(offered(&["check", "--sev"]).0, ["--severity"]);
    }

    #[test]
    fn enum_values() {
        let (values, directive, _) = offered(&["usage", "-o", ""]);
        let scripts = ["jsonpath", "jsonpath-as-json", "jsonpath-file", "custom-columns", "custom-columns-file"];
        assert_eq!(values, [&["table", "wide", "json", "yaml", "name", "openmetrics"][..], &scripts].concat());
        assert_eq!(directive, NO_FILE_COMPLETION);
        assert_eq!(offered(&["-o", "j"]).0, ["json", "jsonpath", "jsonpath-as-json", "jsonpath-file"]);
        // kubectl's script formats where the view prints JSON, and only there.
        assert_eq!(offered(&["check", "-o", "cu"]).0, ["custom-columns", "custom-columns-file"]);
        assert_eq!(offered(&["completion", "-o", "j"]).0, Vec::<String>::new());
        assert_eq!(offered(&["usage", "--output=y"]).0, ["--output=yaml"]);
        assert_eq!(offered(&["check", "--severity", "w"]).0, ["warning"]);
        assert_eq!(offered(&["completion", "f"]).0, ["fish"]);
    }

    #[test]
    fn files_for_path_flags() {
        assert_eq!(offered(&["usage", "-f", ""]), (vec![], FILE_COMPLETION, None));
        assert_eq!(offered(&["--kubeconfig", "/tm"]).1, FILE_COMPLETION);
    }

    #[test]
    fn pool_positionals_ask_for_pools() {
        let pools = |typed: &str| Some((Lookup::Pools, typed.to_string()));
        assert_eq!(offered(&["usage", "bl"]).2, pools("bl"));
        assert_eq!(offered(&["usage", "blue", "-o", "json", ""]).2, pools(""));
        assert_eq!(offered(&["inspect", "-v", "g"]).2, pools("g"));
        // `-ojson` carries its value; the next word is the pool.
        assert_eq!(offered(&["inspect", "-ojson", ""]).2, pools(""));
        assert_eq!(offered(&["inspect", "blue", ""]), (vec![], NO_FILE_COMPLETION, None));
        assert_eq!(offered(&["version", ""]).2, None);
    }

    #[test]
    fn reserve_range_flags_ask_for_the_pools_ranges_and_cidrs() {
        assert_eq!(offered(&["reserve-range", "blue", "--remove", "10."]).2, Some((Lookup::Ranges, "10.".to_string())));
        assert_eq!(offered(&["reserve-range", "blue", "--drain", ""]).2, Some((Lookup::Cidrs, String::new())));
        assert_eq!(offered(&["reserve-range", "--cidr", ""]).2, Some((Lookup::Cidrs, String::new())));
    }

    #[test]
    fn protocol_lines() {
        let completion = Completion {
            candidates: vec![("usage".into(), "Free addresses".into()), ("x".into(), String::new())],
            directive: 4,
            lookup: None,
        };
        assert_eq!(protocol(&completion), "usage\tFree addresses\nx\n:4\n");
        // A pool name cannot add a candidate, a description or a control sequence.
        let hostile = Completion { candidates: vec![("a\nusage\tforged\x1b]0;t\x07".into(), String::new())], directive: 4, lookup: None };
        assert_eq!(protocol(&hostile), "a\\nusage\\tforged\\x1b]0;t\\x07\n:4\n");
    }

    #[tokio::test]
    async fn values_from_files_and_never_from_stdin() {
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/snapshot");
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pools = read_pools(&words(&["usage", "-f", example])).await;
        assert_eq!(lookup_values(&pools, Lookup::Pools, None), ["batch", "blue", "default", "green"]);
        assert!(read_pools(&words(&["usage", "-f", "-"])).await.is_empty());
        assert!(read_pools(&words(&["usage", "-f", "/nonexistent"])).await.is_empty());
        // The named pool's reserved ranges and CIDRs, as `reserve-range --list` shows them.
        let named = named_pool(&words(&["reserve-range", "-f", example, "blue", "--remove"]));
        assert_eq!(named.as_deref(), Some("blue"));
        assert_eq!(lookup_values(&pools, Lookup::Ranges, named.as_deref()), ["10.40.255.254", "10.41.0.0-10.41.255.255"]);
        assert_eq!(lookup_values(&pools, Lookup::Cidrs, named.as_deref()), ["10.40.0.0/16", "10.41.0.0/16"]);
        assert_eq!(lookup_values(&pools, Lookup::Ranges, Some("green")), ["10.60.0.0-10.60.0.31"]);
    }
}
