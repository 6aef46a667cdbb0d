//! `serve`'s memory budget: the process's resident memory, sampled, sets
//! [`reflector::OVER_BUDGET`](super::reflector::OVER_BUDGET) while it is over the budget, so that a
//! store that would grow fails and lets its objects go instead of the process being OOM-killed
//! with every cluster it serves (docs/metrics.md, "Memory").

use std::sync::atomic::Ordering;
use std::time::Duration;

/// How often the resident memory is looked at: a flood of new objects grows by a few MiB in that time.
const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// The process's resident memory in bytes (Linux: `VmRSS` of /proc/self/status); `None` elsewhere.
pub fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()?;
    Some(kib << 10)
}

/// Keeps [`OVER_BUDGET`](super::reflector::OVER_BUDGET) current for `budget` bytes, for ever.
/// Where the resident memory cannot be read, there is no budget.
pub async fn watch_budget(budget: u64) {
    let mut ticks = tokio::time::interval(SAMPLE_EVERY);
    loop {
        ticks.tick().await;
        let Some(resident) = resident() else { return };
        super::reflector::OVER_BUDGET.store(resident > budget, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_resident_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let resident = crate::cluster::memory::resident().expect("VmRSS");
            assert!(resident > 1 << 20 && resident < 64 << 30, "{resident} bytes");
        }
    }
}
