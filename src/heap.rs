//! The process's memory allocator. The analysis of a large cluster allocates and frees millions
//! of small objects (pods, blocks, report rows); with glibc's malloc that was about half of its
//! time. mimalloc is faster, and returning freed memory soon (`tune`) keeps a run's peak RSS
//! lower than glibc's (docs/performance.md). The binary and the benchmarks install it:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
//! fn main() { ciliumpool::heap::tune(); /* ... */ }
//! ```

use libmimalloc_sys::{mi_option_set, mi_option_t};

/// `mi_option_purge_delay` in the mimalloc this links (libmimalloc-sys names only some options).
const PURGE_DELAY: mi_option_t = 15;

/// `mi_option_allow_thp` in the mimalloc this links.
const ALLOW_THP: mi_option_t = 43;

/// Return freed memory to the OS after 10 ms instead of a second: decoding a dump frees its
/// text and temporaries while the snapshot grows, and with the default delay a compact dump's
/// peak RSS was 1.15–1.25 x glibc's; with 10 ms (or none) it is 0.85 x. No delay at all cost
/// repeated analyses (`--watch`, the benchmarks) about 15 % more CPU: memory freed and needed
/// again at once was returned and faulted back in.
/// Call first in `main`, before any thread starts (`mi_option_set` is not thread safe).
///
/// Transparent huge pages are turned off for the process: mimalloc asks for them on its arenas
/// (`madvise(MADV_HUGEPAGE)`, before `main` for the first), and the kernel's khugepaged then fills
/// a sparsely used 2 MiB range into a whole huge page. `serve` at 150,000 pods grew from 154 to
/// 175 MB of RSS in its first idle minute that way, without allocating (docs/performance.md).
pub fn tune() {
    // SAFETY: plain option setters of the linked mimalloc; no other thread exists yet.
    unsafe {
        mi_option_set(PURGE_DELAY, 10);
        mi_option_set(ALLOW_THP, 0);
    }
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with integer arguments only; it sets a flag of this process's memory map.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Gives the memory freed so far back to the OS now: every page no thread uses, including the
/// pages of threads that have ended. Each analysis runs its second half on a thread of its own
/// (`allocator::parallel`), which ends with it; mimalloc keeps such a thread's pages for whichever
/// thread next needs memory, so a long-running process's RSS would follow its busiest analysis,
/// not what it keeps. `serve` calls this after every analysis (a few milliseconds, at most once a
/// second; docs/performance.md).
pub fn release_freed() {
    // SAFETY: mimalloc's collection entry point; it may be called from any thread at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_number_is_the_purge_delay() {
        // Its default (options.c: 1000 ms) identifies the option, so an upgrade that renumbers
        // the options fails here instead of tuning something else.
        // SAFETY: reading an option.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) }, 1000);
        // SAFETY: reading an option; its default (options.c) is 1 on Linux.
        assert_eq!(unsafe { libmimalloc_sys::mi_option_get(ALLOW_THP) }, 1, "the option number of allow_thp");
    }
}
