//! Rendering: results in, text out. Pure; the format and colour are decided once in `main`
//! and passed in. Every command's result is one value implementing [`Render`], printed by
//! [`output`] in the format asked for, so that `-o` means the same for every command.

pub mod check;
mod fit;
pub mod fleet;
pub mod inspect;
pub mod ip;
pub mod legend;
pub mod map;
pub mod metrics;
pub mod migrate;
mod prose;
pub mod reserve;
mod shorten;
pub mod table;
pub mod usage;
pub mod version;
pub mod watch;

use crate::allocator::Count;
use crate::escape;
use owo_colors::OwoColorize;
use serde::Serialize;

pub use prose::fit_prose;
pub use table::{Grid, table, table_shedding};

/// The version of every `-o json|yaml` document (`schemaVersion`); documents change only with
/// a bump (docs/design/json-contract.md).
pub const SCHEMA_VERSION: u32 = 1;

/// A document about one input with one list in it: `schemaVersion`, `source`, then `key`.
pub(crate) struct Sourced<'a, T> {
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
        }
    }

    /// JSON or YAML: stdout carries one machine-readable document and nothing else.
    pub fn is_document(self) -> bool {
        matches!(self, Format::Json | Format::Yaml)
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

/// Presentation settings decided once from flags and the terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    pub headers: bool,
    /// The columns a table may take (the terminal's whole width); what matters least gives way
    /// to fit ([`table`]: columns, shared prefixes and DNS suffixes, then free text cut with `…`).
    /// `None`: never cut (a pipe, `-o wide`: the full text).
    pub width: Option<usize>,
    /// stdout is a terminal: a person reads it, so `--no-headers` cells keep their spaces.
    pub terminal: bool,
}

/// The width of a terminal that does not say its size.
pub const TABLE_WIDTH: usize = 100;

impl Style {
    pub fn plain() -> Style {
        Style { color: false, headers: true, width: None, terminal: false }
    }

    /// `text` (escaped as one line: it is often data) in the tone's colour when colour is on.
    pub fn paint(&self, text: &str, tone: Tone) -> String {
        let text = escape::net(text);
        if !self.color {
            return text.into_owned();
        }
        match tone {
            Tone::Good => text.green().to_string(),
            Tone::Warn => text.yellow().to_string(),
            Tone::Bad => text.red().to_string(),
            Tone::Dim => text.dimmed().to_string(),
            Tone::Bold => text.bold().to_string(),
        }
    }
}

/// One line of prose that quotes data (a name, an annotation, a message), newline-terminated: the
/// text escaped as one line (`escape::visible`), so that data cannot start a line of its own; the
/// plugin's colours kept when colour is on.
pub fn line(text: &str, style: &Style) -> String {
    escape::visible(text, escape::Rules { colour: style.color, ..escape::Rules::default() }).into_owned() + "\n"
}

#[derive(Clone, Copy, Debug)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Dim,
    Bold,
}

/// A count for humans, one notation in every table: exact below a million, else three
/// significant digits with an SI prefix (`16.8M`, `18.4E`, `1.21Y`), beyond the largest prefix
/// (10^30) in e-notation. Exact values are in `-o json`.
pub fn human(count: Count) -> String {
    if let Some(small) = count.to_u64().filter(|&v| v < 1_000_000) {
        return small.to_string();
    }
    let digits = count.to_string();
    // Round to three significant digits; 9995… carries into the next power of ten.
    let leading: u32 = digits[..4].parse().expect("a count of a million or more has four digits");
    let (mut mantissa, mut exponent) = ((leading + 5) / 10, digits.len() - 1);
    if mantissa == 1000 {
        (mantissa, exponent) = (100, exponent + 1);
    }
    const PREFIXES: [&str; 9] = ["M", "G", "T", "P", "E", "Z", "Y", "R", "Q"];
    let text = mantissa.to_string();
    match PREFIXES.get(exponent / 3 - 2) {
        Some(prefix) => {
            let whole = exponent % 3 + 1;
            let (int, frac) = text.split_at(whole);
            if frac.is_empty() { format!("{int}{prefix}") } else { format!("{int}.{frac}{prefix}") }
        }
        None => format!("{}.{}e{exponent}", &text[..1], &text[1..]),
    }
}

