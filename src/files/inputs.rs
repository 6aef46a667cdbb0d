//! What `-f` reads, below the file walker ([`super::read`]) and the archive reader
//! ([`super::archive`]), which both use it: one input streamed within its limits and decoded on the
//! way ([`stream_input`], `parse.rs`), and each input found while walking kept (it holds
//! Kubernetes objects) or skipped with the reason ([`Inputs`]).

use super::sysdump;
use crate::error::input;
use crate::manifest;
use crate::model::Workloads;
use anyhow::Result;
use serde_json::Value;
use std::io::Read;
use std::path::Path;

pub use super::limits::{DEFAULT_MAX_INPUT_BYTES, DEFAULT_MAX_LINE_BYTES, Limits};
pub use super::parse::{Kept, Passed, Pools, Syntax, parse_stream, parse_stream_as};

/// Extensions read when walking a directory; files named explicitly are read whatever their name.
pub const MANIFEST_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// A parsed input: its name (path or `-`) and the documents it holds.
pub struct LoadedFile {
    pub name: String,
    pub documents: Vec<Value>,
    /// Pods and CiliumEndpoints decoded while streaming, taken out of `documents` (`model::slim`).
    pub workloads: Workloads,
    /// Documents read while streaming but not kept: the snapshot only counts them.
    pub passed: Passed,
}

impl LoadedFile {
    /// A file read whole: every object is in `documents`.
    pub fn whole(name: String, documents: Vec<Value>) -> LoadedFile {
        LoadedFile { name, documents, workloads: Workloads::default(), passed: Passed::default() }
    }

    /// A file read as it streamed.
    pub fn streamed(name: String, kept: Kept) -> LoadedFile {
        LoadedFile { name, documents: kept.documents, workloads: kept.workloads, passed: kept.passed }
    }
}

/// A file met while walking a directory or an archive that holds no Kubernetes objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    pub name: String,
    pub reason: String,
}

/// Everything `-f` read for a snapshot, and what was skipped.
#[derive(Default)]
pub struct Inputs {
    pub files: Vec<LoadedFile>,
    pub skipped: Vec<SkippedFile>,
}

/// A file met while walking (`text` is `Err(why)` for binary data): kept when it holds at least
/// one Kubernetes object, else skipped with the reason.
pub fn walked(name: String, text: std::result::Result<String, String>, inputs: &mut Inputs) {
    match text {
        Err(why) => inputs.skipped.push(SkippedFile { name, reason: why }),
        Ok(text) => match manifest::parse(&text, &name) {
            Err(_) if looks_like_json_lines(&text) => {
                inputs.skipped.push(SkippedFile { name, reason: "JSON Lines, not Kubernetes objects".into() })
            }
            Err(e) => {
                let why = e.to_string();
                let reason = format!("does not parse: {}", why.trim_start_matches(name.as_str()).trim_start_matches(':'));
                inputs.skipped.push(SkippedFile { name, reason });
            }
            Ok(documents) => kept_or_skipped(LoadedFile::whole(name, documents), Some(&text), inputs),
        },
    }
}

/// A member of an archive streamed by [`stream_input`]: kept or skipped as a walked file is.
pub fn streamed_member(name: String, streamed: Streamed, inputs: &mut Inputs) {
    match streamed {
        Streamed::Read(kept) => kept_or_skipped(LoadedFile::streamed(name, kept), None, inputs),
        Streamed::Whole(text) => walked(name, Ok(text), inputs),
        Streamed::Binary(why) | Streamed::Unread(why) => inputs.skipped.push(SkippedFile { name, reason: why }),
    }
}

