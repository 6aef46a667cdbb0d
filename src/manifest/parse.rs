//! Parsing a manifest's text: sniffing JSON from YAML as kubectl does, the YAML parser's options
//! and limits (alias bombs, nesting), and its refusals in one sentence naming the file and line.

use crate::error::input;
use anyhow::Result;
use serde_json::Value;

/// The text's value when it is one JSON value; `None` for YAML. What looks like JSON but is not
/// one JSON value is YAML when the YAML parser reads it, as kubectl does: flow-style YAML
/// (`{kind: List, items: []}`), `---`-separated JSON documents, numbers JSON cannot hold
/// (`1e400`). Otherwise the JSON error is reported, naming the file and line.
pub(super) fn as_json(text: &str, name: &str) -> Result<Option<Value>> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return Ok(None);
    }
    match serde_json::from_str::<crate::json::Strict>(text) {
        Ok(strict) => Ok(Some(strict.0)),
        Err(e) => not_json(text, name, e).map(|()| None),
    }
}

/// Whether `text` is one JSON value, checked as [`as_json`] checks it (a repeated key is refused,
/// what YAML reads is YAML) but not built: an edit that reads only some fields of it
/// (`json_patch`) must not cost a tree of all of it.
pub(super) fn is_json(text: &str, name: &str) -> Result<bool> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return Ok(false);
    }
    match serde_json::from_str::<crate::json::StrictChecked>(text) {
        Ok(_) => Ok(true),
        Err(e) => not_json(text, name, e).map(|()| false),
    }
}

/// What a JSON error `e` on `text` means: `Ok` when the text is YAML, else the refusal.
fn not_json(text: &str, name: &str, e: serde_json::Error) -> Result<()> {
    match e {
        // Refused as kube-apiserver refuses it, not read as YAML (which refuses it too).
        e if crate::json::is_duplicate_key(&e.to_string()) => {
            let what = e.to_string();
            let what = what.split(" at line ").next().unwrap_or(&what);
            Err(input(format!("{name}:{}: {what}", e.line())))
        }
        _ if is_yaml(text) => Ok(()),
        e => Err(input(format!("{name}:{}: invalid JSON: {e}", e.line()))),
    }
}

/// Whether `text` reads as a YAML stream, found without building its documents (millions of
/// `{}` documents would each cost a tree).
fn is_yaml(text: &str) -> bool {
    serde_saphyr::from_multiple_with_options::<serde::de::IgnoredAny>(text, yaml_options()).is_ok()
}

