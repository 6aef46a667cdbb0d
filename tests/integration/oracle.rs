//! `usage -o json` against an independent, deliberately naive reading of docs/design/cilium.md
//! (#blocks, #used-addresses, #figures) and docs/design/problems.md.
//!
//! The oracle lists every block and every reserved address with plain loops and sets: slow, but
//! obviously right. Most pools are small (IPv4 /20../26, IPv6 /116../128); some CIDRs split into
//! 2^9..2^12 (IPv4) or up to 2^16 blocks (IPv6, the operator's limit; beyond it the pool is
//! rejected), with /64 blocks whose address counts pass u64 and so reach the JSON string form.
//! The binary must never enumerate, so the two share nothing but the documents. It compares every
//! family and CIDR figure, `nextBlock`, the runway (read through the library: it is not in the
//! JSON), the set of problems as (kind, object, severity) and every `nodes[]` row. Snapshots are
//! random but seeded; a failure names its case, keeps its files, and `ORACLE_CASE=<n>` reruns
//! just it.
//!
//! Readings where the documents leave room, as docs/design/json-contract.md settles them:
//! * a reserved range counts only if both ends parse, are the CIDR's family, start ≤ end and
//!   both lie inside that CIDR; upstream `pool[].cidr` must be string-equal to a `cidrs` entry;
//! * a block belongs to the pool it is listed under, nowhere else: a deleted pool's block inside
//!   a live pool's CIDR, or another pool's block of a shared CIDR, is not the live pool's;
//! * within its pool a listed block belongs to the first CIDR it overlaps and occupies every
//!   block of that CIDR it touches, whatever its length (Cilium's `cidrset.Occupy`); a node
//!   listing the pool in several `allocated[]` entries keeps only the last entry's blocks, and the
//!   operator's restore is replayed node by node, the results united;
//! * used = distinct in-use IPs inside the pool's own listed blocks (last entries), whichever
//!   node lists them; a `nodes[]` row counts those inside all its entries' blocks;
//! * usable(block) has no 65,536-address cap (that is the agent's bitmap, not the pool's size);
//! * when a v2 pool and its v2alpha1 copy are both in the input, the v2 copy counts.

use assert_cmd::cargo::cargo_bin_cmd;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};

const CASES: u64 = 96;

/// SplitMix64: tiny, seedable, good enough to spread test cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn below_u128(&mut self, n: u128) -> u128 {
        ((u128::from(self.next()) << 64) | u128::from(self.next())) % n
    }

    fn between(&mut self, low: u64, high_inclusive: u64) -> u64 {
        low + self.below(high_inclusive - low + 1)
    }

    fn percent(&mut self, chance: u64) -> bool {
        self.below(100) < chance
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fam {
    V4,
    V6,
}

impl Fam {
    fn bits(self) -> u32 {
        match self {
            Fam::V4 => 32,
            Fam::V6 => 128,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Fam::V4 => "ipv4",
            Fam::V6 => "ipv6",
        }
    }

    fn max_addr(self) -> u128 {
        match self {
            Fam::V4 => u128::from(u32::MAX),
            Fam::V6 => u128::MAX,
        }
    }

    fn other(self) -> Fam {
        match self {
            Fam::V4 => Fam::V6,
            Fam::V6 => Fam::V4,
        }
    }

    /// Where generated CIDRs live: 256 slots of 4096 addresses each; the last one is the top
    /// of the address space, where `last + 1` overflows. With `v6_like_v4`, IPv6 slots are the
    /// IPv4-compatible addresses `::10.x.y.z`: the same integers as the IPv4 slots, so any
    /// mixing of the families shows.
    fn slot_base(self, slot: u64, v6_like_v4: bool) -> u128 {
        if slot == TOP_SLOT {
            return self.max_addr() - (SLOT_SIZE - 1);
        }
        let base: u128 = match self {
            Fam::V6 if !v6_like_v4 => 0xfd00 << 112,
            _ => 0x0A00_0000,
        };
        base + (u128::from(slot) << 12)
    }
}

const SLOT_SIZE: u128 = 1 << 12;
const TOP_SLOT: u64 = 255;

/// Addresses in a prefix of `len` bits.
fn prefix_size(fam: Fam, len: u32) -> u128 {
    1u128 << (fam.bits() - len)
}

/// The last address of `net/len`, written so that the top of the IPv6 space does not overflow.
fn last_of(fam: Fam, net: u128, len: u32) -> u128 {
    net + (prefix_size(fam, len) - 1)
}

fn contains(fam: Fam, net: u128, len: u32, addr: u128) -> bool {
    net <= addr && addr <= last_of(fam, net, len)
}

fn addr_text(fam: Fam, addr: u128) -> String {
    match fam {
        Fam::V4 => Ipv4Addr::from(addr as u32).to_string(),
        Fam::V6 => Ipv6Addr::from(addr).to_string(),
    }
}

/// All eight groups, upper case: the same address, spelled differently.
fn expanded_v6_text(addr: u128) -> String {
    let groups: Vec<String> = (0..8).rev().map(|i| format!("{:X}", (addr >> (16 * i)) & 0xffff)).collect();
    groups.join(":")
}

fn parse_addr(text: &str) -> Option<(Fam, u128)> {
    match text.parse::<IpAddr>().ok()? {
        IpAddr::V4(a) => Some((Fam::V4, u128::from(u32::from(a)))),
        IpAddr::V6(a) => Some((Fam::V6, u128::from(a))),
    }
}

/// A CIDR as (family, masked network, prefix length).
fn parse_cidr(text: &str) -> Option<(Fam, u128, u32)> {
    let (addr, len) = text.split_once('/')?;
    let (fam, addr) = parse_addr(addr)?;
    let len: u32 = len.parse().ok()?;
    if len == 0 || len > fam.bits() {
        return None;
    }
    let size = prefix_size(fam, len);
    Some((fam, addr - addr % size, len))
}

// ---------------------------------------------------------------------------------------------
// The generated world: what gets written as Kubernetes objects.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dialect {
    V2alpha1,
    Upstream,
    Cfp,
}

#[derive(Clone, Debug)]
struct Range {
    start: String,
    end: String,
}

#[derive(Clone, Debug)]
struct Cidr {
    spelling: String,
    net: u128,
    len: u32,
    /// Written with this CIDR (CFP `reservedRange`, upstream `pool[]` entry whose `cidr` is the spelling).
    ranges: Vec<Range>,
}

#[derive(Clone, Debug)]
struct PoolFamily {
    fam: Fam,
    mask: u32,
    cidrs: Vec<Cidr>,
    /// Upstream `pool[]` entries whose `cidr` is not string-equal to any entry of `cidrs`.
    stray_entries: Vec<(String, Vec<Range>)>,
}

#[derive(Clone, Debug)]
struct Pool {
    name: String,
    dialect: Dialect,
    allow_first: bool,
    allow_last: bool,
    families: Vec<PoolFamily>,
    /// Also emit a v2alpha1 copy (as a sysdump holds); the v2 copy is the one that counts.
    v2alpha1_copy: bool,
}

#[derive(Clone, Debug)]
struct Node {
    name: String,
    allocations: Vec<(String, Vec<String>)>,
    requested: Vec<(String, u64, u64)>,
    addresses: Vec<(&'static str, String)>,
    health: [Option<String>; 2],
    ingress: [Option<String>; 2],
}

#[derive(Clone, Debug)]
struct Pod {
    namespace: &'static str,
    name: String,
    node: String,
    phase: Option<&'static str>,
    host_network: bool,
    ips: Vec<String>,
}

#[derive(Clone, Debug)]
struct Endpoint {
    namespace: &'static str,
    name: String,
    addressing: Vec<(Option<String>, Option<String>)>,
}

#[derive(Clone, Debug, Default)]
struct World {
    pools: Vec<Pool>,
    nodes: Vec<Node>,
    pods: Vec<Pod>,
    endpoints: Vec<Endpoint>,
}

/// A block some node lists: (family, network, length).
type Held = (Fam, u128, u32);

struct Generator {
    rng: Rng,
    v6_like_v4: bool,
    used_slots: BTreeSet<(Fam, u64)>,
    /// Every block listed by any node, per pool name.
    held: BTreeMap<String, Vec<Held>>,
    used_ips: Vec<String>,
    big_regions: u64,
}

impl Generator {
    /// A 4096-address region no CIDR or block has used yet: pools overlap only where
    /// `overlapping_pool` makes them, and a live pool's orphans lie outside every pool.
    fn fresh_slot(&mut self, fam: Fam) -> u128 {
        if self.rng.percent(5) && self.used_slots.insert((fam, TOP_SLOT)) {
            return fam.slot_base(TOP_SLOT, self.v6_like_v4);
        }
        if self.v6_like_v4 && fam == Fam::V6 && self.rng.percent(60) {
            let shared: Vec<u64> = self
                .used_slots
                .iter()
                .filter(|&&(f, slot)| f == Fam::V4 && !self.used_slots.contains(&(Fam::V6, slot)))
                .map(|&(_, slot)| slot)
                .collect();
            if !shared.is_empty() {
                let slot = *self.rng.pick(&shared);
                self.used_slots.insert((fam, slot));
                return fam.slot_base(slot, true);
            }
        }
        loop {
            let slot = self.rng.below(256);
            if self.used_slots.insert((fam, slot)) {
                return fam.slot_base(slot, self.v6_like_v4);
            }
        }
    }

    fn world(&mut self) -> World {
        let mut world = World::default();
        for i in 0..self.rng.between(1, 4) {
            let pool = self.pool(format!("pool-{i}"));
            world.pools.push(pool);
        }
        if self.rng.percent(15) {
            let pool = self.overlapping_pool(&world.pools);
            world.pools.push(pool);
        }
        let node_count = self.rng.between(1, 6);
        for i in 0..node_count {
            let node = self.node(format!("node-{i}"), &world.pools);
            world.nodes.push(node);
        }
        self.add_infrastructure_ips(&mut world);
        for i in 0..self.rng.below(40) {
            let pod = self.pod(i, &world);
            world.pods.push(pod);
        }
        for i in 0..self.rng.below(25) {
            let endpoint = self.endpoint(i, &world);
            world.endpoints.push(endpoint);
        }
        world
    }

    fn pool(&mut self, name: String) -> Pool {
        let dialect = *self.rng.pick(&[Dialect::V2alpha1, Dialect::Upstream, Dialect::Cfp]);
        let fams = match self.rng.below(100) {
            0..70 => vec![Fam::V4, Fam::V6],
            70..85 => vec![Fam::V4],
            _ => vec![Fam::V6],
        };
        let families = fams.into_iter().map(|fam| self.pool_family(fam, dialect)).collect();
        Pool {
            name,
            dialect,
            allow_first: self.rng.percent(30),
            allow_last: self.rng.percent(30),
            families,
            v2alpha1_copy: dialect != Dialect::V2alpha1 && self.rng.percent(15),
        }
    }

