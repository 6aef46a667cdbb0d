//! Writing files so that an interruption never leaves a truncated or half-written file, and a
//! set of files is replaced all together or not at all (as far as a filesystem allows):
//!
//! * every new content is first *staged*: a temporary `.ciliumpool-*` file beside its target,
//!   written, fsynced, given the target's mode and owner, and locked (`flock`) while in use;
//! * then the staged files are renamed over their targets, one after the other; a rename that
//!   fails is reported with the list of files already replaced;
//! * SIGINT, SIGTERM and SIGHUP remove the staged files before the process ends (a rename in
//!   progress is finished first); a SIGKILL leaves them, and the next write into the same
//!   directory removes every `.ciliumpool-*` file no running process holds locked.
//!
//! A symlinked target is written through: its final target is replaced and the link kept. A
//! target with several hard links is refused, since a rename would split them.
//!
//! An edit of a file that was read ([`stage_edit`]) is compare-and-swap (`fingerprint`): it
//! goes to the path resolved when the file was read, and every such file is checked to be still
//! what was read before the first rename and again just before its own; a changed one is not
//! replaced (exit 1, `<path> changed since it was read: run again`).

use super::fingerprint::Fingerprint;
use crate::error::{condition, input};
use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

const TEMP_PREFIX: &str = ".ciliumpool-";

/// Staged files not yet renamed, for the signal handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// New content for one file, complete on disk beside its target, not yet in place.
pub struct Staged {
    /// The path the user named.
    pub path: PathBuf,
    /// The file that is replaced: `path`, or its symlink's final target.
    pub target: PathBuf,
    /// What the file was when read, for an edit: it must still be that when it is replaced.
    read: Option<Fingerprint>,
    /// Whether `path` is a symlink to `target`.
    link: bool,
    tmp: tempfile::NamedTempFile,
}

impl Staged {
    /// `path (symlink to target)` when the two differ.
    pub fn describe(&self) -> String {
        if !self.link { self.path.display().to_string() } else { format!("{} (symlink to {})", self.path.display(), self.target.display()) }
    }
}

/// Writes `contents` beside `path` (its symlink's target when it is one), ready to replace it.
/// A new file gets `new_mode`; an existing one keeps its mode and owner. Nothing of `path`
/// changes here.
pub fn stage(path: &Path, contents: &[u8], new_mode: u32) -> Result<Staged> {
    let existing = std::fs::symlink_metadata(path).ok();
    let (target, link) = match &existing {
        Some(m) if m.file_type().is_symlink() => (
            std::fs::canonicalize(path)
                .map_err(|e| input(format!("{} is a symlink whose target cannot be resolved: {e}; nothing was written", path.display())))?,
            true,
        ),
        _ => (path.to_path_buf(), false),
    };
    stage_at(Staged::place(path, target, None, link), contents, new_mode)
}

/// Writes the edit of a file that was read beside the file `read` resolved to (never beside a
/// target a symlink points to since), ready to replace it if it is still what was read
/// ([`commit`] checks). It keeps the file's mode and owner.
pub fn stage_edit(read: &Fingerprint, contents: &[u8]) -> Result<Staged> {
    stage_at(Staged::place(&read.path, read.resolved.clone(), Some(read.clone()), read.was_link), contents, 0o644)
}

/// Where a [`Staged`] goes, before its temporary file exists.
struct Place {
    path: PathBuf,
    target: PathBuf,
    read: Option<Fingerprint>,
    link: bool,
}

impl Staged {
    fn place(path: &Path, target: PathBuf, read: Option<Fingerprint>, link: bool) -> Place {
        Place { path: path.to_path_buf(), target, read, link }
    }

    /// The refusal when the file is no longer what was read (`None`: it is, or nothing was read).
    fn changed(&self) -> Option<String> {
        self.read.as_ref().filter(|read| read.check().is_err()).map(Fingerprint::changed)
    }
}

fn stage_at(place: Place, contents: &[u8], new_mode: u32) -> Result<Staged> {
    install_signal_cleanup();
    let Place { path, target, read, link } = place;
    let meta = std::fs::metadata(&target).ok();
    if let Some(m) = &meta {
        if !m.is_file() {
            return Err(input(format!("{} is not a regular file; nothing was written", target.display())));
        }
        if m.nlink() > 1 {
            return Err(input(format!(
                "{} has {} hard links; replacing it would split them (the other names would keep the old content): edit a copy without extra links; nothing was written",
                target.display(),
                m.nlink()
            )));
        }
    }
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    remove_stale(dir);
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}; nothing was written", dir.display()))?;
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(tmp.path().to_path_buf());
    let staged = Staged { path, target: target.clone(), read, link, tmp };
    // Held until the file is renamed or removed: a later run leaves locked files alone.
    staged.tmp.as_file().try_lock().ok();
    let file = staged.tmp.as_file();
    file.set_permissions(std::fs::Permissions::from_mode(meta.as_ref().map_or(new_mode, |m| m.permissions().mode() & 0o7777)))?;
    if let Some(m) = &meta {
        std::os::unix::fs::fchown(file, Some(m.uid()), Some(m.gid())).map_err(|e| {
            input(format!("cannot keep the owner {}:{} of {}: {e}; nothing was written", m.uid(), m.gid(), target.display()))
        })?;
    }
    let mut writer = file;
    writer.write_all(contents).with_context(|| format!("cannot write a temporary file in {}; nothing was written", dir.display()))?;
    file.sync_all()?;
    Ok(staged)
}

