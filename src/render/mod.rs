//! Rendering: results in, text out. Pure; the format and colour are decided once in `main`
//! and passed in. Every command's result is one value implementing [`Render`], printed by
//! [`output`] in the format asked for, so that `-o` means the same for every command.

pub mod check;
mod columns;
mod document;
mod figures;
mod fit;
pub mod fleet;
pub mod inspect;
pub mod ip;
pub mod jsonpath;
pub mod legend;
pub mod map;
pub mod map_cells;
pub mod metrics;
pub mod migrate;
mod prose;
pub mod reserve;
mod script;
mod shorten;
mod style;
pub mod table;
pub mod usage;
pub mod version;
pub mod watch;

pub use document::{Format, POOL_RESOURCE, Render, SCHEMA_VERSION, Sourced, name_records, notes, output};
pub use figures::{bar, human, percent, utilization, utilization_bar};
pub use prose::fit_prose;
pub use script::{Script, scripted};
pub use style::{Style, TABLE_WIDTH, Tone, line};
pub use table::{Grid, table, table_shedding};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::Count;
    use crate::escape;
    #[test]
    fn human_counts() {
        assert_eq!(human(Count::from(65536u64)), "65536");
        assert_eq!(human(Count::from(999_999u64)), "999999");
        assert_eq!(human(Count::from(1_000_000u64)), "1.00M");
        assert_eq!(human(Count::from(16_777_216u64)), "16.8M");
        assert_eq!(human(Count::from(131_072_000u64)), "131M");
        assert_eq!(human(Count::from(999_500_000u64)), "1.00G");
        assert_eq!(human(Count::from(999_499_999u64)), "999M");
        assert_eq!(human(Count::pow2(64)), "18.4E");
        assert_eq!(human(Count::pow2(80)), "1.21Y");
        assert_eq!(human(Count::pow2(100)), "1.27Q");
        assert_eq!(human(Count::pow2(127)), "1.70e38");
        assert_eq!(human(Count::pow2(128) - Count::from(1u64)), "3.40e38");
    }

    #[test]
    fn percentages_and_bars() {
        let s = Style::plain();
        assert_eq!(percent(Some(0.18)), "18%");
        assert_eq!(percent(Some(0.001)), "<1%");
        assert_eq!(percent(Some(0.0)), "0%");
        assert_eq!(percent(Some(0.999)), ">99%");
        assert_eq!(percent(Some(1.0)), "100%");
        assert_eq!(percent(None), "-");
        assert_eq!(bar(Some(0.18), &s), "##........");
        assert_eq!(bar(None, &s), "-");
    }

    #[test]
    fn painted_text_is_escaped_and_its_colours_pass_the_output_filter() {
        let style = Style { color: true, headers: true, width: None, terminal: false };
        for tone in [Tone::Good, Tone::Warn, Tone::Bad, Tone::Dim, Tone::Bold] {
            let painted = style.paint("a\x1b]52;c;eA==\x07", tone);
            assert_eq!(escape::block(&painted, true), painted, "{painted:?}");
            assert!(painted.contains("a\\x1b]52;c;eA==\\x07"), "{painted:?}");
        }
    }
}
