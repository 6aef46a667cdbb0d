//! One resource listed (`list_all`), in one answer or page by page, each answer decoded as its
//! bytes arrive within the list's bounds (`limits.rs`): Pods and CiliumEndpoints into the model's
//! structs, everything else as typed JSON. The reads of `read.rs` and `writes.rs` list through here.

use super::limits::{MAX_ITEMS, Pagination, Refused, WholeList};
use super::protobuf::{self, MEDIA_TYPE};
use crate::model::Workloads;
use crate::model::slim::{ItemBudget, Over, SlimJson};
use crate::model::workload::Names;
use bytes::Bytes;
use http_body_util::BodyExt;
use kube::api::{ApiResource, DynamicObject, ListParams, TypeMeta};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

/// `plural.group` as kubectl and RBAC name a resource.
pub(super) fn resource_name(resource: &ApiResource) -> String {
    if resource.group.is_empty() { resource.plural.clone() } else { format!("{}.{}", resource.plural, resource.group) }
}

/// The items of a list: Pods and CiliumEndpoints decoded as they were read (`model::slim`),
/// everything else as JSON; and the list's resourceVersion, from which a watch follows it.
#[derive(Default)]
pub struct Listed {
    pub items: Vec<Value>,
    pub workloads: Workloads,
    pub resource_version: Option<String>,
}

/// How one list is read.
#[derive(Clone, Copy, Debug)]
pub struct ListBounds {
    /// Objects per request; `None`: one answer, which the API server serves from its watch cache
    /// where a page after the first may come from etcd (docs/performance.md, "One answer per list").
    pub page_size: Option<u32>,
    /// The most objects the list may hold: one more is refused as it is read.
    pub max_items: usize,
    /// Stops the reading at the next object while set (`serve`'s memory budget).
    pub halt: Option<&'static AtomicBool>,
}

impl ListBounds {
    /// One answer of at most [`MAX_ITEMS`] objects.
    pub const WHOLE: ListBounds = ListBounds { page_size: None, max_items: MAX_ITEMS, halt: None };
}

/// Every object of `resource` (in `namespace`, or all), read within `bounds`, each answer decoded
/// as its bytes arrive: Pods (in protobuf) and CiliumEndpoints into their structs, other items as
/// JSON typed as [`typed_value`]. A list that would not end ([`Pagination`](super::limits::Pagination)) fails;
/// items that are no object (or have no name) are left out and counted in one warning.
pub async fn list_all(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    bounds: ListBounds,
) -> Result<Listed, kube::Error> {
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    let mut listed = Listed::default();
    let mut params = ListParams { limit: bounds.page_size, ..ListParams::default() };
    let mut pages = Pagination::capped(bounds.max_items);
    let mut unusable = Unusable::default();
    loop {
        let mut request = kube::core::Request::new(&url).list(&params).map_err(kube::Error::BuildRequest)?;
        if request.uri().query() == Some("") {
            // `pods?` as kube writes a list without parameters: `pods`, as kubectl and `-v` show it.
            *request.uri_mut() = http::Uri::try_from(request.uri().path()).expect("a path is a URI");
        }
        let mut page = page_of(client, request, Budget::of(&pages, bounds.halt), offers_protobuf(resource)).await?;
        let count = page.workloads.len() + page.items.len();
        page.workloads.pods.retain(|pod| unusable.keep(!pod.name.is_empty()));
        page.workloads.endpoints.retain(|endpoint| unusable.keep(!endpoint.name.is_empty()));
        unusable.0 += page.nameless;
        for mut item in page.items {
            if let Some(map) = item.as_object_mut() {
                map.entry("apiVersion").or_insert_with(|| Value::from(resource.api_version.clone()));
                map.entry("kind").or_insert_with(|| Value::from(resource.kind.clone()));
            }
            listed.items.push(item);
        }
        listed.workloads.append(page.workloads);
        listed.resource_version = page.resource_version;
        match pages.next(count, page.continue_token.as_deref()).map_err(Refused::into_kube)? {
            Some(token) => params = params.continue_token(token),
            None => break,
        }
    }
    if unusable.0 > 0 {
        warn_line!(
            "warning: the list of {} held {} item(s) that are not objects with a metadata.name; they are left out of the figures",
            resource_name(resource),
            unusable.0
        );
    }
    Ok(listed)
}

/// Whether `resource` can be listed, with the failures [`list_all`] would meet first: one
/// request for one object, its answer decoded and dropped (`Cluster::layout`).
pub async fn probe(client: &kube::Client, resource: &ApiResource, namespace: Option<&str>) -> Result<Listed, kube::Error> {
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    let request = kube::core::Request::new(&url).list(&ListParams::default().limit(1)).map_err(kube::Error::BuildRequest)?;
    page_of(client, request, Budget::of(&Pagination::default(), None), false).await?;
    Ok(Listed::default())
}

/// One page of a list, decoded.
#[derive(Default)]
struct Page {
    /// Objects other than Pods and CiliumEndpoints, as JSON, each with a name.
    items: Vec<Value>,
    /// Items left out of `items` for having no name (`ItemBudget::dropping_nameless`).
    nameless: usize,
    workloads: Workloads,
    resource_version: Option<String>,
    continue_token: Option<String>,
}

