//! A change validated against a pool: the addresses asked for, the CIDR they go into, and the
//! edit of the pool object beside the ranges already there (or the reservation taken out).

use super::range::{same_reservation, valid_in};
use crate::model::edit::{self, RangeEdit};
use crate::model::pool::{PoolCidr, PoolFamily, ReservedRange};
use crate::model::{AddrRange, Dialect, Family, Pool, Prefix};
use serde::Serialize;

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Reserve(AddrRange),
    /// Take out a reservation as written (see [`written_range`](super::range::written_range)), valid or not.
    Remove(ReservedRange),
    /// Reserve the whole CIDR (as given by the user; matched against the pool's CIDRs).
    Drain(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Reserve,
    Remove,
    Drain,
}

/// A validated change: which CIDR, and the edit of the pool object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub action: Action,
    pub family: Family,
    /// The addresses concerned; `None` when removing a reservation that is not valid.
    pub range: Option<AddrRange>,
    /// The reservation as written to (or taken out of) the pool.
    pub entry: ReservedRange,
    pub cidr: String,
    pub edit: RangeEdit,
    /// Existing ranges replaced by a drain (they lie inside the drained CIDR).
    pub replaced: Vec<ReservedRange>,
    /// Existing ranges touching the new one; kept separate, never merged.
    pub adjacent: Vec<ReservedRange>,
}

/// Validates `change` against `pool` for a cluster writing `dialect`; the error is one line.
/// The story: the addresses asked for, the CIDR they go into, the edit beside the ranges there.
pub fn plan(pool: &Pool, dialect: Dialect, change: &Change, cidr_flag: Option<&str>) -> Result<Plan, String> {
    if dialect == Dialect::V2alpha1 {
        return Err(edit::EditError::V2alpha1.to_string());
    }
    let (action, range) = match change {
        Change::Reserve(r) => (Action::Reserve, *r),
        Change::Remove(given) => return plan_removal(pool, given, cidr_flag),
        Change::Drain(text) => {
            let prefix = Prefix::parse_typed(text.trim()).map_err(|e| format!("--drain {e}"))?;
            (Action::Drain, AddrRange::of_prefix(&prefix))
        }
    };
    let family = range.family();
    let fam = pool.family(family).filter(|f| !f.cidrs.is_empty()).ok_or_else(|| format!("pool {} has no {family} CIDRs", pool.name))?;
    let candidates = candidates(pool, fam, cidr_flag)?;
    let cidr = match change {
        Change::Drain(text) => candidates
            .iter()
            .find(|c| c.prefix.is_some_and(|p| AddrRange::of_prefix(&p) == range))
            .ok_or_else(|| format!("--drain {text} is not a CIDR of pool {} ({})", pool.name, cidr_list(fam.cidrs.iter())))?,
        _ => containing(pool, &candidates, range, cidr_flag.is_some())?,
    };
    planned_edit(pool, cidr, action, range)
}

/// The CIDRs a range may go into: the `--cidr` one, else every CIDR of the family.
fn candidates<'a>(pool: &Pool, fam: &'a PoolFamily, cidr_flag: Option<&str>) -> Result<Vec<&'a PoolCidr>, String> {
    let Some(flag) = cidr_flag else { return Ok(fam.cidrs.iter().collect()) };
    let named = named_by(pool, flag)?;
    let chosen = fam.cidrs.iter().find(|c| named(c));
    Ok(vec![chosen.ok_or_else(|| format!("--cidr {flag} is not a CIDR of pool {} ({})", pool.name, cidr_list(fam.cidrs.iter())))?])
}

/// Whether a pool CIDR is the one `--cidr` names: as the pool writes it, or its network typed
/// without host bits (typed with them, it is refused: see [`Prefix::parse_typed`]).
fn named_by<'a>(pool: &Pool, flag: &'a str) -> Result<impl Fn(&PoolCidr) -> bool + 'a, String> {
    let as_written = pool.families.iter().flat_map(|f| &f.cidrs).any(|c| c.original == flag);
    let typed = if as_written { None } else { Some(Prefix::parse_typed(flag.trim()).map_err(|e| format!("--cidr {e}"))?) };
    Ok(move |c: &PoolCidr| c.original == flag || (typed.is_some() && c.prefix == typed))
}

/// The one candidate CIDR holding `range` whole.
fn containing<'a>(pool: &Pool, candidates: &[&'a PoolCidr], range: AddrRange, chosen: bool) -> Result<&'a PoolCidr, String> {
    let holding: Vec<&&PoolCidr> = candidates.iter().filter(|c| c.prefix.is_some_and(|p| range.inside(&p))).collect();
    match holding.as_slice() {
        [one] => Ok(**one),
        [] if candidates.iter().filter(|c| c.prefix.is_some_and(|p| p.contains(range.start) || p.contains(range.end))).count() > 1 => {
            Err(format!("{range} spans more than one CIDR of pool {}; reserve one range per CIDR", pool.name))
        }
        [] => Err(format!(
            "{range} is not inside {} of pool {} ({})",
            if chosen { "the chosen CIDR" } else { "any CIDR" },
            pool.name,
            cidr_list(candidates.iter().copied())
        )),
        _ => Err(format!("{range} lies in more than one CIDR of pool {} (overlapping CIDRs); choose one with --cidr", pool.name)),
    }
}

