//! What every command's result is to the output: the [`Render`] trait, the one [`Format`] enum of `-o`\nand [`output`], the one dispatch on it; the versioned documents and `-o name` records.

use super::style::Style;
use crate::escape;
use serde::Serialize;

/// The version of every `-o json|yaml` document (`schemaVersion`); documents change only with
/// a bump (docs/design/json-contract.md).
pub const SCHEMA_VERSION: u32 = 1;

/// A document about one input with one list in it: `schemaVersion`, `source`, then `key`.
pub struct Sourced<'a, T> {
    pub source: &'a crate::model::Origin,
    pub key: &'static str,
    pub value: T,
}

impl<T: Serialize> Serialize for Sourced<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("schemaVersion", &SCHEMA_VERSION)?;
        map.serialize_entry("source", self.source)?;
        map.serialize_entry(self.key, &self.value)?;
        map.end()
    }
}

/// `-o`: how results are printed. The one enum of formats: clap parses `-o` into it (the CLI
/// boundary, `cli.rs`, with the `cli` feature), every renderer reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
    // `usage` only; other commands refuse it before reading anything.
    /// OpenMetrics text (usage): for the Prometheus textfile collector or a Pushgateway
    #[cfg_attr(feature = "cli", value(name = "openmetrics"))]
    OpenMetrics,
    // kubectl's script formats over the `-o json` document (`render::script`); each takes its
    // template after `=` (`-o jsonpath='{.pools[*].name}'`).
    /// kubectl's JSONPath template over the JSON document: -o jsonpath='{.pools[*].name}'
    #[allow(rustdoc::broken_intra_doc_links)] // help text, not links
    #[cfg_attr(feature = "cli", value(name = "jsonpath"))]
    JsonPath,
    /// the values a JSONPath template selects, as one JSON array: -o jsonpath-as-json=TEMPLATE
    #[cfg_attr(feature = "cli", value(name = "jsonpath-as-json"))]
    JsonPathAsJson,
    /// a JSONPath template read from a file: -o jsonpath-file=FILE
    #[cfg_attr(feature = "cli", value(name = "jsonpath-file"))]
    JsonPathFile,
    /// kubectl's custom columns over the rows of the JSON document: -o custom-columns=POOL:.name,NEXT:.families[0].nextBlock
    #[allow(rustdoc::broken_intra_doc_links)] // help text, not links
    #[cfg_attr(feature = "cli", value(name = "custom-columns"))]
    CustomColumns,
    /// custom columns read from a file (a line of headers, a line of paths): -o custom-columns-file=FILE
    #[cfg_attr(feature = "cli", value(name = "custom-columns-file"))]
    CustomColumnsFile,
}

impl Format {
    /// The value as `-o` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Wide => "wide",
            Format::Json => "json",
            Format::Yaml => "yaml",
            Format::Name => "name",
            Format::OpenMetrics => "openmetrics",
            Format::JsonPath => "jsonpath",
            Format::JsonPathAsJson => "jsonpath-as-json",
            Format::JsonPathFile => "jsonpath-file",
            Format::CustomColumns => "custom-columns",
            Format::CustomColumnsFile => "custom-columns-file",
        }
    }

    /// JSON, YAML or a script over the JSON document: stdout carries machine-readable output,
    /// escaped by its renderer, and nothing else.
    pub fn is_document(self) -> bool {
        matches!(self, Format::Json | Format::Yaml) || self.is_script()
    }

    /// kubectl's script formats (`-o jsonpath=…`, `-o custom-columns=…`): they take an argument.
    pub fn is_script(self) -> bool {
        matches!(self, Format::JsonPath | Format::JsonPathAsJson | Format::JsonPathFile | Format::CustomColumns | Format::CustomColumnsFile)
    }

    /// The script formats read their argument from a file.
    pub fn reads_file(self) -> bool {
        matches!(self, Format::JsonPathFile | Format::CustomColumnsFile)
    }
}

/// A command's result, printable in every format: one model, many renderers.
pub trait Render {
    /// The `-o json|yaml` document.
    fn document(&self) -> impl Serialize;
    /// `-o name`: [`name_records`]; `None` for results without names (the view refuses `-o name`).
    fn names(&self) -> Option<String> {
        None
    }
    /// `-o custom-columns`: the array of the document whose elements are the rows (`pools`);
    /// `None`: the document is the one row, as kubectl shows a single object.
    fn rows(&self) -> Option<&'static str> {
        None
    }
    /// `-o table` (and `-o wide` when `wide`).
    fn text(&self, wide: bool, style: &Style) -> String;
    /// `-o openmetrics`; `None` for results without metrics (their text is printed).
    fn openmetrics(&self) -> Option<String> {
        None
    }
    /// What a person reading the table needs besides it (column definitions, where the figures
    /// came from): printed on stderr with `-o table|wide` unless `--no-headers`, so that stdout
    /// is the table alone, as `| awk` expects (kubectl's "No resources found" is on stderr too).
    fn notes(&self, _wide: bool, _style: &Style) -> String {
        String::new()
    }
}

/// The notes of `result` for `format`, or nothing (machine formats, `--no-headers`).
pub fn notes(result: &impl Render, format: Format, style: &Style) -> String {
    match format {
        Format::Table | Format::Wide if style.headers => result.notes(format == Format::Wide, style),
        _ => String::new(),
    }
}

/// `result` as `format` asks.
pub fn output(result: &impl Render, format: Format, style: &Style) -> String {
    match format {
        Format::Json | Format::Yaml => serialize(&result.document(), format == Format::Yaml),
        Format::Name => result.names().unwrap_or_else(|| result.text(false, style)),
        Format::Table | Format::Wide => result.text(format == Format::Wide, style),
        Format::OpenMetrics => result.openmetrics().unwrap_or_else(|| result.text(false, style)),
        // The script is applied by `render::scripted` (`commands::Context` holds it); without
        // one, the document it reads.
        _ => serialize(&result.document(), false),
    }
}

/// The resource of a CiliumPodIPPool in `-o name` records.
pub const POOL_RESOURCE: &str = "ciliumpodippool.cilium.io";

/// `-o name`: one `<resource>.<group>/<name>` record per object, as `kubectl get -o name` prints
/// them, each object once and in the order given; the name escaped as one word (`escape::word`), so
/// that no name can forge a second record.
pub fn name_records<'a>(objects: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut seen = std::collections::BTreeSet::new();
    objects
        .into_iter()
        .filter(|object| seen.insert(*object))
        .map(|(resource, name)| format!("{resource}/{}\n", escape::word(name)))
        .collect()
}

/// JSON (pretty) or YAML for machine output: every string the exact value, nothing a terminal
/// acts on written raw (`escape::json_pretty`, `manifest::to_yaml`).
fn serialize<T: Serialize>(value: &T, yaml: bool) -> String {
    if yaml {
        crate::manifest::to_yaml(&serde_json::to_value(value).expect("report serializes to JSON"))
    } else {
        escape::json_pretty(value).expect("report serializes to JSON") + "\n"
    }
}
