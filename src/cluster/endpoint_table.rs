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
use crate::model::Workloads;
use crate::model::ip::Addr;
use crate::model::slim::ItemBudget;
use crate::model::workload::Endpoint;
use futures::{StreamExt, TryStreamExt};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::sync::Arc;

/// The printer columns of Cilium's CiliumEndpoint CRD (`v2`) that show an endpoint's addresses.
const ADDRESS_PATHS: [&str; 2] = [".status.networking.addressing[0].ipv4", ".status.networking.addressing[0].ipv6"];

/// The CRD whose printer columns are read.
const CRD_PATH: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ciliumendpoints.cilium.io";

/// What the API server is asked for: a Table, in JSON.
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";

/// Namespaces read at once.
const IN_FLIGHT: usize = 8;

/// The most namespaces read one by one: 32 round trips at [`IN_FLIGHT`], 1.6 s at a 50 ms round
/// trip, about what a 30 MB list takes at 20 MB/s; beyond, one list is the quicker guess.
pub const MAX_NAMESPACES: usize = 256;

/// The endpoints as Tables, or why they were not read so.
pub enum TableRead {
    Read { listed: Listed, namespaces: usize },
    NotTaken(String),
}

/// The CiliumEndpoints of `namespace` (or of every namespace), as Tables. An answer refused by
/// the list's bounds ends the read (`Err`), as do failures the whole list would meet as well;
/// anything that only this way of reading meets is [`TableRead::NotTaken`].
pub async fn list(client: &kube::Client, namespace: Option<&str>) -> Result<TableRead, kube::Error> {
    let (columns, namespaces) = tokio::join!(address_columns(client), namespaces(client, namespace));
    let (columns, namespaces) = match (columns, namespaces?) {
        (Ok(columns), Ok(namespaces)) => (Arc::new(columns), namespaces),
        (Err(why), _) | (_, Err(why)) => return Ok(TableRead::NotTaken(why)),
    };
    // The first failure ends the read at once (the answers still coming are dropped); the
    // endpoints are then put in the namespaces' order, as the API server lists them (by name),
    // which is the order of the whole list.
    let read = futures::stream::iter(namespaces.iter().enumerate())
        .map(|(at, namespace)| {
            let table = table_of(client, namespace, columns.clone());
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
    if endpoints.len() > MAX_ITEMS {
        return Err(Refused::TooManyItems(MAX_ITEMS).into_kube());
    }
    let workloads = Workloads { endpoints, ..Workloads::default() };
    Ok(TableRead::Read { listed: Listed { workloads, ..Listed::default() }, namespaces: namespaces.len() })
}

/// The names of the columns that show an endpoint's IPv4 and IPv6 address, from the CRD.
async fn address_columns(client: &kube::Client) -> Result<[String; 2], String> {
    let request = http::Request::get(CRD_PATH).body(Vec::new()).expect("a valid request");
    let crd: Value = client.request(request).await.map_err(|e| unreadable("CRD ciliumendpoints.cilium.io", &e))?;
    columns_of(&crd)
}

/// [`address_columns`] of a CRD.
fn columns_of(crd: &Value) -> Result<[String; 2], String> {
    let versions = crd.get("spec").and_then(|spec| spec.get("versions")).and_then(Value::as_array);
    let v2 = versions.into_iter().flatten().find(|version| version.get("name").and_then(Value::as_str) == Some("v2"));
    let columns = v2.and_then(|v2| v2.get("additionalPrinterColumns")).and_then(Value::as_array);
    let name_of = |path: &str| {
        let column = columns.into_iter().flatten().find(|column| column.get("jsonPath").and_then(Value::as_str) == Some(path));
        column.and_then(|column| column.get("name")).and_then(Value::as_str).map(str::to_string)
    };
    match ADDRESS_PATHS.map(name_of) {
        [Some(ipv4), Some(ipv6)] => Ok([ipv4, ipv6]),
        _ => Err("the CiliumEndpoint CRD has no printer columns of the endpoints' addresses".to_string()),
    }
}

/// `namespace`, or every namespace; `Ok(Err(why))` when they cannot be listed or are too many.
async fn namespaces(client: &kube::Client, namespace: Option<&str>) -> Result<Result<Vec<String>, String>, kube::Error> {
    let names = match namespace {
        Some(namespace) => vec![namespace.to_string()],
        None => match all_namespaces(client).await? {
            Ok(names) => names,
            Err(why) => return Ok(Err(why)),
        },
    };
    // Namespace names are DNS labels; anything else is not put in a URL.
    Ok(names.into_iter().map(|name| if is_label(&name) { Ok(name) } else { Err(format!("{name:?} is no namespace name")) }).collect())
}

/// The names of every namespace, unless there are more than [`MAX_NAMESPACES`].
async fn all_namespaces(client: &kube::Client) -> Result<Result<Vec<String>, String>, kube::Error> {
    #[derive(serde::Deserialize)]
    struct List {
        #[serde(default)]
        items: Vec<Item>,
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        #[serde(default)]
        name: String,
        #[serde(default, rename = "continue")]
        continue_token: String,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        metadata: Meta,
    }
    let url = format!("/api/v1/namespaces?limit={MAX_NAMESPACES}");
    let request = http::Request::get(url).body(Vec::new()).expect("a valid request");
    let list: List = match client.request(request).await {
        Ok(list) => list,
        Err(e) if Refused::find(&e).is_some() => return Err(e),
        Err(e) => return Ok(Err(unreadable("namespaces", &e))),
    };
    if !list.metadata.continue_token.is_empty() {
        return Ok(Err(format!("more than {MAX_NAMESPACES} namespaces")));
    }
    Ok(Ok(list.items.into_iter().map(|item| item.metadata.name).collect()))
}

fn is_label(name: &str) -> bool {
    !name.is_empty() && name.len() <= 63 && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Why a request of this way of reading failed, for `-v`.
fn unreadable(what: &str, error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => format!("{what}: {} ({})", status.reason.to_lowercase(), status.code),
        _ => format!("{what}: {error}"),
    }
}

/// Why the Tables were not all read.
enum Stop {
    /// What the whole list would have met as well: the read ends.
    Failed(kube::Error),
    /// What only a Table meets: the endpoints are listed whole.
    NotTaken(String),
}

/// The endpoints of one namespace, from its Table.
async fn table_of(client: &kube::Client, namespace: &str, columns: Arc<[String; 2]>) -> Result<Vec<Endpoint>, Stop> {
    let path = <kube::api::DynamicObject as kube::Resource>::url_path(&endpoints_resource(), Some(namespace));
    let url = format!("{path}?includeObject=None");
    let request = http::Request::get(url).header(http::header::ACCEPT, TABLE).body(Vec::new()).expect("a valid request");
    let namespace: Arc<str> = Arc::from(namespace);
    let decoded = answer_of(client, request, {
        let namespace = namespace.clone();
        move |reader, _protobuf, counted| Ok(read_table(reader, &namespace, &columns, ItemBudget::new(MAX_ITEMS).counted_in(counted)))
    })
    .await;
    let what = format!("the Table of namespace {namespace}");
    match decoded {
        Ok(Ok(endpoints)) => Ok(endpoints),
        Ok(Err(TableError::Over)) => Err(Stop::Failed(Refused::TooManyItems(MAX_ITEMS).into_kube())),
        Ok(Err(TableError::Unusable(why))) => Err(Stop::NotTaken(format!("{what}: {why}"))),
        Err(e @ kube::Error::Api(_)) => Err(Stop::NotTaken(unreadable(&what, &e))),
        Err(e) => Err(Stop::Failed(e)),
    }
}

enum TableError {
    Over,
    Unusable(String),
}

/// The endpoints of a Table of `namespace`, its rows counted against `budget`.
fn read_table(
    reader: impl std::io::Read,
    namespace: &Arc<str>,
    columns: &[String; 2],
    budget: ItemBudget,
) -> Result<Vec<Endpoint>, TableError> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let seed = TableSeed { namespace, columns, budget: &budget };
    let read = seed.deserialize(&mut deserializer).and_then(|endpoints| deserializer.end().map(|()| endpoints));
    read.map_err(|e| if budget.over().is_some() { TableError::Over } else { TableError::Unusable(e.to_string()) })
}

/// Reads a Table: its kind, its column definitions, then its rows, each made an endpoint as it
/// is read (the columns come first in the API server's answer; rows before them are refused).
struct TableSeed<'a> {
    namespace: &'a Arc<str>,
    columns: &'a [String; 2],
    budget: &'a ItemBudget,
}

