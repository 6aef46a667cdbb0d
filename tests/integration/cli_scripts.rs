//! kubectl's script formats (issue 42, item 4): `-o jsonpath=…`, `-o jsonpath-as-json=…`,
//! `-o custom-columns=…` and their `-file` forms print the values of the document `-o json` prints
//! (each expected value read from that document here, never hard-coded); a bad script is one
//! line, exit 2, nothing on stdout; data never reaches the terminal raw.

use crate::support;

use serde_json::Value;
use std::path::PathBuf;
use support::cli::{json_of, run};

fn example() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/snapshot").display().to_string()
}

/// stdout of a run that must succeed (exit 0 or 1, as `check` finding problems).
fn stdout_of(words: &[&str]) -> String {
    let (code, stdout, stderr) = run(words);
    assert!(code <= 1, "{words:?}: exit {code}: {stderr}");
    stdout
}

/// `words` with `-o FORMAT -f <the example>`.
fn with(words: &[&str], format: &str) -> Vec<String> {
    let ex = example();
    words.iter().copied().chain(["-o", format, "-f", &ex]).map(str::to_string).collect()
}

fn json(words: &[&str]) -> Value {
    let line = with(words, "json");
    json_of(&stdout_of(&line.iter().map(String::as_str).collect::<Vec<_>>()))
}