    /// Cilium does not detect overlap between pools (docs/design/cilium.md#blocks): a pool sharing another's CIDR,
    /// maybe with other block sizes, counts only the blocks listed under its own name.
    fn overlapping_pool(&mut self, pools: &[Pool]) -> Pool {
        let base = self.rng.pick(pools);
        let theirs = self.rng.pick(&base.families);
        let cidr = self.rng.pick(&theirs.cidrs).clone();
        let longest = match theirs.fam {
            Fam::V4 => 28.min(cidr.len + 6),
            Fam::V6 => 128.min(cidr.len + 8),
        };
        let mask = self.rng.between(cidr.len.into(), longest.into()) as u32;
        let spelling = format!("{}/{}", addr_text(theirs.fam, cidr.net), cidr.len);
        let family =
            PoolFamily { fam: theirs.fam, mask, cidrs: vec![Cidr { spelling, ranges: Vec::new(), ..cidr }], stray_entries: Vec::new() };
        Pool {
            name: "overlap".to_string(),
            dialect: Dialect::Upstream,
            allow_first: self.rng.percent(50),
            allow_last: self.rng.percent(50),
            families: vec![family],
            v2alpha1_copy: false,
        }
    }

    /// A region of its own for a CIDR of many blocks: IPv4 /14s from 10.64.0.0 (beyond the
    /// 4096-address slots), IPv6 /32s under fd10::/16.
    fn big_region(&mut self, fam: Fam) -> u128 {
        self.big_regions += 1;
        match fam {
            Fam::V4 => 0x0A40_0000 + (u128::from(self.big_regions) << 18),
            Fam::V6 => (0xfd10u128 << 112) | (u128::from(self.big_regions) << 96),
        }
    }

    /// (mask, CIDR length) of a family split into many blocks: IPv4 2^9..2^12 blocks; IPv6
    /// exactly 2^16 blocks (the operator's limit), fewer, or more (the operator rejects the pool),
    /// with blocks of 2^64 addresses so that address counts pass u64.
    fn big_shape(&mut self, fam: Fam) -> (u32, u32) {
        match fam {
            Fam::V4 => {
                let mask = self.rng.between(24, 28) as u32;
                (mask, mask - self.rng.between(9, 12) as u32)
            }
            Fam::V6 => {
                let mask = *self.rng.pick(&[116u32, 64]);
                let bits = match self.rng.below(10) {
                    0..5 => 16,
                    5..7 => self.rng.between(9, 15) as u32,
                    _ => self.rng.between(17, 18) as u32,
                };
                (mask, mask - bits)
            }
        }
    }

    fn pool_family(&mut self, fam: Fam, dialect: Dialect) -> PoolFamily {
        let big = self.rng.percent(12);
        let (mask, shortest, longest) = match fam {
            _ if big => {
                let (mask, len) = self.big_shape(fam);
                (mask, len, len)
            }
            Fam::V4 => (*self.rng.pick(&[22u32, 23, 24, 25, 26, 27, 28, 30, 31, 32]), 20u32, 26u32),
            Fam::V6 => (*self.rng.pick(&[120u32, 122, 124, 126, 127, 128]), 116, 128),
        };
        let mut cidrs = Vec::new();
        for _ in 0..self.rng.between(1, if big { 2 } else { 3 }) {
            let len = if big { shortest } else { self.rng.between(shortest.max(mask - 8).into(), longest.min(mask).into()) as u32 };
            let size = prefix_size(fam, len);
            let net = if big { self.big_region(fam) } else { self.fresh_slot(fam) + self.rng.below_u128(SLOT_SIZE / size) * size };
            let spelling = match self.rng.below(10) {
                0 | 1 if size > 1 => format!("{}/{len}", addr_text(fam, net + 1 + self.rng.below_u128(size - 1))),
                2 if fam == Fam::V6 => format!("{}/{len}", expanded_v6_text(net)),
                _ => format!("{}/{len}", addr_text(fam, net)),
            };
            let range_count = match dialect {
                Dialect::V2alpha1 => 0,
                Dialect::Cfp => u64::from(self.rng.percent(40)),
                Dialect::Upstream if self.rng.percent(50) => self.rng.between(1, 3),
                Dialect::Upstream => 0,
            };
            let ranges = (0..range_count).map(|_| self.range(fam, net, len, mask)).collect();
            cidrs.push(Cidr { spelling, net, len, ranges });
        }
        if !big && self.rng.percent(7) {
            // A CIDR overlapping one of the family's own (inside it, or equal): the operator
            // rejects the whole pool.
            let inner = self.rng.pick(&cidrs).clone();
            let len = self.rng.between(inner.len.into(), mask.into()) as u32;
            let size = prefix_size(fam, len);
            let net = inner.net + self.rng.below_u128(prefix_size(fam, inner.len) / size) * size;
            let at = self.rng.below(cidrs.len() as u64 + 1) as usize;
            cidrs.insert(at, Cidr { spelling: format!("{}/{len}", addr_text(fam, net)), net, len, ranges: Vec::new() });
        }
        let mut stray_entries = Vec::new();
        if dialect == Dialect::Upstream && self.rng.percent(20) {
            // Same prefix spelled differently, or a CIDR that is not in the list at all: the CEL
            // rule wants string equality, so these reservations are invalid and ignored.
            let target = self.rng.pick(&cidrs).clone();
            let canonical = format!("{}/{}", addr_text(fam, target.net), target.len);
            let (text, net, len) = if target.spelling != canonical {
                (canonical, target.net, target.len)
            } else if fam == Fam::V6 {
                (format!("{}/{}", expanded_v6_text(target.net), target.len), target.net, target.len)
            } else {
                let net = self.fresh_slot(fam);
                (format!("{}/{}", addr_text(fam, net), target.len), net, target.len)
            };
            if text != target.spelling {
                let range = self.range(fam, net, len, mask);
                stray_entries.push((text, vec![range]));
            }
        }
        PoolFamily { fam, mask, cidrs, stray_entries }
    }

    /// A reserved range for the CIDR `net/len`: valid (one address, part, the whole CIDR) or
    /// invalid in every way the documents name.
    fn range(&mut self, fam: Fam, net: u128, len: u32, mask: u32) -> Range {
        let size = prefix_size(fam, len);
        // The oracle lists every reserved address: in CIDRs of many or huge blocks ranges stay
        // a few thousand addresses long (and never the whole CIDR).
        let huge = size > 1 << 20;
        let block = prefix_size(fam, mask).min(if huge { 1 << 11 } else { u128::MAX });
        let last = last_of(fam, net, len);
        let spell = |rng: &mut Rng, addr: u128| {
            if fam == Fam::V6 && rng.percent(15) { expanded_v6_text(addr) } else { addr_text(fam, addr) }
        };
        let (start, end) = match self.rng.below(100) {
            0..20 => {
                let addr = match self.rng.below(5) {
                    0 => net,
                    1 => net + 1.min(size - 1),
                    2 => last - 1.min(size - 1),
                    3 => last,
                    _ => net + self.rng.below_u128(size),
                };
                let text = spell(&mut self.rng, addr);
                (text.clone(), text)
            }
            20..45 => {
                let start = net + self.rng.below_u128(size);
                let end = (start + self.rng.below_u128(3 * block)).min(last);
                (spell(&mut self.rng, start), spell(&mut self.rng, end))
            }
            45..60 if !huge => (spell(&mut self.rng, net), spell(&mut self.rng, last)),
            45..60 => (spell(&mut self.rng, last - 5), spell(&mut self.rng, last)),
            60..68 => {
                let junk = self.rng.pick(&["gateway", "10.0.0.256", "", "fd00::g", "1.2.3", "10.0.0.1/32"]).to_string();
                let fine = addr_text(fam, net);
                if self.rng.percent(50) { (junk, fine) } else { (fine, junk) }
            }
            68..76 if size >= 2 => {
                let start = net + 1 + self.rng.below_u128(size - 1);
                let end = net + self.rng.below_u128(start - net);
                (addr_text(fam, start), addr_text(fam, end))
            }
            68..84 => {
                let other = fam.other().slot_base(self.rng.below(256), self.v6_like_v4);
                let wrong = addr_text(fam.other(), other + self.rng.below_u128(16));
                match self.rng.below(3) {
                    0 => (wrong.clone(), addr_text(fam.other(), other + 20)),
                    1 => (addr_text(fam, net), wrong),
                    _ => (wrong, addr_text(fam, last)),
                }
            }
            84..92 => match fam {
                Fam::V4 => ("192.168.0.1".to_string(), "192.168.0.9".to_string()),
                Fam::V6 => ("2001:db8::1".to_string(), "2001:db8::9".to_string()),
            },
            _ => {
                // Straddles an edge of the CIDR: one end inside, one just outside.
                let inside = net + self.rng.below_u128(size);
                let room_above = fam.max_addr() - last;
                if room_above > 0 && (net == 0 || self.rng.percent(50)) {
                    (addr_text(fam, inside), addr_text(fam, last + 1 + self.rng.below_u128(block.min(room_above))))
                } else {
                    (addr_text(fam, net - 1 - self.rng.below_u128(block)), addr_text(fam, inside))
                }
            }
        };
        Range { start, end }
    }

