//! The parsers of user and cluster text: addresses, CIDRs and reserve-range's RANGE. Never a
//! panic; what parses prints back to text that parses to the same value.
#![no_main]

use ciliumpool::allocator::reserve::parse_range;
use ciliumpool::model::{Addr, Prefix};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Some(addr) = Addr::parse(text) {
        assert_eq!(Addr::parse(&addr.to_string()), Some(addr), "{text:?}");
    }
    if let Some(prefix) = Prefix::parse(text) {
        assert!(prefix.first() <= prefix.last());
        assert_eq!(Prefix::parse(&prefix.to_string()), Some(prefix), "{text:?}");
        assert!(prefix.contains(Addr { family: prefix.family, value: prefix.last() }));
    }
    if let Ok(range) = parse_range(text) {
        assert_eq!(range.start.family, range.end.family, "{text:?}");
        assert!(range.start <= range.end, "{text:?}");
        let shown = format!("{}-{}", range.start, range.end);
        assert_eq!(parse_range(&shown), Ok(range), "{text:?}");
    }
});
