//! `migrate -f`: converts CiliumPodIPPool manifests (a GitOps repository) to v2 without a
//! cluster. Shows only what changes — the changed documents, or a unified diff per file — or
//! rewrites the files (`--in-place`); `--check` and `--dry-run` write nothing.

use crate::cli::{DryRun, MigrateArgs, Schema};
use crate::commands::context::{Context, emit};
use crate::error::input;
use crate::escape::{Field, field};
use crate::files::fingerprint::Fingerprint;
use crate::files::inputs::LoadedFile;
use crate::files::{Limits, Pools, atomic, read as files};
use crate::migrate::manifests::{self, changed_documents, unified_diff};
use crate::model::Dialect;
use crate::model::pool::pool_objects;
use anyhow::{Context as _, Result};

/// One input file and its conversion.
struct ConvertedFile {
    name: String,
    /// What the file was when read: it is rewritten only if it still is.
    read: Option<Fingerprint>,
    before: String,
    outcome: manifests::Outcome,
}

pub fn run(args: &MigrateArgs, paths: &[String], limits: Limits, ctx: &Context) -> Result<i32> {
    let target = match args.schema {
        Schema::Upstream => Dialect::UpstreamV2,
        Schema::Cfp => Dialect::CfpV2,
    };
    let writes = args.in_place && args.dry_run == DryRun::None;
    let results = convert_all(paths, limits, target, args.in_place)?;
    if args.check {
        return check_manifests(&results, target, ctx);
    }
    if args.in_place && results.iter().any(|r| r.read.is_none()) {
        return Err(input("--in-place cannot rewrite standard input"));
    }
    for file in &results {
        if let Some(note) = crate::manifest::uncommented_note(&file.name, &file.outcome.uncommented) {
            warn_line!("{note}");
        }
    }
    if writes {
        rewrite_in_place(&results)?;
    }
    if args.diff {
        print_diffs(&results, ctx)?;
    } else if !writes {
        print_changed(&results, ctx)?;
    }
    let changed = results.iter().any(|r| r.outcome.converted > 0);
    if !writes {
        summarise_unchanged(&results, args.in_place);
    }
    // As `kubectl diff`: 1 when something differs (and was not written); the same for a dry run
    // (`--exit-code` is kept for the scripts that pass it). Printing the converted documents is
    // the command's output, not a preview: exit 0.
    let previewed = args.diff || args.exit_code || args.dry_run != DryRun::None;
    Ok(if changed && !writes && previewed { 1 } else { 0 })
}

/// Reads, parses and converts every file, and checks every pool, before anything is shown or
/// written: a later invalid document must not leave a half-converted set (exit 2).
fn convert_all(paths: &[String], limits: Limits, target: Dialect, in_place: bool) -> Result<Vec<ConvertedFile>> {
    let texts = files::read(paths, limits)?;
    // Only the pools are checked: what is only counted is not built.
    let parsed = texts.iter().map(|f| files::parsed(f, Pools::Read, limits)).collect::<Result<Vec<LoadedFile>>>()?;
    if in_place {
        files::refuse_duplicates(&parsed)?;
    } else {
        files::warn_duplicates(&parsed);
    }
    let results = texts
        .into_iter()
        .map(|file| {
            let outcome = manifests::convert_text(&file.text, &file.name, target).map_err(input)?;
            Ok(ConvertedFile { name: file.name, read: file.read, before: file.text, outcome })
        })
        .collect::<Result<Vec<_>>>()?;
    // Every pool document is checked, not only those that needed converting: a directory
    // holding an invalid pool is neither rewritten nor certified.
    let invalid = invalid_pools(&parsed, target);
    if let Some(problem) = invalid.first() {
        let more = if invalid.len() > 1 { format!(" ({} invalid pools in all)", invalid.len()) } else { String::new() };
        return Err(input(format!("{problem}; nothing was written{more}")));
    }
    Ok(results)
}

/// `--check`: the files with pools to convert; exit 1 if any — exactly what `--in-place` would
/// rewrite, so that `--in-place` then `--check` passes.
fn check_manifests(results: &[ConvertedFile], target: Dialect, ctx: &Context) -> Result<i32> {
    let pending: Vec<_> = results.iter().filter(|r| r.outcome.converted > 0).collect();
    let mut out = String::new();
    for file in &pending {
        out.push_str(&format!(
            "{}: {} CiliumPodIPPool(s) to convert to cilium.io/v2 ({})\n",
            Field(&file.name),
            file.outcome.converted,
            target.name()
        ));
    }
    if pending.is_empty() && ctx.style.headers {
        out.push_str(&format!("All CiliumPodIPPool manifests use cilium.io/v2 ({}).\n", target.name()));
    }
    ctx.human(&out)?;
    Ok(if pending.is_empty() { 0 } else { 1 })
}

