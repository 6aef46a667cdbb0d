//! The kinds of the objects a document holds, read without building the document: an edit
//! builds only the documents that hold an object of a kind it changes, and copies the others
//! as text (a 10 MiB sequence in another document cost a tree of millions of nodes).

use serde::de::{Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeSet;
use std::fmt;

/// Whether the YAML document `text` may hold an object whose kind is one of `kinds`: the
/// document itself, an element of it when it is a sequence, or an item of its `items`, at any
/// depth (where `change_object` and the converters look). A document that names one of them but
/// does not parse may: reading it whole reports the error as before.
pub(super) fn may_hold(text: &str, kinds: &[&str]) -> bool {
    // A kind is spelled out in the text unless an escape (`\x50`, a `\` line continuation)
    // writes it: a document without either is not parsed at all (millions of `{}` documents).
    if !text.contains('\\') && !kinds.iter().any(|kind| text.contains(kind)) {
        return false;
    }
    match serde_saphyr::from_multiple_with_options::<Kinds>(text, super::parse::yaml_options()) {
        Ok(found) => found.iter().any(|document| document.0.iter().any(|kind| kinds.contains(&kind.as_str()))),
        Err(_) => true,
    }
}

/// The kinds of the objects of one document; everything else is skipped as it is parsed.
#[derive(Default)]
struct Kinds(BTreeSet<String>);

impl<'de> Deserialize<'de> for Kinds {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Kinds, D::Error> {
        let mut kinds = Kinds::default();
        Objects(&mut kinds.0).deserialize(deserializer)?;
        Ok(kinds)
    }
}

/// A value where an object may stand: its `kind` is noted, its `items` and elements are looked
/// into.
struct Objects<'a>(&'a mut BTreeSet<String>);

impl<'de> DeserializeSeed<'de> for Objects<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The value of a `kind` key, when it is a string.
struct Kind;

impl<'de> DeserializeSeed<'de> for Kind {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<String>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Kind {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E>(self, v: &str) -> Result<Option<String>, E> {
        Ok(Some(v.to_string()))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_none<E>(self) -> Result<Option<String>, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<String>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de> Visitor<'de> for Objects<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Objects(kinds) = self;
        while seq.next_element_seed(Objects(&mut *kinds))?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Objects(kinds) = self;
        while let Some(key) = map.next_key_seed(Kind)? {
            match key.as_deref() {
                Some("kind") => {
                    if let Some(kind) = map.next_value_seed(Kind)? {
                        kinds.insert(kind);
                    }
                }
                Some("items") => map.next_value_seed(Objects(&mut *kinds))?,
                _ => map.next_value::<IgnoredAny>().map(drop)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_found_where_edits_look_and_nowhere_else() {
        let pool = ["CiliumPodIPPool"];
        assert!(may_hold("kind: CiliumPodIPPool\nmetadata: {name: a}\n", &pool));
        assert!(may_hold("kind: List\nitems:\n- kind: CiliumPodIPPool\n", &pool));
        assert!(may_hold("- kind: CiliumPodIPPool\n", &pool));
        assert!(may_hold("kind: List\nitems: [{kind: List, items: [{kind: CiliumPodIPPool}]}]\n", &pool));
        // Not an object an edit would find: a kind inside another field, or no kind at all.
        assert!(!may_hold("kind: ConfigMap\ndata: {kind: CiliumPodIPPool}\n", &pool));
        assert!(!may_hold("- 1\n- 2\n", &pool));
        assert!(!may_hold("{}\n", &pool));
        assert!(!may_hold("# only a comment\n", &pool));
        // What does not parse is left to the whole reading, which reports it.
        assert!(may_hold("kind: CiliumPodIPPool\na: [\n", &pool));
        // Unless the kind is not even in its text.
        assert!(!may_hold("a: [\n", &pool));
    }
}