/// A fraction as a whole percentage, the same in every view: never `0%` unless empty, never
/// `100%` unless full (`<1%`, `>99%`); `-` when unknown.
pub fn percent(fraction: Option<f64>) -> String {
    let Some(f) = fraction else { return "-".to_string() };
    let pct = f * 100.0;
    if f > 0.0 && pct < 1.0 {
        "<1%".to_string()
    } else if f < 1.0 && pct > 99.0 {
        ">99%".to_string()
    } else {
        format!("{pct:.0}%")
    }
}

/// A 10-cell bar of `fraction`, coloured by how full it is (`-` when unknown).
/// A family's UTIL cell: `?` when the input cannot tell which blocks are allocated or which are
/// reserved (unknown is not 0%), `-` when nothing is allocatable.
pub fn utilization(fam: &crate::allocator::FamilyReport) -> String {
    if fam.allocation_known && fam.reservations_known { percent(fam.utilization()) } else { "?".to_string() }
}

/// A family's bar, `?` when its utilization is unknown.
pub fn utilization_bar(fam: &crate::allocator::FamilyReport, style: &Style) -> String {
    if fam.allocation_known && fam.reservations_known { bar(fam.utilization(), style) } else { "?".to_string() }
}

pub fn bar(fraction: Option<f64>, style: &Style) -> String {
    let Some(f) = fraction else { return "-".to_string() };
    let filled = ((f * 10.0).round() as usize).min(10);
    let tone = if f >= 0.9 {
        Tone::Bad
    } else if f >= 0.7 {
        Tone::Warn
    } else {
        Tone::Good
    };
    style.paint(&format!("{}{}", "#".repeat(filled), ".".repeat(10 - filled)), tone)
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn human_counts() {
        assert_eq!(human(Count::from(65536u64)), "65536");
        assert_eq!(human(Count::from(999_999u64)), "999999");
        assert_eq!(human(Count::from(1_000_000u64)), "1.00M");
        assert_eq!(human(Count::from(16_777_216u64)), "16.8M");
        assert_eq!(human(Count::from(131_072_000u64)), "131M");
        assert_eq!(human(Count::from(999_500_000u64)), "1.00G");
        assert_eq!(human(Count::from(999_499_999u64)), "999M");
        assert_eq!(human(Count::pow2(64)), "18.4E");
        assert_eq!(human(Count::pow2(80)), "1.21Y");
        assert_eq!(human(Count::pow2(100)), "1.27Q");
        assert_eq!(human(Count::pow2(127)), "1.70e38");
        assert_eq!(human(Count::pow2(128) - Count::from(1u64)), "3.40e38");
    }

    #[test]
    fn percentages_and_bars() {
        let s = Style::plain();
        assert_eq!(percent(Some(0.18)), "18%");
        assert_eq!(percent(Some(0.001)), "<1%");
        assert_eq!(percent(Some(0.0)), "0%");
        assert_eq!(percent(Some(0.999)), ">99%");
        assert_eq!(percent(Some(1.0)), "100%");
        assert_eq!(percent(None), "-");
        assert_eq!(bar(Some(0.18), &s), "##........");
        assert_eq!(bar(None, &s), "-");
    }

    #[test]
    fn painted_text_is_escaped_and_its_colours_pass_the_output_filter() {
        let style = Style { color: true, headers: true, width: None, terminal: false };
        for tone in [Tone::Good, Tone::Warn, Tone::Bad, Tone::Dim, Tone::Bold] {
            let painted = style.paint("a\x1b]52;c;eA==\x07", tone);
            assert_eq!(escape::block(&painted, true), painted, "{painted:?}");
            assert!(painted.contains("a\\x1b]52;c;eA==\\x07"), "{painted:?}");
        }
    }
}
