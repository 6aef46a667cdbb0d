//! Writing one object as a YAML document, with every string a terminal would act on written
//! double-quoted with escapes.

use serde_json::Value;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::parse::parse;
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
}
