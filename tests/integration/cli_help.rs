//! `--help` of every command as insta snapshots: the command's own flags first, the kubectl
//! connection flags and the input/output flags under their own headings after them, and an
//! Examples section for every command.

use crate::support;

use support::cli::run;

const COMMANDS: &[&str] = &["usage", "inspect", "check", "ip", "reserve-range", "migrate", "serve", "completion", "version"];

fn help(words: &[&str]) -> String {
    let (code, out, err) = run(words);
    assert_eq!((code, err.as_str()), (0, ""), "{words:?}");
    out
}

#[test]
fn every_command_has_examples_and_its_own_flags_first() {
    for command in COMMANDS {
        let text = help(&[command, "--help"]);
        let at =
            |heading: &str| text.find(&format!("\n{heading}\n")).unwrap_or_else(|| panic!("{command}: no {heading:?} heading:\n{text}"));
        let (own, connection, io, examples) =
            (at("Options:"), at("Cluster connection (kubectl flags):"), at("Input and output (every command):"), at("Examples:"));
        assert!(
            own < connection && connection < io && io < examples,
            "{command}: command flags, then kubectl's, then input/output, then examples:\n{text}"
        );
        assert!(
            text[examples..].contains(&format!("kubectl ciliumpool {command}")) || *command == "completion",
            "{command}: the examples use the command:\n{text}"
        );
        // The global flags are not listed among the command's own.
        assert!(!text[own..connection].contains("--kubeconfig") && !text[own..connection].contains("--output"), "{command}:\n{text}");
    }
}

/// Every example is a comment, then the command(s) it describes: no escape left unexpanded (a
/// literal `\n` once printed), no comment without a command under it.
#[test]
fn every_example_is_a_comment_above_its_commands() {
    for command in COMMANDS {
        for flag in ["-h", "--help"] {
            let text = help(&[command, flag]);
            let examples = &text[text.find("\nExamples:\n").unwrap_or_else(|| panic!("{command} {flag}: no examples"))..];
            assert!(!examples.contains("\\n") && !examples.contains("\\t"), "{command} {flag}: an escape left in:\n{examples}");
            let lines: Vec<&str> = examples.lines().skip(1).take_while(|l| l.is_empty() || l.starts_with("  ")).collect();
            for (i, line) in lines.iter().enumerate() {
                if line.trim_start().starts_with('#') {
                    let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or_default();
                    assert!(next.contains("ciliumpool"), "{command} {flag}: the comment {line:?} has no command under it:\n{examples}");
                }
            }
        }
    }
}

#[test]
fn help_snapshots() {
    insta::assert_snapshot!("root", help(&["--help"]));
    for command in COMMANDS {
        insta::assert_snapshot!(format!("{command}_short"), help(&[command, "-h"]));
    }
    insta::assert_snapshot!("usage_long", help(&["usage", "--help"]));
}

/// Issue 42: `reserve-range --help` was 142 lines, each flag spread over three (a described
/// `--dry-run` value made clap lay out every flag as long help). Like kubectl's: short, a few
/// examples, one line a flag at 80 columns; the explanations are in docs/reserve-range.md.
#[test]
fn reserve_range_help_is_concise_at_80_columns() {
    let at_80 = |flag: &str| support::cli::output(support::cli::plugin().args(["reserve-range", flag]).env("COLUMNS", "80"));
    let (code, out, err) = at_80("--help");
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, at_80("-h").1, "--help is -h");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.len() < 70, "{} lines:\n{out}", lines.len());
    assert!(lines.iter().all(|l| l.chars().count() <= 80), "{out}");
    // Each flag on one line, but for the list of -o formats and at most one flag's help wrapping once.
    let flags = lines.iter().filter(|l| l.trim_start().starts_with('-')).count();
    let formats = lines.iter().skip_while(|l| !l.contains("--output")).skip(1).take_while(|l| l.starts_with("          ")).count();
    let continued = lines.iter().filter(|l| l.starts_with("                ")).count() - formats;
    assert!(flags >= 28 && continued <= 1, "{flags} flags, {continued} continuation lines:\n{out}");
}
