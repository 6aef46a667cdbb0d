//! The kubectl-style table every command prints, laid out to the terminal's width, and prose
//! fitted to it. Cells hold data as it is; escaping and colour are the renderers' (`Style`).

use super::Style;
use super::shorten::{strip_dns_suffix, strip_prefixes};
use crate::escape;
use comfy_table::{Table, presets::NOTHING};

/// Headers of columns that hold counts or percentages: right-aligned in every table, so that
/// digits line up (the same vocabulary is used by every command's tables).
const NUMERIC_COLUMNS: &[&str] = &[
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
const LEFT_OUT: &str = "…";

/// A table before it is laid out: its header and its rows of cells (data as it is, colours painted
/// by the renderer). A fleet view puts the rows of every cluster's grid into one, behind a CLUSTER
/// column, so that one table is laid out with the rules of every table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns a narrow terminal leaves out first, in this order, before any trailing one
    /// ([`table_shedding`]): those the row's other figures imply or `-o wide` repeats.
    pub shed_first: Vec<String>,
}

impl Grid {
    pub fn new(header: &[&str], rows: Vec<Vec<String>>) -> Grid {
        Grid { header: header.iter().map(|h| h.to_string()).collect(), rows, shed_first: Vec::new() }
    }

    /// The grid whose `columns` a narrow terminal leaves out first, in this order.
    pub fn shedding_first(mut self, columns: &[&str]) -> Grid {
        self.shed_first = columns.iter().map(|c| c.to_string()).collect();
        self
    }

    /// The grid with a first column `name` holding `value` on every row (`kubectl get -A` puts
    /// NAMESPACE first the same way).
    pub fn with_first_column(mut self, name: &str, value: &str) -> Grid {
        self.header.insert(0, name.to_string());
        self.rows.iter_mut().for_each(|row| row.insert(0, value.to_string()));
        self
    }

    /// One field a line ([`fields`]), each cell escaped as [`table`] escapes it.
    pub fn render_fields(self, style: &Style) -> String {
        let cell = |c: &String| if c.is_empty() { "-".to_string() } else { escape::cell(c, style.color, false).into_owned() };
        let header: Vec<String> = self.header.iter().map(cell).collect();
        fields(&header, &self.rows.iter().map(|row| row.iter().map(cell).collect()).collect::<Vec<_>>())
    }

    /// Laid out by [`table`].
    pub fn render(self, style: &Style) -> String {
        let shed: Vec<&str> = self.shed_first.iter().map(String::as_str).collect();
        table_shedding(&self.header.iter().map(String::as_str).collect::<Vec<_>>(), self.rows, style, &shed)
    }
}

/// Spaces between two columns; [`TIGHT_GAP`] on a terminal the table would not fit otherwise.
const GAP: usize = 3;
const TIGHT_GAP: usize = 2;
/// The narrowest a column is cut to: a name or a message still says what it is.
const MIN_CUT_WIDTH: usize = 12;
/// A last column of prose wraps under itself (down to this width) before anything else gives
/// way ([`fit_columns`]): nothing of it is cut.
const WRAP_FLOOR: usize = 20;

/// A kubectl-style table: no borders, three spaces between columns, no trailing blanks, count
/// columns ([`NUMERIC_COLUMNS`]) right-aligned. With a width (a terminal), a table that would be
/// wider gives way as [`fit_columns`] says — what matters least first, names, counts, addresses
/// and identifiers ([`IDENTIFIER_COLUMNS`]) never cut, no two different values printed alike —
/// and a table that cannot fit so is printed one field a line ([`fields`]).
pub fn table(header: &[&str], rows: Vec<Vec<String>>, style: &Style) -> String {
    table_shedding(header, rows, style, &[])
}

