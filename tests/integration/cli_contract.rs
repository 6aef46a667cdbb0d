//! The output contract (issue 31, docs/design/json-contract.md#formats), over the output matrix
//! generated from the CLI definition (`support::hostile::invocations`: every subcommand × its
//! offline views × every `-o` × `--no-headers`), so that a new command or format cannot skip it.
//! Each run either does what its format promises or is refused: exit 2, one line naming the
//! formats the view prints, nothing on stdout. And each subcommand's `--help` lists exactly the
//! formats some view of it printed.

use crate::support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use support::cli::{output, plugin};
use support::hostile::{Hostile, Invocation, Names, format_name, formats, invocations};

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// `<resource>/<name>` or `<resource>.<group>/<name>`, kubectl's `-o name` (`pod/web-1`,
/// `ciliumpodippool.cilium.io/blue`): lower-case resource, no blank anywhere.
fn is_kubectl_name(line: &str) -> bool {
    let Some((resource, name)) = line.split_once('/') else { return false };
    let (plural_free, group) = resource.split_once('.').unwrap_or((resource, "x"));
    !name.is_empty()
        && !name.contains([' ', '\t'])
        && !plural_free.is_empty()
        && plural_free.chars().all(|c| c.is_ascii_lowercase())
        && !group.is_empty()
        && group.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        // Custom resources carry their group, as kubectl prints them.
        && (!plural_free.starts_with("cilium") || resource.ends_with(".cilium.io"))
}

/// The formats the refusal names (`allowed formats are: a, b`), if `stderr` is a refusal of `format`.
fn refused_formats(stderr: &str, format: &str) -> Option<BTreeSet<String>> {
    let line = stderr.strip_suffix('\n').filter(|l| !l.contains('\n'))?;
    let rest = line.strip_prefix(&format!("error: unable to match a printer suitable for the output format \"{format}\" of "))?;
    let (_, allowed) = rest.split_once(", allowed formats are: ")?;
    Some(allowed.split(", ").map(str::to_string).collect())
}

/// The formats `<subcommand> -h` lists for `-o`.
fn help_formats(subcommand: &str) -> BTreeSet<String> {
    let (code, help, _) = output(plugin().args([subcommand, "-h"]));
    assert_eq!(code, 0, "{subcommand} -h");
    // One line per flag, however the help wraps it.
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    let at = help.find("-o, --output").unwrap_or_else(|| panic!("{subcommand} --help has no -o:\n{help}"));
    let listed = &help[at..];
    // `-o, --output <OUTPUT> One of: table, json, yaml, name [default: table]`
    let start = listed.find("One of: ").expect("the formats listed") + "One of: ".len();
    let end = start + listed[start..].find(" [").unwrap_or(listed.len() - start);
    listed[start..end].split(", ").map(str::to_string).collect()
}

/// What is wrong with a run the view accepted, judged by its format alone (and the table run).
fn supported_run_failures(invocation: &Invocation, ran: &Ran, table: &Ran) -> Vec<String> {
    let mut failed = Vec::new();
    match format_name(&invocation.format) {
        // kubectl's script formats over the JSON document (cli_scripts.rs compares their values).
        "jsonpath-as-json" if !ran.stdout.is_empty() && !serde_json::from_str::<Value>(&ran.stdout).is_ok_and(|v| v.is_array()) => {
            failed.push(format!("not a JSON array: {:.200}", ran.stdout));
        }
        "custom-columns" | "custom-columns-file"
            if !invocation.no_headers
                && ran.stdout.lines().next().map(|l| l.split_whitespace().collect::<Vec<_>>()) != Some(vec!["NAME", "POOL", "OBJECT"]) =>
        {
            failed.push(format!("no header row of the columns asked for: {:.200}", ran.stdout));
        }
        "json" | "yaml" => {
            let doc: Result<Value, String> = if invocation.format == "json" {
                serde_json::from_str(&ran.stdout).map_err(|e| e.to_string())
            } else {
                serde_saphyr::from_str(&ran.stdout).map_err(|e| e.to_string())
            };
            match doc {
                Ok(doc) if doc["schemaVersion"].is_u64() => {}
                // A view printing an edited manifest prints the object (kubectl's --dry-run -o yaml).
                Ok(doc) if invocation.prints_manifest() && doc["apiVersion"].is_string() && doc["kind"].is_string() => {}
                Ok(_) => failed.push("the document has no schemaVersion".to_string()),
                Err(e) => failed.push(format!("not a document ({e}): {:.200}", ran.stdout)),
            }
        }
        "name" => {
            if let Some(line) = ran.stdout.lines().find(|l| !is_kubectl_name(l)) {
                failed.push(format!("not a kubectl name: {line:?}"));
            }
            if table.code <= 1 && !table.stdout.is_empty() && ran.stdout == table.stdout {
                failed.push("-o name prints the table".to_string());
            }
        }
        "wide" if table.code <= 1 && !table.stdout.is_empty() && ran.stdout == table.stdout => {
            failed.push("-o wide prints the same as -o table".to_string());
        }
        "openmetrics" => {
            if !ran.stdout.ends_with("# EOF\n") {
                failed.push(format!("not an OpenMetrics exposition: {:.200}", ran.stdout));
            }
            if table.code <= 1 && ran.stdout == table.stdout {
                failed.push("-o openmetrics prints the table".to_string());
            }
        }
        _ => {}
    }
    failed
}

