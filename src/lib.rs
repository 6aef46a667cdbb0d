//! kubectl-ciliumpool: pool usage, consistency checks, reserved ranges and migration for
//! Cilium multi-pool IPAM.
//!
//! Layers, bottom up (docs/architecture.md; `tests/architecture.rs` checks the import rule):
//! `error` and `manifest` (text), `model`, `allocator`, `migrate` and `render` are pure;
//! `interrupt` ends the process on a signal; `source` reads files and the cluster and makes every
//! cluster write; `terminal` asks the user; `cli` defines the flags; `commands` orchestrates.

/// `eprintln!` for every message on stderr: the text often quotes files or cluster data, so
/// control characters are escaped (`render::escape`) and credentials redacted (`source::secrets`).
macro_rules! warn_line {
    ($($arg:tt)*) => { eprintln!("{}", $crate::render::escape::escape(&$crate::source::secrets::redact(&format!($($arg)*)))) };
}

pub mod allocator;
pub mod model;
pub mod cli;
pub mod commands;
pub mod error;
pub mod heap;
pub mod interrupt;
pub mod manifest;
pub mod migrate;
pub mod render;
pub mod source;
pub mod terminal;
