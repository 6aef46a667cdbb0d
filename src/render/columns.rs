//! `-o custom-columns=NAME:.path,…` (and `custom-columns-file`): kubectl's custom columns over
//! the rows of the document `-o json` prints — one header row as written, one row per element
//! of the command's row list ([`super::Render::rows`]), `<none>` where a path selects nothing,
//! several values joined by a comma, columns laid out as kubectl's tabwriter does.

use super::jsonpath::{Path, text_of};
use super::style::Style;
use crate::escape;
use serde_json::Value;

/// A parsed column list.
#[derive(Debug)]
pub struct Columns {
    columns: Vec<(String, Path)>,
}

impl Columns {
    /// `NAME:.path,OTHER:path` (kubectl's relaxed paths: a leading `.` may be left out, braces
    /// are allowed); the error names the part at fault.
    pub fn parse(spec: &str) -> Result<Columns, String> {
        if spec.trim().is_empty() {
            return Err("custom-columns format specified but no custom columns given".to_string());
        }
        let columns = spec.split(',').map(|part| {
            let bad = || format!("unexpected custom-columns spec: {}, expected <header>:<json-path-expr>", escape::field(part));
            let (header, path) = part.split_once(':').ok_or_else(bad)?;
            if header.trim().is_empty() || path.trim().is_empty() {
                return Err(bad());
            }
            column(header.trim(), path)
        });
        Ok(Columns { columns: columns.collect::<Result<_, _>>()? })
    }

    /// `-o custom-columns-file=FILE`'s text, as kubectl reads it: a line of headers, then a line
    /// of paths, each separated by blanks, as many of each.
    pub fn parse_file(text: &str) -> Result<Columns, String> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let (Some(headers), Some(paths)) = (lines.next(), lines.next()) else {
            return Err("a custom-columns file holds two lines: the headers, then their paths".to_string());
        };
        let (headers, paths): (Vec<&str>, Vec<&str>) = (headers.split_whitespace().collect(), paths.split_whitespace().collect());
        if headers.len() != paths.len() || lines.next().is_some() {
            return Err(format!(
                "a custom-columns file holds two lines of as many words: {} headers, {} paths{}",
                headers.len(),
                paths.len(),
                if headers.len() == paths.len() { ", and more lines" } else { "" }
            ));
        }
        let columns = headers.into_iter().zip(paths).map(|(header, path)| column(header, path));
        Ok(Columns { columns: columns.collect::<Result<_, _>>()? })
    }

    /// The table of `rows`: a header row unless `--no-headers`; every cell escaped as a table
    /// cell is (one line, one word when the headers are off into a pipe, but the last column).
    pub fn render(&self, rows: &[&Value], style: &Style) -> String {
        let words = !style.headers && !style.terminal;
        let mut grid: Vec<Vec<String>> = Vec::new();
        if style.headers {
            grid.push(self.columns.iter().map(|(header, _)| escape::cell(header, false, false).into_owned()).collect());
        }
        // The last column keeps its spaces, as tables' do (docs/design/escaping.md).
        let last = self.columns.len() - 1;
        for row in rows {
            grid.push(self.columns.iter().enumerate().map(|(c, (_, path))| cell(path, row, words && c < last)).collect());
        }
        layout(&grid)
    }
}

fn column(header: &str, path: &str) -> Result<(String, Path), String> {
    // kubectl's RelaxedJSONPathExpression: `{.a}`, `.a` and `a` are the same column.
    let bare = path.trim().trim_start_matches('{').trim_end_matches('}');
    let dotted = if bare.starts_with(['.', '[', '$', '@']) { bare.to_string() } else { format!(".{bare}") };
    let path = Path::parse(&dotted).map_err(|why| format!("custom-columns column {}: {why}", escape::field(header)))?;
    Ok((header.to_string(), path))
}

