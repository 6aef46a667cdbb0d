//! Flag values clap does not parse itself: durations, percentages and `-o` with its argument.

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

/// `-o`: a format and, for kubectl's script formats, the text after its `=` (a template, a column
/// spec, a file name). `Context::from_cli` checks the pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub format: crate::render::Format,
    pub argument: Option<String>,
}

/// Parses `-o NAME[=ARGUMENT]`, NAME one of the formats (the `shown` ones listed in help and
/// completion, the others hidden but parsed, so that a view refuses them in its own words).
#[derive(Clone)]
pub(super) struct OutputParser {
    pub shown: Vec<crate::render::Format>,
}

impl clap::builder::TypedValueParser for OutputParser {
    type Value = Output;

    fn parse_ref(&self, cmd: &clap::Command, arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<Output, clap::Error> {
        use clap::ValueEnum;
        let (name, argument) = match value.to_str().and_then(|text| text.split_once('=')) {
            Some((name, argument)) => (std::ffi::OsStr::new(name), Some(argument.to_string())),
            None => (value, None),
        };
        let values = self.possible_values().expect("listed");
        let name = clap::builder::PossibleValuesParser::new(values).parse_ref(cmd, arg, name)?;
        Ok(Output { format: crate::render::Format::from_str(&name, false).expect("a listed value"), argument })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        use clap::ValueEnum;
        let all = crate::render::Format::value_variants().iter();
        Some(Box::new(all.map(|f| f.to_possible_value().expect("no variant is skipped").hide(!self.shown.contains(f)))))
    }
}
