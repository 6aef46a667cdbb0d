//! Docs are part of the product: every offline example in docs/*.md (a ```console block with
//! `$ kubectl ciliumpool ... -f ...`) must show what the current code prints, and so must the
//! README's sample. Refresh with `python3 tools/refresh-docs.py` after `cargo build`.

use assert_cmd::cargo::cargo_bin_cmd;
use std::path::PathBuf;

const PROMPT: &str = "$ kubectl ciliumpool ";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// stdout and stderr of the plugin, trailing blanks trimmed per line, as the refresher writes them.
fn output_of(args: &[String]) -> String {
    let out = cargo_bin_cmd!("kubectl-ciliumpool").current_dir(root()).args(args).arg("--color=never").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    text.trim_end_matches('\n').lines().map(str::trim_end).collect::<Vec<_>>().join("\n")
}

/// (command arguments, documented output) for every offline example of a markdown text.
fn examples(markdown: &str) -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    for block in markdown.split("```console\n").skip(1) {
        let body = block.split("\n```").next().unwrap_or_default();
        let mut current: Option<(Vec<String>, Vec<&str>)> = None;
        for line in body.lines() {
            if let Some(command) = line.strip_prefix(PROMPT) {
                found.extend(current.take());
                current = Some((command.split_whitespace().map(str::to_string).collect(), Vec::new()));
            } else if let Some((_, lines)) = current.as_mut() {
                lines.push(line);
            }
        }
        found.extend(current);
    }
    found
        .into_iter()
        .filter(|(args, _)| args.iter().any(|a| a == "-f"))
        .map(|(args, lines)| (args, lines.join("\n")))
        .collect()
}

#[test]
fn docs_show_real_output() {
    let mut checked = 0;
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (args, documented) in examples(&text) {
            assert_eq!(output_of(&args), documented, "{}: `kubectl ciliumpool {}` is stale; run tools/refresh-docs.py", path.display(), args.join(" "));
            checked += 1;
        }
    }
    assert!(checked >= 5, "expected the docs to hold offline examples, found {checked}");
}

#[test]
fn readme_sample_is_real() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let sample = readme.split("```text\n").nth(1).and_then(|s| s.split("\n```").next()).expect("README has a text sample");
    let real = output_of(&["usage".into(), "-f".into(), "examples/snapshot".into()]);
    assert!(real.starts_with(sample), "README sample differs from `usage -f examples/snapshot`:\n{real}");
}
