//! One resource read through a streaming list (the WatchList protocol): a watch asked with
//! `sendInitialEvents=true` gets every object as an ADDED event from the API server's watch cache,
//! then a bookmark annotated `k8s.io/initial-events-end`, where the read ends. Each event is
//! decoded as it arrives, Pods and CiliumEndpoints straight into the model's structs.
//!
//! Why not pages: the API server serves a paged list of a custom resource from etcd, one page
//! after another. At 150,000 pods the 300 pages of CiliumEndpoints took 33 s, the same objects
//! streamed 4.5 s (docs/performance.md, "Live usage at 150,000 pods").
//!
//! A server that cannot stream lists, or an account that may list but not watch, is read page by
//! page instead ([`falls_back_to_pages`]). Such a server refuses the request as invalid (422: the
//! WatchList feature off, or a server before Kubernetes 1.27, which forbids
//! `resourceVersionMatch` on a watch) or as a bad request (400: an endpoint that cannot stream).

use super::limits::{MAX_ITEMS, Refused};
use super::list::{Listed, Unusable};
use crate::json::duplicate_key;
use crate::model::Workloads;
use crate::model::slim::read_event_object;
use futures::{AsyncBufReadExt, StreamExt};
use kube::api::{ApiResource, DynamicObject, WatchParams};
use kube::core::Status;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// The annotation of the bookmark that follows a streaming list's last object.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether a streaming list that failed with `error` is to be read page by page instead: the
/// server refused it (400, 422) or the account may not watch (403; a list may still be allowed).
pub fn falls_back_to_pages(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if matches!(status.code, 400 | 403 | 405 | 422))
}

/// Every object of `resource` (in `namespace`, or all) through one streaming list, ended within
/// `deadline` (`None`: no deadline). The objects are counted against the list's object cap as
/// they arrive; items that are no object with a name are left out and counted in one warning.
pub async fn stream_list(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    deadline: Option<Duration>,
) -> Result<Listed, kube::Error> {
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    // The server is asked to end the stream a little after the deadline, so that the deadline,
    // which says what to do, is what ends a list too slow for it.
    let asked = deadline.map(|d| u32::try_from(d.as_secs().saturating_add(5)).unwrap_or(u32::MAX));
    let params = WatchParams { timeout: asked, bookmarks: true, send_initial_events: true, ..WatchParams::default() };
    // No resourceVersion: the objects as of now, as a list without one reads them.
    let request = kube::core::Request::new(&url).watch(&params, "").map_err(kube::Error::BuildRequest)?;
    let objects = Cell::new(0);
    let read = read_events(client, request, resource, &objects);
    match deadline {
        Some(within) => match tokio::time::timeout(within, read).await {
            Ok(listed) => listed,
            Err(_) => Err(Refused::StreamUnfinished { within, objects: objects.get() }.into_kube()),
        },
        None => read.await,
    }
}

/// The events of a streaming list up to the bookmark after its last object; `objects` counts
/// the objects read so far.
async fn read_events(
    client: &kube::Client,
    request: http::Request<Vec<u8>>,
    resource: &ApiResource,
    objects: &Cell<usize>,
) -> Result<Listed, kube::Error> {
    let mut lines = client.request_stream(request).await?.lines();
    let workloads = RefCell::new(Workloads::default());
    let mut items = Vec::new();
    let mut unusable = Unusable::default();
    while let Some(line) = lines.next().await {
        let line = line.map_err(read_failed)?;
        let seed = EventSeed { kind: &resource.kind, workloads: &workloads };
        let mut reader = serde_json::Deserializer::from_str(&line);
        let event = seed.deserialize(&mut reader).and_then(|event| reader.end().map(|()| event)).map_err(kube::Error::SerdeError)?;
        match event {
            Event::Added(object) => {
                objects.set(objects.get() + 1);
                if objects.get() > MAX_ITEMS {
                    return Err(Refused::TooManyItems(MAX_ITEMS).into_kube());
                }
                items.extend(object.and_then(|object| unusable.typed(object, resource)));
            }
            Event::Bookmark { last: false } => {}
            Event::Bookmark { last: true } => {
                let mut workloads = workloads.into_inner();
                unusable.keep_named(&mut workloads);
                unusable.warn(resource);
                return Ok(Listed { items, workloads });
            }
            Event::Error(status) => return Err(kube::Error::Api(Box::new(status))),
            Event::Other(kind) => {
                let unexpected = format!("a {kind} event before the last object of a streaming list");
                return Err(kube::Error::SerdeError(de::Error::custom(unexpected)));
            }
        }
    }
    Err(Refused::StreamCut(objects.get()).into_kube())
}

/// A failed read of the stream: why the plugin gave up on it (`limits.rs`: an event too large,
/// a stream cut inside an event, a silent one) when it did, else the transport's error.
fn read_failed(error: std::io::Error) -> kube::Error {
    match error.get_ref().and_then(|inner| Refused::find(inner)) {
        Some(refused) => refused.clone().into_kube(),
        None => kube::Error::ReadEvents(error),
    }
}

/// What one line of a streaming list says.
#[derive(Debug)]
enum Event {
    /// An object: `None` when it was decoded into the workloads.
    Added(Option<Value>),
    /// `last`: the bookmark after the last object.
    Bookmark {
        last: bool,
    },
    Error(Status),
    /// Any other event type (MODIFIED, DELETED): none comes before the last object.
    Other(String),
}

