//! docs/inputs.md says which commands work on files and which need a cluster: every row of its
//! table is run offline (in a scratch copy of examples/) and must end with the documented exit
//! code, and a refusal with the documented message.

use std::path::Path;

const PAGE: &str = "docs/inputs.md";
const HEADING: &str = "## What works on files, and what needs a cluster";

/// A row: the command (after `kubectl ciliumpool`), its exit code, and the refusal message if it
/// is refused.
struct Row {
    args: Vec<String>,
    exit: i32,
    refusal: Option<String>,
}

/// The text between the first pair of backticks of `cell`.
fn quoted(cell: &str) -> Option<&str> {
    let start = cell.find('`')? + 1;
    Some(&cell[start..start + cell[start..].find('`')?])
}

fn rows(page: &str) -> Vec<Row> {
    let section = &page[page.find(HEADING).expect("the section exists")..];
    let table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).skip(2);
    table
        .map(|line| {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "{line}");
            let refusal = cells[2].strip_prefix("needs a cluster: ").map(|r| quoted(r).expect("a quoted message").to_string());
            Row {
                args: quoted(cells[0]).expect("a quoted command").split_whitespace().map(String::from).collect(),
                exit: cells[1].parse().expect("an exit code"),
                refusal,
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() { copy_dir(&path, &target) } else { std::fs::copy(&path, &target).map(drop).unwrap() }
    }
}

#[test]
fn the_table_of_what_works_offline_is_true() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE)).unwrap();
    let rows = rows(&page);
    assert!(rows.len() >= 10, "the table lists every command");
    // Every subcommand that takes input is in the table.
    for command in ["usage", "inspect", "check", "ip", "reserve-range", "migrate", "serve", "version"] {
        assert!(rows.iter().any(|r| r.args[0] == command), "{command} is missing from the table");
    }
    let scratch = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"), &scratch.path().join("examples"));
    let before = std::fs::read(scratch.path().join("examples/snapshot/pools.yaml")).unwrap();
    for row in rows {
        let out = assert_cmd::cargo::cargo_bin_cmd!("kubectl-ciliumpool")
            .current_dir(scratch.path())
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .args(&row.args)
            .output()
            .unwrap();
        let (code, stderr) = (out.status.code().unwrap(), String::from_utf8_lossy(&out.stderr));
        assert_eq!(code, row.exit, "{:?}: {stderr}", row.args);
        if let Some(message) = &row.refusal {
            assert_eq!(stderr, format!("error: {message}\n"), "{:?}", row.args);
            assert!(out.stdout.is_empty(), "{:?} printed nothing", row.args);
        } else {
            assert!(!out.stdout.is_empty(), "{:?} works: it prints its result", row.args);
        }
    }
    assert_eq!(std::fs::read(scratch.path().join("examples/snapshot/pools.yaml")).unwrap(), before, "no row writes");
}

/// Issue 42: the page's first paragraph names the read commands that work on a snapshot; each of
/// them does (exit 0, or 1 for what `check` finds), offline on examples/snapshot.
#[test]
fn the_commands_the_first_paragraph_names_work_on_a_snapshot() {
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(PAGE)).unwrap();
    let start = page.find("Every read command (").expect("the first paragraph") + "Every read command (".len();
    let named = &page[start..start + page[start..].find(')').unwrap()];
    let commands: Vec<&str> = named.split(", ").map(|c| c.trim_matches('`')).collect();
    assert!(commands.len() >= 5, "{named}");
    for command in commands {
        let out = assert_cmd::cargo::cargo_bin_cmd!("kubectl-ciliumpool")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .args(command.split_whitespace())
            // `ip` asks about an address.
            .args(if command == "ip" { &["10.40.5.128"][..] } else { &[] })
            .args(["-f", "examples/snapshot"])
            .output()
            .unwrap();
        let code = out.status.code().unwrap();
        assert!(code <= 1, "{command} -f examples/snapshot: exit {code}: {}", String::from_utf8_lossy(&out.stderr));
    }
}
