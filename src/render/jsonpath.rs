//! `-o jsonpath=TEMPLATE`: kubectl's template layer (literal text, `{.path}`, `{range …}{end}`,
//! `{"quoted text"}`) over the document `-o json` prints, each `{.path}` evaluated as an RFC 9535
//! JSONPath (`jsonpath-rust`). Pure: a template is parsed once ([`Template::parse`], every error
//! one line naming the bad part) and applied to a JSON value; every value it prints is escaped.

use crate::escape;
use jsonpath_rust::parser::model::JpQuery;
use serde_json::Value;

/// One JSONPath expression as the user wrote it and as parsed.
#[derive(Debug)]
pub struct Path {
    /// The expression as written (`.pools[*].name`), for messages.
    pub source: String,
    query: JpQuery,
}

impl Path {
    /// kubectl's relaxed spelling (`.a.b`, `[0]`, `$.a`, `@.a`, `..a`) as an RFC 9535 query.
    pub fn parse(expression: &str) -> Result<Path, String> {
        let text = expression.trim();
        let rfc = match text.chars().next() {
            Some('$') => text.to_string(),
            Some('@') => format!("${}", &text[1..]),
            Some('.' | '[') => format!("${text}"),
            _ => return Err(format!("unrecognized expression {:?}: a path starts with '.', '[', '$' or '@'", escape::field(text))),
        };
        let query = jsonpath_rust::parser::parse_json_path(&rfc)
            .map_err(|e| format!("{:?} is no JSONPath: {}", escape::field(text), one_line(&e.to_string())))?;
        Ok(Path { source: text.to_string(), query })
    }

    /// The values the path selects in `value`, in document order (none when it matches nothing).
    pub fn select<'a>(&self, value: &'a Value) -> Vec<&'a Value> {
        jsonpath_rust::query::js_path_process(&self.query, value)
            .map(|found| found.into_iter().map(|r| r.val).collect())
            .unwrap_or_default()
    }
}

/// A parser's message as one line: its `= expected …` line when it draws a picture.
fn one_line(message: &str) -> String {
    let expected = message.lines().map(str::trim).find_map(|l| l.strip_prefix("= "));
    expected.unwrap_or_else(|| message.lines().next().unwrap_or_default()).trim().to_string()
}

/// One piece of a template.
#[derive(Debug)]
enum Node {
    /// Literal text (outside braces, or a quoted `{"\t"}`), printed as written.
    Text(String),
    /// `{.path}`: its results, joined by a space.
    Path(Path),
    /// `{range .path}…{end}`: the body once per result, relative to it.
    Range(Path, Vec<Node>),
}

/// A parsed `-o jsonpath` template.
#[derive(Debug)]
pub struct Template {
    nodes: Vec<Node>,
}

impl Template {
    /// Parses kubectl's template syntax; the error names the action at fault.
    pub fn parse(template: &str) -> Result<Template, String> {
        let fail = |action: &str, why: String| format!("error parsing jsonpath {{{}}}: {why}", escape::field(action));
        // The nodes of each open `range`, innermost last, with its path.
        let mut open: Vec<(Option<Path>, Vec<Node>)> = vec![(None, Vec::new())];
        let mut rest = template;
        while !rest.is_empty() {
            let Some(start) = rest.find('{') else {
                push_text(&mut open, rest);
                break;
            };
            push_text(&mut open, &rest[..start]);
            let end = action_end(&rest[start..])
                .ok_or_else(|| format!("error parsing jsonpath {}: unclosed action: no '}}'", escape::field(&rest[start..])))?;
            let action = &rest[start + 1..start + end];
            rest = &rest[start + end + 1..];
            let words = action.trim();
            if let Some(path) = words.strip_prefix("range ").or_else(|| words.strip_prefix("range\t")) {
                open.push((Some(Path::parse(path).map_err(|why| fail(action, why))?), Vec::new()));
            } else if words == "end" {
                if open.len() == 1 {
                    return Err(fail(action, "an {end} without a {range}".to_string()));
                }
                let (path, body) = open.pop().expect("a range is open");
                current(&mut open).push(Node::Range(path.expect("a range has a path"), body));
            } else if let Some(quoted) = words.strip_prefix('"') {
                let text = unquote(quoted).ok_or_else(|| fail(action, "unterminated quoted string".to_string()))?;
                current(&mut open).push(Node::Text(text));
            } else if words.is_empty() {
                return Err(fail(action, "an empty action".to_string()));
            } else {
                current(&mut open).push(Node::Path(Path::parse(words).map_err(|why| fail(action, why))?));
            }
        }
        if open.len() > 1 {
            let (path, _) = open.pop().expect("a range is open");
            return Err(fail(&format!("range {}", path.expect("a range has a path").source), "a {range} without an {end}".to_string()));
        }
        Ok(Template { nodes: open.pop().expect("the top level").1 })
    }

