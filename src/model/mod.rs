//! The version-neutral model: pools, nodes, pods, endpoints and the CRD, decoded from
//! Kubernetes objects of any dialect. Pure: no IO.

pub mod caveat;
pub mod cilium;
pub mod crd;
pub mod edit;
pub mod ip;
pub mod ipam;
pub mod item_budget;
pub mod node;
pub mod pool;
pub mod slim;
pub mod snapshot;
pub mod workload;

pub use caveat::{Caveat, CaveatKind};
pub use crd::CrdInfo;
pub use ip::{Addr, AddrRange, Family, Prefix};
pub use ipam::{IpamConfig, IpamMode};
pub use node::Node;
pub use pool::{Dialect, Pool};
pub use snapshot::{Origin, Snapshot};
pub use workload::{Endpoint, Pod, Workloads};
