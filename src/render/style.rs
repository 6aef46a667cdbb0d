//! How text is styled: colour on or off, headers, the terminal's width ([`Style`]), the tones the\nplugin paints, and one line of prose that quotes data.

use crate::escape;
use owo_colors::OwoColorize;

/// Presentation settings decided once from flags and the terminal.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    pub color: bool,
    pub headers: bool,
    /// The columns a table may take (the terminal's whole width); what matters least gives way
    /// to fit ([`table`](mod@super::table): columns, shared prefixes and DNS suffixes, then free text cut with `…`).
    /// `None`: never cut (a pipe, `-o wide`: the full text).
    pub width: Option<usize>,
    /// stdout is a terminal: a person reads it, so `--no-headers` cells keep their spaces.
    pub terminal: bool,
}

/// The width of a terminal that does not say its size.
pub const TABLE_WIDTH: usize = 100;

impl Style {
    pub fn plain() -> Style {
        Style { color: false, headers: true, width: None, terminal: false }
    }

    /// `text` (escaped as one line: it is often data) in the tone's colour when colour is on.
    pub fn paint(&self, text: &str, tone: Tone) -> String {
        let text = escape::net(text);
        if !self.color {
            return text.into_owned();
        }
        match tone {
            Tone::Good => text.green().to_string(),
            Tone::Warn => text.yellow().to_string(),
            Tone::Bad => text.red().to_string(),
            Tone::Dim => text.dimmed().to_string(),
            Tone::Bold => text.bold().to_string(),
        }
    }
}

/// One line of prose that quotes data (a name, an annotation, a message), newline-terminated: the
/// text escaped as one line (`escape::visible`), so that data cannot start a line of its own; the
/// plugin's colours kept when colour is on.
pub fn line(text: &str, style: &Style) -> String {
    escape::visible(text, escape::Rules { colour: style.color, ..escape::Rules::default() }).into_owned() + "\n"
}

#[derive(Clone, Copy, Debug)]
pub enum Tone {
    Good,
    Warn,
    Bad,
    Dim,
    Bold,
}
