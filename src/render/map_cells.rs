//! The cells of `usage POOL --map` (render/map.rs): each cell's state and glyph, and for
//! `--map --watch` which cells changed since the previous frame. Comparing two maps' cells is a
//! pure function; the map marks what it returns: reverse video with colour, and always a `^` under
//! each changed cell, so that `--color never`, a pipe and a log show it too.

use super::{Style, Tone};
use owo_colors::{OwoColorize, XtermColors};
use std::collections::{BTreeMap, BTreeSet};

/// Cells per group in a row (a space between groups).
pub const GROUP: usize = 16;

/// A block's state as the map draws it; every block has exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Node,
    Next,
    Grandfathered,
    Allocated,
    Draining,
    Withheld,
    Free,
    /// Free as far as the input shows, without CiliumNodes: allocation unknown.
    Unknown,
    Orphan,
}

/// Allocated cells: the higher, the fuller (addresses in use, or blocks allocated of a cell).
pub const FILL: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

impl State {
    pub fn glyph(self) -> char {
        match self {
            State::Node => '●',
            State::Next => '▸',
            State::Grandfathered => '◆',
            State::Allocated => FILL[7],
            State::Draining => '≡',
            State::Withheld => '×',
            State::Free => '·',
            State::Unknown => '?',
            State::Orphan => '!',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Node => "node",
            State::Next => "next block",
            State::Grandfathered => "grandfathered",
            State::Allocated => "allocated",
            State::Draining => "draining",
            State::Withheld => "withheld",
            State::Free => "free",
            State::Unknown => "unknown",
            State::Orphan => "orphan",
        }
    }

    /// `text` in the state's colour (Okabe–Ito: sky blue, orange, yellow, vermillion, reddish
    /// purple, bluish green); free dimmed, the highlighted node bold.
    pub fn paint(self, text: &str, style: &Style) -> String {
        let colour = match self {
            State::Allocated => XtermColors::ShakespeareBlue,
            State::Withheld => XtermColors::YellowSea,
            State::Draining => XtermColors::Dandelion,
            State::Orphan => XtermColors::TennOrange,
            State::Grandfathered => XtermColors::CanCanPink,
            State::Next => XtermColors::PersianGreen,
            State::Free => return style.paint(text, Tone::Dim),
            State::Node => return style.paint(text, Tone::Bold),
            State::Unknown => return text.to_string(),
        };
        if style.color { text.color(colour).to_string() } else { text.to_string() }
    }
}

/// The mark under a changed cell, and in the legend.
pub const MARK: char = '^';

/// One CIDR's cells as the map draws them: 2^`shift` blocks a cell, in address order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CidrCells {
    pub cidr: String,
    pub shift: u32,
    pub cells: Vec<(State, char)>,
}

/// Every cell of a pool's map: what one `--watch` frame compares with the previous one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cells(pub Vec<CidrCells>);

/// The cells that changed between two frames, by CIDR and cell index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changed(BTreeMap<String, BTreeSet<usize>>);

impl Changed {
    /// The changed cells of `cidr`.
    pub fn of(&self, cidr: &str) -> Option<&BTreeSet<usize>> {
        self.0.get(cidr)
    }

    /// How many cells changed.
    pub fn count(&self) -> usize {
        self.0.values().map(BTreeSet::len).sum()
    }
}

/// The cells of `after` whose state or glyph differs from `before`'s: every cell of a CIDR that
/// appeared; none of a CIDR whose cells stand for other blocks now (a narrower terminal
/// aggregates more blocks a cell: nothing to compare).
pub fn changed(before: &Cells, after: &Cells) -> Changed {
    let mut out = BTreeMap::new();
    for now in &after.0 {
        let indices: BTreeSet<usize> = match before.0.iter().find(|c| c.cidr == now.cidr) {
            None => (0..now.cells.len()).collect(),
            Some(old) if old.shift != now.shift => BTreeSet::new(),
            Some(old) => (0..now.cells.len()).filter(|&i| old.cells.get(i) != Some(&now.cells[i])).collect(),
        };
        if !indices.is_empty() {
            out.insert(now.cidr.clone(), indices);
        }
    }
    Changed(out)
}