/// What one answer may hold: `items_left` of the list's `max_items`, read while `halt` is off.
#[derive(Clone, Copy)]
struct Budget {
    items_left: usize,
    max_items: usize,
    halt: Option<&'static AtomicBool>,
}

impl Budget {
    /// What the next answer of the list `pages` follows may hold.
    fn of(pages: &Pagination, halt: Option<&'static AtomicBool>) -> Budget {
        Budget { items_left: pages.items_left(), max_items: pages.max_items(), halt }
    }

    /// The budget as the decoder counts it, counted in `counted` (the body's byte bound reads it).
    fn counting(self, counted: Arc<AtomicUsize>) -> ItemBudget {
        ItemBudget::new(self.items_left).counted_in(counted).halted_by(self.halt)
    }

    /// The error of a reading stopped by its budget.
    fn refused(self, over: Over) -> kube::Error {
        match over {
            Over::Items => Refused::TooManyItems(self.max_items).into_kube(),
            Over::Halted => Refused::OverBudget.into_kube(),
        }
    }
}

/// Whether to ask for `resource` in protobuf: pods only. Custom resources have no protobuf
/// encoding, and pods are most of a live read's bytes (docs/performance.md, "One answer per list").
fn offers_protobuf(resource: &ApiResource) -> bool {
    resource.group.is_empty() && resource.plural == "pods"
}

/// Frames of an answer on their way to its decoder.
const FRAMES_IN_FLIGHT: usize = 16;

/// One answer of a list, decoded on a thread of its own as its bytes arrive (`WholeList` bounds
/// them), its items counted against `budget` (the rest of the list's object cap): an answer
/// with more is refused as soon as one item too many is read, before the rest are built (40 MiB
/// of `{}` items is millions of objects). With `protobuf`, the answer is asked for in protobuf,
/// then JSON; the server says which it sent.
async fn page_of(client: &kube::Client, mut request: http::Request<Vec<u8>>, budget: Budget, protobuf: bool) -> Result<Page, kube::Error> {
    if protobuf {
        let accept = format!("{MEDIA_TYPE}, application/json");
        request.headers_mut().insert(http::header::ACCEPT, accept.parse().expect("a valid header value"));
    }
    answer_of(client, request, move |reader, sent_protobuf, counted| decode(reader, sent_protobuf, budget, counted)).await
}

/// An answer's bytes as its decoder reads them.
pub(super) type AnswerReader = std::io::BufReader<Frames>;

