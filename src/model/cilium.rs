//! Which Cilium runs: the tag of the image of its operator Deployment (`cilium-operator`) or agent
//! DaemonSet (`cilium`) — the names Cilium's Helm chart gives them. Neither object states its
//! version anywhere else. `source::cilium` reads the objects.

use serde::Serialize;

/// The operator Deployment and the container of it that runs the operator.
pub const OPERATOR: Workload = Workload { kind: "deployment", name: "cilium-operator", container: "cilium-operator" };
/// The agent DaemonSet and its agent container.
pub const AGENT: Workload = Workload { kind: "daemonset", name: "cilium", container: "cilium-agent" };

/// A workload of Cilium's whose image names the version.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// `deployment` or `daemonset` (RBAC resources `<kind>s.apps`).
    pub kind: &'static str,
    pub name: &'static str,
    pub container: &'static str,
}

/// Where the version was read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CiliumVersion {
    /// The image tag, e.g. `v1.20.2`; `None` when the image names a digest only.
    pub version: Option<String>,
    pub image: String,
    /// `deployment/cilium-operator` or `daemonset/cilium`.
    pub source: String,
    pub namespace: String,
}

impl CiliumVersion {
    pub fn new(workload: Workload, namespace: &str, image: String) -> CiliumVersion {
        CiliumVersion {
            version: image_tag(&image),
            image,
            source: format!("{}/{}", workload.kind, workload.name),
            namespace: namespace.to_string(),
        }
    }
}

/// The image of the container named `container`, else of the first one; `(name, image)` pairs.
pub fn image_of<'a>(containers: impl IntoIterator<Item = (&'a str, Option<&'a str>)>, container: &str) -> Option<String> {
    let containers: Vec<_> = containers.into_iter().collect();
    let chosen = containers.iter().find(|(name, _)| *name == container).or(containers.first());
    chosen.and_then(|(_, image)| image.map(str::to_string))
}

/// The tag of an image reference: `quay.io/cilium/operator-generic:v1.20.2@sha256:…` → `v1.20.2`.
/// A registry port (`host:5000/cilium`) is not a tag; a digest-only reference has none. Anything
/// that is not a valid tag (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`) is not reported as one.
pub fn image_tag(image: &str) -> Option<String> {
    let name = image.split('@').next().unwrap_or_default();
    let last = name.rsplit('/').next().unwrap_or_default();
    let (_, tag) = last.split_once(':')?;
    let valid = (1..=128).contains(&tag.len())
        && tag.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && !tag.starts_with(['.', '-']);
    valid.then(|| tag.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_of_image_references() {
        assert_eq!(image_tag("quay.io/cilium/operator-generic:v1.20.2@sha256:0123abcd").as_deref(), Some("v1.20.2"));
        assert_eq!(image_tag("quay.io/cilium/cilium:v1.20.2").as_deref(), Some("v1.20.2"));
        assert_eq!(image_tag("localhost:5000/cilium/cilium:1.19.0-rc.1").as_deref(), Some("1.19.0-rc.1"));
        assert_eq!(image_tag("localhost:5000/cilium/cilium"), None);
        assert_eq!(image_tag("quay.io/cilium/cilium@sha256:0123abcd"), None);
        assert_eq!(image_tag("cilium:v1\u{1b}[31m"), None);
        assert_eq!(image_tag("cilium:-x"), None);
    }

    #[test]
    fn the_named_container_else_the_first() {
        let pod = [("sidecar", Some("busybox:1")), ("cilium-agent", Some("quay.io/cilium/cilium:v1.20.2"))];
        assert_eq!(image_of(pod, "cilium-agent").as_deref(), Some("quay.io/cilium/cilium:v1.20.2"));
        assert_eq!(image_of(pod, "cilium-operator").as_deref(), Some("busybox:1"));
        assert_eq!(image_of([], "cilium-agent"), None);
    }
}
