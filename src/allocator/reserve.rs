//! Reserved-range changes (docs/reserve-range.md): parse a RANGE, validate it against a pool, turn it into
//! an edit of the pool object, and measure its impact by analysing the snapshot before and
//! after the edit — so the preview is by construction what `usage` reports afterwards.

use super::analyze::analyze;
use super::blocks;
use super::count::Count;
use super::interval::IntervalSet;
use super::report::{CidrReport, FamilyReport, Report};
use crate::model::edit::{self, RangeEdit};
use crate::model::pool::{PoolCidr, PoolFamily, ReservedRange};
use crate::model::{Addr, AddrRange, Dialect, Family, Pool, Prefix, Snapshot};
use serde::Serialize;

/// Parses `A-B`, `A..B`, a single address or a CIDR.
pub fn parse_range(text: &str) -> Result<AddrRange, String> {
    let text = text.trim();
    let addr = |part: &str| Addr::parse(part.trim()).ok_or_else(|| format!("{:?} is not an IP address", part.trim()));
    let range = if text.contains('/') {
        let prefix = Prefix::parse_typed(text)?;
        AddrRange::of_prefix(&prefix)
    } else if let Some((a, b)) = text.split_once("..").or_else(|| text.split_once('-')) {
        AddrRange { start: addr(a)?, end: addr(b)? }
    } else if text.is_empty() {
        return Err("the range is empty; give A-B, A..B, an IP address or a CIDR".to_string());
    } else {
        let single = addr(text)?;
        AddrRange { start: single, end: single }
    };
    if range.start.family != range.end.family {
        return Err(format!("{text:?} mixes IPv4 and IPv6"));
    }
    if range.start.value > range.end.value {
        return Err(format!("{text:?} starts after it ends"));
    }
    Ok(range)
}

/// A RANGE as typed, split into its ends without validating them, so that `--remove` can also
/// take out a reservation that is not valid (as `check` suggests). Valid ranges are spelled
/// canonically; they are matched by address anyway.
pub fn written_range(text: &str) -> ReservedRange {
    if let Ok(range) = parse_range(text) {
        return ReservedRange::of(range);
    }
    let text = text.trim();
    match text.split_once("..").or_else(|| text.split_once('-')) {
        Some((start, end)) => ReservedRange { start: start.trim().into(), end: end.trim().into() },
        None => ReservedRange { start: text.into(), end: text.into() },
    }
}

/// The same reservation: the same text, or the same addresses.
fn same_reservation(a: &ReservedRange, b: &ReservedRange) -> bool {
    (a.start == b.start && a.end == b.end) || a.addrs().is_some_and(|ends| b.addrs() == Some(ends))
}

/// A reservation's addresses when it is valid inside `cidr` (what the allocator counts).
fn valid_in(r: &ReservedRange, cidr: &PoolCidr) -> Option<AddrRange> {
    r.within(&cidr.prefix?).ok()
}

/// What the user asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    Reserve(AddrRange),
    /// Take out a reservation as written (see [`written_range`]), valid or not.
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

/// A run of consecutive blocks, e.g. `10.41.0.0/24 .. 10.41.2.0/24` (3 blocks).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockSpan {
    pub first: String,
    pub last: String,
    pub blocks: Count,
}

/// An allocated block the range touches: grandfathered, not evicted.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TouchedBlock {
    pub block: String,
    pub nodes: Vec<String>,
    /// Pods with addresses inside both the block and the range (`namespace/name`).
    pub pods_in_range: Vec<String>,
}

