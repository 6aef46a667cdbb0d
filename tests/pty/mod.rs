//! Runs a command in a real pseudo-terminal (a private tmux server) so that interactive flows
//! (pickers, prompts, confirmations) are tested end to end. Use with `mod pty;`.
#![allow(dead_code)] // each test binary uses a different subset

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Terminal {
    socket: String,
}

/// `'text'` for sh.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Terminal {
    /// Starts `program args` with `env` in `dir`; the pane stays open after it exits and shows
    /// `[exit N]`.
    pub fn start(dir: &std::path::Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let socket = format!("ciliumpool-test-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let mut line = String::from("env NO_COLOR=1");
        for (name, value) in env {
            line.push_str(&format!(" {name}={}", quote(value)));
        }
        line.push_str(&format!(" {}", quote(program)));
        for arg in args {
            line.push_str(&format!(" {}", quote(arg)));
        }
        line.push_str("; echo \"[exit $?]\"; sleep 600");
        let status = Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "220", "-y", "60", "-c"])
            .arg(dir)
            .arg(&line)
            .status()
            .expect("tmux is needed for terminal tests (apt-get install tmux)");
        assert!(status.success(), "tmux new-session failed");
        Terminal { socket }
    }

    /// The visible screen and scrollback.
    pub fn screen(&self) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket, "capture-pane", "-p", "-J", "-S", "-500", "-t", "t"]).output().expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen contains `text`; panics with the screen after `timeout`.
    pub fn wait_for(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {text:?} on the terminal within {timeout:?}:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types keys (tmux key names such as `Enter`, `Down`, or literal text).
    pub fn send(&self, keys: &[&str]) {
        let status = Command::new("tmux").args(["-L", &self.socket, "send-keys", "-t", "t"]).args(keys).status().expect("tmux send-keys");
        assert!(status.success());
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // Only this test's private server (its own socket).
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
    }
}
