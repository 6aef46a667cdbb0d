//! Decoding the kinds that come by the hundred thousand straight into the model's structs. A
//! real Pod is 5–10 KB of JSON (managedFields, containers, env, volumes) of which the plugin reads
//! a dozen fields; building a `serde_json::Value` of every pod of a dump, or even of only the
//! fields read (a `Value` map costs about a kilobyte), makes memory follow the number of objects
//! many times over. [`Slim`] deserializes a document (JSON or YAML, streamed) keeping only the
//! fields the Pod and CiliumEndpoint decoders read ([`POD_FIELDS`], [`ENDPOINT_FIELDS`]) — the
//! others are skipped without being built — decodes each such object at once into its struct
//! ([`Workloads`]) and lifts it out of the document. Of a pool only what its decoder and the
//! edits read is kept where a caller asks for it ([`POOL_FIELDS`], [`EDITED`]: the rest is
//! walked, not built); other kinds are kept whole (they are small).
//!
//! The kind must be known before the fields it prunes, as it is in what kubectl and the API
//! server print (`apiVersion` and `kind` first); an object whose `kind` comes later is read whole
//! and then decoded — correct, only slower.

pub use super::item_budget::{ItemBudget, Over};
use super::pool::MAX_POOL_CIDRS;
use super::workload::{Endpoint, POOL_ANNOTATION, Pod, Workloads};
use crate::json::{StrictSeed, duplicate_key, insert_unique};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// Which fields of a value to keep.
#[derive(Clone, Copy, Debug)]
pub enum Keep {
    All,
    /// Only these keys of a map, each kept as said; other keys are skipped.
    Fields(&'static [(&'static str, Keep)]),
    /// Each element of a sequence, kept as said.
    Each(&'static Keep),
    /// Of an array, only its first elements (whole); the rest are skipped unbuilt. Any other
    /// value whole.
    Prefix(usize),
}

/// What [`super::workload::Pod::decode`] reads, and the resourceVersion `usage --watch` resumes
/// from (`cluster::watch` parses what it is sent with these fields too).
pub const POD_FIELDS: Keep = Keep::Fields(&[
    ("apiVersion", Keep::All),
    ("kind", Keep::All),
    (
        "metadata",
        Keep::Fields(&[
            ("name", Keep::All),
            ("namespace", Keep::All),
            ("resourceVersion", Keep::All),
            ("annotations", Keep::Fields(&[(POOL_ANNOTATION, Keep::All)])),
        ]),
    ),
    ("spec", Keep::Fields(&[("nodeName", Keep::All), ("hostNetwork", Keep::All)])),
    ("status", Keep::Fields(&[("phase", Keep::All), ("podIP", Keep::All), ("podIPs", Keep::All)])),
]);

/// What [`super::workload::Endpoint::decode`] reads, and the resourceVersion (see [`POD_FIELDS`]).
pub const ENDPOINT_FIELDS: Keep = Keep::Fields(&[
    ("apiVersion", Keep::All),
    ("kind", Keep::All),
    ("metadata", Keep::Fields(&[("name", Keep::All), ("namespace", Keep::All), ("resourceVersion", Keep::All)])),
    ("status", Keep::Fields(&[("networking", Keep::Fields(&[("addressing", Keep::All)]))])),
]);

/// What a pool's decoder reads of `spec.ipv4` and `spec.ipv6` (`Pool::decode`): of its lists, one
/// entry past the cap it refuses them at (a pool of 3.1 M CIDRs cost 1,078 MiB, issue 53).
const POOL_FAMILY: Keep =
    Keep::Fields(&[("maskSize", Keep::All), ("cidrs", Keep::Prefix(MAX_POOL_CIDRS + 1)), ("pool", Keep::Prefix(MAX_POOL_CIDRS + 1))]);

