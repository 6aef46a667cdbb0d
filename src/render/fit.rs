//! How a table gives way on a narrow terminal ([`super::table`](mod@super::table)): the column vocabulary (counts
//! and identifiers never cut), the steps that fit the columns to the width in order — the
//! decoration, empty columns, the gap, the columns a view sheds first, shared prefixes and
//! suffixes, prose wrapped or cut — and the columns left out behind a marker.

use super::shorten::{strip_dns_suffix, strip_prefixes};

/// Headers of columns that hold counts or percentages: right-aligned in every table, so that
/// digits line up (the same vocabulary is used by every command's tables).
pub(super) const NUMERIC_COLUMNS: &[&str] = &[
    "ADDRESSES",
    "AFTER",
    "ALLOCATED",
    "BEFORE",
    "BLOCKS",
    "CAPACITY",
    "FREE",
    "FREE-BLOCKS",
    "IDLE",
    "NEEDED",
    "NODES",
    "ORPHANS",
    "RESERVED",
    "RUNWAY",
    "TOTAL",
    "USABLE",
    "USED",
    "UTIL",
    "WITHHELD",
    "WITHHELD-BLOCKS",
];

/// Headers of columns that hold addresses, CIDRs, ranges and stable identifiers (a problem's
/// KIND, a family): never cut on a narrow terminal, as counts are not, because a cut address or
/// kind is another value or none (scripts and people match on them whole).
const IDENTIFIER_COLUMNS: &[&str] =
    &["ADDRESS", "BLOCK", "CIDR", "CIDRS", "FAMILY", "IPAM-MODE", "KIND", "MASK", "PODCIDRS", "RANGE", "SEVERITY", "WITHHOLDS"];

/// What stands for the columns a narrow terminal left out: the last cell of every line.
pub(super) const LEFT_OUT: &str = "…";

/// Spaces between two columns; [`TIGHT_GAP`] on a terminal the table would not fit otherwise.
pub(super) const GAP: usize = 3;
const TIGHT_GAP: usize = 2;
/// The narrowest a column is cut to: a name or a message still says what it is.
const MIN_CUT_WIDTH: usize = 12;
/// A last column of prose wraps under itself (down to this width) before anything else gives
/// way ([`fit_columns`]): nothing of it is cut.
const WRAP_FLOOR: usize = 20;

/// Makes the cells fit `width` as [`table`](super::table::table) says, giving way in this order: the decoration
/// column (its colour passed to the column before it: UTIL), columns whose every cell is `-`, a
/// space between columns, the columns `shed_first` names, a prefix every cell of a name column
/// shares (`CiliumNode/`), a DNS suffix the names share (both said once, in the returned notes),
/// and only then prose, cut no shorter than keeps its different values apart; trailing columns
/// are left out behind [`LEFT_OUT`] last. Returns the gap, which columns (still) hold counts, and
/// the notes that say what was left out of the cells.
pub(super) fn fit_columns(
    header: &mut Vec<String>,
    rows: &mut [Vec<String>],
    mut numeric: Vec<bool>,
    width: usize,
    headers: bool,
    shed_first: &[&str],
) -> Fit {
    let room = Room { width, headers };
    if room.too_wide(header, rows, GAP, false)
        && let Some(decoration) = header.iter().position(String::is_empty)
    {
        carry_colour(rows, decoration);
        remove_column(header, rows, &mut numeric, decoration);
    }
    if room.too_wide(header, rows, GAP, false) && !rows.is_empty() {
        for i in (0..header.len()).rev() {
            if rows.iter().all(|row| row.get(i).is_none_or(|c| c == "-")) {
                remove_column(header, rows, &mut numeric, i);
            }
        }
    }
    let gap = if room.too_wide(header, rows, GAP, false) { TIGHT_GAP } else { GAP };
    let (shed, notes) = spare_columns(header, rows, &mut numeric, room, gap, shed_first);
    cut_to_fit(header, rows, numeric, room, gap, shed, notes)
}

/// The terminal a table is fitted to: its width, and whether the table has a header row.
#[derive(Clone, Copy)]
struct Room {
    width: usize,
    headers: bool,
}

impl Room {
    /// Whether the table's last column is prose that wraps under itself (headers on): it does
    /// so before anything else gives way.
    fn wraps(self, header: &[String], rows: &[Vec<String>]) -> bool {
        self.headers && header.len() > 1 && matches!(give_of(&header[header.len() - 1], rows, header.len() - 1), Give::Prose(_))
    }