    fn node(&mut self, name: String, pools: &[Pool]) -> Node {
        let mut allocations = Vec::new();
        let mut requested = Vec::new();
        for pool in pools {
            if !self.rng.percent(65) {
                continue;
            }
            let mut blocks: Vec<Held> = Vec::new();
            for family in &pool.families {
                let block_size = prefix_size(family.fam, family.mask);
                for _ in 0..self.rng.below(4) {
                    let cidr = self.rng.pick(&family.cidrs);
                    let count = prefix_size(family.fam, cidr.len) / block_size;
                    blocks.push((family.fam, cidr.net + self.rng.below_u128(count) * block_size, family.mask));
                }
                if self.rng.percent(15) {
                    let net = match SLOT_SIZE.checked_div(block_size).filter(|&n| n > 0) {
                        Some(per_slot) => self.fresh_slot(family.fam) + self.rng.below_u128(per_slot) * block_size,
                        None => self.big_region(family.fam),
                    };
                    blocks.push((family.fam, net, family.mask));
                }
            }
            if pool.families.len() == 1 && self.rng.percent(8) {
                // A block of the family the pool does not have: outside its CIDRs by definition.
                let fam = pool.families[0].fam.other();
                let mask = if fam == Fam::V4 { 26 } else { 124 };
                blocks.push((fam, self.fresh_slot(fam), mask));
            }
            let others = self.held.get(&pool.name).cloned().unwrap_or_default();
            if !others.is_empty() && self.rng.percent(25) {
                blocks.push(*self.rng.pick(&others));
            }
            if !blocks.is_empty() && self.rng.percent(5) {
                let again = *self.rng.pick(&blocks);
                blocks.push(again);
            }
            if self.rng.percent(14) {
                let family = self.rng.pick(&pool.families).clone();
                blocks.push(self.block_of_another_length(family));
            }
            self.rng.shuffle(&mut blocks);
            self.held.entry(pool.name.clone()).or_default().extend(blocks.iter().copied());
            let mut texts: Vec<String> = blocks.iter().map(|&(fam, net, len)| format!("{}/{len}", addr_text(fam, net))).collect();
            if self.rng.percent(4) {
                // What an agent should never write: not a CIDR.
                let junk = self.rng.pick(&["not-a-cidr", "10.0.0.0/33", "fd00::/129"]).to_string();
                texts.insert(self.rng.below(texts.len() as u64 + 1) as usize, junk);
            }
            if !texts.is_empty() && self.rng.percent(12) {
                // One pool in two allocated[] entries (a hand edit), sometimes a block in both.
                let cut = self.rng.below(texts.len() as u64 + 1) as usize;
                let mut first = texts[..cut].to_vec();
                let second = texts[cut..].to_vec();
                if self.rng.percent(30) {
                    first.push(self.rng.pick(&texts).clone());
                }
                allocations.push((pool.name.clone(), first));
                allocations.push((pool.name.clone(), second));
            } else {
                allocations.push((pool.name.clone(), texts));
            }
            if self.rng.percent(70) {
                requested.push((pool.name.clone(), self.rng.below(300), self.rng.below(300)));
            }
        }
        if self.rng.percent(5) {
            requested.push(("ghost-requested".to_string(), self.rng.below(300), 0));
        }
        if self.rng.percent(20) {
            // Blocks of a pool that was deleted (or never existed).
            let ghost = format!("ghost-{}", self.rng.below(2));
            let mut blocks = Vec::new();
            for _ in 0..self.rng.between(1, 3) {
                let fam = *self.rng.pick(&[Fam::V4, Fam::V6]);
                let families: Vec<&PoolFamily> = pools.iter().flat_map(|p| &p.families).filter(|f| f.fam == fam).collect();
                if !families.is_empty() && self.rng.percent(40) {
                    // Inside a live pool's CIDR: still not that pool's block (§11: listed under its name).
                    let family = *self.rng.pick(&families);
                    let cidr = self.rng.pick(&family.cidrs);
                    let block_size = prefix_size(fam, family.mask);
                    let count = prefix_size(fam, cidr.len) / block_size;
                    blocks.push((fam, cidr.net + self.rng.below_u128(count) * block_size, family.mask));
                } else {
                    let mask = if fam == Fam::V4 { 26 } else { 124 };
                    blocks.push((fam, self.fresh_slot(fam), mask));
                }
            }
            self.held.entry(ghost.clone()).or_default().extend(blocks.iter().copied());
            allocations.push((ghost, blocks.iter().map(|&(fam, net, len)| format!("{}/{len}", addr_text(fam, net))).collect()));
        }
        Node { name, allocations, requested, addresses: Vec::new(), health: [None, None], ingress: [None, None] }
    }

    /// A block whose length is not the pool's maskSize, in one of the family's CIDRs: a few bits
    /// longer (inside one block), shorter (over several), or one bit shorter than the CIDR itself.
    fn block_of_another_length(&mut self, family: PoolFamily) -> Held {
        let fam = family.fam;
        let cidr = self.rng.pick(&family.cidrs).clone();
        let delta = *self.rng.pick(&[-2i64, -1, 1, 2]);
        let len = if self.rng.percent(20) { i64::from(cidr.len) - 1 } else { i64::from(family.mask) + delta };
        let len = len.clamp(1, i64::from(fam.bits())) as u32;
        if len <= cidr.len {
            let size = prefix_size(fam, len);
            return (fam, cidr.net - cidr.net % size, len);
        }
        let size = prefix_size(fam, len);
        (fam, cidr.net + self.rng.below_u128(prefix_size(fam, cidr.len) / size) * size, len)
    }

    /// CiliumInternalIP, health and ingress addresses, mostly from the node's own blocks;
    /// sometimes from another node's block or from nowhere. The host's InternalIP sometimes
    /// falls inside a block too, and must not count.
    fn add_infrastructure_ips(&mut self, world: &mut World) {
        let cidrs = world_cidrs(&world.pools);
        for node in &mut world.nodes {
            let own: Vec<Held> = node.allocations.iter().flat_map(|(_, blocks)| blocks.iter().filter_map(|b| parse_cidr(b))).collect();
            if self.rng.percent(70) {
                node.addresses.push(("InternalIP", format!("192.168.1.{}", self.rng.below(250))));
            }
            if self.rng.percent(10) {
                node.addresses.push(("InternalIP", self.ip(Fam::V4, &cidrs)));
            }
            for fam in [Fam::V4, Fam::V6] {
                if let Some(ip) = self.infrastructure_ip(fam, &own, &cidrs) {
                    node.addresses.push(("CiliumInternalIP", ip));
                }
                node.health[fam as usize] = self.infrastructure_ip(fam, &own, &cidrs);
                if self.rng.percent(30) {
                    node.ingress[fam as usize] = self.infrastructure_ip(fam, &own, &cidrs);
                }
            }
            self.rng.shuffle(&mut node.addresses);
        }
    }

    fn infrastructure_ip(&mut self, fam: Fam, own: &[Held], cidrs: &[Held]) -> Option<String> {
        let own: Vec<Held> = own.iter().copied().filter(|b| b.0 == fam).collect();
        match self.rng.below(10) {
            0..6 if !own.is_empty() => {
                let (fam, net, len) = *self.rng.pick(&own);
                Some(addr_text(fam, net + self.rng.below_u128(prefix_size(fam, len))))
            }
            0..8 => Some(self.ip(fam, cidrs)),
            _ => None,
        }
    }

    /// An address of `fam` for a workload: inside some listed block (of any pool, orphans
    /// included), inside a pool CIDR but maybe in no block, outside everything, or one already
    /// handed out (so that distinct counting matters).
    fn ip(&mut self, fam: Fam, cidrs: &[Held]) -> String {
        let blocks: Vec<Held> = self.held.values().flatten().copied().filter(|b| b.0 == fam).collect();
        let cidrs: Vec<Held> = cidrs.iter().copied().filter(|c| c.0 == fam).collect();
        let repeat: Vec<String> = self.used_ips.iter().filter(|ip| parse_addr(ip).is_some_and(|a| a.0 == fam)).cloned().collect();
        let choice = self.rng.below(100);
        let ip = if choice < 55 && !blocks.is_empty() {
            let (_, net, len) = *self.rng.pick(&blocks);
            addr_text(fam, net + self.rng.below_u128(prefix_size(fam, len)))
        } else if choice < 75 && !cidrs.is_empty() {
            let (_, net, len) = *self.rng.pick(&cidrs);
            addr_text(fam, net + self.rng.below_u128(prefix_size(fam, len)))
        } else if choice < 90 || repeat.is_empty() {
            match fam {
                Fam::V4 => format!("172.16.{}.{}", self.rng.below(4), self.rng.below(256)),
                Fam::V6 => format!("2001:db8::{:x}", self.rng.below(4096)),
            }
        } else {
            self.rng.pick(&repeat).clone()
        };
        self.used_ips.push(ip.clone());
        ip
    }

    fn families_of_workload(&mut self) -> Vec<Fam> {
        match self.rng.below(100) {
            0..40 => vec![Fam::V4],
            40..60 => vec![Fam::V6],
            60..80 => vec![Fam::V4, Fam::V6],
            80..95 => vec![Fam::V6, Fam::V4],
            _ => vec![],
        }
    }

    fn pod(&mut self, i: u64, world: &World) -> Pod {
        let phase = match self.rng.below(100) {
            0..55 => Some("Running"),
            55..65 => Some("Pending"),
            65..75 => Some("Succeeded"),
            75..85 => Some("Failed"),
            85..90 => Some("Unknown"),
            _ => None,
        };
        let ips = self.families_of_workload().into_iter().map(|fam| self.ip(fam, &world_cidrs(&world.pools))).collect();
        Pod {
            namespace: self.rng.pick::<&str>(&["default", "kube-system", "team-a"]),
            name: format!("pod-{i}"),
            node: self.rng.pick(&world.nodes).name.clone(),
            phase,
            host_network: self.rng.percent(12),
            ips,
        }
    }