/// One answer to `request`, bounded by `WholeList`, read by `decode` on a thread of its own as
/// its bytes arrive; `decode` is told whether the server sent protobuf, and is given the count
/// of items the body's byte bound reads. An error answer is kube's error for its Status.
pub(super) async fn answer_of<T: Send + 'static>(
    client: &kube::Client,
    mut request: http::Request<Vec<u8>>,
    decode: impl FnOnce(AnswerReader, bool, Arc<AtomicUsize>) -> Result<T, kube::Error> + Send + 'static,
) -> Result<T, kube::Error> {
    let whole = WholeList::default();
    let counted = whole.items.clone();
    request.extensions_mut().insert(whole);
    let response = client.send(request.map(kube::client::Body::from)).await?;
    let status = response.status();
    let sent_protobuf = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|content_type| content_type.to_str().ok())
        .is_some_and(|content_type| content_type.starts_with(MEDIA_TYPE));
    let mut body = response.into_body();
    if status.is_client_error() || status.is_server_error() {
        let body = error_body(&mut body).await?;
        return Err(api_error(status, &body, sent_protobuf));
    }
    let (frames, received) = tokio::sync::mpsc::channel(FRAMES_IN_FLIGHT);
    let reader = std::io::BufReader::with_capacity(64 << 10, Frames { received, current: Bytes::new() });
    let decoder = tokio::task::spawn_blocking(move || decode(reader, sent_protobuf, counted));
    let mut failed = None;
    while let Some(frame) = body.frame().await {
        match frame.map(http_body::Frame::into_data) {
            Ok(Ok(data)) => {
                // The decoder is gone when it failed: its error says why.
                if frames.send(data).await.is_err() {
                    break;
                }
            }
            Ok(Err(_trailers)) => {}
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    drop(frames);
    let decoded = decoder.await.expect("the decoder does not panic");
    // A broken answer ends its decoder inside it: the answer's error says why.
    match failed {
        Some(e) => Err(e),
        None => decoded,
    }
}

/// The most bytes of a refused answer that are read: its Status is a few hundred bytes, and eight
/// refused Tables at once with 100 MiB error bodies held 1,013 MiB (issue 53).
pub const MAX_ERROR_BODY: usize = 64 << 10;

/// The most characters of an error answer that is no Status shown in its error line.
const ERROR_TEXT_CHARS: usize = 300;

/// The first [`MAX_ERROR_BODY`] bytes of a refused answer's body; the rest is not read.
async fn error_body(body: &mut kube::client::Body) -> Result<Vec<u8>, kube::Error> {
    let mut kept = Vec::new();
    while kept.len() < MAX_ERROR_BODY {
        let Some(frame) = body.frame().await else { break };
        if let Ok(data) = frame?.into_data() {
            let room = MAX_ERROR_BODY - kept.len();
            kept.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    Ok(kept)
}

/// The frames of an answer as one byte stream, for a decoder on a thread of its own.
pub(super) struct Frames {
    received: tokio::sync::mpsc::Receiver<Bytes>,
    current: Bytes,
}

impl std::io::Read for Frames {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.received.blocking_recv() {
                Some(frame) => self.current = frame,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

/// One answer decoded from `reader`: a protobuf pod list, or JSON read by `model::slim`.
fn decode(reader: impl std::io::Read, protobuf: bool, budget: Budget, counted: Arc<AtomicUsize>) -> Result<Page, kube::Error> {
    let counter = budget.counting(counted);
    if protobuf {
        let mut names = Names::default();
        return match protobuf::read_pod_list(reader, &counter, &mut names) {
            Ok(list) => Ok(Page {
                workloads: Workloads { pods: list.pods, endpoints: Vec::new(), names },
                resource_version: list.resource_version,
                continue_token: list.continue_token,
                ..Page::default()
            }),
            Err(protobuf::ProtobufError::Stopped(over)) => Err(budget.refused(over)),
            Err(e) => Err(kube::Error::Service(Box::new(NotAPodList(e)))),
        };
    }
    let counter = counter.dropping_nameless();
    let mut reader = serde_json::Deserializer::from_reader(reader);
    let page = counter.read(&mut reader).and_then(|page| reader.end().map(|()| page));
    let page: SlimJson = page.map_err(|e| counter.over().map_or(kube::Error::SerdeError(e), |over| budget.refused(over)))?;
    let mut document = page.document.unwrap_or_default();
    let text = |field: &str| document.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).map(str::to_string);
    let (resource_version, continue_token) = (text("resourceVersion"), text("continue"));
    let items = match document.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    Ok(Page { items, nameless: counter.nameless(), workloads: page.workloads, resource_version, continue_token })
}

/// A protobuf page of pods that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the protobuf list of pods could not be read: {0}")]
struct NotAPodList(protobuf::ProtobufError);

/// The error an answer of `status` says, as kube words it: its Status (in protobuf or JSON),
/// else its text with the code.
fn api_error(status: http::StatusCode, body: &[u8], protobuf: bool) -> kube::Error {
    let decoded = if protobuf {
        protobuf::read_status(body).ok().map(|(code, reason, message)| kube::core::Status::failure(&message, &reason).with_code(code))
    } else {
        serde_json::from_slice::<kube::core::Status>(body).ok()
    };
    let status = decoded.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        // What is no Status is shown as its start: one error line, not a page of a stranger's text.
        let shown = match text.char_indices().nth(ERROR_TEXT_CHARS) {
            Some((cut, _)) => format!("{}… (cut)", &text[..cut]),
            None => text.to_string(),
        };
        kube::core::Status::failure(&shown, "Failed to parse error data").with_code(status.as_u16())
    });
    kube::Error::Api(Box::new(status))
}

/// How many list items could not be used.
#[derive(Default)]
struct Unusable(usize);

impl Unusable {
    /// Counts `usable == false`; returns `usable` (for `retain`).
    fn keep(&mut self, usable: bool) -> bool {
        self.0 += usize::from(!usable);
        usable
    }
}

/// The objects of a listing ([`Listed`], `cluster::list`) as a store takes them.
pub trait FromListed: Sized {
    /// Every object of `listed`; an error names the first one that cannot be read.
    fn from_listed(listed: Listed) -> Result<Vec<Self>, String>;
}

impl FromListed for DynamicObject {
    fn from_listed(listed: Listed) -> Result<Vec<DynamicObject>, String> {
        listed
            .items
            .into_iter()
            .map(|item| {
                // Read from a reference, so that the name is looked up only for the error.
                serde::Deserialize::deserialize(&item).map_err(|e| {
                    let name = item.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
                    format!("the listed object {name} could not be read: {e}")
                })
            })
            .collect()
    }
}

/// An object as JSON with `apiVersion` and `kind` (list items of built-in kinds omit them).
pub fn typed_value(mut object: DynamicObject, resource: &ApiResource) -> Value {
    if object.types.is_none() {
        object.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
    }
    serde_json::to_value(object).expect("a Kubernetes object serializes to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_objects_are_the_stores_objects_and_an_unreadable_one_is_named() {
        let node = serde_json::json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n1"}});
        let objects = DynamicObject::from_listed(Listed { items: vec![node], ..Listed::default() }).unwrap();
        assert_eq!(objects.iter().map(|o| o.metadata.name.as_deref()).collect::<Vec<_>>(), [Some("n1")]);
        let odd = serde_json::json!({"apiVersion": "cilium.io/v2", "kind": "CiliumNode", "metadata": {"name": "n2", "labels": "x"}});
        let error = DynamicObject::from_listed(Listed { items: vec![odd], ..Listed::default() }).unwrap_err();
        assert!(error.starts_with("the listed object n2 could not be read: "), "{error}");
    }
}
