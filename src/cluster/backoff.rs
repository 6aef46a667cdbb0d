//! How long a follow waits after a failure: a jittered, doubling backoff whose streak is
//! forgotten only after a quiet period, so failures that recur right after a successful listing
//! keep backing off (no relist storm). `reflector.rs` follows with it, `serve` retries its first
//! read with [`backoff`].

use std::time::{Duration, Instant};

/// The longest wait between two attempts: a control plane that is back is seen within it.
const MAX_BACKOFF: Duration = Duration::from_secs(4);

/// A failure streak is forgotten only after this long without a failure (client-go: 2 minutes).
const QUIET_RESET: Duration = Duration::from_secs(120);

/// The nominal wait after the `step`-th failure of a streak: 1 s, doubling, at most 4 s.
pub fn backoff(step: u32) -> Duration {
    Duration::from_secs(1u64 << step.saturating_sub(1).min(16)).min(MAX_BACKOFF)
}

/// Failures of one resource in a row, and when the last one was.
#[derive(Clone, Copy, Debug, Default)]
pub struct Backoff {
    streak: u32,
    last_failure: Option<Instant>,
}

impl Backoff {
    /// Records a failure at `now`: its step in the streak and the wait before the next attempt,
    /// between half the nominal wait and all of it (so that restarted watches do not march in step).
    pub fn failed(&mut self, now: Instant) -> (u32, Duration) {
        if self.last_failure.is_some_and(|last| now.duration_since(last) > QUIET_RESET) {
            self.streak = 0;
        }
        self.streak = self.streak.saturating_add(1);
        self.last_failure = Some(now);
        let nominal = backoff(self.streak);
        (self.streak, nominal.mul_f64(0.5 + fastrand::f64() / 2.0))
    }
}

/// What `serve` logs of one resource's failures: a line when it starts failing and one per
/// backoff step while the waits grow, the last saying it goes quiet; then nothing, failures and
/// recoveries alike, until it follows the cluster again [`QUIET_RESET`] after its last failure
/// (one line then). A `410 Gone` after every relisting is such a streak: it logged a failure and a
/// recovery per retry (issue 53).
#[derive(Clone, Copy, Debug, Default)]
pub struct FailureLog {
    /// While quiet: when the last failure was.
    quiet_since: Option<Instant>,
}

/// What to log of a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureLine {
    /// Nothing: the streak went quiet.
    None,
    /// A line, and the waits still grow.
    Line,
    /// A line, the last until the resource recovers.
    LastLine,
}

impl FailureLog {
    /// The `step`-th failure of a streak, at `now`.
    pub fn failed(&mut self, step: u32, now: Instant) -> FailureLine {
        if step == 1 {
            self.quiet_since = None;
        }
        if let Some(last) = &mut self.quiet_since {
            *last = now;
            return FailureLine::None;
        }
        if backoff(step + 1) > backoff(step) {
            return FailureLine::Line;
        }
        self.quiet_since = Some(now);
        FailureLine::LastLine
    }

    /// A proof of freshness at `now` of a resource that was failing (`was_failing`) or not:
    /// whether to say that it follows the cluster again.
    pub fn proved(&mut self, was_failing: bool, now: Instant) -> bool {
        match self.quiet_since {
            Some(last) if now.duration_since(last) > QUIET_RESET => {
                self.quiet_since = None;
                true
            }
            Some(_) => false,
            None => was_failing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure after every recovery (a `410 Gone` after each relisting): lines while the waits
    /// grow, then none until it has followed the cluster for the reset period (one line).
    #[test]
    fn a_recurring_failure_goes_quiet_until_a_reset_period_without_one() {
        let start = Instant::now();
        let (mut log, mut streak) = (FailureLog::default(), Backoff::default());
        let mut lines = Vec::new();
        for n in 0..20u64 {
            let at = start + Duration::from_secs(5 * n);
            let (step, _) = streak.failed(at);
            lines.push(log.failed(step, at));
            // A recovery is said while the failures are (the first two), not once they go quiet.
            assert_eq!(log.proved(true, at + Duration::from_secs(2)), n < 2, "failure {n}");
        }
        assert_eq!(lines[..3], [FailureLine::Line, FailureLine::Line, FailureLine::LastLine]);
        assert!(lines[3..].iter().all(|line| *line == FailureLine::None), "{lines:?}");
        let later = start + Duration::from_secs(5 * 19) + QUIET_RESET + Duration::from_secs(1);
        assert!(log.proved(false, later), "followed for the reset period: said once");
        assert!(!log.proved(false, later + Duration::from_secs(30)));
        let (step, _) = streak.failed(later + Duration::from_secs(40));
        assert_eq!((step, log.failed(step, later + Duration::from_secs(40))), (1, FailureLine::Line), "a new streak is said again");
        assert!(log.proved(true, later + Duration::from_secs(41)), "and its recovery");
    }

    #[test]
    fn backoff_doubles_to_a_bound_with_jitter_and_survives_successes_until_a_quiet_period() {
        let nominal: Vec<u64> = (1..=6).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(nominal, [1, 2, 4, 4, 4, 4]);
        let start = Instant::now();
        let mut streak = Backoff::default();
        for expected in 1..=5u32 {
            // A listing that succeeds between two failures does not reset the streak.
            let (step, wait) = streak.failed(start + Duration::from_secs(10 * u64::from(expected)));
            assert_eq!(step, expected);
            let nominal = backoff(step);
            assert!(wait >= nominal / 2 && wait <= nominal, "{wait:?} within half of {nominal:?} and all of it");
        }
        let (step, _) = streak.failed(start + Duration::from_secs(50) + QUIET_RESET + Duration::from_secs(1));
        assert_eq!(step, 1, "forgotten after a quiet period");
    }
}
