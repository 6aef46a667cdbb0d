//! Snapshots from files (`-f`): single objects, multi-document YAML, JSON, `List`s, directories
//! (recursively; e.g. an extracted `cilium sysdump`), `.zip`/`.tar.gz`/`.tar` archives (a sysdump
//! as users receive it; see `archive`) and `-` for stdin. No cluster is contacted. Parsing the
//! text is `crate::manifest`'s.
//!
//! For snapshots ([`load_inputs`]), a file named explicitly must parse (else exit 2), but files
//! met while walking a directory or an archive may be anything — a sysdump holds logs, JSON Lines,
//! pprof binaries, nested tarballs — so those that hold no Kubernetes objects are skipped and
//! listed with `-v`. Commands that rewrite manifests ([`load`], [`read`]) stay strict.

use super::inputs::{
    Guarded, Inputs, Kept, LoadedFile, Passed, Pools, SkippedFile, Streamed, Syntax, is_manifest_name, kept_or_skipped,
    not_manifest_reason, parse_stream_as, read_text, read_text_or_binary, stream_input, too_large, walked,
};
use super::limits::Limits;
use super::{archive, sysdump};
use crate::error::input;
use crate::manifest;
use crate::model::{Snapshot, Workloads};
use anyhow::Result;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How deep directories are walked.
const MAX_DEPTH: usize = 32;

/// One input's text: its name (path or `-`) and its path unless it is standard input.
pub struct TextFile {
    pub name: String,
    pub path: Option<PathBuf>,
    pub text: String,
    /// What the file was when read, for an edit in place (`fingerprint`); `None` for stdin.
    pub read: Option<super::fingerprint::Fingerprint>,
}

/// The snapshot of what `files` hold (before `Snapshot::set_origin`).
pub fn snapshot_of(files: Vec<LoadedFile>) -> Snapshot {
    let (mut documents, mut workloads, mut passed) = (Vec::new(), Workloads::default(), Passed::default());
    for file in files {
        documents.extend(file.documents);
        workloads.append(file.workloads);
        passed.append(&file.passed);
    }
    let mut snapshot = Snapshot::from_read(documents, workloads);
    passed.add_to(&mut snapshot.skipped);
    snapshot
}

/// Reads every path for a snapshot: explicit files (and stdin) as [`load`] reads them (they must
/// parse); files found in directories and archives that hold no Kubernetes objects are skipped.
/// Sysdump files get the types their names imply (`sysdump`). Every input is read within `limits`.
pub fn load_inputs(paths: &[String], pools: Pools, limits: Limits) -> Result<Inputs> {
    let mut inputs = Inputs::default();
    for path in paths {
        let meta = (path != "-").then(|| std::fs::metadata(path).map_err(|e| input(format!("cannot read {path}: {e}")))).transpose()?;
        match meta {
            Some(meta) if meta.is_dir() => {
                let (mut found, mut others) = (Vec::new(), Vec::new());
                walk_from(Path::new(path), 0, &mut Default::default(), &mut found, &mut others)?;
                inputs.skipped.extend(others.iter().map(|p| SkippedFile { name: p.display().to_string(), reason: not_manifest_reason(p) }));
                // A sysdump is a few large files (pods, endpoints) among many small ones: decode them side by side.
                let streamed = parallel_map(&found, |file| stream_file(file, pools, limits));
                for (file, streamed) in found.into_iter().zip(streamed) {
                    let name = file.display().to_string();
                    match streamed? {
                        Some(kept) => kept_or_skipped(LoadedFile::streamed(name, kept), None, &mut inputs),
                        None => {
                            let reader = std::fs::File::open(&file).map_err(|e| input(format!("cannot read {name}: {e}")))?;
                            let text = read_text_or_binary(reader, &name, limits)?;
                            walked(name, text, &mut inputs);
                        }
                    }
                }
            }
            // Only regular files are sniffed: reading the head of a FIFO (`-f <(kubectl get ...)`) would consume it.
            Some(meta) if meta.is_file() && archive::kind_of(Path::new(path))?.is_some() => {
                let kind = archive::kind_of(Path::new(path))?.expect("sniffed above");
                archive::read(Path::new(path), path, kind, &mut inputs, limits)?;
            }
            Some(meta) if meta.is_file() && archive::named_like_one(path) => {
                return Err(input(format!(
                    "{path}: named like an archive but it is not a zip or tar archive (an incomplete download?); get the sysdump again, or pass its extracted directory with -f"
                )));
            }
            _ => {
                let loaded = load_one((path != "-").then(|| Path::new(path.as_str())), pools, limits)?;
                inputs.files.push(LoadedFile { documents: sysdump::type_documents(&loaded.name, loaded.documents), ..loaded });
            }
        }
    }
    Ok(inputs)
}