    /// Whether the table, `gap` apart and with the `…` column when `marked`, is wider than the room.
    fn too_wide(self, header: &[String], rows: &[Vec<String>], gap: usize, marked: bool) -> bool {
        let mut widths = column_widths(self.headers.then_some(header), rows);
        if self.wraps(header, rows) {
            let last = widths.len() - 1;
            widths[last] = widths[last].min(WRAP_FLOOR);
        }
        line_width(&widths, gap) + if marked { gap + 1 } else { 0 } > self.width
    }
}

/// Leaves out the columns `shed_first` names while the table is too wide, then a shared prefix
/// and DNS suffix, and brings back the spared columns that then fit. Returns whether columns are
/// still left out, and the notes saying what was left out of the cells.
fn spare_columns(
    header: &mut Vec<String>,
    rows: &mut [Vec<String>],
    numeric: &mut Vec<bool>,
    room: Room,
    gap: usize,
    shed_first: &[&str],
) -> (bool, Vec<String>) {
    let mut stash = Vec::new();
    for name in shed_first {
        if !room.too_wide(header, rows, gap, !stash.is_empty()) {
            break;
        }
        let Some(i) = header.iter().position(|h| h == name) else { continue };
        stash.push(remove_column(header, rows, numeric, i));
    }
    let mut notes = Vec::new();
    if room.too_wide(header, rows, gap, !stash.is_empty()) {
        let names: Vec<bool> = header.iter().enumerate().map(|(i, h)| give_of(h, rows, i) == Give::Names).collect();
        notes.extend(strip_prefixes(header, rows, |i| names[i]));
    }
    if room.too_wide(header, rows, gap, !stash.is_empty()) {
        notes.extend(strip_dns_suffix(header, rows));
    }
    // What the strips made room for comes back, the column left out last first.
    while let Some(column) = stash.pop() {
        let at = column.at;
        restore_column(header, rows, numeric, column);
        if room.too_wide(header, rows, gap, !stash.is_empty()) {
            stash.push(remove_column(header, rows, numeric, at));
            break;
        }
    }
    (!stash.is_empty(), notes)
}

/// The last steps of [`fit_columns`]: a last prose column wrapped to what the others leave, other
/// prose cut ([`column_caps`]), trailing columns left out behind [`LEFT_OUT`] (under
/// `--no-headers`; with headers the table goes one field a line instead).
fn cut_to_fit(
    header: &mut Vec<String>,
    rows: &mut [Vec<String>],
    mut numeric: Vec<bool>,
    room: Room,
    gap: usize,
    shed: bool,
    notes: Vec<String>,
) -> Fit {
    let mut widths = column_widths(room.headers.then_some(&header[..]), rows);
    let mut give: Vec<Give> = (0..widths.len()).map(|i| give_of(header.get(i).map_or("", String::as_str), rows, i)).collect();
    let wrap = room.wraps(header, rows).then(|| widths.len() - 1);
    let mut wrap_at = None;
    if let Some(last) = wrap {
        // The wrapped column takes what the others leave, when that is enough: no other cut.
        let left = room.width.saturating_sub(line_width(&widths[..last], gap) + gap + if shed { gap + 1 } else { 0 });
        if (WRAP_FLOOR..widths[last]).contains(&left) {
            (widths[last], give[last], wrap_at) = (left, Give::Never, Some(left));
        } else {
            give[last] = Give::Prose(WRAP_FLOOR);
        }
    }
    let (kept, caps) = kept_columns(&widths, &give, room.width, gap, shed);
    if kept < widths.len() && room.headers {
        return Fit { gap, numeric, notes: Vec::new(), vertical: true };
    }
    if kept < widths.len() || shed {
        numeric.truncate(kept);
        numeric.push(false);
        for row in std::iter::once(&mut *header).chain(rows.iter_mut()) {
            row.truncate(kept);
            row.push(LEFT_OUT.to_string());
        }
    }
    for row in std::iter::once(&mut *header).chain(rows.iter_mut()) {
        for (i, (cell, cap)) in row.iter_mut().zip(&caps).enumerate() {
            match cap.or(wrap_at.filter(|_| wrap == Some(i))) {
                Some(cap) if wrap == Some(i) => *cell = textwrap::fill(cell, wrapped(cap)),
                Some(cap) => *cell = console::truncate_str(cell, cap, "…").into_owned(),
                None => {}
            }
        }
    }
    Fit { gap, numeric, notes, vertical: false }
}

/// How [`fit_columns`] laid a table out.
pub(super) struct Fit {
    pub(super) gap: usize,
    /// Which columns (still) hold counts.
    pub(super) numeric: Vec<bool>,
    /// What was left out of the cells, one line each, printed under the table.
    pub(super) notes: Vec<String>,
    /// The table does not fit without leaving out columns its view did not name: [`fields`](super::table::fields) instead.
    pub(super) vertical: bool,
}