#[test]
fn every_command_and_format_is_printed_as_documented_or_refused_in_one_line() {
    let hostile = Hostile::plain();
    let dir = tempfile::tempdir().unwrap();
    hostile.write(dir.path());
    let matrix = invocations(&Names { v2_pool: &hostile.pools[0] });
    let key = |i: &Invocation| (i.args.clone(), i.format.clone(), i.no_headers);
    let runs: BTreeMap<_, Ran> = matrix
        .iter()
        .map(|i| {
            let (code, stdout, stderr) = output(plugin().args(i.command_line(dir.path())));
            (key(i), Ran { code, stdout, stderr })
        })
        .collect();
    let mut failed = Vec::new();
    // subcommand -> the formats some view of it printed.
    let mut printed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for invocation in &matrix {
        let ran = &runs[&key(invocation)];
        let what = format!("{:?} -o {}{}", invocation.args, invocation.format, if invocation.no_headers { " --no-headers" } else { "" });
        let table = &runs[&(invocation.args.clone(), "table".to_string(), invocation.no_headers)];
        if ran.code == 2 && invocation.format != "table" && table.code != 2 {
            // Refused: one line naming the view's formats, which do not include this one; nothing written.
            let format = format_name(&invocation.format);
            match refused_formats(&ran.stderr, format) {
                Some(allowed) if allowed.contains("table") && !allowed.contains(format) => {}
                _ => failed.push(format!("{what}: exit 2 without a one-line refusal naming the formats: {:?}", ran.stderr)),
            }
            if !ran.stdout.is_empty() {
                failed.push(format!("{what}: refused but wrote {:.100?}", ran.stdout));
            }
            continue;
        }
        if ran.code > 1 {
            failed.push(format!("{what}: exit {}: {:.200}", ran.code, ran.stderr));
            continue;
        }
        printed.entry(invocation.subcommand().to_string()).or_default().insert(format_name(&invocation.format).to_string());
        failed.extend(supported_run_failures(invocation, ran, table).into_iter().map(|f| format!("{what}: {f}")));
    }
    for (subcommand, formats) in &printed {
        let listed = help_formats(subcommand);
        // Every view offline is in the matrix; live-only views (--watch, migrate --status) print a subset.
        if !formats.is_subset(&listed) || (!["migrate", "usage"].contains(&subcommand.as_str()) && &listed != formats) {
            failed.push(format!("{subcommand} --help lists {listed:?}, its views print {formats:?}"));
        }
    }
    assert!(failed.is_empty(), "{} broken rule(s):\n{}", failed.len(), failed.join("\n"));
}

#[test]
fn the_matrix_covers_every_format() {
    // The matrix runs each `-o` value the CLI accepts: a new format is checked above.
    let all = formats();
    for format in ["table", "wide", "json", "yaml", "name", "openmetrics", "jsonpath", "jsonpath-as-json", "custom-columns"] {
        assert!(all.iter().any(|f| format_name(f) == format), "{format} missing from {all:?}");
    }
    assert!(invocations(&Names { v2_pool: "blue" }).iter().all(|i| all.contains(&i.format)));
}

#[test]
fn a_refused_format_reads_nothing() {
    // Refused before any IO: a missing input file is not even looked at.
    let (code, stdout, stderr) = output(plugin().args(["inspect", "-o", "wide", "-f", "/nonexistent/pools.yaml"]));
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert_eq!(
        stderr,
        "error: unable to match a printer suitable for the output format \"wide\" of inspect, allowed formats are: table, json, yaml, name, jsonpath, jsonpath-as-json, jsonpath-file, custom-columns, custom-columns-file\n"
    );
    // Live-only views are refused before connecting (no kubeconfig here).
    let (code, _, stderr) = output(plugin().args(["usage", "--watch", "-o", "openmetrics"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("of usage --watch, allowed formats are: table, wide, json, yaml, name, jsonpath,"), "{stderr}");
    let (code, _, stderr) = output(plugin().args(["migrate", "--status", "-o", "name"]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("of migrate --status, allowed formats are: table, json, yaml, jsonpath,"), "{stderr}");
}

/// Tables and prose use the terminal's whole width (issue 42: a 100-column cap cut what a wider
/// terminal had room for) and never pass it.
#[test]
fn output_on_a_terminal_fits_its_width() {
    let hostile = Hostile {
        // Long free text: an annotation is not shown, but long node names make check and ip rows long.
        nodes: ["node-with-a-rather-long-name-in-zone-eu-west-1a.compute.internal".into(), "node-2".into()],
        ..Hostile::plain()
    };
    let dir = tempfile::tempdir().unwrap();
    hostile.write(dir.path());
    let matrix = invocations(&Names { v2_pool: &hostile.pools[0] });
    let mut failed = Vec::new();
    for invocation in matrix.iter().filter(|i| i.format == "table" && !i.no_headers && i.subcommand() != "completion") {
        if invocation.prints_input_bytes() || invocation.prints_manifest() {
            continue;
        }
        for columns in [80u16, 100, 200] {
            let shown = support::cli::on_terminal(&invocation.command_line(dir.path()), columns);
            let limit = usize::from(columns);
            // `warning:` and `error:` lines are records (one line each, for grep), as kubectl's are.
            let records = |l: &&str| l.starts_with("warning: ") || l.starts_with("error: ");
            if let Some(line) = shown.lines().filter(|l| !records(l)).find(|l| l.chars().count() > limit) {
                failed.push(format!("{:?} on {columns} columns: a line of {} columns: {line}", invocation.args, line.chars().count()));
            }
        }
    }
    assert!(failed.is_empty(), "{} too wide:\n{}", failed.len(), failed.join("\n"));
}
