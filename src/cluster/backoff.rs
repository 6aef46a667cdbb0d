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

#[cfg(test)]
mod tests {
    use super::*;

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
