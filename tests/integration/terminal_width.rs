//! Tables on a real terminal of 60, 80, 120 and 200 columns, every view of examples/snapshot
//! (issue 42, "tables use the terminal's width"): no line wider than the terminal; at 200 columns
//! nothing is cut or left out; at every width identifiers (names, addresses, CIDRs, kinds, counts:
//! every cell without a space) are shown whole — less only a `Kind/` prefix or DNS suffix the note
//! under the table says was left out — prose is cut only at its end, and no two different values
//! print alike. A table that cannot fit is shown one field a line (`FIELD:  value`), whole.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use support::cli;

const WIDTHS: [u16; 4] = [60, 80, 120, 200];

/// A table as read back: its header and its rows of cells.
#[derive(Debug)]
struct Shown {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// What the notes under the table say was left out: (column or "name", prefix or suffix).
    left_out: Vec<(String, String)>,
    /// Columns were left out (the `…` column).
    marker: bool,
}

fn split(line: &str) -> Vec<String> {
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()
}

/// The table whose header starts with `first` in piped output: header and rows up to a blank line
/// (a row one cell longer than the header ends in the usage bar: its header is "").
fn piped_table(text: &str, first: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines().skip_while(|l| !l.trim_start().starts_with(first));
    let mut header = split(lines.next().unwrap_or_else(|| panic!("no {first} table in:\n{text}")));
    let rows: Vec<Vec<String>> = lines.map(split).take_while(|cells| cells.len() >= header.len()).collect();
    if rows.iter().any(|r| r.len() == header.len() + 1) {
        header.push(String::new());
    }
    (header, rows)
}

/// The table `header` starts in `shown` (a terminal's output), laid out as a table or one field a line.
fn terminal_table(shown: &str, first: &str, labels: &[String]) -> Shown {
    let start = shown.lines().position(|l| l.trim_start().starts_with(first)).unwrap_or_else(|| panic!("no {first} in:\n{shown}"));
    let head = shown.lines().nth(start).unwrap();
    let indent = head.len() - head.trim_start().len();
    let lines: Vec<&str> = shown.lines().skip(start).map(|l| l.get(indent..).unwrap_or("")).collect();
    if head.trim_start().starts_with(&format!("{first}:")) { fields(&lines, labels) } else { columns(&lines) }
}

fn fields(lines: &[&str], labels: &[String]) -> Shown {
    let label_of = |l: &str| labels.iter().find(|h| !h.is_empty() && l.starts_with(&format!("{h}:"))).cloned();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut header: Vec<String> = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        match label_of(line) {
            Some(label) if label == labels[0] => rows.push(vec![line[label.len() + 1..].trim().to_string()]),
            Some(label) => rows.last_mut().unwrap().push(line[label.len() + 1..].trim().to_string()),
            None if line.starts_with(' ') => rows.last_mut().unwrap().last_mut().unwrap().push_str(line.trim()),
            None if line.is_empty() && lines.get(at + 1).is_some_and(|next| label_of(next).as_ref() == Some(&labels[0])) => continue,
            None => break,
        }
        if let Some(label) = label_of(line).filter(|_| rows.len() == 1) {
            header.push(label);
        }
    }
    Shown { header, rows, left_out: Vec::new(), marker: false }
}

fn columns(lines: &[&str]) -> Shown {
    let mut header = split(lines[0]);
    // A wrapped last column goes on under itself.
    let last = lines[0].rfind(header.iter().rev().find(|h| *h != "…").unwrap().as_str()).unwrap();
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut left_out = Vec::new();
    for line in &lines[1..] {
        if let Some(note) = line.strip_prefix("… ") {
            let (what, column) = note.split_once(" left out of every ").expect("a note says what was left out");
            left_out.push((column.to_string(), what.to_string()));
        } else if line.trim().is_empty() || !left_out.is_empty() {
            break;
        } else if line.len() - line.trim_start().len() == last {
            // A wrapped last column: its next line.
            let last = rows.last_mut().unwrap();
            let at = last.len() - 1 - usize::from(last.last().is_some_and(|c| c == "…"));
            last[at].push_str(line.trim());
        } else if split(line).len() >= header.len() {
            rows.push(split(line));
        } else {
            break;
        }
    }
    let marker = header.last().is_some_and(|h| h == "…");
    if marker {
        header.pop();
        rows.iter_mut().for_each(|r| _ = r.pop());
    }
    // The usage bar: a column without a header.
    if rows.iter().any(|r| r.len() == header.len() + 1) {
        header.push(String::new());
    }
    Shown { header, rows, left_out, marker }
}

/// Without whitespace: a wrapped value read back is compared whole.
fn bare(text: &str) -> String {
    text.split_whitespace().collect()
}

