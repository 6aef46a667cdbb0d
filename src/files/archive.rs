//! Archives as `-f` input: a `cilium sysdump` as users receive it (`.zip`), or packed as
//! `.tar.gz`/`.tar`. Members are treated like the files of a walked directory (sorted by name;
//! those that hold no Kubernetes objects are skipped). Bounded against archive bombs: one member
//! at a time is parsed as it is decompressed and then dropped, so memory follows the objects
//! kept, not the members' sizes; each member is counted as it streams against the input limit
//! (`Limits::input_bytes`), the whole archive against [`Limits::archive_bytes`] decompressed, and
//! at most [`MAX_ARCHIVE_MEMBERS`] members are read.

use super::inputs::{self, Inputs, SkippedFile, is_manifest_name, not_manifest_reason, stream_input, streamed_member};
use super::limits::Limits;
use crate::error::input;
use anyhow::Result;
use std::io::{Read, Seek};
use std::path::Path;

/// Members an archive may list.
pub const MAX_ARCHIVE_MEMBERS: usize = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Zip,
    TarGz,
    Tar,
}

/// The archive format of a file, from its first bytes (not its name).
pub fn kind_of(path: &Path) -> Result<Option<Kind>> {
    let mut head = [0u8; 262];
    let file = std::fs::File::open(path).map_err(|e| input(format!("cannot read {}: {e}", path.display())))?;
    let mut n = 0;
    let mut reader = file.take(head.len() as u64);
    while let Ok(read) = reader.read(&mut head[n..]) {
        if read == 0 {
            break;
        }
        n += read;
    }
    Ok(kind_of_head(&head[..n]))
}

/// The archive format that a file starting with `head` (its first 262 bytes or fewer) has.
pub fn kind_of_head(head: &[u8]) -> Option<Kind> {
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Kind::Zip)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some(Kind::TarGz)
    } else if head.len() >= 262 && &head[257..262] == b"ustar" {
        Some(Kind::Tar)
    } else {
        None
    }
}

/// Whether a file name says archive (`.zip`, `.tar`, `.tar.gz`, `.tgz`): such a file that is
/// not one by its content is refused rather than parsed as YAML.
pub fn named_like_one(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".zip", ".tar", ".tar.gz", ".tgz"].iter().any(|ext| name.ends_with(ext))
}

/// Reads the members of an archive into `inputs` within `limits`; `name` is the path as the user
/// gave it.
pub fn read(path: &Path, name: &str, kind: Kind, inputs: &mut Inputs, limits: Limits) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| input(format!("cannot read {name}: {e}")))?;
    read_from(file, name, kind, inputs, limits)
}

/// [`read`] of an archive's bytes from any reader (the `archive` fuzz target reads them from memory).
pub fn read_from(reader: impl Read + Seek, name: &str, kind: Kind, inputs: &mut Inputs, limits: Limits) -> Result<()> {
    match kind {
        Kind::Zip => read_zip(reader, name, inputs, limits),
        Kind::TarGz => read_tar(flate2::read::GzDecoder::new(reader), name, inputs, limits),
        Kind::Tar => read_tar(reader, name, inputs, limits),
    }
}

fn read_zip(file: impl Read + Seek, name: &str, inputs: &mut Inputs, limits: Limits) -> Result<()> {
    let broken = |e: &dyn std::fmt::Display| {
        input(format!(
            "{name}: not a readable zip archive ({e}): truncated or corrupt? get the sysdump again, or unzip what can be read and pass the directory with -f"
        ))
    };
    let mut zip = zip::ZipArchive::new(file).map_err(|e| broken(&e))?;
    if zip.len() > MAX_ARCHIVE_MEMBERS {
        return Err(input(format!("{name}: {} members, more than {MAX_ARCHIVE_MEMBERS}; extract the files you need", zip.len())));
    }
    let mut members: Vec<(String, usize)> = Vec::new();
    for index in 0..zip.len() {
        if let Some(member) = zip.name_for_index(index) {
            members.push((member.map_err(|e| broken(&e))?.into_owned(), index));
        }
    }
    members.sort();
    let mut budget = limits.archive_bytes();
    for (member, index) in members {
        if member.ends_with('/') {
            continue;
        }
        let shown = format!("{name}:{member}");
        if !is_manifest_name(Path::new(&member)) {
            inputs.skipped.push(SkippedFile { reason: not_manifest_reason(Path::new(&member)), name: shown });
            continue;
        }
        let entry = zip.by_index(index).map_err(|e| broken(&e))?;
        let declared = entry.size();
        read_member(entry, declared, shown, &mut budget, inputs, limits)?;
    }
    Ok(())
}

