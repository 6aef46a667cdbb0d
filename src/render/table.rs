//! The kubectl-style table every command prints, laid out to the terminal's width (how it gives
//! way: `fit.rs`), or one field a line when it cannot fit. Cells hold data as it is; escaping and
//! colour are the renderers' (`Style`).

use super::Style;
use super::fit::{Fit, GAP, LEFT_OUT, NUMERIC_COLUMNS, fit_columns};
use crate::escape;
use comfy_table::{Table, presets::NOTHING};

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
        fields(&header, &self.rows.iter().map(|row| row.iter().map(cell).collect()).collect::<Vec<_>>(), style.width)
    }

    /// The columns [`Grid::render`] prints at `style`'s width, by header: every column when the
    /// table goes one field a line; without those a narrow terminal left out (shed, or empty,
    /// or past the `…` column) and without the unnamed decoration column when it gave way.
    pub fn printed_columns(&self, style: &Style) -> Vec<String> {
        let header: Vec<&str> = self.header.iter().map(String::as_str).collect();
        let (mut printed, mut rows) = escaped_cells(&header, &self.rows, style);
        let shed: Vec<&str> = self.shed_first.iter().map(String::as_str).collect();
        if fitted(&mut printed, &mut rows, style, &shed).vertical {
            return self.header.clone();
        }
        self.header.iter().filter(|h| printed.contains(&escape::cell(h, style.color, false).into_owned())).cloned().collect()
    }

    /// Laid out by [`table`].
    pub fn render(self, style: &Style) -> String {
        let shed: Vec<&str> = self.shed_first.iter().map(String::as_str).collect();
        table_shedding(&self.header.iter().map(String::as_str).collect::<Vec<_>>(), self.rows, style, &shed)
    }
}

/// A kubectl-style table: no borders, three spaces between columns, no trailing blanks, count
/// columns ([`NUMERIC_COLUMNS`]) right-aligned. With a width (a terminal), a table that would be
/// wider gives way as [`fit_columns`] says — what matters least first, names, counts, addresses
/// and identifiers (`fit::IDENTIFIER_COLUMNS`) never cut, no two different values printed alike —
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
    let (mut header, mut rows) = escaped_cells(header, &rows, style);
    let whole = (header.clone(), rows.clone());
    let Fit { gap, numeric, notes, vertical } = fitted(&mut header, &mut rows, style, shed_first);
    if vertical {
        return fields(&whole.0, &whole.1, style.width);
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

/// The header and cells as [`table_shedding`] prints them: an empty cell is `-`, and each is
/// escaped as one line.
fn escaped_cells(header: &[&str], rows: &[Vec<String>], style: &Style) -> (Vec<String>, Vec<Vec<String>>) {
    let last = header.len().saturating_sub(1);
    let words = |i: usize| !style.headers && !style.terminal && i != last;
    let cell = |(i, c): (usize, &String)| {
        if c.is_empty() { "-".to_string() } else { escape::cell(c, style.color, words(i)).into_owned() }
    };
    // A header may name data too (the reserve-range preview's `POOL <name>`).
    let header: Vec<String> = header.iter().map(|h| escape::cell(h, style.color, false).into_owned()).collect();
    (header, rows.iter().map(|row| row.iter().enumerate().map(cell).collect()).collect())
}

/// The escaped cells fitted to `style`'s width ([`fit_columns`]); unchanged without a width.
fn fitted(header: &mut Vec<String>, rows: &mut [Vec<String>], style: &Style, shed_first: &[&str]) -> Fit {
    let numeric: Vec<bool> = header.iter().map(|h| NUMERIC_COLUMNS.contains(&h.as_str())).collect();
    match style.width {
        Some(width) => fit_columns(header, rows, numeric, width, style.headers, shed_first),
        None => Fit { gap: GAP, numeric, notes: Vec::new(), vertical: false },
    }
}

/// A table one field a line, as `kubectl describe` prints an object: `HEADER:  value`, the values
/// aligned, a blank line between rows; nothing cut (a terminal wraps long values under their
/// value, `fit_prose`). A value of one word (a name, an object) that would not fit beside its
/// label within `width` starts its own line, indented, so that it is not broken mid-word. The
/// decoration column (empty header: the usage bar) is left out.
pub fn fields(header: &[String], rows: &[Vec<String>], width: Option<usize>) -> String {
    let label = header.iter().map(|h| console::measure_text_width(h)).max().unwrap_or(0) + 3;
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        for (name, cell) in header.iter().zip(row).filter(|(name, _)| !name.is_empty()) {
            let long = console::measure_text_width(cell);
            let own_line = width.is_some_and(|width| !cell.contains(' ') && label + long > width && OWN_LINE_INDENT + long <= width);
            if own_line {
                out.push_str(&format!("{name}:\n{:OWN_LINE_INDENT$}{cell}\n", ""));
            } else {
                out.push_str(&format!("{:<label$}{cell}\n", format!("{name}:")));
            }
        }
    }
    out
}

/// How far a value that starts its own line under its label is indented ([`fields`]).
const OWN_LINE_INDENT: usize = 2;

#[cfg(test)]
mod tests {
    use super::super::shorten::{strip_dns_suffix, without_suffix};
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
        // The name does not fit beside its label (10 + 31 > 40): it starts a line of its own.
        assert_eq!(text, format!("NODE:\n  node-with-a-long-name-in-a-zone\nUSED:     12\nMESSAGE:  {message}\n"));
    }

    #[test]
    fn one_field_a_line_puts_a_name_too_long_for_its_label_on_a_line_of_its_own() {
        let object = "CiliumNode/ip-10-0-1-206.eu-west-1.compute.internal";
        let message = "block 10.99.7.0/24 is listed under pool \"legacy\", which does not exist";
        let header = ["SEVERITY", "OBJECT", "MESSAGE"].map(String::from);
        let text = fields(&header, &rows(&[&["warning", object, message]]), Some(56));
        assert!(text.contains(&format!("OBJECT:\n  {object}\n")), "the object whole on its own line: {text}");
        assert!(text.starts_with("SEVERITY:  warning\nOBJECT:"), "{text}");
        assert!(text.contains(&format!("MESSAGE:   {message}")), "prose stays beside its label, wrapped later: {text}");
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
    fn kubectl_tables() {
        let out = table(&["A", "BB", "USED"], vec![vec!["xxxx".into(), "y".into(), "7".into()]], &Style::plain());
        assert_eq!(out, "A      BB   USED\nxxxx   y       7\n");
    }
}