/// Keeps a walked file's documents when one is a Kubernetes object (a `kind`), else skips it.
pub fn kept_or_skipped(file: LoadedFile, text: Option<&str>, inputs: &mut Inputs) {
    let LoadedFile { name, documents, workloads, passed } = file;
    let documents = sysdump::type_documents(&name, documents);
    if !workloads.is_empty()
        || passed.any_kind()
        || documents.iter().any(|d| d.get("kind").and_then(Value::as_str).is_some_and(|k| !k.is_empty()))
    {
        inputs.files.push(LoadedFile { name, documents, workloads, passed });
        return;
    }
    let count = documents.len() + passed.total();
    let all_objects = documents.iter().all(Value::is_object) && passed.non_objects == 0;
    let json_lines = text.is_some_and(looks_like_json_lines) || count > 1 && all_objects && name.ends_with(".json");
    let reason = if json_lines {
        "JSON Lines, not Kubernetes objects"
    } else if count == 0 {
        "empty or only comments"
    } else {
        "holds no Kubernetes objects (no kind)"
    };
    inputs.skipped.push(SkippedFile { name, reason: reason.to_string() });
}

/// Several lines, each a JSON object (`hubble-flows-*.json`).
fn looks_like_json_lines(text: &str) -> bool {
    let first_two: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(2).collect();
    first_two.len() == 2 && first_two.iter().all(|l| serde_json::from_str::<serde_json::Map<String, Value>>(l).is_ok())
}

/// `.yaml`, `.yml` or `.json`, case-insensitively.
pub fn is_manifest_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

pub fn not_manifest_reason(path: &Path) -> String {
    match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("not YAML or JSON (.{ext})"),
        None => "not YAML or JSON (no extension)".to_string(),
    }
}

/// How much of an input that cannot be read twice (standard input, an archive member) is kept
/// while it streams, for the rare input the stream reader leaves to [`manifest::parse`] (flow
/// style, errors with their line). Larger ones are not buffered: memory follows what is kept.
const RETRY_BYTES: usize = 16 << 20;

/// What streaming one input gave.
pub enum Streamed {
    /// Its documents, Pods and CiliumEndpoints decoded on the way.
    Read(Kept),
    /// Binary data: why.
    Binary(String),
    /// Its text, for [`manifest::parse`] to read whole (or report the error in).
    Whole(String),
    /// Left to the whole reader but larger than [`RETRY_BYTES`]: why it was not read.
    Unread(String),
}

/// Reads `reader` as it streams (at most `limits.input_bytes`, refused past it; lines bounded by
/// `limits.line_bytes`; binary data stops it at the first NUL byte), keeping a copy of up to
/// [`RETRY_BYTES`] in case the stream reader gives up (it cannot be read again); `too_large` is
/// the refusal past the limit. `Ok((streamed, bytes read))`.
pub fn stream_input(
    reader: impl Read,
    name: &str,
    limits: Limits,
    too_large: &dyn Fn() -> String,
    pools: Pools,
) -> Result<(Streamed, u64)> {
    let mut watched = Watched { inner: reader, left: limits.input_bytes, read: 0, nul_at: None, failed: None, copy: Some(Vec::new()) };
    match parse_stream(&mut watched, name, pools, limits) {
        Ok(Some(kept)) => return Ok((Streamed::Read(kept), watched.read)),
        Err(why) => return Err(input(format!("{name}: {why}"))),
        Ok(None) => {}
    }
    if watched.failed.is_none() && watched.nul_at.is_none() && watched.copy.is_some() {
        // The stream reader stopped at what it does not read: the copy needs the rest.
        let _ = std::io::copy(&mut watched, &mut std::io::sink());
    }
    if let Some(at) = watched.nul_at {
        return Ok((Streamed::Binary(format!("binary data (a NUL byte at offset {at}), not Kubernetes YAML or JSON")), watched.read));
    }
    match watched.failed {
        Some(Failed::TooLarge) => return Err(input(too_large())),
        Some(Failed::Io(e)) => return Err(input(format!("cannot read {name}: {e}"))),
        None => {}
    }
    let read = watched.read;
    let streamed = match watched.copy {
        Some(text) => match String::from_utf8(text) {
            Ok(text) => Streamed::Whole(text),
            Err(_) => Streamed::Binary("not UTF-8 text; pass Kubernetes YAML or JSON".into()),
        },
        None => Streamed::Unread(format!("does not parse as it streams, and is larger than {} MiB to read whole", RETRY_BYTES >> 20)),
    };
    Ok((streamed, read))
}

