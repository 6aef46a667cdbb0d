//! Rendering: results in, text out. Pure; the format and colour are decided once in `main`
//! and passed in. Every command's result is one value implementing [`Render`], printed by
//! [`output`] in the format asked for, so that `-o` means the same for every command.

pub mod check;
pub mod escape;
pub mod inspect;
pub mod ip;
pub mod metrics;
pub mod migrate;
pub mod reserve;
pub mod usage;
pub mod version;

use crate::allocator::Count;
use comfy_table::{Table, presets::NOTHING};
use owo_colors::OwoColorize;
use serde::Serialize;

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

/// `-o`: how results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Table,
    Wide,
    Json,
    Yaml,
    Name,
    /// OpenMetrics text (`usage` only; other commands refuse it before reading anything).
    OpenMetrics,
}

impl Format {
    /// JSON or YAML: stdout carries one machine-readable document and nothing else.
    pub fn is_document(self) -> bool {
        matches!(self, Format::Json | Format::Yaml)
    }
}

/// A command's result, printable in every format: one model, many renderers.
pub trait Render {
    /// The `-o json|yaml` document.
    fn document(&self) -> impl Serialize;
    /// `-o name`: one `kind/name` per line; `None` for results without names (their text
    /// is printed).
    fn names(&self) -> Option<String> {
        None
    }
    /// `-o table` (and `-o wide` when `wide`).
    fn text(&self, wide: bool, style: &Style) -> String;
    /// `-o openmetrics`; `None` for results without metrics (their text is printed).
    fn openmetrics(&self) -> Option<String> {
        None
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

/// Presentation settings decided once from flags and the terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    pub headers: bool,
}

impl Style {
    pub fn plain() -> Style {
        Style { color: false, headers: true }
    }

    /// `text` (escaped: it is often data) in the tone's colour when colour is on.
    pub fn paint(&self, text: &str, tone: Tone) -> String {
        let text = escape::escape(text);
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

#[derive(Clone, Copy, Debug)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Dim,
    Bold,
}

/// A kubectl-style table: no borders, three spaces between columns, no trailing blanks.
pub fn table(header: &[&str], rows: Vec<Vec<String>>, style: &Style) -> String {
    let mut t = Table::new();
    t.load_style(NOTHING);
    if style.headers {
        t.set_header(header.to_vec());
    }
    for row in rows {
        // Cells hold names and CIDRs from the data: one line each, no control sequence.
        t.add_row(row.iter().map(|c| escape::cell(c, style.color).into_owned()).collect::<Vec<_>>());
    }
    let columns = t.column_count();
    for (i, col) in t.column_iter_mut().enumerate() {
        col.set_padding((0, if i + 1 == columns { 0 } else { 3 }));
    }
    let mut out: String = t.lines().map(|l| l.trim_end().to_string() + "\n").collect();
    if t.row_count() == 0 && !style.headers {
        out.clear();
    }
    out
}

/// A count for humans: exact up to 10^12, then `2^N` for powers of two, else three digits.
pub fn human(count: Count) -> String {
    if let Some(small) = count.to_u64().filter(|&v| v < 1_000_000_000_000) {
        return small.to_string();
    }
    let text = count.to_string();
    for exp in 40..=256u32 {
        if Count::pow2(exp) == count {
            return format!("2^{exp}");
        }
    }
    format!("{}.{}e{}", &text[..1], &text[1..3], text.len() - 1)
}

/// `allocated` of `cap` as a 10-cell bar and percentage, coloured by how full it is.
pub fn bar(fraction: Option<f64>, style: &Style) -> String {
    let Some(f) = fraction else { return "-".to_string() };
    let filled = ((f * 10.0).round() as usize).min(10);
    let pct = f * 100.0;
    // Never show 100% unless completely full, nor 0% unless empty.
    let pct_text = if f > 0.0 && pct < 1.0 { "<1%".to_string() } else if f < 1.0 && pct > 99.0 { ">99%".to_string() } else { format!("{pct:.0}%") };
    let tone = if f >= 0.9 { Tone::Bad } else if f >= 0.7 { Tone::Warn } else { Tone::Good };
    let cells = format!("{}{}", "#".repeat(filled), ".".repeat(10 - filled));
    format!("{} {}", style.paint(&cells, tone), pct_text)
}

/// JSON (pretty) or YAML for machine output.
fn serialize<T: Serialize>(value: &T, yaml: bool) -> String {
    if yaml {
        crate::manifest::to_yaml(&serde_json::to_value(value).expect("report serializes to JSON"))
    } else {
        serde_json::to_string_pretty(value).expect("report serializes to JSON") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_counts() {
        assert_eq!(human(Count::from(65536u64)), "65536");
        assert_eq!(human(Count::pow2(64)), "2^64");
        assert_eq!(human(Count::pow2(64) - Count::from(2u64)), "1.84e19");
    }

    #[test]
    fn bars() {
        let s = Style::plain();
        assert_eq!(bar(Some(0.18), &s), "##........ 18%");
        assert_eq!(bar(Some(0.999), &s), "##########>99%".replace("#>", "# >"));
        assert_eq!(bar(None, &s), "-");
    }

    #[test]
    fn painted_text_is_escaped_and_its_colours_pass_the_output_filter() {
        let style = Style { color: true, headers: true };
        for tone in [Tone::Good, Tone::Warn, Tone::Bad, Tone::Dim, Tone::Bold] {
            let painted = style.paint("a\x1b]52;c;eA==\x07", tone);
            assert_eq!(escape::terminal_safe(&painted, true), painted, "{painted:?}");
            assert!(painted.contains("a\\e]52;c;eA==\\x07"), "{painted:?}");
        }
    }

    #[test]
    fn kubectl_tables() {
        let out = table(&["A", "BB"], vec![vec!["xxxx".into(), "y".into()]], &Style::plain());
        assert_eq!(out, "A      BB\nxxxx   y\n");
    }
}
