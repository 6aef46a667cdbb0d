//! One input decoded as it streams ([`parse_stream`]): the documents a snapshot keeps ([`Kept`]),
//! the ones it only counts ([`Passed`]), how much of a pool it keeps ([`Pools`]), and the bound on
//! a YAML line (`--max-line-size`, [`LineBound`]).

use super::limits::Limits;
use super::sysdump;
use crate::manifest;
use crate::model::Workloads;
use crate::model::snapshot::NO_KIND;
use serde_json::Value;
use std::io::Read;

/// How much of a pool object a snapshot keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pools {
    /// Every field: the command may write the pool back (`reserve-range`).
    Whole,
    /// The fields the model reads (`slim::POOL_FIELDS`): the command only reads. An archive is
    /// only ever read (edits refuse archives).
    Read,
}

/// What streaming one input gave: the documents the snapshot reads, the Pods and CiliumEndpoints
/// decoded on the way (taken out of the documents), and how many documents were read but not kept.
#[derive(Default)]
pub struct Kept {
    pub documents: Vec<Value>,
    pub workloads: Workloads,
    pub passed: Passed,
    /// Objects without a kind are kept: the file's name gives them one (`sysdump::type_documents`).
    typed_by_name: bool,
}

/// Documents read but not kept, because the snapshot only counts them (`slim::only_counted`):
/// a document of another kind, or an empty one, costs its bytes as it streams, not a tree.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// How many of each kind, named as `Snapshot::skipped` names them.
    pub kinds: std::collections::BTreeMap<String, usize>,
    /// How many of them were no object (a scalar, an array).
    pub non_objects: usize,
}

impl Passed {
    pub fn total(&self) -> usize {
        self.kinds.values().sum()
    }

    /// Whether one of them named a kind.
    pub fn any_kind(&self) -> bool {
        self.kinds.keys().any(|k| k != NO_KIND)
    }

    /// Adds the counts to what a snapshot skipped.
    pub fn add_to(&self, skipped: &mut std::collections::BTreeMap<String, usize>) {
        for (kind, n) in &self.kinds {
            *skipped.entry(kind.clone()).or_insert(0) += n;
        }
    }

    pub fn append(&mut self, other: &Passed) {
        other.add_to(&mut self.kinds);
        self.non_objects += other.non_objects;
    }
}

impl Kept {
    /// Keeps `document` if the snapshot reads it, else counts it.
    fn keep(&mut self, document: Value) {
        match crate::model::slim::only_counted(&document) {
            None => self.documents.push(document),
            Some("") if self.typed_by_name && document.is_object() => self.documents.push(document),
            Some(kind) => {
                let kind = if kind.is_empty() { NO_KIND } else { kind };
                *self.passed.kinds.entry(kind.to_string()).or_insert(0) += 1;
                self.passed.non_objects += usize::from(!document.is_object());
            }
        }
    }

    /// One document as the stream reader gave it (`json`: a top-level array holds documents).
    fn add(&mut self, document: Option<Value>, decoded: Workloads, json: bool) {
        match document {
            // A JSON array of objects is a sequence of documents (a YAML one is one document).
            Some(Value::Array(items)) if json => items.into_iter().filter(|d| !d.is_null()).for_each(|d| self.keep(d)),
            Some(Value::Null) | None => {}
            Some(document) => self.keep(document),
        }
        self.workloads.append(decoded);
    }

    /// The snapshot of what was kept, the documents passed counted among its skipped kinds.
    pub fn snapshot(self) -> crate::model::Snapshot {
        let mut snapshot = crate::model::Snapshot::from_read(self.documents, self.workloads);
        self.passed.add_to(&mut snapshot.skipped);
        snapshot
    }
}

/// Documents decoded as `reader` streams in, with Pods and CiliumEndpoints decoded into their
/// structs and taken out ([`crate::model::slim`]), each document kept or counted as soon as it is
/// read ([`Kept`]): JSON values (one, concatenated, or an array of objects) or a plain YAML
/// stream. `name` is the input's (a sysdump file's name types its objects). `Ok(None)` on
/// anything [`manifest::parse`] must decide from the whole text: errors, and JSON that is really
/// YAML; `Err(why)` when a YAML line is longer than `limits.line_bytes` (`--max-line-size`;
/// reading it whole would cost more). Public for the `manifest` fuzz target, which checks it against [`manifest::parse`]
/// (docs/reliability.md).
pub fn parse_stream(reader: impl std::io::Read, name: &str, pools: Pools, limits: Limits) -> std::result::Result<Option<Kept>, String> {
    parse_stream_as(reader, name, pools, limits, Syntax::Sniffed)
}