enum Failed {
    TooLarge,
    Io(std::io::Error),
}

/// A reader that counts what it reads against a limit, stops at a NUL byte, and keeps a copy of
/// what it read while that is at most [`RETRY_BYTES`]. Why it stopped is kept for the caller:
/// the stream reader only sees an error.
struct Watched<R> {
    inner: R,
    left: u64,
    read: u64,
    nul_at: Option<u64>,
    failed: Option<Failed>,
    copy: Option<Vec<u8>>,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                let shown = std::io::Error::new(e.kind(), e.to_string());
                self.failed = Some(Failed::Io(e));
                return Err(shown);
            }
        };
        if n as u64 > self.left {
            self.failed = Some(Failed::TooLarge);
            return Err(std::io::Error::other("over the input limit"));
        }
        if let Some(at) = memchr::memchr(0, &buf[..n]) {
            self.nul_at = Some(self.read + at as u64);
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not a manifest"));
        }
        self.left -= n as u64;
        self.read += n as u64;
        if let Some(copy) = &mut self.copy {
            if copy.len() + n > RETRY_BYTES {
                self.copy = None;
            } else {
                copy.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }
}

/// A reader that fails at a NUL byte, as [`read_text`] refuses binary data (the size limit is
/// [`archive::Bounded`](super::archive::Bounded)'s).
pub struct Guarded<R>(pub R);

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        if buf[..n].contains(&0) {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "not a manifest"));
        }
        Ok(n)
    }
}

/// The refusal of an input larger than `limits.input_bytes`.
pub fn too_large(name: &str, limits: Limits) -> String {
    format!(
        "{name}: more than {} (--max-input-size); split the input (e.g. one file per resource kind) or raise --max-input-size",
        crate::bytes::show(limits.input_bytes)
    )
}

/// Text of at most `limits.input_bytes`, refused at the first NUL byte (no manifest holds one:
/// binary data, `/dev/zero`) or past the limit, so that neither takes long.
pub fn read_text(reader: impl Read, name: &str, limits: Limits) -> Result<String> {
    read_text_or_binary(reader, name, limits)?.map_err(|why| input(format!("{name}: {why}")))
}

/// Like [`read_text`], but binary data (a NUL byte, not UTF-8) is `Ok(Err(why))`, for files
/// that may be skipped; only IO errors and the size limit are errors.
pub fn read_text_or_binary(mut reader: impl Read, name: &str, limits: Limits) -> Result<std::result::Result<String, String>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(input(format!("cannot read {name}: {e}"))),
        };
        if let Some(at) = chunk[..n].iter().position(|&b| b == 0) {
            return Ok(Err(format!("binary data (a NUL byte at offset {}), not Kubernetes YAML or JSON", bytes.len() + at)));
        }
        if (bytes.len() + n) as u64 > limits.input_bytes {
            return Err(input(too_large(name, limits)));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8(bytes).map_err(|_| "not UTF-8 text; pass Kubernetes YAML or JSON".to_string()))
}

#[cfg(test)]
use super::parse::LineBound;

#[cfg(test)]
mod tests {
    use super::*;

    /// The line `text` is refused at under a bound of `limit`, read `piece` bytes at a time.
    fn over(text: &[u8], limit: u64, piece: usize) -> Option<u64> {
        let mut lines = LineBound { inner: text, run: 0, line: 1, limit, over: None };
        let mut buffer = vec![0; piece];
        while lines.read(&mut buffer).is_ok_and(|n| n > 0) {}
        lines.over
    }

