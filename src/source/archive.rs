//! Archives as `-f` input: a `cilium sysdump` as users receive it (`.zip`), or packed as
//! `.tar.gz`/`.tar`. Members are treated like the files of a walked directory (sorted by name;
//! those that hold no Kubernetes objects are skipped). Bounded against archive bombs: each member
//! is read as any input (at most `files::MAX_INPUT_BYTES`), the whole archive at most
//! [`MAX_ARCHIVE_BYTES`] decompressed and [`MAX_ARCHIVE_MEMBERS`] members.

use super::files::{Inputs, SkippedFile, is_manifest_name, not_manifest_reason, read_text_or_binary, walked};
use crate::error::input;
use anyhow::Result;
use std::io::Read;
use std::path::Path;

/// Decompressed bytes an archive may expand to in total (members skipped unread in a zip do not
/// count; a tar stream is decompressed whole).
pub const MAX_ARCHIVE_BYTES: u64 = 16 << 30;
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
    let head = &head[..n];
    Ok(if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        Some(Kind::Zip)
    } else if head.starts_with(&[0x1f, 0x8b]) {
        Some(Kind::TarGz)
    } else if head.len() >= 262 && &head[257..262] == b"ustar" {
        Some(Kind::Tar)
    } else {
        None
    })
}

/// Whether a file name says archive (`.zip`, `.tar`, `.tar.gz`, `.tgz`): such a file that is
/// not one by its content is refused rather than parsed as YAML.
pub fn named_like_one(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [".zip", ".tar", ".tar.gz", ".tgz"].iter().any(|ext| name.ends_with(ext))
}

/// Reads the members of an archive into `inputs`; `name` is the path as the user gave it.
pub fn read(path: &Path, name: &str, kind: Kind, inputs: &mut Inputs) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| input(format!("cannot read {name}: {e}")))?;
    match kind {
        Kind::Zip => read_zip(file, name, inputs),
        Kind::TarGz => read_tar(flate2::read::GzDecoder::new(file), name, inputs),
        Kind::Tar => read_tar(file, name, inputs),
    }
}

fn read_zip(file: std::fs::File, name: &str, inputs: &mut Inputs) -> Result<()> {
    let broken = |e: &dyn std::fmt::Display| {
        input(format!("{name}: not a readable zip archive ({e}): truncated or corrupt? get the sysdump again, or unzip what can be read and pass the directory with -f"))
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
    let mut budget = MAX_ARCHIVE_BYTES;
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
        let text = read_member(entry, &shown, &mut budget)?;
        walked(shown, text, inputs);
    }
    Ok(())
}

fn read_tar(reader: impl Read, name: &str, inputs: &mut Inputs) -> Result<()> {
    let broken = |e: &dyn std::fmt::Display| input(format!("{name}: not a readable tar archive: {e}"));
    // The whole stream is decompressed, skipped members too: bound all of it.
    let mut archive = tar::Archive::new(Bounded { inner: reader, left: MAX_ARCHIVE_BYTES });
    let mut members: Vec<(String, Result<String, String>)> = Vec::new();
    let mut skipped = Vec::new();
    let mut budget = MAX_ARCHIVE_BYTES;
    for (count, entry) in archive.entries().map_err(|e| broken(&e))?.enumerate() {
        if count >= MAX_ARCHIVE_MEMBERS {
            return Err(input(format!("{name}: more than {MAX_ARCHIVE_MEMBERS} members; extract the files you need")));
        }
        let entry = entry.map_err(|e| broken(&e))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let member = entry.path().map_err(|e| broken(&e))?.to_string_lossy().into_owned();
        let shown = format!("{name}:{member}");
        if !is_manifest_name(Path::new(&member)) {
            skipped.push(SkippedFile { reason: not_manifest_reason(Path::new(&member)), name: shown });
            continue;
        }
        let text = read_member(entry, &shown, &mut budget)?;
        members.push((shown, text));
    }
    // Same order as a zip or a walked directory: by name.
    members.sort_by(|a, b| a.0.cmp(&b.0));
    for (shown, text) in members {
        walked(shown, text, inputs);
    }
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    inputs.skipped.extend(skipped);
    Ok(())
}

/// One member's text (or why it is binary), decompressed, within what is left of the archive's
/// budget (the per-input limit is `read_text_or_binary`'s).
fn read_member(reader: impl Read, shown: &str, budget: &mut u64) -> Result<Result<String, String>> {
    let text = read_text_or_binary(Bounded { inner: reader, left: *budget }, shown)?;
    *budget -= text.as_ref().map_or(0, |t| t.len() as u64);
    Ok(text)
}

/// A reader that fails (instead of ending) after `left` bytes, so that a truncated stream is
/// never mistaken for a complete one.
pub(super) struct Bounded<R> {
    pub(super) inner: R,
    pub(super) left: u64,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(format!("expands to more than {} GiB", MAX_ARCHIVE_BYTES >> 30)));
        }
        self.left -= n as u64;
        Ok(n)
    }
}
