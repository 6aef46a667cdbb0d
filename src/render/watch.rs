//! `usage --watch` frames: what changed between two snapshots, the status line, and the bytes
//! that show a frame on a terminal of any size or in a pipe. Pure: the command owns the clock
//! and the terminal.

use super::human;
use crate::allocator::{Count, PoolReport};

/// Switches to the terminal's alternate screen (the user's scrollback is left untouched) and
/// hides nothing: the cursor stays as it is.
pub const ENTER: &str = "\x1b[?1049h";
/// Back to the normal screen.
pub const LEAVE: &str = "\x1b[?1049l";

/// The figures of one pool family that a frame compares with the previous one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figures {
    pub pool: String,
    pub family: String,
    pub allocated_blocks: Count,
    pub withheld_blocks: Count,
    pub used_addresses: Option<Count>,
}

pub fn figures(pools: &[&PoolReport]) -> Vec<Figures> {
    pools
        .iter()
        .flat_map(|p| {
            p.families.iter().map(|f| Figures {
                pool: p.name.clone(),
                family: f.family.to_string(),
                allocated_blocks: f.allocated_blocks,
                withheld_blocks: f.withheld_blocks,
                used_addresses: f.used_addresses,
            })
        })
        .collect()
}

/// One change between two frames, as shown on the status line: `blue ipv4 allocated 14->15`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change(pub String);

/// What differs between `before` and `after`: pool families that appeared or went, and each
/// figure that moved.
pub fn changes(before: &[Figures], after: &[Figures]) -> Vec<Change> {
    let mut out = Vec::new();
    let key = |f: &Figures| (f.pool.clone(), f.family.clone());
    for new in after {
        let Some(old) = before.iter().find(|o| key(o) == key(new)) else {
            out.push(Change(format!("{} {} added", new.pool, new.family)));
            continue;
        };
        let mut moved = Vec::new();
        let opt = |c: Option<Count>| c.map_or("?".to_string(), human);
        if old.allocated_blocks != new.allocated_blocks {
            moved.push(format!("allocated {}->{}", human(old.allocated_blocks), human(new.allocated_blocks)));
        }
        if old.withheld_blocks != new.withheld_blocks {
            moved.push(format!("withheld {}->{}", human(old.withheld_blocks), human(new.withheld_blocks)));
        }
        if old.used_addresses != new.used_addresses {
            moved.push(format!("used {}->{}", opt(old.used_addresses), opt(new.used_addresses)));
        }
        if !moved.is_empty() {
            out.push(Change(format!("{} {} {}", new.pool, new.family, moved.join(" "))));
        }
    }
    for old in before.iter().filter(|o| !after.iter().any(|n| key(n) == key(o))) {
        out.push(Change(format!("{} {} removed", old.pool, old.family)));
    }
    out
}

/// `Every change, 2026-12-01T12:00:01Z: blue ipv4 allocated 14->15` (the first frame: `watching`).
pub fn status_line(now: &str, first: bool, changes: &[Change]) -> String {
    let what = if first {
        "watching; Ctrl-C to stop".to_string()
    } else if changes.is_empty() {
        "changed (nodes or blocks outside these figures)".to_string()
    } else {
        changes.iter().map(|c| c.0.as_str()).collect::<Vec<_>>().join(", ")
    };
    // Pool names are data: one line.
    format!("{now}  {}", crate::escape::field(&what))
}

/// The status line while the figures are behind the cluster: first that and for how many
/// `seconds` (a narrow terminal still shows it), then the frame's own `status`, then `which`
/// watches fail and why (data: escaped).
pub fn behind_line(seconds: u64, status: &str, which: &str) -> String {
    format!("BEHIND {seconds}s | {status} | {}", crate::escape::field(which))
}

/// A whole terminal screen: cursor home, the status line, as many lines of `text` as fit in
/// `rows` (each cut to `columns`, so nothing wraps), a line saying how many did not fit, and
/// the rest of the screen cleared. Redrawing never scrolls, whatever the height.
pub fn screen(status: &str, text: &str, rows: usize, columns: usize) -> String {
    const HOME: &str = "\x1b[H";
    const CLEAR_LINE_END: &str = "\x1b[K";
    const CLEAR_BELOW: &str = "\x1b[J";
    let rows = rows.max(3);
    let lines: Vec<&str> = text.lines().collect();
    // The status line and, when cut, the "more" line take one row each; the last row stays
    // empty so the cursor sitting there never scrolls the screen.
    let room = rows - 2;
    let (shown, hidden) = if lines.len() <= room { (&lines[..], 0) } else { (&lines[..room - 1], lines.len() - (room - 1)) };
    let mut out = String::from(HOME);
    let mut line = |text: &str| {
        out.push_str(&console::truncate_str(text, columns.max(1), ""));
        out.push_str(CLEAR_LINE_END);
        out.push_str("\r\n");
    };
    line(status);
    for l in shown {
        line(l);
    }
    if hidden > 0 {
        line(&format!("... {hidden} more line(s) do not fit this terminal: enlarge it, name pools, or pipe the output"));
    }
    out.push_str(CLEAR_BELOW);
    out
}

/// A frame in a pipe or log: the status line as a comment, then the table; blocks separated by
/// a blank line. `-o name` frames (`records`) are the records alone, so that `| xargs kubectl get`
/// reads names only: their status goes to stderr (`usage --watch`).
pub fn block(status: &str, text: &str, first: bool, records: bool) -> String {
    if records {
        return text.to_string();
    }
    format!("{}# {status}\n{text}", if first { "" } else { "\n" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piped_name_frame_is_records_only() {
        let records = "ciliumpodippool.cilium.io/blue\n";
        assert_eq!(block("12:00 first", records, true, true), records);
        assert_eq!(block("12:01 changed", records, false, true), records);
        assert_eq!(block("12:00 first", "T\n", true, false), "# 12:00 first\nT\n");
    }

    fn fig(pool: &str, allocated: u64, used: Option<u64>) -> Figures {
        Figures {
            pool: pool.into(),
            family: "ipv4".into(),
            allocated_blocks: Count::from(allocated),
            withheld_blocks: Count::ZERO,
            used_addresses: used.map(Count::from),
        }
    }

    #[test]
    fn changes_name_the_pool_family_and_the_figure() {
        let before = [fig("blue", 14, Some(72)), fig("gone", 1, None)];
        let after = [fig("blue", 15, Some(72)), fig("new", 0, None)];
        let names: Vec<String> = changes(&before, &after).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["blue ipv4 allocated 14->15", "new ipv4 added", "gone ipv4 removed"]);
        assert!(changes(&after, &after).is_empty());
    }

    #[test]
    fn a_tall_frame_is_cut_to_the_screen_and_says_so() {
        let text: String = (0..70).map(|i| format!("row {i}\n")).collect();
        let out = screen("status", &text, 20, 80);
        let lines: Vec<&str> = out.split("\r\n").collect();
        // 1 status + 17 rows + 1 "more" line, then the clear-below tail.
        assert_eq!(lines.len(), 20, "{out:?}");
        assert!(lines[0].ends_with("status\x1b[K"));
        assert_eq!(lines[17], "row 16\x1b[K");
        assert!(lines[18].starts_with("... 53 more line(s)"));
        assert_eq!(lines[19], "\x1b[J");
    }

    #[test]
    fn a_short_frame_is_shown_whole_and_lines_are_cut_to_the_width() {
        let out = screen("s", "abcdef\n", 20, 3);
        assert_eq!(out, "\x1b[Hs\x1b[K\r\nabc\x1b[K\r\n\x1b[J");
    }
}
