//! What the CiliumPodIPPool CustomResourceDefinition says about versions and the v2 shape
//! (docs/design/cilium.md#dialects).

use super::pool::Dialect;
use serde::Serialize;
use serde_json::Value;

pub const POOL_CRD_NAME: &str = "ciliumpodippools.cilium.io";

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdInfo {
    pub versions: Vec<CrdVersion>,
    /// `None` when only discovery could be read (no `get` on CRDs).
    pub stored_versions: Option<Vec<String>>,
    /// The shape of v2 when v2 is served and the schema was readable.
    pub v2_dialect: Option<Dialect>,
    pub resource_version: Option<String>,
}

impl CrdInfo {
    pub fn decode(obj: &Value) -> CrdInfo {
        let versions: Vec<&Value> = obj.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten().collect();
        let v2_dialect = versions
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some("v2") && v.get("served").and_then(Value::as_bool) == Some(true))
            .and_then(|v| v.pointer("/schema/openAPIV3Schema/properties/spec/properties"))
            .map(|props| {
                let fam = props.get("ipv4").or_else(|| props.get("ipv6"));
                let item_type = fam.and_then(|f| f.pointer("/properties/cidrs/items/type")).and_then(Value::as_str);
                if item_type == Some("object") { Dialect::CfpV2 } else { Dialect::UpstreamV2 }
            });
        CrdInfo {
            versions: versions
                .iter()
                .map(|v| CrdVersion {
                    name: v.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    served: v.get("served").and_then(Value::as_bool).unwrap_or(false),
                    storage: v.get("storage").and_then(Value::as_bool).unwrap_or(false),
                })
                .collect(),
            stored_versions: obj
                .pointer("/status/storedVersions")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()),
            v2_dialect,
            resource_version: obj.pointer("/metadata/resourceVersion").and_then(Value::as_str).map(str::to_string),
        }
    }

    pub fn serves(&self, version: &str) -> bool {
        self.versions.iter().any(|v| v.name == version && v.served)
    }

    pub fn storage_version(&self) -> Option<&str> {
        self.versions.iter().find(|v| v.storage).map(|v| v.name.as_str())
    }

    /// The dialect writes must follow on this cluster.
    pub fn cluster_dialect(&self) -> Dialect {
        match (self.serves("v2"), self.v2_dialect) {
            (false, _) => Dialect::V2alpha1,
            (true, Some(d)) => d,
            (true, None) => Dialect::UpstreamV2,
        }
    }

    /// storedVersions still lists something other than v2 while v2 is the storage version.
    pub fn storage_migration_pending(&self) -> bool {
        self.storage_version() == Some("v2") && self.stored_versions.as_ref().is_some_and(|s| s.iter().any(|v| v != "v2"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(item_type: &str, stored: &[&str]) -> Value {
        json!({"metadata": {"name": POOL_CRD_NAME, "resourceVersion": "7"},
          "spec": {"versions": [
            {"name": "v2alpha1", "served": true, "storage": false},
            {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {
                "ipv4": {"properties": {"cidrs": {"items": {"type": item_type}}}}}}}}}}]},
          "status": {"storedVersions": stored}})
    }

    #[test]
    fn tells_dialect_and_pending_migration() {
        let up = CrdInfo::decode(&crd("string", &["v2alpha1", "v2"]));
        assert_eq!(up.cluster_dialect(), Dialect::UpstreamV2);
        assert!(up.storage_migration_pending());
        let cfp = CrdInfo::decode(&crd("object", &["v2"]));
        assert_eq!(cfp.cluster_dialect(), Dialect::CfpV2);
        assert!(!cfp.storage_migration_pending());
        let alpha = CrdInfo::decode(&json!({"spec": {"versions": [{"name": "v2alpha1", "served": true, "storage": true}]}}));
        assert_eq!(alpha.cluster_dialect(), Dialect::V2alpha1);
    }
}
