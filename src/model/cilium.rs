//! Which Cilium runs: the tag of the image of its operator Deployment (`cilium-operator`) or agent
//! DaemonSet (`cilium`) — the names Cilium's Helm chart gives them. Neither object states its
//! version anywhere else. [`crate::cluster::cilium`] reads the objects.

use serde::Serialize;
use serde_json::Value;

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

impl CiliumVersion {
    /// The release (major, minor) the tag names: `v1.20.2`, `1.19.0-rc.1`, `v1.21-dev`; `None`
    /// for a digest-only image or any other tag (`latest`, a commit).
    pub fn release(&self) -> Option<(u64, u64)> {
        let tag = self.version.as_deref()?;
        let mut parts = tag.strip_prefix('v').unwrap_or(tag).splitn(3, '.');
        let number = |part: &str, whole: bool| {
            let digits = if whole { part } else { part.split(['-', '+']).next().unwrap_or_default() };
            (!digits.is_empty() && digits.len() <= 9 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
        };
        Some((number(parts.next()?, true)?, number(parts.next()?, false)?))
    }

    /// Whether this release can serve `cilium.io/v2` CiliumPodIPPools (1.21 and later; before,
    /// pools are v2alpha1 only and hold no reserved ranges); `None` when the release is unknown.
    pub fn serves_v2_pools(&self) -> Option<bool> {
        self.release().map(|release| release >= (1, 21))
    }
}

/// The version a Kubernetes object names, when it is Cilium's operator Deployment or agent
/// DaemonSet (a `cilium sysdump` holds both; its objects carry the kind its file name gives).
pub fn of_object(object: &Value) -> Option<CiliumVersion> {
    let kind = object.get("kind")?.as_str()?;
    let name = object.pointer("/metadata/name")?.as_str()?;
    let workload = [OPERATOR, AGENT].into_iter().find(|w| w.name == name && kind.eq_ignore_ascii_case(w.kind))?;
    let containers = object.pointer("/spec/template/spec/containers")?.as_array()?;
    let text = |c: &'_ Value, key: &str| c.get(key).and_then(Value::as_str).map(str::to_string);
    let pairs: Vec<(String, Option<String>)> = containers.iter().map(|c| (text(c, "name").unwrap_or_default(), text(c, "image"))).collect();
    let image = image_of(pairs.iter().map(|(n, i)| (n.as_str(), i.as_deref())), workload.container)?;
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or_default();
    Some(CiliumVersion::new(workload, namespace, image))
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

    fn release_of(tag: &str) -> Option<(u64, u64)> {
        CiliumVersion::new(AGENT, "kube-system", format!("quay.io/cilium/cilium:{tag}@sha256:0123")).release()
    }

    #[test]
    fn releases_of_tags() {
        assert_eq!(release_of("v1.20.2"), Some((1, 20)));
        assert_eq!(release_of("1.19.0-rc.1"), Some((1, 19)));
        assert_eq!(release_of("v1.21-dev"), Some((1, 21)));
        assert_eq!(release_of("v1.21.0-pre.3"), Some((1, 21)));
        for garbage in ["latest", "v1", "v1.", "v.20.1", "vv1.20", "1.x.0", "99999999999999999999.1", "1.-1", "sha256-abc"] {
            assert_eq!(release_of(garbage), None, "{garbage}");
        }
        let digest_only = CiliumVersion::new(AGENT, "kube-system", "quay.io/cilium/cilium@sha256:0123".into());
        assert_eq!((digest_only.release(), digest_only.serves_v2_pools()), (None, None));
        let v = |tag| CiliumVersion::new(AGENT, "", format!("cilium:{tag}")).serves_v2_pools();
        assert_eq!((v("v1.20.9"), v("v1.21.0"), v("v2.0.0"), v("v0.9.1")), (Some(false), Some(true), Some(true), Some(false)));
    }

    #[test]
    fn the_version_of_the_agent_daemonset_or_the_operator_deployment() {
        let object = |kind: &str, name: &str, container: &str, image: &str| {
            serde_json::json!({"kind": kind, "metadata": {"name": name, "namespace": "kube-system"},
                "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1"}, {"name": container, "image": image}]}}}})
        };
        let agent = of_object(&object("DaemonSet", "cilium", "cilium-agent", "quay.io/cilium/cilium:v1.20.2@sha256:00")).unwrap();
        assert_eq!(
            (agent.version.as_deref(), agent.source.as_str(), agent.namespace.as_str()),
            (Some("v1.20.2"), "daemonset/cilium", "kube-system")
        );
        let operator =
            of_object(&object("Deployment", "cilium-operator", "cilium-operator", "quay.io/cilium/operator-generic:v1.21.0")).unwrap();
        assert_eq!(operator.source, "deployment/cilium-operator");
        assert!(of_object(&object("DaemonSet", "kube-proxy", "kube-proxy", "k8s:v1.33")).is_none(), "not Cilium's");
        assert!(
            of_object(&object("Deployment", "cilium", "cilium-agent", "cilium:v1.20.2")).is_none(),
            "a DaemonSet's name on a Deployment"
        );
        assert!(of_object(&serde_json::json!({"kind": "DaemonSet", "metadata": {"name": "cilium"}, "spec": {"template": 3}})).is_none());
    }

    #[test]
    fn the_named_container_else_the_first() {
        let pod = [("sidecar", Some("busybox:1")), ("cilium-agent", Some("quay.io/cilium/cilium:v1.20.2"))];
        assert_eq!(image_of(pod, "cilium-agent").as_deref(), Some("quay.io/cilium/cilium:v1.20.2"));
        assert_eq!(image_of(pod, "cilium-operator").as_deref(), Some("busybox:1"));
        assert_eq!(image_of([], "cilium-agent"), None);
    }
}
