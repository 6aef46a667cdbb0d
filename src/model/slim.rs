//! Decoding objects while keeping only what the model reads of the kinds that come by the
//! hundred thousand. A real Pod is 5–10 KB of JSON (managedFields, containers, env, volumes) of
//! which the plugin reads a dozen fields; building a `serde_json::Value` of every field of every
//! pod of a dump costs many times the dump's size in memory. [`Slim`] deserializes any object or
//! list (from JSON or YAML, streamed) into a `Value` in which Pods and CiliumEndpoints hold only
//! the fields their decoders read ([`POD_FIELDS`], [`ENDPOINT_FIELDS`]); the other fields are
//! skipped without being built. Every other kind is kept whole: pools are written back, and the
//! rest is small.
//!
//! The kind must be known before the fields it prunes, as it is in what kubectl and the API
//! server print (`apiVersion` and `kind` first); an object whose `kind` comes later, or that has
//! none, is kept whole — correct, only larger.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Which fields of a value to keep.
#[derive(Clone, Copy, Debug)]
pub enum Keep {
    All,
    /// Only these keys of a map, each kept as said; other keys are skipped.
    Fields(&'static [(&'static str, Keep)]),
}

/// What [`super::workload::Pod::decode`] reads.
pub const POD_FIELDS: Keep = Keep::Fields(&[
    ("apiVersion", Keep::All),
    ("kind", Keep::All),
    ("metadata", Keep::Fields(&[("name", Keep::All), ("namespace", Keep::All), ("annotations", Keep::Fields(&[("ipam.cilium.io/ip-pool", Keep::All)]))])),
    ("spec", Keep::Fields(&[("nodeName", Keep::All), ("hostNetwork", Keep::All)])),
    ("status", Keep::Fields(&[("phase", Keep::All), ("podIP", Keep::All), ("podIPs", Keep::All)])),
]);

/// What [`super::workload::Endpoint::decode`] reads.
pub const ENDPOINT_FIELDS: Keep = Keep::Fields(&[
    ("apiVersion", Keep::All),
    ("kind", Keep::All),
    ("metadata", Keep::Fields(&[("name", Keep::All), ("namespace", Keep::All)])),
    ("status", Keep::Fields(&[("networking", Keep::Fields(&[("addressing", Keep::All)]))])),
]);

/// What is kept of objects of `kind`, when it is one that comes in bulk.
pub fn fields_of(kind: &str) -> Option<Keep> {
    match kind {
        "Pod" => Some(POD_FIELDS),
        "CiliumEndpoint" => Some(ENDPOINT_FIELDS),
        _ => None,
    }
}

/// Drops in place what the decoder of `kind` does not read: the in-memory twin of decoding
/// with [`Slim`], for objects that arrive decoded (watch events). Other kinds are left whole.
pub fn retain_read_fields(object: &mut Value, kind: &str) {
    if let Some(keep) = fields_of(kind) {
        retain(object, keep);
    }
}

fn retain(value: &mut Value, keep: Keep) {
    if let (Keep::Fields(fields), Value::Object(map)) = (keep, value) {
        map.retain(|key, _| fields.iter().any(|(name, _)| name == key));
        for (name, sub) in fields {
            if let Some(inner) = map.get_mut(*name) {
                retain(inner, *sub);
            }
        }
    }
}

/// An object, a list of objects, or any other document, with Pods and CiliumEndpoints slimmed.
#[derive(Debug, PartialEq)]
pub struct Slim(pub Value);

impl From<Slim> for Value {
    fn from(Slim(value): Slim) -> Value {
        value
    }
}

impl<'de> de::Deserialize<'de> for Slim {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Slim, D::Error> {
        deserializer.deserialize_any(ObjectVisitor { inherited_kind: None }).map(Slim)
    }
}

/// A document or list item: a map whose `kind` decides what is kept, or (at the top) an array of them.
#[derive(Clone, Copy)]
struct ObjectVisitor<'k> {
    /// The item kind a typed list (`PodList`) gives items that name none.
    inherited_kind: Option<&'k str>,
}

impl<'de> DeserializeSeed<'de> for ObjectVisitor<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Scalars become the `Value`s serde_json would build.
macro_rules! scalar_visits {
    () => {
        fn visit_bool<E>(self, v: bool) -> Result<Value, E> { Ok(Value::Bool(v)) }
        fn visit_i64<E>(self, v: i64) -> Result<Value, E> { Ok(Value::from(v)) }
        fn visit_u64<E>(self, v: u64) -> Result<Value, E> { Ok(Value::from(v)) }
        fn visit_f64<E>(self, v: f64) -> Result<Value, E> { Ok(Value::from(v)) }
        fn visit_str<E>(self, v: &str) -> Result<Value, E> { Ok(Value::String(v.to_string())) }
        fn visit_string<E>(self, v: String) -> Result<Value, E> { Ok(Value::String(v)) }
        fn visit_unit<E>(self) -> Result<Value, E> { Ok(Value::Null) }
        fn visit_none<E>(self) -> Result<Value, E> { Ok(Value::Null) }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> { d.deserialize_any(self) }
    };
}

