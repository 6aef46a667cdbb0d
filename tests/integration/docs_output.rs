//! Docs are part of the product: every console example of every page of docs/ and of
//! examples/README.md that reads files (`-f`) is run and compared with what it shows, and so is
//! the README's sample. A console example is a `$ kubectl ciliumpool ...` line inside a fenced
//! block (any info string), followed by its output up to the next `$ ` line or the fence; a last
//! output line `[exit N]` is the exit code, a line `...` stands for any lines. Each block runs in
//! its own scratch directory holding a copy of examples/ (and, for the GitOps example, a
//! `gitops/` copy of the example's pools), through `sh -c`, so pipes work and `--in-place` edits
//! only the copy. Plain commands of a ```sh block that read the repository's examples/ (as
//! examples/README.md lists them) must run: exit 0 or 1. Live-cluster examples (no `-f`) are not run here. Refresh with
//! `python3 tools/refresh-docs.py` after `cargo build`.

use std::path::{Path, PathBuf};
use std::process::Command;

const PROMPT: &str = "$ kubectl ciliumpool ";
const BINARY: &str = env!("CARGO_BIN_EXE_kubectl-ciliumpool");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose examples are checked.
fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.push(root().join("examples/README.md"));
    pages
}

#[derive(Debug)]
struct Example {
    /// 1-based line of the command.
    line: usize,
    command: String,
    /// The documented output; `None` for a plain command of a ```sh block (it only has to run).
    output: Option<Vec<String>>,
    exit: Option<i32>,
}

/// The examples of a page, grouped by fenced block (a block shares one scratch directory).
fn examples(markdown: &str) -> Vec<Vec<Example>> {
    let mut blocks = Vec::new();
    let mut fence: Option<(String, Vec<Example>)> = None;
    // Lines after a `$ ` command that is not the plugin's belong to no example.
    let mut in_other = false;
    for (i, line) in markdown.lines().enumerate() {
        if let Some(info) = line.strip_prefix("```") {
            match fence.take() {
                Some((_, examples)) => blocks.push(examples),
                None => fence = Some((info.trim().to_string(), Vec::new())),
            }
            in_other = false;
            continue;
        }
        let Some((info, examples)) = fence.as_mut() else { continue };
        if let Some(command) = line.strip_prefix(PROMPT) {
            examples.push(Example { line: i + 1, command: command.to_string(), output: Some(Vec::new()), exit: None });
            in_other = false;
        } else if line.starts_with("$ ") {
            in_other = true;
        } else if info == "sh"
            && let Some(command) = line.strip_prefix("kubectl ciliumpool ").filter(|c| c.contains(" -f examples/"))
        {
            examples.push(Example { line: i + 1, command: command.to_string(), output: None, exit: None });
        } else if !in_other && let Some(Example { output: Some(lines), .. }) = examples.last_mut() {
            lines.push(line.to_string());
        }
    }
    for examples in &mut blocks {
        for example in examples.iter_mut() {
            let Some(lines) = example.output.as_mut() else { continue };
            if let Some(code) = lines.last().and_then(|l| l.strip_prefix("[exit ")).and_then(|l| l.strip_suffix(']')) {
                example.exit = Some(code.parse().expect("[exit N] holds a number"));
                lines.pop();
            }
        }
        examples.retain(|e| reads_files(&e.command));
    }
    blocks.retain(|b| !b.is_empty());
    blocks
}

fn reads_files(command: &str) -> bool {
    command.split_whitespace().any(|w| w == "-f" || w == "--filename" || w.starts_with("--filename="))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A scratch directory with what the examples read.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&root().join("examples"), &dir.path().join("examples"));
    std::fs::create_dir(dir.path().join("gitops")).unwrap();
    std::fs::copy(root().join("examples/snapshot/pools.yaml"), dir.path().join("gitops/pools.yaml")).unwrap();
    dir
}