/// [`table`], whose columns named in `shed_first` are left out, in that order, when the table
/// does not fit otherwise (a `…` column then says columns are left out, wherever they were).
pub fn table_shedding(header: &[&str], rows: Vec<Vec<String>>, style: &Style, shed_first: &[&str]) -> String {
    // Cells hold names and CIDRs from the data: one line each, no control sequence, capped;
    // one word each under --no-headers into a pipe, so that `awk` splits the columns — but the
    // last column (prose: `awk` can take `$N` to the end, `grep` must match its words) and a
    // terminal keep their spaces. An empty cell is `-`, so that every row has a field per column.
    let last = header.len().saturating_sub(1);
    let words = |i: usize| !style.headers && !style.terminal && i != last;
    let cell = |(i, c): (usize, &String)| {
        if c.is_empty() { "-".to_string() } else { escape::cell(c, style.color, words(i)).into_owned() }
    };
    // A header may name data too (the reserve-range preview's `POOL <name>`).
    let mut header: Vec<String> = header.iter().map(|h| escape::cell(h, style.color, false).into_owned()).collect();
    let mut rows: Vec<Vec<String>> = rows.iter().map(|row| row.iter().enumerate().map(cell).collect()).collect();
    let numeric: Vec<bool> = header.iter().map(|h| NUMERIC_COLUMNS.contains(&h.as_str())).collect();
    let whole = (header.clone(), rows.clone());
    let Fit { gap, numeric, notes, vertical } = match style.width {
        Some(width) => fit_columns(&mut header, &mut rows, numeric, width, style.headers, shed_first),
        None => Fit { gap: GAP, numeric, notes: Vec::new(), vertical: false },
    };
    if vertical {
        return fields(&whole.0, &whole.1);
    }
    let mut t = Table::new();
    t.load_style(NOTHING);
    if style.headers {
        t.set_header(header);
    }
    for row in rows {
        t.add_row(row);
    }
    let columns = t.column_count();
    for (i, col) in t.column_iter_mut().enumerate() {
        col.set_padding((0, if i + 1 == columns { 0 } else { gap as u16 }));
        if numeric.get(i).copied().unwrap_or(false) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    // Only a first column wider than the terminal itself is left to lose its end: a row never wraps.
    let fit = |line: String| match style.width {
        Some(width) => console::truncate_str(line.trim_end(), width, "…").into_owned(),
        None => line.trim_end().to_string(),
    };
    let mut out: String = t.lines().map(|l| fit(l) + "\n").collect();
    if t.row_count() == 0 && !style.headers {
        out.clear();
    }
    for note in notes {
        out.push_str(&fit(style.paint(&format!("{LEFT_OUT} {note}"), super::Tone::Dim)));
        out.push('\n');
    }
    out
}

/// Makes the cells fit `width` as [`table`] says, giving way in this order: the decoration
/// column (its colour passed to the column before it: UTIL), columns whose every cell is `-`, a
/// space between columns, the columns `shed_first` names, a prefix every cell of a name column
/// shares (`CiliumNode/`), a DNS suffix the names share (both said once, in the returned notes),
/// and only then prose, cut no shorter than keeps its different values apart; trailing columns
/// are left out behind [`LEFT_OUT`] last. Returns the gap, which columns (still) hold counts, and
/// the notes that say what was left out of the cells.
fn fit_columns(
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
struct Fit {
    gap: usize,
    /// Which columns (still) hold counts.
    numeric: Vec<bool>,
    /// What was left out of the cells, one line each, printed under the table.
    notes: Vec<String>,
    /// The table does not fit without leaving out columns its view did not name: [`fields`] instead.
    vertical: bool,
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

/// A table one field a line, as `kubectl describe` prints an object: `HEADER:  value`, the values
/// aligned, a blank line between rows; nothing cut (a terminal wraps long values under their
/// value, `fit_prose`). The decoration column (empty header: the usage bar) is left out.
pub fn fields(header: &[String], rows: &[Vec<String>]) -> String {
    let label = header.iter().map(|h| console::measure_text_width(h)).max().unwrap_or(0) + 3;
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        for (name, cell) in header.iter().zip(row).filter(|(name, _)| !name.is_empty()) {
            out.push_str(&format!("{:<label$}{cell}\n", format!("{name}:")));
        }
    }
    out
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

/// Prose on a terminal of `width` columns (tables already fit, so this touches only prose:
/// inspect's fields and notes, version, migrate's lines). A wider line wraps at spaces (a word
/// wider than the line is broken), its continuation lines indented under the value of a
/// `Label:   value` field or four spaces deeper than the line itself.
pub fn fit_prose(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = line.strip_suffix('\n').map_or((line, ""), |body| (body, "\n"));
        if textwrap::core::display_width(body) <= width {
            out.push_str(line);
            continue;
        }
        let indent = " ".repeat(continuation_indent(body).min(width / 2));
        let options =
            textwrap::Options::new(width).subsequent_indent(&indent).break_words(true).word_splitter(textwrap::WordSplitter::NoHyphenation);
        out.push_str(&textwrap::fill(body, options));
        out.push_str(end);
    }
    out
}

/// Where the continuation of a long line starts: under the text after a label padded with two
/// spaces or more (`Annotations:   a=b`, a legend's `USED       distinct IPs …`), else four
/// columns deeper than the line.
fn continuation_indent(line: &str) -> usize {
    let leading = line.len() - line.trim_start().len();
    let body = &line[leading..];
    let label_end = body.find("  ").filter(|&end| end <= 20 && !body[..end].contains(' '));
    match label_end {
        Some(end) => leading + end + (body[end..].len() - body[end..].trim_start().len()),
        None => leading + 4,
    }
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
    use super::super::shorten::without_suffix;
    use super::*;

    fn terminal(width: usize) -> Style {
        Style { color: false, headers: true, width: Some(width), terminal: true }
    }

    fn rows(cells: &[&[&str]]) -> Vec<Vec<String>> {
        cells.iter().map(|row| row.iter().map(|c| c.to_string()).collect()).collect()
    }

    /// The cells of `text`'s lines, split at runs of two spaces or more (the narrow gap).
    fn cells(text: &str) -> Vec<Vec<String>> {
        text.lines().map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).map(String::from).collect()).collect()
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

    #[test]
    fn a_last_column_of_prose_wraps_under_itself_and_a_table_that_cannot_fit_goes_one_field_a_line() {
        let message = "the block is listed twice on this node and the operator cannot tell which";
        let grid = rows(&[&["node-with-a-long-name-in-a-zone", "12", message]]);
        let text = table(&["NODE", "USED", "MESSAGE"], grid.clone(), &terminal(70));
        assert!(text.lines().all(|l| console::measure_text_width(l) <= 70), "{text}");
        assert!(text.lines().count() > 2 && !text.contains('…'), "the message wraps, nothing is cut: {text}");
        assert_eq!(
            text.split_whitespace().collect::<Vec<_>>().join(" "),
            format!("NODE USED MESSAGE node-with-a-long-name-in-a-zone 12 {message}")
        );
        // At 40 columns the message would be narrower than its floor: one field a line, whole.
        let text = table(&["NODE", "USED", "MESSAGE"], grid, &terminal(40));
        assert_eq!(text, format!("NODE:     node-with-a-long-name-in-a-zone\nUSED:     12\nMESSAGE:  {message}\n"));
    }

    #[test]
    fn a_column_of_dashes_goes_before_anything_is_cut() {
        let names: Vec<String> = (0..4).map(|i| format!("ip-10-0-{i}-1.eu-west-1.compute.internal")).collect();
        let grid: Vec<Vec<String>> = names.iter().map(|n| vec![n.clone(), "default".into(), "5".into(), "-".into()]).collect();
        // 40 + 7 + 4 + 4 and three gaps of 3: 64 columns; at 60 NOTE goes and every name stays whole.
        let text = table(&["NODE", "POOL", "USED", "NOTE"], grid, &terminal(60));
        assert_eq!(cells(&text)[0], ["NODE", "POOL", "USED"], "{text}");
        assert!(names.iter().all(|n| text.contains(n.as_str())), "{text}");
    }

    #[test]
    fn a_shared_kind_prefix_and_dns_suffix_are_said_once_and_names_stay_whole() {
        let objects: Vec<Vec<String>> = ["ip-10-0-1-206", "ip-10-0-45-92"]
            .iter()
            .map(|n| {
                vec![
                    "warning".into(),
                    format!("CiliumNode/{n}.eu-west-1.compute.internal"),
                    format!("node {n}.eu-west-1.compute.internal is late"),
                ]
            })
            .collect();
        let text = table(&["SEVERITY", "OBJECT", "MESSAGE"], objects.clone(), &terminal(60));
        assert!(text.lines().all(|l| console::measure_text_width(l) <= 60), "{text}");
        let shown = cells(&text);
        assert_eq!(shown[1], ["warning", "ip-10-0-1-206", "node ip-10-0-1-206 is late"], "{text}");
        assert_eq!(shown[2], ["warning", "ip-10-0-45-92", "node ip-10-0-45-92 is late"], "{text}");
        assert!(text.contains("… CiliumNode/ left out of every OBJECT\n"), "{text}");
        assert!(text.contains("… .eu-west-1.compute.internal left out of every name\n"), "{text}");
        // On a terminal wide enough nothing is left out.
        let wide = table(&["SEVERITY", "OBJECT", "MESSAGE"], objects, &terminal(200));
        assert!(!wide.contains('…') && wide.contains("CiliumNode/ip-10-0-45-92.eu-west-1.compute.internal"), "{wide}");
        // A suffix whose removal would print two names alike stays.
        let clash = rows(&[&["a.eu-west-1.compute.internal"], &["a"], &["b.eu-west-1.compute.internal"]]);
        let mut stripped = clash.clone();
        assert!(strip_dns_suffix(&["NODE".to_string()], &mut stripped).is_empty());
        assert_eq!(stripped, clash);
        assert_eq!(without_suffix("x.a.b, y.a.b (z.a.bc)", ".a.b"), "x, y (z.a.bc)");
    }

    #[test]
    fn the_bar_goes_first_and_leaves_its_colour_on_util() {
        let style = Style { color: true, ..terminal(20) };
        let grid = vec![vec!["batch".into(), "94%".into(), style.paint("#########.", super::super::Tone::Bad)]];
        let text = table(&["POOL", "UTIL", ""], grid.clone(), &style);
        assert!(!text.contains('#') && text.contains("\x1b[31m94%\x1b[0m"), "{text:?}");
        let wide = table(&["POOL", "UTIL", ""], grid, &Style { color: true, ..terminal(110) });
        assert!(wide.contains("#########.") && !wide.contains("\x1b[31m94%"), "{wide:?}");
    }

    #[test]
    fn under_no_headers_columns_that_cannot_fit_are_left_out_behind_a_marker() {
        // `usage` on examples/snapshot at 60 columns: its counts alone need more.
        let header = ["POOL", "FAMILY", "MASK", "BLOCKS", "TOTAL", "RESERVED", "ALLOCATED", "USED", "FREE", "UTIL"];
        let grid = rows(&[
            &["batch", "ipv4", "/26", "15/16", "1024", "0", "930", "123", "62", "94%"],
            &["default", "ipv6", "/120", "36/65536", "16.8M", "0", "9144", "346", "16.6M", "<1%"],
        ]);
        let bare = table(&header, grid.clone(), &Style { headers: false, ..terminal(40) });
        assert!(bare.lines().all(|l| console::measure_text_width(l) <= 40 && l.ends_with(" …")), "{bare}");
        let fields = bare.lines().map(|l| l.split_whitespace().count()).collect::<Vec<_>>();
        assert!(fields.iter().all(|&n| n == fields[0]), "{bare}");
        // With headers: one field a line, every value whole.
        let text = table(&header, grid, &terminal(40));
        assert!(text.starts_with("POOL:       batch\nFAMILY:     ipv4\n") && text.contains("FREE:       16.6M\n"), "{text}");
    }

    #[test]
    fn the_columns_a_table_names_go_first_and_come_back_when_there_is_room() {
        let header = ["POOL", "FAMILY", "MASK", "BLOCKS", "TOTAL", "RESERVED", "ALLOCATED", "USED", "FREE", "UTIL"];
        let grid = rows(&[&["default", "ipv6", "/120", "36/65536", "16.8M", "0", "9144", "346", "16.6M", "<1%"]]);
        let shed = ["TOTAL", "MASK", "RESERVED", "ALLOCATED"];
        let at_60 = table_shedding(&header, grid.clone(), &terminal(60), &shed);
        assert_eq!(cells(&at_60)[0], ["POOL", "FAMILY", "BLOCKS", "ALLOCATED", "USED", "FREE", "UTIL", "…"], "{at_60}");
        let at_70 = table_shedding(&header, grid.clone(), &terminal(70), &shed);
        assert_eq!(cells(&at_70)[0], ["POOL", "FAMILY", "BLOCKS", "RESERVED", "ALLOCATED", "USED", "FREE", "UTIL", "…"], "{at_70}");
        let at_100 = table_shedding(&header, grid.clone(), &terminal(100), &shed);
        assert_eq!(cells(&at_100)[0], header, "{at_100}");
        // A name shortened by its DNS suffix makes room for a named column again.
        let nodes = rows(&[
            &["ip-10-0-1-109.eu-west-1.compute.internal", "254", "5", "249"],
            &["ip-10-0-1-206.eu-west-1.compute.internal", "508", "21", "487"],
        ]);
        let text = table_shedding(&["NODE", "USABLE", "USED", "IDLE"], nodes, &terminal(40), &["IDLE"]);
        assert_eq!(
            cells(&text)[..3],
            [vec!["NODE", "USABLE", "USED", "IDLE"], vec!["ip-10-0-1-109", "254", "5", "249"], vec!["ip-10-0-1-206", "508", "21", "487"]],
            "{text}"
        );
    }

    #[test]
    fn prose_wraps_under_its_field_value() {
        let text = "Annotations:   alpha=1, beta=2, gamma=3\nshort\n";
        assert_eq!(fit_prose(text, 31), "Annotations:   alpha=1, beta=2,\n               gamma=3\nshort\n");
        // Anything else continues four columns in; a word wider than the line is broken.
        assert_eq!(fit_prose("  Reserved a-b: c d\n", 15), "  Reserved a-b:\n      c d\n");
        assert!(fit_prose(&"x".repeat(50), 20).lines().all(|l| l.chars().count() <= 20));
    }

    #[test]
    fn kubectl_tables() {
        let out = table(&["A", "BB", "USED"], vec![vec!["xxxx".into(), "y".into(), "7".into()]], &Style::plain());
        assert_eq!(out, "A      BB   USED\nxxxx   y       7\n");
    }
}
