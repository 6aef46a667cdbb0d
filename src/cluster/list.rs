//! One resource listed page by page (`list_pages`), each page decoded straight from its bytes
//! within the list's bounds (`limits.rs`): Pods and CiliumEndpoints into the model's structs,
//! everything else as typed JSON. The reads of `read.rs` and `writes.rs` list through here.

use super::limits::{MAX_ITEMS, Pagination, Refused};
use crate::model::Workloads;
use crate::model::slim::{ItemBudget, SlimJson};
use kube::api::{ApiResource, DynamicObject, ListParams, TypeMeta};
use serde_json::Value;

/// `plural.group` as kubectl and RBAC name a resource.
pub(super) fn resource_name(resource: &ApiResource) -> String {
    if resource.group.is_empty() { resource.plural.clone() } else { format!("{}.{}", resource.plural, resource.group) }
}

/// The items of a list: Pods and CiliumEndpoints decoded as they were read (`model::slim`),
/// everything else as JSON.
#[derive(Default)]
pub struct Listed {
    pub items: Vec<Value>,
    pub workloads: Workloads,
}

/// Every object of `resource` (in `namespace`, or all), `page_size` per request, each response
/// decoded straight from its bytes: Pods and CiliumEndpoints into their structs, other items as
/// JSON typed as [`typed_value`]. A list that would not end (`source::limits::Pagination`) fails;
/// items that are no object (or have no name) are left out and counted in one warning.
pub async fn list_pages(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    page_size: u32,
) -> Result<Listed, kube::Error> {
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    let mut listed = Listed::default();
    let mut params = ListParams::default().limit(page_size);
    let mut pages = Pagination::default();
    let mut unusable = Unusable::default();
    loop {
        let request = kube::core::Request::new(&url).list(&params).map_err(kube::Error::BuildRequest)?;
        let mut page = page_of(client, request, pages.items_left()).await?;
        let mut list = page.document.unwrap_or_default();
        let mut count = page.workloads.len();
        page.workloads.pods.retain(|pod| unusable.keep(!pod.name.is_empty()));
        page.workloads.endpoints.retain(|endpoint| unusable.keep(!endpoint.name.is_empty()));
        if let Some(Value::Array(items)) = list.get_mut("items").map(Value::take) {
            count += items.len();
            listed.items.extend(items.into_iter().filter_map(|mut item| {
                let map = item.as_object_mut().filter(|map| {
                    map.get("metadata").and_then(|m| m.get("name")).is_some_and(|n| n.as_str().is_some_and(|n| !n.is_empty()))
                });
                let map = unusable.keep_some(map)?;
                map.entry("apiVersion").or_insert_with(|| Value::from(resource.api_version.clone()));
                map.entry("kind").or_insert_with(|| Value::from(resource.kind.clone()));
                Some(item)
            }));
        }
        listed.workloads.append(page.workloads);
        match pages.next(count, list.pointer("/metadata/continue").and_then(Value::as_str)).map_err(Refused::into_kube)? {
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

/// Whether `resource` can be listed, with the failures [`list_pages`] would meet first: one
/// request for one object, its answer decoded and dropped (`Cluster::layout`).
pub async fn probe(client: &kube::Client, resource: &ApiResource, namespace: Option<&str>) -> Result<Listed, kube::Error> {
    let url = <DynamicObject as kube::Resource>::url_path(resource, namespace);
    let request = kube::core::Request::new(&url).list(&ListParams::default().limit(1)).map_err(kube::Error::BuildRequest)?;
    page_of(client, request, MAX_ITEMS).await?;
    Ok(Listed::default())
}

/// One page of a list, decoded from its bytes while its items are counted against `items_left`
/// (the rest of the list's object cap): a page with more is refused as soon as one item too many
/// is read, before the rest are built (a 40 MiB page of `{}` items is millions of objects).
async fn page_of(client: &kube::Client, request: http::Request<Vec<u8>>, items_left: usize) -> Result<SlimJson, kube::Error> {
    let text = client.request_text(request).await?;
    let budget = ItemBudget::new(items_left);
    let mut reader = serde_json::Deserializer::from_str(&text);
    let page = budget.read(&mut reader).and_then(|page| reader.end().map(|()| page));
    page.map_err(|e| if budget.exceeded() { Refused::TooManyItems(MAX_ITEMS).into_kube() } else { kube::Error::SerdeError(e) })
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

    fn keep_some<T>(&mut self, usable: Option<T>) -> Option<T> {
        self.keep(usable.is_some());
        usable
    }
}

/// An object as JSON with `apiVersion` and `kind` (list items of built-in kinds omit them).
pub fn typed_value(mut object: DynamicObject, resource: &ApiResource) -> Value {
    if object.types.is_none() {
        object.types = Some(TypeMeta { api_version: resource.api_version.clone(), kind: resource.kind.clone() });
    }
    serde_json::to_value(object).expect("a Kubernetes object serializes to JSON")
}
