//! The API server: the client and its bounds (`client.rs`, `limits.rs`, `trace.rs`), one read of a
//! snapshot (`read.rs` over `list.rs` and the resources of `resources.rs`, pods in protobuf in `protobuf.rs`, CiliumEndpoints as Tables in
//! `endpoint_table.rs`, their answers decoded in `table_answers.rs` and `table_rows.rs`, `cilium.rs`), watches that follow it (`watch.rs` over
//! `reflector.rs`, why a follow restarts in `failure.rs`, how long it waits in `backoff.rs`, the
//! slim stores of pods and endpoints in `slim_store.rs` holding them as `decoded.rs` decodes them,
//! `memory.rs` for `serve`'s budget), every write the plugin makes (`writes.rs`),
//! the kubeconfig's credentials kept out of every message (`credentials.rs`), and exec credential
//! plugins run within bounds (`exec.rs`), their tokens on every request (`exec_auth.rs`).

pub mod backoff;
pub mod cilium;
pub mod client;
pub mod credentials;
mod decoded;
pub mod endpoint_table;
pub mod exec;
pub mod exec_auth;
mod failure;
pub mod limits;
pub mod list;
pub mod memory;
mod protobuf;
pub mod read;
pub mod reflector;
mod resources;
pub mod slim_store;
mod table_answers;
mod table_rows;
pub mod trace;
pub mod watch;
pub mod writes;

pub use client::{ConnectOptions, Deadlines};