/// What is read of a pool's `metadata` and `spec` by `Pool::decode` (and the uid duplicate pools
/// are told apart by).
const POOL_METADATA: Keep = Keep::Fields(&[("name", Keep::All), ("uid", Keep::All), ("annotations", Keep::All)]);
const POOL_SPEC: Keep = Keep::Fields(&[
    ("ipv4", POOL_FAMILY),
    ("ipv6", POOL_FAMILY),
    ("allowFirstIP", Keep::All),
    ("allowLastIP", Keep::All),
    ("podSelector", Keep::All),
    ("namespaceSelector", Keep::All),
]);

/// What is read of a pool by `Pool::decode` (and the uid duplicate pools are told apart by),
/// for commands that only read: a command that writes a pool back keeps it whole.
pub const POOL_FIELDS: Keep =
    Keep::Fields(&[("apiVersion", Keep::All), ("kind", Keep::All), ("metadata", POOL_METADATA), ("spec", POOL_SPEC)]);

/// What an edit of a manifest (`reserve-range -f --in-place`, `migrate -f`) reads of a document
/// holding a pool: [`POOL_FIELDS`] of the document and of the items of a list (what the edits
/// change is among them). The rest is copied as text (`manifest::rewrite_fields`).
pub static EDITED: Keep = Keep::Fields(&[
    ("apiVersion", Keep::All),
    ("kind", Keep::All),
    ("metadata", POOL_METADATA),
    ("spec", POOL_SPEC),
    ("items", Keep::Each(&EDITED)),
]);

/// What is kept of objects of `kind`, when it is one that comes in bulk.
pub fn fields_of(kind: &str) -> Option<Keep> {
    match kind {
        "Pod" => Some(POD_FIELDS),
        "CiliumEndpoint" => Some(ENDPOINT_FIELDS),
        _ => None,
    }
}

/// Whether `Snapshot::from_objects` reads more of an object of `kind` than its kind (it counts
/// the others); lists hold objects.
pub fn is_used(kind: &str) -> bool {
    matches!(
        kind,
        "CiliumPodIPPool" | "CiliumNode" | "Pod" | "CiliumEndpoint" | "ConfigMap" | "CustomResourceDefinition" | "DaemonSet" | "Deployment"
    ) || kind.ends_with("List")
}

/// The kind `Snapshot::from_objects` counts `document` under when it reads nothing more of it
/// (`""`: an object without a kind, or a value that is no object); `None` when it reads it. Such
/// a document need not be kept: its count is all that it adds ([`crate::files::inputs`] counts it as it
/// streams).
pub fn only_counted(document: &Value) -> Option<&str> {
    match document.get("kind").and_then(Value::as_str) {
        Some(kind) if is_used(kind) => None,
        Some(kind) => Some(kind),
        None => Some(""),
    }
}

/// One document (an object, a list, or any other value) as streamed in: Pods and CiliumEndpoints
/// that are the document itself or items of a list are decoded (from only the fields their
/// decoders read) and lifted out into `workloads`, in order; `document` is what remains — `None`
/// when the document was one such object, a list with those items taken out otherwise.
///
/// Lifting happens exactly where `Snapshot::from_objects` would find the object (a document, a
/// top-level array's element, an item of a `*List`). When a list's `kind` comes after its items
/// and turns out not to be a list, the items were lifted wrongly: decoding fails, and the caller
/// reads the text whole instead.
///
/// `ARRAYS_HOLD_DOCUMENTS`: a top-level array is a sequence of documents (JSON, as
/// `manifest::parse` reads it) rather than one document that is an array (YAML).
/// `READ_POOLS`: pools are kept with only the fields the model reads ([`POOL_FIELDS`]), for
/// commands that never write them back (a 5-million-entry array in a field nobody reads is
/// skipped, not built); otherwise whole.
#[derive(Debug)]
pub struct Slim<const ARRAYS_HOLD_DOCUMENTS: bool, const READ_POOLS: bool = false> {
    pub document: Option<Value>,
    pub workloads: Workloads,
}

/// A JSON text's documents, or a live list page.
pub type SlimJson = Slim<true>;
/// One document of a YAML stream.
pub type SlimYaml = Slim<false>;

