//! What one `-f` read may cost ([`Limits`]: `--max-input-size`, `--max-line-size`): a value
//! handed down with the paths to every reader of files, stdin, archives and sysdumps, so that
//! two reads in one process (a test, a fleet) each obey their own.

/// The most one input (a file, stdin, an archive member) may hold unless `--max-input-size` says
/// otherwise. A `kubectl get -o yaml` of every pod of a large cluster is well below; `-f
/// /dev/zero` or a runaway pipe is refused instead of filling memory.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// The longest line a YAML input may have unless `--max-line-size` says otherwise. The YAML
/// parser builds a scalar whole, and a copy of it, before anything can look at it, so one long
/// line costs about three times its length; `kubectl get -o yaml` writes one field per line, and
/// no Kubernetes object is larger than a few MiB. JSON is not bounded by lines: compact JSON is
/// one line.
pub const DEFAULT_MAX_LINE_BYTES: u64 = 16 << 20;

/// The bounds of one read of `-f` inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The most one input (a file, stdin, an archive member) may hold (`--max-input-size`).
    pub input_bytes: u64,
    /// The longest line a YAML input may have (`--max-line-size`).
    pub line_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { input_bytes: DEFAULT_MAX_INPUT_BYTES, line_bytes: DEFAULT_MAX_LINE_BYTES }
    }
}

impl Limits {
    /// Decompressed bytes an archive may expand to in total (members skipped unread in a zip do
    /// not count; a tar stream is decompressed whole): 16 times `--max-input-size`, 16 GiB by
    /// default.
    pub fn archive_bytes(&self) -> u64 {
        self.input_bytes.saturating_mul(16)
    }
}

#[cfg(test)]
mod tests {
    use super::Limits;
    use crate::files::{Pools, read, snapshot};

    /// A pool whose annotation is one 200-byte line: about 330 bytes in all.
    fn pool_file(dir: &std::path::Path) -> String {
        let note = "x".repeat(200);
        let text = format!(
            "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata:\n  name: blue\n  annotations:\n    note: {note}\nspec:\n  ipv4:\n    cidrs: [10.0.0.0/16]\n    maskSize: 24\n"
        );
        let path = dir.join("pool.yaml");
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    /// The same file tar-ed, for the archive reader.
    fn pool_tar(dir: &std::path::Path, file: &str) -> String {
        let path = dir.join("dump.tar");
        let mut tar = tar::Builder::new(std::fs::File::create(&path).unwrap());
        tar.append_path_with_name(file, "pool.yaml").unwrap();
        tar.finish().unwrap();
        path.display().to_string()
    }

    /// What a snapshot of `path` within `limits` says: the pool's name, or the error.
    fn read_within(path: &str, limits: Limits) -> Result<String, String> {
        snapshot(&[path.to_string()], None, false, Pools::Read, limits)
            .map(|s| s.pools.iter().map(|p| p.name.clone()).collect())
            .map_err(|e| e.to_string())
    }

    const SHORT_LINES: Limits = Limits { input_bytes: super::DEFAULT_MAX_INPUT_BYTES, line_bytes: 100 };
    const SMALL_INPUTS: Limits = Limits { input_bytes: 100, line_bytes: super::DEFAULT_MAX_LINE_BYTES };

    #[test]
    fn loads_with_different_limits_in_one_process_do_not_affect_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let file = pool_file(dir.path());
        let tar = pool_tar(dir.path(), &file);
        let line = |r: Result<String, String>| r.is_err_and(|e| e.contains("line 6 is longer than 100 bytes (--max-line-size)"));
        let size = |r: Result<String, String>| r.is_err_and(|e| e.contains("more than 100 bytes (--max-input-size)"));
        // Small, then the default, then small again: each read obeys its own limits only.
        for path in [&file, &tar] {
            assert!(line(read_within(path, SHORT_LINES)), "{path}");
            assert_eq!(read_within(path, Limits::default()), Ok("blue".to_string()), "{path}");
            assert!(size(read_within(path, SMALL_INPUTS)), "{path}");
            assert_eq!(read_within(path, Limits::default()), Ok("blue".to_string()), "{path}");
        }
        // The readers of edits too.
        assert!(read::read(std::slice::from_ref(&file), SMALL_INPUTS).is_err());
        assert_eq!(read::read(std::slice::from_ref(&file), Limits::default()).unwrap().len(), 1);
        assert!(read::load(std::slice::from_ref(&file), SHORT_LINES).is_err());
        assert_eq!(read::load(std::slice::from_ref(&file), Limits::default()).unwrap().len(), 1);
        // At the same time, on three threads started together: a limit set for one read would
        // be seen by the others.
        let start = std::sync::Barrier::new(3);
        std::thread::scope(|scope| {
            let strict = scope.spawn(|| {
                start.wait();
                (0..50).all(|_| line(read_within(&file, SHORT_LINES)) && size(read_within(&tar, SMALL_INPUTS)))
            });
            let lenient = scope.spawn(|| {
                start.wait();
                (0..50).all(|_| read_within(&file, Limits::default()).is_ok() && read_within(&tar, Limits::default()).is_ok())
            });
            start.wait();
            assert!(strict.join().unwrap(), "every strict read refused");
            assert!(lenient.join().unwrap(), "every default read read");
        });
    }
}