fn read_tar(reader: impl Read, name: &str, inputs: &mut Inputs, limits: Limits) -> Result<()> {
    let broken = |e: &dyn std::fmt::Display| input(format!("{name}: not a readable tar archive: {e}"));
    // The whole stream is decompressed, skipped members too: bound all of it.
    let mut archive = tar::Archive::new(Bounded { inner: reader, left: limits.archive_bytes(), limits });
    // Members come in the archive's order; what they hold is sorted by name below, as a zip's or
    // a walked directory's is. Each is parsed as it streams and its text dropped.
    let mut read = Inputs::default();
    let mut budget = limits.archive_bytes();
    for (count, entry) in archive.entries().map_err(|e| broken(&e))?.enumerate() {
        if count >= MAX_ARCHIVE_MEMBERS {
            return Err(input(format!("{name}: more than {MAX_ARCHIVE_MEMBERS} members; extract the files you need")));
        }
        let entry = entry.map_err(|e| broken(&e))?;
        let member = entry.path().map_err(|e| broken(&e))?.to_string_lossy().into_owned();
        let shown = format!("{name}:{member}");
        let kind = entry.header().entry_type();
        if !kind.is_file() {
            if let Some(reason) = not_a_file(kind) {
                read.skipped.push(SkippedFile { name: shown, reason: reason.into() });
            }
            continue;
        }
        if !is_manifest_name(Path::new(&member)) {
            read.skipped.push(SkippedFile { reason: not_manifest_reason(Path::new(&member)), name: shown });
            continue;
        }
        let declared = entry.size();
        read_member(entry, declared, shown, &mut budget, &mut read, limits)?;
    }
    read.files.sort_by(|a, b| a.name.cmp(&b.name));
    read.skipped.sort_by(|a, b| a.name.cmp(&b.name));
    inputs.files.extend(read.files);
    inputs.skipped.extend(read.skipped);
    Ok(())
}

/// Why a tar member that is not a regular file is skipped; `None` for directories and the
/// archive's own metadata (PAX and GNU headers), which are no files.
fn not_a_file(kind: tar::EntryType) -> Option<&'static str> {
    use tar::EntryType as T;
    match kind {
        T::Directory | T::XGlobalHeader | T::XHeader | T::GNULongName | T::GNULongLink => None,
        T::Symlink => Some("a symbolic link (links in archives are not followed)"),
        T::Link => Some("a hard link (links in archives are not followed)"),
        T::Char | T::Block => Some("a device, not a file"),
        T::Fifo => Some("a FIFO, not a file"),
        _ => Some("not a regular file"),
    }
}

/// One member, parsed as it is decompressed (at most `limits.input_bytes`, and what is left of
/// the archive's budget) and then dropped; only the objects kept of it stay. A member whose
/// header already declares more (`declared`) is refused before a byte of it is read; one that
/// declares less than it holds is still cut off by the count as it streams.
fn read_member(reader: impl Read, declared: u64, shown: String, budget: &mut u64, inputs: &mut Inputs, limits: Limits) -> Result<()> {
    let limit = limits.input_bytes.min(*budget);
    let too_large = || {
        if limit < limits.input_bytes {
            format!(
                "{shown}: the archive expands to more than {} (16 × --max-input-size); extract the files you need and pass them with -f",
                crate::bytes::show(limits.archive_bytes())
            )
        } else {
            inputs::too_large(&shown, limits)
        }
    };
    if declared > limit {
        return Err(input(too_large()));
    }
    // An archive is only read: edits refuse it.
    let (streamed, read) = stream_input(reader, &shown, Limits { input_bytes: limit, ..limits }, &too_large, inputs::Pools::Read)?;
    *budget -= read;
    streamed_member(shown, streamed, inputs);
    Ok(())
}

/// A reader that fails (instead of ending) after `left` bytes, so that a truncated stream is
/// never mistaken for a complete one; its error names the archive bound of `limits`.
pub(super) struct Bounded<R> {
    pub(super) inner: R,
    pub(super) left: u64,
    pub(super) limits: Limits,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!(
                "expands to more than {} (16 × --max-input-size)",
                crate::bytes::show(self.limits.archive_bytes())
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}