/// Where the name and the two address columns are in a row.
#[derive(Clone, Copy)]
struct Cells {
    name: usize,
    addresses: [usize; 2],
}

#[derive(serde::Deserialize)]
struct Column {
    #[serde(default)]
    name: String,
    #[serde(default)]
    format: String,
}

impl<'de> DeserializeSeed<'de> for TableSeed<'_> {
    type Value = Vec<Endpoint>;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Endpoint>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TableSeed<'_> {
    type Value = Vec<Endpoint>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a Table")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<Endpoint>, A::Error> {
        let (mut kind, mut cells, mut endpoints) = (None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                // The kind comes first in the API server's answer: anything else is not read on.
                "kind" => {
                    kind = Some(map.next_value::<String>()?);
                    if kind.as_deref() != Some("Table") {
                        return Err(de::Error::custom("the answer is no Table"));
                    }
                }
                "columnDefinitions" => cells = Some(self.cells(&map.next_value::<Vec<Column>>()?).map_err(de::Error::custom)?),
                "rows" => {
                    let cells = cells.ok_or_else(|| de::Error::custom("rows before the column definitions"))?;
                    endpoints = Some(map.next_value_seed(Rows { seed: &self, cells })?);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if kind.as_deref() != Some("Table") {
            return Err(de::Error::custom("the answer is no Table"));
        }
        Ok(endpoints.unwrap_or_default())
    }
}

