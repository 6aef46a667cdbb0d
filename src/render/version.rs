//! `version` output: what was built and what the cluster said about itself (fields:
//! docs/install.md, "What `version` reports").

use super::{Render, SCHEMA_VERSION, Style};
use crate::model::cilium::CiliumVersion;
use crate::model::crd::{CrdInfo, CrdVersion};
use serde::Serialize;

/// `version`'s result, also its `-o json|yaml` document. Parts the cluster did not tell are
/// `null`, and `notes` says why.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionDocument {
    pub schema_version: u32,
    pub plugin: Build,
    pub server: Option<Server>,
    #[serde(rename = "ciliumPodIPPool")]
    pub cilium_pod_ip_pool: Option<PoolCrd>,
    pub cilium: Option<CiliumVersion>,
    /// Why a part is missing (unreachable, forbidden, not installed, offline, too slow).
    pub notes: Vec<String>,
}

/// The build, as build.rs recorded it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Build {
    pub version: &'static str,
    /// `unknown` when built without the git repository (the packaged crate).
    pub git_commit: &'static str,
    /// RFC 3339, UTC: `SOURCE_DATE_EPOCH` when the build set it, else when build.rs ran.
    pub build_date: &'static str,
    /// The Rust target triple.
    pub platform: &'static str,
}

#[derive(Serialize)]
pub struct Server {
    pub url: String,
    /// `gitVersion` of `/version`.
    pub version: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolCrd {
    versions: Vec<CrdVersion>,
    /// `None` when the CRD itself is not readable (discovery only).
    stored_versions: Option<Vec<String>>,
    /// The dialect writes follow; `None` when v2 is served but its schema is not readable.
    dialect: Option<&'static str>,
}

impl PoolCrd {
    pub fn new(crd: &CrdInfo) -> PoolCrd {
        let schema_unknown = crd.serves("v2") && crd.v2_dialect.is_none();
        PoolCrd {
            versions: crd.versions.clone(),
            stored_versions: crd.stored_versions.clone(),
            dialect: (!schema_unknown).then(|| crd.cluster_dialect().name()),
        }
    }
}

impl VersionDocument {
    /// The plugin's part alone; the cluster's parts are filled in when read.
    pub fn new(plugin: Build) -> VersionDocument {
        VersionDocument { schema_version: SCHEMA_VERSION, plugin, server: None, cilium_pod_ip_pool: None, cilium: None, notes: Vec::new() }
    }
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
    let plugin = &doc.plugin;
    // Server, image and notes come from the cluster: each line escaped as one line.
    let mut out = super::line(
        &format!("Plugin version: {} (commit {}, built {}, {})", plugin.version, plugin.git_commit, plugin.build_date, plugin.platform),
        &Style::plain(),
    );
    if let Some(Server { url, version: Some(version) }) = &doc.server {
        out.push_str(&super::line(&format!("Server version: {version} ({url})"), &Style::plain()));
    }
    if let Some(crd) = &doc.cilium_pod_ip_pool {
        out.push_str(&super::line(&format!("CiliumPodIPPool: {}", crd_line(crd)), &Style::plain()));
    }
    if let Some(cilium) = &doc.cilium {
        out.push_str(&super::line(
            &format!(
                "Cilium version: {} (image {} of {} in {})",
                cilium.version.as_deref().unwrap_or("unknown"),
                cilium.image,
                cilium.source,
                cilium.namespace
            ),
            &Style::plain(),
        ));
    }
    for note in &doc.notes {
        out.push_str(&super::line(&format!("Note: {note}"), &Style::plain()));
    }
    out
}

/// `served v2 (storage), v2alpha1; storedVersions v2alpha1, v2; dialect upstream-v2`
fn crd_line(crd: &PoolCrd) -> String {
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
    line.push_str(&format!("; dialect {}", crd.dialect.unwrap_or("unknown")));
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_is_unknown_when_only_discovery_was_readable() {
        let discovered = CrdInfo {
            versions: vec![CrdVersion { name: "v2".into(), served: true, storage: false }],
            stored_versions: None,
            v2_dialect: None,
            resource_version: None,
        };
        assert_eq!(PoolCrd::new(&discovered).dialect, None);
        assert_eq!(crd_line(&PoolCrd::new(&discovered)), "served v2; dialect unknown");
        let alpha = CrdInfo { versions: vec![CrdVersion { name: "v2alpha1".into(), served: true, storage: true }], ..discovered };
        assert_eq!(PoolCrd::new(&alpha).dialect, Some("v2alpha1"));
    }
}
