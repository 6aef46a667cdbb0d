//! Which CIDRs of a pool family the figures can use, and whether the operator accepts the pool
//! at all (operator/pkg/ipam/allocator/multipool/pool_allocator.go `UpsertPool`).

use crate::allocator::check::{self, Problems};
use crate::model::pool::{PoolFamily, ReservedRange};
use crate::model::{Family, Pool, Prefix};

/// The operator rejects IPv6 CIDRs split into more blocks than this (2^16).
pub const IPV6_MAX_BLOCK_BITS: u8 = 16;

/// A pool CIDR the figures can use: parsed, right family, splittable into blocks.
pub(super) struct UsableCidr<'a> {
    pub(super) original: &'a str,
    pub(super) prefix: Prefix,
    pub(super) reserved: &'a [ReservedRange],
}

/// The CIDRs the figures can use: parsed, at least one block large, in a pool the operator
/// accepts. What is left out is a problem. Also every parsed CIDR in spec order with its index
/// among the usable ones: the candidates a node block can belong to.
pub(super) fn usable_cidrs<'a>(
    pool: &Pool,
    fam: &'a PoolFamily,
    accepted: bool,
    problems: &mut Problems,
) -> (Vec<UsableCidr<'a>>, Vec<(Prefix, Option<usize>)>) {
    let mut usable: Vec<UsableCidr> = Vec::new();
    let mut owners: Vec<(Prefix, Option<usize>)> = Vec::new();
    let Some(mask) = fam.mask_size else { return (usable, owners) };
    for c in &fam.cidrs {
        let Some(prefix) = c.prefix else { continue };
        if owners.iter().any(|(p, _)| p.overlaps(&prefix)) {
            owners.push((prefix, None)); // the operator rejects the pool (operator_rejection)
            continue;
        }
        if mask < prefix.len {
            check::cidr_smaller_than_block(problems, &pool.name, fam, &c.original, mask);
            owners.push((prefix, None));
            continue;
        }
        if fam.family == Family::Ipv6 && mask - prefix.len > IPV6_MAX_BLOCK_BITS {
            check::ipv6_too_many_blocks(problems, &pool.name, &c.original, mask, mask - prefix.len);
        }
        owners.push((prefix, accepted.then_some(usable.len())));
        if accepted {
            usable.push(UsableCidr { original: &c.original, prefix, reserved: &c.reserved });
        }
    }
    (usable, owners)
}

