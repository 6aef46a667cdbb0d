//! Each pool `inspect` shows, with its report, its problems and the pods draining CIDRs hold.

use crate::allocator::{PoolReport, Problem};
use crate::model::Pool;

/// One inspected pool: the pool, its figures, its problems and what is left in draining CIDRs.
pub(super) struct Inspected<'a> {
    pub(super) pool: &'a Pool,
    pub(super) report: &'a PoolReport,
    pub(super) problems: Vec<&'a Problem>,
    pub(super) draining: Vec<DrainingPods<'a>>,
}

/// Pods still holding IPs in a draining CIDR, for the decommissioning view.
pub struct DrainingPods<'a> {
    pub cidr: &'a str,
    pub pods: Vec<String>,
}
