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

#[test]
fn help_snapshots() {
    insta::assert_snapshot!("root", help(&["--help"]));
    for command in COMMANDS {
        insta::assert_snapshot!(format!("{command}_short"), help(&[command, "-h"]));
    }
    insta::assert_snapshot!("usage_long", help(&["usage", "--help"]));
}