/// The line under a row of `cells` cells starting at cell `first`: [`MARK`] under each changed
/// one, past a label `label_width` wide; empty when none of them changed.
pub fn marks(label_width: usize, first: usize, cells: usize, changed: Option<&BTreeSet<usize>>) -> String {
    let Some(changed) = changed.filter(|c| c.range(first..first + cells).next().is_some()) else {
        return String::new();
    };
    let mut line = " ".repeat(label_width + 1);
    for i in 0..cells {
        if i > 0 && i % GROUP == 0 {
            line.push(' ');
        }
        line.push(if changed.contains(&(first + i)) { MARK } else { ' ' });
    }
    format!("{}\n", line.trim_end())
}

/// Consecutive cells painted in one colour span each; changed ones (`true`) in reverse video.
pub fn paint_run(cells: impl Iterator<Item = (State, char, bool)>, style: &Style) -> String {
    let mut out = String::new();
    let mut run: Option<(State, bool, String)> = None;
    let paint = |s: State, marked: bool, text: &str| match s.paint(text, style) {
        painted if marked && style.color => painted.reversed().to_string(),
        painted => painted,
    };
    for (state, glyph, marked) in cells {
        match run.as_mut() {
            Some((s, m, text)) if (*s, *m) == (state, marked) => text.push(glyph),
            _ => {
                if let Some((s, m, text)) = run.take() {
                    out.push_str(&paint(s, m, &text));
                }
                run = Some((state, marked, glyph.to_string()));
            }
        }
    }
    if let Some((s, m, text)) = run {
        out.push_str(&paint(s, m, &text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(cidr: &str, shift: u32, glyphs: &str) -> CidrCells {
        let state = |g| match g {
            '·' => State::Free,
            '×' => State::Withheld,
            '▸' => State::Next,
            _ => State::Allocated,
        };
        CidrCells { cidr: cidr.into(), shift, cells: glyphs.chars().map(|g| (state(g), g)).collect() }
    }

    fn indices(changed: &Changed, cidr: &str) -> Vec<usize> {
        changed.of(cidr).map(|s| s.iter().copied().collect()).unwrap_or_default()
    }

    #[test]
    fn a_cell_changes_when_its_state_or_its_height_does() {
        let before = Cells(vec![cidr("10.0.0.0/16", 0, "▁▸··×"), cidr("fd00::/104", 6, "▁···")]);
        let after = Cells(vec![cidr("10.0.0.0/16", 0, "▅█▸·×"), cidr("fd00::/104", 6, "▁···")]);
        let changed = changed(&before, &after);
        // 10.0.0.0: the fill of cell 0, the next block allocated (1), the next block moved (2).
        assert_eq!(indices(&changed, "10.0.0.0/16"), [0, 1, 2]);
        assert_eq!((changed.of("fd00::/104"), changed.count()), (None, 3));
        assert_eq!(super::changed(&after, &after), Changed::default());
    }

    #[test]
    fn a_new_cidr_is_all_changed_and_a_relaid_one_is_not_compared() {
        let before = Cells(vec![cidr("fd00::/104", 6, "▁···")]);
        let after = Cells(vec![cidr("fd00::/104", 7, "▁·"), cidr("10.2.0.0/24", 0, "··")]);
        let changed = changed(&before, &after);
        assert_eq!((indices(&changed, "10.2.0.0/24"), changed.of("fd00::/104")), (vec![0, 1], None));
        // A CIDR that went has no cells to mark (the status line says the figures that moved).
        assert_eq!(super::changed(&after, &Cells(vec![])).count(), 0);
    }

    #[test]
    fn marks_sit_under_the_changed_cells_of_their_row_past_the_label() {
        let changed: BTreeSet<usize> = [1, 17, 40].into();
        assert_eq!(marks(4, 0, 32, Some(&changed)), format!("{}^{}^\n", " ".repeat(6), " ".repeat(16)));
        assert_eq!(marks(4, 32, 32, Some(&changed)), "             ^\n");
        assert_eq!(marks(4, 64, 32, Some(&changed)), "");
        assert_eq!(marks(4, 0, 32, None), "");
    }
}
