//! How the process ends on SIGINT (Ctrl-C), SIGTERM or SIGHUP: the cleanups registered so far
//! run (staged files are removed, [`crate::files::atomic`]), the cursor is shown again when stderr is a
//! terminal (a picker hides it), and the process exits with 128 + the signal's number (130 for
//! Ctrl-C, as a shell reports it). docs/design/exit-codes.md.
//!
//! Installed by the first prompt or staged write, not at start-up: `usage --watch` ends on Ctrl-C
//! by itself (exit 0) and installs nothing.
//!
//! Child processes the plugin starts (exec credential plugins) are [`adopt`]ed: they are killed
//! when their run ends and when the process ends on one of these signals, whoever handles it.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Once};

/// What runs before the process ends on a signal.
static CLEANUPS: Mutex<Vec<fn()>> = Mutex::new(Vec::new());
/// Held by whichever thread ends the process: the signal thread and a prompt that saw Ctrl-C
/// may both try; the second waits for the first to exit.
static ENDING: Mutex<()> = Mutex::new(());

/// The escape sequence that shows the cursor (DECTCEM).
pub const SHOW_CURSOR: &str = "\x1b[?25h";

/// The exit code after SIGINT.
pub const INTERRUPTED: i32 = 128 + signal_hook::consts::SIGINT;

/// Installs the handler (once) and adds `cleanup` to what it runs.
pub fn on_signal(cleanup: fn()) {
    install();
    CLEANUPS.lock().unwrap_or_else(|e| e.into_inner()).push(cleanup);
}

/// Set as soon as SIGTERM or SIGHUP arrives (in the handler itself, before a read it interrupts
/// returns): the terminal library answers an interrupted read by raising SIGINT, so a prompt
/// ended by SIGTERM would otherwise exit 130, not 143 (issue 42).
static TERMINATED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);
static HUNG_UP: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// The exit code of the signal that ends the process: SIGTERM (143) or SIGHUP (129) when one
/// arrived, even if a SIGINT came too (the one a prompt raises when its read is interrupted);
/// else SIGINT's (130).
pub fn code() -> i32 {
    use signal_hook::consts::{SIGHUP, SIGTERM};
    if TERMINATED.load(Ordering::SeqCst) {
        128 + SIGTERM
    } else if HUNG_UP.load(Ordering::SeqCst) {
        128 + SIGHUP
    } else {
        INTERRUPTED
    }
}

/// Installs the handler (once): a thread that waits for SIGINT, SIGTERM or SIGHUP and [`end`]s.
pub fn install() {
    static ONCE: Once = Once::new();
    claim();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let _ = signal_hook::flag::register(SIGTERM, Arc::clone(&TERMINATED));
        let _ = signal_hook::flag::register(SIGHUP, Arc::clone(&HUNG_UP));
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else { return };
        std::thread::spawn(move || {
            if signals.forever().next().is_some() {
                end(code());
            }
        });
    });
}

/// Runs the cleanups, shows the cursor and exits with `code`.
pub fn end(code: i32) -> ! {
    let _ending = ENDING.lock().unwrap_or_else(|e| e.into_inner());
    kill_adopted();
    let cleanups = CLEANUPS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for cleanup in cleanups {
        cleanup();
    }
    restore_cursor();
    std::process::exit(code)
}

/// Shows the cursor when stderr is a terminal (prompts draw there).
pub fn restore_cursor() {
    let mut stderr = std::io::stderr();
    if stderr.is_terminal() {
        let _ = stderr.write_all(SHOW_CURSOR.as_bytes());
        let _ = stderr.flush();
    }
}

/// Set once something ends the process on SIGINT/SIGTERM/SIGHUP its own way ([`install`], or a
/// command's own graceful end through [`claim`]): until then the default action (the process
/// dies) is emulated after the adopted children are killed.
static CLAIMED: AtomicBool = AtomicBool::new(false);

/// Says that the caller ends the process on SIGINT and SIGTERM itself (`serve`, `usage --watch`).
pub fn claim() {
    CLAIMED.store(true, Ordering::SeqCst);
}

/// The children alive now, as `kill(2)` targets (a pid, or minus a process group); 0 is a free
/// slot. Atomics, because the signal handler reads them.
static ADOPTED: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

/// A child that is killed (SIGKILL) when this is dropped, and when the process ends on a signal.
#[must_use = "the child is killed when this is dropped"]
pub struct Adopted {
    target: i32,
}

/// Adopts the child `pid`, with every process of its group when it leads its own (`group`).
/// More than 8 children at once are still killed on drop, but not on a signal.
pub fn adopt(pid: u32, group: bool) -> Adopted {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            // SAFETY: the action only reads atomics and calls kill(2) and the default
            // emulation, all async-signal-safe.
            let _ = unsafe {
                signal_hook::low_level::register(signal, move || {
                    kill_adopted();
                    if !CLAIMED.load(Ordering::SeqCst) {
                        let _ = signal_hook::low_level::emulate_default_handler(signal);
                    }
                })
            };
        }
    });
    let pid = i32::try_from(pid).unwrap_or(i32::MAX);
    let target = if group { -pid } else { pid };
    let _registered = ADOPTED.iter().any(|slot| slot.compare_exchange(0, target, Ordering::SeqCst, Ordering::SeqCst).is_ok());
    Adopted { target }
}

impl Adopted {
    /// The child's run is over: killed now, unless it was waited for and is no group (its pid
    /// may be another process's by then); a group is killed for what it left running.
    pub fn end(mut self, reaped: bool) {
        if reaped && self.target > 0 {
            self.unregister();
            self.target = 0;
        }
    }

    fn unregister(&self) {
        for slot in &ADOPTED {
            let _ = slot.compare_exchange(self.target, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        if self.target == 0 {
            return;
        }
        kill(self.target);
        self.unregister();
    }
}

/// Kills every adopted child; async-signal-safe.
fn kill_adopted() {
    for slot in &ADOPTED {
        let target = slot.load(Ordering::SeqCst);
        if target != 0 {
            kill(target);
        }
    }
}

#[cfg(unix)]
fn kill(target: i32) {
    // SAFETY: kill(2) of our own child, or of the process group it leads; one gone is ESRCH.
    unsafe {
        libc::kill(target, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill(_target: i32) {}
