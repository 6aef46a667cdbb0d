//! The answers of the Table read (`endpoint_table.rs`) decoded as their bytes stream in, keeping
//! only what the read uses: the CRD's two address columns, the namespaces' names, and of each
//! Table row its name and its two address cells. Everything else is skipped unbuilt (serde's
//! `IgnoredAny`), so a hostile answer under the byte bound (a cell of millions of `[]`, 100 MiB
//! of `{}` column definitions, a namespace list of `{}`) costs what is kept, not what is read.

use crate::model::ip::Addr;
use crate::model::slim::ItemBudget;
use crate::model::workload::Endpoint;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The printer columns of Cilium's CiliumEndpoint CRD (`v2`) that show an endpoint's addresses.
pub const ADDRESS_PATHS: [&str; 2] = [".status.networking.addressing[0].ipv4", ".status.networking.addressing[0].ipv6"];

/// The most column definitions a Table may have: Cilium's CRD prints five; past this the Table is
/// not read on (the endpoints are listed whole instead).
pub const MAX_COLUMNS: usize = 64;

/// Reads one JSON answer from `reader` with `seed`, to its end.
fn read_with<T>(reader: impl std::io::Read, seed: impl for<'de> DeserializeSeed<'de, Value = T>) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_reader(reader);
    let value = seed.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// A seed that deserializes `T` as its `Deserialize` says.
struct Plain<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> DeserializeSeed<'de> for Plain<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize(deserializer)
    }
}

/// The names of the columns that show an endpoint's IPv4 and IPv6 address, from the CRD's JSON.
pub fn address_columns(reader: impl std::io::Read) -> Result<[String; 2], String> {
    #[derive(Deserialize)]
    struct Crd {
        #[serde(default)]
        spec: Spec,
    }
    #[derive(Deserialize, Default)]
    struct Spec {
        #[serde(default)]
        versions: Versions,
    }
    let crd: Crd =
        read_with(reader, Plain(std::marker::PhantomData)).map_err(|e| format!("the CiliumEndpoint CRD could not be read: {e}"))?;
    match crd.spec.versions.0 {
        [Some(ipv4), Some(ipv6)] => Ok([ipv4, ipv6]),
        _ => Err("the CiliumEndpoint CRD has no printer columns of the endpoints' addresses".to_string()),
    }
}

/// The address columns of version `v2`, the versions read one at a time (none is kept).
#[derive(Default)]
struct Versions([Option<String>; 2]);

impl<'de> Deserialize<'de> for Versions {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Versions, D::Error> {
        deserializer.deserialize_seq(Versions::default())
    }
}

impl<'de> Visitor<'de> for Versions {
    type Value = Versions;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the versions of a CRD")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut versions: A) -> Result<Versions, A::Error> {
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            name: String,
            #[serde(default, rename = "additionalPrinterColumns")]
            columns: Columns,
        }
        while let Some(version) = versions.next_element::<Version>()? {
            if version.name == "v2" {
                self.0 = version.columns.0;
            }
        }
        Ok(self)
    }
}

/// The names of the printer columns whose `jsonPath` is one of [`ADDRESS_PATHS`], the columns
/// read one at a time.
#[derive(Default)]
struct Columns([Option<String>; 2]);

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Columns, D::Error> {
        deserializer.deserialize_seq(Columns::default())
    }
}

impl<'de> Visitor<'de> for Columns {
    type Value = Columns;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("printer columns")
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut columns: A) -> Result<Columns, A::Error> {
        #[derive(Deserialize)]
        struct Column {
            #[serde(default)]
            name: String,
            #[serde(default, rename = "jsonPath")]
            json_path: String,
        }
        while let Some(column) = columns.next_element::<Column>()? {
            if let Some(at) = ADDRESS_PATHS.iter().position(|path| *path == column.json_path) {
                self.0[at].get_or_insert(column.name);
            }
        }
        Ok(self)
    }
}

/// The namespaces of a namespace list, or that it holds more than the cap.
#[derive(Debug, PartialEq, Eq)]
pub enum Namespaces {
    Names(Vec<String>),
    /// More items than the cap (read no further), or a `continue` token: more to list.
    More,
}

/// The names of a namespace list's items, at most `cap` of them: the list is not read past the
/// first item over the cap, whatever `limit` the server was asked for.
pub fn namespace_names(reader: impl std::io::Read, cap: usize) -> Result<Namespaces, String> {
    let over = Cell::new(false);
    match read_with(reader, NamespaceList { cap, over: &over }) {
        Ok(names) => Ok(names),
        Err(_) if over.get() => Ok(Namespaces::More),
        Err(e) => Err(format!("the namespace list could not be read: {e}")),
    }
}