/// Reads one event (`{"type": …, "object": …}`, the type first as the API server writes it).
struct EventSeed<'a> {
    kind: &'a str,
    workloads: &'a RefCell<Workloads>,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = Event;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Event, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = Event;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a watch event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Event, A::Error> {
        let mut kind: Option<String> = None;
        let mut event = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" if kind.is_none() => kind = Some(map.next_value()?),
                "object" if event.is_none() => {
                    let Some(kind) = &kind else { return Err(de::Error::custom("a watch event whose object comes before its type")) };
                    event = Some(match kind.as_str() {
                        "ADDED" => Event::Added(map.next_value_seed(ObjectSeed { kind: self.kind, workloads: self.workloads })?),
                        "BOOKMARK" => Event::Bookmark { last: map.next_value::<Mark>()?.is_last() },
                        "ERROR" => Event::Error(map.next_value()?),
                        other => {
                            map.next_value::<IgnoredAny>()?;
                            Event::Other(other.to_string())
                        }
                    });
                }
                "type" | "object" => return Err(de::Error::custom(duplicate_key(&key))),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        event.ok_or_else(|| de::Error::custom("a watch event without an object"))
    }
}

/// The object of an ADDED event (`slim::read_event_object`).
struct ObjectSeed<'a> {
    kind: &'a str,
    workloads: &'a RefCell<Workloads>,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Value>, D::Error> {
        read_event_object(deserializer, self.kind, self.workloads)
    }
}

/// What is read of a bookmark: its annotations.
#[derive(Deserialize)]
struct Mark {
    #[serde(default)]
    metadata: MarkMetadata,
}

#[derive(Default, Deserialize)]
struct MarkMetadata {
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

impl Mark {
    fn is_last(&self) -> bool {
        self.metadata.annotations.get(INITIAL_EVENTS_END).is_some_and(|value| value == "true")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(line: &str, workloads: &RefCell<Workloads>) -> Result<Event, serde_json::Error> {
        let mut reader = serde_json::Deserializer::from_str(line);
        EventSeed { kind: "Pod", workloads }.deserialize(&mut reader)
    }

    #[test]
    fn pods_are_decoded_as_they_arrive_and_the_last_bookmark_is_told_from_others() {
        let workloads = RefCell::new(Workloads::default());
        let added = r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"shop","managedFields":[{"manager":"kubelet"}]},
            "spec":{"nodeName":"n1","containers":[{"name":"app"}]},"status":{"phase":"Running","podIPs":[{"ip":"10.1.0.5"}]}}}"#;
        assert!(matches!(event(added, &workloads).unwrap(), Event::Added(None)), "a pod is decoded, not kept as JSON");
        let pods = &workloads.borrow().pods;
        assert_eq!((pods.len(), &*pods[0].name, pods[0].node_name.as_deref()), (1, "web-1", Some("n1")));
        let mark = |annotations: &str| {
            format!(
                r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"9","annotations":{annotations}}}}}}}"#
            )
        };
        assert!(matches!(event(&mark(r#"{"k8s.io/initial-events-end":"true"}"#), &workloads).unwrap(), Event::Bookmark { last: true }));
        assert!(matches!(event(&mark("{}"), &workloads).unwrap(), Event::Bookmark { last: false }));
        assert_eq!(workloads.borrow().pods.len(), 1, "a bookmark names no pod, though its kind is Pod");
    }

    #[test]
    fn other_kinds_are_kept_and_hostile_events_refused() {
        let workloads = RefCell::new(Workloads::default());
        let node =
            r#"{"type":"ADDED","object":{"apiVersion":"cilium.io/v2","kind":"CiliumNode","metadata":{"name":"n1"},"spec":{"ipam":{}}}}"#;
        let Event::Added(Some(object)) = event(node, &workloads).unwrap() else { panic!("a node is kept") };
        assert_eq!(object["metadata"]["name"], "n1");
        let error = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"gone","code":410}}"#;
        assert!(matches!(event(error, &workloads).unwrap(), Event::Error(status) if status.code == 410));
        assert!(matches!(event(r#"{"type":"DELETED","object":{}}"#, &workloads).unwrap(), Event::Other(kind) if kind == "DELETED"));
        for hostile in [
            r#"{"object":{"kind":"Pod"},"type":"ADDED"}"#,
            r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
            r#"{"type":"ADDED"}"#,
            r#"{"type":"ADDED","object":{"kind":"PodList","items":[{"metadata":{"name":"x"}}]}}"#,
        ] {
            assert!(event(hostile, &workloads).is_err(), "refused: {hostile}");
        }
    }

    #[test]
    fn only_refusals_of_a_stream_fall_back_to_pages() {
        let status = |code: u16| kube::Error::Api(Box::new(Status { code, ..Default::default() }));
        for code in [400, 403, 405, 422] {
            assert!(falls_back_to_pages(&status(code)), "{code}");
        }
        for code in [401, 404, 410, 429, 500] {
            assert!(!falls_back_to_pages(&status(code)), "{code}");
        }
        assert!(!falls_back_to_pages(&Refused::StreamCut(3).into_kube()));
    }
}
