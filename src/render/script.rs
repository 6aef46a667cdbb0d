//! kubectl's script formats, `-o jsonpath=…`, `-o jsonpath-as-json=…`, `-o custom-columns=…` (and
//! their `-file` forms, read by `commands::Context`), over the document a command prints with
//! `-o json`: [`Script::parse`] once, before anything is read, then [`scripted`] per result.

use super::columns::Columns;
use super::document::{Format, Render};
use super::jsonpath::Template;
use super::style::Style;
use serde_json::Value;

/// A parsed script of `-o`.
#[derive(Debug)]
pub enum Script {
    JsonPath(Template),
    /// `jsonpath-as-json`: the values the paths select, as one JSON array.
    JsonPathAsJson(Template),
    Columns(Columns),
}

impl Script {
    /// The script of `format` from its text (the template, the column spec, or a file's text).
    /// `None` for a format without one; the error is one line naming the bad part.
    pub fn parse(format: Format, text: &str) -> Option<Result<Script, String>> {
        Some(match format {
            Format::JsonPath | Format::JsonPathFile => Template::parse(text).map(Script::JsonPath),
            Format::JsonPathAsJson => Template::parse(text).map(Script::JsonPathAsJson),
            Format::CustomColumns => Columns::parse(text).map(Script::Columns),
            Format::CustomColumnsFile => Columns::parse_file(text).map(Script::Columns),
            _ => return None,
        })
    }

    /// The script applied to a document: `rows` names its array of rows for custom columns
    /// (`None`: the document is the one row, as kubectl shows a single object).
    pub fn apply(&self, document: &Value, rows: Option<&str>, style: &Style) -> String {
        match self {
            Script::JsonPath(template) => template.render(document),
            Script::JsonPathAsJson(template) => {
                crate::escape::json_pretty(&template.values(document)).expect("JSON values serialize") + "\n"
            }
            Script::Columns(columns) => {
                let rows: Vec<&Value> = match rows.and_then(|key| document.get(key)) {
                    Some(Value::Array(items)) => items.iter().collect(),
                    Some(Value::Null) => Vec::new(),
                    _ => vec![document],
                };
                columns.render(&rows, style)
            }
        }
    }
}

/// `result`'s `-o json` document through `script`.
pub fn scripted(result: &impl Render, script: &Script, style: &Style) -> String {
    let document = serde_json::to_value(result.document()).expect("report serializes to JSON");
    script.apply(&document, result.rows(), style)
}
