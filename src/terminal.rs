//! Talking to a person at a terminal. Commands ask through the `Prompter` trait so that tests can
//! script the answers; `Dialoguer` is the real implementation (prompts go to stderr).
//!
//! Every way out of a prompt leaves the terminal as it was: the cursor a picker hides is shown
//! again on return, on error and on Ctrl-C (which ends the process with exit 130 through
//! `crate::interrupt`). Esc cancels any prompt; a cancelled prompt is the caller's "declined".

use anyhow::Result;
use console::{Key, Term};
use std::cell::RefCell;

/// Whether this process may ask at the terminal: stdin and stderr are terminals and the process
/// is in the terminal's foreground process group. A command started in the background of a
/// terminal (`timeout CMD`, `CMD &`) is stopped by the kernel (SIGTTIN) the moment a picker reads
/// a key, and no signal it is sent afterwards can reach a picker blocked so: it asks nothing.
pub fn interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal() && in_foreground()
}

#[cfg(unix)]
fn in_foreground() -> bool {
    // SAFETY: tcgetpgrp and getpgrp only read the process's and the terminal's state.
    unsafe { libc::tcgetpgrp(libc::STDIN_FILENO) == libc::getpgrp() }
}

#[cfg(not(unix))]
fn in_foreground() -> bool {
    true
}

pub trait Prompter {
    /// Lets the user pick one of `items`; `None` when they cancel (Esc / q).
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>>;
    /// A `[y/N]` question: true only for y or yes; n, no, a bare Enter and Esc are no.
    fn confirm(&self, prompt: &str) -> Result<bool>;
    /// A line of text, asked again (with the reason shown) until `validate` accepts it; `None`
    /// when the user cancels (Esc).
    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<Option<String>>;
    /// A line shown before the next question (what is not offered, and why).
    fn note(&self, text: &str);
}

/// The real terminal: dialoguer's picker, and a line prompt of our own for `[y/N]` and text,
/// which echoes every key typed (dialoguer's confirm answers on the first key and drops the
/// others; its text input cannot be cancelled). Prompts, items and refusals quote pool names
/// and CIDRs from the data: each is escaped as one line (`escape::field`).
pub struct Dialoguer;

/// Lines a picker leaves to its prompt and the shell's last line.
const PICKER_MARGIN: usize = 3;

/// A picker's prompt: what to pick, and how, at every size alike (typing filters, Esc cancels);
/// when the list is taller than the terminal, how many items there are and that it scrolls.
fn picker_prompt(prompt: &str, items: usize, visible: usize) -> String {
    if items > visible {
        format!("{prompt} ({visible} of {items} shown, arrows scroll; type to filter, Esc cancels)")
    } else {
        format!("{prompt} (type to filter, Esc cancels)")
    }
}

fn safe(text: &str) -> String {
    crate::escape::field(text).into_owned()
}

/// Shows the cursor when dropped: on every return from a prompt, errors and panics included.
struct CursorShown;

impl Drop for CursorShown {
    fn drop(&mut self) {
        crate::interrupt::restore_cursor();
    }
}

/// A prompt's IO error; Ctrl-C (the terminal library reads it as an interrupted read, after
/// raising SIGINT) ends the process the way the signal does — and so does a SIGTERM or SIGHUP
/// that interrupted the read (with its own code: `interrupt::code`).
fn failed(error: std::io::Error) -> anyhow::Error {
    if error.kind() == std::io::ErrorKind::Interrupted {
        crate::interrupt::end(crate::interrupt::code());
    }
    error.into()
}

/// Reads one line at the terminal after `prompt`, echoing printable keys; Backspace erases,
/// Enter ends the line, Esc cancels (`None`). Other keys (arrows, function keys) do nothing.
fn read_line(term: &Term, prompt: &str) -> std::io::Result<Option<String>> {
    term.write_str(prompt)?;
    term.flush()?;
    let mut line = String::new();
    loop {
        match term.read_key()? {
            Key::Enter => {
                term.write_line("")?;
                return Ok(Some(line));
            }
            Key::Escape => {
                term.write_line("")?;
                return Ok(None);
            }
            Key::Backspace if line.pop().is_some() => term.clear_chars(1)?,
            Key::Char(c) if !c.is_control() => {
                line.push(c);
                term.write_str(c.encode_utf8(&mut [0; 4]))?;
            }
            _ => {}
        }
        term.flush()?;
    }
}