/// One family's figures before or after (the same definitions as `usage`); serialized through
/// [`FiguresDocument`] (what is unknown is null).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figures {
    pub capacity_blocks: Count,
    pub allocated_blocks: Count,
    pub withheld_blocks: Count,
    pub free_blocks: Count,
    /// allocated + free: what the operator can still use or already uses.
    pub allocatable_blocks: Count,
    pub reserved_addresses: Count,
    pub free_addresses: Count,
    /// More nodes that fit at the median blocks per node; `None` when unknown.
    pub runway_nodes: Option<Count>,
    /// `false` when the input holds no CiliumNodes: which blocks are allocated is unknown, and so
    /// are the allocated, withheld, free and allocatable blocks, free addresses and runway
    /// (null in JSON; capacity and reserved addresses stay known).
    pub allocation_known: bool,
}

/// The JSON of [`Figures`]: what depends on the allocated blocks is null without CiliumNodes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FiguresDocument {
    capacity_blocks: Count,
    allocated_blocks: Option<Count>,
    withheld_blocks: Option<Count>,
    free_blocks: Option<Count>,
    allocatable_blocks: Option<Count>,
    reserved_addresses: Count,
    free_addresses: Option<Count>,
    runway_nodes: Option<Count>,
}

impl Serialize for Figures {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let known = |figure: Count| self.allocation_known.then_some(figure);
        FiguresDocument {
            capacity_blocks: self.capacity_blocks,
            allocated_blocks: known(self.allocated_blocks),
            withheld_blocks: known(self.withheld_blocks),
            free_blocks: known(self.free_blocks),
            allocatable_blocks: known(self.allocatable_blocks),
            reserved_addresses: self.reserved_addresses,
            free_addresses: known(self.free_addresses),
            runway_nodes: self.runway_nodes.filter(|_| self.allocation_known),
        }
        .serialize(serializer)
    }
}

impl Figures {
    fn of(fam: &FamilyReport) -> Figures {
        Figures {
            capacity_blocks: fam.capacity_blocks,
            allocated_blocks: fam.allocated_blocks,
            withheld_blocks: fam.withheld_blocks,
            free_blocks: fam.free_blocks,
            allocatable_blocks: fam.allocated_blocks + fam.free_blocks,
            reserved_addresses: fam.reserved_addresses,
            free_addresses: fam.free_addresses,
            runway_nodes: fam.runway_nodes,
            allocation_known: fam.allocation_known,
        }
    }
}

/// What a change costs, measured on the snapshot before and after it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Impact {
    pub pool: String,
    pub action: Action,
    pub family: Family,
    pub cidr: String,
    pub start: String,
    pub end: String,
    /// Addresses in the range.
    pub range_addresses: Count,
    /// Blocks the range touches and the addresses they hold (reservations act on whole blocks).
    pub touched_blocks: Count,
    pub touched_addresses: Count,
    /// Blocks that become withheld (reserve, drain) or stop being withheld (remove).
    pub newly_withheld: Vec<BlockSpan>,
    pub released: Vec<BlockSpan>,
    pub allocated_in_range: Vec<TouchedBlock>,
    pub replaced: Vec<ReservedRange>,
    pub adjacent: Vec<ReservedRange>,
    pub before: Figures,
    pub after: Figures,
    /// Every CIDR of the family would be reserved end to end.
    pub whole_family_reserved: bool,
}

/// A change ready to be written: the edited object, the snapshot after it and the impact.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub plan: Plan,
    pub edited: serde_json::Value,
    pub after: Snapshot,
    pub impact: Impact,
}

