//! CiliumEndpoints read as the API server's Tables (`as=Table`, `includeObject=None`), namespace
//! by namespace: each endpoint's name and the printer columns that show its addresses. A large API
//! server serves them for a fifth to a half of the CPU of the JSON list of the same endpoints, and a
//! sixth of its bytes (docs/performance.md, "CiliumEndpoints as Tables").
//!
//! The columns show `status.networking.addressing[0]`: Cilium writes one address pair per
//! endpoint (docs/design/cilium.md, "One address pair per CiliumEndpoint"). The read is taken only
//! where the CRD says its columns show that pair and the namespaces can be listed; otherwise
//! [`TableRead::NotTaken`] says why, and the caller lists the endpoints whole.

use super::limits::{MAX_ITEMS, Refused};
use super::list::{Listed, answer_of};
use super::resources::endpoints_resource;
use super::table_answers::{Namespaces, address_columns, namespace_names};
use super::table_rows::{RowCap, TableError, read_table};
use crate::model::Workloads;
use crate::model::slim::ItemBudget;
use crate::model::workload::Endpoint;
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;

/// The CRD whose printer columns are read.
const CRD_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ciliumendpoints.cilium.io";

/// What the API server is asked for: a Table, in JSON.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

/// Namespaces read at once.
const IN_FLIGHT: usize = 8;

/// The most namespaces read one by one: 32 round trips at [`IN_FLIGHT`], 1.6 s at a 50 ms round
/// trip, about what a 30 MB list takes at 20 MB/s; beyond, one list is the quicker guess. Counted
/// as the namespace list is read, whatever `limit` the server honours.
pub const MAX_NAMESPACES: usize = 256;

/// The endpoints as Tables, or why they were not read so.
pub enum TableRead {
    Read { listed: Listed, namespaces: usize },
    NotTaken(String),
}