/// The edit that reserves or drains `range` in `cidr`, checked against the ranges already there.
fn planned_edit(pool: &Pool, cidr: &PoolCidr, action: Action, range: AddrRange) -> Result<Plan, String> {
    let family = range.family();
    let existing: Vec<(&ReservedRange, Option<AddrRange>)> = cidr.reserved.iter().map(|r| (r, valid_in(r, cidr))).collect();
    let mut plan = Plan {
        action,
        family,
        range: Some(range),
        entry: ReservedRange::of(range),
        cidr: cidr.original.clone(),
        edit: RangeEdit { family, cidr: cidr.original.clone(), remove: Vec::new(), add: Some(ReservedRange::of(range)) },
        replaced: Vec::new(),
        adjacent: Vec::new(),
    };
    match action {
        Action::Remove => unreachable!("removals are planned by plan_removal"),
        Action::Reserve => {
            if let Some((dup, _)) = existing.iter().find(|(_, p)| *p == Some(range)) {
                return Err(format!("{range} is already reserved in {} of pool {} (as {dup})", cidr.original, pool.name));
            }
            let overlapping: Vec<String> =
                existing.iter().filter(|(_, p)| p.is_some_and(|p| p.overlaps(&range))).map(|(r, _)| r.to_string()).collect();
            if !overlapping.is_empty() {
                return Err(format!(
                    "{range} overlaps the reserved range(s) {} of pool {}; ranges are not merged — remove or adjust the existing one first",
                    overlapping.join(", "),
                    pool.name
                ));
            }
            plan.adjacent = existing.iter().filter(|(_, p)| p.is_some_and(|p| p.adjacent(&range))).map(|(r, _)| (*r).clone()).collect();
        }
        Action::Drain => {
            if existing.iter().any(|(_, p)| *p == Some(range)) {
                return Err(format!("{} of pool {} is already drained (reserved end to end)", cidr.original, pool.name));
            }
            plan.replaced = existing.iter().map(|(r, _)| (*r).clone()).collect();
            plan.edit.remove = plan.replaced.clone();
        }
    }
    Ok(plan)
}

/// Finds the reservation to take out among every CIDR of the pool (or the `--cidr` one).
fn plan_removal(pool: &Pool, given: &ReservedRange, cidr_flag: Option<&str>) -> Result<Plan, String> {
    let named = cidr_flag.map(|flag| named_by(pool, flag)).transpose()?;
    let chosen = |c: &PoolCidr| named.as_ref().is_none_or(|named| named(c));
    let cidrs: Vec<(Family, &PoolCidr)> =
        pool.families.iter().flat_map(|f| f.cidrs.iter().map(move |c| (f.family, c))).filter(|(_, c)| chosen(c)).collect();
    let matches: Vec<(Family, &PoolCidr, &ReservedRange)> = cidrs
        .iter()
        .flat_map(|&(family, c)| c.reserved.iter().filter(|r| same_reservation(r, given)).map(move |r| (family, c, r)))
        .collect();
    match matches.as_slice() {
        [(family, cidr, entry)] => Ok(Plan {
            action: Action::Remove,
            family: *family,
            range: valid_in(entry, cidr),
            entry: (*entry).clone(),
            cidr: cidr.original.clone(),
            edit: RangeEdit { family: *family, cidr: cidr.original.clone(), remove: vec![(*entry).clone()], add: None },
            replaced: Vec::new(),
            adjacent: Vec::new(),
        }),
        [] => {
            let given_range = given.addrs().map(|(start, end)| AddrRange { start, end });
            let overlapping: Vec<String> = cidrs
                .iter()
                .flat_map(|(_, c)| c.reserved.iter().filter(|r| valid_in(r, c).zip(given_range).is_some_and(|(r, g)| r.overlaps(&g))))
                .map(ReservedRange::to_string)
                .collect();
            if overlapping.is_empty() {
                let listed: Vec<String> = cidrs.iter().flat_map(|(_, c)| c.reserved.iter().map(ReservedRange::to_string)).collect();
                let listed =
                    if listed.is_empty() { "it has none".to_string() } else { format!("its reserved ranges: {}", listed.join(", ")) };
                Err(format!("pool {} has no reserved range {given}; {listed}", pool.name))
            } else {
                Err(format!(
                    "{given} is not a reserved range of pool {}; it overlaps {} — remove ranges exactly as listed (--list)",
                    pool.name,
                    overlapping.join(", ")
                ))
            }
        }
        _ => Err(format!("{given} is reserved in more than one CIDR of pool {}; choose one with --cidr", pool.name)),
    }
}

fn cidr_list<'a>(cidrs: impl Iterator<Item = &'a PoolCidr>) -> String {
    let names: Vec<&str> = cidrs.map(|c| c.original.as_str()).collect();
    format!("CIDRs: {}", names.join(", "))
}
