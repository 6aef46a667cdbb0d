//! The pure core of `migrate` (docs/migration.md, docs/design/cilium.md#migration): converting objects, planning per pool,
//! the status verdict, offline manifest conversion and the backup format. No IO here.

pub mod backup;
pub mod convert;
pub mod manifests;
pub mod plan;
pub mod status;
pub mod storage;

pub use convert::{Change, Converted, to_v2};
pub use plan::{MigratedBy, Plan, PoolPlan, State, plan};
pub use status::{AlphaWriter, FieldWrite, Storage, Verdict, alpha_writers, stored_versions_write, verdict};
pub use storage::StorageState;