/// The CiliumEndpoints of `namespace` (or of every namespace), as Tables. An answer refused by
/// the list's bounds ends the read (`Err`), as do failures the whole list would meet as well;
/// anything that only this way of reading meets is [`TableRead::NotTaken`]. The rows of all the
/// Tables together are held to the list's object cap, counted as they arrive.
pub async fn list(client: &kube::Client, namespace: Option<&str>) -> Result<TableRead, kube::Error> {
    let (columns, namespaces) = tokio::join!(crd_columns(client), namespaces(client, namespace));
    let (columns, namespaces) = match (columns, namespaces?) {
        (Ok(columns), Ok(namespaces)) => (Arc::new(columns), namespaces),
        (Err(why), _) | (_, Err(why)) => return Ok(TableRead::NotTaken(why)),
    };
    let rows = RowCap::new(MAX_ITEMS);
    // The first failure ends the read at once (the answers still coming are dropped); the
    // endpoints are then put in the namespaces' order, as the API server lists them (by name),
    // which is the order of the whole list.
    let read = futures::stream::iter(namespaces.iter().enumerate())
        .map(|(at, namespace)| {
            let table = table_of(client, namespace, columns.clone(), rows.clone());
            async move { table.await.map(|table| (at, table)) }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<_>>()
        .await;
    let mut tables = match read {
        Ok(tables) => tables,
        Err(Stop::Failed(e)) => return Err(e),
        Err(Stop::NotTaken(why)) => return Ok(TableRead::NotTaken(why)),
    };
    tables.sort_unstable_by_key(|(at, _)| *at);
    let endpoints: Vec<Endpoint> = tables.into_iter().flat_map(|(_, table)| table).collect();
    let workloads = Workloads { endpoints, ..Workloads::default() };
    Ok(TableRead::Read { listed: Listed { workloads, ..Listed::default() }, namespaces: namespaces.len() })
}

/// A GET of `path` (`what`, for `-v`), its answer decoded by `decode` as it streams in within the
/// list's bounds; `Ok(Err(why))` when the server refused it or it could not be decoded, `Err`
/// when the list's bounds refused it.
async fn get<T: Send + 'static>(
    client: &kube::Client,
    what: &str,
    path: String,
    decode: impl FnOnce(super::list::AnswerReader) -> Result<T, String> + Send + 'static,
) -> Result<Result<T, String>, kube::Error> {
    let request = http::Request::get(path).body(Vec::new()).expect("a valid request");
    match answer_of(client, request, move |reader, _protobuf, _counted| Ok(decode(reader))).await {
        Ok(decoded) => Ok(decoded),
        Err(e) if Refused::find(&e).is_some() => Err(e),
        Err(e) => Ok(Err(format!("{what}: {}", unreadable(&e)))),
    }
}

/// The names of the columns that show an endpoint's IPv4 and IPv6 address, from the CRD.
/// Whatever stops it, the endpoints are then listed whole (which has bounds of its own).
async fn crd_columns(client: &kube::Client) -> Result<[String; 2], String> {
    const WHAT: &str = "CRD ciliumendpoints.cilium.io";
    get(client, WHAT, CRD_PATH.to_string(), address_columns).await.unwrap_or_else(|e| Err(format!("{WHAT}: {}", unreadable(&e))))
}

/// `namespace`, or every namespace; `Ok(Err(why))` when they cannot be listed or are too many.
async fn namespaces(client: &kube::Client, namespace: Option<&str>) -> Result<Result<Vec<String>, String>, kube::Error> {
    let names = match namespace {
        Some(namespace) => vec![namespace.to_string()],
        None => {
            let path = format!("/api/v1/namespaces?limit={MAX_NAMESPACES}");
            match get(client, "namespaces", path, |reader| namespace_names(reader, MAX_NAMESPACES)).await? {
                Ok(Namespaces::Names(names)) => names,
                Ok(Namespaces::More) => return Ok(Err(format!("more than {MAX_NAMESPACES} namespaces"))),
                Err(why) => return Ok(Err(why)),
            }
        }
    };
    // Namespace names are DNS labels; anything else is not put in a URL.
    Ok(names.into_iter().map(|name| if is_label(&name) { Ok(name) } else { Err(format!("{name:?} is no namespace name")) }).collect())
}

fn is_label(name: &str) -> bool {
    !name.is_empty() && name.len() <= 63 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Why a request of this way of reading failed, for `-v`.
fn unreadable(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{} ({})", status.reason.to_lowercase(), status.code),
        _ => error.to_string(),
    }
}

/// Why the Tables were not all read.
enum Stop {
    /// What the whole list would have met as well: the read ends.
    Failed(kube::Error),
    /// What only a Table meets: the endpoints are listed whole.
    NotTaken(String),
}

/// The endpoints of one namespace, from its Table, its rows counted against `rows`.
async fn table_of(client: &kube::Client, namespace: &str, columns: Arc<[String; 2]>, rows: RowCap) -> Result<Vec<Endpoint>, Stop> {
    let path = <kube::api::DynamicObject as kube::Resource>::url_path(&endpoints_resource(), Some(namespace));
    let url = format!("{path}?includeObject=None");
    let request = http::Request::get(url).header(http::header::ACCEPT, TABLE).body(Vec::new()).expect("a valid request");
    let namespace: Arc<str> = Arc::from(namespace);
    let cap = rows.cap();
    let decoded = answer_of(client, request, {
        let namespace = namespace.clone();
        // The answer's byte bound grows with the rows counted in it, as a list's with its items.
        move |reader, _protobuf, counted| {
            Ok(read_table(reader, &namespace, &columns, ItemBudget::new(usize::MAX).counted_in(counted), &rows))
        }
    })
    .await;
    let what = format!("the Table of namespace {namespace}");
    match decoded {
        Ok(Ok(endpoints)) => Ok(endpoints),
        Ok(Err(TableError::Over)) => Err(Stop::Failed(Refused::TooManyItems(cap).into_kube())),
        Ok(Err(TableError::Unusable(why))) => Err(Stop::NotTaken(format!("{what}: {why}"))),
        Err(e @ kube::Error::Api(_)) => Err(Stop::NotTaken(format!("{what}: {}", unreadable(&e)))),
        Err(e) => Err(Stop::Failed(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_dns_labels_are_put_in_a_url() {
        assert!(is_label("team-1") && is_label(&"a".repeat(63)));
        assert!(!is_label("") && !is_label("a/b") && !is_label("Team") && !is_label("a?b") && !is_label(&"a".repeat(64)));
    }
}