    /// What `parse_stream` makes of `text`, as the whole reader's snapshot would count it.
    fn kept(text: &str, name: &str) -> Kept {
        parse_stream(text.as_bytes(), name, Pools::Read, Limits::default()).unwrap().expect("read as it streams")
    }

    #[test]
    fn documents_the_snapshot_only_counts_are_counted_not_kept() {
        let text = "--- {}\n--- 3\n---\nkind: Service\nspec: {}\n--- {}\n---\nkind: CiliumNode\nmetadata: {name: n}\n";
        let read = kept(text, "a.yaml");
        assert_eq!(read.documents.len(), 1, "only the CiliumNode");
        let kinds: Vec<(&str, usize)> = read.passed.kinds.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!((kinds, read.passed.non_objects), (vec![("(no kind)", 3), ("Service", 1)], 1));
        let whole = crate::model::Snapshot::from_objects(manifest::parse(text, "a.yaml").unwrap());
        assert_eq!(read.snapshot().skipped, whole.skipped);
        // A JSON array's elements are documents, each counted.
        let read = kept(r#"[{}, {"kind": "Service"}, {"kind": "CiliumNode", "metadata": {"name": "n"}}]"#, "a.json");
        assert_eq!((read.documents.len(), read.passed.total()), (1, 2));
        // A sysdump file's name types its objects: those without a kind are kept.
        let read = kept("--- {metadata: {name: n}}\n--- 3\n", "ciliumnodes-20240101-120000.yaml");
        assert_eq!((read.documents.len(), read.passed.total()), (1, 1));
    }

    #[test]
    fn a_repeated_key_is_refused_by_both_decoders() {
        // The fuzz finding: the whole reading kept the last `kind`, the streaming one the first.
        let corpus = include_str!("../../fuzz/corpus/manifest/repeated-kind-key.json");
        let nested = r#"{"kind": "CiliumNode", "metadata": {"name": "n", "name": "m"}}"#;
        let top = r#"{"kind": "ConfigMap", "data": {}, "data": {}}"#;
        let yaml = "kind: CiliumNode\nmetadata: {name: n}\nkind: Pod\n";
        for text in [corpus, r#"{"kind":"Pod","metadata":{"name":"p"},"kind":"CiliumNode"}"#, nested, top, yaml] {
            for pools in [Pools::Read, Pools::Whole] {
                assert!(
                    parse_stream(text.as_bytes(), "t.json", pools, Limits::default()).unwrap().is_none(),
                    "left to the whole reading: {text}"
                );
            }
            let err = manifest::parse(text, "t.json").unwrap_err().to_string();
            assert!(err.starts_with("t.json:") && err.contains(": duplicate key `") && !err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_line_longer_than_the_bound_is_found_whatever_the_reads() {
        for piece in [1, 3, 64] {
            assert_eq!(over(b"abcd\nabcd\n\n", 4, piece), None, "{piece}");
            assert_eq!(over(b"abcd\nabcde\n", 4, piece), Some(2), "{piece}");
            assert_eq!(over(b"ab\n\nabcdefgh", 4, piece), Some(3), "{piece}");
        }
    }

    proptest::proptest! {
        /// Whatever the lines and the reads, the first line longer than the bound is the one found
        /// (reads longer than the bound take the path that only counts breaks).
        #[test]
        fn the_first_line_over_the_bound_is_found(
            lines in proptest::collection::vec(0usize..12, 0..40),
            limit in 0u64..10,
            piece in 1usize..40,
        ) {
            let text: Vec<u8> = lines.iter().map(|&n| "a".repeat(n)).collect::<Vec<_>>().join("\n").into_bytes();
            let expected = text.split(|&b| b == b'\n').position(|line| line.len() as u64 > limit).map(|at| at as u64 + 1);
            proptest::prop_assert_eq!(over(&text, limit, piece), expected);
        }
    }
}