impl<'de, const ARRAYS_HOLD_DOCUMENTS: bool, const READ_POOLS: bool> de::Deserialize<'de> for Slim<ARRAYS_HOLD_DOCUMENTS, READ_POOLS> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ItemBudget::new(usize::MAX).read(deserializer)
    }
}

impl ItemBudget {
    /// A [`Slim`] from `deserializer`, its lists' items counted.
    pub fn read<'de, D: Deserializer<'de>, const ARRAYS_HOLD_DOCUMENTS: bool, const READ_POOLS: bool>(
        &self,
        deserializer: D,
    ) -> Result<Slim<ARRAYS_HOLD_DOCUMENTS, READ_POOLS>, D::Error> {
        let lifted = RefCell::new(Workloads::default());
        let place = if ARRAYS_HOLD_DOCUMENTS { Place::Document } else { Place::Item };
        let visitor = ObjectVisitor { inherited_kind: None, place, lifted: &lifted, budget: self, read_pools: READ_POOLS };
        let document = deserializer.deserialize_any(visitor)?;
        Ok(Slim { document, workloads: lifted.into_inner() })
    }
}

/// Where a value sits, which decides whether an object there is one `from_objects` would see.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// A whole document: an object, or an array whose elements are documents.
    Document,
    /// An element of a top-level array or of a list's `items`: an object, or an array (one value
    /// without a kind).
    Item,
    /// The value of a list's `items`: an array of items, or anything else kept as it is.
    Items,
}

/// A document, list item or `items` array: a map whose `kind` decides what is kept and what is lifted.
#[derive(Clone, Copy)]
struct ObjectVisitor<'k> {
    /// The item kind a typed list (`PodList`) gives items that name none.
    inherited_kind: Option<&'k str>,
    place: Place,
    lifted: &'k RefCell<Workloads>,
    /// Counts the items of lists.
    budget: &'k ItemBudget,
    /// Pools are read as far as [`POOL_FIELDS`] goes.
    read_pools: bool,
}

impl ObjectVisitor<'_> {
    /// What is kept of an object of `kind`; `None`: all of it.
    fn fields_of(&self, kind: &str) -> Option<Keep> {
        match kind {
            super::pool::POOL_KIND if self.read_pools => Some(POOL_FIELDS),
            _ => fields_of(kind),
        }
    }
}

