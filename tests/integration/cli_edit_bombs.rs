//! Issue 53: the commands that edit manifests (`reserve-range -f`, `migrate -f`) cost about what
//! reading the file costs, not a tree of every document: a document the edit does not touch is
//! copied as text, of the pools it edits only the fields it reads are built, and a stream of
//! millions of tiny documents is walked one at a time. Each run is measured
//! (`support::cli::measured`: the plugin's own peak RSS). The files are generated at test time.
//!
//! The sizes (10 MiB, 100 MiB) take minutes in a debug build; these tests use 2 MiB and
//! a quarter of the 256 MiB ceiling, which still leaves room for the ~25 MiB the process holds
//! before it reads anything. Today's main took 90–93 MiB on the `{}` stream at that size, 314 MiB
//! (`migrate`) and 675 MiB (`reserve-range`) on the pools with large arrays; the release build at
//! the sizes is in docs/performance.md.

use crate::support;

use std::path::{Path, PathBuf};
use support::cli::measured;

/// 256 MiB scaled to a fifth of the sizes (see above).
const CEILING_KIB: i64 = 64 << 10;
const SIZE: usize = 2 << 20;

/// A v2 pool (`reserve-range` edits it) and a v2alpha1 one (`migrate` converts it), each with
/// `extra` holding what `blue_extra` and `old_extra` say (spec fields the edits do not read).
fn pools(blue_extra: &str, old_extra: &str) -> String {
    format!(
        "apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  labels: {{team: \"net\"}}\nspec:\n  ipv4:\n    cidrs: [10.40.0.0/16]\n    maskSize: 24\n{blue_extra}---\napiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata:\n  name: old\nspec:\n  ipv4:\n    cidrs: [10.50.0.0/16]\n    maskSize: 24\n{old_extra}"
    )
}

/// `unit` repeated (whole units: a cut one would not parse) to about `bytes`.
fn repeated(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes / unit.len())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every read and edit of `path` (printed, diffed, in place), each under the ceiling; the
/// edits in place run on copies. Returns the texts written in place.
fn every_edit_within_the_ceiling(path: &Path, what: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let copy = path.with_extension("copy.yaml");
    let file = copy.to_str().unwrap();
    let runs: [(&str, &[&str]); 5] = [
        ("usage", &["usage", "-f", file]),
        ("migrate", &["migrate", "-f", file]),
        ("migrate --diff", &["migrate", "-f", file, "--diff"]),
        ("migrate --in-place", &["migrate", "-f", file, "--in-place"]),
        ("reserve-range --in-place", &["reserve-range", "blue", "10.40.0.1", "-f", file, "--in-place", "--yes"]),
    ];
    let mut written = Vec::new();
    for (name, args) in runs {
        std::fs::write(&copy, &text).unwrap();
        let started = std::time::Instant::now();
        let (code, stderr, rss) = measured(args);
        eprintln!("{what}, {name}: exit {code}, peak RSS {} MiB, {:.1} s", rss >> 10, started.elapsed().as_secs_f64());
        assert!(code == 0 || (code == 1 && name == "migrate --diff"), "{what}, {name}: exit {code}: {stderr}");
        assert!(rss < CEILING_KIB, "{what}, {name}: peak RSS {} MiB", rss >> 10);
        if name.ends_with("--in-place") {
            written.push(std::fs::read_to_string(&copy).unwrap());
        }
    }
    written
}

/// Item 4: `{}` documents between `---` lines (starting like JSON) were read whole, each a tree,
/// and the edits held vectors of every document: 10 MiB took 292 MiB, 100 MiB passed 2 GiB.
#[test]
fn a_stream_of_empty_flow_documents_is_read_and_edited_one_document_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let stream = repeated("{}\n---\n", SIZE);
    let path = write(dir.path(), "empty.yaml", &format!("{stream}{}", pools("", "")));
    for text in every_edit_within_the_ceiling(&path, "2 MiB of {} documents") {
        assert!(text.starts_with(&stream), "the documents before the pools are copied byte for byte");
        assert_ne!(&text[stream.len()..], pools("", ""), "the pools were edited");
    }
}

