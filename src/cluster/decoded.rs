//! Pods and CiliumEndpoints as the watch stores keep them ([`Decoded`]): deserialized straight
//! from the API server's bytes into the model's structs, reading only the fields the snapshot
//! uses, with the metadata the reflector needs; their names shared across the watch.

use super::list::{FromListed, Listed};
use super::resources::{CILIUM_ENDPOINTS, Kind, PODS};
use super::slim_store::Slim;
use crate::model::Workloads;
use crate::model::slim;
use crate::model::workload::{Endpoint, Names, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{DynamicResourceScope, Resource};
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer};
use serde_json::Value;
use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt::Debug;

/// A Pod or CiliumEndpoint as a watch store keeps it: the metadata the reflector needs and the
/// object already decoded into the model's struct. It is deserialized straight from the API
/// server's bytes reading only the fields its decoder reads ([`Workload::FIELDS`]), so neither a list page nor an event
/// builds the whole object (a real pod is 5–10 KB of JSON, of which a dozen fields are read), and
/// a frame clones the decoded structs instead of decoding the store again.
#[derive(Clone, Debug)]
pub(super) struct Decoded<T> {
    /// Name, namespace and resourceVersion only.
    metadata: ObjectMeta,
    item: T,
}

/// A kind a watch store decodes (see [`Decoded`]).
pub(super) trait Workload: Clone + Debug + Send + Sync + 'static {
    const KIND: Kind;
    /// What is parsed of each object: what [`Workload::decode`] reads, and the resourceVersion.
    const FIELDS: slim::Keep;
    fn decode(object: &Value, names: &mut Names) -> Self;
    /// The objects of this kind a listing decoded.
    fn listed(workloads: Workloads) -> Vec<Self>;
    /// Namespace and name.
    fn names(&self) -> (&str, &str);
}

impl Workload for Pod {
    const KIND: Kind = PODS;
    const FIELDS: slim::Keep = slim::POD_FIELDS;
    fn decode(object: &Value, names: &mut Names) -> Pod {
        Pod::decode_into(object, names)
    }
    fn listed(workloads: Workloads) -> Vec<Pod> {
        workloads.pods
    }
    fn names(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }
}

impl Workload for Endpoint {
    const KIND: Kind = CILIUM_ENDPOINTS;
    const FIELDS: slim::Keep = slim::ENDPOINT_FIELDS;
    fn decode(object: &Value, names: &mut Names) -> Endpoint {
        Endpoint::decode_into(object, names)
    }
    fn listed(workloads: Workloads) -> Vec<Endpoint> {
        workloads.endpoints
    }
    fn names(&self) -> (&str, &str) {
        (&self.namespace, &self.name)
    }
}

thread_local! {
    /// The namespace and node names of every decoded object of a watch, shared as one copy each
    /// (a deserializer has no other way to reach shared state). The watch runs on one thread;
    /// were it not, names would only be shared less.
    pub(super) static NAMES: RefCell<Names> = RefCell::default();
}

impl<'de, T: Workload> Deserialize<'de> for Decoded<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = T::FIELDS.deserialize(deserializer)?;
        // `get`, not `pointer`: a pointer copies each of its tokens to unescape it (issue 44's profile).
        let text = |field: &str| object.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).map(str::to_string);
        let metadata = ObjectMeta {
            name: text("name"),
            namespace: text("namespace"),
            resource_version: text("resourceVersion"),
            ..ObjectMeta::default()
        };
        let item = NAMES.with_borrow_mut(|names| T::decode(&object, names));
        Ok(Decoded { metadata, item })
    }
}

impl<T: Workload> FromListed for Decoded<T> {
    /// The listing's objects of this kind, already decoded (`cluster::list`), with the names the
    /// store keys them by (no resourceVersion of their own: the watch resumes from the list's).
    fn from_listed(listed: Listed) -> Result<Vec<Decoded<T>>, String> {
        let decoded = T::listed(listed.workloads).into_iter().map(|item| {
            let (namespace, name) = item.names();
            let metadata = ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()).filter(|namespace| !namespace.is_empty()),
                ..ObjectMeta::default()
            };
            Decoded { metadata, item }
        });
        Ok(decoded.collect())
    }
}

impl<T: Workload> Resource for Decoded<T> {
    type DynamicType = ();
    type Scope = DynamicResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        T::KIND.kind.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        T::KIND.group.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        T::KIND.version.into()
    }

    fn api_version(_: &()) -> Cow<'_, str> {
        T::KIND.api_version.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        T::KIND.plural.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl<T: Workload> Slim for Decoded<T> {
    type Item = T;

    fn names(&self) -> (&str, &str) {
        (self.metadata.namespace.as_deref().unwrap_or_default(), self.metadata.name.as_deref().unwrap_or_default())
    }

    fn into_item(self) -> T {
        self.item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::WatchEvent;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "uid": "u-1", "resourceVersion": "42",
                         "managedFields": [{"manager": "kubelet"}], "annotations": {"ipam.cilium.io/ip-pool": "blue", "other": "x"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "app"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}], "conditions": [{"type": "Ready"}]}})
    }

    #[test]
    fn a_watched_pod_is_decoded_and_keeps_the_metadata_the_reflector_needs() {
        let decoded: Decoded<Pod> = serde_json::from_value(pod("web-1")).unwrap();
        assert_eq!(format!("{:?}", decoded.item), format!("{:?}", Pod::decode(&pod("web-1"))));
        let expected = ObjectMeta {
            name: Some("web-1".into()),
            namespace: Some("shop".into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(decoded.metadata, expected);
        let other: Decoded<Pod> = serde_json::from_value(pod("web-2")).unwrap();
        assert!(Arc::ptr_eq(&decoded.item.namespace, &other.item.namespace), "one copy of a namespace across the watch");
    }

    #[test]
    fn a_listed_pod_is_stored_under_its_namespace_and_name() {
        let pod = Pod::decode(&pod("web-1"));
        let listed = Listed { workloads: Workloads { pods: vec![pod.clone()], ..Workloads::default() }, ..Listed::default() };
        let decoded = Decoded::<Pod>::from_listed(listed).unwrap();
        assert_eq!(decoded.len(), 1);
        assert_eq!(Slim::names(&decoded[0]), ("shop", "web-1"), "the key a watch event of the same pod gets");
        assert_eq!(format!("{:?}", decoded[0].item), format!("{pod:?}"));
    }

    #[test]
    fn watch_events_and_requests_are_those_of_pods_and_endpoints() {
        let endpoint = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "web-1", "namespace": "shop", "resourceVersion": "7"},
            "status": {"identity": {"id": 7}, "networking": {"addressing": [{"ipv4": "10.1.0.5"}]}}});
        let event: WatchEvent<Decoded<Endpoint>> = serde_json::from_value(json!({"type": "DELETED", "object": endpoint.clone()})).unwrap();
        let WatchEvent::Deleted(deleted) = event else { panic!("a DELETED event") };
        assert_eq!(format!("{:?}", deleted.item), format!("{:?}", Endpoint::decode(&endpoint)));
        assert_eq!(deleted.metadata.resource_version.as_deref(), Some("7"), "a watch resumes from it");
        assert_eq!(Decoded::<Pod>::url_path(&(), Some("shop")), "/api/v1/namespaces/shop/pods");
        assert_eq!(Decoded::<Endpoint>::url_path(&(), None), "/apis/cilium.io/v2/ciliumendpoints");
    }
}