impl<'de> DeserializeSeed<'de> for ObjectVisitor<'_> {
    /// `None`: the object was lifted out.
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Value>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Scalars become the `Value`s serde_json would build (`wrap`: `Some` for the object visitor).
macro_rules! scalar_visits {
    ($out:ty, $wrap:expr) => {
        fn visit_bool<E>(self, v: bool) -> Result<$out, E> {
            Ok($wrap(Value::Bool(v)))
        }
        fn visit_i64<E>(self, v: i64) -> Result<$out, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_u64<E>(self, v: u64) -> Result<$out, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_f64<E>(self, v: f64) -> Result<$out, E> {
            Ok($wrap(Value::from(v)))
        }
        fn visit_str<E>(self, v: &str) -> Result<$out, E> {
            Ok($wrap(Value::String(v.to_string())))
        }
        fn visit_string<E>(self, v: String) -> Result<$out, E> {
            Ok($wrap(Value::String(v)))
        }
        fn visit_unit<E>(self) -> Result<$out, E> {
            Ok($wrap(Value::Null))
        }
        fn visit_none<E>(self) -> Result<$out, E> {
            Ok($wrap(Value::Null))
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<$out, D::Error> {
            d.deserialize_any(self)
        }
    };
}

impl<'de> Visitor<'de> for ObjectVisitor<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object or list")
    }

    scalar_visits!(Option<Value>, Some);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let mut items = Vec::new();
        if self.place == Place::Item {
            // An array where an object belongs (a YAML document that is a sequence, an array in
            // a list's items) is one object without a kind to `from_objects`, whatever it holds:
            // its elements are skipped, not built (a sequence of millions of scalars costs nothing).
            while seq.next_element::<IgnoredAny>()?.is_some() {}
        } else {
            while let Some(item) = seq.next_element_seed(ObjectVisitor { place: Place::Item, ..self })? {
                if self.place == Place::Items {
                    self.budget.take()?;
                    if item.as_ref().is_some_and(|item| !self.budget.keeps(item)) {
                        continue;
                    }
                }
                items.extend(item);
            }
        }
        Ok(Some(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        if self.place == Place::Items {
            return Ok(Some(StrictSeed.visit_map(map)?));
        }
        let mut out = Map::new();
        let mut kind: Option<String> = None;
        let lifted_before = self.lifted.borrow().len();
        // The keys skipped, so that a repeated one is refused as a whole reading refuses it.
        let mut skipped: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) || skipped.contains(&key) {
                return Err(de::Error::custom(duplicate_key(&key)));
            }
            let known_kind = kind.as_deref().or(self.inherited_kind);
            // Of an object of a kind the snapshot does not use, only what says so is kept.
            if known_kind.is_some_and(|k| !is_used(k)) && key != "kind" && key != "apiVersion" {
                map.next_value::<IgnoredAny>()?;
                skipped.push(key);
                continue;
            }
            let value = match (key.as_str(), known_kind.and_then(|k| self.fields_of(k))) {
                // A list's items, unless the object is known to be something else.
                ("items", None) if known_kind.is_none_or(|k| k.ends_with("List")) => {
                    // Only a typed list names its items' kind; `from_objects` passes it no further down.
                    let item_kind = kind.as_deref().and_then(|k| k.strip_suffix("List")).filter(|k| !k.is_empty());
                    let items = ObjectVisitor { inherited_kind: item_kind, place: Place::Items, ..self };
                    map.next_value_seed(items)?.unwrap_or_default()
                }
                (_, None) | (_, Some(Keep::All)) => map.next_value_seed(StrictSeed)?,
                (_, Some(keep @ (Keep::Each(_) | Keep::Prefix(_)))) => map.next_value_seed(keep)?,
                (_, Some(Keep::Fields(fields))) => match fields.iter().find(|(name, _)| *name == key) {
                    Some((_, keep)) => map.next_value_seed(*keep)?,
                    None => {
                        map.next_value::<IgnoredAny>()?;
                        skipped.push(key);
                        continue;
                    }
                },
            };
            if key == "kind" {
                kind = value.as_str().map(str::to_string);
            }
            out.insert(key, value);
        }
        if self.lifted.borrow().len() > lifted_before && !kind.as_deref().is_some_and(|k| k.ends_with("List")) {
            return Err(de::Error::custom("objects were taken out of the items of something that is not a list"));
        }
        let object = Value::Object(out);
        let mut lifted = self.lifted.borrow_mut();
        match kind.as_deref().or(self.inherited_kind) {
            Some("Pod") => {
                let pod = Pod::decode_into(&object, &mut lifted.names);
                lifted.pods.push(pod)
            }
            Some("CiliumEndpoint") => {
                let endpoint = Endpoint::decode_into(&object, &mut lifted.names);
                lifted.endpoints.push(endpoint)
            }
            _ => return Ok(Some(object)),
        }
        Ok(None)
    }
}

impl<'de> DeserializeSeed<'de> for Keep {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        match self {
            Keep::All => StrictSeed.deserialize(deserializer),
            Keep::Fields(_) | Keep::Each(_) | Keep::Prefix(_) => deserializer.deserialize_any(self),
        }
    }
}