/// A rename that failed after others succeeded.
#[derive(Debug, thiserror::Error)]
#[error("cannot replace {failed}: {cause}; already replaced: {}; not replaced: {}", list(.written), list(.not_written))]
pub struct PartialWrite {
    pub failed: String,
    pub cause: String,
    pub written: Vec<String>,
    pub not_written: Vec<String>,
}

fn list(items: &[String]) -> String {
    if items.is_empty() { "none".into() } else { items.join(", ") }
}

/// Renames every staged file over its target, in order; returns their descriptions. The signal
/// handler waits until this returns. An edited file that is no longer what was read is not
/// replaced: all are checked before the first rename, each again just before its own.
pub fn commit(staged: Vec<Staged>) -> Result<Vec<String>> {
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    // Each staged file is renamed or, dropped, removed before this returns.
    pending.retain(|p| !staged.iter().any(|s| s.tmp.path() == p));
    if let Some(changed) = staged.iter().find_map(Staged::changed) {
        return Err(condition(changed));
    }
    let mut written = Vec::new();
    let mut rest = staged.into_iter();
    while let Some(file) = rest.next() {
        let description = file.describe();
        let dir = file.target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
        let not_written = |rest: std::vec::IntoIter<Staged>| -> Vec<String> {
            std::iter::once(description.clone()).chain(rest.map(|s| s.describe())).collect()
        };
        if let Some(changed) = file.changed() {
            return Err(condition(format!("{changed}; already replaced: {}; not replaced: {}", list(&written), list(&not_written(rest)))));
        }
        if let Err(e) = file.tmp.persist(&file.target) {
            return Err(anyhow::Error::new(PartialWrite {
                failed: description.clone(),
                cause: e.error.to_string(),
                written,
                not_written: not_written(rest),
            }));
        }
        // Make the rename itself durable.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        written.push(description);
    }
    Ok(written)
}

/// Replaces `path` with `contents` atomically (see [`stage`]).
pub fn write_atomic(path: &Path, contents: &[u8], new_mode: u32) -> Result<()> {
    commit(vec![stage(path, contents, new_mode)?]).map(drop)
}

/// Creates `path` with `contents` and mode 0600, complete when it appears; fails when `path`
/// exists (even as a dangling symlink): a file created since any earlier check is never
/// overwritten.
pub fn write_new_private(path: &Path, contents: &[u8]) -> Result<()> {
    install_signal_cleanup();
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(TEMP_PREFIX).permissions(std::fs::Permissions::from_mode(0o600)).tempfile_in(dir)?;
    PENDING.lock().unwrap_or_else(|e| e.into_inner()).push(tmp.path().to_path_buf());
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600))?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    pending.retain(|p| p != tmp.path());
    tmp.persist_noclobber(path).map_err(|e| match e.error.kind() {
        std::io::ErrorKind::AlreadyExists => input(format!("{} already exists (created meanwhile?); it was left as it is", path.display())),
        _ => anyhow::Error::new(e.error).context(format!("cannot create {}", path.display())),
    })?;
    Ok(())
}

/// Removes `.ciliumpool-*` files in `dir` that no running process holds locked: left by a run
/// that was killed before it could clean up.
pub fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(TEMP_PREFIX) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        if let Ok(file) = std::fs::File::open(&path)
            && file.try_lock().is_ok()
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// On SIGINT, SIGTERM or SIGHUP: remove staged files (after a commit in progress), then end
/// with the signal's usual exit status (`crate::interrupt`).
fn install_signal_cleanup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| crate::interrupt::on_signal(remove_pending));
}

fn remove_pending() {
    let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
    for path in pending.iter() {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn keeps_mode_and_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.yaml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o640);
        let fresh = dir.path().join("backup.yaml");
        write_atomic(&fresh, b"x", 0o600).unwrap();
        assert_eq!(mode(&fresh), 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
    }

    #[test]
    fn symlinks_are_written_through_and_hard_links_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.yaml");
        let link = dir.path().join("link.yaml");
        std::fs::write(&real, "old").unwrap();
        std::os::unix::fs::symlink("real.yaml", &link).unwrap();
        let staged = stage(&link, b"new", 0o644).unwrap();
        assert_eq!(staged.describe(), format!("{} (symlink to {})", link.display(), std::fs::canonicalize(&real).unwrap().display()));
        commit(vec![staged]).unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        let hard = dir.path().join("hard.yaml");
        std::fs::hard_link(&real, &hard).unwrap();
        let err = write_atomic(&hard, b"newer", 0o644).unwrap_err().to_string();
        assert!(err.contains("has 2 hard links") && err.contains("nothing was written"), "{err}");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
    }

    #[test]
    fn new_private_files_never_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("backup.yaml");
        write_new_private(&path, b"one").unwrap();
        assert_eq!(mode(&path), 0o600);
        let err = write_new_private(&path, b"two").unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");
        let dangling = dir.path().join("dangling.yaml");
        std::os::unix::fs::symlink("nowhere", &dangling).unwrap();
        assert!(write_new_private(&dangling, b"x").is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
    }

    #[test]
    fn stale_temporary_files_are_removed_unless_locked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".ciliumpool-stale1"), "partial").unwrap();
        let held = dir.path().join(".ciliumpool-held");
        let holder = std::fs::File::create(&held).unwrap();
        holder.lock().unwrap();
        remove_stale(dir.path());
        assert!(!dir.path().join(".ciliumpool-stale1").exists());
        assert!(held.exists(), "a file another process is writing stays");
    }
}