struct NamespaceList<'a> {
    cap: usize,
    over: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for NamespaceList<'_> {
    type Value = Namespaces;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Namespaces, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NamespaceList<'_> {
    type Value = Namespaces;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a namespace list")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Namespaces, A::Error> {
        #[derive(Deserialize, Default)]
        struct Meta {
            #[serde(default, rename = "continue")]
            continue_token: String,
        }
        let (mut names, mut more) = (Vec::new(), false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "items" => names = map.next_value_seed(NamespaceItems { cap: self.cap, over: self.over })?,
                "metadata" => more |= !map.next_value::<Meta>()?.continue_token.is_empty(),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if more { Namespaces::More } else { Namespaces::Names(names) })
    }
}

struct NamespaceItems<'a> {
    cap: usize,
    over: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for NamespaceItems<'_> {
    type Value = Vec<String>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<String>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for NamespaceItems<'_> {
    type Value = Vec<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the items of a namespace list")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Vec<String>, A::Error> {
        #[derive(Deserialize)]
        struct Item {
            #[serde(default)]
            metadata: Name,
        }
        #[derive(Deserialize, Default)]
        struct Name {
            #[serde(default)]
            name: String,
        }
        let mut names = Vec::new();
        while let Some(item) = items.next_element::<Item>()? {
            if names.len() == self.cap {
                self.over.set(true);
                return Err(de::Error::custom("more namespaces than the cap"));
            }
            names.push(item.metadata.name);
        }
        Ok(names)
    }
}

/// The rows of every Table of one read, counted against the read's object cap as they arrive.
#[derive(Clone)]
pub struct RowCap {
    taken: Arc<AtomicUsize>,
    cap: usize,
}

impl RowCap {
    pub fn new(cap: usize) -> RowCap {
        RowCap { taken: Arc::default(), cap }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Counts one row; false past the cap.
    fn take(&self) -> bool {
        self.taken.fetch_add(1, Ordering::Relaxed) < self.cap
    }
}

/// Why a Table was not read to its end.
#[derive(Debug)]
pub enum TableError {
    /// More rows than the read's object cap.
    Over,
    /// No Table with the columns the read needs.
    Unusable(String),
}

/// The endpoints of a Table of `namespace`: each row counted in `budget` (the answer's byte bound
/// grows with it) and against `rows` (the whole read's cap).
pub fn read_table(
    reader: impl std::io::Read,
    namespace: &Arc<str>,
    columns: &[String; 2],
    budget: ItemBudget,
    rows: &RowCap,
) -> Result<Vec<Endpoint>, TableError> {
    let over = Cell::new(false);
    let seed = TableSeed { namespace, columns, budget: &budget, rows, over: &over };
    read_with(reader, seed).map_err(|e| if over.get() { TableError::Over } else { TableError::Unusable(e.to_string()) })
}

/// Reads a Table: its kind, its column definitions, then its rows, each made an endpoint as it
/// is read (the columns come first in the API server's answer; rows before them are refused).
struct TableSeed<'a> {
    namespace: &'a Arc<str>,
    columns: &'a [String; 2],
    budget: &'a ItemBudget,
    rows: &'a RowCap,
    /// Set when the rows passed the read's cap.
    over: &'a Cell<bool>,
}

/// Where the name and the two address columns are in a row.
#[derive(Clone, Copy)]
struct Cells {
    name: usize,
    addresses: [usize; 2],
}

impl<'de> DeserializeSeed<'de> for TableSeed<'_> {
    type Value = Vec<Endpoint>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Endpoint>, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TableSeed<'_> {
    type Value = Vec<Endpoint>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
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
                "columnDefinitions" => cells = Some(map.next_value_seed(ColumnDefinitions(self.columns))?),
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

/// A Table's column definitions, read one at a time: where its name and address cells are.
struct ColumnDefinitions<'a>(&'a [String; 2]);