/// Validates and applies `change` to the pool named `pool_name` in `snapshot` (whose raw object
/// is the one that will be written), and measures the impact. `force` allows reserving the
/// whole pool.
pub fn prepare(
    snapshot: &Snapshot,
    pool_name: &str,
    dialect: Dialect,
    change: &Change,
    cidr_flag: Option<&str>,
    force: bool,
) -> Result<Prepared, String> {
    let pool = snapshot.pool(pool_name).ok_or_else(|| format!("pool {pool_name:?} not found"))?;
    let plan = plan(pool, dialect, change, cidr_flag)?;
    let mut edited = pool.raw.clone();
    edit::apply(&mut edited, dialect, &plan.edit).map_err(|e| e.to_string())?;
    let mut after = snapshot.clone();
    let v2_shape = snapshot.crd.as_ref().and_then(|c| c.v2_dialect).or(Some(dialect));
    let replacement = Pool::decode(&edited, v2_shape);
    for p in after.pools.iter_mut().filter(|p| p.name == pool_name) {
        *p = replacement.clone();
    }
    let impact = impact(snapshot, &analyze(snapshot), &analyze(&after), pool_name, &plan);
    if impact.whole_family_reserved && plan.action != Action::Remove && !force {
        return Err(format!(
            "{} would reserve every {} block of pool {pool_name}: no node could get a new block; pass --force if that is intended",
            plan.entry, plan.family
        ));
    }
    Ok(Prepared { plan, edited, after, impact })
}

/// Compares the reports before and after `plan`.
pub fn impact(snapshot: &Snapshot, before: &Report, after: &Report, pool: &str, plan: &Plan) -> Impact {
    let family = plan.family;
    let fam_of =
        |report: &Report| report.pool(pool).and_then(|p| p.family(family)).cloned().expect("the planned pool and family are in the report");
    let (fam_before, fam_after) = (fam_of(before), fam_of(after));
    let cidr_of = |fam: &FamilyReport| fam.cidrs.iter().find(|c| c.cidr == plan.cidr).cloned();
    let (cidr_before, cidr_after) = (cidr_of(&fam_before), cidr_of(&fam_after));
    let mask = fam_before.mask_size.unwrap_or(family.bits());
    let spans = |set: &IntervalSet, cidr: &CidrReport| -> Vec<BlockSpan> {
        set.ranges()
            .iter()
            .map(|&(first, last)| cidr.run(first, last))
            .map(|run| BlockSpan { first: run.first.to_string(), last: run.last.to_string(), blocks: run.count() })
            .collect()
    };
    let (newly_withheld, released) = match (&cidr_before, &cidr_after) {
        (Some(b), Some(a)) => (spans(&a.withheld.difference(&b.withheld), a), spans(&b.withheld.difference(&a.withheld), a)),
        _ => (Vec::new(), Vec::new()),
    };
    let (allocated_in_range, range_addresses, touched_blocks) = match (plan.range, cidr_after.as_ref().or(cidr_before.as_ref())) {
        (Some(range), Some(cidr)) => {
            let (lo, hi) = (range.start.value, range.end.value);
            let (first_block, last_block) = blocks::indices_overlapping(&cidr.prefix, mask, lo, hi);
            (allocated_in(snapshot, cidr, range), Count::span(lo, hi), Count::span(first_block, last_block))
        }
        // An invalid reservation counts for nothing; taking it out changes no figure.
        _ => (Vec::new(), Count::ZERO, Count::ZERO),
    };
    Impact {
        pool: pool.to_string(),
        action: plan.action,
        family,
        cidr: plan.cidr.clone(),
        start: plan.entry.start.clone(),
        end: plan.entry.end.clone(),
        range_addresses,
        touched_blocks,
        touched_addresses: touched_blocks * blocks::block_size(family, mask),
        newly_withheld,
        released,
        allocated_in_range,
        replaced: plan.replaced.clone(),
        adjacent: plan.adjacent.clone(),
        before: Figures::of(&fam_before),
        after: Figures::of(&fam_after),
        whole_family_reserved: !fam_after.cidrs.is_empty() && fam_after.cidrs.iter().all(|c| c.draining),
    }
}

