//! Figures as every view prints them: counts in short form, percentages and the usage bar.

use super::style::{Style, Tone};
use crate::allocator::Count;

/// A count for humans, one notation in every table: exact below a million, else three
/// significant digits with an SI prefix (`16.8M`, `18.4E`, `1.21Y`), beyond the largest prefix
/// (10^30) in e-notation. Exact values are in `-o json`.
pub fn human(count: Count) -> String {
    if let Some(small) = count.to_u64().filter(|&v| v < 1_000_000) {
        return small.to_string();
    }
    let digits = count.to_string();
    // Round to three significant digits; 9995… carries into the next power of ten.
    let leading: u32 = digits[..4].parse().expect("a count of a million or more has four digits");
    let (mut mantissa, mut exponent) = ((leading + 5) / 10, digits.len() - 1);
    if mantissa == 1000 {
        (mantissa, exponent) = (100, exponent + 1);
    }
    const PREFIXES: [&str; 9] = ["M", "G", "T", "P", "E", "Z", "Y", "R", "Q"];
    let text = mantissa.to_string();
    match PREFIXES.get(exponent / 3 - 2) {
        Some(prefix) => {
            let whole = exponent % 3 + 1;
            let (int, frac) = text.split_at(whole);
            if frac.is_empty() { format!("{int}{prefix}") } else { format!("{int}.{frac}{prefix}") }
        }
        None => format!("{}.{}e{exponent}", &text[..1], &text[1..]),
    }
}

/// A fraction as a whole percentage, the same in every view: never `0%` unless empty, never
/// `100%` unless full (`<1%`, `>99%`); `-` when unknown.
pub fn percent(fraction: Option<f64>) -> String {
    let Some(f) = fraction else { return "-".to_string() };
    let pct = f * 100.0;
    if f > 0.0 && pct < 1.0 {
        "<1%".to_string()
    } else if f < 1.0 && pct > 99.0 {
        ">99%".to_string()
    } else {
        format!("{pct:.0}%")
    }
}

/// A 10-cell bar of `fraction`, coloured by how full it is (`-` when unknown).
/// A family's UTIL cell: `?` when the input cannot tell which blocks are allocated (unknown is
/// not 0%), `≥94%` when it cannot show reserved ranges (hidden reservations only withhold free
/// blocks, so the figure shown is a lower bound), `-` when nothing is allocatable.
pub fn utilization(fam: &crate::allocator::FamilyReport) -> String {
    match (fam.allocation_known, fam.reservations_known) {
        (true, true) => percent(fam.utilization()),
        (true, false) => fam.utilization_at_least().map_or_else(|| "?".to_string(), at_least),
        (false, _) => "?".to_string(),
    }
}

/// A lower bound as a percentage: `≥94%`; a full pool stays `100%` (nothing is left for a hidden
/// reservation to withhold), a bound under 1% is `>0%`.
fn at_least(fraction: f64) -> String {
    let shown = percent(Some(fraction));
    if fraction >= 1.0 {
        shown
    } else if shown.starts_with('<') {
        ">0%".to_string()
    } else {
        format!("≥{}", shown.trim_start_matches('>'))
    }
}

/// A family's bar, `?` when its utilization is unknown.
pub fn utilization_bar(fam: &crate::allocator::FamilyReport, style: &Style) -> String {
    if fam.allocation_known && fam.reservations_known { bar(fam.utilization(), style) } else { "?".to_string() }
}

pub fn bar(fraction: Option<f64>, style: &Style) -> String {
    let Some(f) = fraction else { return "-".to_string() };
    let filled = ((f * 10.0).round() as usize).min(10);
    let tone = if f >= 0.9 {
        Tone::Bad
    } else if f >= 0.7 {
        Tone::Warn
    } else {
        Tone::Good
    };
    style.paint(&format!("{}{}", "#".repeat(filled), ".".repeat(10 - filled)), tone)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_bound_is_shown_as_one() {
        assert_eq!(
            [at_least(0.9375), at_least(0.5), at_least(0.995), at_least(0.001), at_least(1.0)],
            ["≥94%", "≥50%", "≥99%", ">0%", "100%"]
        );
    }
}
