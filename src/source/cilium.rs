//! The running Cilium version, read from the image tag of the operator Deployment
//! (`cilium-operator`) or, failing that, the agent DaemonSet (`cilium`) in Cilium's namespace —
//! the names Cilium's Helm chart gives them. Neither object says its version anywhere else.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodSpec;
use kube::Api;
use serde::Serialize;

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

const OPERATOR: (&str, &str) = ("deployment", "cilium-operator");
const AGENT: (&str, &str) = ("daemonset", "cilium");

/// The operator's version, else the agent's; the error says why neither could be read.
pub async fn version(client: &kube::Client, namespace: &str) -> Result<CiliumVersion, String> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    let (operator, agent) = tokio::join!(deployments.get(OPERATOR.1), daemonsets.get(AGENT.1));
    let operator = operator.map(|d| d.spec.and_then(|s| s.template.spec));
    let agent = agent.map(|d| d.spec.and_then(|s| s.template.spec));
    let mut failures = Vec::new();
    for ((kind, name), container, pod) in [(OPERATOR, "cilium-operator", operator), (AGENT, "cilium-agent", agent)] {
        let image = match pod {
            Ok(pod) => pod.as_ref().and_then(|pod| image_of(pod, container)),
            Err(e) => {
                failures.push(format!("{kind} {namespace}/{name}: {}", why(&e, kind)));
                continue;
            }
        };
        match image {
            Some(image) => {
                return Ok(CiliumVersion { version: image_tag(&image), image, source: format!("{kind}/{name}"), namespace: namespace.to_string() });
            }
            None => failures.push(format!("{kind} {namespace}/{name} has no container image")),
        }
    }
    Err(format!("unknown ({}); pass --cilium-namespace if Cilium runs elsewhere", failures.join("; ")))
}

fn why(error: &kube::Error, kind: &str) -> String {
    match error {
        kube::Error::Api(status) if status.code == 404 => "not found".to_string(),
        kube::Error::Api(status) if status.code == 403 => format!("forbidden (403; needs get on {kind}s.apps)"),
        kube::Error::Api(status) => format!("{} {}", status.code, status.reason),
        other => other.to_string(),
    }
}

/// The image of the container with Cilium's name, else of the first container.
fn image_of(pod: &PodSpec, container: &str) -> Option<String> {
    let containers = &pod.containers;
    containers.iter().find(|c| c.name == container).or(containers.first()).and_then(|c| c.image.clone())
}

/// The tag of an image reference: `quay.io/cilium/operator-generic:v1.20.2@sha256:…` → `v1.20.2`.
/// A registry port (`host:5000/cilium`) is not a tag; a digest-only reference has none. Anything
/// that is not a valid tag (`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`) is not reported as one.
fn image_tag(image: &str) -> Option<String> {
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
}
