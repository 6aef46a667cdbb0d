//! Where snapshots come from: files (`-f`, `crate::files`) or a live cluster (`crate::cluster`),
//! one of them or a fleet of several (`fleet.rs`). Commands read through here, so a command never
//! cares which kind of input it was given.

pub mod fleet;
mod one;

pub use crate::cluster::ConnectOptions;
pub use crate::files::Pools;

pub use one::{Input, snapshot};
