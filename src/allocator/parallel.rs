//! Two pieces of the analysis side by side on the machine's cores (docs/performance.md).

use std::sync::Mutex;
use std::thread::{Builder, scope};

/// Runs `here` on this thread and `there` on another, and returns both results; a panic in
/// either is the caller's panic. When no thread can be started (a process at its thread limit),
/// `there` runs after `here`: the analysis is slower, never missing.
pub fn side_by_side<A, B: Send>(here: impl FnOnce() -> A, there: impl FnOnce() -> B + Send) -> (A, B) {
    // The other thread takes `there` out of the cell; if it never starts, it is still inside.
    let cell = Mutex::new(Some(there));
    let take = || cell.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    scope(|s| {
        let other = Builder::new().name("analysis".into()).spawn_scoped(s, || take().map(|there| there()));
        let a = here();
        let b = other.ok().and_then(|thread| thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        (a, b.unwrap_or_else(|| take().expect("the other half ran or is still here")()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_and_return_in_order() {
        let mut seen = Vec::new();
        let (a, b) = side_by_side(
            || {
                seen.push("here");
                1
            },
            || std::thread::current().name().map(str::to_string),
        );
        assert_eq!((a, b.as_deref(), seen), (1, Some("analysis"), vec!["here"]));
    }

    #[test]
    #[should_panic(expected = "there panicked")]
    fn a_panic_on_the_other_thread_is_the_callers() {
        side_by_side(|| (), || panic!("there panicked"));
    }
}