    /// The template applied to `document`: literal text as written, each value escaped
    /// (`escape::field`: one line, nothing a terminal acts on), several results joined by a space.
    pub fn render(&self, document: &Value) -> String {
        let mut out = String::new();
        render_nodes(&self.nodes, document, &mut out);
        out
    }

    /// `-o jsonpath-as-json`: every value the template's paths select, as one JSON array.
    pub fn values<'a>(&self, document: &'a Value) -> Vec<&'a Value> {
        let mut out = Vec::new();
        collect(&self.nodes, document, &mut out);
        out
    }
}

fn current(open: &mut [(Option<Path>, Vec<Node>)]) -> &mut Vec<Node> {
    &mut open.last_mut().expect("the top level").1
}

fn push_text(open: &mut [(Option<Path>, Vec<Node>)], text: &str) {
    if !text.is_empty() {
        current(open).push(Node::Text(text.to_string()));
    }
}

/// Where the action starting at `text[0] == '{'` closes: the first `}` outside quotes and brackets.
fn action_end(text: &str) -> Option<usize> {
    let (mut quote, mut depth, mut escaped) = (None, 0usize, false);
    for (at, c) in text.char_indices().skip(1) {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '(') => depth += 1,
            (None, ']' | ')') => depth = depth.saturating_sub(1),
            (None, '}') if depth == 0 => return Some(at),
            _ => {}
        }
    }
    None
}

/// The text of a double-quoted literal (after its opening quote), Go's escapes `\n \t \r \" \\`.
fn unquote(quoted: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return chars.as_str().trim().is_empty().then_some(out),
            '\\' => out.push(match chars.next()? {
                'n' => '\n',
                't' => '\t',
                'r' => '\r',
                other => other,
            }),
            c => out.push(c),
        }
    }
    None
}

fn render_nodes(nodes: &[Node], value: &Value, out: &mut String) {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(&literal(text)),
            Node::Path(path) => {
                let texts: Vec<String> = path.select(value).into_iter().map(text_of).collect();
                out.push_str(&texts.join(" "));
            }
            Node::Range(path, body) => {
                for item in path.select(value) {
                    render_nodes(body, item, out);
                }
            }
        }
    }
}

fn collect<'a>(nodes: &[Node], value: &'a Value, out: &mut Vec<&'a Value>) {
    for node in nodes {
        match node {
            Node::Text(_) => {}
            Node::Path(path) => out.extend(path.select(value)),
            Node::Range(path, body) => path.select(value).into_iter().for_each(|item| collect(body, item, out)),
        }
    }
}

/// The user's own literal text: newlines and TABs as written (`{"\t"}`, `{"\n"}`), any other
/// character a terminal acts on made visible.
fn literal(text: &str) -> String {
    let mut out = String::new();
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let cells: Vec<_> = line.split('\t').map(escape::net).collect();
        out.push_str(&cells.join("\t"));
    }
    out
}

