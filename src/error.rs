//! Errors that decide the exit code (docs/design/exit-codes.md). Every message is one line
//! saying what went wrong, which object or field, and what to do; details may follow in the
//! context chain. `main` prints it as `error: ...`; commands never write that line themselves.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Failure {
    /// A condition the command reports as a failure: what was asked cannot be done as things
    /// stand (e.g. pools blocked from migrating). Nothing was written. Exit 1.
    #[error("{0}")]
    Condition(String),
    /// Invalid input: flags, files, ranges, pool names. Nothing was written. Exit 2.
    #[error("{0}")]
    Input(String),
    /// The cluster or API failed: unreachable, 401/403, conflicts exhausted, timeout. Exit 3.
    #[error("{0}")]
    Cluster(String),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Condition(_) => 1,
            Failure::Input(_) => 2,
            Failure::Cluster(_) => 3,
        }
    }
}

/// The exit code when the user declines at a prompt (`n`, a bare Enter, Esc in a question, a
/// picker or a text prompt): nothing was written. The same for every command; Ctrl-C is 130.
pub const DECLINED: i32 = 1;

/// Shorthand for an exit-1 condition.
pub fn condition(message: impl Into<String>) -> anyhow::Error {
    Failure::Condition(message.into()).into()
}

/// Shorthand for an input error.
pub fn input(message: impl Into<String>) -> anyhow::Error {
    Failure::Input(message.into()).into()
}

/// Shorthand for a cluster error.
pub fn cluster(message: impl Into<String>) -> anyhow::Error {
    Failure::Cluster(message.into()).into()
}

/// The exit code for an error chain: the first `Failure` in it decides; anything else is an
/// input problem (IO on a path the user gave, unparsable data).
pub fn exit_code(error: &anyhow::Error) -> i32 {
    error.chain().find_map(|e| e.downcast_ref::<Failure>()).map_or(2, Failure::exit_code)
}
