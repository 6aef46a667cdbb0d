//! Compare-and-swap for files: what a file to be edited was when it was read, and the check,
//! just before its replacement is renamed over it (`atomic::commit`), that it still is.
//!
//! The path is resolved once, when it is read (symlinks followed, `canonicalize`): the edit
//! replaces that resolved file and no other. At the check the path must still resolve to it (a
//! symlink pointing elsewhere now, a file deleted or renamed over, a symlink put in its place
//! all count as changed), the resolved path must still be that file (device, inode, size,
//! modification time) and hold the very bytes that were read. The short window between this
//! check and `rename(2)` cannot be closed on POSIX (docs/reliability.md, "Not guaranteed").

use crate::error::{condition, input};
use anyhow::Result;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A file as it was read for an edit.
#[derive(Clone, Debug)]
pub struct Fingerprint {
    /// The path as the user named it.
    pub path: PathBuf,
    /// `path` resolved when it was read: the one file the edit may replace.
    pub resolved: PathBuf,
    /// Whether `path` itself was a symlink.
    pub was_link: bool,
    identity: Identity,
    /// The SHA-256 of the bytes read, and how many there were: a copy of them doubled what an
    /// edit of a large file held.
    digest: [u8; 32],
    len: u64,
}

/// Which file, and in which state: a rename over it changes the inode, a write its size or
/// modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        Identity { dev: meta.dev(), ino: meta.ino(), len: meta.len(), mtime: (meta.mtime(), meta.mtime_nsec()) }
    }
}

/// Reads `path` for an edit with `read` (given the open file) and remembers what was read: the
/// resolved path, the file's identity when opened, and the bytes `read` returned.
pub fn read<T: AsRef<[u8]>>(path: &Path, read: impl FnOnce(&std::fs::File) -> Result<T>) -> Result<(T, Fingerprint)> {
    let cannot = |e: std::io::Error| input(format!("cannot read {}: {e}", path.display()));
    let was_link = std::fs::symlink_metadata(path).map_err(cannot)?.file_type().is_symlink();
    let resolved = std::fs::canonicalize(path).map_err(cannot)?;
    let file = std::fs::File::open(&resolved).map_err(cannot)?;
    let identity = Identity::of(&file.metadata().map_err(cannot)?);
    let text = read(&file)?;
    let (digest, len) = (sha256(text.as_ref()), text.as_ref().len() as u64);
    Ok((text, Fingerprint { path: path.to_path_buf(), resolved, was_link, identity, digest, len }))
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    ring::digest::digest(&ring::digest::SHA256, bytes).as_ref().try_into().expect("SHA-256 is 32 bytes")
}

impl Fingerprint {
    /// `Ok` while the file is what was read; otherwise the one-line refusal (exit 1).
    pub fn check(&self) -> Result<()> {
        if self.unchanged() { Ok(()) } else { Err(condition(self.changed())) }
    }

    /// The refusal's text: `<path> changed since it was read: run again`.
    pub fn changed(&self) -> String {
        format!("{} changed since it was read: run again", self.path.display())
    }

    fn unchanged(&self) -> bool {
        let Ok(named) = std::fs::symlink_metadata(&self.path) else { return false };
        if named.file_type().is_symlink() != self.was_link || std::fs::canonicalize(&self.path).ok().as_ref() != Some(&self.resolved) {
            return false;
        }
        // The resolved path itself must not have become a symlink (a rename replaces the link,
        // but the file read is gone from that path all the same).
        let Ok(at) = std::fs::symlink_metadata(&self.resolved) else { return false };
        if !at.file_type().is_file() || Identity::of(&at) != self.identity {
            return false;
        }
        let Ok(file) = std::fs::File::open(&self.resolved) else { return false };
        if file.metadata().map(|m| Identity::of(&m)).ok().as_ref() != Some(&self.identity) {
            return false;
        }
        // One byte more than was read: a file that grew since is not read whole.
        let mut now = file.take(self.len + 1);
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        let (mut chunk, mut read) = (vec![0u8; 1 << 16], 0u64);
        loop {
            match now.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    context.update(&chunk[..n]);
                    read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        read == self.len && context.finish().as_ref() == self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(path: &Path) -> Fingerprint {
        read(path, |mut file| {
            let mut text = String::new();
            file.read_to_string(&mut text)?;
            Ok(text)
        })
        .unwrap()
        .1
    }

    fn refused(read: &Fingerprint) -> String {
        let err = read.check().unwrap_err();
        assert_eq!(crate::error::exit_code(&err), 1);
        err.to_string()
    }

    #[test]
    fn unchanged_files_pass_and_every_change_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.yaml");
        std::fs::write(&path, "a: 1\n").unwrap();
        let read = read_text(&path);
        assert!(read.check().is_ok());
        assert!(!read.was_link);
        // Appended.
        std::fs::write(&path, "a: 1\n---\nb: 2\n").unwrap();
        assert_eq!(refused(&read), format!("{} changed since it was read: run again", path.display()));
        // The same bytes in a new file renamed over it.
        let read = read_text(&path);
        let other = dir.path().join("new");
        std::fs::write(&other, std::fs::read(&path).unwrap()).unwrap();
        std::fs::rename(&other, &path).unwrap();
        refused(&read);
        // Deleted.
        let read = read_text(&path);
        std::fs::remove_file(&path).unwrap();
        refused(&read);
        // Replaced by a symlink to a copy.
        std::fs::write(&other, "a: 1\n").unwrap();
        std::fs::write(&path, "a: 1\n").unwrap();
        let read = read_text(&path);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&other, &path).unwrap();
        refused(&read);
    }

    #[test]
    fn symlinks_are_resolved_once() {
        let dir = tempfile::tempdir().unwrap();
        let (one, two, link) = (dir.path().join("one"), dir.path().join("two"), dir.path().join("link"));
        std::fs::write(&one, "x").unwrap();
        std::fs::write(&two, "x").unwrap();
        std::os::unix::fs::symlink("one", &link).unwrap();
        let read = read_text(&link);
        assert!(read.was_link);
        assert_eq!(read.resolved, std::fs::canonicalize(&one).unwrap());
        assert!(read.check().is_ok());
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("two", &link).unwrap();
        refused(&read);
    }
}