/// Reads and parses every path (see [`read`]). Files are decoded as they stream in, keeping only
/// what the snapshot needs of Pods and CiliumEndpoints (`model::slim`), so that memory follows
/// the objects the plugin uses rather than the size of the dump; whatever that fast path does not
/// read plainly (flow-style YAML, numbers JSON cannot hold, errors) is read again whole by
/// [`manifest::parse`], which gives kubectl's reading or the exact error. Within `limits`.
pub fn load(paths: &[String], limits: Limits) -> Result<Vec<LoadedFile>> {
    load_pools(paths, Pools::Whole, limits)
}

/// [`load`], keeping of pools what `pools` says.
pub fn load_pools(paths: &[String], pools: Pools, limits: Limits) -> Result<Vec<LoadedFile>> {
    let mut inputs = Vec::new();
    each_input(paths, &mut |path| {
        inputs.push(path);
        Ok(())
    })?;
    // A dump is a few large files (pods, endpoints): decode them side by side. The first failing
    // input in the input order is the error reported.
    parallel_map(&inputs, |input| load_one(input.as_deref(), pools, limits)).into_iter().collect()
}

/// `f` of every item, on up to one thread per core, in the items' order.
fn parallel_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { break };
                    let result = f(item);
                    *results[index].lock().expect("no worker panics holding it") = Some(result);
                }
            });
        }
    });
    results.into_iter().map(|slot| slot.into_inner().expect("no worker panicked").expect("every item done")).collect()
}

fn load_one(path: Option<&Path>, pools: Pools, limits: Limits) -> Result<LoadedFile> {
    Ok(match path {
        // Streamed as a file is; what the stream reader leaves is parsed from the copy kept of it.
        None => match stream_input(std::io::stdin().lock(), "standard input", limits, &|| too_large("standard input", limits), pools)?.0 {
            Streamed::Read(kept) => LoadedFile::streamed("-".into(), kept),
            Streamed::Binary(why) => return Err(input(format!("standard input: {why}"))),
            Streamed::Whole(text) => LoadedFile::whole("-".into(), manifest::parse(&text, "-")?),
            Streamed::Unread(why) => return Err(input(format!("standard input: {why}; save it to a file and pass that with -f"))),
        },
        Some(path) => match stream_file(path, pools, limits)? {
            Some(kept) => LoadedFile::streamed(path.display().to_string(), kept),
            None => {
                let file = read_file(path.to_path_buf(), limits)?;
                LoadedFile::whole(file.name.clone(), manifest::parse(&file.text, &file.name)?)
            }
        },
    })
}

/// The text of every path, as read for an edit (each within `limits`); directories are walked
/// recursively in sorted order.
pub fn read(paths: &[String], limits: Limits) -> Result<Vec<TextFile>> {
    let mut files = Vec::new();
    each_input(paths, &mut |path| {
        files.push(match path {
            None => {
                TextFile { name: "-".into(), path: None, text: read_text(std::io::stdin().lock(), "standard input", limits)?, read: None }
            }
            Some(path) => {
                let name = path.display().to_string();
                let (text, read) = super::fingerprint::read(&path, |file| read_text(file, &name, limits))?;
                TextFile { name, path: Some(path), text, read: Some(read) }
            }
        });
        Ok(())
    })?;
    Ok(files)
}

/// The documents of a text read for an edit ([`read`]), decoded as [`load`] decodes a file: as
/// it streams (documents only counted are not built), else whole.
pub fn parsed(file: &TextFile, pools: Pools, limits: Limits) -> Result<LoadedFile> {
    let stream = |syntax| {
        parse_stream_as(file.text.as_bytes(), &file.name, pools, limits, syntax).map_err(|why| input(format!("{}: {why}", file.name)))
    };
    let kept = match stream(Syntax::Sniffed)? {
        None => stream(Syntax::Yaml)?,
        kept => kept,
    };
    Ok(match kept {
        Some(kept) => LoadedFile::streamed(file.name.clone(), kept),
        None => LoadedFile::whole(file.name.clone(), manifest::parse(&file.text, &file.name)?),
    })
}