    fn endpoint(&mut self, i: u64, world: &World) -> Endpoint {
        let mut addressing = Vec::new();
        for _ in 0..if self.rng.percent(10) { 2 } else { 1 } {
            let fams = self.families_of_workload();
            let mut pair = (None, None);
            for fam in fams {
                let ip = self.ip(fam, &world_cidrs(&world.pools));
                match fam {
                    Fam::V4 => pair.0 = Some(ip),
                    Fam::V6 => pair.1 = Some(ip),
                }
            }
            addressing.push(pair);
        }
        Endpoint { namespace: self.rng.pick::<&str>(&["default", "kube-system", "team-a"]), name: format!("ep-{i}"), addressing }
    }
}

fn world_cidrs(pools: &[Pool]) -> Vec<Held> {
    pools.iter().flat_map(|p| &p.families).flat_map(|f| f.cidrs.iter().map(|c| (f.fam, c.net, c.len))).collect()
}

// ---------------------------------------------------------------------------------------------
// Kubernetes objects.

fn objects(world: &World) -> Vec<Value> {
    let mut objects = Vec::new();
    for pool in &world.pools {
        objects.push(pool_object(pool));
        if pool.v2alpha1_copy {
            let copy = Pool { dialect: Dialect::V2alpha1, ..pool.clone() };
            objects.push(pool_object(&copy));
        }
    }
    for node in &world.nodes {
        let allocated: Vec<Value> = node
            .allocations
            .iter()
            .map(|(pool, blocks)| {
                let mut entry = json!({"pool": pool, "cidrs": blocks});
                if let Some(p) = world.pools.iter().find(|p| &p.name == pool) {
                    entry["allowFirstIP"] = json!(p.allow_first);
                    entry["allowLastIP"] = json!(p.allow_last);
                }
                entry
            })
            .collect();
        let requested: Vec<Value> =
            node.requested.iter().map(|(pool, v4, v6)| json!({"pool": pool, "needed": {"ipv4-addrs": v4, "ipv6-addrs": v6}})).collect();
        let addresses: Vec<Value> = node.addresses.iter().map(|(kind, ip)| json!({"type": kind, "ip": ip})).collect();
        let mut spec = json!({"addresses": addresses, "ipam": {"pools": {"allocated": allocated, "requested": requested}}});
        for (field, pair) in [("health", &node.health), ("ingress", &node.ingress)] {
            let mut value = json!({});
            for (fam, ip) in [Fam::V4, Fam::V6].iter().zip(pair) {
                if let Some(ip) = ip {
                    value[fam.name()] = json!(ip);
                }
            }
            if value.as_object().is_some_and(|o| !o.is_empty()) {
                spec[field] = value;
            }
        }
        objects.push(json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": node.name}, "spec": spec}));
    }
    for pod in &world.pods {
        let mut spec = json!({"nodeName": pod.node, "containers": [{"name": "app", "image": "registry.example/app:1"}]});
        if pod.host_network {
            spec["hostNetwork"] = json!(true);
        }
        let mut status = json!({});
        if let Some(phase) = pod.phase {
            status["phase"] = json!(phase);
        }
        if let Some(first) = pod.ips.first() {
            status["podIP"] = json!(first);
            status["podIPs"] = pod.ips.iter().map(|ip| json!({"ip": ip})).collect();
        }
        objects.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod.name, "namespace": pod.namespace}, "spec": spec, "status": status}));
    }
    for ep in &world.endpoints {
        let addressing: Vec<Value> = ep
            .addressing
            .iter()
            .map(|(v4, v6)| {
                let mut pair = json!({});
                if let Some(ip) = v4 {
                    pair["ipv4"] = json!(ip);
                }
                if let Some(ip) = v6 {
                    pair["ipv6"] = json!(ip);
                }
                pair
            })
            .collect();
        objects.push(json!({
            "apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint",
            "metadata": {"name": ep.name, "namespace": ep.namespace},
            "status": {"networking": {"node": "192.168.1.1", "addressing": addressing}},
        }));
    }
    objects
}

fn pool_object(pool: &Pool) -> Value {
    let mut spec = json!({});
    for family in &pool.families {
        let mut fam = json!({"maskSize": family.mask});
        match pool.dialect {
            Dialect::V2alpha1 => fam["cidrs"] = family.cidrs.iter().map(|c| json!(c.spelling)).collect(),
            Dialect::Upstream => {
                fam["cidrs"] = family.cidrs.iter().map(|c| json!(c.spelling)).collect();
                let range_list = |ranges: &[Range]| -> Value { ranges.iter().map(|r| json!({"start": r.start, "end": r.end})).collect() };
                let mut entries: Vec<Value> = family
                    .cidrs
                    .iter()
                    .filter(|c| !c.ranges.is_empty())
                    .map(|c| json!({"cidr": c.spelling, "reservedRanges": range_list(&c.ranges)}))
                    .collect();
                entries
                    .extend(family.stray_entries.iter().map(|(cidr, ranges)| json!({"cidr": cidr, "reservedRanges": range_list(ranges)})));
                if !entries.is_empty() {
                    fam["pool"] = Value::Array(entries);
                }
            }
            Dialect::Cfp => {
                fam["cidrs"] = family
                    .cidrs
                    .iter()
                    .map(|c| match c.ranges.first() {
                        Some(r) => json!({"cidr": c.spelling, "reservedRange": format!("{}-{}", r.start, r.end)}),
                        None => json!({"cidr": c.spelling}),
                    })
                    .collect();
            }
        }
        spec[family.fam.name()] = fam;
    }
    if pool.allow_first {
        spec["allowFirstIP"] = json!(true);
    }
    if pool.allow_last {
        spec["allowLastIP"] = json!(true);
    }
    let api_version = if pool.dialect == Dialect::V2alpha1 { "cilium.io/v2alpha1" } else { "cilium.io/v2" };
    json!({"apiVersion": api_version, "kind": "CiliumPodIPPool", "metadata": {"name": pool.name}, "spec": spec})
}

// ---------------------------------------------------------------------------------------------
// The oracle: docs/design/cilium.md (#blocks, #used-addresses, #figures), docs/design/problems.md
// and docs/design/json-contract.md, read literally, by enumeration.

#[derive(Debug, Default)]
struct Figures {
    family: BTreeMap<&'static str, u128>,
    /// Per CIDR spelling: capacityBlocks, allocatedBlocks, withheldBlocks, freeBlocks.
    cidrs: BTreeMap<String, BTreeMap<&'static str, u128>>,
    /// The lowest free block of the first CIDR that has one.
    next_block: Option<String>,
    /// Free blocks / blocks a median node holds (rounded up, at least 1).
    runway: u128,
    /// False when every pool was read through v2alpha1 without a CRD: v2 reservations may hide
    /// in the cluster, so what depends on them is unknown (null), not the figure computed here.
    reservations_known: bool,
}

/// The figures that depend on reservations (docs/inputs.md, pools-through-v2alpha1).
const RESERVATION_DEPENDENT: [&str; 4] = ["reservedAddresses", "withheldBlocks", "freeBlocks", "freeAddresses"];

/// One row of `nodes[].pools[]`.
#[derive(Debug, PartialEq)]
struct NodePoolRow {
    pool: String,
    blocks: Vec<String>,
    used: u128,
    needed: (u64, u64),
}

/// (kind, object, severity) of one problem.
type ProblemKey = (String, String, &'static str);

#[derive(Debug, Default)]
struct Expected {
    figures: BTreeMap<(String, &'static str), Figures>,
    problems: BTreeSet<ProblemKey>,
    nodes: BTreeMap<String, Vec<NodePoolRow>>,
}

impl Expected {
    fn problem(&mut self, kind: &str, object: String, severity: &'static str) {
        self.problems.insert((kind.to_string(), object, severity));
    }
}

fn usable_per_block(block_size: u128, allow_first: bool, allow_last: bool) -> u128 {
    if block_size <= 2 {
        return block_size;
    }
    block_size - u128::from(!allow_first) - u128::from(!allow_last)
}

/// A reserved range counts only when both ends are addresses of the CIDR's family, in order,
/// and inside that CIDR.
fn valid_range(range: &Range, fam: Fam, net: u128, len: u32) -> Option<(u128, u128)> {
    let (start_fam, start) = parse_addr(&range.start)?;
    let (end_fam, end) = parse_addr(&range.end)?;
    let inside = |a: u128| contains(fam, net, len, a);
    (start_fam == fam && end_fam == fam && start <= end && inside(start) && inside(end)).then_some((start, end))
}

/// Distinct addresses that count as in use, whatever block they are in.
fn in_use(world: &World) -> BTreeSet<(Fam, u128)> {
    let mut ips: Vec<&String> = Vec::new();
    for pod in &world.pods {
        if pod_holds_ips(pod) {
            ips.extend(&pod.ips);
        }
    }
    for ep in &world.endpoints {
        for (v4, v6) in &ep.addressing {
            ips.extend(v4.iter().chain(v6));
        }
    }
    for node in &world.nodes {
        ips.extend(node.addresses.iter().filter(|(kind, _)| *kind == "CiliumInternalIP").map(|(_, ip)| ip));
        ips.extend(node.health.iter().chain(&node.ingress).flatten());
    }
    ips.into_iter().filter_map(|ip| parse_addr(ip)).collect()
}

fn pod_holds_ips(pod: &Pod) -> bool {
    !pod.host_network && !matches!(pod.phase, Some("Succeeded" | "Failed"))
}

fn overlap(fam: Fam, a: (u128, u32), b: (u128, u32)) -> bool {
    a.0 <= last_of(fam, b.0, b.1) && b.0 <= last_of(fam, a.0, a.1)
}

fn prefix_text(fam: Fam, net: u128, len: u32) -> String {
    format!("{}/{len}", addr_text(fam, net))
}

/// A block of a pool family: (CIDR index, block index in it).
type BlockAt = (usize, u128);

/// One pool family as the restored operator sees it, worked out block by block.
struct FamilyView {
    fam: Fam,
    mask: u32,
    block_size: u128,
    /// Every CIDR in spec order: (spelling, network, length).
    cidrs: Vec<(String, u128, u32)>,
    /// The operator accepts the pool (every family): then every CIDR here is usable.
    accepted: bool,
    /// Per CIDR: the indices of the blocks the restored operator holds occupied.
    occupied: Vec<BTreeSet<u128>>,
    /// Blocks the nodes' last entry for the pool lists, in a usable CIDR: (owner CIDR, holders).
    held: BTreeMap<(u128, u32), (usize, BTreeSet<String>)>,
    /// Blocks the nodes' last entry lists outside every usable CIDR.
    orphans: BTreeSet<(u128, u32)>,
    /// Per CIDR: the valid reserved ranges, and how many are invalid.
    valid: Vec<Vec<(u128, u128)>>,
    invalid: Vec<usize>,
}

impl FamilyView {
    fn block_count(&self, cidr: usize) -> u128 {
        prefix_size(self.fam, self.cidrs[cidr].2) / self.block_size
    }

    fn block(&self, cidr: usize, index: u128) -> (u128, u128) {
        let start = self.cidrs[cidr].1 + index * self.block_size;
        (start, start + (self.block_size - 1))
    }

    /// Every block of `cidr` that `start..=end` touches, one by one.
    fn touched(&self, cidr: usize, start: u128, end: u128) -> BTreeSet<u128> {
        (0..self.block_count(cidr))
            .filter(|&i| {
                let (first, last) = self.block(cidr, i);
                first <= end && start <= last
            })
            .collect()
    }

    /// The CIDR a listed block belongs to: the first in spec order it overlaps, if usable.
    fn owner(&self, block: (u128, u32)) -> Option<usize> {
        let first = self.cidrs.iter().position(|&(_, net, len)| overlap(self.fam, (net, len), block))?;
        self.accepted.then_some(first)
    }

    fn reserved_indices(&self, cidr: usize) -> BTreeSet<u128> {
        self.valid[cidr].iter().flat_map(|&(start, end)| self.touched(cidr, start, end)).collect()
    }
}

/// Whether the operator's UpsertPool accepts the pool: no two CIDRs of a family overlap, no
/// IPv6 CIDR of more than 2^16 blocks.
fn accepted(pool: &Pool) -> bool {
    pool.families.iter().all(|family| {
        family.cidrs.iter().enumerate().all(|(i, c)| {
            let earlier_overlap = family.cidrs[..i].iter().any(|e| overlap(family.fam, (e.net, e.len), (c.net, c.len)));
            let too_many_blocks = family.fam == Fam::V6 && family.mask - c.len > 16;
            !(earlier_overlap || too_many_blocks)
        })
    })
}

/// The listed blocks of a node entry, of one family.
fn entry_blocks(blocks: &[String], fam: Fam) -> Vec<(u128, u32)> {
    blocks.iter().filter_map(|b| parse_cidr(b)).filter(|b| b.0 == fam).map(|(_, net, len)| (net, len)).collect()
}

fn family_view(world: &World, pool: &Pool, family: &PoolFamily, ranges_of: &BTreeMap<String, Vec<Range>>) -> FamilyView {
    let fam = family.fam;
    let cidrs: Vec<(String, u128, u32)> = family
        .cidrs
        .iter()
        .map(|c| {
            let (parsed_fam, net, len) = parse_cidr(&c.spelling).expect("generated CIDRs parse");
            assert_eq!(parsed_fam, fam);
            (c.spelling.clone(), net, len)
        })
        .collect();
    let mut view = FamilyView {
        fam,
        mask: family.mask,
        block_size: prefix_size(fam, family.mask),
        cidrs,
        accepted: accepted(pool),
        occupied: Vec::new(),
        held: BTreeMap::new(),
        orphans: BTreeSet::new(),
        valid: Vec::new(),
        invalid: Vec::new(),
    };
    view.occupied = vec![BTreeSet::new(); view.cidrs.len()];
    for (spelling, net, len) in view.cidrs.clone() {
        let ranges = ranges_of.get(&spelling).cloned().unwrap_or_default();
        let valid: Vec<(u128, u128)> = ranges.iter().filter_map(|r| valid_range(r, fam, net, len)).collect();
        view.invalid.push(ranges.len() - valid.len());
        view.valid.push(valid);
    }
    for node in &world.nodes {
        let entries: Vec<&Vec<String>> = node.allocations.iter().filter(|(name, _)| name == &pool.name).map(|(_, b)| b).collect();
        let Some(last) = entries.last() else { continue };
        // The restore replays AllocateToNode: every entry's blocks are occupied in turn (a block
        // whose blocks are all taken already is not the node's), then what the node owns outside
        // its last entry is released. Nodes are replayed each on their own and united.
        let mut mine: BTreeSet<BlockAt> = BTreeSet::new();
        let mut owned: Vec<((u128, u32), BTreeSet<BlockAt>)> = Vec::new();
        for block in entries.iter().flat_map(|e| entry_blocks(e, fam)) {
            let Some(cidr) = view.owner(block) else { continue };
            let touched: BTreeSet<BlockAt> =
                view.touched(cidr, block.0, last_of(fam, block.0, block.1)).into_iter().map(|i| (cidr, i)).collect();
            if owned.iter().any(|(b, _)| *b == block) || touched.is_subset(&mine) {
                continue;
            }
            mine.extend(touched.iter().copied());
            owned.push((block, touched));
        }
        let kept = entry_blocks(last, fam);
        for (block, touched) in &owned {
            if !kept.contains(block) {
                mine.retain(|t| !touched.contains(t));
            }
        }
        for (cidr, index) in mine {
            view.occupied[cidr].insert(index);
        }
        for block in kept {
            match view.owner(block) {
                Some(cidr) => {
                    view.held.entry(block).or_insert_with(|| (cidr, BTreeSet::new())).1.insert(node.name.clone());
                }
                None => {
                    view.orphans.insert(block);
                }
            }
        }
    }
    view
}

fn median(mut values: Vec<u128>) -> Option<f64> {
    values.sort();
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2] as f64),
        _ => Some((values[n / 2 - 1] + values[n / 2]) as f64 / 2.0),
    }
}

