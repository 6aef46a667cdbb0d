//! What every `reserve-range` flow shares: the request, its preparation against a snapshot, the
//! confirmation before a write and the result's wording.

use crate::allocator::reserve::{self, Change, Prepared};
use crate::cli::{DryRun, ReserveArgs};
use crate::commands::context::Context;
use crate::error::input;
use crate::model::{Dialect, Snapshot};
use crate::render::reserve::{self as view, Outcome};
use crate::terminal::Prompter;
use anyhow::Result;

/// Conflicting writes tolerated before giving up (exit 3).
pub(super) const MAX_CONFLICTS: u32 = 5;
pub(super) const V2_NOT_SERVED: &str =
    "cilium.io/v2 is not served by this cluster; upgrade Cilium (reserved ranges need the v2 CiliumPodIPPool)";

/// One change to one pool, from the arguments or the guided flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub pool: String,
    pub change: Change,
    pub cidr: Option<String>,
}

pub(super) fn prepare(snapshot: &Snapshot, request: &Request, dialect: Dialect, force: bool) -> Result<Prepared> {
    reserve::prepare(snapshot, &request.pool, dialect, &request.change, request.cidr.as_deref(), force)
        .map_err(|e| input(format!("{e}; nothing was written")))
}

/// What stdout gets once the change is done: the JSON/YAML document, or the preview (when not
/// already shown) and a kubectl-style line.
pub(super) fn result_text(ctx: &Context, origin: &crate::model::Origin, prepared: &Prepared, dry_run: DryRun, outcome: Outcome) -> String {
    let dry_run = match dry_run {
        DryRun::None => "none",
        DryRun::Client => "client",
        DryRun::Server => "server",
    };
    ctx.render(&view::Edited { origin, prepared, dry_run, outcome })
}

/// Asks before writing (see [`crate::commands::steps::confirm`]); the question names where the
/// pool is written (`on`: [`crate::commands::steps::destination`]).
pub(super) fn confirmed(args: &ReserveArgs, ctx: &Context, prompter: &dyn Prompter, pool: &str, on: &str) -> Result<bool> {
    let refusal = format!(
        "refusing to change ciliumpodippool {pool} without confirmation: not on a terminal; pass --yes (or --dry-run to preview); nothing was written"
    );
    crate::commands::steps::confirm(ctx, args.yes, prompter, &format!("Write this change to ciliumpodippool {pool} on {on}?"), &refusal)
}