/// One selected value as kubectl prints it: a string as it is (escaped), a number or boolean as
/// in JSON, `null`, an object or array as compact JSON.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(text) => escape::field(text).into_owned(),
        Value::Array(_) | Value::Object(_) => escape::net(&value.to_string()).into_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({"pools": [
            {"name": "blue", "families": [{"family": "ipv4", "utilization": 0.5, "freeAddresses": 512}]},
            {"name": "green", "families": [{"family": "ipv4", "utilization": null, "freeAddresses": 7}, {"family": "ipv6", "freeAddresses": "340282366920938463463374607431768211456"}]}
        ]})
    }

    fn run(template: &str) -> String {
        Template::parse(template).unwrap_or_else(|e| panic!("{template}: {e}")).render(&doc())
    }

    #[test]
    fn paths_are_joined_by_a_space_as_kubectl_does() {
        assert_eq!(run("{.pools[*].name}"), "blue green");
        assert_eq!(run("{.pools[0].families[0].freeAddresses}"), "512");
        assert_eq!(run("{$.pools[1].name}"), "green");
        assert_eq!(run("{..family}"), "ipv4 ipv4 ipv6");
        assert_eq!(run("pools: {.pools[-1].name}!"), "pools: green!");
        assert_eq!(run("{.pools[1].families[0].utilization}"), "null");
        assert_eq!(run("{.pools[0].families[0]}"), r#"{"family":"ipv4","utilization":0.5,"freeAddresses":512}"#);
        // A path that matches nothing prints nothing (kubectl's --allow-missing-template-keys).
        assert_eq!(run("[{.nothing.here}]"), "[]");
    }

    #[test]
    fn range_quoted_text_and_filters() {
        assert_eq!(run(r#"{range .pools[*]}{.name}{"\t"}{.families[0].utilization}{"\n"}{end}"#), "blue\t0.5\ngreen\tnull\n");
        assert_eq!(run(r#"{.pools[?(@.name=="green")].families[*].freeAddresses}"#), "7 340282366920938463463374607431768211456");
        assert_eq!(run(r#"{range .pools[*]}{range .families[*]}{.family},{end};{end}"#), "ipv4,;ipv4,ipv6,;");
        // A brace inside a quoted filter value does not close the action.
        assert_eq!(run(r#"{.pools[?(@.name=="a}b")].name}x"#), "x");
        assert_eq!(run(r#"{"a \"q\" \\ b"}"#), r#"a "q" \ b"#);
    }

    #[test]
    fn values_are_escaped_and_literal_tabs_and_newlines_kept() {
        let hostile = json!({"name": "a\x1b[2J\nb\\c", "list": ["\u{202e}x"]});
        let text = Template::parse("{.name}\t{.list}\n").unwrap().render(&hostile);
        assert_eq!(text, "a\\x1b[2J\\nb\\\\c\t[\"\\u{202e}x\"]\n");
        assert!(!escape::has_unsafe(&text.replace(['\t', '\n'], "")), "{text:?}");
    }

    #[test]
    fn as_json_collects_the_values() {
        let template = Template::parse("{range .pools[*]}{.name}{\"\\n\"}{end}").unwrap();
        let document = doc();
        assert_eq!(template.values(&document), [&json!("blue"), &json!("green")]);
    }

    #[test]
    fn bad_templates_are_one_line_naming_the_action() {
        let error = |t: &str| Template::parse(t).unwrap_err();
        assert_eq!(error("{.pools[*].name"), "error parsing jsonpath {.pools[*].name: unclosed action: no '}'");
        assert_eq!(error("{.pools[}"), "error parsing jsonpath {.pools[}: unclosed action: no '}'");
        assert!(error("{.pools.}").starts_with("error parsing jsonpath {.pools.}: \".pools.\" is no JSONPath: "), "{}", error("{.pools.}"));
        assert_eq!(error("{range .pools[*]}{.name}"), "error parsing jsonpath {range .pools[*]}: a {range} without an {end}");
        assert_eq!(error("{.a}{end}"), "error parsing jsonpath {end}: an {end} without a {range}");
        assert_eq!(
            error("{pools}"),
            "error parsing jsonpath {pools}: unrecognized expression \"pools\": a path starts with '.', '[', '$' or '@'"
        );
        assert_eq!(error("{}"), "error parsing jsonpath {}: an empty action");
        assert_eq!(error("{\"abc}"), "error parsing jsonpath {\"abc}: unclosed action: no '}'");
        for template in ["{.pools.}", "{.a[?(@.b==)]}", "{range .x[0}{end}"] {
            assert!(!error(template).contains('\n'), "{template}: {}", error(template));
        }
    }
}
