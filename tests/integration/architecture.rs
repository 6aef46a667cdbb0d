//! The import rule of docs/architecture.md, checked on the source: each layer of `src/` uses
//! only the layers listed for it (`crate::` paths), `src/main.rs` only what it needs to parse,
//! run and report, and the pure layers do no IO.

use std::path::{Path, PathBuf};

/// Each top-level module of the library and the modules it may use.
/// `escape` is the ground floor: the one escape policy, which every layer that shows data uses.
const LAYERS: &[(&str, &[&str])] = &[
    ("escape", &[]),
    ("error", &[]),
    ("bytes", &[]),
    ("secrets", &[]),
    ("json", &[]),
    ("manifest", &["error", "escape", "json"]),
    ("model", &["error", "escape", "json"]),
    ("allocator", &["error", "escape", "model"]),
    ("migrate", &["error", "escape", "manifest", "model"]),
    ("render", &["allocator", "escape", "manifest", "migrate", "model"]),
    ("cli", &["bytes", "render"]),
    ("interrupt", &[]),
    ("heap", &[]),
    ("stderr", &["escape", "secrets"]),
    ("files", &["bytes", "error", "escape", "interrupt", "manifest", "model", "stderr"]),
    ("cluster", &["bytes", "error", "escape", "interrupt", "manifest", "model", "secrets", "stderr"]),
    ("source", &["cluster", "error", "files", "model", "secrets", "stderr"]),
    ("terminal", &["escape", "interrupt"]),
    (
        "commands",
        &[
            "allocator",
            "bytes",
            "cli",
            "cluster",
            "error",
            "escape",
            "files",
            "heap",
            "interrupt",
            "manifest",
            "migrate",
            "model",
            "render",
            "secrets",
            "source",
            "stderr",
            "terminal",
        ],
    ),
];

/// What `src/main.rs` may use of the library.
const MAIN: &[&str] = &["cli", "commands", "error", "escape", "heap", "stderr"];

/// The layers that are pure functions of their input: no cluster, file, terminal or process.
const PURE: &[&str] = &["escape", "error", "json", "bytes", "manifest", "model", "allocator", "migrate", "render"];

/// What doing IO looks like in Rust source.
const IO: &[&str] = &[
    "kube::",
    "k8s_openapi::",
    "tokio::",
    "std::fs",
    "std::io",
    "std::process",
    "std::env",
    "dialoguer::",
    "indicatif::",
    "println!",
    "eprintln!",
    "eprint!",
    "print!(",
    "warn_line!",
];

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
    let mut out: Vec<String> = uses(text, "crate::")
        .into_iter()
        .filter(|m| m != layer && !allowed.contains(&m.as_str()))
        .map(|m| format!("uses crate::{m}"))
        .collect();
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
        assert!(
            LAYERS.iter().any(|(layer, _)| *layer == module),
            "src/{module} is in no layer of tests/integration/architecture.rs (and docs/architecture.md)"
        );
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
    assert!(
        violations(
            "allocator",
            &["model"],
            "/// see crate::render\nuse crate::model::X;\nmacro_rules! m { () => { $crate::render::x() } }"
        )
        .is_empty()
    );
    assert!(Path::new(&src()).join("lib.rs").exists());
}

/// A file of `src/` as the module path it defines (`src/model/pool.rs` → `model::pool`,
/// `src/model/mod.rs` → `model`, `src/lib.rs` → ``).
fn module_of(file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src()).unwrap().with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