/// `--in-place`: every converted file rewritten, all staged before the first is replaced so an
/// unwritable one stops the run with nothing written, and only while each is still what was
/// read (`atomic::commit`).
fn rewrite_in_place(results: &[ConvertedFile]) -> Result<()> {
    let pending: Vec<_> = results.iter().filter(|r| r.outcome.converted > 0).collect();
    let mut staged = Vec::new();
    for file in &pending {
        let read = file.read.as_ref().expect("standard input is refused before");
        staged.push(
            atomic::stage_edit(read, file.outcome.text.as_bytes())
                .with_context(|| format!("cannot rewrite {}; nothing was written", file.name))?,
        );
    }
    let converted: Vec<usize> = pending.iter().map(|r| r.outcome.converted).collect();
    for (written, n) in atomic::commit(staged)?.iter().zip(converted) {
        warn_line!("{written}: converted {n} CiliumPodIPPool(s)");
    }
    if pending.is_empty() {
        warn_line!("nothing to convert");
    }
    Ok(())
}

/// The documents that change, as one YAML stream, each marked as `helm template` marks its
/// output: a `---` line and `# Source: <path>` (with the document's position when the file has
/// several). Documents and files that do not change are not printed.
fn print_changed(results: &[ConvertedFile], ctx: &Context) -> Result<()> {
    let mut out = String::new();
    for file in results {
        for doc in changed_documents(&file.before, &file.outcome.text) {
            let position = if doc.of > 1 { format!(", document {} of {} (line {})", doc.index, doc.of, doc.line) } else { String::new() };
            if crate::manifest::starts_with_directives(doc.text) {
                // Directives stand before their document's own `---`, after the previous one ended.
                out.push_str(if out.is_empty() { "" } else { "...\n" });
                out.push_str(&format!("# Source: {}{position}\n", field(&file.name)));
                out.push_str(doc.text);
            } else {
                out.push_str(&format!("---\n# Source: {}{position}\n", field(&file.name)));
                out.push_str(without_bare_start(doc.text));
            }
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    print_manifest_text(&out, ctx)
}

/// A document's text past its own `---` line when that line holds nothing else (the printed
/// stream's `---` line replaces it).
fn without_bare_start(text: &str) -> &str {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let bare = first.strip_prefix("---").is_some_and(|r| r.trim().is_empty() || r.trim_start().starts_with('#'));
    if bare { rest } else { text }
}

/// `--diff`: one unified diff per changed file, as `git diff` prints them.
fn print_diffs(results: &[ConvertedFile], ctx: &Context) -> Result<()> {
    let out: String = results.iter().map(|f| unified_diff(&f.name, &f.before, &f.outcome.text)).collect();
    print_manifest_text(&out, ctx)
}

/// Into a pipe or a file the text is the files' own bytes (`| git apply`, `> converted.yaml`);
/// a person at a terminal sees what the documents the plugin did not write hold escaped.
fn print_manifest_text(out: &str, ctx: &Context) -> Result<()> {
    if ctx.stdout_terminal { emit(&crate::escape::block(out, false)) } else { emit(out) }
}

/// One line on stderr for the files that need nothing, and that a dry run wrote nothing.
fn summarise_unchanged(results: &[ConvertedFile], dry_run_in_place: bool) {
    let unchanged = results.iter().filter(|r| r.outcome.converted == 0).count();
    if unchanged == results.len() {
        warn_line!("nothing to convert in {unchanged} file(s)");
    } else if unchanged > 0 {
        warn_line!("{unchanged} file(s) unchanged (nothing to convert), not shown");
    }
    if dry_run_in_place {
        warn_line!("dry run: nothing was written");
    }
}

/// The invalid pools among every pool document, one line each naming the file and the pool.
fn invalid_pools(files: &[LoadedFile], target: Dialect) -> Vec<String> {
    let mut invalid = Vec::new();
    for file in files {
        for pool in file.documents.iter().flat_map(pool_objects) {
            let decoded = crate::model::Pool::decode(pool, Some(target));
            let name = if decoded.name.is_empty() { "(no name)" } else { decoded.name.as_str() };
            if let Some(issue) = decoded.issues.first() {
                invalid.push(format!("{}: CiliumPodIPPool {name} is invalid: {issue}", file.name));
            }
        }
    }
    invalid
}
