//! The IPAM mode: the `ipam` key of ConfigMap `cilium-config` (docs/ipam-modes.md). Only
//! multi-pool has CiliumPodIPPools; other modes still write CiliumNode fields the plugin reads.

use super::ip::{Family, Prefix};
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
    /// What it says about routing and masquerading (docs/design/cilium.md#routing-and-masquerading).
    pub routing: RoutingConfig,
}

/// The `cilium-config` keys that decide whether a pod's traffic leaves with its own address,
/// each the agent's default when absent (`daemon/cmd/daemon_main.go`, `pkg/defaults/defaults.go`
/// and `pkg/ipam/cell/cell.go` in Cilium v1.20.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutingConfig {
    /// `routing-mode` as spelled; absent: `tunnel`.
    pub mode: String,
    /// `ipv4-native-routing-cidr`, `ipv6-native-routing-cidr` (one CIDR each); `None` when absent
    /// or not a CIDR (the agent refuses to start on the latter).
    pub native_cidr_v4: Option<Prefix>,
    pub native_cidr_v6: Option<Prefix>,
    /// `enable-ipv4` and `enable-ipv4-masquerade` (both default true): the agent masquerades IPv4.
    pub masquerade_v4: bool,
    /// `enable-ipv6` and `enable-ipv6-masquerade` (both default true).
    pub masquerade_v6: bool,
    /// `enable-bpf-masquerade` (default false: iptables masquerades).
    pub bpf_masquerade: bool,
    /// `enable-ip-masq-agent` (default false): its own ConfigMap adds CIDRs never masqueraded.
    pub ip_masq_agent: bool,
    /// `only-masquerade-default-pool` (default false): every other pool skips masquerading.
    pub only_masquerade_default_pool: bool,
}

impl RoutingConfig {
    /// Is `routing-mode` native (pods' addresses routed by the network, no tunnel)?
    pub fn is_native(&self) -> bool {
        self.mode == "native"
    }

    /// The native-routing CIDR of `family`, if set.
    pub fn native_cidr(&self, family: Family) -> Option<Prefix> {
        match family {
            Family::Ipv4 => self.native_cidr_v4,
            Family::Ipv6 => self.native_cidr_v6,
        }
    }

    /// Does the agent masquerade `family`?
    pub fn masquerades(&self, family: Family) -> bool {
        match family {
            Family::Ipv4 => self.masquerade_v4,
            Family::Ipv6 => self.masquerade_v6,
        }
    }

    fn decode<'d>(key: impl Fn(&str) -> Option<&'d str>) -> RoutingConfig {
        let flag = |k: &str, default: bool| key(k).and_then(parse_bool).unwrap_or(default);
        let cidr = |k: &str, family: Family| key(k).and_then(Prefix::parse).filter(|p| p.family == family);
        RoutingConfig {
            mode: key("routing-mode").unwrap_or("tunnel").to_string(),
            native_cidr_v4: cidr("ipv4-native-routing-cidr", Family::Ipv4),
            native_cidr_v6: cidr("ipv6-native-routing-cidr", Family::Ipv6),
            masquerade_v4: flag("enable-ipv4", true) && flag("enable-ipv4-masquerade", true),
            masquerade_v6: flag("enable-ipv6", true) && flag("enable-ipv6-masquerade", true),
            bpf_masquerade: flag("enable-bpf-masquerade", false),
            ip_masq_agent: flag("enable-ip-masq-agent", false),
            only_masquerade_default_pool: flag("only-masquerade-default-pool", false),
        }
    }
}

/// A boolean as the agent's flags read one (Go's `strconv.ParseBool`); `None` for anything else.
fn parse_bool(text: &str) -> Option<bool> {
    match text {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
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
            routing: RoutingConfig::decode(key),
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

    #[test]
    fn routing_keys_and_the_agents_defaults() {
        let cm =
            |data: Value| json!({"kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"}, "data": data});
        let absent = IpamConfig::decode(&cm(json!({}))).unwrap().routing;
        assert_eq!(absent.mode, "tunnel", "routing-mode's default in v1.20 (pkg/defaults/defaults.go)");
        assert!(!absent.is_native() && absent.masquerades(Family::Ipv4) && absent.masquerades(Family::Ipv6));
        assert!(!absent.bpf_masquerade && !absent.ip_masq_agent && !absent.only_masquerade_default_pool);
        assert_eq!((absent.native_cidr(Family::Ipv4), absent.native_cidr(Family::Ipv6)), (None, None));
        let native = IpamConfig::decode(&cm(json!({
            "routing-mode": "native", "ipv4-native-routing-cidr": "10.0.0.0/8", "ipv6-native-routing-cidr": "10.0.0.0/8",
            "enable-ipv4-masquerade": "True", "enable-ipv6-masquerade": "0", "enable-bpf-masquerade": "true",
            "only-masquerade-default-pool": "t", "enable-ip-masq-agent": "false"})))
        .unwrap()
        .routing;
        assert!(native.is_native() && native.bpf_masquerade && native.only_masquerade_default_pool && !native.ip_masq_agent);
        assert_eq!(native.native_cidr(Family::Ipv4), Prefix::parse("10.0.0.0/8"));
        assert_eq!(native.native_cidr(Family::Ipv6), None, "an IPv4 CIDR is no IPv6 native-routing CIDR");
        assert!(native.masquerades(Family::Ipv4) && !native.masquerades(Family::Ipv6));
        // A family that is off is not masqueraded; a value the agent cannot read is its default.
        let off = IpamConfig::decode(&cm(json!({"enable-ipv4": "false", "enable-bpf-masquerade": "yes"}))).unwrap().routing;
        assert!(!off.masquerades(Family::Ipv4) && !off.bpf_masquerade);
    }
}