fn all_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![src()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("main.rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The production code of a file: comments, test modules (`#[cfg(test)]` at the top level
/// onwards: they sit at the end) and the lines that only declare or re-export modules.
fn production_code(text: &str) -> String {
    let code = code(text);
    let end = code.lines().position(|l| l == "#[cfg(test)]").unwrap_or(usize::MAX);
    code.lines()
        .take(end)
        .filter(|l| {
            !(l.trim_start().starts_with("pub use ") || l.trim_start().starts_with("mod ") || l.trim_start().starts_with("pub mod "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a text names from `crate::` or `super::`, each expanded over `{a, b::c}` groups,
/// as segments relative to `module` (resolved to absolute module paths plus items).
fn paths(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        for (at, _) in text.match_indices(start) {
            if text[..at].ends_with(|c: char| ident(c) || c == ':' || c == '$') {
                continue;
            }
            let mut base: Vec<String> = if start == "crate::" { Vec::new() } else { module[..module.len().saturating_sub(1)].to_vec() };
            let mut rest = &text[at + start.len()..];
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
            expand(rest, base, &mut out);
        }
    }
    out
}

/// `a::b::{c, d::e}` after `base`, pushed as whole paths.
fn expand(text: &str, mut base: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut rest = text;
    loop {
        if rest.starts_with('{') {
            let mut depth = 0;
            let inner_end = rest
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(rest.len(), |(i, _)| i);
            for part in split_top(&rest[1..inner_end]) {
                let part = part.trim();
                if part == "self" {
                    out.push(base.clone());
                } else if !part.is_empty() {
                    expand(part, base.clone(), out);
                }
            }
            return;
        }
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            break;
        }
        base.push(name.clone());
        rest = &rest[name.len()..];
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    out.push(base);
}

fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[from..]);
    parts
}

/// The file a path leads to: its longest prefix that is a module, followed through a module's
/// `pub use child::{Item}` / `pub use child::*` re-exports to the child that defines the item.
fn target(path: &[String], modules: &std::collections::BTreeMap<Vec<String>, String>) -> Option<Vec<String>> {
    let depth = (0..=path.len()).rev().find(|&n| modules.contains_key(&path[..n]))?;
    let module = path[..depth].to_vec();
    let Some(item) = path.get(depth) else { return Some(module) };
    let text = &modules[&module];
    for line in text.lines().map(str::trim).filter_map(|l| l.strip_prefix("pub use ")) {
        let Some((child, names)) = line.trim_end_matches(';').split_once("::") else { continue };
        let mut child_path = module.clone();
        child_path.push(child.to_string());
        let Some(child_text) = modules.get(&child_path) else { continue };
        let names = names.trim_matches(|c| c == '{' || c == '}');
        let named = names.split(',').any(|n| n.trim() == item || n.trim().ends_with(&format!("::{item}")));
        let defined = names == "*"
            && ["struct", "enum", "fn", "type", "const", "trait", "static"]
                .iter()
                .any(|kind| child_text.contains(&format!("pub {kind} {item}")));
        if named || defined {
            return Some(child_path);
        }
    }
    Some(module)
}

/// Import cycles between files of `src/` (production code; a test module may use anything).
fn file_cycles() -> Vec<Vec<String>> {
    let files = all_files();
    let modules: std::collections::BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_of(f), std::fs::read_to_string(f).unwrap())).collect();
    let mut edges: std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>> = Default::default();
    for (module, text) in &modules {
        let code = production_code(text);
        let targets = paths(&code, module).iter().filter_map(|p| target(p, &modules)).filter(|t| t != module).collect();
        edges.insert(module.clone(), targets);
    }
    // Tarjan's strongly connected components; every component of more than one file is a cycle.
    struct Walk<'a> {
        edges: &'a std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>>,
        index: std::collections::BTreeMap<Vec<String>, (usize, usize)>,
        stack: Vec<Vec<String>>,
        cycles: Vec<Vec<String>>,
    }
    fn visit(walk: &mut Walk, node: &Vec<String>) {
        let n = walk.index.len();
        walk.index.insert(node.clone(), (n, n));
        walk.stack.push(node.clone());
        for next in walk.edges.get(node).into_iter().flatten() {
            if !walk.index.contains_key(next) {
                visit(walk, next);
                let low = walk.index[next].1.min(walk.index[node].1);
                walk.index.get_mut(node).unwrap().1 = low;
            } else if walk.stack.contains(next) {
                let low = walk.index[next].0.min(walk.index[node].1);
                walk.index.get_mut(node).unwrap().1 = low;
            }
        }
        if walk.index[node].0 == walk.index[node].1 {
            let at = walk.stack.iter().rposition(|m| m == node).unwrap();
            let component: Vec<Vec<String>> = walk.stack.split_off(at);
            if component.len() > 1 {
                walk.cycles.push(component.iter().map(|m| format!("src/{}", m.join("/"))).collect());
            }
        }
    }
    let mut walk = Walk { edges: &edges, index: Default::default(), stack: Vec::new(), cycles: Vec::new() };
    for module in edges.keys() {
        if !walk.index.contains_key(module) {
            visit(&mut walk, module);
        }
    }
    walk.cycles
}

/// Imports from a file to a module file above it in its own folder tree (`commands/usage.rs` →
/// `commands/mod.rs`): a folder's `mod.rs` declares, re-exports and dispatches; what its files
/// share sits in a file of its own beside them (`commands/context.rs`), so arrows run sideways
/// or down, never up.
fn upward_imports() -> Vec<String> {
    let files = all_files();
    let modules: std::collections::BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_of(f), std::fs::read_to_string(f).unwrap())).collect();
    let mut found = Vec::new();
    for (module, text) in &modules {
        for path in paths(&production_code(text), module) {
            let Some(to) = target(&path, &modules) else { continue };
            if !to.is_empty() && to.len() < module.len() && module.starts_with(&to) {
                found.push(format!("src/{} uses {}", module.join("/"), path.join("::")));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn no_file_imports_the_module_file_above_it() {
    let upward = upward_imports();
    assert!(upward.is_empty(), "imports up into a folder's mod.rs (move what is shared beside its users):\n{}", upward.join("\n"));
}

#[test]
fn no_two_files_import_each_other_even_through_others() {
    let cycles = file_cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between files of src/ (each line a set of files that reach each other):\n{}",
        cycles.iter().map(|c| c.join(" ")).collect::<Vec<_>>().join("\n")
    );
}

/// The cycle checker itself: paths expanded over groups, `super::` resolved, re-exports followed.
#[test]
fn the_cycle_checker_reads_paths_as_the_compiler_does() {
    let module = vec!["allocator".to_string(), "analyze".to_string(), "pools".to_string()];
    let found =
        paths("use super::in_use::{InUse, used_in};\nuse crate::model::{self, pool::PoolFamily};\nuse super::{cidrs, nodes};", &module);
    let found: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        [
            "model",
            "model::pool::PoolFamily",
            "allocator::analyze::in_use::InUse",
            "allocator::analyze::in_use::used_in",
            "allocator::analyze::cidrs",
            "allocator::analyze::nodes"
        ]
    );
    let modules = std::collections::BTreeMap::from([
        (vec!["m".to_string()], "pub use a::{A, B};\npub use b::*;".to_string()),
        (vec!["m".to_string(), "a".to_string()], "pub struct A;".to_string()),
        (vec!["m".to_string(), "b".to_string()], "pub fn c() {}".to_string()),
    ]);
    let to = |p: &str| target(&p.split("::").map(String::from).collect::<Vec<_>>(), &modules).map(|t| t.join("::"));
    assert_eq!(to("m::A").as_deref(), Some("m::a"));
    assert_eq!(to("m::c").as_deref(), Some("m::b"), "through a glob re-export, to the file that defines it");
    assert_eq!(to("m::Other").as_deref(), Some("m"));
    assert_eq!(to("m::b::c").as_deref(), Some("m::b"));
}

/// Modules a layer may not reach though its layer is allowed: block geometry is computed once,
/// in the allocator's report (`BlockRun`, `CidrReport::run`), and renderers only print it.
const FORBIDDEN: &[(&str, &str)] = &[("render", "allocator::blocks")];

/// The paths of `text` (a file defining `module`) that lead into `forbidden` (`a::b`).
fn forbidden_uses(text: &str, module: &[String], forbidden: &str) -> Vec<String> {
    let forbidden: Vec<&str> = forbidden.split("::").collect();
    paths(&code(text), module)
        .into_iter()
        .filter(|p| p.len() >= forbidden.len() && p.iter().zip(&forbidden).all(|(a, b)| a == b))
        .map(|p| p.join("::"))
        .collect()
}

#[test]
fn renderers_do_no_block_arithmetic() {
    let mut broken = Vec::new();
    for (layer, forbidden) in FORBIDDEN {
        for file in files(layer) {
            let text = std::fs::read_to_string(&file).unwrap();
            for path in forbidden_uses(&text, &module_of(&file), forbidden) {
                broken.push(format!("{} uses {path}", file.strip_prefix(src()).unwrap().display()));
            }
        }
    }
    assert!(broken.is_empty(), "the report carries block geometry; these files compute it again:\n{}", broken.join("\n"));
}

#[test]
fn the_forbidden_path_checker_sees_every_spelling() {
    let module = vec!["render".to_string(), "usage".to_string()];
    let found = |text| forbidden_uses(text, &module, "allocator::blocks");
    assert_eq!(found("use crate::allocator::{Count, blocks};\nfn f() { blocks::block_at(c, 26, 1) }"), ["allocator::blocks"]);
    assert_eq!(found("let b = crate::allocator::blocks::block_size(f, 26);"), ["allocator::blocks::block_size"]);
    assert_eq!(found("use super::super::allocator::blocks::block_at;"), ["allocator::blocks::block_at"]);
    assert!(found("use crate::allocator::{BlockRun, Count};\n/// not crate::allocator::blocks\nfn f() {}").is_empty());
}

/// Production functions longer than this many lines (signature to closing brace) are few.
const LONG_FUNCTION: usize = 60;
const MOST_LONG_FUNCTIONS: usize = 3;
/// No file has more lines before its test module, everything counted: code, comments and docs,
/// blank lines (what a reader scrolls through).
const LONG_FILE: usize = 400;

/// A file's production lines: everything before its top-level `#[cfg(test)]`.
fn production_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines.iter().position(|l| l.starts_with("#[cfg(test)]")).unwrap_or(lines.len());
    lines[..end].to_vec()
}

