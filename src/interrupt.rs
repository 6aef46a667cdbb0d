//! How the process ends on SIGINT (Ctrl-C), SIGTERM or SIGHUP: the cleanups registered so far
//! run (staged files are removed, `source::atomic`), the cursor is shown again when stderr is a
//! terminal (a picker hides it), and the process exits with 128 + the signal's number (130 for
//! Ctrl-C, as a shell reports it). docs/design/exit-codes.md.
//!
//! Installed by the first prompt or staged write, not at start-up: `usage --watch` ends on Ctrl-C
//! by itself (exit 0) and installs nothing.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
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