impl<'de> DeserializeSeed<'de> for ColumnDefinitions<'_> {
    type Value = Cells;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Cells, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ColumnDefinitions<'_> {
    type Value = Cells;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the column definitions of a Table")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut columns: A) -> Result<Cells, A::Error> {
        #[derive(Deserialize)]
        struct Column {
            #[serde(default)]
            name: String,
            #[serde(default)]
            format: String,
        }
        let [ipv4, ipv6] = self.0;
        let (mut name, mut addresses) = (None, [None, None]);
        let mut at = 0;
        while let Some(column) = columns.next_element::<Column>()? {
            if at == MAX_COLUMNS {
                return Err(de::Error::custom(format!("more than {MAX_COLUMNS} columns")));
            }
            if column.format == "name" {
                name.get_or_insert(at);
            }
            for (wanted, found) in [ipv4, ipv6].into_iter().zip(&mut addresses) {
                if &column.name == wanted {
                    found.get_or_insert(at);
                }
            }
            at += 1;
        }
        let missing = |what: &str| de::Error::custom(format!("no {what} column"));
        Ok(Cells {
            name: name.ok_or_else(|| missing("name"))?,
            addresses: [addresses[0].ok_or_else(|| missing(ipv4))?, addresses[1].ok_or_else(|| missing(ipv6))?],
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
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Endpoint>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Rows<'_, '_> {
    type Value = Vec<Endpoint>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the rows of a Table")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut rows: A) -> Result<Vec<Endpoint>, A::Error> {
        let mut endpoints = Vec::new();
        while let Some([name, ipv4, ipv6]) = rows.next_element_seed(Row(self.cells))? {
            self.seed.budget.count().map_err(|_| de::Error::custom("too many rows"))?;
            if !self.seed.rows.take() {
                self.seed.over.set(true);
                return Err(de::Error::custom("more rows than the object cap"));
            }
            let Some(name) = name.filter(|name| !name.is_empty()) else { continue };
            let ips = [ipv4, ipv6].iter().flatten().filter_map(|text| Addr::parse(text)).collect();
            endpoints.push(Endpoint { namespace: self.seed.namespace.clone(), name: name.into(), ips });
        }
        Ok(endpoints)
    }
}

/// One row: the text of its name and address cells (`None`: missing or no string); its other
/// cells and fields skipped unbuilt.
struct Row(Cells);

type RowCells = [Option<String>; 3];

impl<'de> DeserializeSeed<'de> for Row {
    type Value = RowCells;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RowCells, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Row {
    type Value = RowCells;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a row of a Table")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RowCells, A::Error> {
        let mut kept = RowCells::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "cells" => kept = map.next_value_seed(RowCellsSeed(self.0))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }
}

struct RowCellsSeed(Cells);

impl<'de> DeserializeSeed<'de> for RowCellsSeed {
    type Value = RowCells;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<RowCells, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowCellsSeed {
    type Value = RowCells;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the cells of a row")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut cells: A) -> Result<RowCells, A::Error> {
        let Cells { name, addresses: [ipv4, ipv6] } = self.0;
        let mut kept = RowCells::default();
        for at in 0.. {
            let slot = [name, ipv4, ipv6].iter().position(|&wanted| wanted == at);
            let more = match slot {
                Some(slot) => cells.next_element::<Text>()?.map(|text| kept[slot] = text.0),
                None => cells.next_element::<IgnoredAny>()?.map(drop),
            };
            if more.is_none() {
                break;
            }
        }
        Ok(kept)
    }
}

/// A cell's text when it is a string; any other value skipped unbuilt.
struct Text(Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a cell")
    }
    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
        Ok(Text(Some(text.to_string())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Text(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Text, E> {
        Ok(Text(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Text, E> {
        Ok(Text(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(columns: &str) -> String {
        format!(
            r#"{{"spec": {{"versions": [{{"name": "v2alpha1", "additionalPrinterColumns": []}}, {{"name": "v2", "additionalPrinterColumns": {columns}}}], "padding": [[], [[]]]}}}}"#
        )
    }

    #[test]
    fn the_address_columns_are_found_by_their_json_path_in_v2() {
        let columns = r#"[{"name": "Endpoint State", "jsonPath": ".status.state"}, {"name": "IPv6", "jsonPath": ".status.networking.addressing[0].ipv6"},
            {"name": "Address", "jsonPath": ".status.networking.addressing[0].ipv4", "priority": 0}]"#;
        assert_eq!(address_columns(crd(columns).as_bytes()).unwrap(), ["Address".to_string(), "IPv6".to_string()]);
        let one_missing = r#"[{"name": "IPv4", "jsonPath": ".status.networking.addressing[0].ipv4"}]"#;
        assert!(address_columns(crd(one_missing).as_bytes()).is_err());
        assert!(address_columns(r#"{"spec": {}}"#.as_bytes()).is_err());
        assert!(address_columns(r#"{"spec": {"versions": 3}}"#.as_bytes()).is_err());
    }

    #[test]
    fn a_namespace_list_is_read_to_its_cap_and_no_further() {
        let list =
            |items: &str, token: &str| format!(r#"{{"kind": "NamespaceList", "metadata": {{"continue": "{token}"}}, "items": [{items}]}}"#);
        let two = r#"{"metadata": {"name": "a", "labels": {"x": "y"}}}, {"metadata": {"name": "b"}}"#;
        assert_eq!(namespace_names(list(two, "").as_bytes(), 2), Ok(Namespaces::Names(vec!["a".into(), "b".into()])));
        assert_eq!(namespace_names(list(two, "next").as_bytes(), 2), Ok(Namespaces::More), "a continue token: more to list");
        assert_eq!(namespace_names(list(two, "").as_bytes(), 1), Ok(Namespaces::More), "a server that ignored the limit");
        // Past the cap the rest is not read: the broken tail is never reached.
        let endless = r#"{"items": [{}, {}, {}, "#;
        assert_eq!(namespace_names(endless.as_bytes(), 2), Ok(Namespaces::More));
        assert!(namespace_names(endless.as_bytes(), 5).is_err());
    }

    fn read(table: &str, rows: &RowCap) -> Result<Vec<Endpoint>, TableError> {
        read_table(table.as_bytes(), &Arc::from("team"), &["IPv4".to_string(), "IPv6".to_string()], ItemBudget::new(usize::MAX), rows)
    }

    const COLUMNS: &str = r#""columnDefinitions": [{"name": "Name", "format": "name"}, {"name": "Endpoint State", "format": ""}, {"name": "IPv4", "format": ""}, {"name": "IPv6", "format": ""}]"#;

    #[test]
    fn a_tables_rows_are_endpoints_with_the_addresses_of_their_cells() {
        let rows = r#"[{"cells": ["web-1", [[], {"a": [1]}], "10.0.0.1", "fd00::1"], "object": {"big": [[]]}}, {"cells": ["web-2", "ready", null, "not an address"]},
            {"cells": ["", "ready", "10.0.0.3", null]}, {"cells": [["web-4"], "ready", {"ip": "10.0.0.4"}, 7]}, {"cells": ["web-5"]}]"#;
        let endpoints = read(&format!(r#"{{"kind": "Table", {COLUMNS}, "rows": {rows}}}"#), &RowCap::new(5)).ok().unwrap();
        let seen: Vec<(String, String, Vec<String>)> = endpoints
            .iter()
            .map(|e| (e.namespace.to_string(), e.name.to_string(), e.ips.iter().map(|ip| ip.to_string()).collect()))
            .collect();
        let expected = [
            ("team".into(), "web-1".into(), vec!["10.0.0.1".to_string(), "fd00::1".to_string()]),
            ("team".into(), "web-2".into(), vec![]),
            ("team".into(), "web-5".into(), vec![]),
        ];
        assert_eq!(seen, expected);
    }

    #[test]
    fn what_is_no_table_with_its_columns_is_unusable() {
        let unusable = |table: &str| matches!(read(table, &RowCap::new(9)), Err(TableError::Unusable(_)));
        assert!(unusable(r#"{"kind": "CiliumEndpointList", "items": []}"#));
        assert!(unusable(&format!(r#"{{"kind": "Table", "rows": [], {COLUMNS}}}"#)), "rows before columns");
        assert!(unusable(r#"{"kind": "Table", "columnDefinitions": [{"name": "Name", "format": "name"}], "rows": []}"#));
        assert!(unusable(&format!(r#"{{"kind": "Table", {COLUMNS}, "rows": [{{"cells": ["a"]}}]}} trailing"#)));
        let many = format!(r#"{{"kind": "Table", "columnDefinitions": [{}]}}"#, vec!["{}"; MAX_COLUMNS + 1].join(","));
        assert!(unusable(&many), "more columns than the cap");
    }

    #[test]
    fn the_rows_of_every_table_of_a_read_share_one_cap() {
        let row = r#"{"cells": ["a", "ready", "10.0.0.1", null]}"#;
        let table = |n: usize| format!(r#"{{"kind": "Table", {COLUMNS}, "rows": [{}]}}"#, vec![row; n].join(","));
        let rows = RowCap::new(5);
        assert_eq!(read(&table(3), &rows).ok().map(|e| e.len()), Some(3));
        assert_eq!(read(&table(2), &rows).ok().map(|e| e.len()), Some(2), "the cap itself is allowed");
        assert!(matches!(read(&table(1), &rows), Err(TableError::Over)), "one row more, in another Table");
    }
}