/// Only snapshots read archives: an edit has no file to write back to. Edit commands call this
/// before reading anything, so the refusal is the one line they print.
pub fn refuse_archives(paths: &[String]) -> Result<()> {
    for path in paths.iter().filter(|p| *p != "-") {
        if let Ok(meta) = std::fs::metadata(path) {
            refuse_archive(path, &meta)?;
        }
    }
    Ok(())
}

fn refuse_archive(path: &str, meta: &std::fs::Metadata) -> Result<()> {
    if meta.is_file() && archive::kind_of(Path::new(path))?.is_some() {
        return Err(input(format!(
            "{path}: an archive is a read-only input: extract it first, then pass the manifest file to edit with -f"
        )));
    }
    Ok(())
}

/// Hands every input to `visit` in order (`None` for standard input), so that an error in an
/// earlier file is reported before a later file is read.
fn each_input(paths: &[String], visit: &mut dyn FnMut(Option<PathBuf>) -> Result<()>) -> Result<()> {
    for path in paths {
        if path == "-" {
            visit(None)?;
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| input(format!("cannot read {path}: {e}")))?;
        refuse_archive(path, &meta)?;
        let mut found = Vec::new();
        if meta.is_dir() {
            walk(Path::new(path), &mut found)?;
        } else {
            found.push(PathBuf::from(path));
        }
        for file in found {
            visit(Some(file))?;
        }
    }
    Ok(())
}

/// The fast path of [`load`]: the file's documents decoded from a buffered stream, or `None`
/// when anything is out of the ordinary (the caller then reads it whole); an error when reading
/// it whole would cost too much (a line over `limits.line_bytes`, `--max-line-size`).
fn stream_file(path: &Path, pools: Pools, limits: Limits) -> Result<Option<Kept>> {
    let name = path.display().to_string();
    let stream = |syntax| {
        let Ok(file) = std::fs::File::open(path) else { return Ok(None) };
        let bounded = archive::Bounded { inner: file, left: limits.input_bytes, limits };
        parse_stream_as(Guarded(bounded), &name, pools, limits, syntax).map_err(|why| input(format!("{name}: {why}")))
    };
    match stream(Syntax::Sniffed)? {
        // What starts like JSON but is not JSON is YAML, as kubectl reads it (`{}` documents
        // between `---` lines): read again as it streams, not whole (issue 53: 10 MiB of
        // `{}\n---\n` took 292 MiB read whole, 100 MiB passed 2 GiB).
        None => stream(Syntax::Yaml),
        kept => Ok(kept),
    }
}

/// The manifest files under `dir`, sorted, recursively. Symlinks are followed, each directory
/// walked and each file read once (a link to an ancestor is a loop, not an endless walk; a link
/// to a file already found is not a second copy); FIFOs, devices and
/// sockets are skipped (reading a FIFO nobody writes to would block).
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    walk_from(dir, 0, &mut seen, out, &mut Vec::new())
}

/// [`walk`], also collecting the regular files that are not manifests into `others`.
fn walk_from(
    dir: &Path,
    depth: usize,
    seen: &mut std::collections::HashSet<(u64, u64)>,
    out: &mut Vec<PathBuf>,
    others: &mut Vec<PathBuf>,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).map_err(|e| input(format!("cannot read directory {}: {e}", dir.display())))?;
    if !seen.insert((meta.dev(), meta.ino())) {
        return Ok(());
    }
    if depth > MAX_DEPTH {
        return Err(input(format!(
            "{}: directories nested more than {MAX_DEPTH} deep; pass a directory closer to the manifests",
            dir.display()
        )));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| input(format!("cannot read directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        // Dangling links and unreadable entries are skipped, as non-manifest files are.
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        if meta.is_dir() {
            walk_from(&path, depth + 1, seen, out, others)?;
        } else if meta.is_file() && seen.insert((meta.dev(), meta.ino())) {
            if is_manifest_name(&path) { out.push(path) } else { others.push(path) }
        }
    }
    Ok(())
}

/// A CiliumPodIPPool name that more than one document of the input defines. The copies may
/// differ (a kustomize base and its overlay): the figures use one, an edit would go into
/// another, so reads warn and `--in-place` refuses.
#[derive(Debug, PartialEq, Eq)]
pub struct DuplicatePool {
    pub name: String,
    /// Each file holding a copy, with how many copies it holds, in input order.
    pub files: Vec<(String, usize)>,
}

impl std::fmt::Display for DuplicatePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let copies: usize = self.files.iter().map(|(_, n)| n).sum();
        let places: Vec<String> =
            self.files.iter().map(|(file, n)| if *n > 1 { format!("{file} ({n} documents)") } else { file.clone() }).collect();
        write!(f, "CiliumPodIPPool {} is defined {copies} times: {}", self.name, places.join(", "))
    }
}