/// Why the operator's `UpsertPool` refuses the pool, if it does (operator/pkg/ipam/allocator/
/// multipool/pool_allocator.go `UpsertPool`: `parseCIDRStrings`, then per family
/// clusterpool/cidralloc `NewCIDRSets`: a CIDR colliding with an earlier one, the wrong family,
/// and pkg/ipam/cidrset `NewCIDRSet`'s mask checks). A refusal leaves the operator without the
/// pool, both families: zero capacity, and after a restart its nodes' blocks are orphans.
pub(super) fn operator_rejection(pool: &Pool) -> Option<String> {
    for fam in &pool.families {
        let field = fam.family.name();
        if let Some(c) = fam.cidrs.iter().find(|c| c.prefix.is_none()) {
            return Some(format!("spec.{field}.cidrs entry {:?} is not an {field} CIDR", c.original));
        }
    }
    for fam in &pool.families {
        let field = fam.family.name();
        // The raw value: the model keeps no maskSize outside 1..=bits, but the operator tells
        // "longer than the address" (refused) from 0 or missing (accepted, zero blocks).
        let mask = pool.raw.pointer(&format!("/spec/{field}/maskSize")).and_then(serde_json::Value::as_u64).unwrap_or(0);
        let mut earlier: Vec<(&str, Prefix)> = Vec::new();
        for c in &fam.cidrs {
            let prefix = c.prefix?;
            if let Some((other, _)) = earlier.iter().find(|(_, p)| p.overlaps(&prefix)) {
                return Some(format!("spec.{field}.cidrs entries {other} and {} overlap", c.original));
            }
            if mask > u64::from(fam.family.bits()) {
                return Some(format!("spec.{field}.maskSize {mask} is longer than an {field} address"));
            }
            if fam.family == Family::Ipv6 && mask as i64 - i64::from(prefix.len) > i64::from(IPV6_MAX_BLOCK_BITS) {
                return Some(format!("{} splits into more than 2^16 blocks of /{mask}", c.original));
            }
            earlier.push((&c.original, prefix));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allocator::Count;
    use crate::allocator::analyze::analyze;
    use crate::allocator::analyze::test_objects::{pool_object, snapshot};
    use serde_json::{Value, json};

    #[test]
    fn the_operator_rejects_what_upsert_pool_refuses() {
        let why = |spec: Value| operator_rejection(&Pool::decode(&pool_object("p", spec), None));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.1.0/24"], "maskSize": 26}})), None);
        assert!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.0.128/25"], "maskSize": 26}})).unwrap().contains("overlap"));
        assert!(why(json!({"ipv4": {"cidrs": ["fd00::/120"], "maskSize": 26}})).unwrap().contains("is not an ipv4 CIDR"));
        assert!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 33}})).unwrap().contains("longer than"));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 32}})), None, "as long as the address: blocks of one address");
        // 2^16 blocks is the limit for IPv6; one bit more is refused. IPv4 has no such limit.
        assert_eq!(why(json!({"ipv6": {"cidrs": ["fd00::/100"], "maskSize": 116}})), None);
        assert!(why(json!({"ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}})).unwrap().contains("more than 2^16"));
        assert_eq!(why(json!({"ipv4": {"cidrs": ["10.0.0.0/8"], "maskSize": 28}})), None);
        // One bad family rejects the whole pool.
        assert!(
            why(json!({"ipv4": {"cidrs": ["10.0.0.0/24"], "maskSize": 26}, "ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}})).is_some()
        );
    }

    #[test]
    fn usable_cidrs_leave_out_what_has_no_blocks() {
        let pool = Pool::decode(
            &pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/24", "10.0.1.0/27", "10.0.2.0/25"], "maskSize": 26}})),
            None,
        );
        let mut problems = Problems::default();
        let (usable, owners) = usable_cidrs(&pool, &pool.families[0], true, &mut problems);
        let names: Vec<&str> = usable.iter().map(|c| c.original).collect();
        assert_eq!(names, ["10.0.0.0/24", "10.0.2.0/25"], "a /27 holds no /26 block");
        assert_eq!(owners.iter().map(|(_, i)| *i).collect::<Vec<_>>(), [Some(0), None, Some(1)]);
        let found = problems.finish();
        assert_eq!(found.len(), 1);
        // The operator accepts it, with no block: a warning (checked against the running operator).
        assert_eq!((found[0].kind, found[0].severity), (crate::allocator::ProblemKind::InvalidPool, crate::allocator::Severity::Warning));
        // In a rejected pool no CIDR is usable, but every one still owns the blocks it overlaps.
        let (usable, owners) = usable_cidrs(&pool, &pool.families[0], false, &mut Problems::default());
        assert!(usable.is_empty());
        assert_eq!(owners.len(), 3);
    }

    #[test]
    fn a_cidr_of_one_block_counts_and_only_large_ipv6_cidrs_have_too_many_blocks() {
        let problems = |spec: Value| -> Vec<(String, String)> {
            let snap = snapshot(vec![pool_object("p", spec)]);
            let report = analyze(&snap);
            report.problems.iter().map(|p| (p.kind.name(), p.message.clone())).collect()
        };
        // Exactly one block: usable, no problem.
        let one = snapshot(vec![pool_object("p", json!({"ipv4": {"cidrs": ["10.0.0.0/26"], "maskSize": 26}}))]);
        assert_eq!(analyze(&one).pools[0].families[0].capacity_blocks, Count::from(1u64));
        assert_eq!(problems(json!({"ipv4": {"cidrs": ["10.0.0.0/26"], "maskSize": 26}})), []);
        // IPv6: 2^16 blocks is the limit; IPv4 has none (2^20 blocks of /28).
        assert_eq!(problems(json!({"ipv6": {"cidrs": ["fd00::/100"], "maskSize": 116}})), []);
        assert_eq!(problems(json!({"ipv6": {"cidrs": ["fd00::/120"], "maskSize": 122}})), []);
        assert_eq!(problems(json!({"ipv4": {"cidrs": ["10.0.0.0/8"], "maskSize": 28}})), []);
        let too_many: Vec<String> = problems(json!({"ipv6": {"cidrs": ["fd00::/99"], "maskSize": 116}}))
            .into_iter()
            .filter(|(k, _)| k == "ipv6-too-many-blocks")
            .map(|(_, m)| m)
            .collect();
        assert_eq!(too_many.len(), 1);
        assert!(too_many[0].starts_with("fd00::/99 splits into 2^17 blocks of /116;"), "{}", too_many[0]);
    }
}
