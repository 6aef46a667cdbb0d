//! Reads the objects whose image names the running Cilium version (`model::cilium`): the operator
//! Deployment, and the agent DaemonSet when the operator's is not readable.

use crate::model::cilium::{AGENT, CiliumVersion, OPERATOR, Workload, image_of};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodSpec;
use kube::Api;

/// The operator's version, else the agent's; the error says why neither could be read.
pub async fn version(client: &kube::Client, namespace: &str) -> Result<CiliumVersion, String> {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), namespace);
    let (operator, agent) = tokio::join!(deployments.get(OPERATOR.name), daemonsets.get(AGENT.name));
    let operator = operator.map(|d| d.spec.and_then(|s| s.template.spec));
    let agent = agent.map(|d| d.spec.and_then(|s| s.template.spec));
    let mut failures = Vec::new();
    for (workload, pod) in [(OPERATOR, operator), (AGENT, agent)] {
        let Workload { kind, name, container } = workload;
        match pod {
            Ok(pod) => match pod.as_ref().and_then(|pod| image(pod, container)) {
                Some(image) => return Ok(CiliumVersion::new(workload, namespace, image)),
                None => failures.push(format!("{kind} {namespace}/{name} has no container image")),
            },
            Err(e) => failures.push(format!("{kind} {namespace}/{name}: {}", why(&e, kind))),
        }
    }
    Err(format!("unknown ({}); pass --cilium-namespace if Cilium runs elsewhere", failures.join("; ")))
}

fn image(pod: &PodSpec, container: &str) -> Option<String> {
    image_of(pod.containers.iter().map(|c| (c.name.as_str(), c.image.as_deref())), container)
}

fn why(error: &kube::Error, kind: &str) -> String {
    match error {
        kube::Error::Api(status) if status.code == 404 => "not found".to_string(),
        kube::Error::Api(status) if status.code == 403 => format!("forbidden (403; needs get on {kind}s.apps)"),
        kube::Error::Api(status) => format!("{} {}", status.code, status.reason),
        other => other.to_string(),
    }
}