/// A column left out, to come back at `at` when there is room.
struct Column {
    at: usize,
    header: String,
    cells: Vec<Option<String>>,
    numeric: bool,
}

/// Lines of `width` broken at spaces only (a word wider than the line is broken).
fn wrapped(width: usize) -> textwrap::Options<'static> {
    textwrap::Options::new(width).break_words(true).word_splitter(textwrap::WordSplitter::NoHyphenation)
}

/// Leaves column `i` out of the table.
fn remove_column(header: &mut Vec<String>, rows: &mut [Vec<String>], numeric: &mut Vec<bool>, i: usize) -> Column {
    let cells = rows.iter_mut().map(|row| (row.len() > i).then(|| row.remove(i))).collect();
    Column { at: i, header: header.remove(i), cells, numeric: numeric.remove(i) }
}

/// Puts a column [`remove_column`] left out back.
fn restore_column(header: &mut Vec<String>, rows: &mut [Vec<String>], numeric: &mut Vec<bool>, column: Column) {
    header.insert(column.at, column.header);
    numeric.insert(column.at, column.numeric);
    for (row, cell) in rows.iter_mut().zip(column.cells) {
        if let Some(cell) = cell {
            row.insert(column.at, cell);
        }
    }
}

/// The colour of each row's decoration cell (the usage bar's: green, yellow, red by how full),
/// given to the cell before it (UTIL), so that a table without its bar still shows how full.
fn carry_colour(rows: &mut [Vec<String>], decoration: usize) {
    for row in rows.iter_mut().filter(|row| decoration > 0 && row.len() > decoration) {
        let Some(sgr) = row[decoration].strip_prefix("\x1b[").and_then(|rest| rest.split_once('m')).map(|(sgr, _)| sgr.to_string()) else {
            continue;
        };
        let before = &mut row[decoration - 1];
        if !before.contains('\x1b') && before != "-" {
            *before = format!("\x1b[{sgr}m{before}\x1b[0m");
        }
    }
}

/// How column `i` of a table with this header name may give way ([`Give`]): by what it holds.
fn give_of(name: &str, rows: &[Vec<String>], i: usize) -> Give {
    if NUMERIC_COLUMNS.contains(&name) || IDENTIFIER_COLUMNS.contains(&name) {
        Give::Never
    } else if rows.iter().any(|row| row.get(i).is_some_and(|c| c.contains(' '))) {
        Give::Prose(distinct_cut(rows, i))
    } else {
        Give::Names
    }
}

/// The narrowest cut of column `i` (at least [`MIN_CUT_WIDTH`]) that keeps its different values
/// different.
fn distinct_cut(rows: &[Vec<String>], i: usize) -> usize {
    let values: std::collections::BTreeSet<&str> = rows.iter().filter_map(|row| row.get(i)).map(String::as_str).collect();
    let widest = values.iter().map(|v| console::measure_text_width(v)).max().unwrap_or(0);
    (MIN_CUT_WIDTH..widest)
        .find(|&cap| {
            values.iter().map(|v| console::truncate_str(v, cap, "…")).collect::<std::collections::BTreeSet<_>>().len() == values.len()
        })
        .unwrap_or(widest)
        .max(MIN_CUT_WIDTH)
}

/// How many leading columns a line of `width` keeps (all, or as many as fit beside the
/// [`LEFT_OUT`] column, at least one) and the cut of each ([`column_caps`]). `marked`: the
/// marker follows anyway (columns were shed), so all columns fit only beside it.
fn kept_columns(widths: &[usize], give: &[Give], width: usize, gap: usize, marked: bool) -> (usize, Vec<Option<usize>>) {
    let (caps, fits) = caps_beside_marker(widths, give, marked, width, gap);
    if fits {
        return (widths.len(), caps);
    }
    for kept in (1..widths.len()).rev() {
        let (caps, fits) = caps_beside_marker(&widths[..kept], &give[..kept], true, width, gap);
        if fits || kept == 1 {
            return (kept, caps);
        }
    }
    (widths.len(), caps)
}

/// [`column_caps`] of these columns followed, when `marker`, by the [`LEFT_OUT`] column (one
/// wide, never cut): the caps of the columns themselves, and whether the line fits.
fn caps_beside_marker(widths: &[usize], give: &[Give], marker: bool, width: usize, gap: usize) -> (Vec<Option<usize>>, bool) {
    let all: Vec<usize> = widths.iter().copied().chain(marker.then_some(1)).collect();
    let all_give: Vec<Give> = give.iter().copied().chain(marker.then_some(Give::Never)).collect();
    let (mut caps, fits) = column_caps(&all, &all_give, width, gap);
    caps.truncate(widths.len());
    (caps, fits)
}

