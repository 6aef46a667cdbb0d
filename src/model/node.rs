//! The multi-pool fields of a CiliumNode (docs/design/cilium.md#nodes). Note the mixed casing of the real
//! objects: `needed` uses kebab-case keys, `allocated[]` uses camelCase.

use super::ip::{Addr, Family, Prefix};
use serde_json::Value;
use std::sync::Arc;

pub const IGNORE_ANNOTATION: &str = "ipam.cilium.io/ignore";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolRequest {
    pub pool: Arc<str>,
    pub needed_ipv4: u64,
    pub needed_ipv6: u64,
}

impl PoolRequest {
    pub fn needed(&self, family: Family) -> u64 {
        match family {
            Family::Ipv4 => self.needed_ipv4,
            Family::Ipv6 => self.needed_ipv6,
        }
    }
}

/// One block as listed by a node; `prefix` is `None` when the string is not a CIDR.
/// Names and block strings are shared (`Arc<str>`) with the report, which has a row per node,
/// pool and block: a large cluster's rows then copy no text (docs/performance.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedBlock {
    pub original: Arc<str>,
    pub prefix: Option<Prefix>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolAllocation {
    pub pool: Arc<str>,
    pub blocks: Vec<ListedBlock>,
    pub allow_first_ip: Option<bool>,
    pub allow_last_ip: Option<bool>,
}

#[derive(Clone, Debug)]
pub struct Node {
    pub name: Arc<str>,
    /// Annotated `ipam.cilium.io/ignore`: the operator skips it.
    pub ignored: bool,
    pub requested: Vec<PoolRequest>,
    pub allocated: Vec<PoolAllocation>,
    /// CiliumInternalIP, health and ingress addresses: taken from the node's blocks.
    pub infrastructure_ips: Vec<Addr>,
    /// The same addresses with their role (`CiliumInternalIP`, `health`, `ingress`), for `ip`.
    pub infrastructure: Vec<(&'static str, Addr)>,
    /// The node's own InternalIP and ExternalIP (not from its blocks), so that `ip` names the
    /// node an address belongs to.
    pub host_addresses: Vec<(&'static str, Addr)>,
    pub operator_error: Option<String>,
    /// `spec.ipam.podCIDRs`: the node's blocks in cluster-pool mode (and before a migration to
    /// multi-pool converts them into `pools.allocated`).
    pub pod_cidrs: Vec<ListedBlock>,
}

impl Node {
    pub fn decode(obj: &Value) -> Node {
        let name = Arc::from(obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default());
        let ignored = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(IGNORE_ANNOTATION))
            .and_then(Value::as_str)
            .is_some_and(|v| v == "true");
        let pools = obj.pointer("/spec/ipam/pools");
        let requested = list(pools.and_then(|p| p.get("requested")))
            .map(|r| PoolRequest {
                pool: shared_str_at(r, "pool"),
                needed_ipv4: r.pointer("/needed/ipv4-addrs").and_then(Value::as_u64).unwrap_or(0),
                needed_ipv6: r.pointer("/needed/ipv6-addrs").and_then(Value::as_u64).unwrap_or(0),
            })
            .collect();
        let allocated = list(pools.and_then(|p| p.get("allocated")))
            .map(|a| PoolAllocation {
                pool: shared_str_at(a, "pool"),
                blocks: list(a.get("cidrs"))
                    .filter_map(Value::as_str)
                    .map(|s| ListedBlock { original: Arc::from(s), prefix: Prefix::parse(s) })
                    .collect(),
                allow_first_ip: a.get("allowFirstIP").and_then(Value::as_bool),
                allow_last_ip: a.get("allowLastIP").and_then(Value::as_bool),
            })
            .collect();
        let spec = obj.get("spec");
        let addresses = |types: &[&'static str]| -> Vec<(&'static str, Addr)> {
            list(spec.and_then(|s| s.get("addresses")))
                .filter_map(|a| {
                    let role = types.iter().find(|t| a.get("type").and_then(Value::as_str) == Some(t))?;
                    Some((*role, a.get("ip").and_then(Value::as_str).and_then(Addr::parse)?))
                })
                .collect()
        };
        let host_addresses = addresses(&["InternalIP", "ExternalIP"]);
        let mut infrastructure = addresses(&["CiliumInternalIP"]);
        for section in ["health", "ingress"] {
            for family in Family::ALL {
                if let Some(ip) = spec.and_then(|s| s.get(section)).and_then(|s| s.get(family.name())) {
                    infrastructure.extend(ip.as_str().and_then(Addr::parse).map(|ip| (section, ip)));
                }
            }
        }
        let infrastructure_ips = infrastructure.iter().map(|(_, ip)| *ip).collect();
        let operator_error =
            obj.pointer("/status/ipam/operator-status/error").and_then(Value::as_str).filter(|e| !e.trim().is_empty()).map(str::to_string);
        let pod_cidrs = list(obj.pointer("/spec/ipam/podCIDRs"))
            .filter_map(Value::as_str)
            .map(|s| ListedBlock { original: Arc::from(s), prefix: Prefix::parse(s) })
            .collect();
        Node { name, ignored, requested, allocated, infrastructure_ips, infrastructure, host_addresses, operator_error, pod_cidrs }
    }
}

pub(crate) fn list(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

pub(crate) fn str_at(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn shared_str_at(value: &Value, key: &str) -> Arc<str> {
    Arc::from(value.get(key).and_then(Value::as_str).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_mixed_casing_and_mixed_families() {
        let node = Node::decode(&json!({
            "metadata": {"name": "n1", "annotations": {"ipam.cilium.io/ignore": "true"}},
            "spec": {
                "addresses": [{"type": "InternalIP", "ip": "10.0.0.1"}, {"type": "CiliumInternalIP", "ip": "10.10.0.7"}],
                "health": {"ipv4": "10.10.0.8", "ipv6": "fd00::8"},
                "ipam": {"pools": {
                    "requested": [{"pool": "default", "needed": {"ipv4-addrs": 16, "ipv6-addrs": 8}}],
                    "allocated": [{"pool": "default", "cidrs": ["10.10.0.0/24", "fd00::/120", "junk"], "allowFirstIP": true}]
                }}},
            "status": {"ipam": {"operator-status": {"error": "pool exhausted"}}}
        }));
        assert!(node.ignored);
        assert_eq!(node.requested[0].needed(Family::Ipv6), 8);
        let alloc = &node.allocated[0];
        assert_eq!(alloc.blocks.len(), 3);
        assert_eq!(alloc.blocks[1].prefix.unwrap().family, Family::Ipv6);
        assert!(alloc.blocks[2].prefix.is_none());
        assert_eq!(alloc.allow_first_ip, Some(true));
        assert_eq!(node.infrastructure_ips.len(), 3);
        assert_eq!(node.operator_error.as_deref(), Some("pool exhausted"));
    }
}