/// How [`parse_stream_as`] reads a stream.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// JSON when it starts with `{` or `[`, else YAML.
    Sniffed,
    /// YAML whatever it starts with: a text that looked like JSON but was not (`{}` documents
    /// between `---` lines), read again as it streams rather than whole (a tree per document).
    Yaml,
}

/// [`parse_stream`], read as `syntax` says.
pub fn parse_stream_as(
    reader: impl std::io::Read,
    name: &str,
    pools: Pools,
    limits: Limits,
    syntax: Syntax,
) -> std::result::Result<Option<Kept>, String> {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, reader);
    let first = loop {
        let Ok(buffer) = reader.fill_buf() else { return Ok(None) };
        match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
            Some(at) => break Some(buffer[at]),
            None if buffer.is_empty() => break None,
            None => {
                let n = buffer.len();
                reader.consume(n);
            }
        }
    };
    let mut kept = Kept { typed_by_name: sysdump::kind_for(name).is_some(), ..Kept::default() };
    let read = match first {
        None => Some(()),
        Some(b'{' | b'[') if syntax == Syntax::Sniffed && pools == Pools::Whole => slim_json::<false>(reader, &mut kept),
        Some(b'{' | b'[') if syntax == Syntax::Sniffed => slim_json::<true>(reader, &mut kept),
        Some(_) => {
            let mut lines = LineBound { inner: reader, run: 0, line: 1, limit: limits.line_bytes, over: None };
            let mut filtered = super::comments::CommentRuns::new(&mut lines);
            let read = match pools {
                Pools::Whole => slim_yaml::<false>(&mut filtered, &mut kept),
                Pools::Read => slim_yaml::<true>(&mut filtered, &mut kept),
            };
            // The `--- {}` documents the filter dropped are counted as read.
            if filtered.empty_maps() > 0 {
                *kept.passed.kinds.entry(NO_KIND.to_string()).or_insert(0) += filtered.empty_maps();
            }
            if let Some(line) = lines.over {
                return Err(long_line(line, limits.line_bytes));
            }
            read
        }
    };
    Ok(read.map(|()| kept))
}

fn slim_json<const READ_POOLS: bool>(reader: impl Read, kept: &mut Kept) -> Option<()> {
    use crate::model::slim::Slim;
    for slim in serde_json::Deserializer::from_reader(reader).into_iter::<Slim<true, READ_POOLS>>() {
        let slim = slim.ok()?;
        kept.add(slim.document, slim.workloads, true);
    }
    Some(())
}

fn slim_yaml<const READ_POOLS: bool>(mut reader: impl Read, kept: &mut Kept) -> Option<()> {
    use crate::model::slim::Slim;
    for slim in serde_saphyr::read_with_options::<_, Slim<false, READ_POOLS>>(&mut reader, manifest::yaml_options()) {
        let slim = slim.ok()?;
        kept.add(slim.document, slim.workloads, false);
    }
    Some(())
}

/// The refusal of a YAML line longer than `limit` (`--max-line-size`; `line` is its number).
fn long_line(line: u64, limit: u64) -> String {
    format!(
        "line {line} is longer than {} (--max-line-size); no Kubernetes object has such a line: pass `kubectl get -o yaml` or JSON output, or raise --max-line-size",
        crate::bytes::show(limit)
    )
}

/// A reader that fails once a line is longer than `limit` bytes, so that the YAML parser never
/// holds more of one scalar than that; `over` is the number of the line that was.
pub(super) struct LineBound<R> {
    pub(super) inner: R,
    /// Bytes of the current line read so far.
    pub(super) run: u64,
    /// The current line's number.
    pub(super) line: u64,
    pub(super) limit: u64,
    pub(super) over: Option<u64>,
}

impl<R> LineBound<R> {
    /// Counts the lines of `read` (the bytes that follow those counted so far), stopping at the
    /// first longer than the limit.
    fn count(&mut self, read: &[u8]) {
        let (first, last) = (memchr::memchr(b'\n', read), memchr::memrchr(b'\n', read));
        if let (Some(first), Some(last)) = (first, last)
            && self.run + first as u64 <= self.limit
            && (last - first) as u64 <= self.limit
        {
            // Every line between the first break and the last is shorter than the bytes between
            // them: only the breaks are counted (a line every two bytes is common: `#` lines).
            self.line += memchr::memchr_iter(b'\n', read).count() as u64;
            self.run = (read.len() - last - 1) as u64;
            return;
        }
        let mut start = 0;
        for at in memchr::memchr_iter(b'\n', read) {
            self.run += (at - start) as u64;
            if self.run > self.limit {
                return;
            }
            (self.run, self.line, start) = (0, self.line + 1, at + 1);
        }
        self.run += (read.len() - start) as u64;
    }
}

impl<R: Read> Read for LineBound<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count(&buf[..n]);
        if self.run > self.limit {
            self.over = Some(self.line);
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "line too long"));
        }
        Ok(n)
    }
}