impl TableSeed<'_> {
    fn cells(&self, columns: &[Column]) -> Result<Cells, String> {
        let at = |wanted: &dyn Fn(&Column) -> bool, what: &str| columns.iter().position(wanted).ok_or(format!("no {what} column"));
        let [ipv4, ipv6] = &self.columns;
        Ok(Cells {
            name: at(&|c| c.format == "name", "name")?,
            addresses: [at(&|c| &c.name == ipv4, ipv4)?, at(&|c| &c.name == ipv6, ipv6)?],
        })
    }
}

/// A Table's rows, each an endpoint.
struct Rows<'a, 'b> {
    seed: &'a TableSeed<'b>,
    cells: Cells,
}

impl<'de> DeserializeSeed<'de> for Rows<'_, '_> {
    type Value = Vec<Endpoint>;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Endpoint>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_, '_> {
    type Value = Vec<Endpoint>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("the rows of a Table")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut rows: A) -> Result<Vec<Endpoint>, A::Error> {
        #[derive(serde::Deserialize)]
        struct Row {
            #[serde(default)]
            cells: Vec<Value>,
        }
        let mut endpoints = Vec::new();
        while let Some(row) = rows.next_element::<Row>()? {
            self.seed.budget.count().map_err(|_| de::Error::custom("too many rows"))?;
            let text = |at: usize| row.cells.get(at).and_then(Value::as_str);
            let Some(name) = text(self.cells.name).filter(|name| !name.is_empty()) else { continue };
            let ips = self.cells.addresses.iter().filter_map(|&at| text(at).and_then(Addr::parse)).collect();
            endpoints.push(Endpoint { namespace: self.seed.namespace.clone(), name: name.into(), ips });
        }
        Ok(endpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(columns: Value) -> Value {
        json!({"spec": {"versions": [{"name": "v2alpha1", "additionalPrinterColumns": []}, {"name": "v2", "additionalPrinterColumns": columns}]}})
    }

    #[test]
    fn the_address_columns_are_found_by_their_json_path_in_v2() {
        let columns = json!([
            {"name": "Endpoint State", "jsonPath": ".status.state"},
            {"name": "IPv6", "jsonPath": ".status.networking.addressing[0].ipv6"},
            {"name": "Address", "jsonPath": ".status.networking.addressing[0].ipv4"},
        ]);
        assert_eq!(columns_of(&crd(columns)).unwrap(), ["Address".to_string(), "IPv6".to_string()]);
        let one_missing = json!([{"name": "IPv4", "jsonPath": ".status.networking.addressing[0].ipv4"}]);
        assert!(columns_of(&crd(one_missing)).is_err());
        assert!(columns_of(&json!({"spec": {}})).is_err());
    }

    #[test]
    fn only_dns_labels_are_put_in_a_url() {
        assert!(is_label("team-1") && is_label(&"a".repeat(63)));
        assert!(!is_label("") && !is_label("a/b") && !is_label("Team") && !is_label("a?b") && !is_label(&"a".repeat(64)));
    }

    fn read(table: &str) -> Result<Vec<Endpoint>, TableError> {
        read_table(table.as_bytes(), &Arc::from("team"), &["IPv4".to_string(), "IPv6".to_string()], ItemBudget::new(3))
    }

    const COLUMNS: &str = r#""columnDefinitions": [{"name": "Name", "format": "name"}, {"name": "Endpoint State", "format": ""}, {"name": "IPv4", "format": ""}, {"name": "IPv6", "format": ""}]"#;

    #[test]
    fn a_tables_rows_are_endpoints_with_the_addresses_of_their_cells() {
        let rows = r#"[{"cells": ["web-1", "ready", "10.0.0.1", "fd00::1"]}, {"cells": ["web-2", "ready", null, "not an address"]}, {"cells": ["", "ready", "10.0.0.3", null]}]"#;
        let endpoints = read(&format!(r#"{{"kind": "Table", {COLUMNS}, "rows": {rows}}}"#)).ok().unwrap();
        let seen: Vec<(String, String, Vec<String>)> = endpoints
            .iter()
            .map(|e| (e.namespace.to_string(), e.name.to_string(), e.ips.iter().map(|ip| ip.to_string()).collect()))
            .collect();
        assert_eq!(
            seen,
            [("team".into(), "web-1".into(), vec!["10.0.0.1".to_string(), "fd00::1".to_string()]), ("team".into(), "web-2".into(), vec![])]
        );
    }

    #[test]
    fn what_is_no_table_with_its_columns_is_unusable_and_too_many_rows_are_over() {
        let unusable = |table: &str| matches!(read(table), Err(TableError::Unusable(_)));
        assert!(unusable(r#"{"kind": "CiliumEndpointList", "items": []}"#));
        assert!(unusable(&format!(r#"{{"kind": "Table", "rows": [], {COLUMNS}}}"#)), "rows before columns");
        assert!(unusable(r#"{"kind": "Table", "columnDefinitions": [{"name": "Name", "format": "name"}], "rows": []}"#));
        assert!(unusable(&format!(r#"{{"kind": "Table", {COLUMNS}, "rows": [{{"cells": ["a"]}}]}} trailing"#)));
        let row = r#"{"cells": ["a", "ready", "10.0.0.1", null]}"#;
        let four = format!(r#"{{"kind": "Table", {COLUMNS}, "rows": [{row}, {row}, {row}, {row}]}}"#);
        assert!(matches!(read(&four), Err(TableError::Over)));
    }
}
