//! The script of `-o jsonpath=…`, `-o custom-columns=…` and their `-file` forms: its text taken
//! from the flag (or read from the file it names) and parsed once, before anything is read from
//! a cluster or `-f`; every fault is one line, exit 2.

use crate::cli::Output;
use crate::error::input;
use crate::render::{Format, Script};
use anyhow::Result;
use std::io::Read;

/// The most bytes a `-o jsonpath-file` or `-o custom-columns-file` may hold.
const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// The script `-o` asks for, if any.
pub fn of(output: &Output) -> Result<Option<Script>> {
    let format = output.format;
    let argument = output.argument.as_deref().filter(|a| !a.is_empty());
    if !format.is_script() {
        return match output.argument {
            Some(_) => Err(input(format!(
                "-o {} takes no argument after '=': only jsonpath, jsonpath-as-json, jsonpath-file, custom-columns and custom-columns-file do",
                format.name()
            ))),
            None => Ok(None),
        };
    }
    let Some(argument) = argument else {
        return Err(input(match format {
            Format::CustomColumns => {
                "custom-columns format specified but no custom columns given: -o custom-columns=NAME:.path,...".to_string()
            }
            f if f.reads_file() => format!("{} format specified but no file given: -o {}=FILE", f.name(), f.name()),
            f => format!("template format specified but no template given: -o {}=TEMPLATE", f.name()),
        }));
    };
    let text = if format.reads_file() { read(format, argument)? } else { argument.to_string() };
    match Script::parse(format, &text).expect("a script format") {
        Ok(script) => Ok(Some(script)),
        Err(why) => Err(input(why)),
    }
}

/// The text of the file `-o jsonpath-file=FILE` or `-o custom-columns-file=FILE` names.
fn read(format: Format, path: &str) -> Result<String> {
    let cannot = |why: String| input(format!("cannot read -o {} file {}: {why}", format.name(), crate::escape::field(path)));
    let file = std::fs::File::open(path).map_err(|e| cannot(e.to_string()))?;
    let mut text = String::new();
    file.take(MAX_SCRIPT_BYTES + 1).read_to_string(&mut text).map_err(|e| cannot(e.to_string()))?;
    if text.len() as u64 > MAX_SCRIPT_BYTES {
        return Err(cannot("larger than 1 MiB".to_string()));
    }
    Ok(text)
}