fn oracle(world: &World) -> Expected {
    let in_use = in_use(world);
    let mut expected = Expected::default();
    // What the input cannot show (docs/inputs.md): every pool read through v2alpha1 and no CRD
    // (the generator writes none; a v2 copy counts over its v2alpha1 one), no CiliumNodes, no Pods.
    let reservations_hidden = !world.pools.is_empty() && world.pools.iter().all(|p| p.dialect == Dialect::V2alpha1);
    let lacks =
        [("pools-through-v2alpha1", reservations_hidden), ("no-cilium-nodes", world.nodes.is_empty()), ("no-pods", world.pods.is_empty())];
    for (kind, _) in lacks.iter().filter(|(_, lacking)| *lacking) {
        expected.problem("input-incomplete", format!("Input/{kind}"), "info");
    }
    let pool_object = |name: &str| format!("CiliumPodIPPool/{name}");
    // Usable CIDRs of accepted pools, for overlapping-pools and pod-ip-unallocated.
    let mut live_cidrs: Vec<(String, Fam, u128, u32)> = Vec::new();
    for pool in &world.pools {
        if !accepted(pool) {
            expected.problem("invalid-pool", pool_object(&pool.name), "error");
        }
        for family in &pool.families {
            let fam = family.fam;
            // Reservations per CIDR, as written: CFP `reservedRange`, upstream `pool[]` entries
            // matched to `cidrs` by string equality.
            let mut ranges_of: BTreeMap<String, Vec<Range>> = BTreeMap::new();
            if pool.dialect != Dialect::V2alpha1 {
                for cidr in &family.cidrs {
                    ranges_of.entry(cidr.spelling.clone()).or_default().extend(cidr.ranges.iter().cloned());
                }
                for (text, ranges) in &family.stray_entries {
                    match ranges_of.get_mut(text) {
                        Some(list) => list.extend(ranges.iter().cloned()),
                        None if !ranges.is_empty() => expected.problem("invalid-reserved-range", pool_object(&pool.name), "error"),
                        None => {}
                    }
                }
            }
            let view = family_view(world, pool, family, &ranges_of);
            for (i, &(_, net, len)) in view.cidrs.iter().enumerate() {
                let earlier_overlap = view.cidrs[..i].iter().any(|&(_, n, l)| overlap(fam, (n, l), (net, len)));
                if fam == Fam::V6 && !earlier_overlap && view.mask - len > 16 {
                    expected.problem("ipv6-too-many-blocks", pool_object(&pool.name), "error");
                }
            }
            let usable_cidrs: Vec<usize> = if view.accepted { (0..view.cidrs.len()).collect() } else { Vec::new() };

            let mut figures = Figures::default();
            let mut reserved: BTreeSet<u128> = BTreeSet::new();
            let (mut capacity, mut allocated_count, mut withheld_count) = (0u128, 0u128, 0u128);
            for &i in &usable_cidrs {
                let (spelling, _, _) = &view.cidrs[i];
                if view.invalid[i] > 0 {
                    expected.problem("invalid-reserved-range", pool_object(&pool.name), "error");
                }
                for &(start, end) in &view.valid[i] {
                    let mut a = start;
                    loop {
                        reserved.insert(a);
                        if a == end {
                            break;
                        }
                        a += 1;
                    }
                    let touched = view.touched(i, start, end).len() as u128;
                    if touched * view.block_size > 2 * (end - start + 1) {
                        expected.problem("reservation-withholds-more", pool_object(&pool.name), "info");
                    }
                    let over_held =
                        view.held.iter().any(|(&(net, len), &(owner, _))| owner == i && net <= end && start <= last_of(fam, net, len));
                    if over_held {
                        expected.problem("reservation-over-allocated", pool_object(&pool.name), "warning");
                    }
                }
                let reserved_idx = view.reserved_indices(i);
                let (mut cap, mut alloc, mut withheld) = (0u128, 0u128, 0u128);
                for index in 0..view.block_count(i) {
                    cap += 1;
                    if view.occupied[i].contains(&index) {
                        alloc += 1;
                    } else if reserved_idx.contains(&index) {
                        withheld += 1;
                    } else if figures.next_block.is_none() {
                        figures.next_block = Some(prefix_text(fam, view.block(i, index).0, view.mask));
                    }
                }
                if reserved_idx.len() as u128 == cap && alloc == 0 {
                    expected.problem("cidr-drained", pool_object(&pool.name), "info");
                }
                capacity += cap;
                allocated_count += alloc;
                withheld_count += withheld;
                figures.cidrs.insert(
                    spelling.clone(),
                    BTreeMap::from([
                        ("capacityBlocks", cap),
                        ("allocatedBlocks", alloc),
                        ("withheldBlocks", withheld),
                        ("freeBlocks", cap - alloc - withheld),
                    ]),
                );
                live_cidrs.push((pool.name.clone(), fam, view.cidrs[i].1, view.cidrs[i].2));
            }
            // Nested or disjoint: the addresses of the CIDRs no other CIDR of the family contains.
            let total: u128 = view
                .cidrs
                .iter()
                .enumerate()
                .filter(|&(i, &(_, net, len))| {
                    !view.cidrs.iter().enumerate().any(|(j, &(_, n, l))| {
                        let inside = n <= net && last_of(fam, net, len) <= last_of(fam, n, l);
                        inside && ((n, l) != (net, len) || j < i)
                    })
                })
                .map(|(_, &(_, _, len))| prefix_size(fam, len))
                .sum();
            let usable = usable_per_block(view.block_size, pool.allow_first, pool.allow_last);
            let used = in_use
                .iter()
                .filter(|&&(ip_fam, ip)| ip_fam == fam && view.held.keys().any(|&(net, len)| contains(fam, net, len, ip)))
                .count() as u128;
            let free = capacity - allocated_count - withheld_count;
            if !view.orphans.is_empty() {
                expected.problem("orphan-block", pool_object(&pool.name), "warning");
            }
            let allocatable = allocated_count + free;
            if allocatable > 0 && free == 0 {
                expected.problem("pool-nearly-exhausted", pool_object(&pool.name), "error");
            } else if allocatable > 0 && 10 * allocated_count >= 9 * allocatable {
                expected.problem("pool-nearly-exhausted", pool_object(&pool.name), "warning");
            }
            let mut per_node: BTreeMap<&str, u128> = BTreeMap::new();
            for (_, holders) in view.held.values() {
                for node in holders {
                    *per_node.entry(node).or_default() += 1;
                }
            }
            let median_blocks = median(per_node.values().copied().collect());
            figures.runway = free / median_blocks.map_or(1, |m| (m.ceil() as u128).max(1));
            figures.reservations_known = !reservations_hidden;
            figures.family = BTreeMap::from([
                ("totalAddresses", total),
                ("capacityBlocks", capacity),
                ("allocatedBlocks", allocated_count),
                ("withheldBlocks", withheld_count),
                ("freeBlocks", free),
                ("orphanBlocks", view.orphans.len() as u128),
                ("reservedAddresses", reserved.len() as u128),
                ("allocatedAddresses", allocated_count * usable),
                ("usedAddresses", used),
                ("idleAddresses", (allocated_count * usable).saturating_sub(used)),
                ("freeAddresses", free * usable),
            ]);
            expected.figures.insert((pool.name.clone(), fam.name()), figures);
        }
    }
    cluster_problems(world, &live_cidrs, &mut expected);
    expected.nodes = node_rows(world, &in_use);
    expected
}

