//! kubectl-ciliumpool: pool usage, consistency checks, reserved ranges and migration for
//! Cilium multi-pool IPAM.
//!
//! Layers, bottom up (docs/architecture.md; `tests/integration/architecture.rs` checks the import rule):
//! `escape` (the one escape policy), `error` and `manifest` (text), `model`, `allocator`, `migrate` and `render` are pure;
//! `interrupt` ends the process on a signal; `files` reads files, `cluster` the API server (and
//! makes every cluster write), `source` chooses between them; `terminal` asks the user; `cli`
//! defines the flags; `commands` orchestrates. The modules of the program itself (`cli`,
//! `cluster`, `source`, `commands`, `terminal`, `heap`) need the `cli` feature (the default).

/// A warning on stderr through the one route, `stderr::line`: one line that often quotes
/// files or cluster data, so it is escaped as one line (a newline in a name cannot forge a second
/// message) and credentials are redacted.
macro_rules! warn_line {
    ($($arg:tt)*) => { $crate::stderr::line(&format!($($arg)*)) };
}

pub mod allocator;
pub mod bytes;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod cluster;
#[cfg(feature = "cli")]
pub mod commands;
pub mod error;
pub mod escape;
pub mod files;
#[cfg(feature = "cli")]
pub mod heap;
pub mod interrupt;
pub mod json;
pub mod manifest;
pub mod migrate;
pub mod model;
pub mod render;
pub mod secrets;
#[cfg(feature = "cli")]
pub mod source;
pub mod stderr;
#[cfg(feature = "cli")]
pub mod terminal;