/// Reads go on with one warning line per duplicate on stderr.
pub fn warn_duplicates(files: &[LoadedFile]) {
    for duplicate in duplicate_pools(files) {
        warn_line!("warning: {duplicate}; the figures use only one copy — pass the files one at a time to see each");
    }
}

/// `--in-place` refuses to write when any pool is defined twice: the copy analysed and the copy
/// edited could differ, and the wrong document would be rewritten.
pub fn refuse_duplicates(files: &[LoadedFile]) -> Result<()> {
    match duplicate_pools(files).first() {
        None => Ok(()),
        Some(duplicate) => Err(input(format!(
            "{duplicate}; --in-place cannot tell which copy to edit — pass the files one at a time (e.g. -f {}); nothing was written",
            duplicate.files[0].0
        ))),
    }
}

/// Every pool name defined more than once across `files`, pools inside `List`s included. Copies
/// that share a `metadata.uid` are one cluster object read through two API versions (a dump
/// may hold both views) and are not counted twice.
pub fn duplicate_pools(files: &[LoadedFile]) -> Vec<DuplicatePool> {
    // name -> (file, uid) of every copy, in input order.
    let mut copies: std::collections::BTreeMap<&str, Vec<(&str, Option<&str>)>> = Default::default();
    for file in files {
        for doc in &file.documents {
            for pool in crate::model::pool::pool_objects(doc) {
                let Some(name) = pool.pointer("/metadata/name").and_then(Value::as_str) else { continue };
                let uid = pool.pointer("/metadata/uid").and_then(Value::as_str).filter(|u| !u.is_empty());
                let seen = copies.entry(name).or_default();
                if uid.is_none() || !seen.iter().any(|(_, u)| *u == uid) {
                    seen.push((file.name.as_str(), uid));
                }
            }
        }
    }
    copies
        .into_iter()
        .filter(|(_, seen)| seen.len() > 1)
        .map(|(name, seen)| {
            let mut files: Vec<(String, usize)> = Vec::new();
            for (file, _) in seen {
                match files.iter_mut().find(|(f, _)| f == file) {
                    Some((_, n)) => *n += 1,
                    None => files.push((file.to_string(), 1)),
                }
            }
            DuplicatePool { name: name.to_string(), files }
        })
        .collect()
}

fn read_file(path: PathBuf, limits: Limits) -> Result<TextFile> {
    let name = path.display().to_string();
    let reader = std::fs::File::open(&path).map_err(|e| input(format!("cannot read {name}: {e}")))?;
    let text = read_text(reader, &name, limits)?;
    Ok(TextFile { name, path: Some(path), text, read: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_pools_across_and_within_files_and_lists() {
        let pool = |name: &str, uid: Option<&str>| serde_json::json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": name, "uid": uid}});
        let file = |name: &str, documents: Vec<Value>| LoadedFile::whole(name.into(), documents);
        let files = vec![
            file("base/pool.yaml", vec![pool("blue", None), pool("red", None)]),
            file("overlay/pool.yaml", vec![pool("blue", None)]),
            file(
                "one.yaml",
                vec![pool("green", None), serde_json::json!({"kind": "CiliumPodIPPoolList", "items": [{"metadata": {"name": "green"}}]})],
            ),
            // One cluster object read through two versions is not a duplicate.
            file("dump.yaml", vec![pool("gold", Some("u1")), pool("gold", Some("u1"))]),
        ];
        let found = duplicate_pools(&files);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].to_string(), "CiliumPodIPPool blue is defined 2 times: base/pool.yaml, overlay/pool.yaml");
        assert_eq!(found[1].to_string(), "CiliumPodIPPool green is defined 2 times: one.yaml (2 documents)");
        assert!(duplicate_pools(&files[3..]).is_empty());
    }
}
