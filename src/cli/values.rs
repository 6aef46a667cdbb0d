//! Flag values clap does not parse itself: durations and percentages.

use std::time::Duration;

/// `--request-timeout`: a bare number is seconds; else `30s`, `1m`, `1h2m`; `0` means none.
pub(super) fn parse_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => humantime::parse_duration(text).map_err(|e| format!("not a duration ({e}); use e.g. 30s, 1m or 0")),
    }
}

/// `--fail-above`: a number of percent, with or without `%`, from 0 to 100.
pub(super) fn parse_percent(text: &str) -> Result<f64, String> {
    let number = text.trim().strip_suffix('%').unwrap_or(text.trim()).trim_end();
    match number.parse::<f64>() {
        Ok(pct) if (0.0..=100.0).contains(&pct) => Ok(pct),
        Ok(_) => Err("not a percentage between 0 and 100".to_string()),
        Err(_) => Err("not a percentage; use e.g. 90 or 90%".to_string()),
    }
}
