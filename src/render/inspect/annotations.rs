//! `inspect`'s annotations fitted to the terminal's width as a reader expects (issue 42): a value
//! wraps after its spaces and commas, a key is never split — too long to stand after the label,
//! it starts a line of its own.

/// Where a field's value starts (`Annotations:   `).
pub const VALUE_COLUMN: usize = 15;

/// One line of an annotation: how far in it starts, and its text.
type Line = (usize, String);

/// The lines of `key=value` on a terminal of `width` columns (`None`: one line). The key and the
/// first words of the value stand at [`VALUE_COLUMN`]; a key too long for that starts at column 0
/// (wider than the terminal itself, it is the terminal's to break). The value goes on under
/// [`VALUE_COLUMN`], broken after spaces and commas, and inside a word only when the word alone
/// is wider than the room.
fn annotation(key: &str, value: &str, width: Option<usize>) -> Vec<Line> {
    let whole = format!("{key}={value}");
    let Some(width) = width.filter(|&w| VALUE_COLUMN + whole.chars().count() > w) else { return vec![(VALUE_COLUMN, whole)] };
    let key_indent = if VALUE_COLUMN + key.chars().count() < width { VALUE_COLUMN } else { 0 };
    let room = width.saturating_sub(VALUE_COLUMN).max(1);
    let mut lines = vec![(key_indent, format!("{key}="))];
    for piece in pieces(value) {
        let (indent, last) = lines.last_mut().expect("the key's line");
        if *indent + last.chars().count() + piece.trim_end().chars().count() <= width {
            last.push_str(piece);
            continue;
        }
        let chars: Vec<char> = piece.trim_start().chars().collect();
        lines.extend(chars.chunks(room).map(|chunk| (VALUE_COLUMN, chunk.iter().collect())));
    }
    lines.into_iter().map(|(indent, text)| (indent, text.trim_end().to_string())).collect()
}

/// `value` cut after each space and comma (the pieces joined are the value).
fn pieces(value: &str) -> impl Iterator<Item = &str> {
    value.split_inclusive([' ', ','])
}

/// The `Annotations:` field, one annotation after another as `kubectl describe` prints them (a
/// value's own commas and spaces never read as a second annotation), each fitted to `width`.
pub fn lines<'a>(annotations: impl IntoIterator<Item = (&'a String, &'a String)>, width: Option<usize>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in annotations {
        for (indent, text) in annotation(key, value, width) {
            let label = if out.is_empty() { "Annotations:" } else { "" };
            match indent {
                VALUE_COLUMN => out.push(format!("{label:<VALUE_COLUMN$}{text}")),
                _ => {
                    if !label.is_empty() {
                        out.push(label.to_string());
                    }
                    out.push(text);
                }
            }
        }
    }
    if out.is_empty() {
        out.push(format!("{:<VALUE_COLUMN$}<none>", "Annotations:"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn shown(pairs: &[(&str, &str)], width: usize) -> Vec<String> {
        let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        lines(&map, Some(width))
    }

    /// The value of a one-annotation field read back: the lines after `KEY=`, trimmed.
    fn value_lines(text: &[String], key: &str) -> Vec<String> {
        let first = text.iter().position(|l| l.contains(&format!("{key}="))).expect("the key whole, on one line");
        let head = text[first].split_once(&format!("{key}=")).unwrap().1.to_string();
        std::iter::once(head).chain(text[first + 1..].iter().map(|l| l.trim().to_string())).filter(|l| !l.is_empty()).collect()
    }

    #[test]
    fn values_wrap_at_spaces_and_commas_and_keys_stay_whole() {
        let key = "kubectl.kubernetes.io/last-applied-configuration";
        let json = r#"{"apiVersion":"cilium.io/v2alpha1","kind":"CiliumPodIPPool","metadata":{"name":"blue"}}"#;
        let description = "pods of the blue team, the ones in eu-west-1, and their batch jobs";
        for width in [60, 80] {
            for (key, value, joint) in [("example.com/description", description, " "), (key, json, "")] {
                let text = shown(&[(key, value)], width);
                assert!(text.len() > 1, "{width}: wrapped: {text:#?}");
                assert!(text.iter().all(|l| l.chars().count() <= width), "{width}: {text:#?}");
                let lines = value_lines(&text, key);
                // Broken only at spaces (read back with one) and after commas (read back with none).
                assert_eq!(lines.join(joint), value, "{width}: {text:#?}");
                assert!(lines[..lines.len() - 1].iter().all(|l| joint == " " || l.ends_with(',')), "{width}: {text:#?}");
            }
            let text = shown(&[("ipam.cilium.io/skip-masquerade", "true")], width);
            assert_eq!(text, ["Annotations:   ipam.cilium.io/skip-masquerade=true"]);
        }
        // At 60 columns the long key cannot stand after the label: the label, then the key alone.
        let text = shown(&[(key, "x")], 60);
        assert_eq!(text, ["Annotations:".to_string(), format!("{key}=x")]);
        assert_eq!(shown(&[], 60), ["Annotations:   <none>"]);
        assert_eq!(shown(&[("a", "b"), ("c", "d")], 60), ["Annotations:   a=b", "               c=d"]);
    }
}
