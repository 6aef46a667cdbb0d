//! Writing files so that an interruption never leaves a truncated or half-written file:
//! write a temporary file beside the target, fsync it, rename it over the target.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Replaces `path` with `contents` atomically, keeping the file's permission bits; a new file
/// gets `new_mode`.
pub fn write_atomic(path: &Path, contents: &[u8], new_mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(new_mode);
    let mut tmp = tempfile::Builder::new()
        .prefix(".ciliumpool-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    // Make the rename itself durable.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keeps_mode_and_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pool.yaml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
        let fresh = dir.path().join("backup.yaml");
        write_atomic(&fresh, b"x", 0o600).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file left behind");
    }
}
