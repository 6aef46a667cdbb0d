//! `check` output: one row per problem, and a summary line.

use super::{Render, Sourced, Style, Tone, table};
use crate::allocator::{Problem, Severity};
use crate::model::Origin;
use serde::Serialize;

/// `check`'s result: the problems at or above the severity asked for.
pub struct Check<'a> {
    pub origin: &'a Origin,
    pub problems: Vec<&'a Problem>,
    pub ipam: &'a crate::allocator::IpamReport,
}

impl Render for Check<'_> {
    fn document(&self) -> impl Serialize {
        Sourced { source: self.origin, key: "problems", value: &self.problems }
    }

    fn names(&self) -> Option<String> {
        Some(self.problems.iter().map(|p| format!("{}\n", p.object)).collect())
    }

    fn text(&self, wide: bool, style: &Style) -> String {
        if self.ipam.nothing_to_show {
            return super::usage::nothing_to_show(self.ipam);
        }
        let mut out = if self.problems.is_empty() { String::new() } else { problems_table(&self.problems, wide, style) };
        if style.headers {
            out.push_str(&summary(&self.problems));
            out.push_str(&format!(" — IPAM mode {}\n", self.ipam.mode));
        }
        out
    }
}

pub fn tone(severity: Severity) -> Tone {
    match severity {
        Severity::Error => Tone::Bad,
        Severity::Warning => Tone::Warn,
        Severity::Info => Tone::Dim,
    }
}

pub fn problems_table(problems: &[&Problem], wide: bool, style: &Style) -> String {
    let mut header = vec!["SEVERITY", "KIND", "OBJECT", "MESSAGE"];
    if wide {
        header.push("ACTION");
    }
    let rows = problems
        .iter()
        .map(|p| {
            let mut row = vec![style.paint(p.severity.name(), tone(p.severity)), p.kind.name(), p.object.clone(), p.message.clone()];
            if wide {
                row.push(p.action.clone());
            }
            row
        })
        .collect();
    table(&header, rows, style)
}

/// "2 errors, 1 warning, 0 info" — or a clean bill of health.
pub fn summary(problems: &[&Problem]) -> String {
    if problems.is_empty() {
        return "No problems found.".to_string();
    }
    let count = |s: Severity| problems.iter().filter(|p| p.severity == s).count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}, {} info (use -o wide for suggested actions)",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        count(Severity::Info)
    )
}
