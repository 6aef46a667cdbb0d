//! Prose fitted to the terminal's width: long lines wrapped at spaces, continued under their
//! field's value (tables are fitted by [`super::fit`]).

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_wraps_under_its_field_value() {
        let text = "Annotations:   alpha=1, beta=2, gamma=3\nshort\n";
        assert_eq!(fit_prose(text, 31), "Annotations:   alpha=1, beta=2,\n               gamma=3\nshort\n");
        // Anything else continues four columns in; a word wider than the line is broken.
        assert_eq!(fit_prose("  Reserved a-b: c d\n", 15), "  Reserved a-b:\n      c d\n");
        assert!(fit_prose(&"x".repeat(50), 20).lines().all(|l| l.chars().count() <= 20));
    }
}