/// Item 3: a large sequence in a document the edit does not touch was built node by node (890
/// MiB for `reserve-range --in-place` on 10 MiB); it is copied as text.
#[test]
fn a_document_the_edit_does_not_touch_is_copied_not_built() {
    let dir = tempfile::tempdir().unwrap();
    let list = format!("---\n{}", repeated("- 1\n", SIZE));
    let path = write(dir.path(), "list.yaml", &format!("{}{list}", pools("", "")));
    for text in every_edit_within_the_ceiling(&path, "a 2 MiB YAML sequence") {
        assert!(text.ends_with(&list), "the sequence is copied byte for byte");
    }
}

/// Item 3: a large array inside the pool an edit changes (a spec field it does not read) was
/// built node by node, copied and walked again (a 5.2 M-entry array in 10 MiB passed 2 GiB); it
/// is walked without being built, and copied byte for byte around the change.
#[test]
fn a_large_field_of_an_edited_pool_is_walked_not_built() {
    let dir = tempfile::tempdir().unwrap();
    let flow = format!("  extra: [0{}]\n", repeated(",0", SIZE / 2));
    let block = format!("  extra:\n{}", repeated("  - 1\n", SIZE / 2));
    let path = write(dir.path(), "arrays.yaml", &pools(&flow, &block));
    let written = every_edit_within_the_ceiling(&path, "pools with 1 M-entry arrays");
    let (migrated, reserved) = (&written[0], &written[1]);
    assert!(migrated.contains("apiVersion: cilium.io/v2\nkind: CiliumPodIPPool\nmetadata:\n  name: old\n"), "converted");
    assert!(reserved.contains("    pool:\n") && reserved.contains("start: 10.40.0.1"), "reserved");
    for text in [migrated, reserved] {
        assert!(text.contains(&flow) && text.contains(&block), "the arrays are copied byte for byte");
        assert!(text.contains("  labels: {team: \"net\"}\n"), "an unread field keeps its spelling");
    }
}

/// Item 3, in JSON: a JSON file was built whole, edited and re-indented whole (a 5.2 M-entry
/// array in 10 MiB took 822 MiB); of a `List` of pools only the fields the edits read are built,
/// and the edit is spliced into the text: the arrays, the key order and the spacing stay.
#[test]
fn a_json_file_is_edited_in_place_without_being_built() {
    let dir = tempfile::tempdir().unwrap();
    let array = format!("[0{}]", repeated(",0", SIZE / 4));
    let pool = |version: &str, name: &str, cidr: &str| {
        format!(
            "    {{\n      \"apiVersion\": \"cilium.io/{version}\",\n      \"kind\": \"CiliumPodIPPool\",\n      \"metadata\": {{\"name\": \"{name}\", \"labels\": {{\"team\":\"net\"}}}},\n      \"spec\": {{\n        \"extra\": {array},\n        \"ipv4\": {{\"cidrs\": [\"{cidr}\"], \"maskSize\": 24}}\n      }}\n    }}"
        )
    };
    let text = format!(
        "{{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n{},\n{}\n  ]\n}}\n",
        pool("v2", "blue", "10.40.0.0/16"),
        pool("v2alpha1", "old", "10.50.0.0/16")
    );
    let path = write(dir.path(), "pools.json", &text);
    let written = every_edit_within_the_ceiling(&path, "a JSON List of pools with 0.26 M-entry arrays");
    let (migrated, reserved) = (&written[0], &written[1]);
    for text in [migrated, reserved] {
        let value: serde_json::Value = serde_json::from_str(text).expect("JSON still");
        assert_eq!(text.matches(&array).count(), 2, "the arrays are copied byte for byte");
        assert!(text.contains("\"labels\": {\"team\":\"net\"}"), "an unread field keeps its spelling");
        assert_eq!(value["items"].as_array().unwrap().len(), 2);
    }
    let migrated: serde_json::Value = serde_json::from_str(migrated).unwrap();
    assert_eq!(migrated["items"][1]["apiVersion"], "cilium.io/v2", "converted");
    assert_eq!(migrated["items"][1]["spec"]["extra"].as_array().unwrap().len(), array.matches(',').count() + 1);
    let reserved_value: serde_json::Value = serde_json::from_str(reserved).unwrap();
    assert!(
        reserved_value["items"][0]["spec"]["ipv4"].to_string().contains("10.40.0.1"),
        "reserved: {}",
        &reserved[..reserved.len().min(400)]
    );
    assert!(reserved.starts_with("{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n    {\n"), "the layout stays");
}
