//! The import rule of docs/architecture.md, checked on the source: each layer of `src/` uses
//! only the layers listed for it (`crate::` paths), `src/main.rs` only what it needs to parse,
//! run and report, and the pure layers do no IO.

use std::path::{Path, PathBuf};

/// Each top-level module of the library and the modules it may use.
/// `escape` is the ground floor: the one escape policy, which every layer that shows data uses.
const LAYERS: &[(&str, &[&str])] = &[
    ("escape", &[]),
    ("error", &[]),
    ("manifest", &["error", "escape"]),
    ("model", &["error", "escape"]),
    ("allocator", &["error", "escape", "model"]),
    ("migrate", &["error", "escape", "manifest", "model"]),
    ("render", &["allocator", "escape", "manifest", "migrate", "model"]),
    ("cli", &[]),
    ("interrupt", &[]),
    ("heap", &[]),
    ("source", &["error", "escape", "interrupt", "manifest", "model"]),
    ("terminal", &["escape", "interrupt"]),
    ("commands", &["allocator", "cli", "error", "escape", "interrupt", "manifest", "migrate", "model", "render", "source", "terminal"]),
];

/// What `src/main.rs` may use of the library.
const MAIN: &[&str] = &["cli", "commands", "error", "escape", "heap", "source"];

/// The layers that are pure functions of their input: no cluster, file, terminal or process.
const PURE: &[&str] = &["escape", "error", "manifest", "model", "allocator", "migrate", "render"];

/// What doing IO looks like in Rust source.
const IO: &[&str] = &["kube::", "k8s_openapi::", "tokio::", "std::fs", "std::io", "std::process", "std::env", "dialoguer::", "indicatif::", "println!", "eprintln!", "eprint!", "print!(", "warn_line!"];

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file of a layer: `src/<layer>.rs` or everything under `src/<layer>/`.
fn files(layer: &str) -> Vec<PathBuf> {
    let file = src().join(format!("{layer}.rs"));
    if file.exists() {
        return vec![file];
    }
    let mut found = Vec::new();
    let mut dirs = vec![src().join(layer)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("layer {layer}: {}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The code of a file without its comments (line comments and doc comments).
fn code(text: &str) -> String {
    text.lines().map(|line| if line.trim_start().starts_with("//") { "" } else { line }).collect::<Vec<_>>().join("\n")
}

/// The top-level modules `text` names through `prefix` (`crate::` or `ciliumpool::`).
fn uses(text: &str, prefix: &str) -> Vec<String> {
    let code = code(text);
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if code[..at].ends_with('$') || code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = code[at + prefix.len()..].chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
        if !name.is_empty() {
            found.push(name);
        }
    }
    found
}

/// Why `text` (a file of `layer`) breaks the rule; empty when it does not.
fn violations(layer: &str, allowed: &[&str], text: &str) -> Vec<String> {
    let mut out: Vec<String> = uses(text, "crate::").into_iter().filter(|m| m != layer && !allowed.contains(&m.as_str())).map(|m| format!("uses crate::{m}")).collect();
    if PURE.contains(&layer) {
        let code = code(text);
        out.extend(IO.iter().filter(|io| code.contains(*io)).map(|io| format!("does IO ({io})")));
    }
    out
}

#[test]
fn every_layer_uses_only_the_layers_below_it() {
    let mut broken = Vec::new();
    for (layer, allowed) in LAYERS {
        for file in files(layer) {
            let text = std::fs::read_to_string(&file).unwrap();
            let relative = file.strip_prefix(src()).unwrap().display().to_string();
            broken.extend(violations(layer, allowed, &text).into_iter().map(|why| format!("src/{relative} ({layer}) {why}")));
        }
    }
    assert!(broken.is_empty(), "the import rule of docs/architecture.md is broken:\n{}", broken.join("\n"));
}

#[test]
fn main_only_parses_runs_and_reports() {
    let text = std::fs::read_to_string(src().join("main.rs")).unwrap();
    let extra: Vec<String> = uses(&text, "ciliumpool::").into_iter().filter(|m| !MAIN.contains(&m.as_str())).collect();
    assert!(extra.is_empty(), "src/main.rs uses {extra:?}");
}

#[test]
fn every_module_of_the_library_has_a_layer() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    let modules: Vec<&str> = lib.lines().filter_map(|l| l.trim().strip_prefix("pub mod ")?.strip_suffix(';')).collect();
    assert!(!modules.is_empty());
    for module in modules {
        assert!(LAYERS.iter().any(|(layer, _)| *layer == module), "src/{module} is in no layer of tests/architecture.rs (and docs/architecture.md)");
    }
    for (layer, _) in LAYERS {
        assert!(!files(layer).is_empty(), "layer {layer} has no source");
    }
}

/// The checker itself catches what it is there for.
#[test]
fn the_checker_sees_upward_imports_and_io() {
    let upward = "use crate::model::Pool;\nuse crate::render::Style; // drawing from the model\n";
    assert_eq!(violations("model", &["error"], upward), ["uses crate::render"]);
    assert_eq!(violations("allocator", &["error", "model"], "fn f() { let x = std::fs::read(\"p\"); }"), ["does IO (std::fs)"]);
    assert!(violations("allocator", &["model"], "/// see crate::render\nuse crate::model::X;\nmacro_rules! m { () => { $crate::render::x() } }").is_empty());
    assert!(Path::new(&src()).join("lib.rs").exists());
}
