//! Manifest text, the bottom layer: parsing a file's text (JSON, or a YAML stream) into
//! objects, serialising an object as a YAML document, and rewriting some documents of a file
//! while leaving every other document byte-for-byte as it was (GitOps repositories diff these
//! files). Pure text in, values or text out; reading files is `source::files`' job.
//!
//! The stream is split on document markers here rather than by a YAML library, because
//! libraries re-serialize (and drop comments of) everything they touch. Used by `-f` reading,
//! `reserve-range --in-place`, `migrate -f` and the migration backup. Lines end where YAML's do
//! (`\n`, `\r\n` and a bare `\r`), so that the splitter and the parser always agree on where a
//! line, a comment and a `---` marker are.

use crate::error::input;
use anyhow::Result;
use serde_json::Value;
use std::borrow::Cow;

mod patch;

/// The text's value when it is one JSON value; `None` for YAML. What looks like JSON but is not
/// one JSON value is YAML when the YAML parser reads it, as kubectl does: flow-style YAML
/// (`{kind: List, items: []}`), `---`-separated JSON documents, numbers JSON cannot hold
/// (`1e400`). Otherwise the JSON error is reported, naming the file and line.
fn as_json(text: &str, name: &str) -> Result<Option<Value>> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return Ok(None);
    }
    match serde_json::from_str(text) {
        Ok(value) => Ok(Some(value)),
        Err(_) if parse_yaml(text, name, None).is_ok() => Ok(None),
        Err(e) => Err(input(format!("{name}:{}: invalid JSON: {e}", e.line()))),
    }
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
fn parse_yaml(text: &str, name: &str, document_line: Option<usize>) -> Result<Vec<Value>> {
    serde_saphyr::from_multiple_with_options::<Value>(text, yaml_options()).map_err(|e| {
        let first_line = document_line.unwrap_or(1);
        let line = e.location().map(|l| first_line + l.line() as usize - 1).or(document_line);
        let at = line.map(|l| format!(":{l}")).unwrap_or_default();
        let detail = e.to_string();
        // The scanner's own nesting limit (flow collections) says so only in its message.
        let why = budget_refusal(&e).or_else(|| detail.contains("recursion limit exceeded").then(too_deep));
        match why {
            Some(why) => input(format!("{name}{at}: {why}")),
            None => input(format!("{name}{at}: invalid YAML: {}", detail.lines().next().unwrap_or("parse error"))),
        }
    })
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

/// A manifest text after [`rewrite`].
#[derive(Debug, PartialEq, Eq)]
pub struct Rewritten {
    pub text: String,
    /// How many documents were replaced (for JSON: 1 when the file was).
    pub changed: usize,
    /// The first lines of the documents that could not be patched and were re-serialized whole
    /// (anchors, aliases, tags), losing comments they held inside: the caller says so.
    pub uncommented: Vec<usize>,
}

/// Offers every document of `text` (a YAML stream or JSON; `name` is its path, for errors) to
/// `edit`, which returns its replacement or `None` to keep it. In YAML only the replaced
/// documents change, and in them only the values that differ (`patch`): every other byte is
/// copied. A JSON file is re-serialized whole if its value is replaced. An `edit` error is
/// reported as `name:line: error`, the line being the document's first.
pub fn rewrite(text: &str, name: &str, edit: &mut dyn FnMut(&Value) -> Result<Option<Value>, String>) -> Result<Rewritten> {
    if let Some(value) = as_json(text, name)? {
        return Ok(match edit(&value).map_err(|e| input(format!("{name}: {e}")))? {
            Some(new) => {
                Rewritten { text: crate::escape::json_pretty(&new).expect("JSON values serialize") + "\n", changed: 1, uncommented: vec![] }
            }
            None => Rewritten { text: text.to_string(), changed: 0, uncommented: vec![] },
        });
    }
    let mut out = String::with_capacity(text.len());
    let (mut changed, mut uncommented) = (0, Vec::new());
    let all = documents(text);
    for (index, document) in all.iter().enumerate() {
        let next = all.get(index + 1).map_or("", |d| d.text);
        let docs = parse_yaml(document.text, name, Some(document.line))?;
        let docs: Vec<&Value> = docs.iter().filter(|d| !d.is_null()).collect();
        let replacement = match docs.as_slice() {
            [doc] => edit(doc).map_err(|e| input(format!("{name}:{}: {e}", document.first_line())))?.map(|new| (*doc, new)),
            _ => None,
        };
        match replacement {
            Some((old, new)) => {
                changed += 1;
                // Only what changed is rewritten; a document that cannot be patched (anchors,
                // tags) or whose patch would not read back as `new`, or would move where the
                // next document starts, is re-serialized whole.
                let reads_back = |text: &String| {
                    documents(text).len() == 1
                        && documents(&format!("{text}{next}"))[0].text.len() == text.len()
                        && parse_yaml(text, name, None).is_ok_and(|docs| docs.into_iter().filter(|d| !d.is_null()).eq([new.clone()]))
                };
                let break_ = line_break_of(document.text);
                match patch::patch(document.text, old, &new, break_).filter(reads_back) {
                    Some(text) => out.push_str(&text),
                    None => {
                        let (head, tail, body) = document.kept();
                        if document.text.get(body..document.text.len() - tail.len()).is_some_and(patch::has_comment) {
                            uncommented.push(document.first_line());
                        }
                        out.push_str(&head);
                        out.push_str(&in_breaks(&to_yaml(&new), break_));
                        out.push_str(tail);
                    }
                }
            }
            None => out.push_str(document.text),
        }
    }
    Ok(Rewritten { text: out, changed, uncommented })
}

/// The note for a file whose documents at `lines` were re-serialized without their comments
/// ([`Rewritten::uncommented`]); `None` when there are none.
pub fn uncommented_note(name: &str, lines: &[usize]) -> Option<String> {
    let (first, more) = lines.split_first()?;
    let (which, it) = if more.is_empty() {
        (format!("the document at line {first} was"), "it")
    } else {
        (format!("the documents at lines {} were", lines.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")), "them")
    };
    Some(format!(
        "note: {name}: {which} written whole (anchors, aliases or tags cannot be edited in place), without the comments inside {it}"
    ))
}

/// One object as a YAML document (no leading `---`, newline-terminated). A string holding a
/// character a terminal would act on (`escape::is_unsafe`; a newline alone is fine in a block
/// scalar) is written as a double-quoted scalar with `\uXXXX` escapes: serde-saphyr escapes
/// controls but writes bidirectional marks and TABs in block scalars raw. Such strings are swapped
/// for placeholders, the rest serialized as usual, then each placeholder replaced by the string as
/// a JSON string (a valid YAML double-quoted scalar that reads back to the same string).
pub fn to_yaml(value: &Value) -> String {
    let mut marker = String::from("ciliumpool-escaped-");
    let mut quoted = Vec::new();
    // The common case, nothing to quote, serializes the value as it is.
    let swapped = mentions(value, &must_quote).then(|| {
        while mentions(value, &|s, _| s.contains(marker.as_str())) {
            marker.push('x');
        }
        with_placeholders(value, &marker, &mut quoted)
    });
    let text = serde_saphyr::to_string(swapped.as_ref().unwrap_or(value)).expect("JSON values serialize to YAML");
    let mut text = text.strip_prefix("---\n").unwrap_or(&text).to_string();
    for (i, original) in quoted.iter().enumerate() {
        let json = crate::escape::yaml_quoted(original);
        let placeholder = format!("{marker}{i}-end");
        let key = format!("{placeholder}:");
        match text.find(&key) {
            // An implicit key is at most 1024 characters: a longer one is an explicit `? key`,
            // its `:` on the next line in the same column.
            Some(at) if json.chars().count() > IMPLICIT_KEY => {
                let column = at - text[..at].rfind('\n').map_or(0, |n| n + 1);
                text.replace_range(at..at + key.len(), &format!("? {json}\n{}:", " ".repeat(column)));
            }
            _ => text = text.replacen(&placeholder, &json, 1),
        }
    }
    if text.ends_with('\n') { text } else { text + "\n" }
}

/// The longest implicit key YAML allows (1024 characters); longer keys are written as explicit keys.
const IMPLICIT_KEY: usize = 1000;

/// Whether `test` holds for any string of `value`: (a key, false) or (a string value, true).
fn mentions(value: &Value, test: &dyn Fn(&str, bool) -> bool) -> bool {
    match value {
        Value::String(s) => test(s, true),
        Value::Array(items) => items.iter().any(|v| mentions(v, test)),
        Value::Object(map) => map.iter().any(|(k, v)| test(k, false) || mentions(v, test)),
        _ => false,
    }
}

/// `value` with each string that must be double-quoted replaced by `{marker}{n}-end`, the
/// strings pushed to `quoted` in that order. Keys are swapped for any unsafe character (a key is
/// one line).
fn with_placeholders(value: &Value, marker: &str, quoted: &mut Vec<String>) -> Value {
    match value {
        Value::String(s) => Value::String(placeholder(s, true, marker, quoted)),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_placeholders(v, marker, quoted)).collect()),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let key = placeholder(k, false, marker, quoted);
                out.insert(key, with_placeholders(v, marker, quoted));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Whether `s` must be written double-quoted: it holds an unsafe character (a newline is fine in
/// a block scalar, `newline_ok`).
fn must_quote(s: &str, newline_ok: bool) -> bool {
    s.chars().any(|c| crate::escape::is_unsafe(c) && !(newline_ok && c == '\n')) || (!newline_ok && s.len() > IMPLICIT_KEY)
}

/// `s`, or its placeholder when it holds an unsafe character (a newline is fine when `newline_ok`).
fn placeholder(s: &str, newline_ok: bool, marker: &str, quoted: &mut Vec<String>) -> String {
    if !must_quote(s, newline_ok) {
        return s.to_string();
    }
    quoted.push(s.to_string());
    format!("{marker}{}-end", quoted.len() - 1)
}

/// Replaces the first object `matches` selects (a document, or an item of a list / `kind: *List`)
/// with `replacement` in `text`, re-serializing only its document. `None` when no document holds
/// the object.
pub fn splice(text: &str, name: &str, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> Result<Option<String>> {
    Ok(splice_rewritten(text, name, matches, replacement)?.map(|out| out.text))
}

/// [`splice`], with what [`Rewritten`] tells (the document re-serialized without its comments).
pub fn splice_rewritten(text: &str, name: &str, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> Result<Option<Rewritten>> {
    let mut found = false;
    let out = rewrite(text, name, &mut |doc| {
        if found {
            return Ok(None);
        }
        let mut doc = doc.clone();
        found = replace_in(&mut doc, matches, replacement);
        Ok(found.then_some(doc))
    })?;
    Ok(found.then_some(out))
}

/// Replaces the object in place: the value itself, or an item of a list / `kind: *List`.
fn replace_in(value: &mut Value, matches: &dyn Fn(&Value) -> bool, replacement: &Value) -> bool {
    if matches(value) {
        *value = replacement.clone();
        return true;
    }
    let items = match value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get_mut("items") {
            Some(Value::Array(items)) => items,
            _ => return false,
        },
        _ => return false,
    };
    items.iter_mut().any(|item| replace_in(item, matches, replacement))
}

/// One document of a YAML stream as it stands in the text.
#[derive(Debug, PartialEq, Eq)]
pub struct Document<'a> {
    /// The 1-based line `text` starts on.
    pub line: usize,
    /// The document from its `---` line (if it has one) up to the next `---` line, or up to and
    /// including its `...` end marker.
    pub text: &'a str,
}

/// Whether a line is a document start marker (`---` alone or followed by blank/content).
fn is_document_start(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether `text` is the directives of the document whose `---` line follows (`%YAML 1.2`,
/// `%TAG …`, between blank and comment lines): they belong to that document.
fn is_directives(text: &str) -> bool {
    let directive = |l: &str| l.starts_with('%');
    yaml_lines(text).any(directive) && yaml_lines(text).all(|l| directive(l) || l.trim().is_empty() || l.trim_start().starts_with('#'))
}

/// Whether a document's text starts with directives (`%YAML 1.2`) before its `---` line: printed
/// after another document, it must follow a `...` end marker.
pub fn starts_with_directives(text: &str) -> bool {
    Document { line: 1, text }.directives() > 0
}

/// Whether a line is a `...` document end marker: what follows it is another document, with or
/// without a `---` line.
fn is_document_end(line: &str) -> bool {
    line.strip_prefix("...").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether a line is a `---` or `...` marker with nothing after it but blanks or a comment.
fn is_bare_marker(line: &str) -> bool {
    let rest = line.strip_prefix("---").or_else(|| line.strip_prefix("...")).map(str::trim_end);
    rest.is_some_and(|rest| rest.is_empty() || (rest.starts_with(char::is_whitespace) && rest.trim_start().starts_with('#')))
}

impl<'a> Document<'a> {
    /// The line of the document's content: past its `---` line, unless that line holds content.
    fn first_line(&self) -> usize {
        let directives = self.directives();
        let first = yaml_lines(&self.text[directives..]).next().unwrap_or_default();
        self.line + yaml_lines(&self.text[..directives]).count() + usize::from(is_bare_marker(first))
    }

    /// What is kept around a re-serialized document: before it, the bare `---` line (a `---` line
    /// holding content becomes `---`) and the leading comments; after it, a `...` end marker and
    /// what follows it.
    /// Directives (`%YAML 1.2`) and the comments among them are kept byte for byte.
    /// The third part is where what is not kept starts in the text.
    fn kept(&self) -> (Cow<'a, str>, &'a str, usize) {
        let directives = self.directives();
        let mut lines = yaml_lines(&self.text[directives..]).peekable();
        let mut head = directives;
        if lines.peek().is_some_and(|l| is_document_start(l)) {
            let marker = lines.next().expect("peeked");
            if !is_bare_marker(marker) {
                return (Cow::Owned(format!("{}---\n", &self.text[..directives])), self.tail(), directives);
            }
            head += marker.len();
        }
        head += lines.take_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#')).map(str::len).sum::<usize>();
        (Cow::Borrowed(&self.text[..head]), self.tail(), head)
    }

    /// How many bytes of directive lines (with the blank and comment lines among them) stand
    /// before the document's `---` line; 0 without directives.
    fn directives(&self) -> usize {
        let mut offset = 0;
        for line in yaml_lines(self.text) {
            if is_document_start(line) {
                return if is_directives(&self.text[..offset]) { offset } else { 0 };
            }
            offset += line.len();
        }
        0
    }

    /// From the document's `...` end marker on; empty without one.
    fn tail(&self) -> &'a str {
        let mut offset = 0;
        for line in yaml_lines(self.text) {
            if offset > 0 && line.starts_with("...") && is_bare_marker(line) {
                return &self.text[offset..];
            }
            offset += line.len();
        }
        ""
    }
}

/// The lines of `text`, each with its line break: `\n`, `\r\n` or a bare `\r`, the three YAML
/// knows. Concatenated, they are the text.
fn yaml_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let end = match rest.find(['\n', '\r']) {
            _ if rest.is_empty() => return None,
            Some(i) if rest[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// The line break of a document's first line, so that a re-serialized document keeps the file's
/// style (a CRLF file stays CRLF).
fn line_break_of(text: &str) -> &'static str {
    let first = yaml_lines(text).next().unwrap_or_default();
    if first.ends_with("\r\n") {
        "\r\n"
    } else if first.ends_with('\r') {
        "\r"
    } else {
        "\n"
    }
}

/// Text the plugin writes (lines ending in `\n`) with every line ending in `break_`. Applied to
/// the written text only, never to a document's copied lines.
fn in_breaks(text: &str, break_: &str) -> String {
    if break_ == "\n" {
        return text.to_string();
    }
    yaml_lines(text)
        .map(|line| line.strip_suffix('\n').map_or(line.to_string(), |l| l.strip_suffix('\r').unwrap_or(l).to_string() + break_))
        .collect()
}

/// The documents of a YAML stream; concatenated, their texts are the input.
pub fn documents(text: &str) -> Vec<Document<'_>> {
    let mut documents = Vec::new();
    let (mut start, mut start_line, mut offset) = (0, 1, 0);
    for (index, line) in yaml_lines(text).enumerate() {
        if is_document_start(line) && offset > start && !is_directives(&text[start..offset]) {
            documents.push(Document { line: start_line, text: &text[start..offset] });
            (start, start_line) = (offset, index + 1);
        }
        offset += line.len();
        if is_document_end(line) {
            documents.push(Document { line: start_line, text: &text[start..offset] });
            (start, start_line) = (offset, index + 2);
        }
    }
    if offset > start || documents.is_empty() {
        documents.push(Document { line: start_line, text: &text[start..] });
    }
    documents
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn yaml_shows_nothing_raw_and_reads_back_the_same() {
        let hostile =
            ["a\u{202e}b", "tab\there", "esc\x1b]0;t\x07", "c1\u{9b}2J del\u{7f}", "two\nlines\u{2066}", "ciliumpool-escaped-0-end"];
        let long_key = "k\x1b".repeat(800);
        let value = json!({"metadata": {"name": hostile[0], "annotations": {hostile[1]: hostile[2], "k": hostile[3], "multi": "a\nb\n", long_key.clone(): {"nested": hostile[0]}, "z".repeat(1500): "plain"}},
            "items": [hostile, [{long_key: "first key of a list item"}]]});
        let text = to_yaml(&value);
        assert!(!text.chars().any(|c| crate::escape::is_unsafe(c) && c != '\n'), "{text}");
        assert!(text.contains("\\u202e"), "{text}");
        assert_eq!(parse(&text, "t").unwrap(), [value]);
        // Plain documents are serde-saphyr's own.
        let plain = json!({"a": "b", "list": [1, "x y"], "multi": "a\nb\n"});
        assert_eq!(to_yaml(&plain), serde_saphyr::to_string(&plain).unwrap());
    }

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

    fn is_blue(v: &Value) -> bool {
        v.get("kind").and_then(Value::as_str) == Some("CiliumPodIPPool")
            && v.pointer("/metadata/name").and_then(Value::as_str) == Some("blue")
    }

    #[test]
    fn splits_on_markers_only() {
        let stream = "# leading\na: 1\n---\nb: 2\n--- # second\nc: 3\n";
        let chunks = documents(stream);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|c| c.text).collect::<String>(), stream);
        assert_eq!((chunks[1].line, chunks[2].line), (3, 5));
        assert_eq!(documents("a: '---'\n----\n").len(), 1);
        assert_eq!(documents(""), vec![Document { line: 1, text: "" }]);
    }

    #[test]
    fn line_breaks_are_yaml_s_own() {
        // Fuzz finding (splice target): the comment `#metad` ends at a bare `\r`; read as one line,
        // the pool after it was kept as "comment" and written a second time by the edit.
        let found = "#metad\r CiliumPoa:nd: Ll3";
        let mut new = parse(found, "t").unwrap().remove(0);
        new["fuzzMark"] = json!("kubectl-ciliumpool");
        let out = rewrite(found, "t", &mut |_| Ok(Some(new.clone()))).unwrap();
        // Patched in place at the key's column (the patcher counts bare `\r` as a line break too).
        assert_eq!(out.text, "#metad\r CiliumPoa:nd: Ll3\r fuzzMark: kubectl-ciliumpool\r");
        assert_eq!(parse(&out.text, "t").unwrap(), vec![new]);
        // `\r` and `\r\n` end the line before a `---` marker as `\n` does; an edited document
        // keeps the file's line breaks.
        for br in ["\r", "\r\n"] {
            let stream = format!("a: 1{br}---{br}b: 2{br}--- # c{br}c: 3{br}");
            let chunks = documents(&stream);
            assert_eq!((chunks.len(), parse(&stream, "t").unwrap().len()), (3, 3), "{stream:?}");
            assert_eq!((chunks[1].line, chunks[2].line), (2, 4), "{stream:?}");
            let out = rewrite(&stream, "t", &mut |d| Ok(d.get("b").map(|_| json!({"b": 3, "d": 4})))).unwrap();
            assert_eq!(out.text, format!("a: 1{br}---{br}b: 3{br}d: 4{br}--- # c{br}c: 3{br}"));
        }
    }

    #[test]
    fn a_document_end_marker_ends_the_document() {
        // Fuzz finding (splice target): after `...` a document may start without `---`; taken for
        // the tail of the comment-only document before it, the pool was written twice.
        let text = "# c\n...\nkind: CiliumPodIPPool\nmetadata: {name: blue}\n...\n---\nb: 2\n";
        let chunks: Vec<&str> = documents(text).into_iter().map(|d| d.text).collect();
        assert_eq!(chunks, ["# c\n...\n", "kind: CiliumPodIPPool\nmetadata: {name: blue}\n...\n", "---\nb: 2\n"]);
        assert_eq!(documents(text)[1].line, 3);
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let out = splice(text, "t", &is_blue, &new).unwrap().unwrap();
        assert_eq!(out, "# c\n...\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec: {}\n...\n---\nb: 2\n");
        assert_eq!(parse(&out, "t").unwrap(), vec![new, json!({"b": 2})]);
    }

    /// `text` with the first object document marked, as the splice fuzz target edits it.
    fn marked(text: &str) -> String {
        let mut done = false;
        let out = rewrite(text, "t", &mut |d| {
            let mut new = d.clone();
            new["fuzzMark"] = json!("kubectl-ciliumpool");
            Ok((d.is_object() && !std::mem::replace(&mut done, true)).then_some(new))
        });
        out.unwrap().text
    }

    #[test]
    fn a_patch_keeps_the_line_breaks_it_does_not_write() {
        // Fuzz finding (splice target, minimised with `cargo fuzz tmin` to `{}\r...\n\n`): the
        // patched document took its first line's `\r` on every line, so its copied `...\n` became
        // `...\r`, which joined the next document's leading `\n` into one `\r\n`: the next
        // document lost its first byte.
        for (text, expected) in [
            ("{}\r...\n\n", "{fuzzMark: kubectl-ciliumpool}\r...\n\n"),
            ("{a: 1,\r b: 2}\r...\n\nc: 3\n", "{a: 1, b: 2, fuzzMark: kubectl-ciliumpool}\r...\n\nc: 3\n"),
            // Lines the patch only copies keep their own breaks; the lines it writes take the first's.
            ("a: 1\rb: 2\n# c\r\n", "a: 1\rb: 2\nfuzzMark: kubectl-ciliumpool\r# c\r\n"),
        ] {
            let out = marked(text);
            assert_eq!(out, expected, "{text:?}");
            let (before, after) = (documents(text), documents(&out));
            assert_eq!(
                before.iter().skip(1).map(|d| d.text).collect::<Vec<_>>(),
                after.iter().skip(1).map(|d| d.text).collect::<Vec<_>>(),
                "{text:?}"
            );
        }
        // A document whose lines end in bare `\r` is patched at the right line and column (it
        // was re-serialized whole: the patcher knew only `\n`).
        assert_eq!(marked("a:\r  b: 1\r  c: [x]\rd: 2 # keep\r"), "a:\r  b: 1\r  c: [x]\rd: 2 # keep\rfuzzMark: kubectl-ciliumpool\r");
        let text = "a: # keep\r  b: 1\rd: 2\r";
        let out = rewrite(text, "t", &mut |d| {
            let mut new = d.clone();
            new["a"]["c"] = json!(3);
            Ok(Some(new))
        });
        assert_eq!(out.unwrap().text, "a: # keep\r  b: 1\r  c: 3\rd: 2\r");
    }

    #[test]
    fn only_the_edited_document_changes() {
        let text = "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n---\nkind: ConfigMap  # untouched\n";
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue", "annotations": {"a": "true"}}});
        let out = splice(text, "t.yaml", &is_blue, &new).unwrap().unwrap();
        assert_eq!(
            out,
            "# red pool\napiVersion: cilium.io/v2   # keep me\nkind: CiliumPodIPPool\nmetadata: {name: red}\n---\n# the blue pool\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  annotations:\n    a: \"true\"\n---\nkind: ConfigMap  # untouched\n"
        );
        assert_eq!(parse(&out, "t").unwrap()[1], new);
        assert!(splice("kind: ConfigMap\n", "t", &is_blue, &new).unwrap().is_none());
    }

    #[test]
    fn markers_and_end_markers() {
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let blue = "kind: CiliumPodIPPool\nmetadata: {name: blue}\n";
        // Only the new key is added: `metadata` keeps its flow style.
        let spliced = "a: 1\n--- # blue\nkind: CiliumPodIPPool\nmetadata: {name: blue}\nspec: {}\n...\n---\nb: 2\n";
        assert_eq!(splice(&format!("a: 1\n--- # blue\n{blue}...\n---\nb: 2\n"), "t", &is_blue, &new).unwrap().unwrap(), spliced);
        // A flow document is patched in flow style, on its `---` line.
        assert_eq!(
            splice("a: 1\n--- {kind: CiliumPodIPPool, metadata: {name: blue}}\n", "t", &is_blue, &new).unwrap().unwrap(),
            "a: 1\n--- {kind: CiliumPodIPPool, metadata: {name: blue}, spec: {}}\n"
        );
        let err =
            rewrite(&format!("a: 1\n---\n{blue}"), "e.yaml", &mut |d| if is_blue(d) { Err("bad".into()) } else { Ok(None) }).unwrap_err();
        assert_eq!(err.to_string(), "e.yaml:3: bad");
        let err = rewrite("a: 1\n---\nb: [\n", "e.yaml", &mut |_| Ok(None)).unwrap_err();
        assert!(err.to_string().starts_with("e.yaml:"), "{err}");
    }

    #[test]
    fn lists_and_json() {
        let list = json!({"kind": "List", "items": [{"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}}]});
        let new = json!({"kind": "CiliumPodIPPool", "metadata": {"name": "blue"}, "spec": {}});
        let out = splice(&serde_json::to_string(&list).unwrap(), "t.json", &is_blue, &new).unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["items"][0], new);
        let yaml = splice(&to_yaml(&list), "t.yaml", &is_blue, &new).unwrap().unwrap();
        assert_eq!(parse(&yaml, "t").unwrap()[0]["items"][0], new);
    }
}
