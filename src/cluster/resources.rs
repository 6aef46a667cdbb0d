//! The resources a live read asks for, as kube's `ApiResource`s, and the kinds named at compile
//! time (`decoded.rs`).

use kube::api::{ApiResource, GroupVersionKind};

pub(super) fn nodes_resource() -> ApiResource {
    resource("cilium.io", "v2", "CiliumNode", "ciliumnodes")
}

/// A kind as the API serves it, for types that name their kind at compile time (`cluster::watch`).
pub struct Kind {
    pub group: &'static str,
    pub version: &'static str,
    pub api_version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
}

pub const PODS: Kind = Kind { group: "", version: "v1", api_version: "v1", kind: "Pod", plural: "pods" };
pub const CILIUM_ENDPOINTS: Kind =
    Kind { group: "cilium.io", version: "v2", api_version: "cilium.io/v2", kind: "CiliumEndpoint", plural: "ciliumendpoints" };

pub(super) fn pods_resource() -> ApiResource {
    resource(PODS.group, PODS.version, PODS.kind, PODS.plural)
}

pub(super) fn endpoints_resource() -> ApiResource {
    resource(CILIUM_ENDPOINTS.group, CILIUM_ENDPOINTS.version, CILIUM_ENDPOINTS.kind, CILIUM_ENDPOINTS.plural)
}

pub(super) fn config_maps_resource() -> ApiResource {
    resource("", "v1", "ConfigMap", "configmaps")
}

pub(super) fn crd_resource() -> ApiResource {
    resource("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions")
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}
