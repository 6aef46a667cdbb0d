//! `version` output: the plugin's version and what the cluster said about itself.

use super::{Render, Style};
use crate::model::CrdInfo;
use serde::Serialize;

/// `version`'s result, also its `-o json|yaml` document.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionDocument {
    pub plugin_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    #[serde(rename = "ciliumPodIPPool", skip_serializing_if = "Option::is_none")]
    pub cilium_pod_ip_pool: Option<CrdInfo>,
    /// Why a part is missing (unreachable, forbidden, not installed, offline).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Render for VersionDocument {
    fn document(&self) -> impl Serialize {
        self
    }

    fn text(&self, _wide: bool, _style: &Style) -> String {
        human(self)
    }
}

fn human(doc: &VersionDocument) -> String {
    let mut out = format!("Plugin version: {}\n", doc.plugin_version);
    if let (Some(server), Some(version)) = (&doc.server, &doc.server_version) {
        out.push_str(&format!("Server version: {version} ({server})\n"));
    }
    if let Some(crd) = &doc.cilium_pod_ip_pool {
        out.push_str(&format!("CiliumPodIPPool: {}\n", crd_line(crd)));
    }
    for note in &doc.notes {
        out.push_str(&format!("Note: {note}\n"));
    }
    out
}

/// `served v2 (storage), v2alpha1; storedVersions v2alpha1, v2; dialect upstream-v2`
fn crd_line(crd: &CrdInfo) -> String {
    let served: Vec<String> = crd
        .versions
        .iter()
        .filter(|v| v.served)
        .map(|v| if v.storage { format!("{} (storage)", v.name) } else { v.name.clone() })
        .collect();
    let mut line = format!("served {}", if served.is_empty() { "none".to_string() } else { served.join(", ") });
    if let Some(stored) = &crd.stored_versions {
        line.push_str(&format!("; storedVersions {}", stored.join(", ")));
    }
    line.push_str(&format!("; dialect {}", crd.cluster_dialect().name()));
    line
}