/// The display width of each column (colour codes do not count).
fn column_widths(header: Option<&[String]>, rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = Vec::new();
    for row in header.into_iter().chain(rows.iter().map(Vec::as_slice)) {
        widths.resize(widths.len().max(row.len()), 0);
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(console::measure_text_width(cell));
        }
    }
    widths
}

/// The width of a line of columns this wide, `gap` spaces apart.
fn line_width(widths: &[usize], gap: usize) -> usize {
    widths.iter().sum::<usize>() + gap * widths.len().saturating_sub(1)
}

/// How a column may give way on a narrow terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Give {
    /// Counts, addresses, CIDRs, ranges, kinds: never cut (a cut number or address would be
    /// another one); the column is left out whole when the line cannot hold it.
    Never,
    /// Free text (a cell holds a space: messages, states, holders, notes): cut, to no fewer
    /// columns than this (its different values stay different, [`distinct_cut`]).
    Prose(usize),
    /// Names (pools, nodes, objects): never cut either (a cut name is another one, or two names
    /// print alike); their shared prefix and DNS suffix are left out instead.
    Names,
}

/// The width each prose column is cut to so that the line fits `width`: one common cap for the
/// widest (narrower ones keep their width), never below the column's own floor; `None` for a
/// column left whole. Also whether the line then fits (if not, [`kept_columns`] leaves columns out).
fn column_caps(widths: &[usize], give: &[Give], width: usize, gap: usize) -> (Vec<Option<usize>>, bool) {
    if line_width(widths, gap) <= width {
        return (vec![None; widths.len()], true);
    }
    let floor = |g: Give| if let Give::Prose(floor) = g { Some(floor) } else { None };
    let kept: usize = widths.iter().zip(give).filter(|&(_, &g)| floor(g).is_none()).map(|(w, _)| w).sum();
    let mut budget = width.saturating_sub(kept + gap * widths.len().saturating_sub(1));
    let mut open: Vec<usize> = widths.iter().zip(give).filter(|&(_, &g)| floor(g).is_some()).map(|(&w, _)| w).collect();
    open.sort_unstable();
    // Water-fill from the narrowest: a column narrower than an even share keeps its width.
    let mut cap = None;
    for (taken, &w) in open.iter().enumerate() {
        let share = budget / (open.len() - taken);
        if w > share {
            cap = Some(share);
            break;
        }
        budget -= w;
    }
    let cap = cap.unwrap_or(MIN_CUT_WIDTH);
    let caps: Vec<Option<usize>> =
        widths.iter().zip(give).map(|(&w, &g)| floor(g).map(|floor| cap.max(floor)).filter(|&c| w > c)).collect();
    let cut_widths: Vec<usize> = widths.iter().zip(&caps).map(|(&w, cap)| cap.unwrap_or(w)).collect();
    (caps, line_width(&cut_widths, gap) <= width)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells.iter().map(|row| row.iter().map(|c| c.to_string()).collect()).collect()
    }

    #[test]
    fn prose_gives_way_and_names_and_counts_never() {
        use Give::*;
        // The message alone absorbs the excess: the names keep their width.
        assert_eq!(column_caps(&[10, 10, 200], &[Names, Never, Prose(12)], 80, 3).0, [None, None, Some(54)]);
        // Names are never cut, even where the line then does not fit; prose not below its floor.
        assert_eq!(column_caps(&[8, 27, 52, 200], &[Names, Names, Names, Prose(12)], 100, 2), (vec![None, None, None, Some(12)], false));
        assert_eq!(column_caps(&[10, 60], &[Names, Prose(30)], 50, 3), (vec![None, Some(37)], true));
        assert_eq!(column_caps(&[10, 60], &[Names, Prose(40)], 50, 3), (vec![None, Some(40)], false));
        assert_eq!(column_caps(&[50, 50], &[Never, Never], 80, 3), (vec![None, None], false));
        assert_eq!(column_caps(&[10, 60], &[Names, Prose(12)], 80, 3), (vec![None, None], true));
    }

    #[test]
    fn a_cut_never_prints_two_values_alike() {
        let states = rows(&[&["allocated to ip-10-0-1-109"], &["allocated to ip-10-0-1-206"], &["in no pool"]]);
        // Cut to 12 all three would differ only past "allocated t…": the floor keeps them apart.
        assert_eq!(distinct_cut(&states, 0), 25);
        let cut: std::collections::BTreeSet<String> = states.iter().map(|r| console::truncate_str(&r[0], 25, "…").into_owned()).collect();
        assert_eq!(cut.len(), 3, "{cut:?}");
    }
}
