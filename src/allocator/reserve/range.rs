//! A RANGE as the user types it: parsed into addresses (`A-B`, `A..B`, an address, a CIDR), or
//! taken as written so that an invalid reservation can still be removed; and how reservations are
//! matched.

use crate::model::pool::{PoolCidr, ReservedRange};
use crate::model::{Addr, AddrRange, Prefix};

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
pub(super) fn same_reservation(a: &ReservedRange, b: &ReservedRange) -> bool {
    (a.start == b.start && a.end == b.end) || a.addrs().is_some_and(|ends| b.addrs() == Some(ends))
}

/// A reservation's addresses when it is valid inside `cidr` (what the allocator counts).
pub(super) fn valid_in(r: &ReservedRange, cidr: &PoolCidr) -> Option<AddrRange> {
    r.within(&cidr.prefix?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