/// Each function with a body in `lines` as (name, lines from `fn` to its closing brace, which
/// sits at the indentation of the `fn` line: rustfmt's layout).
fn function_lengths(lines: &[&str]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let mut words = line
            .split_whitespace()
            .skip_while(|w| w.starts_with("pub") || ["async", "const", "unsafe", "extern", "\"C\""].contains(w) || w.starts_with("pub("));
        if words.next() != Some("fn") || line.trim_end().ends_with(';') {
            continue;
        }
        let name: String = words.next().unwrap_or("").chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let end = lines[at + 1..]
            .iter()
            .position(|l| l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}'))
            .map_or(lines.len(), |n| at + 1 + n);
        found.push((name, end - at + 1));
    }
    found
}

#[test]
fn functions_and_files_stay_short() {
    let (mut long_functions, mut long_files) = (Vec::new(), Vec::new());
    for file in all_files().into_iter().chain([src().join("main.rs")]) {
        let text = std::fs::read_to_string(&file).unwrap();
        let relative = file.strip_prefix(src()).unwrap().display().to_string();
        let lines = production_lines(&text);
        if lines.len() > LONG_FILE {
            long_files.push(format!("src/{relative}: {} lines before its tests", lines.len()));
        }
        for (name, length) in function_lengths(&lines).into_iter().filter(|(_, n)| *n > LONG_FUNCTION) {
            long_functions.push(format!("src/{relative} {name}: {length} lines"));
        }
    }
    assert!(long_files.is_empty(), "files over {LONG_FILE} production lines (split by concern):\n{}", long_files.join("\n"));
    assert!(
        long_functions.len() <= MOST_LONG_FUNCTIONS,
        "{} functions over {LONG_FUNCTION} lines, at most {MOST_LONG_FUNCTIONS} (split along their story):\n{}",
        long_functions.len(),
        long_functions.join("\n")
    );
}