/// Exit code and stdout then stderr, trailing blanks trimmed per line, as the refresher writes them.
fn run(dir: &Path, command: &str) -> (i32, Vec<String>) {
    let script = format!("'{BINARY}' --color=never {command}");
    let out = Command::new("sh").arg("-c").arg(&script).current_dir(dir).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text.trim_end_matches('\n').lines().map(|l| l.trim_end().to_string()).collect())
}

/// Documented lines against real ones; a documented `...` line stands for any lines.
fn matches(documented: &[String], real: &[String]) -> bool {
    match documented.split_first() {
        None => real.is_empty(),
        Some((first, rest)) if first == "..." => (0..=real.len()).any(|skip| matches(rest, &real[skip..])),
        Some((first, rest)) => real.split_first().is_some_and(|(r, real_rest)| r == first && matches(rest, real_rest)),
    }
}

/// Lines that are offline console examples, counted without the parser above.
fn present(markdown: &str) -> usize {
    markdown
        .lines()
        .filter(|l| (l.starts_with(PROMPT) && reads_files(l)) || (l.starts_with("kubectl ciliumpool ") && l.contains(" -f examples/")))
        .count()
}

#[test]
fn docs_show_real_output() {
    let (mut checked, mut expected, mut failures) = (0, 0, Vec::new());
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        expected += present(&text);
        let name = page.strip_prefix(root()).unwrap().display().to_string();
        for block in examples(&text) {
            let dir = scratch();
            for example in block {
                checked += 1;
                let (code, real) = run(dir.path(), &example.command);
                let at = format!("{name}:{}: `kubectl ciliumpool {}`", example.line, example.command);
                match &example.output {
                    None if code != 0 && code != 1 => failures.push(format!("{at} does not run (exit {code}):\n{}", real.join("\n"))),
                    None => {}
                    Some(documented) => {
                        if !matches(documented, &real) {
                            failures.push(format!("{at} is stale; run tools/refresh-docs.py. It prints:\n{}", real.join("\n")));
                        }
                        if let Some(want) = example.exit.filter(|&want| want != code) {
                            failures.push(format!("{at} documents [exit {want}] but exits {code}"));
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} example(s) differ:\n\n{}", failures.len(), failures.join("\n\n"));
    assert_eq!(checked, expected, "every offline example present in the pages is checked");
    // Raise with the pages: a parser that stops finding examples must not pass quietly.
    assert!(checked >= 27, "the pages hold {checked} offline examples; expected at least 27");
}

#[test]
fn parser_reads_exit_lines_ellipses_and_plain_commands() {
    let page = "```\n$ kubectl ciliumpool usage -f x\nline\n[exit 1]\n$ git diff\n+ changed\n$ kubectl ciliumpool check\nlive\n```\n```sh\nkubectl ciliumpool check -f examples/snapshot\n```\n";
    let blocks = examples(page);
    assert_eq!(blocks.len(), 2);
    assert_eq!((blocks[0].len(), blocks[0][0].line, blocks[0][0].exit), (1, 2, Some(1)));
    assert_eq!(blocks[0][0].output.as_deref(), Some(&["line".to_string()][..]));
    assert!(blocks[1][0].output.is_none());
    assert_eq!(present(page), 2);
    let lines = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&lines(&["a", "...", "d"]), &lines(&["a", "b", "c", "d"])));
    assert!(matches(&lines(&["...", "d"]), &lines(&["d"])));
    assert!(!matches(&lines(&["a", "...", "d"]), &lines(&["a", "b", "c"])));
    assert!(!matches(&lines(&["a"]), &lines(&["a", "b"])));
}

#[test]
fn readme_sample_is_real() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let sample = readme.split("```text\n").nth(1).and_then(|s| s.split("\n```").next()).expect("README has a text sample");
    let (_, real) = run(&root(), "usage -f examples/snapshot");
    assert!(real.join("\n").starts_with(sample), "README sample differs from `usage -f examples/snapshot`:\n{}", real.join("\n"));
}
