//! Snapshots from files (`-f`): single objects, multi-document YAML, JSON, `List`s, directories
//! (recursively; e.g. an extracted `cilium sysdump`) and `-` for stdin. No cluster is contacted.
//! Parsing the text is `crate::manifest`'s.

use crate::error::input;
use crate::manifest;
use anyhow::Result;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Extensions read when walking a directory; files named explicitly are read whatever their name.
const MANIFEST_EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// One input's text: its name (path or `-`) and its path unless it is standard input.
pub struct TextFile {
    pub name: String,
    pub path: Option<PathBuf>,
    pub text: String,
}

/// A parsed input: its name (path or `-`) and the documents it holds.
pub struct LoadedFile {
    pub name: String,
    pub documents: Vec<Value>,
}

/// Reads and parses every path (see [`read`]).
pub fn load(paths: &[String]) -> Result<Vec<LoadedFile>> {
    let mut files = Vec::new();
    each_text(paths, &mut |file| {
        files.push(LoadedFile { documents: manifest::parse(&file.text, &file.name)?, name: file.name });
        Ok(())
    })?;
    Ok(files)
}

/// The text of every path; directories are walked recursively in sorted order.
pub fn read(paths: &[String]) -> Result<Vec<TextFile>> {
    let mut files = Vec::new();
    each_text(paths, &mut |file| {
        files.push(file);
        Ok(())
    })?;
    Ok(files)
}

/// Hands every file's text to `visit` as soon as it is read, so that an error in an earlier
/// file is reported before a later file is read.
fn each_text(paths: &[String], visit: &mut dyn FnMut(TextFile) -> Result<()>) -> Result<()> {
    for path in paths {
        if path == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| input(format!("cannot read standard input: {e}")))?;
            visit(TextFile { name: "-".into(), path: None, text })?;
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| input(format!("cannot read {path}: {e}")))?;
        let mut found = Vec::new();
        if meta.is_dir() {
            walk(Path::new(path), &mut found)?;
        } else {
            found.push(PathBuf::from(path));
        }
        for file in found {
            visit(read_file(file)?)?;
        }
    }
    Ok(())
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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

fn read_file(path: PathBuf) -> Result<TextFile> {
    let name = path.display().to_string();
    let bytes = std::fs::read(&path).map_err(|e| input(format!("cannot read {name}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| input(format!("{name}: not UTF-8 text; pass Kubernetes YAML or JSON")))?;
    Ok(TextFile { name, path: Some(path), text })
}
