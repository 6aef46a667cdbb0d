//! Any text as `-f` input: the manifest decoder (JSON, YAML streams, flow style, every pool
//! dialect, `List` kinds), the snapshot, the allocator and every renderer in every format.
//! Never a panic; every JSON document parses back. The streaming reader of `-f` files
//! (`inputs::parse_stream`, Pods and CiliumEndpoints decoded straight into structs) agrees with
//! the whole-text decoder whenever both accept the text. A JSON object that repeats a key
//! (`"kind":"Pod",…,"kind":"CiliumNode"`, a finding of this target: the whole-text decoder kept
//! the last value, the streaming one the first) is refused by both now (`ciliumpool::json`), so
//! such texts are no longer left out of the check.
#![no_main]

use ciliumpool::allocator::analyze;
use ciliumpool::escape;
use ciliumpool::model::Snapshot;
use ciliumpool::render::check::Check;
use ciliumpool::render::inspect::Inspect;
use ciliumpool::render::reserve::{Reservations, listed_ranges};
use ciliumpool::render::usage::{Table, Thresholds, Usage};
use ciliumpool::render::{Format, Style, output};
use libfuzzer_sys::fuzz_target;

const FORMATS: [Format; 5] = [Format::Table, Format::Wide, Format::Json, Format::Yaml, Format::Name];

fn check(text: String, format: Format) {
    if format == Format::Json {
        serde_json::from_str::<serde_json::Value>(&text).expect("JSON output parses");
    } else if !format.is_document() {
        // What reaches the terminal after the output filter holds no control character.
        let safe = escape::block(&text, false);
        assert!(!safe.chars().any(|c| escape::is_unsafe(c) && c != '\n'), "{safe:?}");
    }
}

/// The stream path may accept more (concatenated JSON values), never something different.
fn agree(whole: &Snapshot, stream: &Snapshot) {
    let names = |s: &Snapshot| s.pools.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
    assert_eq!(format!("{:?}", whole.pods), format!("{:?}", stream.pods), "pods");
    assert_eq!(format!("{:?}", whole.endpoints), format!("{:?}", stream.endpoints), "endpoints");
    assert_eq!(names(whole), names(stream), "pools");
    assert_eq!(format!("{:?}", whole.nodes), format!("{:?}", stream.nodes), "nodes");
    assert_eq!(whole.skipped, stream.skipped, "skipped");
    assert_eq!(whole.notes, stream.notes, "notes");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(documents) = ciliumpool::manifest::parse(text, "fuzz.yaml") else { return };
    let snapshot = Snapshot::from_objects(documents);
    if let Ok(Some(kept)) =
        ciliumpool::files::inputs::parse_stream(data, "fuzz.yaml", ciliumpool::files::Pools::Read, ciliumpool::files::Limits::default())
    {
        agree(&snapshot, &kept.snapshot());
    }
    let report = analyze(&snapshot);
    let names: Vec<String> = snapshot.pools.iter().map(|p| p.name.clone()).collect();
    for style in [Style::plain(), Style { color: true, headers: false, width: Some(80), terminal: false }] {
        for format in FORMATS {
            for table in [Table::Pools, Table::Nodes, Table::Blocks] {
                // Without thresholds, and with both (the breach column and its markers).
                for thresholds in [Thresholds::default(), Thresholds { fail_above: Some(50.0), min_free_blocks: Some(4) }] {
                    check(
                        output(
                            &Usage { snapshot: &snapshot, report: &report, names: &[], table, thresholds, table_width: None },
                            format,
                            &style,
                        ),
                        format,
                    );
                }
            }
            check(
                output(
                    &Check { origin: &snapshot.origin, problems: report.problems.iter().collect(), hidden: 1, ipam: &report.ipam },
                    format,
                    &style,
                ),
                format,
            );
            check(output(&Inspect { snapshot: &snapshot, report: &report, names: &names }, format, &style), format);
            let pools: Vec<_> = report.pools.iter().collect();
            check(
                output(
                    &Reservations { origin: &snapshot.origin, ranges: listed_ranges(&pools), invalid: report.problems.iter().collect() },
                    format,
                    &style,
                ),
                format,
            );
        }
    }
});
