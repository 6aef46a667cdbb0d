//! `reserve-range -f`: the manifest holding the pool is edited and printed, or rewritten in place
//! (`--in-place`) when it is still the one analysed.

use super::request::{Request, V2_NOT_SERVED, prepare, result_text};
use crate::cli::{DryRun, ReserveArgs};
use crate::commands::context::{Context, emit};
use crate::error::{self, input};
use crate::files::{self, atomic};
use crate::manifest;
use crate::model::{CrdInfo, Dialect, Pool, Snapshot, edit, pool, slim};
use crate::render::Format;
use crate::render::reserve::{self as view, Outcome};
use crate::stderr;
use crate::terminal::{Dialoguer, Prompter};
use anyhow::Result;
use serde_json::Value;

/// The dialect a manifest is edited in: the pool's own; v2alpha1 manifests are refused.
pub(super) fn offline_dialect(pool: &Pool, crd: Option<&CrdInfo>) -> Result<Dialect> {
    if crd.is_some_and(|c| !c.serves("v2")) {
        return Err(input(format!("{V2_NOT_SERVED} (according to the CRD in the input)")));
    }
    if pool.dialect == Dialect::V2alpha1 {
        return Err(input(format!(
            "pool {} is a cilium.io/v2alpha1 manifest and cannot hold reserved ranges; convert it to cilium.io/v2 first (kubectl ciliumpool migrate -f FILE)",
            pool.name
        )));
    }
    Ok(pool.dialect)
}

/// `inputs`: the `-f` paths and the limits they are read within.
pub(super) fn offline_edit(
    args: &ReserveArgs,
    ctx: &Context,
    inputs: (&[String], files::Limits),
    snapshot: Snapshot,
    request: &Request,
) -> Result<i32> {
    let (paths, limits) = inputs;
    let pool = snapshot.pool(&request.pool).expect("checked by require_pools");
    let dialect = offline_dialect(pool, snapshot.crd.as_ref())?;
    let api_version = pool.api_version.clone();
    let prepared = prepare(&snapshot, request, dialect, args.force)?;
    let is_pool = |v: &Value| {
        pool::is_pool_object(v)
            && v.pointer("/metadata/name").and_then(Value::as_str) == Some(request.pool.as_str())
            && v.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
    };
    if !args.in_place {
        // stdout carries the edited manifest; the preview goes to stderr.
        stderr::block(&view::preview(&prepared.impact, &ctx.stderr_style), false);
        let text = match (&ctx.script, ctx.format) {
            // A script reads the edited pool object, as kubectl's would.
            (Some(script), _) => script.apply(&prepared.edited, None, &ctx.style),
            (None, Format::Json) => crate::escape::json_pretty(&prepared.edited)? + "\n",
            _ => manifest::to_yaml(&prepared.edited),
        };
        emit(&text)?;
        return Ok(0);
    }
    let path = locate(paths, limits, &is_pool)?;
    let read = read_unchanged(&path, limits, &pool.raw, &is_pool)?;
    // The plan's edit applied to the pool as it stands in the file (the one analysed), reading
    // of it what the plan read: its other fields and the other documents stay text.
    let mut change = |pool: &mut Value| edit::apply(pool, dialect, &prepared.plan.edit).map_err(|e| e.to_string());
    let rewritten = manifest::change_object(&read.text, &path, (pool::POOL_KIND, slim::EDITED), &is_pool, &mut change)?
        .ok_or_else(|| input(format!("{path}: cannot find the document of pool {} to edit", request.pool)))?;
    if let Some(note) = manifest::uncommented_note(&path, &rewritten.uncommented) {
        warn_line!("{note}");
    }
    let edited = rewritten.text;
    let write = args.dry_run == DryRun::None;
    // On a terminal a file is not rewritten unasked either; without one the named file is the
    // user's instruction (the preview is printed, the change is in the repository's diff).
    let ask = write && !args.yes && ctx.interactive;
    if ask {
        stderr::block(&view::preview(&prepared.impact, &ctx.style), ctx.style.color);
        if !Dialoguer.confirm(&format!("Rewrite {path} with this change to ciliumpodippool {}?", request.pool))? {
            return crate::commands::steps::declined();
        }
    }
    let mut file = path.clone();
    if write {
        // A symlinked manifest is edited at its target; the message names both.
        // Only if it is still what was read (the answer may have taken a while).
        file = atomic::commit(vec![atomic::stage_edit(read.read.as_ref().expect("a path"), edited.as_bytes())?])?.remove(0);
    }
    let outcome = Outcome { written: write, resource_version: None, conflicts: 0, file: Some(file), previewed: ask };
    ctx.record(&result_text(ctx, &snapshot.origin, &prepared, args.dry_run, outcome))?;
    Ok(0)
}

/// The text of `path` to edit, read once more, now remembering what was read (`fingerprint`).
/// Its pool document must still be the one analysed (`raw`, read with the snapshot, maybe a
/// guided flow ago): else the edit would write back the pool as it was then.
fn read_unchanged(path: &str, limits: files::Limits, raw: &Value, is_pool: &dyn Fn(&Value) -> bool) -> Result<files::read::TextFile> {
    let file = files::read::read(&[path.to_string()], limits)?.remove(0);
    // Read as the snapshot was (`Pools::Read`), so that the pool compares equal when unchanged.
    let documents = files::read::parsed(&file, files::Pools::Read, limits)?.documents;
    let now = documents.iter().flat_map(pool::pool_objects).find(|v| is_pool(v));
    if now != Some(raw) {
        return Err(error::condition(format!("{path} changed since it was read: run again")));
    }
    Ok(file)
}

/// The file (not stdin) holding the pool document.
fn locate(paths: &[String], limits: files::Limits, is_pool: &dyn Fn(&Value) -> bool) -> Result<String> {
    let holds = |v: &Value| pool::pool_objects(v).into_iter().any(is_pool);
    let loaded = files::read::load_pools(paths, files::Pools::Read, limits)?;
    files::read::refuse_duplicates(&loaded)?;
    let file = loaded.into_iter().find(|f| f.documents.iter().any(holds)).map(|f| f.name);
    match file {
        Some(name) if name == "-" => Err(input("--in-place cannot rewrite standard input; pass the manifest's path with -f")),
        Some(name) => Ok(name),
        None => Err(input("no file in -f holds the pool document")),
    }
}
