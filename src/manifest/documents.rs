//! The documents of a YAML stream as they stand in the text: split on `---` and `...` markers
//! (directives kept with their document), what is kept around a re-serialized document, and the
//! YAML line breaks (`\n`, `\r\n`, a bare `\r`).

use std::borrow::Cow;

/// One document of a YAML stream as it stands in the text.
#[derive(Debug, PartialEq, Eq)]
pub struct Document<'a> {
    /// The 1-based line `text` starts on.
    pub line: usize,
    /// The document from its `---` line (if it has one) up to the next `---` line, or up to and
    /// including its `...` end marker.
    pub text: &'a str,
}

/// Whether a line is a document start marker (`---` alone or followed by blank/content).
fn is_document_start(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether `text` is the directives of the document whose `---` line follows (`%YAML 1.2`,
/// `%TAG …`, between blank and comment lines): they belong to that document.
fn is_directives(text: &str) -> bool {
    let directive = |l: &str| l.starts_with('%');
    yaml_lines(text).any(directive) && yaml_lines(text).all(|l| directive(l) || l.trim().is_empty() || l.trim_start().starts_with('#'))
}

/// Whether a document's text starts with directives (`%YAML 1.2`) before its `---` line: printed
/// after another document, it must follow a `...` end marker.
pub fn starts_with_directives(text: &str) -> bool {
    Document { line: 1, text }.directives() > 0
}

/// Whether a line is a `...` document end marker: what follows it is another document, with or
/// without a `---` line.
fn is_document_end(line: &str) -> bool {
    line.strip_prefix("...").is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']))
}

/// Whether a line is a `---` or `...` marker with nothing after it but blanks or a comment.
fn is_bare_marker(line: &str) -> bool {
    let rest = line.strip_prefix("---").or_else(|| line.strip_prefix("...")).map(str::trim_end);
    rest.is_some_and(|rest| rest.is_empty() || (rest.starts_with(char::is_whitespace) && rest.trim_start().starts_with('#')))
}

impl<'a> Document<'a> {
    /// The line of the document's content: past its `---` line, unless that line holds content.
    pub(super) fn first_line(&self) -> usize {
        let directives = self.directives();
        let first = yaml_lines(&self.text[directives..]).next().unwrap_or_default();
        self.line + yaml_lines(&self.text[..directives]).count() + usize::from(is_bare_marker(first))
    }

    /// What is kept around a re-serialized document: before it, the bare `---` line (a `---` line
    /// holding content becomes `---`) and the leading comments; after it, a `...` end marker and
    /// what follows it.
    /// Directives (`%YAML 1.2`) and the comments among them are kept byte for byte.
    /// The third part is where what is not kept starts in the text.
    pub(super) fn kept(&self) -> (Cow<'a, str>, &'a str, usize) {
        let directives = self.directives();
        let mut lines = yaml_lines(&self.text[directives..]).peekable();
        let mut head = directives;
        if lines.peek().is_some_and(|l| is_document_start(l)) {
            let marker = lines.next().expect("peeked");
            if !is_bare_marker(marker) {
                return (Cow::Owned(format!("{}---\n", &self.text[..directives])), self.tail(), directives);
            }
            head += marker.len();
        }
        head += lines.take_while(|l| l.trim().is_empty() || l.trim_start().starts_with('#')).map(str::len).sum::<usize>();
        (Cow::Borrowed(&self.text[..head]), self.tail(), head)
    }

    /// How many bytes of directive lines (with the blank and comment lines among them) stand
    /// before the document's `---` line; 0 without directives.
    fn directives(&self) -> usize {
        let mut offset = 0;
        for line in yaml_lines(self.text) {
            if is_document_start(line) {
                return if is_directives(&self.text[..offset]) { offset } else { 0 };
            }
            offset += line.len();
        }
        0
    }

    /// From the document's `...` end marker on; empty without one.
    fn tail(&self) -> &'a str {
        let mut offset = 0;
        for line in yaml_lines(self.text) {
            if offset > 0 && line.starts_with("...") && is_bare_marker(line) {
                return &self.text[offset..];
            }
            offset += line.len();
        }
        ""
    }
}

/// The lines of `text`, each with its line break: `\n`, `\r\n` or a bare `\r`, the three YAML
/// knows. Concatenated, they are the text.
pub fn yaml_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let end = match rest.find(['\n', '\r']) {
            _ if rest.is_empty() => return None,
            Some(i) if rest[i..].starts_with("\r\n") => i + 2,
            Some(i) => i + 1,
            None => rest.len(),
        };
        let (line, tail) = rest.split_at(end);
        rest = tail;
        Some(line)
    })
}

/// The line break of a document's first line, so that a re-serialized document keeps the file's
/// style (a CRLF file stays CRLF).
pub(super) fn line_break_of(text: &str) -> &'static str {
    let first = yaml_lines(text).next().unwrap_or_default();
    if first.ends_with("\r\n") {
        "\r\n"
    } else if first.ends_with('\r') {
        "\r"
    } else {
        "\n"
    }
}

/// Text the plugin writes (lines ending in `\n`) with every line ending in `break_`. Applied to
/// the written text only, never to a document's copied lines.
pub(super) fn in_breaks(text: &str, break_: &str) -> String {
    if break_ == "\n" {
        return text.to_string();
    }
    yaml_lines(text)
        .map(|line| line.strip_suffix('\n').map_or(line.to_string(), |l| l.strip_suffix('\r').unwrap_or(l).to_string() + break_))
        .collect()
}

/// The documents of a YAML stream; concatenated, their texts are the input.
pub fn documents(text: &str) -> Vec<Document<'_>> {
    each_document(text).collect()
}

/// [`documents`] one at a time: a stream of millions of small documents (`{}` between `---`
/// lines) is not held as a vector of them while it is rewritten.
pub fn each_document(text: &str) -> impl Iterator<Item = Document<'_>> {
    let mut lines = yaml_lines(text).enumerate();
    let (mut start, mut start_line, mut offset) = (0, 1, 0);
    let mut ended = false;
    std::iter::from_fn(move || {
        for (index, line) in lines.by_ref() {
            // A line is a start marker, an end marker or neither.
            if is_document_start(line) && offset > start && !is_directives(&text[start..offset]) {
                let document = Document { line: start_line, text: &text[start..offset] };
                (start, start_line, offset) = (offset, index + 1, offset + line.len());
                return Some(document);
            }
            offset += line.len();
            if is_document_end(line) {
                let document = Document { line: start_line, text: &text[start..offset] };
                (start, start_line) = (offset, index + 2);
                return Some(document);
            }
        }
        if ended {
            return None;
        }
        ended = true;
        // The last document, and the one empty document of an empty stream.
        (offset > start || start == 0).then(|| Document { line: start_line, text: &text[start..] })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_markers_only() {
        let stream = "# leading\na: 1\n---\nb: 2\n--- # second\nc: 3\n";
        let chunks = documents(stream);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.iter().map(|c| c.text).collect::<String>(), stream);
        assert_eq!((chunks[1].line, chunks[2].line), (3, 5));
        assert_eq!(documents("a: '---'\n----\n").len(), 1);
        assert_eq!(documents(""), vec![Document { line: 1, text: "" }]);
    }
}
