//! The collector every check adds its problems to, and the threshold of a nearly exhausted pool.

use super::super::problem::Problem;

/// Utilization at or above which a pool counts as nearly exhausted.
pub const NEARLY_EXHAUSTED: f64 = 0.9;

/// Every problem found, in the order found; [`Problems::finish`] sorts and de-duplicates.
#[derive(Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// Adds one problem.
    pub fn add(&mut self, problem: Problem) {
        self.0.push(problem);
    }

    /// Adds problems found elsewhere (the routing checks).
    pub fn extend(&mut self, problems: impl IntoIterator<Item = Problem>) {
        self.0.extend(problems);
    }

    /// Adds what another collector found.
    pub fn append(&mut self, mut other: Problems) {
        self.0.append(&mut other.0);
    }

    /// The problems, most severe first, then by kind, object and message; exact repeats once.
    pub fn finish(mut self) -> Vec<Problem> {
        self.0.sort_by(|a, b| (a.severity, a.kind, &a.object, &a.message).cmp(&(b.severity, b.kind, &b.object, &b.message)));
        self.0.dedup();
        self.0
    }
}