/// The problems of nodes and pods, and of pools against each other.
fn cluster_problems(world: &World, live_cidrs: &[(String, Fam, u128, u32)], expected: &mut Expected) {
    let pool_names: BTreeSet<&str> = world.pools.iter().map(|p| p.name.as_str()).collect();
    // Every parsed block any node lists (any pool, any entry), with the nodes listing it.
    let mut listed: BTreeMap<(Fam, u128, u32), BTreeSet<&str>> = BTreeMap::new();
    for node in &world.nodes {
        let object = format!("CiliumNode/{}", node.name);
        let mut entries_per_pool: BTreeMap<&str, usize> = BTreeMap::new();
        for (pool, blocks) in &node.allocations {
            *entries_per_pool.entry(pool).or_default() += 1;
            for block in blocks {
                match parse_cidr(block) {
                    None => expected.problem("invalid-node-block", object.clone(), "error"),
                    Some(parsed) => {
                        listed.entry(parsed).or_default().insert(&node.name);
                        if !pool_names.contains(pool.as_str()) {
                            expected.problem("orphan-block", object.clone(), "warning");
                        }
                    }
                }
            }
        }
        if entries_per_pool.values().any(|&n| n > 1) {
            expected.problem("pool-split-entries", object.clone(), "warning");
        }
        if node.requested.iter().any(|(pool, _, _)| !pool_names.contains(pool.as_str())) {
            expected.problem("unknown-pool-requested", object.clone(), "warning");
        }
    }
    for (&(fam, net, len), nodes) in &listed {
        if nodes.len() > 1 {
            expected.problem("block-multiple-owners", format!("block/{}", prefix_text(fam, net, len)), "error");
        }
    }
    for (i, (a_pool, a_fam, a_net, a_len)) in live_cidrs.iter().enumerate() {
        for (b_pool, b_fam, b_net, b_len) in &live_cidrs[i + 1..] {
            if a_pool != b_pool && a_fam == b_fam && overlap(*a_fam, (*a_net, *a_len), (*b_net, *b_len)) {
                let first = a_pool.min(b_pool);
                expected.problem("overlapping-pools", format!("CiliumPodIPPool/{first}"), "error");
            }
        }
    }
    for pod in world.pods.iter().filter(|p| pod_holds_ips(p)) {
        let object = format!("Pod/{}/{}", pod.namespace, pod.name);
        for (fam, ip) in pod.ips.iter().filter_map(|ip| parse_addr(ip)) {
            let most_specific =
                listed.iter().filter(|((f, net, len), _)| *f == fam && contains(*f, *net, *len, ip)).max_by_key(|((_, _, len), _)| *len);
            match most_specific {
                Some((_, holders)) if !holders.contains(pod.node.as_str()) => {
                    expected.problem("pod-ip-foreign-block", object.clone(), "error")
                }
                Some(_) => {}
                None => {
                    if live_cidrs.iter().any(|&(_, f, net, len)| f == fam && contains(f, net, len, ip)) {
                        expected.problem("pod-ip-unallocated", object.clone(), "warning");
                    }
                }
            }
        }
    }
}

/// `nodes[]`: per node, the pools it lists or requests (in that order, once each), the blocks
/// of all its entries for the pool, the distinct in-use addresses in them and what it requests.
fn node_rows(world: &World, in_use: &BTreeSet<(Fam, u128)>) -> BTreeMap<String, Vec<NodePoolRow>> {
    let mut rows = BTreeMap::new();
    for node in &world.nodes {
        let mut names: Vec<&str> = Vec::new();
        for name in node.allocations.iter().map(|(p, _)| p.as_str()).chain(node.requested.iter().map(|(p, _, _)| p.as_str())) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        let pools = names
            .into_iter()
            .map(|name| {
                let blocks: Vec<String> = node.allocations.iter().filter(|(p, _)| p == name).flat_map(|(_, b)| b.iter().cloned()).collect();
                let parsed: Vec<(Fam, u128, u32)> = blocks.iter().filter_map(|b| parse_cidr(b)).collect();
                let used =
                    in_use.iter().filter(|&&(fam, ip)| parsed.iter().any(|&(f, net, len)| f == fam && contains(f, net, len, ip))).count()
                        as u128;
                let needed = node.requested.iter().find(|(p, _, _)| p == name).map_or((0, 0), |&(_, v4, v6)| (v4, v6));
                NodePoolRow { pool: name.to_string(), blocks, used, needed }
            })
            .collect();
        rows.insert(node.name.clone(), pools);
    }
    rows
}

// ---------------------------------------------------------------------------------------------
// Writing a snapshot in varying layouts, running the binary, comparing.

fn yaml(value: &Value) -> String {
    serde_saphyr::to_string(value).expect("YAML serialization")
}

fn without_kind(mut obj: Value) -> Value {
    obj.as_object_mut().expect("objects are maps").remove("kind");
    obj
}

/// Spreads the objects over files of every supported shape, some nested in directories.
/// Returns the files written, and the shapes used (for the coverage tally).
fn write_snapshot(rng: &mut Rng, mut objects: Vec<Value>, dir: &Path, shapes: &mut BTreeSet<&'static str>) -> Vec<PathBuf> {
    rng.shuffle(&mut objects);
    let group_count = rng.between(1, 4) as usize;
    let mut groups: Vec<Vec<Value>> = vec![Vec::new(); group_count];
    for obj in objects {
        groups[rng.below(group_count as u64) as usize].push(obj);
    }
    let mut files: Vec<(PathBuf, String)> = Vec::new();
    for (g, group) in groups.into_iter().enumerate().filter(|(_, g)| !g.is_empty()) {
        let depth = rng.below(3) as usize;
        let mut sub = PathBuf::new();
        for _ in 0..depth {
            sub.push(rng.pick(&["sysdump", "k8s", "cilium", "nested"]));
        }
        if depth > 0 {
            shapes.insert("layout: nested directories");
        }
        let base = sub.join(format!("group-{g}"));
        let shape = rng.below(5);
        shapes.insert(
            [
                "layout: kind List in YAML",
                "layout: multi-document YAML",
                "layout: kind List in JSON",
                "layout: typed *List",
                "layout: one object per file",
            ][shape as usize],
        );
        match shape {
            0 => {
                let list = json!({"apiVersion": "v1", "kind": "List", "items": group});
                files.push((base.with_extension(rng.pick(&["yaml", "yml"])), yaml(&list)));
            }
            1 => {
                let docs: Vec<String> = group.iter().map(yaml).collect();
                let lead = if rng.percent(50) { "---\n" } else { "" };
                files.push((base.with_extension("yaml"), format!("{lead}{}", docs.join("---\n"))));
            }
            2 => {
                let list = json!({"apiVersion": "v1", "kind": "List", "items": group});
                files.push((base.with_extension("json"), serde_json::to_string_pretty(&list).unwrap()));
            }
            3 => {
                let mut by_kind: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                for obj in group {
                    let kind = obj["kind"].as_str().unwrap().to_string();
                    by_kind.entry(kind).or_default().push(obj);
                }
                for (kind, items) in by_kind {
                    let api_version = items[0]["apiVersion"].clone();
                    let drop_kind = rng.percent(50);
                    let items: Vec<Value> = items.into_iter().map(|o| if drop_kind { without_kind(o) } else { o }).collect();
                    let list = json!({"apiVersion": api_version, "kind": format!("{kind}List"), "items": items});
                    let path = sub.join(format!("group-{g}-{}", kind.to_lowercase()));
                    if rng.percent(50) {
                        files.push((path.with_extension("json"), serde_json::to_string(&list).unwrap()));
                    } else {
                        files.push((path.with_extension("yaml"), yaml(&list)));
                    }
                }
            }
            _ => {
                for (i, obj) in group.iter().enumerate() {
                    let path = sub.join(format!("group-{g}-{i}"));
                    if rng.percent(50) {
                        files.push((path.with_extension("json"), serde_json::to_string(obj).unwrap()));
                    } else {
                        files.push((path.with_extension("yml"), yaml(obj)));
                    }
                }
            }
        }
    }
    files
        .into_iter()
        .map(|(relative, text)| {
            let path = dir.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        })
        .collect()
}

/// A count from the JSON contract: an integer when it fits in u64, else a decimal string.
fn count(value: &Value) -> Result<u128, String> {
    match value {
        Value::Number(n) => n.as_u64().map(u128::from).ok_or_else(|| format!("{n} is not a u64")),
        Value::String(s) => match s.parse::<u128>() {
            Ok(n) if n > u128::from(u64::MAX) => Ok(n),
            Ok(_) => Err(format!("{s:?} fits in u64 and must be a JSON integer")),
            Err(_) => Err(format!("{s:?} is not a decimal count")),
        },
        other => Err(format!("{other} is not a count")),
    }
}

fn mismatch(what: String, value: &Value, want: u128) -> Option<String> {
    match count(value) {
        Ok(got) if got == want => None,
        Ok(got) => Some(format!("{what}: expected {want}, got {got}")),
        Err(e) => Some(format!("{what}: expected {want}, got {e}")),
    }
}

