//! The embedded allocator: pure functions from a [`Snapshot`](crate::model::Snapshot) to the
//! operator's view of every pool. No IO.

pub mod analyze;
pub mod blocks;
pub mod check;
pub mod count;
pub mod fleet;
pub mod interval;
pub mod ip;
pub mod modes;
mod parallel;
pub mod problem;
pub mod report;
pub mod reserve;
pub mod routing;

pub use analyze::analyze;
pub use count::Count;
pub use interval::IntervalSet;
pub use problem::{Problem, ProblemKind, Severity};
pub use report::*;
