//! A node's figures: per pool it lists or requests, its blocks, usable, used and needed
//! addresses, per family.

use crate::allocator::count::Count;
use crate::model::Family;
use serde::Serialize;
use smallvec::SmallVec;
use std::sync::Arc;

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeReport {
    /// Shared with the snapshot, as are the row's pool and block names.
    pub name: Arc<str>,
    pub pools: Vec<NodePoolReport>,
    #[serde(skip)]
    pub ignored: bool,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodePoolReport {
    pub pool: Arc<str>,
    /// Inline for the usual one or two blocks: a large cluster has a row per node and pool.
    pub blocks: SmallVec<[Arc<str>; 2]>,
    /// Distinct in-use addresses: at most the objects read, so 64 bits hold any (a row per node
    /// and pool: the 256-bit `Count` made them half again as large).
    pub used_addresses: Option<u64>,
    pub needed_addresses: Needed,
    /// The same figures per address family (a dual-stack pool's IPv4 and IPv6 never add up).
    pub families: SmallVec<[NodeFamilyReport; 2]>,
    #[serde(skip)]
    pub pool_exists: bool,
}

impl NodePoolReport {
    /// Usable addresses of the node's blocks of this pool, both families.
    pub fn usable_addresses(&self) -> Count {
        self.families.iter().map(|f| f.usable_addresses).sum()
    }
}

/// One family of a node's entry for one pool: families with blocks or a request.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFamilyReport {
    pub family: Family,
    /// Valid blocks of this family the node lists.
    pub blocks: usize,
    pub usable_addresses: Count,
    /// As [`NodePoolReport::used_addresses`].
    pub used_addresses: Option<u64>,
    pub needed_addresses: u64,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Needed {
    pub ipv4: u64,
    pub ipv6: u64,
}
