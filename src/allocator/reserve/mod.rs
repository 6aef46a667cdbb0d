//! Reserved-range changes (docs/reserve-range.md): parse a RANGE, validate it against a pool, turn it into
//! an edit of the pool object, and measure its impact by analysing the snapshot before and
//! after the edit — so the preview is by construction what `usage` reports afterwards.
//! `range.rs` parses a RANGE, `plan.rs` validates a change into an edit, `impact.rs` measures
//! it; [`prepare`] here does all three.

mod impact;
mod plan;
mod range;

pub use impact::{BlockSpan, Figures, Impact, TouchedBlock, impact};
pub use plan::{Action, Change, Plan, plan};
pub use range::{parse_range, written_range};

use super::analyze::analyze;
use crate::model::edit;
use crate::model::{Dialect, Pool, Snapshot};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::count::Count;
    use crate::model::pool::ReservedRange;
    use crate::model::{Addr, AddrRange, Family};
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
