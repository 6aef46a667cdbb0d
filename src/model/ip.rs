//! Address families, addresses and prefixes as plain integers, so that arithmetic never
//! enumerates and IPv4 and IPv6 can never be mixed by accident.

use ipnet::IpNet;
use serde::Serialize;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Ipv4,
    Ipv6,
}

impl Family {
    pub fn bits(self) -> u8 {
        match self {
            Family::Ipv4 => 32,
            Family::Ipv6 => 128,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::Ipv4 => "ipv4",
            Family::Ipv6 => "ipv6",
        }
    }

    pub const ALL: [Family; 2] = [Family::Ipv4, Family::Ipv6];
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One IP address; `value` is the address as an integer within its family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Addr {
    pub family: Family,
    pub value: u128,
}

impl Addr {
    pub fn from_ip(ip: IpAddr) -> Addr {
        match ip {
            IpAddr::V4(v4) => Addr { family: Family::Ipv4, value: u32::from(v4) as u128 },
            IpAddr::V6(v6) => Addr { family: Family::Ipv6, value: u128::from(v6) },
        }
    }

    pub fn to_ip(self) -> IpAddr {
        match self.family {
            Family::Ipv4 => IpAddr::V4(Ipv4Addr::from(self.value as u32)),
            Family::Ipv6 => IpAddr::V6(Ipv6Addr::from(self.value)),
        }
    }

    /// Parses an address as Cilium's operator does (Go's `netip.ParseAddr`): no surrounding
    /// whitespace, no leading zeros. Flags given by a user are trimmed by the caller.
    pub fn parse(text: &str) -> Option<Addr> {
        if has_leading_zero(text) {
            return None;
        }
        IpAddr::from_str(text).ok().map(Addr::from_ip)
    }
}

/// A dotted-decimal part or a prefix length written with a leading zero (`010.0.0.0`, `/016`),
/// which Go's `netip` rejects (it could be read as octal).
fn has_leading_zero(text: &str) -> bool {
    let (addr, bits) = text.split_once('/').unwrap_or((text, ""));
    let zero_led = |part: &str| part.len() > 1 && part.starts_with('0') && part.bytes().all(|b| b.is_ascii_digit());
    let dotted = addr.rsplit(':').next().unwrap_or(addr);
    (dotted.contains('.') && dotted.split('.').any(zero_led)) || zero_led(bits)
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_ip().fmt(f)
    }
}

/// A masked prefix (network address + length). Parsing accepts unmasked spellings such as
/// `10.0.0.5/16` (the CRD's `format: cidr` does) and masks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix {
    pub family: Family,
    pub network: u128,
    pub len: u8,
}

impl Prefix {
    /// Parses a CIDR as strictly as [`Addr::parse`]; ` 10.1.0.0/16` and `010.0.0.0/16` are not
    /// CIDRs to the operator, so they are reported, never counted.
    pub fn parse(text: &str) -> Option<Prefix> {
        if has_leading_zero(text) {
            return None;
        }
        let net = IpNet::from_str(text).ok()?;
        let addr = Addr::from_ip(net.network());
        Some(Prefix { family: addr.family, network: addr.value, len: net.prefix_len() })
    }

    /// Parses a CIDR a person typed (a range, `--drain`, `--cidr`). Unlike [`Prefix::parse`],
    /// the CRD's reading, which masks, host bits set are refused: whoever typed `10.40.1.5/24`
    /// may have meant another block than 10.40.1.0/24.
    pub fn parse_typed(text: &str) -> Result<Prefix, String> {
        let prefix = Prefix::parse(text).ok_or_else(|| format!("{text:?} is not a CIDR"))?;
        match text.split_once('/').and_then(|(addr, _)| Addr::parse(addr)) {
            Some(typed) if typed.value != prefix.network => Err(format!("{text:?} has host bits set; its network is {prefix}: give that")),
            _ => Ok(prefix),
        }
    }

    /// Host bits of this prefix.
    pub fn host_bits(&self) -> u32 {
        (self.family.bits() - self.len) as u32
    }

    pub fn first(&self) -> u128 {
        self.network
    }

