//! Where the cluster stores its pools, as the CRD tells: what the plan and the status verdict
//! both start from.

use crate::model::CrdInfo;
use serde::Serialize;

/// Where the pools are stored, as far as the CRD tells (an object's own storage version is not
/// visible through the API).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageState {
    /// v2 is the storage version and `status.storedVersions` is `[v2]`: nothing is stored as
    /// v2alpha1 (whoever rewrote the objects: `migrate`, or Cilium's operator by itself).
    V2,
    /// v2 is the storage version but `storedVersions` still lists v2alpha1: some objects may still
    /// be stored as v2alpha1 (the storage migration has not started, or has not finished).
    Pending,
    /// v2alpha1 is still the storage version (or v2 is not served).
    V2alpha1,
    /// `status.storedVersions` could not be read.
    Unknown,
}

impl StorageState {
    pub fn of(crd: &CrdInfo) -> StorageState {
        match (crd.storage_version(), &crd.stored_versions) {
            (Some("v2"), Some(stored)) if !stored.is_empty() && stored.iter().all(|v| v == "v2") => StorageState::V2,
            (Some("v2"), Some(_)) => StorageState::Pending,
            (Some("v2"), None) => StorageState::Unknown,
            _ => StorageState::V2alpha1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            StorageState::V2 => "v2",
            StorageState::Pending => "pending",
            StorageState::V2alpha1 => "v2alpha1",
            StorageState::Unknown => "unknown",
        }
    }
}
