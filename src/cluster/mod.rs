//! The API server: the client and its bounds (`client.rs`, `limits.rs`, `trace.rs`), one read of a
//! snapshot (`read.rs`, `cilium.rs`), watches that follow it (`watch.rs` over `reflector.rs`, why a follow restarts in `failure.rs`, its
//! decoded workloads in `decoded.rs`, with
//! `memory.rs` for `serve`'s budget), and every write the plugin makes (`writes.rs`).

pub mod cilium;
pub mod client;
mod decoded;
mod failure;
pub mod limits;
pub mod memory;
pub mod read;
pub mod reflector;
pub mod trace;
pub mod watch;
pub mod writes;

pub use client::{ConnectOptions, Deadlines};