impl<'de> Visitor<'de> for ObjectVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object or list")
    }

    scalar_visits!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut kind: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            let known_kind = kind.as_deref().or(self.inherited_kind);
            let value = match (key.as_str(), known_kind.and_then(fields_of)) {
                ("items", None) => {
                    let item_kind = kind.as_deref().and_then(|k| k.strip_suffix("List")).filter(|k| !k.is_empty());
                    map.next_value_seed(ObjectVisitor { inherited_kind: item_kind.or(self.inherited_kind) })?
                }
                (_, None) => map.next_value::<Value>()?,
                (_, Some(Keep::Fields(fields))) => match fields.iter().find(|(name, _)| *name == key) {
                    Some((_, keep)) => map.next_value_seed(*keep)?,
                    None => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                },
                (_, Some(Keep::All)) => map.next_value::<Value>()?,
            };
            if key == "kind" {
                kind = value.as_str().map(str::to_string);
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

impl<'de> DeserializeSeed<'de> for Keep {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self {
            Keep::All => de::Deserialize::deserialize(deserializer),
            Keep::Fields(_) => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Keep {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }

    scalar_visits!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Keep::Fields(fields) = self else { unreachable!("Keep::All deserializes a whole Value") };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match fields.iter().find(|(name, _)| *name == key) {
                Some((_, keep)) => {
                    let value = map.next_value_seed(*keep)?;
                    out.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::workload::{Endpoint, Pod};
    use serde_json::json;

    fn big_pod(kind_first: bool) -> Value {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
                         "annotations": {"ipam.cilium.io/ip-pool": "blue", "checksum/config": "abc"}},
            "spec": {"nodeName": "node-1", "hostNetwork": false, "containers": [{"name": "app", "env": [{"name": "A", "value": "1"}]}]},
            "status": {"phase": "Running", "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}], "conditions": [{"type": "Ready"}]}});
        if !kind_first {
            let map = pod.as_object_mut().unwrap();
            let kind = map.remove("kind").unwrap();
            map.insert("kind".into(), kind);
        }
        pod
    }

    fn slim_json(value: &Value) -> Value {
        serde_json::from_str::<Slim>(&value.to_string()).unwrap().0
    }

    #[test]
    fn pods_keep_what_the_decoder_reads_and_decode_the_same() {
        let pod = big_pod(true);
        let slim = slim_json(&pod);
        assert_eq!(slim.pointer("/metadata/managedFields"), None);
        assert_eq!(slim.pointer("/spec/containers"), None);
        assert_eq!(slim.pointer("/status/conditions"), None);
        assert_eq!(slim.pointer("/metadata/annotations/checksum~1config"), None);
        let (full, slim) = (Pod::decode(&pod), Pod::decode(&slim));
        assert_eq!(format!("{full:?}"), format!("{slim:?}"));
        assert_eq!(slim.requested_pool.as_deref(), Some("blue"));
        assert_eq!(slim.ips.len(), 2);
    }

    #[test]
    fn retaining_in_place_equals_decoding_slim() {
        for pod in [big_pod(true), big_pod(false)] {
            let mut retained = pod.clone();
            retain_read_fields(&mut retained, "Pod");
            assert_eq!(retained, slim_json(&big_pod(true)));
        }
        let mut map = json!({"kind": "ConfigMap", "data": {"a": "b"}});
        retain_read_fields(&mut map, "ConfigMap");
        assert_eq!(map, json!({"kind": "ConfigMap", "data": {"a": "b"}}));
    }

    #[test]
    fn endpoints_are_slimmed_and_decode_the_same() {
        let endpoint = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "web-1", "namespace": "shop", "ownerReferences": [{"kind": "Pod"}]},
            "status": {"identity": {"id": 7}, "networking": {"addressing": [{"ipv4": "10.1.0.5", "ipv6": "fd00::5"}], "node": "10.0.0.1"}}});
        let slim = slim_json(&endpoint);
        assert_eq!(slim.pointer("/status/identity"), None);
        assert_eq!(slim.pointer("/metadata/ownerReferences"), None);
        assert_eq!(format!("{:?}", Endpoint::decode(&endpoint)), format!("{:?}", Endpoint::decode(&slim)));
    }

    #[test]
    fn other_kinds_late_kinds_and_lists() {
        let pool = json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue", "managedFields": [{"manager": "helm"}]},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}});
        assert_eq!(slim_json(&pool), pool, "pools are kept whole: writes need every field");
        let late = big_pod(false);
        assert_eq!(slim_json(&late), late, "a kind after the fields it would prune keeps the object whole");
        // kubectl prints a List's `items` before its `kind`; a PodList's items may name no kind.
        let list = json!({"apiVersion": "v1", "items": [big_pod(true), pool.clone()], "kind": "List"});
        let slim = slim_json(&list);
        assert_eq!(slim["items"][0].pointer("/spec/containers"), None);
        assert_eq!(slim["items"][1], pool);
        let mut unnamed = big_pod(true);
        unnamed.as_object_mut().unwrap().remove("kind");
        let typed = json!({"kind": "PodList", "apiVersion": "v1", "items": [unnamed]});
        assert_eq!(slim_json(&typed)["items"][0].pointer("/spec/containers"), None);
        let array = json!([big_pod(true), 1, "x", null, 2.5, true]);
        let slim = slim_json(&array);
        assert_eq!(slim[0].pointer("/metadata/managedFields"), None);
        assert_eq!(slim.as_array().unwrap()[1..], array.as_array().unwrap()[1..]);
    }

    #[test]
    fn yaml_streams_are_slimmed_too() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: b\n  managedFields:\n  - manager: x\nspec:\n  nodeName: node-1\n---\nkind: ConfigMap\ndata:\n  ipam: multi-pool\n";
        let docs: Vec<Slim> = serde_saphyr::from_multiple(text).unwrap();
        assert_eq!(docs[0].0, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "b"}, "spec": {"nodeName": "node-1"}}));
        assert_eq!(docs[1].0, json!({"kind": "ConfigMap", "data": {"ipam": "multi-pool"}}));
    }
}