impl<'de> Visitor<'de> for Keep {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a value")
    }

    scalar_visits!(Value, std::convert::identity);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let kept = if let Keep::Prefix(kept) = self { kept } else { usize::MAX };
        let mut items = Vec::new();
        match self {
            Keep::Each(keep) => {
                while let Some(item) = seq.next_element_seed(*keep)? {
                    items.push(item);
                }
            }
            _ => {
                while items.len() < kept {
                    let Some(item) = seq.next_element_seed(StrictSeed)? else { break };
                    items.push(item);
                }
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let Keep::Fields(fields) = self else { return StrictSeed.visit_map(map) };
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match fields.iter().find(|(name, _)| *name == key) {
                Some((_, keep)) => {
                    let value = map.next_value_seed(*keep)?;
                    insert_unique(&mut out, key, value)?;
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
    use crate::model::Snapshot;
    use serde_json::json;
    use std::sync::atomic::AtomicBool;

    fn big_pod(kind_first: bool) -> Value {
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "7", "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
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

    fn endpoint() -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumEndpoint", "metadata": {"name": "web-1", "namespace": "shop", "ownerReferences": [{"kind": "Pod"}]},
            "status": {"identity": {"id": 7}, "networking": {"addressing": [{"ipv4": "10.1.0.5", "ipv6": "fd00::5"}], "node": "10.0.0.1"}}})
    }

    fn pool() -> Value {
        json!({"apiVersion": "cilium.io/v2", "kind": "CiliumPodIPPool", "metadata": {"name": "blue", "managedFields": [{"manager": "helm"}]},
            "spec": {"ipv4": {"cidrs": ["10.0.0.0/16"], "maskSize": 24}}})
    }

    fn slim_json(value: &Value) -> serde_json::Result<SlimJson> {
        serde_json::from_str::<SlimJson>(&value.to_string())
    }

    fn debug<T: fmt::Debug>(items: &[T]) -> Vec<String> {
        items.iter().map(|o| format!("{o:?}")).collect()
    }

    /// A JSON text's documents as the whole-text reader takes them: a top-level array holds
    /// documents, nulls are dropped.
    fn documents(value: Option<Value>) -> Vec<Value> {
        let all = match value {
            Some(Value::Array(items)) => items,
            other => other.into_iter().collect(),
        };
        all.into_iter().filter(|d| !d.is_null()).collect()
    }

    /// What `Snapshot::from_objects` makes of the JSON text read whole, and of its slim reading.
    fn snapshots_agree(value: &Value) {
        let slim = slim_json(value).unwrap();
        let whole = Snapshot::from_objects(documents(Some(value.clone())));
        let read = Snapshot::from_read(documents(slim.document), slim.workloads);
        assert_eq!(format!("{:?}", read.pods), format!("{:?}", whole.pods), "{value}");
        assert_eq!(format!("{:?}", read.endpoints), format!("{:?}", whole.endpoints), "{value}");
        assert_eq!(read.skipped, whole.skipped, "{value}");
        assert_eq!(read.pools.len(), whole.pools.len(), "{value}");
    }

    #[test]
    fn pods_are_decoded_from_what_their_decoder_reads() {
        for pod in [big_pod(true), big_pod(false)] {
            let slim = slim_json(&pod).unwrap();
            assert_eq!(slim.document, None, "the document was the pod: it is lifted out");
            assert_eq!(debug(&slim.workloads.pods), debug(&[Pod::decode(&pod)]));
            assert!(slim.workloads.endpoints.is_empty());
            let decoded = &slim.workloads.pods[0];
            assert_eq!((decoded.requested_pool.as_deref(), decoded.ips.len()), (Some("blue"), 2));
        }
        let watched = POD_FIELDS.deserialize(&big_pod(false)).unwrap();
        assert_eq!(watched.pointer("/metadata/managedFields"), None);
        assert_eq!(watched.pointer("/spec/containers"), None);
        assert_eq!(watched.pointer("/metadata/resourceVersion"), Some(&json!("7")), "a watch resumes from it");
        assert_eq!(watched.pointer("/metadata/uid"), None);
        assert_eq!(watched.pointer("/metadata/annotations/checksum~1config"), None);
        assert_eq!(format!("{:?}", Pod::decode(&watched)), format!("{:?}", Pod::decode(&big_pod(true))));
    }

    #[test]
    fn endpoints_are_decoded_and_other_kinds_kept_whole() {
        let slim = slim_json(&endpoint()).unwrap();
        assert_eq!(debug(&slim.workloads.endpoints), debug(&[Endpoint::decode(&endpoint())]));
        let slim = slim_json(&pool()).unwrap();
        assert_eq!(slim.document, Some(pool()), "pools are kept whole: writes need every field");
        assert!(slim.workloads.is_empty());
        let watched = ENDPOINT_FIELDS.deserialize(&endpoint()).unwrap();
        assert_eq!(debug(&[Endpoint::decode(&watched)]), debug(&[Endpoint::decode(&endpoint())]));
    }

    #[test]
    fn list_items_are_lifted_where_from_objects_would_find_them() {
        // kubectl prints a List's `items` before its `kind`.
        let list =
            json!({"apiVersion": "v1", "items": [big_pod(true), pool(), endpoint()], "kind": "List", "metadata": {"resourceVersion": ""}});
        let slim = slim_json(&list).unwrap();
        assert_eq!(
            slim.document,
            Some(json!({"apiVersion": "v1", "items": [pool()], "kind": "List", "metadata": {"resourceVersion": ""}}))
        );
        assert_eq!((slim.workloads.pods.len(), slim.workloads.endpoints.len()), (1, 1));
        snapshots_agree(&list);
        // A typed list's items may name no kind: they are of the list's kind.
        let mut unnamed = big_pod(true);
        unnamed.as_object_mut().unwrap().remove("kind");
        let typed = json!({"kind": "PodList", "apiVersion": "v1", "items": [unnamed.clone()]});
        assert_eq!(slim_json(&typed).unwrap().workloads.pods.len(), 1);
        snapshots_agree(&typed);
        // ... but not to lists nested in them, and a top-level JSON array holds documents.
        for value in [
            json!({"kind": "PodList", "items": [{"kind": "List", "items": [unnamed.clone()]}]}),
            json!([big_pod(true), 1, "x", null, 2.5, true, [big_pod(true)]]),
            json!({"kind": "List", "items": [{"kind": "List", "items": [big_pod(true)]}, [endpoint()]]}),
            json!({"kind": "PodList", "items": {"metadata": {"name": "a"}}}),
            json!({"kind": "ConfigMap", "items": [big_pod(true)]}),
            json!({"kind": "CiliumNodeList", "items": [{"metadata": {"name": "n"}, "items": [big_pod(true)], "kind": "CiliumNode"}]}),
        ] {
            snapshots_agree(&value);
        }
        let array = slim_json(&json!([big_pod(true), 1, [big_pod(true)]])).unwrap();
        assert_eq!(array.document, Some(json!([1, []])), "a nested array is one value, its elements skipped");
    }

    #[test]
    fn items_of_what_turns_out_not_to_be_a_list_fail_the_fast_path() {
        // The kind comes after the items it would have lifted: only a whole reading can tell.
        for value in [json!({"items": [big_pod(true)], "kind": "Template"}), json!({"items": [endpoint()]})] {
            assert!(slim_json(&value).is_err(), "{value}");
        }
        let twice = format!(r#"{{"kind": "List", "items": [{}], "kind": "Thing"}}"#, big_pod(true));
        assert!(serde_json::from_str::<SlimJson>(&twice).is_err(), "the last kind is the one a whole reading keeps");
        assert!(slim_json(&json!({"items": [pool()], "kind": "Template"})).is_ok(), "nothing lifted, nothing to undo");
    }

    #[test]
    fn yaml_documents_are_read_the_same_way() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: b\n  managedFields:\n  - manager: x\nspec:\n  nodeName: node-1\n---\nkind: ConfigMap\ndata:\n  ipam: multi-pool\n---\n- kind: Pod\n  metadata: {name: c}\n";
        let docs: Vec<SlimYaml> = serde_saphyr::from_multiple(text).unwrap();
        assert_eq!((docs[0].document.as_ref(), docs[0].workloads.pods.len()), (None, 1));
        let pod = &docs[0].workloads.pods[0];
        assert_eq!((&*pod.name, &*pod.namespace, pod.node_name.as_deref()), ("a", "b", Some("node-1")));
        assert_eq!(docs[1].document, Some(json!({"kind": "ConfigMap", "data": {"ipam": "multi-pool"}})));
        assert!(docs[2].workloads.is_empty(), "a YAML document that is an array is one value, as manifest::parse reads it");
    }

    #[test]
    fn list_items_are_counted_against_the_budget_as_they_are_read() {
        let page = json!({"kind": "List", "items": [{}, pool(), big_pod(true)], "metadata": {"continue": ""}}).to_string();
        let read = |items: usize| {
            let budget = ItemBudget::new(items);
            let slim: Result<SlimJson, _> = budget.read(&mut serde_json::Deserializer::from_str(&page));
            (slim.map(|s| s.workloads.pods.len()).ok(), budget.over())
        };
        assert_eq!(read(3), (Some(1), None));
        assert_eq!(read(2), (None, Some(Over::Items)), "the third item is one too many");
        assert_eq!(read(0), (None, Some(Over::Items)));
        static HALT: AtomicBool = AtomicBool::new(true);
        let halted = ItemBudget::new(3).halted_by(Some(&HALT));
        assert!(halted.read::<_, true, false>(&mut serde_json::Deserializer::from_str(&page)).is_err());
        assert_eq!(halted.over(), Some(Over::Halted), "a halted reading stops at its first item");
    }

    #[test]
    fn a_live_lists_nameless_items_are_counted_and_dropped_as_they_are_read() {
        let named = json!({"metadata": {"name": "n-1"}});
        let page = json!({"kind": "List", "items": [{}, named, [1], {"metadata": {"name": ""}}, 3, big_pod(true)]}).to_string();
        let budget = ItemBudget::new(6).dropping_nameless();
        let slim: SlimJson = budget.read(&mut serde_json::Deserializer::from_str(&page)).unwrap();
        assert_eq!(slim.document.unwrap()["items"], json!([named]), "only the named item is kept");
        assert_eq!((budget.nameless(), slim.workloads.pods.len()), (4, 1), "the pod is lifted, not counted as nameless");
        let kept: SlimJson = ItemBudget::new(6).read(&mut serde_json::Deserializer::from_str(&page)).unwrap();
        assert_eq!(kept.document.unwrap()["items"].as_array().map(Vec::len), Some(5), "files keep every item");
    }

    #[test]
    fn read_pools_keep_what_the_pool_decoder_reads() {
        let mut whole = pool();
        whole["metadata"]["uid"] = json!("u-1");
        whole["metadata"]["annotations"] = json!({"a": "b"});
        whole["spec"]["ipv6"] =
            json!({"pool": [{"cidr": "fd00::/104", "reservedRanges": [{"start": "fd00::1", "end": "fd00::2"}]}], "maskSize": 120});
        whole["spec"]["podSelector"] = json!({"matchLabels": {"app": "x"}});
        whole["spec"]["allowFirstIP"] = json!(true);
        whole["spec"]["ipv4"]["junk"] = json!([1, 2, 3]);
        whole["status"] = json!({"items": [1, 2]});
        let read: Slim<true, true> = serde_json::from_str(&whole.to_string()).unwrap();
        let read = read.document.unwrap();
        assert_eq!(read.pointer("/metadata/managedFields"), None);
        assert_eq!(read.pointer("/spec/ipv4/junk"), None);
        assert_eq!(read.get("status"), None);
        let decoded = |v: &Value| {
            let mut pool = crate::model::Pool::decode(v, None);
            pool.raw = Value::Null;
            format!("{pool:?}")
        };
        assert_eq!(decoded(&read), decoded(&whole));
        let kept: SlimJson = serde_json::from_str(&whole.to_string()).unwrap();
        assert_eq!(kept.document, Some(whole), "a command that writes keeps the pool whole");
    }

    #[test]
    fn only_counted_documents_are_those_the_snapshot_only_counts() {
        for (document, counted) in [
            (json!({}), Some("")),
            (json!(3), Some("")),
            (json!([1]), Some("")),
            (json!({"kind": "Service", "spec": {}}), Some("Service")),
            (json!({"kind": ""}), Some("")),
            (pool(), None),
            (json!({"kind": "List", "items": []}), None),
            (json!({"kind": "ConfigMap"}), None),
        ] {
            assert_eq!(only_counted(&document), counted, "{document}");
        }
    }
}
