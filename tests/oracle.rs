//! `usage -o json` against an independent, deliberately naive reading of docs/design/cilium.md#figures.
//!
//! The pools here are small enough (IPv4 /20../26, IPv6 /116../128) that the oracle can list
//! every block and every address with plain loops and sets: slow, but obviously right. The
//! binary must never enumerate, so the two share nothing but the documents. Snapshots are random
//! but seeded; a failure names its case, keeps its files, and `ORACLE_CASE=<n>` reruns just it.
//!
//! Readings where the documents leave room, as docs/design/json-contract.md settles them:
//! * a reserved range counts only if both ends parse, are the CIDR's family, start ≤ end and
//!   both lie inside that CIDR; upstream `pool[].cidr` must be string-equal to a `cidrs` entry;
//! * a block belongs to the pool it is listed under, nowhere else: a deleted pool's block inside
//!   a live pool's CIDR, or another pool's block of a shared CIDR, is not the live pool's;
//! * used = distinct in-use IPs inside the pool's own allocated blocks, whichever node lists them;
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
        let family = PoolFamily { fam: theirs.fam, mask, cidrs: vec![Cidr { spelling, ranges: Vec::new(), ..cidr }], stray_entries: Vec::new() };
        Pool {
            name: "overlap".to_string(),
            dialect: Dialect::Upstream,
            allow_first: self.rng.percent(50),
            allow_last: self.rng.percent(50),
            families: vec![family],
            v2alpha1_copy: false,
        }
    }

    fn pool_family(&mut self, fam: Fam, dialect: Dialect) -> PoolFamily {
        let (mask, shortest, longest) = match fam {
            Fam::V4 => (*self.rng.pick(&[22u32, 23, 24, 25, 26, 27, 28, 30, 31, 32]), 20u32, 26u32),
            Fam::V6 => (*self.rng.pick(&[120u32, 122, 124, 126, 127, 128]), 116, 128),
        };
        let mut cidrs = Vec::new();
        for _ in 0..self.rng.between(1, 3) {
            let len = self.rng.between(shortest.max(mask - 8).into(), longest.min(mask).into()) as u32;
            let size = prefix_size(fam, len);
            let net = self.fresh_slot(fam) + self.rng.below_u128(SLOT_SIZE / size) * size;
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
        let block = prefix_size(fam, mask);
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
            45..60 => (spell(&mut self.rng, net), spell(&mut self.rng, last)),
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
                    let net = self.fresh_slot(family.fam) + self.rng.below_u128(SLOT_SIZE / block_size) * block_size;
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
            self.rng.shuffle(&mut blocks);
            self.held.entry(pool.name.clone()).or_default().extend(blocks.iter().copied());
            allocations.push((pool.name.clone(), blocks.iter().map(|&(fam, net, len)| format!("{}/{len}", addr_text(fam, net))).collect()));
            if self.rng.percent(70) {
                requested.push((pool.name.clone(), self.rng.below(300), self.rng.below(300)));
            }
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

    /// CiliumInternalIP, health and ingress addresses, mostly from the node's own blocks;
    /// sometimes from another node's block or from nowhere. The host's InternalIP sometimes
    /// falls inside a block too, and must not count.
    fn add_infrastructure_ips(&mut self, world: &mut World) {
        let cidrs = world_cidrs(&world.pools);
        for node in &mut world.nodes {
            let own: Vec<Held> = node
                .allocations
                .iter()
                .flat_map(|(_, blocks)| blocks.iter().filter_map(|b| parse_cidr(b)))
                .collect();
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
        let requested: Vec<Value> = node
            .requested
            .iter()
            .map(|(pool, v4, v6)| json!({"pool": pool, "needed": {"ipv4-addrs": v4, "ipv6-addrs": v6}}))
            .collect();
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
                entries.extend(family.stray_entries.iter().map(|(cidr, ranges)| json!({"cidr": cidr, "reservedRanges": range_list(ranges)})));
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
// The oracle: docs/design/cilium.md#figures and docs/design/json-contract.md, read literally, by enumeration.

#[derive(Debug, Default)]
struct Figures {
    family: BTreeMap<&'static str, u128>,
    /// Per CIDR spelling: capacityBlocks, allocatedBlocks, withheldBlocks, freeBlocks.
    cidrs: BTreeMap<String, BTreeMap<&'static str, u128>>,
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
        if !pod.host_network && !matches!(pod.phase, Some("Succeeded" | "Failed")) {
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

fn oracle(world: &World) -> BTreeMap<(String, &'static str), Figures> {
    let in_use = in_use(world);
    let mut out = BTreeMap::new();
    for pool in &world.pools {
        for family in &pool.families {
            let fam = family.fam;
            let block_size = prefix_size(fam, family.mask);
            let cidrs: Vec<(&Cidr, u128, u32)> = family
                .cidrs
                .iter()
                .map(|c| {
                    let (parsed_fam, net, len) = parse_cidr(&c.spelling).expect("generated CIDRs parse");
                    assert_eq!(parsed_fam, fam);
                    (c, net, len)
                })
                .collect();
            let inside_cidrs = |start: u128, end: u128| cidrs.iter().any(|&(_, net, len)| contains(fam, net, len, start) && contains(fam, net, len, end));

            let mut allocated: BTreeSet<u128> = BTreeSet::new();
            let mut orphans: BTreeSet<(u128, u32)> = BTreeSet::new();
            for node in &world.nodes {
                for (name, blocks) in &node.allocations {
                    if name != &pool.name {
                        continue;
                    }
                    for block in blocks {
                        let (block_fam, net, len) = parse_cidr(block).expect("generated blocks parse");
                        if block_fam != fam {
                            continue;
                        }
                        if len == family.mask && inside_cidrs(net, last_of(fam, net, len)) {
                            allocated.insert(net);
                        } else {
                            orphans.insert((net, len));
                        }
                    }
                }
            }

            // Reservations per CIDR, as written: CFP `reservedRange`, upstream `pool[]` entries
            // matched to `cidrs` by string equality.
            let mut ranges_of: BTreeMap<String, Vec<Range>> = BTreeMap::new();
            if pool.dialect != Dialect::V2alpha1 {
                for cidr in &family.cidrs {
                    ranges_of.entry(cidr.spelling.clone()).or_default().extend(cidr.ranges.iter().cloned());
                }
                for (text, ranges) in &family.stray_entries {
                    if let Some(list) = ranges_of.get_mut(text) {
                        list.extend(ranges.iter().cloned());
                    }
                }
            }

            let mut figures = Figures::default();
            let mut reserved: BTreeSet<u128> = BTreeSet::new();
            let (mut total, mut capacity, mut allocated_count, mut withheld_count) = (0u128, 0u128, 0u128, 0u128);
            for &(cidr, net, len) in &cidrs {
                let valid: Vec<(u128, u128)> = ranges_of
                    .get(&cidr.spelling)
                    .into_iter()
                    .flatten()
                    .filter_map(|r| valid_range(r, fam, net, len))
                    .collect();
                for &(start, end) in &valid {
                    let mut a = start;
                    loop {
                        reserved.insert(a);
                        if a == end {
                            break;
                        }
                        a += 1;
                    }
                }
                let size = prefix_size(fam, len);
                let (mut cap, mut alloc, mut withheld) = (0u128, 0u128, 0u128);
                for index in 0..size / block_size {
                    let block = net + index * block_size;
                    cap += 1;
                    let block_last = last_of(fam, block, family.mask);
                    if allocated.contains(&block) {
                        alloc += 1;
                    } else if valid.iter().any(|&(start, end)| start <= block_last && block <= end) {
                        withheld += 1;
                    }
                }
                total += size;
                capacity += cap;
                allocated_count += alloc;
                withheld_count += withheld;
                figures.cidrs.insert(
                    cidr.spelling.clone(),
                    BTreeMap::from([
                        ("capacityBlocks", cap),
                        ("allocatedBlocks", alloc),
                        ("withheldBlocks", withheld),
                        ("freeBlocks", cap - alloc - withheld),
                    ]),
                );
            }
            let usable = usable_per_block(block_size, pool.allow_first, pool.allow_last);
            let used = in_use
                .iter()
                .filter(|&&(ip_fam, ip)| ip_fam == fam && allocated.iter().any(|&b| contains(fam, b, family.mask, ip)))
                .count() as u128;
            let free = capacity - allocated_count - withheld_count;
            figures.family = BTreeMap::from([
                ("totalAddresses", total),
                ("capacityBlocks", capacity),
                ("allocatedBlocks", allocated_count),
                ("withheldBlocks", withheld_count),
                ("freeBlocks", free),
                ("orphanBlocks", orphans.len() as u128),
                ("reservedAddresses", reserved.len() as u128),
                ("allocatedAddresses", allocated_count * usable),
                ("usedAddresses", used),
                ("idleAddresses", (allocated_count * usable).saturating_sub(used)),
                ("freeAddresses", free * usable),
            ]);
            out.insert((pool.name.clone(), fam.name()), figures);
        }
    }
    out
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
        shapes.insert(["layout: kind List in YAML", "layout: multi-document YAML", "layout: kind List in JSON", "layout: typed *List", "layout: one object per file"][shape as usize]);
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

fn compare(expected: &BTreeMap<(String, &'static str), Figures>, actual: &Value) -> Vec<String> {
    let mut differences = Vec::new();
    let mut actual_rows: BTreeMap<(String, String), &Value> = BTreeMap::new();
    for pool in actual["pools"].as_array().into_iter().flatten() {
        for family in pool["families"].as_array().into_iter().flatten() {
            let key = (pool["name"].as_str().unwrap_or("?").to_string(), family["family"].as_str().unwrap_or("?").to_string());
            actual_rows.insert(key, family);
        }
    }
    let expected_keys: BTreeSet<(String, String)> = expected.keys().map(|(p, f)| (p.clone(), f.to_string())).collect();
    let actual_keys: BTreeSet<(String, String)> = actual_rows.keys().cloned().collect();
    if expected_keys != actual_keys {
        differences.push(format!("pool/family rows: expected {expected_keys:?}, got {actual_keys:?}"));
    }
    for ((pool, fam), figures) in expected {
        let Some(row) = actual_rows.get(&(pool.clone(), fam.to_string())) else { continue };
        for (field, &want) in &figures.family {
            differences.extend(mismatch(format!("{pool}/{fam} {field}"), &row[*field], want));
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
                differences.extend(mismatch(format!("{pool}/{fam} {cidr} {field}"), &actual_cidr[*field], want));
            }
        }
    }
    differences
}

/// Runs one seeded case; on a difference, keeps the snapshot directory and describes it.
fn run_case(case: u64, features: &mut BTreeSet<&'static str>) -> Result<(), String> {
    let mut generator = Generator { rng: Rng(0x0C11_1DB0_0700 ^ case), v6_like_v4: case % 2 == 1, used_slots: BTreeSet::new(), held: BTreeMap::new(), used_ips: Vec::new() };
    let world = generator.world();
    let expected = oracle(&world);
    let mut layout_rng = Rng(case.wrapping_mul(31).wrapping_add(7));
    let dir = tempfile::Builder::new().prefix(&format!("oracle-case-{case}-")).tempdir().unwrap();
    let files = write_snapshot(&mut layout_rng, objects(&world), dir.path(), &mut *features);
    features.extend(world_features(&world, &expected));

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
            Ok(actual) => compare(&expected, &actual),
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
fn world_features(world: &World, expected: &BTreeMap<(String, &'static str), Figures>) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    let listed: Vec<(&str, &str, Held)> = world
        .nodes
        .iter()
        .flat_map(|n| n.allocations.iter().flat_map(move |(pool, blocks)| blocks.iter().map(move |b| (n.name.as_str(), pool.as_str(), parse_cidr(b).unwrap()))))
        .collect();
    let in_listed = |ip: &str| parse_addr(ip).is_some_and(|(fam, a)| listed.iter().any(|&(_, _, (f, net, len))| f == fam && contains(f, net, len, a)));
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
    for figures in expected.values() {
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
        let foreign = node.addresses.iter().filter(|(kind, _)| *kind == "CiliumInternalIP").map(|(_, ip)| ip).chain(node.health.iter().flatten()).any(|ip| {
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

const ALL_FEATURES: &[&str] = &[
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