#[test]
fn the_length_counter_counts_as_rustfmt_lays_out() {
    let text = "//! doc\nuse x;\n\npub(crate) fn a() {\n    let b = 1;\n\n    // why\n}\n\nimpl T {\n    pub async fn b(&self) -> u8 {\n        \
                1\n    }\n    fn c(&self);\n}\n#[cfg(test)]\nmod tests {\n    fn d() {}\n}\n";
    let lines = production_lines(text);
    assert_eq!(lines.len(), 15, "the test module is not production code");
    assert_eq!(function_lengths(&lines), [("a".to_string(), 5), ("b".to_string(), 3)]);
}

/// Everything said on stderr takes one route, which redacts and escapes it: `stderr.rs`.
#[test]
fn stderr_has_one_route() {
    let route = src().join("stderr.rs");
    let elsewhere: Vec<String> = all_files()
        .into_iter()
        .chain([src().join("main.rs")])
        .filter(|file| *file != route)
        .filter(|file| {
            let code = production_code(&std::fs::read_to_string(file).unwrap());
            code.contains("eprint!") || code.contains("eprintln!")
        })
        .map(|file| file.strip_prefix(src()).unwrap().display().to_string())
        .collect();
    assert!(elsewhere.is_empty(), "these write to stderr beside stderr.rs: {elsewhere:?}");
    let route_code = production_code(&std::fs::read_to_string(&route).unwrap());
    assert!(route_code.contains("std::io::stderr()"), "the route itself writes");
    // `eprint!` panics on a closed pipe (`2>&1 | head`, issue 42): the route drops the error.
    assert!(!route_code.contains("eprint"), "the route writes with `eprint!`, which panics on a closed pipe");
}