/// The allocated blocks of `cidr` that `range` overlaps, each with the pods holding addresses
/// of the range in it (they keep them: allocated blocks are not evicted).
fn allocated_in(snapshot: &Snapshot, cidr: &CidrReport, range: AddrRange) -> Vec<TouchedBlock> {
    let (lo, hi, family) = (range.start.value, range.end.value, range.family());
    cidr.allocated
        .iter()
        .filter(|b| b.prefix.first() <= hi && lo <= b.prefix.last())
        .map(|held| {
            let (from, to) = (held.prefix.first().max(lo), held.prefix.last().min(hi));
            let pods_in_range = snapshot
                .pods
                .iter()
                .flatten()
                .filter(|p| p.holds_pod_ips() && p.ips.iter().any(|ip| ip.family == family && ip.value >= from && ip.value <= to))
                .map(|p| format!("{}/{}", p.namespace, p.name))
                .collect();
            TouchedBlock { block: held.prefix.to_string(), nodes: held.node_names(), pods_in_range }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn blue_snapshot() -> Snapshot {
        Snapshot::from_objects(blue_objects())
    }

    fn blue_objects() -> Vec<serde_json::Value> {
        vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool",
                "metadata": {"name": "blue", "annotations": {"note": "keep"}, "resourceVersion": "5"},
                "spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24},
                         "namespaceSelector": {"matchLabels": {"team": "blue"}}}}),
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"},
                "spec": {"ipam": {"pools": {"allocated": [{"pool": "blue", "cidrs": ["10.41.3.0/24"]}]}}}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db", "namespace": "team-blue"}, "spec": {"nodeName": "n1"},
                "status": {"phase": "Running", "podIPs": [{"ip": "10.41.3.7"}]}}),
        ]
    }

    fn r(text: &str) -> AddrRange {
        parse_range(text).unwrap()
    }

    #[test]
    fn parses_every_spelling() {
        assert_eq!(r("10.40.255.240-10.40.255.254"), r("10.40.255.240..10.40.255.254"));
        assert_eq!(r(" 10.0.0.1 ").to_string(), "10.0.0.1");
        assert_eq!(ReservedRange::of(r("10.0.0.1")), ReservedRange { start: "10.0.0.1".into(), end: "10.0.0.1".into() });
        assert_eq!(r("10.41.0.0/16").to_string(), "10.41.0.0-10.41.255.255");
        assert_eq!(r("fd00::1-fd00::9").to_string(), "fd00::1-fd00::9");
        assert_eq!(r("fd00::/120").to_string(), "fd00::-fd00::ff");
        assert!(parse_range("10.0.0.300").unwrap_err().contains("not an IP address"));
        assert!(parse_range("10.0.0.1-fd00::1").unwrap_err().contains("mixes IPv4 and IPv6"));
        assert!(parse_range("10.0.0.9-10.0.0.1").unwrap_err().contains("starts after it ends"));
        assert!(parse_range("10.0.0.0/33").unwrap_err().contains("not a CIDR"));
        assert!(parse_range("").is_err());
    }

    #[test]
    fn typed_cidrs_with_host_bits_are_refused_not_masked() {
        let err = parse_range("10.40.1.5/24").unwrap_err();
        assert_eq!(err, "\"10.40.1.5/24\" has host bits set; its network is 10.40.1.0/24: give that");
        assert!(parse_range("fd00::5/120").unwrap_err().contains("its network is fd00::/120"));
        let snap = blue_snapshot();
        let drain = prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Drain("10.41.0.1/16".into()), None, false).unwrap_err();
        assert!(drain.starts_with("--drain \"10.41.0.1/16\" has host bits set"), "{drain}");
        let within = Change::Reserve(r("10.40.255.240-10.40.255.254"));
        let cidr = prepare(&snap, "blue", Dialect::UpstreamV2, &within, Some("10.40.0.1/16"), false).unwrap_err();
        assert!(cidr.starts_with("--cidr \"10.40.0.1/16\" has host bits set"), "{cidr}");
        assert!(prepare(&snap, "blue", Dialect::UpstreamV2, &within, Some("10.40.0.0/16"), false).is_ok());
    }

    #[test]
    fn acceptance_blue_reserve_and_drain() {
        let snap = blue_snapshot();
        let first = prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Reserve(r("10.40.255.240-10.40.255.254")), None, false).unwrap();
        assert_eq!(
            first.impact.newly_withheld,
            vec![BlockSpan { first: "10.40.255.0/24".into(), last: "10.40.255.0/24".into(), blocks: Count::from(1u64) }]
        );
        assert_eq!((first.impact.range_addresses, first.impact.touched_addresses), (Count::from(15u64), Count::from(256u64)));
        let second = prepare(&first.after, "blue", Dialect::UpstreamV2, &Change::Drain("10.41.0.0/16".into()), None, false).unwrap();
        let after = &second.impact.after;
        assert_eq!(
            (after.allocated_blocks, after.withheld_blocks, after.free_blocks),
            (Count::from(1u64), Count::from(256u64), Count::from(255u64))
        );
        assert_eq!(second.impact.newly_withheld.len(), 2, "around the allocated block: {:?}", second.impact.newly_withheld);
        assert_eq!(second.impact.allocated_in_range[0].nodes, vec!["n1".to_string()]);
        assert_eq!(second.impact.allocated_in_range[0].pods_in_range, vec!["team-blue/db".to_string()]);
        assert_eq!(second.edited.pointer("/spec/namespaceSelector/matchLabels/team").unwrap(), "blue");
        assert_eq!(second.edited.pointer("/metadata/annotations/note").unwrap(), "keep");
        assert_eq!(
            second.edited.pointer("/spec/ipv4/pool").unwrap(),
            &json!([
            {"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.255.240", "end": "10.40.255.254"}]},
            {"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.0.0", "end": "10.41.255.255"}]}])
        );
        // Removing it again restores the figures.
        let undo =
            prepare(&second.after, "blue", Dialect::UpstreamV2, &Change::Remove(written_range("10.41.0.0/16")), None, false).unwrap();
        assert_eq!(undo.impact.after, first.impact.after);
    }

    #[test]
    fn invalid_changes_are_refused_with_one_line() {
        let snap = blue_snapshot();
        let first = prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Reserve(r("10.40.255.240-10.40.255.254")), None, false).unwrap();
        let err =
            |change: Change, cidr: Option<&str>| prepare(&first.after, "blue", Dialect::UpstreamV2, &change, cidr, false).unwrap_err();
        assert!(err(Change::Reserve(r("10.50.0.1")), None).contains("not inside any CIDR"));
        assert!(err(Change::Reserve(r("10.40.255.0-10.41.0.5")), None).contains("spans more than one CIDR"));
        // Starting in 10.40.0.0/16 and ending past both CIDRs touches one CIDR: not inside, no span.
        let outside = err(Change::Reserve(r("10.40.255.0-10.50.0.0")), None);
        assert!(outside.ends_with("is not inside any CIDR of pool blue (CIDRs: 10.40.0.0/16, 10.41.0.0/16)"), "{outside}");
        assert!(err(Change::Reserve(r("10.40.255.240-10.40.255.254")), None).contains("already reserved"));
        assert!(
            err(Change::Reserve(r("10.40.255.250-10.40.255.255")), None)
                .contains("overlaps the reserved range(s) 10.40.255.240-10.40.255.254")
        );
        assert!(err(Change::Reserve(r("fd00::1")), None).contains("no ipv6 CIDRs"));
        assert!(err(Change::Reserve(r("10.40.0.1")), Some("10.41.0.0/16")).contains("not inside the chosen CIDR"));
        assert!(
            err(Change::Reserve(r("10.40.0.1")), Some("10.9.0.0/16"))
                .contains("--cidr 10.9.0.0/16 is not a CIDR of pool blue (CIDRs: 10.40.0.0/16, 10.41.0.0/16)")
        );
        assert!(err(Change::Drain("10.41.0.0/17".into()), None).contains("is not a CIDR of pool blue"));
        assert!(err(Change::Remove(written_range("10.40.255.241")), None).contains("overlaps 10.40.255.240-10.40.255.254"));
        assert!(err(Change::Remove(written_range("10.40.0.1")), None).contains("has no reserved range"));
        // Both CIDRs reserved end to end: the whole pool, only with force.
        let drained = prepare(&first.after, "blue", Dialect::UpstreamV2, &Change::Drain("10.41.0.0/16".into()), None, false).unwrap();
        let whole = prepare(&drained.after, "blue", Dialect::UpstreamV2, &Change::Drain("10.40.0.0/16".into()), None, false).unwrap_err();
        assert!(whole.contains("--force"), "{whole}");
        let forced = prepare(&drained.after, "blue", Dialect::UpstreamV2, &Change::Drain("10.40.0.0/16".into()), None, true).unwrap();
        assert_eq!(forced.impact.replaced, vec![ReservedRange { start: "10.40.255.240".into(), end: "10.40.255.254".into() }]);
        assert!(forced.impact.after.free_blocks.is_zero());
    }

    #[test]
    fn adjacent_ranges_are_reported_not_merged() {
        let snap = blue_snapshot();
        let first = prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Reserve(r("10.40.0.0-10.40.0.9")), None, false).unwrap();
        let next = prepare(&first.after, "blue", Dialect::UpstreamV2, &Change::Reserve(r("10.40.0.10")), None, false).unwrap();
        assert_eq!(next.impact.adjacent, vec![ReservedRange { start: "10.40.0.0".into(), end: "10.40.0.9".into() }]);
        assert_eq!(next.edited.pointer("/spec/ipv4/pool/0/reservedRanges").unwrap().as_array().unwrap().len(), 2);
        assert!(next.impact.newly_withheld.is_empty(), "the block was already withheld");
    }

    #[test]
    fn cfp_first_range_then_second_refused_and_v2alpha1_refused() {
        let snap =
            Snapshot::from_objects(vec![json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "green"},
            "spec": {"ipv4": {"cidrs": ["10.60.0.0/20"], "maskSize": 26}}})]);
        let first = prepare(&snap, "green", Dialect::CfpV2, &Change::Reserve(r("10.60.0.0-10.60.0.31")), None, false).unwrap();
        assert_eq!(
            first.edited.pointer("/spec/ipv4/cidrs").unwrap(),
            &json!([{"cidr": "10.60.0.0/20", "reservedRange": "10.60.0.0-10.60.0.31"}])
        );
        let second = prepare(&first.after, "green", Dialect::CfpV2, &Change::Reserve(r("10.60.8.0")), None, false).unwrap_err();
        assert!(second.contains("one reservedRange per CIDR"), "{second}");
        let alpha = prepare(&snap, "green", Dialect::V2alpha1, &Change::Reserve(r("10.60.0.1")), None, false).unwrap_err();
        assert!(alpha.contains("cilium.io/v2"), "{alpha}");
    }

    #[test]
    fn invalid_reservations_can_be_removed_as_written() {
        let snap = Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
            "spec": {"ipv4": {"cidrs": ["10.40.0.0/16"], "maskSize": 24, "pool": [{"cidr": "10.40.0.0/16", "reservedRanges": [
                {"start": "10.40.0.9", "end": "10.40.0.1"}, {"start": "10.50.0.1", "end": "10.50.0.1"}, {"start": "10.40.0.1", "end": "10.40.0.1"}]}]}}}),
        ]);
        let backwards =
            prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Remove(written_range("10.40.0.9-10.40.0.1")), None, false).unwrap();
        assert_eq!((backwards.plan.range, backwards.impact.touched_blocks), (None, Count::ZERO));
        assert_eq!(backwards.impact.before, backwards.impact.after, "invalid ranges count for nothing");
        let outside =
            prepare(&backwards.after, "blue", Dialect::UpstreamV2, &Change::Remove(written_range("10.50.0.1")), None, false).unwrap();
        assert_eq!(
            outside.edited.pointer("/spec/ipv4/pool/0/reservedRanges").unwrap(),
            &json!([{"start": "10.40.0.1", "end": "10.40.0.1"}])
        );
        let valid =
            prepare(&outside.after, "blue", Dialect::UpstreamV2, &Change::Remove(written_range("10.40.0.1..10.40.0.1")), None, false)
                .unwrap();
        assert_eq!(valid.impact.released.len(), 1);
        assert!(valid.edited.pointer("/spec/ipv4/pool").is_none());
    }

    #[test]
    fn removal_matches_the_written_text_and_only_the_chosen_cidr() {
        // Two entries of 10.40.0.0/16 are no address range at all (start "bogus"); they differ in
        // their end only. 10.40.1.0-10.40.1.9 is reserved in the first CIDR, not in the second.
        let snap = Snapshot::from_objects(vec![
            json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue"},
            "spec": {"ipv4": {"cidrs": ["10.40.0.0/16", "10.41.0.0/16"], "maskSize": 24, "pool": [
                {"cidr": "10.40.0.0/16", "reservedRanges": [{"start": "10.40.1.0", "end": "10.40.1.9"}, {"start": "bogus", "end": "10.40.0.5"}, {"start": "bogus", "end": "10.40.0.6"}]},
                {"cidr": "10.41.0.0/16", "reservedRanges": [{"start": "10.41.1.0", "end": "10.41.1.9"}]}]}}}),
        ]);
        let remove =
            |text: &str, cidr: Option<&str>| prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Remove(written_range(text)), cidr, false);
        // An entry that is not an address range is matched by its text, both ends of it.
        let bogus = remove("bogus-10.40.0.5", None).unwrap();
        assert_eq!((bogus.plan.entry.start.as_str(), bogus.plan.entry.end.as_str(), bogus.plan.range), ("bogus", "10.40.0.5", None));
        assert_eq!(
            bogus.edited.pointer("/spec/ipv4/pool/0/reservedRanges").unwrap(),
            &json!([{"start": "10.40.1.0", "end": "10.40.1.9"}, {"start": "bogus", "end": "10.40.0.6"}])
        );
        assert_eq!(
            remove("bogus-10.40.0.7", None).unwrap_err(),
            "pool blue has no reserved range bogus-10.40.0.7; its reserved ranges: 10.40.1.0-10.40.1.9, bogus-10.40.0.5, bogus-10.40.0.6, 10.41.1.0-10.41.1.9"
        );
        // --cidr limits the search to that CIDR; typed with host bits, it is refused, not masked.
        assert!(remove("10.40.1.0-10.40.1.9", Some("10.41.0.0/16")).unwrap_err().contains("has no reserved range"));
        assert!(remove("10.40.1.0-10.40.1.9", Some("10.40.0.1/16")).unwrap_err().contains("has host bits set"));
        let chosen = remove("10.40.1.0-10.40.1.9", Some("10.40.0.0/16")).unwrap();
        assert_eq!(chosen.plan.cidr, "10.40.0.0/16");
        assert_eq!(
            chosen.impact.released,
            vec![BlockSpan { first: "10.40.1.0/24".into(), last: "10.40.1.0/24".into(), blocks: Count::from(1u64) }]
        );
    }

    #[test]
    fn pods_in_range_are_running_pods_with_an_address_in_the_range() {
        // n1's block 10.41.3.0/24 holds db (running, .7) and the old address (.2) of a finished pod.
        let mut objects = blue_objects();
        objects.push(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "old", "namespace": "team-blue"}, "spec": {"nodeName": "n1"},
            "status": {"phase": "Succeeded", "podIPs": [{"ip": "10.41.3.2"}]}}),
        );
        let snap = Snapshot::from_objects(objects);
        let pods = |range: &str| {
            let p = prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Reserve(r(range)), None, false).unwrap();
            assert_eq!(p.impact.allocated_in_range.len(), 1, "{range} touches n1's block");
            p.impact.allocated_in_range[0].pods_in_range.clone()
        };
        assert!(pods("10.41.3.0-10.41.3.5").is_empty(), "db is outside the range, the finished pod holds no address");
        assert_eq!(pods("10.41.3.7"), ["team-blue/db"]);
    }

    proptest! {
        /// Reserving `start..=end` (offsets from 10.40.0.0) in blue (two /16 CIDRs of /24 blocks,
        /// 10.41.3.0/24 held by n1): the figures follow from plain block arithmetic done here —
        /// the blocks the range touches, less the held one, become withheld and stop being free;
        /// nothing else moves; a range crossing from 10.40 into 10.41 is refused.
        #[test]
        fn reserving_withholds_exactly_the_free_blocks_it_touches(start in 0u32..(1 << 17), len in 0u32..4096) {
            let snap = blue_snapshot();
            let base = u32::from(std::net::Ipv4Addr::new(10, 40, 0, 0));
            let end = (start + len).min((1 << 17) - 1);
            let range = AddrRange {
                start: Addr { family: Family::Ipv4, value: (base + start) as u128 },
                end: Addr { family: Family::Ipv4, value: (base + end) as u128 },
            };
            let held_block = (3u32 << 8 | 1 << 16) >> 8; // 10.41.3.0/24 as a /24 index from 10.40.0.0
            let touched: Vec<u32> = ((start >> 8)..=(end >> 8)).collect();
            let newly = touched.iter().filter(|&&b| b != held_block).count() as u64;
            let crosses = start < 1 << 16 && end >= 1 << 16;
            match prepare(&snap, "blue", Dialect::UpstreamV2, &Change::Reserve(range), None, false) {
                Ok(p) => {
                    prop_assert!(!crosses, "a range over both CIDRs was accepted");
                    let (b, a) = (&p.impact.before, &p.impact.after);
                    prop_assert_eq!((b.capacity_blocks, b.allocated_blocks, b.withheld_blocks, b.free_blocks), (Count::from(512u64), Count::from(1u64), Count::ZERO, Count::from(511u64)));
                    prop_assert_eq!(a.capacity_blocks, Count::from(512u64));
                    prop_assert_eq!(a.allocated_blocks, Count::from(1u64));
                    prop_assert_eq!(a.withheld_blocks, Count::from(newly));
                    prop_assert_eq!(a.free_blocks, Count::from(511 - newly));
                    // allocatable = allocated + free: 1 + 511 before, less the newly withheld after.
                    prop_assert_eq!((b.allocatable_blocks, a.allocatable_blocks), (Count::from(512u64), Count::from(512 - newly)));
                    prop_assert_eq!(a.free_addresses, Count::from((511 - newly) * 254));
                    prop_assert_eq!(a.reserved_addresses, Count::from(u64::from(end - start) + 1));
                    prop_assert_eq!(p.impact.touched_blocks, Count::from(touched.len() as u64));
                    prop_assert_eq!(p.impact.range_addresses, Count::from(u64::from(end - start) + 1));
                    let gained: Count = p.impact.newly_withheld.iter().map(|s| s.blocks).sum();
                    prop_assert_eq!(gained, Count::from(newly));
                    prop_assert_eq!(p.impact.allocated_in_range.len(), usize::from(touched.contains(&held_block)));
                    let pods_in_range = start <= held_block << 8 | 7 && held_block << 8 | 7 <= end;
                    prop_assert_eq!(p.impact.allocated_in_range.first().map(|t| t.pods_in_range.len()), touched.contains(&held_block).then_some(usize::from(pods_in_range)));
                }
                Err(e) => {
                    prop_assert!(crosses, "refused: {}", e);
                    prop_assert!(e.contains("spans more than one CIDR"), "{}", e);
                }
            }
        }
    }
}