fn scripted(words: &[&str], format: &str) -> String {
    let line = with(words, format);
    stdout_of(&line.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A JSON value as jsonpath prints it: a string as it is, anything else as JSON.
fn text(value: &Value) -> String {
    value.as_str().map_or_else(|| value.to_string(), str::to_string)
}

#[test]
fn jsonpath_prints_the_values_of_the_json_document() {
    let doc = json(&["usage"]);
    let pools = doc["pools"].as_array().unwrap();
    let names: Vec<String> = pools.iter().map(|p| text(&p["name"])).collect();
    // Several results joined by a space, as kubectl does.
    assert_eq!(scripted(&["usage"], "jsonpath={.pools[*].name}"), names.join(" "));
    let shown = scripted(&["usage"], r#"jsonpath={range .pools[*]}{.name}{"\t"}{.families[0].utilization}{"\n"}{end}"#);
    assert!(shown.ends_with('\n'), "{shown}");
    let lines: Vec<(&str, &str)> = shown.lines().map(|l| l.split_once('\t').expect("a TAB between the fields")).collect();
    assert_eq!(lines.len(), pools.len(), "{shown}");
    for ((name, utilization), pool) in lines.into_iter().zip(pools) {
        assert_eq!(name, text(&pool["name"]));
        // The printed number is the document's (serde_json's reader here rounds the last digit).
        let expected = pool["families"][0]["utilization"].as_f64().unwrap();
        assert!((utilization.parse::<f64>().unwrap() - expected).abs() < 1e-12, "{utilization} {expected}");
    }
    let blue = pools.iter().find(|p| p["name"] == "blue").unwrap();
    let free: Vec<String> = blue["families"].as_array().unwrap().iter().map(|f| text(&f["freeAddresses"])).collect();
    assert_eq!(scripted(&["usage"], r#"jsonpath={.pools[?(@.name=="blue")].families[*].freeAddresses}"#), free.join(" "));
    // jsonpath-as-json: the same values as one JSON array.
    let as_json = json_of(&scripted(&["usage"], "jsonpath-as-json={.pools[*].name}"));
    assert_eq!(as_json, Value::Array(pools.iter().map(|p| p["name"].clone()).collect()));
}

#[test]
fn custom_columns_have_one_row_per_element_of_the_command_rows() {
    let doc = json(&["usage"]);
    let shown = scripted(&["usage"], "custom-columns=POOL:.name,FREE:.families[*].freeAddresses,MISSING:.families[0].nothing");
    let mut lines = shown.lines();
    assert_eq!(lines.next().unwrap().split_whitespace().collect::<Vec<_>>(), ["POOL", "FREE", "MISSING"]);
    for pool in doc["pools"].as_array().unwrap() {
        let free: Vec<String> = pool["families"].as_array().unwrap().iter().map(|f| text(&f["freeAddresses"])).collect();
        let expected = [text(&pool["name"]), free.join(","), "<none>".to_string()];
        assert_eq!(lines.next().unwrap().split_whitespace().collect::<Vec<_>>(), expected, "{shown}");
    }
    assert_eq!(lines.next(), None, "{shown}");
    // --no-headers: the rows alone.
    let ex = example();
    let bare = stdout_of(&["usage", "-o", "custom-columns=POOL:.name", "--no-headers", "-f", &ex]);
    let names: Vec<String> = doc["pools"].as_array().unwrap().iter().map(|p| text(&p["name"]) + "\n").collect();
    assert_eq!(bare, names.concat());
}

/// Every view that prints JSON takes both formats, over its own document and rows.
#[test]
fn every_json_view_takes_jsonpath_and_custom_columns() {
    let views: [(&[&str], Option<&str>); 7] = [
        (&["usage"], Some("pools")),
        (&["usage", "--by", "node"], Some("nodes")),
        (&["inspect", "blue"], Some("pools")),
        (&["check"], Some("problems")),
        (&["ip", "10.40.3.17", "10.10.0.1"], Some("addresses")),
        (&["reserve-range", "--list"], Some("reservedRanges")),
        (&["version", "--client"], None),
    ];
    for (words, rows) in views {
        let doc = json(words);
        assert_eq!(scripted(words, "jsonpath={.schemaVersion}"), text(&doc["schemaVersion"]), "{words:?}");
        let table = scripted(words, "custom-columns=V:.schemaVersion,K:.kind");
        let count = rows.map_or(1, |key| doc[key].as_array().unwrap().len());
        assert!(count > 0, "{words:?}: the example has rows");
        assert_eq!(table.lines().count(), count + 1, "{words:?}: {table}");
        if rows.is_some() {
            // The rows are the elements: the document's own fields are not theirs.
            assert!(table.lines().skip(1).all(|l| l.starts_with("<none>")), "{words:?}: {table}");
        }
    }
    // The edited manifest `reserve-range POOL RANGE -f` prints is what the script reads.
    let edited = scripted(&["reserve-range", "blue", "10.40.255.250"], "jsonpath={.metadata.name} {.kind}");
    assert_eq!(edited, "blue CiliumPodIPPool");
}

#[test]
fn script_files_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("t.jsonpath");
    std::fs::write(&template, "{range .problems[*]}{.kind}{\"\\n\"}{end}").unwrap();
    let columns = dir.path().join("c.txt");
    std::fs::write(&columns, "KIND      OBJECT\n.kind     .object\n").unwrap();
    let doc = json(&["check"]);
    let kinds: String = doc["problems"].as_array().unwrap().iter().map(|p| text(&p["kind"]) + "\n").collect();
    assert_eq!(scripted(&["check"], &format!("jsonpath-file={}", template.display())), kinds);
    let table = scripted(&["check"], &format!("custom-columns-file={}", columns.display()));
    assert_eq!(table.lines().next().unwrap().split_whitespace().collect::<Vec<_>>(), ["KIND", "OBJECT"]);
    let rows: Vec<Vec<String>> = table.lines().skip(1).map(|l| l.split_whitespace().map(str::to_string).collect()).collect();
    let expected: Vec<Vec<String>> =
        doc["problems"].as_array().unwrap().iter().map(|p| vec![text(&p["kind"]), text(&p["object"])]).collect();
    assert_eq!(rows, expected);
}

/// One `error:` line naming the fault, exit 2, nothing on stdout — before anything is read (the
/// `-f` path does not exist).
#[test]
fn bad_scripts_are_refused_in_one_line() {
    let cases: [(&[&str], &str); 9] = [
        (&["usage", "-o", "jsonpath={.pools[*].name"], "error: error parsing jsonpath {.pools[*].name: unclosed action: no '}'"),
        (
            &["usage", "-o", "jsonpath={range .pools[*]}{.name}"],
            "error: error parsing jsonpath {range .pools[*]}: a {range} without an {end}",
        ),
        (
            &["usage", "-o", "jsonpath={pools}"],
            "error: error parsing jsonpath {pools}: unrecognized expression \"pools\": a path starts with '.', '[', '$' or '@'",
        ),
        (&["usage", "-o", "jsonpath"], "error: template format specified but no template given: -o jsonpath=TEMPLATE"),
        (
            &["check", "-o", "custom-columns=KIND:.kind,OBJECT"],
            "error: unexpected custom-columns spec: OBJECT, expected <header>:<json-path-expr>",
        ),
        (
            &["check", "-o", "custom-columns="],
            "error: custom-columns format specified but no custom columns given: -o custom-columns=NAME:.path,...",
        ),
        (
            &["check", "-o", "jsonpath-file=/nonexistent/t"],
            "error: cannot read -o jsonpath-file file /nonexistent/t: No such file or directory (os error 2)",
        ),
        (
            &["usage", "-o", "json={.x}"],
            "error: -o json takes no argument after '=': only jsonpath, jsonpath-as-json, jsonpath-file, custom-columns and custom-columns-file do",
        ),
        (
            &["usage", "--map", "blue", "-o", "jsonpath={.x}"],
            "error: unable to match a printer suitable for the output format \"jsonpath\" of usage --map, allowed formats are: table",
        ),
    ];
    for (words, expected) in cases {
        let mut line = words.to_vec();
        line.extend(["-f", "/nonexistent/snapshot"]);
        let (code, stdout, stderr) = run(&line);
        assert_eq!((code, stdout.as_str(), stderr.as_str()), (2, "", format!("{expected}\n").as_str()), "{words:?}");
    }
    // A bad path inside a template names the expression.
    let (code, stdout, stderr) = run(&["usage", "-o", "jsonpath={.pools.}", "-f", "/nonexistent"]);
    assert_eq!((code, stdout.as_str()), (2, ""));
    assert!(
        stderr.starts_with("error: error parsing jsonpath {.pools.}: \".pools.\" is no JSONPath: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn values_with_control_characters_never_reach_the_terminal_raw() {
    let hostile = support::hostile::Hostile {
        pools: ["a\x1b[2J\nb\u{202e}".into(), "green".into(), "legacy".into()],
        ..support::hostile::Hostile::plain()
    };
    let dir = tempfile::tempdir().unwrap();
    hostile.write(dir.path());
    let path = dir.path().display().to_string();
    for format in [
        "jsonpath={.pools[*].name}",
        "jsonpath={range .pools[*]}{.name}{\"\\n\"}{end}",
        "custom-columns=NAME:.name",
        "jsonpath-as-json={..name}",
    ] {
        let (code, stdout, stderr) = run(&["usage", "-o", format, "-f", &path]);
        assert_eq!(code, 0, "{format}: {stderr}");
        assert!(!stdout.chars().any(support::hostile::is_raw_control), "{format}: {stdout:?}");
        assert!(stdout.contains(r"a\x1b[2J\nb\u{202e}") || stdout.contains(r"a\u001b[2J\nb\u202e"), "{format}: {stdout:?}");
    }
}