/// Parses JSON (one value, or an array of objects) or a YAML stream of documents; empty
/// documents are dropped. Errors name the file (`name`) and line.
pub fn parse(text: &str, name: &str) -> Result<Vec<Value>> {
    let documents = match as_json(text, name)? {
        Some(Value::Array(items)) => items,
        Some(other) => vec![other],
        None => parse_yaml(text, name, None)?,
    };
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// A YAML stream of the file `name`; `document_line` is the line it starts on when it is one
/// document of the file (errors without a location then name that line).
pub(super) fn parse_yaml(text: &str, name: &str, document_line: Option<usize>) -> Result<Vec<Value>> {
    serde_saphyr::from_multiple_with_options::<Value>(text, yaml_options()).map_err(|e| {
        let first_line = document_line.unwrap_or(1);
        let line = e.location().map(|l| first_line + l.line() as usize - 1).or(document_line);
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        let detail = e.to_string();
        // The scanner's own nesting limit (flow collections) says so only in its message.
        let why = budget_refusal(&e)
            .or_else(|| detail.contains("recursion limit exceeded").then(too_deep))
            .or_else(|| duplicate_key(&e).map(|key| crate::json::duplicate_key(&key)));
        match why {
            Some(why) => input(format!("{name}{at}: {why}")),
            None => input(format!("{name}{at}: invalid YAML: {}", detail.lines().next().unwrap_or("parse error"))),
        }
    })
}

/// The key a YAML mapping repeats, when that is the error: said in the project's words, not with
/// the parser's advice (its option to accept it).
fn duplicate_key(e: &serde_saphyr::Error) -> Option<String> {
    let mut e = e;
    while let serde_saphyr::Error::AliasError { error, .. } | serde_saphyr::Error::WithSnippet { error, .. } = e {
        e = error;
    }
    match e {
        serde_saphyr::Error::DuplicateMappingKey { key, .. } => Some(key.clone().unwrap_or_else(|| "?".to_string())),
        _ => None,
    }
}

/// Anchors and aliases may replay this many parser events in all (a Kubernetes manifest rarely
/// has any; a "billion laughs" of a few hundred bytes asks for billions).
pub const MAX_ALIAS_EVENTS: usize = 100_000;
/// Collections may nest this deep (the parser's default; Kubernetes objects nest about 20 levels).
pub const MAX_NESTING: usize = 64;

fn too_deep() -> String {
    format!("YAML nested more than {MAX_NESTING} levels deep; no Kubernetes object does: pass `kubectl get -o yaml` output")
}

/// A YAML budget breach as one sentence (what was exceeded, the limit, what to do), instead of
/// the parser's debug form.
pub(crate) fn budget_refusal(e: &serde_saphyr::Error) -> Option<String> {
    use serde_saphyr::budget::BudgetBreach as B;
    let mut e = e;
    // The breach may come wrapped in the alias that replayed it and in a snippet.
    while let serde_saphyr::Error::AliasError { error, .. } | serde_saphyr::Error::WithSnippet { error, .. } = e {
        e = error;
    }
    let serde_saphyr::Error::Budget { breach, .. } = e else { return None };
    let what = match breach {
        B::RecordedAnchorEvents { .. }
        | B::RecordedAnchorBytes { .. }
        | B::Aliases { .. }
        | B::Anchors { .. }
        | B::AliasAnchorRatio { .. } => {
            format!(
                "YAML aliases expand to more than {MAX_ALIAS_EVENTS} nodes (an alias bomb?); expand the anchors (e.g. `yq 'explode(.)'`) or pass `kubectl get -o yaml` output"
            )
        }
        B::Depth { .. } => too_deep(),
        other => format!(
            "YAML exceeds a parser limit ({}); pass `kubectl get -o yaml` output",
            format!("{other:?}").split([' ', '{']).next().unwrap_or("budget")
        ),
    };
    Some(what)
}

/// The parser's default budget guards against alias bombs but is sized for config files; a
/// `kubectl get pods -A -o yaml` of a large cluster has millions of nodes. Raise the size
/// limits, keep the alias limits.
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    const BIG: usize = 1 << 40;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = None;
    budget.max_events = BIG;
    budget.max_documents = BIG;
    budget.max_nodes = BIG;
    budget.max_total_scalar_bytes = BIG;
    budget.max_recorded_anchor_events = MAX_ALIAS_EVENTS;
    budget.max_depth = MAX_NESTING;
    budget.flow_nesting_limit = MAX_NESTING;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    // Comments are skipped, not queued as events: a file of a billion comment lines otherwise
    // costs about 20 bytes of memory per byte read.
    options.emit_comments = false;
    // kubectl reads an unquoted `1e400`; JSON values cannot hold infinity, so it stays text.
    options.non_finite_float_policy = serde_saphyr::NonFiniteFloatPolicy::AsString;
    options
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_streams_json_and_errors() {
        let docs = parse("a: 1\n---\n---\nb: [x, y]\n", "t").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(parse("[{\"a\": 1}, {\"b\": 2}]", "t").unwrap().len(), 2);
        let err = parse("a: 1\nb: [unclosed\n", "f.yaml").unwrap_err().to_string();
        assert!(err.starts_with("f.yaml:"), "{err}");
        let err = parse("{\"a\": ]", "f.json").unwrap_err().to_string();
        assert!(err.starts_with("f.json:1: invalid JSON"), "{err}");
        // What kubectl reads as YAML although it starts like JSON.
        assert_eq!(parse("{a: 1, b: [x]}", "t").unwrap(), vec![json!({"a": 1, "b": ["x"]})]);
        assert_eq!(parse("{\"a\": 1}\n---\n{\"b\": 2}\n", "t").unwrap().len(), 2);
        assert_eq!(parse("{\"a\": 1e400}", "t").unwrap(), vec![json!({"a": ".inf"})]);
    }

    #[test]
    fn a_repeated_key_is_refused_in_one_line_in_json_and_yaml() {
        // Issue 42: YAML said `set DuplicateKeyPolicy in Options if acceptable`; JSON kept the last.
        let said = "duplicate key `kind` in one object; a Kubernetes object names each field once: remove one of them";
        for (text, line) in [("apiVersion: v1\nkind: Pod\nkind: CiliumNode\n", 3), ("{\"kind\": \"Pod\",\n \"kind\": \"CiliumNode\"}", 2)] {
            let err = parse(text, "f").unwrap_err().to_string();
            assert_eq!(err, format!("f:{line}: {said}"));
        }
    }

    #[test]
    fn parser_limits_are_refused_in_a_sentence() {
        let mut text = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        for (name, previous) in ["b", "c", "d", "e", "f", "g"].iter().zip(["a", "b", "c", "d", "e", "f"]) {
            text += &format!("{name}: &{name} [{}]\n", vec![format!("*{previous}"); 9].join(", "));
        }
        let err = parse(&text, "laughs.yaml").unwrap_err().to_string();
        assert!(err.starts_with("laughs.yaml:") && err.contains(": YAML aliases expand to more than 100000 nodes"), "{err}");
        let deep = format!("a: {}{}", "[".repeat(100), "]".repeat(100));
        let err = parse(&deep, "deep.yaml").unwrap_err().to_string();
        assert!(err.contains("YAML nested more than 64 levels deep"), "{err}");
    }
}
