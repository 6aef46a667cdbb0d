//! The problem catalog (docs/design/problems.md); kinds are stable identifiers of the JSON
//! contract.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    OrphanBlock,
    BlockMultipleOwners,
    OverlappingPools,
    InvalidReservedRange,
    ReservationOverAllocated,
    ReservationWithholdsMore,
    Ipv6TooManyBlocks,
    PodIpForeignBlock,
    PodIpUnallocated,
    UnknownPoolRequested,
    PoolNearlyExhausted,
    StaleOperatorError,
    StorageMigrationPending,
    InvalidPool,
    /// A CiliumNode lists a block that is not a CIDR.
    InvalidNodeBlock,
    /// A CIDR fully reserved and empty: the decommissioning can be finished.
    CidrDrained,
    /// A CiliumNode lists one pool in several `allocated[]` entries: after an operator restart
    /// only the last entry's blocks stay allocated.
    PoolSplitEntries,
    /// Cluster-pool → multi-pool: a prerequisite is missing, or nodes still wait to be moved.
    ClusterPoolMigration,
    /// A pool name or the IPAM mode holds characters a terminal would act on (`escape::is_unsafe`):
    /// shown escaped, and left out of `-o openmetrics`, whose label values cannot escape them.
    UnprintableName,
    /// The input cannot show something the figures or checks need (`model::caveat`): info, so
    /// `--severity warning` leaves it out.
    InputIncomplete,
    /// Fleet (docs/fleet.md): pool CIDRs of two clusters overlap.
    FleetOverlappingCidrs,
    /// Fleet: two clusters have the same cilium-config `cluster-name`.
    FleetDuplicateClusterName,
    /// Fleet: two clusters have the same cilium-config `cluster-id`.
    FleetDuplicateClusterId,
    /// Fleet: a pod address is in use in two clusters.
    FleetSharedPodIp,
    /// Fleet: two contexts reach the same API server (compared once, not with itself).
    FleetSameCluster,
    /// Native routing: a non-default pool's CIDR outside the native-routing CIDR while BPF
    /// masquerading is on and the pool does not skip it (`allocator/routing.rs`).
    PoolOutsideNativeRoutingCidr,
    /// Fleet, native routing: a pool CIDR of one cluster outside a peer's native-routing CIDR.
    FleetUnroutedPoolCidr,
}

impl ProblemKind {
    pub fn name(self) -> String {
        serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    pub severity: Severity,
    pub kind: ProblemKind,
    /// `Kind/name` of the object at fault, e.g. `CiliumPodIPPool/blue`.
    pub object: String,
    pub message: String,
    /// What to do about it.
    pub action: String,
    /// The pool concerned, when there is one (lets `inspect` show a pool's problems).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
}

impl Problem {
    /// A problem of `kind` in `object` (`Kind/name`): what is wrong, and what to do about it; of no
    /// pool until [`Problem::in_pool`] names one.
    pub fn new(severity: Severity, kind: ProblemKind, object: String, message: String, action: &str) -> Problem {
        Problem { severity, kind, object, message, action: action.to_string(), pool: None }
    }

    /// An error: [`Problem::new`] of [`Severity::Error`].
    pub fn error(kind: ProblemKind, object: String, message: String, action: &str) -> Problem {
        Problem::new(Severity::Error, kind, object, message, action)
    }

    /// A warning: [`Problem::new`] of [`Severity::Warning`].
    pub fn warning(kind: ProblemKind, object: String, message: String, action: &str) -> Problem {
        Problem::new(Severity::Warning, kind, object, message, action)
    }

    /// For information: [`Problem::new`] of [`Severity::Info`].
    pub fn info(kind: ProblemKind, object: String, message: String, action: &str) -> Problem {
        Problem::new(Severity::Info, kind, object, message, action)
    }

    /// The problem, concerning pool `pool` (when there is one): `inspect` shows it with the pool.
    pub fn in_pool(self, pool: Option<&str>) -> Problem {
        Problem { pool: pool.map(str::to_string), ..self }
    }

    /// Does it make `check` exit 1? `input-incomplete` describes the input, not the cluster: a
    /// CI check of a pools manifest must not fail because the manifest holds no CiliumNodes.
    pub fn fails_check(&self) -> bool {
        self.kind != ProblemKind::InputIncomplete
    }
}

pub fn pool_object(name: &str) -> String {
    format!("CiliumPodIPPool/{name}")
}

pub fn node_object(name: &str) -> String {
    format!("CiliumNode/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_json_contracts_identifiers() {
        let severities: Vec<&str> = [Severity::Error, Severity::Warning, Severity::Info].into_iter().map(Severity::name).collect();
        assert_eq!(severities, ["error", "warning", "info"]);
        assert_eq!(ProblemKind::BlockMultipleOwners.name(), "block-multiple-owners");
        assert_eq!(ProblemKind::Ipv6TooManyBlocks.name(), "ipv6-too-many-blocks");
        assert_eq!(pool_object("blue"), "CiliumPodIPPool/blue");
        assert_eq!(node_object("n1"), "CiliumNode/n1");
    }
}