/// Asks `question` until `accept` takes the line typed (its refusal is shown under it); `None`
/// on Esc. The cursor is shown again however this ends.
fn ask<T>(question: &str, accept: &dyn Fn(&str) -> Result<T, String>) -> Result<Option<T>> {
    crate::interrupt::install();
    let _shown = CursorShown;
    let term = Term::stderr();
    loop {
        let Some(answer) = read_line(&term, question).map_err(failed)? else { return Ok(None) };
        match accept(&answer) {
            Ok(value) => return Ok(Some(value)),
            Err(why) => term.write_line(&format!("  {}", safe(&why)))?,
        }
    }
}

/// What a `[y/N]` answer means: `Some(true)` for y/yes, `Some(false)` for n/no/nothing, `None`
/// for anything else (asked again).
pub fn yes_or_no(answer: &str) -> Option<bool> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "" | "n" | "no" => Some(false),
        _ => None,
    }
}

impl Prompter for Dialoguer {
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>> {
        crate::interrupt::install();
        let _shown = CursorShown;
        let items: Vec<String> = items.iter().map(|i| safe(i)).collect();
        // One picker at every size: a key is always typed into the filter (a `q` does not cancel
        // a short list and filter a long one), and Esc always cancels.
        let rows = usize::from(Term::stderr().size().0);
        let visible = rows.saturating_sub(PICKER_MARGIN).max(1);
        let picked = dialoguer::FuzzySelect::new()
            .with_prompt(picker_prompt(&safe(prompt), items.len(), visible))
            .items(&items)
            .default(0)
            .max_length(visible)
            .interact_opt();
        picked.map_err(|dialoguer::Error::IO(e)| failed(e))
    }

    fn confirm(&self, prompt: &str) -> Result<bool> {
        let question = format!("{} [y/N] ", safe(prompt));
        let answer = ask(&question, &|answer| yes_or_no(answer).ok_or_else(|| format!("please answer y or n (not {answer})")))?;
        Ok(answer.unwrap_or(false))
    }

    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<Option<String>> {
        let question = format!("{} (Esc cancels): ", safe(prompt));
        ask(&question, &|answer| validate(answer.trim()).map(|()| answer.trim().to_string()).map_err(|why| format!("invalid: {why}")))
    }

    fn note(&self, text: &str) {
        let _ = Term::stderr().write_line(&safe(text));
    }
}

/// Answers given in advance, for tests; records what was asked and which texts were refused.
/// An empty list of texts answers `None` (cancelled).
#[derive(Default)]
pub struct Scripted {
    pub selections: RefCell<Vec<Option<usize>>>,
    pub confirmations: RefCell<Vec<bool>>,
    pub texts: RefCell<Vec<String>>,
    /// `prompt: item | item ...` for every question, and every note, in order.
    pub asked: RefCell<Vec<String>>,
    /// Why `validate` refused each refused text.
    pub refused: RefCell<Vec<String>>,
}

impl Prompter for Scripted {
    fn select(&self, prompt: &str, items: &[String]) -> Result<Option<usize>> {
        self.asked.borrow_mut().push(format!("{prompt}: {}", items.join(" | ")));
        let choice = self.selections.borrow_mut().remove(0);
        assert!(choice.is_none_or(|i| i < items.len()), "scripted choice out of range");
        Ok(choice)
    }

    fn confirm(&self, prompt: &str) -> Result<bool> {
        self.asked.borrow_mut().push(prompt.to_string());
        Ok(self.confirmations.borrow_mut().remove(0))
    }

    fn text(&self, prompt: &str, validate: &dyn Fn(&str) -> Result<(), String>) -> Result<Option<String>> {
        self.asked.borrow_mut().push(prompt.to_string());
        loop {
            let mut texts = self.texts.borrow_mut();
            if texts.is_empty() {
                return Ok(None);
            }
            let answer = texts.remove(0);
            match validate(&answer) {
                Ok(()) => return Ok(Some(answer)),
                Err(why) => self.refused.borrow_mut().push(why),
            }
        }
    }

    fn note(&self, text: &str) {
        self.asked.borrow_mut().push(format!("note: {text}"));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_picker_taller_than_the_terminal_says_so() {
        assert_eq!(super::picker_prompt("Pool", 5, 20), "Pool (type to filter, Esc cancels)");
        assert_eq!(super::picker_prompt("Pool", 40, 21), "Pool (21 of 40 shown, arrows scroll; type to filter, Esc cancels)");
    }

    #[test]
    fn yes_or_no_answers() {
        for (answer, meaning) in [
            ("y", Some(true)),
            ("YES", Some(true)),
            (" yes ", Some(true)),
            ("", Some(false)),
            ("n", Some(false)),
            ("No", Some(false)),
            ("x", None),
            ("yep", None),
        ] {
            assert_eq!(super::yes_or_no(answer), meaning, "{answer:?}");
        }
    }
}