/// One cell: the values the path selects joined by a comma, `<none>` when it selects nothing.
fn cell(path: &Path, row: &Value, words: bool) -> String {
    let found = path.select(row);
    if found.is_empty() || found.iter().all(|v| v.is_null()) {
        return "<none>".to_string();
    }
    // `text_of` escaped the strings already: the cell's own rules only cap and make words.
    let text = found.into_iter().map(text_of).collect::<Vec<_>>().join(",");
    escape::visible(&text, escape::Rules { spaces: words, cap: Some(escape::CELL_CAP), backslashes: true, ..escape::Rules::default() })
        .into_owned()
}

/// kubectl's tabwriter (minimum width 6, padding 3): each column as wide as its widest cell
/// plus 3, the last one unpadded.
fn layout(grid: &[Vec<String>]) -> String {
    let width = |s: &str| s.chars().count();
    let columns = grid.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns).map(|c| grid.iter().map(|row| width(&row[c]) + 3).max().unwrap_or(0).max(6)).collect();
    let mut out = String::new();
    for row in grid {
        for (c, text) in row.iter().enumerate() {
            out.push_str(text);
            if c + 1 < columns {
                out.push_str(&" ".repeat(widths[c] - width(text)));
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rows() -> Vec<Value> {
        vec![
            json!({"name": "blue", "families": [{"family": "ipv4", "freeAddresses": 512}, {"family": "ipv6", "freeAddresses": 9}]}),
            json!({"name": "green pool", "families": [], "utilization": null}),
        ]
    }

    fn table(spec: &str, style: &Style) -> String {
        let rows = rows();
        Columns::parse(spec).unwrap().render(&rows.iter().collect::<Vec<_>>(), style)
    }

    #[test]
    fn one_header_row_and_one_row_per_element() {
        let text = table("NAME:.name,FREE:.families[*].freeAddresses,FAMILY:families[0].family,UTIL:{.utilization}", &Style::plain());
        assert_eq!(
            text,
            "NAME         FREE     FAMILY   UTIL\n\
             blue         512,9    ipv4     <none>\n\
             green pool   <none>   <none>   <none>\n"
        );
        // --no-headers into a pipe: no header row, one word per cell.
        let bare = table("NAME:.name,N:.families[0].freeAddresses", &Style { headers: false, ..Style::plain() });
        assert_eq!(bare, "blue            512\ngreen\\x20pool   <none>\n");
        let last = table("N:.families[0].family,NAME:.name", &Style { headers: false, ..Style::plain() });
        assert_eq!(last, "ipv4     blue\n<none>   green pool\n");
    }

    #[test]
    fn cells_are_escaped() {
        let hostile = json!({"name": "a\x1b]52;c;eA==\x07\nb"});
        let text = Columns::parse("N:.name").unwrap().render(&[&hostile], &Style::plain());
        assert_eq!(text, "N\na\\x1b]52;c;eA==\\x07\\nb\n");
    }

    #[test]
    fn bad_specs_name_the_part() {
        let error = |s: &str| Columns::parse(s).unwrap_err();
        assert_eq!(error(""), "custom-columns format specified but no custom columns given");
        assert_eq!(error("NAME:.name,FREE"), "unexpected custom-columns spec: FREE, expected <header>:<json-path-expr>");
        assert_eq!(error("NAME:"), "unexpected custom-columns spec: NAME:, expected <header>:<json-path-expr>");
        assert!(error("N:.a[").starts_with("custom-columns column N: \".a[\" is no JSONPath: "), "{}", error("N:.a["));
    }

    #[test]
    fn a_columns_file_is_headers_then_paths() {
        let columns = Columns::parse_file("NAME   FREE\n.name  .families[0].freeAddresses\n").unwrap();
        let rows = rows();
        assert_eq!(columns.render(&[&rows[0]], &Style::plain()), "NAME   FREE\nblue   512\n");
        assert!(Columns::parse_file("NAME FREE\n.name\n").unwrap_err().contains("2 headers, 1 paths"));
        assert!(Columns::parse_file("NAME\n").is_err());
    }
}
