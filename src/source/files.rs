//! Snapshots from files (`-f`): single objects, multi-document YAML, JSON, `List`s, directories
//! (recursively; e.g. an extracted `cilium sysdump`) and `-` for stdin. No cluster is contacted.

use crate::error::input;
use anyhow::Result;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Extensions read when walking a directory; files named explicitly are read whatever their name.
const MANIFEST_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// A parsed input: its name (path or `-`) and the documents it holds.
pub struct LoadedFile {
    pub name: String,
    pub documents: Vec<Value>,
}

/// Reads every path; directories are walked recursively in sorted order.
pub fn load(paths: &[String]) -> Result<Vec<LoadedFile>> {
    let mut files = Vec::new();
    for path in paths {
        if path == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| input(format!("cannot read standard input: {e}")))?;
            files.push(LoadedFile { name: "-".into(), documents: parse(&text, "-")? });
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| input(format!("cannot read {path}: {e}")))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(Path::new(path), &mut found)?;
            for file in found {
                files.push(read_file(&file)?);
            }
        } else {
            files.push(read_file(Path::new(path))?);
        }
    }
    Ok(files)
}

pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| input(format!("cannot read directory {}: {e}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, out)?;
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str())) {
            out.push(path);
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> Result<LoadedFile> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| input(format!("cannot read {name}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| input(format!("{name}: not UTF-8 text; pass Kubernetes YAML or JSON")))?;
    Ok(LoadedFile { documents: parse(&text, &name)?, name })
}

/// Parses JSON (one value, or an array of objects) or a YAML stream of documents.
pub fn parse(text: &str, name: &str) -> Result<Vec<Value>> {
    let trimmed = text.trim_start();
    let documents = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| input(format!("{name}:{}: invalid JSON: {e}", e.line())))?;
        match value {
            Value::Array(items) => items,
            other => vec![other],
        }
    } else {
        serde_saphyr::from_multiple_with_options::<Value>(text, yaml_options()).map_err(|e| {
            let line = e.location().map(|l| format!(":{}", l.line())).unwrap_or_default();
            let detail = e.to_string();
            let first = detail.lines().next().unwrap_or("parse error");
            input(format!("{name}{line}: invalid YAML: {first}"))
        })?
    };
    Ok(documents.into_iter().filter(|d| !d.is_null()).collect())
}

/// The parser's default budget guards against alias bombs but is sized for config files; a
/// `kubectl get pods -A -o yaml` of a large cluster has millions of nodes. Raise the size
/// limits, keep the alias limits.
fn yaml_options() -> serde_saphyr::Options {
    const BIG: usize = 1 << 40;
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = None;
    budget.max_events = BIG;
    budget.max_documents = BIG;
    budget.max_nodes = BIG;
    budget.max_total_scalar_bytes = BIG;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_streams_json_and_errors() {
        let docs = parse("a: 1\n---\n---\nb: [x, y]\n", "t").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(parse("[{\"a\": 1}, {\"b\": 2}]", "t").unwrap().len(), 2);
        let err = parse("a: 1\nb: [unclosed\n", "f.yaml").unwrap_err().to_string();
        assert!(err.starts_with("f.yaml:"), "{err}");
        let err = parse("{\"a\": }", "f.json").unwrap_err().to_string();
        assert!(err.starts_with("f.json:1: invalid JSON"), "{err}");
    }
}
