//! Any bytes as a `-f` archive (zip, tar.gz, tar): the archive reader streams members one at a
//! time into the manifest reader under its limits. Never a panic, and memory stays bounded by
//! what is kept: tools/fuzz-smoke.sh runs this target with `-rss_limit_mb=512`, so a member or
//! a decompression that is held whole instead of streamed is a finding. What was read or
//! skipped is named after its archive.
#![no_main]

use ciliumpool::files::archive::{Kind, kind_of_head, read_from};
use ciliumpool::files::inputs::Inputs;
use ciliumpool::files::read::snapshot_of;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The sniffed kind first, as `-f` does; then every reader, as a misnamed file would be tried.
    let sniffed = kind_of_head(&data[..data.len().min(262)]);
    for kind in sniffed.into_iter().chain([Kind::Zip, Kind::TarGz, Kind::Tar].into_iter().filter(|k| Some(*k) != sniffed)) {
        let mut inputs = Inputs::default();
        if read_from(std::io::Cursor::new(data), "fuzz.archive", kind, &mut inputs, ciliumpool::files::Limits::default()).is_ok() {
            // What is read or skipped is named after its archive, so that messages say where.
            let names = inputs.files.iter().map(|f| &f.name).chain(inputs.skipped.iter().map(|s| &s.name));
            assert!(names.into_iter().all(|n| n.starts_with("fuzz.archive:")));
            snapshot_of(inputs.files);
        }
    }
});
