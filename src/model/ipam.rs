//! The IPAM mode: the `ipam` key of ConfigMap `cilium-config` (docs/ipam-modes.md). Only
//! multi-pool has CiliumPodIPPools; other modes still write CiliumNode fields the plugin reads.

use serde_json::Value;

pub const CONFIG_MAP_NAME: &str = "cilium-config";
/// The agent's default when `ipam` is absent.
const DEFAULT_MODE: &str = "cluster-pool";
/// The default pool's name when `ipam-default-ip-pool` is absent.
const DEFAULT_POOL: &str = "default";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IpamMode {
    MultiPool,
    ClusterPool,
    /// AWS ENI: the agent lists the node's ENI addresses and prefixes under pool `default`.
    Eni,
    /// Any other mode (kubernetes, azure, alibabacloud, crd, delegated-plugin, ...), as spelled.
    Other(String),
}

impl IpamMode {
    pub fn parse(text: &str) -> IpamMode {
        match text.trim() {
            "multi-pool" => IpamMode::MultiPool,
            "cluster-pool" => IpamMode::ClusterPool,
            "eni" => IpamMode::Eni,
            other => IpamMode::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            IpamMode::MultiPool => "multi-pool",
            IpamMode::ClusterPool => "cluster-pool",
            IpamMode::Eni => "eni",
            IpamMode::Other(name) => name,
        }
    }
}

/// What `cilium-config` says about IPAM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpamConfig {
    pub mode: IpamMode,
    /// `ipam-default-ip-pool`: the pool cluster-pool blocks move to when migrating.
    pub default_pool: String,
    /// `enable-cluster-pool-to-multi-pool-migration`: the operator converts nodes' podCIDRs.
    pub cluster_pool_migration: bool,
    /// `namespace/name` of the ConfigMap, for messages.
    pub source: String,
    /// `cluster-name` and `cluster-id`: a Cluster Mesh tells clusters apart by them (docs/fleet.md);
    /// `None` when the key is absent (the agent then uses `default` and 0).
    pub cluster_name: Option<String>,
    pub cluster_id: Option<String>,
}

impl IpamConfig {
    /// Decodes ConfigMap `cilium-config`; `None` for any other object.
    pub fn decode(obj: &Value) -> Option<IpamConfig> {
        if obj.pointer("/metadata/name").and_then(Value::as_str) != Some(CONFIG_MAP_NAME) {
            return None;
        }
        let data = obj.get("data");
        let key = |k: &str| data.and_then(|d| d.get(k)).and_then(Value::as_str).map(str::trim).filter(|v| !v.is_empty());
        let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("?");
        Some(IpamConfig {
            mode: IpamMode::parse(key("ipam").unwrap_or(DEFAULT_MODE)),
            default_pool: key("ipam-default-ip-pool").unwrap_or(DEFAULT_POOL).to_string(),
            cluster_pool_migration: key("enable-cluster-pool-to-multi-pool-migration") == Some("true"),
            source: format!("{namespace}/{CONFIG_MAP_NAME}"),
            cluster_name: key("cluster-name").map(str::to_string),
            cluster_id: key("cluster-id").map(str::to_string),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_and_defaults() {
        let cm =
            |data: Value| json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data});
        let eni = IpamConfig::decode(&cm(json!({"ipam": "eni"}))).unwrap();
        assert_eq!((eni.mode.name(), eni.default_pool.as_str(), eni.source.as_str()), ("eni", "default", "kube-system/cilium-config"));
        let absent = IpamConfig::decode(&cm(json!({}))).unwrap();
        assert_eq!(absent.mode, IpamMode::ClusterPool, "the agent's default");
        let migrating = IpamConfig::decode(&cm(
            json!({"ipam": "multi-pool", "ipam-default-ip-pool": "main", "enable-cluster-pool-to-multi-pool-migration": "true"}),
        ))
        .unwrap();
        assert!(migrating.cluster_pool_migration);
        assert_eq!(migrating.default_pool, "main");
        assert_eq!(absent.cluster_name, None);
        let meshed = IpamConfig::decode(&cm(json!({"cluster-name": "east", "cluster-id": "7"}))).unwrap();
        assert_eq!((meshed.cluster_name.as_deref(), meshed.cluster_id.as_deref()), (Some("east"), Some("7")));
        assert_eq!(IpamMode::parse("azure"), IpamMode::Other("azure".into()));
        assert!(IpamConfig::decode(&json!({"metadata": {"name": "other"}})).is_none());
    }
}
