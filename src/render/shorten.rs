//! What a narrow terminal leaves out of a table's names before it cuts anything: a `Kind/` prefix
//! every cell of a column shares, and a DNS suffix the names share, each said once under the table.

/// Strips from each name column (`names`: no space in a cell, not counts nor identifiers) the
/// prefix ending in `/` that every cell holds (`CiliumNode/` when every object is a node): one note
/// per column stripped.
pub(super) fn strip_prefixes(header: &[String], rows: &mut [Vec<String>], names: impl Fn(usize) -> bool) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, name) in header.iter().enumerate() {
        if !names(i) {
            continue;
        }
        let cells: Vec<&String> = rows.iter().filter_map(|row| row.get(i)).filter(|c| *c != "-").collect();
        let Some(first) = cells.first() else { continue };
        let Some(end) = first.find('/').filter(|&end| end > 0 && first[..end].chars().all(|c| c.is_ascii_alphanumeric())) else {
            continue;
        };
        let prefix = first[..=end].to_string();
        if cells.iter().all(|c| c.starts_with(&prefix) && c.len() > prefix.len()) {
            for cell in rows.iter_mut().filter_map(|row| row.get_mut(i)).filter(|c| *c != "-") {
                *cell = cell[prefix.len()..].to_string();
            }
            notes.push(format!("{prefix} left out of every {name}"));
        }
    }
    notes
}

/// A character of a DNS name.
fn dns_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')
}

/// The DNS suffix (two labels or more, the last not a number: no address) the most different
/// names in `rows` end with, the longest of those; `None` when no name has one.
fn shared_dns_suffix(rows: &[Vec<String>]) -> Option<String> {
    let mut names: Vec<&str> = rows.iter().flatten().flat_map(|cell| cell.split(|c| !dns_char(c))).collect();
    names.retain(|n| n.matches('.').count() >= 2 && n.rsplit('.').next().is_some_and(|last| last.chars().any(|c| c.is_ascii_alphabetic())));
    names.sort_unstable();
    names.dedup();
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for name in &names {
        let dots = name.match_indices('.').map(|(at, _)| at).filter(|&at| at > 0);
        for at in dots.filter(|&at| name[at + 1..].contains('.')) {
            *counts.entry(&name[at..]).or_default() += 1;
        }
    }
    counts.into_iter().max_by_key(|(suffix, count)| (*count, suffix.len())).map(|(suffix, _)| suffix.to_string())
}

/// `cell` without `suffix` at the end of each name in it.
pub(super) fn without_suffix(cell: &str, suffix: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    let mut rest = cell;
    while let Some(at) = rest.find(suffix) {
        let end = at + suffix.len();
        let whole = at > 0 && rest[..at].ends_with(dns_char) && !rest[end..].starts_with(dns_char);
        out.push_str(&rest[..if whole { at } else { end }]);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Strips the DNS suffix the names share ([`shared_dns_suffix`]) from every column it leaves
/// with as many different values (never one that would print two names alike): the note that
/// says it, or none.
pub(super) fn strip_dns_suffix(header: &[String], rows: &mut [Vec<String>]) -> Vec<String> {
    let Some(suffix) = shared_dns_suffix(rows) else { return Vec::new() };
    let mut stripped = false;
    for i in 0..header.len() {
        let before: std::collections::BTreeSet<&String> = rows.iter().filter_map(|row| row.get(i)).collect();
        let after: std::collections::BTreeSet<String> = before.iter().map(|c| without_suffix(c, &suffix)).collect();
        if after.len() < before.len() || before.iter().all(|c| !c.contains(&suffix)) {
            continue;
        }
        rows.iter_mut().filter_map(|row| row.get_mut(i)).for_each(|cell| *cell = without_suffix(cell, &suffix));
        stripped = true;
    }
    if stripped { vec![format!("{suffix} left out of every name")] } else { Vec::new() }
}