/// Checks `args` on examples/snapshot at every width; the table starts with header `first`.
fn check_view(args: &[&str], first: &str) {
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot");
    let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    args.extend(["--color", "never", "-f", snapshot.to_str().unwrap()].map(String::from));
    let (code, piped, _) = cli::output(cli::plugin().args(&args));
    assert!(code <= 1, "{args:?}: exit {code}");
    let (header, rows) = piped_table(&piped, first);
    let prose: BTreeSet<&String> =
        header.iter().enumerate().filter(|(i, _)| rows.iter().any(|r| r[*i].contains(' '))).map(|(_, h)| h).collect();
    let mut failed = Vec::new();
    for width in WIDTHS {
        let shown = cli::on_terminal(&args, width);
        let what = format!("{args:?} at {width} columns:\n{shown}");
        if let Some(line) = shown.lines().find(|l| l.chars().count() > usize::from(width)) {
            failed.push(format!("{what}\n  a line wider than the terminal: {line}"));
        }
        let table = terminal_table(&shown, first, &header);
        if width == 200 {
            if table.marker || !table.left_out.is_empty() || (table.header.len() > 1 && table.header != header) {
                failed.push(format!("{what}\n  something left out at 200 columns: {table:?}"));
            }
            // Laid out as a table, everything the pipe shows is there, in the same order (a
            // wrapped column read back whole), and every line that fits shows as it is (but
            // lists of names, which flow to the width).
            let as_table = table.header.len() == header.len() && !shown.contains(&format!("{first}:"));
            if as_table && !bare(&shown).contains(&bare(&piped)) {
                failed.push(format!("{what}\n  not all of the pipe's output:\n{piped}"));
            }
            let fits = |l: &&str| l.chars().count() <= 200 && !l.starts_with("    ");
            for line in piped.lines().filter(fits).filter(|_| as_table) {
                if !shown.lines().any(|s| s.trim_end() == line.trim_end()) {
                    failed.push(format!("{what}\n  not shown as in a pipe: {line}"));
                }
            }
        }
        failed.extend(compare(&header, &rows, &prose, &table, width).into_iter().map(|f| format!("{what}\n  {f}")));
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The cells of `table` against the piped table's: whole or (prose, below 200 columns) cut at the
/// end; as many different values in each column as in the pipe.
fn compare(header: &[String], rows: &[Vec<String>], prose: &BTreeSet<&String>, table: &Shown, width: u16) -> Vec<String> {
    let mut failed = Vec::new();
    if table.rows.len() != rows.len() {
        return vec![format!("{} rows shown, {} in a pipe: {table:?}", table.rows.len(), rows.len())];
    }
    let full: BTreeMap<&String, usize> = header.iter().enumerate().map(|(i, h)| (h, i)).collect();
    for (at, name) in table.header.iter().enumerate() {
        let Some(&i) = full.get(name) else {
            failed.push(format!("a header not in the pipe's: {name:?}"));
            continue;
        };
        let expected = |cell: &String| {
            let mut cell = cell.clone();
            for (column, what) in &table.left_out {
                if column == name && cell.starts_with(what.as_str()) {
                    cell = cell[what.len()..].to_string();
                } else if column == "name" {
                    cell = cell.replace(what.as_str(), "");
                }
            }
            bare(&cell)
        };
        let mut distinct = (BTreeSet::new(), BTreeSet::new());
        for (full_row, shown_row) in rows.iter().zip(&table.rows) {
            let (want, got) = (expected(&full_row[i]), bare(&shown_row[at]));
            distinct.0.insert(full_row[i].clone());
            distinct.1.insert(got.clone());
            let cut = got.strip_suffix('…').is_some_and(|head| want.starts_with(head) && want != got);
            if got != want && !(cut && prose.contains(name) && width < 200) {
                failed.push(format!("{name}: {got:?} shown for {:?}", full_row[i]));
            }
        }
        if distinct.0.len() != distinct.1.len() {
            failed.push(format!("{name}: {} different values print as {}", distinct.0.len(), distinct.1.len()));
        }
    }
    failed
}

#[test]
fn usage_uses_the_terminals_width() {
    check_view(&["usage"], "POOL");
}

#[test]
fn usage_by_node_uses_the_terminals_width() {
    check_view(&["usage", "--by", "node"], "NODE");
}

#[test]
fn usage_show_blocks_uses_the_terminals_width() {
    check_view(&["usage", "--show-blocks"], "BLOCK");
}

#[test]
fn inspect_uses_the_terminals_width() {
    check_view(&["inspect", "blue"], "CIDR");
}

#[test]
fn check_uses_the_terminals_width() {
    check_view(&["check"], "SEVERITY");
}

#[test]
fn ip_uses_the_terminals_width() {
    // Three answers: one field a line. Four: a table.
    check_view(&["ip", "10.40.5.128", "10.0.0.215", "10.10.0.0"], "ADDRESS");
    check_view(&["ip", "10.40.5.128", "10.0.0.215", "10.10.0.0", "10.41.3.7"], "ADDRESS");
}

#[test]
fn reserve_range_list_uses_the_terminals_width() {
    check_view(&["reserve-range", "--list"], "POOL");
}

/// What a legend line defines: its first word, when the piped table has such a column.
fn legend_labels<'a>(text: &'a str, header: &[String]) -> Vec<&'a str> {
    let label = |l: &'a str| l.split_once("  ").map(|(label, _)| label).filter(|label| header.iter().any(|h| h == label));
    text.lines().skip_while(|l| !l.is_empty()).filter_map(label).collect()
}