fn compare(expected: &Expected, actual: &Value, runway: &BTreeMap<(String, String), Option<u128>>) -> Vec<String> {
    let mut differences = Vec::new();
    let mut actual_rows: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for pool in actual["pools"].as_array().into_iter().flatten() {
        for family in pool["families"].as_array().into_iter().flatten() {
            let key = (pool["name"].as_str().unwrap_or("?").to_string(), family["family"].as_str().unwrap_or("?").to_string());
            actual_rows.insert(key, family);
        }
    }
    let expected_keys: BTreeSet<(String, String)> = expected.figures.keys().map(|(p, f)| (p.clone(), f.to_string())).collect();
    let actual_keys: BTreeSet<(String, String)> = actual_rows.keys().cloned().collect();
    if expected_keys != actual_keys {
        differences.push(format!("pool/family rows: expected {expected_keys:?}, got {actual_keys:?}"));
    }
    for ((pool, fam), figures) in &expected.figures {
        let key = (pool.clone(), fam.to_string());
        let Some(row) = actual_rows.get(&key) else { continue };
        let expect = |what: String, got: &Value, field: &str, want: u128| {
            if figures.reservations_known || !RESERVATION_DEPENDENT.contains(&field) {
                mismatch(what, got, want)
            } else {
                (!got.is_null()).then(|| format!("{what}: expected null (reservations not visible), got {got}"))
            }
        };
        for (field, &want) in &figures.family {
            differences.extend(expect(format!("{pool}/{fam} {field}"), &row[*field], field, want));
        }
        let want_next = match &figures.next_block {
            Some(block) if figures.reservations_known => json!(block),
            _ => Value::Null,
        };
        if row["nextBlock"] != want_next {
            differences.push(format!("{pool}/{fam} nextBlock: expected {want_next}, got {}", row["nextBlock"]));
        }
        // The library keeps the runway the visible reservations give (an upper bound); the views
        // show it as unknown from reservations_known.
        if runway.get(&key) != Some(&Some(figures.runway)) {
            differences.push(format!("{pool}/{fam} runway: expected {} node(s), the library says {:?}", figures.runway, runway.get(&key)));
        }
        let actual_cidrs: BTreeMap<&str, &Value> =
            row["cidrs"].as_array().into_iter().flatten().map(|c| (c["cidr"].as_str().unwrap_or("?"), c)).collect();
        let want_cidrs: BTreeSet<&str> = figures.cidrs.keys().map(String::as_str).collect();
        if want_cidrs != actual_cidrs.keys().copied().collect() {
            differences.push(format!("{pool}/{fam} cidrs: expected {want_cidrs:?}, got {:?}", actual_cidrs.keys()));
        }
        for (cidr, fields) in &figures.cidrs {
            let Some(actual_cidr) = actual_cidrs.get(cidr.as_str()) else { continue };
            for (field, &want) in fields {
                differences.extend(expect(format!("{pool}/{fam} {cidr} {field}"), &actual_cidr[*field], field, want));
            }
        }
    }
    let actual_problems: BTreeSet<(String, String, String)> = actual["problems"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            (
                p["kind"].as_str().unwrap_or("?").to_string(),
                p["object"].as_str().unwrap_or("?").to_string(),
                p["severity"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let want_problems: BTreeSet<(String, String, String)> =
        expected.problems.iter().map(|(k, o, s)| (k.clone(), o.clone(), s.to_string())).collect();
    for missing in want_problems.difference(&actual_problems) {
        differences.push(format!("problem missing: {missing:?}"));
    }
    for extra in actual_problems.difference(&want_problems) {
        differences.push(format!("problem not expected: {extra:?}"));
    }
    let actual_nodes: BTreeMap<&str, &Value> =
        actual["nodes"].as_array().into_iter().flatten().map(|n| (n["name"].as_str().unwrap_or("?"), n)).collect();
    if actual_nodes.keys().copied().collect::<BTreeSet<_>>() != expected.nodes.keys().map(String::as_str).collect() {
        differences.push(format!("nodes: expected {:?}, got {:?}", expected.nodes.keys(), actual_nodes.keys()));
    }
    for (name, rows) in &expected.nodes {
        let Some(node) = actual_nodes.get(name.as_str()) else { continue };
        let got: Vec<Value> = node["pools"].as_array().cloned().unwrap_or_default();
        let got_pools: Vec<&str> = got.iter().map(|p| p["pool"].as_str().unwrap_or("?")).collect();
        let want_pools: Vec<&str> = rows.iter().map(|r| r.pool.as_str()).collect();
        if got_pools != want_pools {
            differences.push(format!("node {name} pools: expected {want_pools:?}, got {got_pools:?}"));
            continue;
        }
        for (row, got) in rows.iter().zip(&got) {
            let at = format!("node {name} pool {}", row.pool);
            let blocks: Vec<&str> = got["blocks"].as_array().into_iter().flatten().map(|b| b.as_str().unwrap_or("?")).collect();
            if blocks != row.blocks.iter().map(String::as_str).collect::<Vec<_>>() {
                differences.push(format!("{at} blocks: expected {:?}, got {blocks:?}", row.blocks));
            }
            differences.extend(mismatch(format!("{at} usedAddresses"), &got["usedAddresses"], row.used));
            differences.extend(mismatch(format!("{at} neededAddresses.ipv4"), &got["neededAddresses"]["ipv4"], row.needed.0.into()));
            differences.extend(mismatch(format!("{at} neededAddresses.ipv6"), &got["neededAddresses"]["ipv6"], row.needed.1.into()));
        }
    }
    differences
}

/// The runway of every pool family as the library computes it (it is not in the JSON).
fn library_runway(dir: &Path) -> BTreeMap<(String, String), Option<u128>> {
    let snapshot = ciliumpool::files::snapshot(
        &[dir.display().to_string()],
        None,
        false,
        ciliumpool::files::Pools::Read,
        ciliumpool::files::Limits::default(),
    )
    .expect("the snapshot loads");
    let report = ciliumpool::allocator::analyze(&snapshot);
    report
        .pools
        .iter()
        .flat_map(|p| {
            p.families.iter().map(move |f| ((p.name.clone(), f.family.name().to_string()), f.runway_nodes.and_then(|r| r.to_u128())))
        })
        .collect()
}

/// Runs one seeded case; on a difference, keeps the snapshot directory and describes it.
fn run_case(case: u64, features: &mut BTreeSet<&'static str>) -> Result<(), String> {
    let mut generator = Generator {
        rng: Rng(0x0C11_1DB0_0700 ^ case),
        v6_like_v4: case % 2 == 1,
        used_slots: BTreeSet::new(),
        held: BTreeMap::new(),
        used_ips: Vec::new(),
        big_regions: 0,
    };
    let world = generator.world();
    let expected = oracle(&world);
    let mut layout_rng = Rng(case.wrapping_mul(31).wrapping_add(7));
    let dir = tempfile::Builder::new().prefix(&format!("oracle-case-{case}-")).tempdir().unwrap();
    let files = write_snapshot(&mut layout_rng, objects(&world), dir.path(), &mut *features);
    features.extend(world_features(&world, &expected));
    let runway = library_runway(dir.path());

    let mut cmd = cargo_bin_cmd!("kubectl-ciliumpool");
    cmd.args(["usage", "-o", "json"]);
    if layout_rng.percent(15) {
        // One file arrives on stdin instead (`-f -`), the way `kubectl get ... | ` feeds it.
        let piped = layout_rng.pick(&files);
        cmd.arg("-f").arg("-").write_stdin(std::fs::read(piped).unwrap());
        std::fs::remove_file(piped).unwrap();
        features.insert("layout: one file on stdin");
    }
    let files: Vec<&PathBuf> = files.iter().filter(|f| f.exists()).collect();
    if layout_rng.percent(25) {
        features.insert("layout: one -f per file");
        for file in &files {
            cmd.arg("-f").arg(file);
        }
    } else {
        cmd.arg("-f").arg(dir.path());
    }
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let differences = if !output.status.success() {
        vec![format!("exit {:?}: {}", output.status.code(), String::from_utf8_lossy(&output.stderr))]
    } else {
        match serde_json::from_str::<Value>(&stdout) {
            Ok(actual) => compare(&expected, &actual, &runway),
            Err(e) => vec![format!("output is not JSON ({e}): {stdout}")],
        }
    };
    if differences.is_empty() {
        return Ok(());
    }
    let kept = dir.keep();
    Err(format!("case {case} (files kept in {}):\n  {}", kept.display(), differences.join("\n  ")))
}

/// What a case exercises, so that a generator change cannot quietly make the test vacuous.
fn world_features(world: &World, expected: &Expected) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    let listed: Vec<(&str, &str, Held)> = world
        .nodes
        .iter()
        .flat_map(|n| {
            n.allocations
                .iter()
                .flat_map(move |(pool, blocks)| blocks.iter().filter_map(move |b| Some((n.name.as_str(), pool.as_str(), parse_cidr(b)?))))
        })
        .collect();
    let in_listed =
        |ip: &str| parse_addr(ip).is_some_and(|(fam, a)| listed.iter().any(|&(_, _, (f, net, len))| f == fam && contains(f, net, len, a)));
    for pool in &world.pools {
        seen.insert(match pool.dialect {
            Dialect::V2alpha1 => "pool: v2alpha1",
            Dialect::Upstream => "pool: upstream v2",
            Dialect::Cfp => "pool: CFP v2",
        });
        if pool.v2alpha1_copy {
            seen.insert("pool: v2alpha1 copy of a v2 pool");
        }
        if pool.families.len() == 1 {
            seen.insert("pool: single family");
        }
        if pool.allow_first {
            seen.insert("pool: allowFirstIP");
        }
        if pool.allow_last {
            seen.insert("pool: allowLastIP");
        }
        for family in &pool.families {
            if prefix_size(family.fam, family.mask) <= 2 {
                seen.insert("pool: blocks of one or two addresses");
            }
            if !family.stray_entries.is_empty() {
                seen.insert("reservation: pool[].cidr not string-equal to a cidrs entry");
            }
            for cidr in &family.cidrs {
                if cidr.spelling != format!("{}/{}", addr_text(family.fam, cidr.net), cidr.len) {
                    seen.insert("pool: non-canonical CIDR spelling");
                }
                let last = last_of(family.fam, cidr.net, cidr.len);
                if last == family.fam.max_addr() {
                    seen.insert("pool: CIDR at the top of the address space");
                }
                let valid: Vec<(u128, u128)> = cidr.ranges.iter().filter_map(|r| valid_range(r, family.fam, cidr.net, cidr.len)).collect();
                for (i, a) in valid.iter().enumerate() {
                    if valid[..i].iter().any(|b| a.0 <= b.1 && b.0 <= a.1) {
                        seen.insert("reservation: overlapping ranges in one CIDR");
                    }
                }
                for range in &cidr.ranges {
                    match valid_range(range, family.fam, cidr.net, cidr.len) {
                        None => seen.insert("reservation: invalid"),
                        Some((start, end)) if start == cidr.net && end == last => seen.insert("reservation: whole CIDR"),
                        Some((start, end)) => {
                            let block = prefix_size(family.fam, family.mask);
                            if start % block != 0 || (end + 1) % block != 0 {
                                seen.insert("reservation: part of a block");
                            }
                            let over_allocated = listed.iter().any(|&(_, p, (f, net, _))| {
                                p == pool.name && f == family.fam && net <= end && start <= last_of(f, net, family.mask)
                            });
                            if over_allocated {
                                seen.insert("reservation: over an allocated block");
                            }
                            seen.insert("reservation: valid")
                        }
                    };
                }
            }
        }
    }
    for (i, a) in listed.iter().enumerate() {
        if listed[..i].iter().any(|b| b.0 != a.0 && b.1 == a.1 && b.2 == a.2) {
            seen.insert("node: block listed by two nodes");
        }
    }
    if listed.iter().any(|(_, pool, _)| pool.starts_with("ghost-")) {
        seen.insert("node: blocks under a pool that does not exist");
    }
    let cidrs = world_cidrs(&world.pools);
    let in_a_cidr = |&(f, net, _): &Held| cidrs.iter().any(|&(cf, cnet, clen)| cf == f && contains(cf, cnet, clen, net));
    if listed.iter().any(|(_, pool, block)| pool.starts_with("ghost-") && in_a_cidr(block)) {
        seen.insert("node: ghost block inside a live pool's CIDR");
    }
    let (v4, v6): (Vec<&Held>, Vec<&Held>) = cidrs.iter().partition(|c| c.0 == Fam::V4);
    let same_integers = |a: &Held, b: &Held| a.1 <= last_of(b.0, b.1, b.2) && b.1 <= last_of(a.0, a.1, a.2);
    if v4.iter().any(|a| v6.iter().any(|b| same_integers(a, b))) {
        seen.insert("pool: IPv6 CIDR over the same integers as an IPv4 CIDR");
    }
    if world.pools.iter().any(|p| p.name == "overlap") {
        seen.insert("pool: overlapping another pool");
    }
    if listed.iter().any(|(_, _, b)| b.0 == Fam::V4) && listed.iter().any(|(_, _, b)| b.0 == Fam::V6) {
        seen.insert("node: IPv4 and IPv6 blocks");
    }
    for pool in &world.pools {
        if !accepted(pool) {
            seen.insert("pool: rejected by the operator");
        }
        for family in &pool.families {
            for (i, c) in family.cidrs.iter().enumerate() {
                let bits = family.mask - c.len;
                if bits > 8 {
                    seen.insert("pool: CIDR of more than 2^8 blocks");
                }
                if family.fam == Fam::V6 && bits == 16 {
                    seen.insert("pool: IPv6 CIDR of exactly 2^16 blocks");
                }
                if family.fam == Fam::V6 && bits > 16 {
                    seen.insert("pool: IPv6 CIDR of more than 2^16 blocks");
                }
                if family.cidrs[..i].iter().any(|e| overlap(family.fam, (e.net, e.len), (c.net, c.len))) {
                    seen.insert("pool: overlapping CIDRs inside one pool");
                }
            }
        }
    }
    for node in &world.nodes {
        let pools: Vec<&str> = node.allocations.iter().map(|(p, _)| p.as_str()).collect();
        if pools.iter().enumerate().any(|(i, p)| pools[..i].contains(p)) {
            seen.insert("node: pool in two allocated[] entries");
        }
        for (pool, blocks) in &node.allocations {
            let Some(family_of) = world.pools.iter().find(|p| &p.name == pool) else { continue };
            for block in blocks {
                let Some((fam, net, len)) = parse_cidr(block) else {
                    seen.insert("node: block that is not a CIDR");
                    continue;
                };
                let Some(family) = family_of.families.iter().find(|f| f.fam == fam) else { continue };
                let in_cidr = family.cidrs.iter().any(|c| overlap(fam, (c.net, c.len), (net, len)));
                if in_cidr && len > family.mask {
                    seen.insert("node: block longer than maskSize");
                }
                if in_cidr && len < family.mask && family.cidrs.iter().all(|c| c.len <= len) {
                    seen.insert("node: block shorter than maskSize");
                }
                if family.cidrs.iter().any(|c| len < c.len && contains(fam, net, len, c.net)) {
                    seen.insert("node: block containing a pool CIDR");
                }
            }
        }
    }
    for (kind, _, _) in &expected.problems {
        seen.insert(
            PROBLEM_KINDS.iter().find(|(k, _)| k == kind).map_or("problem: a kind the oracle does not list", |(_, feature)| feature),
        );
    }
    for figures in expected.figures.values() {
        if figures.family.values().chain(figures.cidrs.values().flat_map(|c| c.values())).any(|&v| v > u128::from(u64::MAX)) {
            seen.insert("figure: a count beyond u64 (a JSON string)");
        }
        if figures.next_block.is_none() && figures.family["capacityBlocks"] > 0 {
            seen.insert("figure: no next block");
        }
        for (field, feature) in [
            ("orphanBlocks", "figure: orphan blocks"),
            ("withheldBlocks", "figure: withheld blocks"),
            ("usedAddresses", "figure: used addresses"),
            ("reservedAddresses", "figure: reserved addresses"),
        ] {
            if figures.family[field] > 0 {
                seen.insert(feature);
            }
        }
        if figures.family["usedAddresses"] > figures.family["allocatedAddresses"] {
            seen.insert("figure: used above allocated (idle floored at 0)");
        }
    }
    for pod in &world.pods {
        let inside = pod.ips.iter().any(|ip| in_listed(ip));
        if inside && pod.host_network {
            seen.insert("pod: hostNetwork inside a block");
        }
        if inside && matches!(pod.phase, Some("Succeeded" | "Failed")) {
            seen.insert("pod: completed inside a block");
        }
    }
    for node in &world.nodes {
        if node.addresses.iter().any(|(kind, ip)| *kind == "InternalIP" && in_listed(ip)) {
            seen.insert("node: InternalIP inside a block");
        }
        let foreign = node
            .addresses
            .iter()
            .filter(|(kind, _)| *kind == "CiliumInternalIP")
            .map(|(_, ip)| ip)
            .chain(node.health.iter().flatten())
            .any(|ip| {
                parse_addr(ip).is_some_and(|(fam, a)| {
                    listed.iter().any(|&(n, _, (f, net, len))| n != node.name && f == fam && contains(f, net, len, a))
                })
            });
        if foreign {
            seen.insert("node: infrastructure IP in another node's block");
        }
    }
    if world.endpoints.iter().any(|ep| ep.addressing.iter().any(|(v4, v6)| v4.iter().chain(v6).any(|ip| in_listed(ip)))) {
        seen.insert("endpoint: inside a block");
    }
    seen
}

#[test]
fn usage_json_agrees_with_a_naive_reading_of_domain_section_6() {
    let single = std::env::var("ORACLE_CASE").ok().map(|one| one.parse::<u64>().expect("ORACLE_CASE is a case number"));
    let cases: Vec<u64> = single.map_or_else(|| (0..CASES).collect(), |one| vec![one]);
    let mut tally: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in cases {
        let mut features = BTreeSet::new();
        if let Err(failure) = run_case(case, &mut features) {
            failures.push(failure);
        }
        for feature in features {
            *tally.entry(feature).or_default() += 1;
        }
    }
    assert!(failures.is_empty(), "{} of the cases disagree:\n{}", failures.len(), failures.join("\n"));
    if single.is_none() {
        println!("cases exercising each feature: {tally:#?}");
        let rare: Vec<_> = ALL_FEATURES.iter().filter(|f| tally.get(*f).copied().unwrap_or(0) < 3).collect();
        assert!(rare.is_empty(), "the generator no longer exercises (in at least 3 cases): {rare:?}");
    }
}

/// Every problem kind the generator can make the plugin raise, and its feature name.
const PROBLEM_KINDS: &[(&str, &str)] = &[
    ("invalid-pool", "problem: invalid-pool"),
    ("ipv6-too-many-blocks", "problem: ipv6-too-many-blocks"),
    ("invalid-reserved-range", "problem: invalid-reserved-range"),
    ("pool-split-entries", "problem: pool-split-entries"),
    ("orphan-block", "problem: orphan-block"),
    ("invalid-node-block", "problem: invalid-node-block"),
    ("unknown-pool-requested", "problem: unknown-pool-requested"),
    ("block-multiple-owners", "problem: block-multiple-owners"),
    ("overlapping-pools", "problem: overlapping-pools"),
    ("reservation-over-allocated", "problem: reservation-over-allocated"),
    ("reservation-withholds-more", "problem: reservation-withholds-more"),
    ("cidr-drained", "problem: cidr-drained"),
    ("pool-nearly-exhausted", "problem: pool-nearly-exhausted"),
    ("pod-ip-foreign-block", "problem: pod-ip-foreign-block"),
    ("pod-ip-unallocated", "problem: pod-ip-unallocated"),
];

const ALL_FEATURES: &[&str] = &[
    "pool: rejected by the operator",
    "pool: CIDR of more than 2^8 blocks",
    "pool: IPv6 CIDR of exactly 2^16 blocks",
    "pool: IPv6 CIDR of more than 2^16 blocks",
    "pool: overlapping CIDRs inside one pool",
    "node: pool in two allocated[] entries",
    "node: block that is not a CIDR",
    "node: block longer than maskSize",
    "node: block shorter than maskSize",
    "node: block containing a pool CIDR",
    "figure: a count beyond u64 (a JSON string)",
    "figure: no next block",
    "problem: invalid-pool",
    "problem: ipv6-too-many-blocks",
    "problem: invalid-reserved-range",
    "problem: pool-split-entries",
    "problem: orphan-block",
    "problem: invalid-node-block",
    "problem: unknown-pool-requested",
    "problem: block-multiple-owners",
    "problem: overlapping-pools",
    "problem: reservation-over-allocated",
    "problem: reservation-withholds-more",
    "problem: cidr-drained",
    "problem: pool-nearly-exhausted",
    "problem: pod-ip-foreign-block",
    "problem: pod-ip-unallocated",
    "layout: kind List in YAML",
    "layout: multi-document YAML",
    "layout: kind List in JSON",
    "layout: typed *List",
    "layout: one object per file",
    "layout: nested directories",
    "layout: one -f per file",
    "layout: one file on stdin",
    "pool: v2alpha1",
    "pool: upstream v2",
    "pool: CFP v2",
    "pool: v2alpha1 copy of a v2 pool",
    "pool: single family",
    "pool: allowFirstIP",
    "pool: allowLastIP",
    "pool: blocks of one or two addresses",
    "pool: non-canonical CIDR spelling",
    "reservation: pool[].cidr not string-equal to a cidrs entry",
    "reservation: invalid",
    "reservation: whole CIDR",
    "reservation: part of a block",
    "reservation: over an allocated block",
    "reservation: valid",
    "node: block listed by two nodes",
    "node: blocks under a pool that does not exist",
    "node: IPv4 and IPv6 blocks",
    "node: InternalIP inside a block",
    "node: infrastructure IP in another node's block",
    "figure: orphan blocks",
    "figure: withheld blocks",
    "figure: used addresses",
    "figure: reserved addresses",
    "figure: used above allocated (idle floored at 0)",
    "pod: hostNetwork inside a block",
    "pod: completed inside a block",
    "endpoint: inside a block",
    "reservation: overlapping ranges in one CIDR",
    "node: ghost block inside a live pool's CIDR",
    "pool: overlapping another pool",
    "pool: CIDR at the top of the address space",
    "pool: IPv6 CIDR over the same integers as an IPv4 CIDR",
];