    pub fn last(&self) -> u128 {
        match self.host_bits() {
            128 => u128::MAX,
            bits => self.network | ((1u128 << bits) - 1),
        }
    }

    pub fn contains(&self, addr: Addr) -> bool {
        addr.family == self.family && addr.value >= self.first() && addr.value <= self.last()
    }

    pub fn contains_prefix(&self, other: &Prefix) -> bool {
        other.family == self.family && other.first() >= self.first() && other.last() <= self.last()
    }

    pub fn overlaps(&self, other: &Prefix) -> bool {
        other.family == self.family && other.first() <= self.last() && self.first() <= other.last()
    }

    /// The prefix of length `len` containing `value`.
    pub fn containing(family: Family, value: u128, len: u8) -> Prefix {
        let host_bits = (family.bits() - len) as u32;
        let network = if host_bits == 128 { 0 } else { value & !((1u128 << host_bits) - 1) };
        Prefix { family, network, len }
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = Addr { family: self.family, value: self.network };
        write!(f, "{}/{}", addr, self.len)
    }
}

/// An inclusive address range of one family, `start <= end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrRange {
    pub start: Addr,
    pub end: Addr,
}

impl AddrRange {
    pub fn family(&self) -> Family {
        self.start.family
    }

    pub fn of_prefix(prefix: &Prefix) -> AddrRange {
        let at = |value| Addr { family: prefix.family, value };
        AddrRange { start: at(prefix.first()), end: at(prefix.last()) }
    }

    pub fn overlaps(&self, other: &AddrRange) -> bool {
        self.family() == other.family() && self.start.value <= other.end.value && other.start.value <= self.end.value
    }

    /// Touching without overlapping (`A-B` and `B+1-C`).
    pub fn adjacent(&self, other: &AddrRange) -> bool {
        self.family() == other.family()
            && (self.end.value.checked_add(1) == Some(other.start.value) || other.end.value.checked_add(1) == Some(self.start.value))
    }

    pub fn inside(&self, prefix: &Prefix) -> bool {
        prefix.contains(self.start) && prefix.contains(self.end)
    }
}

/// `A-B`, or `A` for a single address.
impl fmt::Display for AddrRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&range_text(&self.start.to_string(), &self.end.to_string()))
    }
}

/// A range as the plugin prints it: `A-B`, or `A` for a single address.
pub fn range_text(start: &str, end: &str) -> String {
    if start == end { start.to_string() } else { format!("{start}-{end}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_masks_unmasked_spellings() {
        let p = Prefix::parse("10.0.0.5/16").unwrap();
        assert_eq!(p.to_string(), "10.0.0.0/16");
        assert_eq!(p.last(), u32::from(Ipv4Addr::new(10, 0, 255, 255)) as u128);
        assert!(Prefix::parse("10.0.0.0").is_none());
        assert!(Prefix::parse("10.0.0.0/33").is_none());
        for rejected in [" 10.1.0.0/16", "10.1.0.0/16 ", "010.0.0.0/16", "10.01.0.0/16", "10.0.0.0/016", "::ffff:010.0.0.1/128"] {
            assert!(Prefix::parse(rejected).is_none(), "{rejected:?}");
        }
        assert!(Addr::parse(" 10.0.0.1").is_none() && Addr::parse("10.0.0.01").is_none());
        assert!(Prefix::parse("10.0.0.0/0").is_some() && Prefix::parse("10.0.0.0/8").is_some() && Addr::parse("0.0.0.0").is_some());
        let all = Prefix::parse("::/0").unwrap();
        assert_eq!((all.first(), all.last(), all.host_bits()), (0, u128::MAX, 128));
        assert!(all.contains(Addr::parse("fd00::1").unwrap()));
        assert!(!all.contains(Addr::parse("10.0.0.1").unwrap()), "families never mix");
    }

    #[test]
    fn containing_prefix() {
        let a = Addr::parse("10.40.3.77").unwrap();
        assert_eq!(Prefix::containing(a.family, a.value, 24).to_string(), "10.40.3.0/24");
        assert_eq!(Prefix::containing(Family::Ipv6, 5, 0).to_string(), "::/0");
    }
}