/// Issue 42: under a table a narrow terminal left columns out of, the legend defines only the
/// columns printed and one line names those left out and how to see them; at full width no
/// such line.
#[test]
fn the_legend_defines_only_the_printed_columns() {
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot");
    let mut failed = Vec::new();
    for (view, first) in [(&["usage"][..], "POOL"), (&["usage", "--by", "node"], "NODE"), (&["usage", "--show-blocks"], "BLOCK")] {
        let mut args: Vec<String> = view.iter().map(|a| a.to_string()).collect();
        args.extend(["--color", "never", "-f", snapshot.to_str().unwrap()].map(String::from));
        let (_, piped, piped_notes) = cli::output(cli::plugin().args(&args));
        let (header, _) = piped_table(&piped, first);
        assert!(!legend_labels(&format!("\n{piped_notes}"), &header).is_empty(), "{view:?}: no legend in a pipe:\n{piped_notes}");
        let mut shed_somewhere = false;
        for width in WIDTHS {
            let shown = cli::on_terminal(&args, width);
            let table = terminal_table(&shown, first, &header);
            let printed: Vec<&String> = if table.header.len() == 1 { header.iter().collect() } else { table.header.iter().collect() };
            let left_out: Vec<&str> = header.iter().filter(|h| !h.is_empty() && !printed.contains(h)).map(String::as_str).collect();
            shed_somewhere |= !left_out.is_empty();
            let what = format!("{view:?} at {width} columns:\n{shown}");
            if let Some(label) = legend_labels(&shown, &header).into_iter().find(|l| left_out.contains(l)) {
                failed.push(format!("{what}\n  the legend defines {label}, which is not printed"));
            }
            let note: Vec<&str> =
                shown.lines().skip_while(|l| !l.starts_with("Not shown for width:")).take_while(|l| !l.is_empty()).collect();
            let note = note
                .iter()
                .take(1)
                .chain(note.iter().skip(1).take_while(|l| l.starts_with(' ')))
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ");
            let expected = if left_out.is_empty() {
                String::new()
            } else {
                format!("Not shown for width: {}; widen the terminal or use -o wide", left_out.join(", "))
            };
            if note != expected {
                failed.push(format!("{what}\n  the left-out line is {note:?}, expected {expected:?}"));
            }
        }
        assert!(shed_somewhere, "{view:?}: no width left a column out; the test proves nothing");
    }
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// Issue 42: `inspect` on a terminal of 60 and 80 columns never breaks an annotation key, and
/// wraps a value only after its spaces and commas.
#[test]
fn inspect_wraps_annotations_between_words() {
    let key = "kubectl.kubernetes.io/last-applied-configuration";
    let json = r#"{"apiVersion":"cilium.io/v2alpha1","kind":"CiliumPodIPPool","metadata":{"name":"blue"}}"#;
    let description = "pods of the blue team, the ones in eu-west-1, and their batch jobs, kept apart";
    let dir = tempfile::tempdir().unwrap();
    let pools = dir.path().join("pools.yaml");
    let yaml = format!(
        "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  annotations:\n    ipam.cilium.io/skip-masquerade: \"true\"\n    \
         example.com/description: \"{description}\"\n    {key}: '{json}'\nspec: {{ipv4: {{cidrs: [10.40.0.0/16], maskSize: 24}}}}\n"
    );
    std::fs::write(&pools, yaml).unwrap();
    let args: Vec<String> = ["inspect", "blue", "--color", "never", "-f", pools.to_str().unwrap()].map(String::from).into();
    for width in [60, 80] {
        let shown = cli::on_terminal(&args, width);
        let lines: Vec<&str> =
            shown.lines().skip_while(|l| !l.starts_with("Annotations:")).take_while(|l| !l.starts_with("Migrated:")).collect();
        let text = lines.join("\n");
        assert!(lines.iter().all(|l| l.chars().count() <= usize::from(width)), "{width}:\n{text}");
        for whole in [key, "example.com/description", "ipam.cilium.io/skip-masquerade=true"] {
            assert!(lines.iter().any(|l| l.contains(whole)), "{width}: {whole} split:\n{text}");
        }
        // Read back, the value lines give the values: joined with a space (description) or
        // nothing (the JSON, broken after commas).
        let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
        assert!(words.join(" ").contains(description), "{width}: the description broken inside a word:\n{text}");
        assert!(words.concat().contains(json), "{width}:\n{text}");
        let json_lines: Vec<&str> = lines.iter().map(|l| l.trim()).filter(|l| l.starts_with('{') || l.starts_with('"')).collect();
        let (last, before) = json_lines.split_last().expect("the JSON wraps");
        assert!(
            !before.is_empty() && before.iter().all(|l| l.ends_with(',')) && last.ends_with("}}"),
            "{width}: the JSON broken after commas:\n{text}"
        );
    }
}
