//! The rows of a CiliumEndpoint Table (`endpoint_table.rs`) decoded as they stream in: of each
//! row its name and its two address cells, every other cell, column or field skipped unbuilt;
//! the rows of every Table of one read counted against one cap as they arrive.

use super::table_answers::read_with;
use crate::model::ip::Addr;
use crate::model::slim::ItemBudget;
use crate::model::workload::Endpoint;
use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most column definitions a Table may have: Cilium's CRD prints five; past this the Table is
/// not read on (the endpoints are listed whole instead).
pub const MAX_COLUMNS: usize = 64;

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
