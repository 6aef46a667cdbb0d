//! The answers of the Table read (`endpoint_table.rs`) decoded as their bytes stream in, keeping
//! only what the read uses: here the CRD's two address columns and the namespaces' names, in
//! `table_rows.rs` of each Table row its name and its two address cells. Everything else is
//! skipped unbuilt (serde's `IgnoredAny`), so a hostile answer under the byte bound (a cell of
//! millions of `[]`, 100 MiB of `{}` column definitions, a namespace list of `{}`) costs what is
//! kept, not what is read.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;

/// The printer columns of Cilium's CiliumEndpoint CRD (`v2`) that show an endpoint's addresses.
pub const ADDRESS_PATHS: [&str; 2] = [".status.networking.addressing[0].ipv4", ".status.networking.addressing[0].ipv6"];

/// Reads one JSON answer from `reader` with `seed`, to its end.
pub(super) fn read_with<T>(
    reader: impl std::io::Read,
    seed: impl for<'de> DeserializeSeed<'de, Value = T>,
) -> Result<T, serde_json::Error> {
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
}
