//! JSON decoded strictly: an object that names a key twice is refused, as kube-apiserver's strict
//! field validation refuses it, instead of serde_json keeping the last value (and a decoder that
//! streams keeping the first: the `manifest` fuzz target found the two disagreeing). Both JSON
//! decoders build their values here, so they refuse alike. Pure; the check costs nothing extra:
//! the object's map already says whether a key was there.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// What a refusal of a repeated key says (the caller adds the file and line): what, and what to do.
pub fn duplicate_key(key: &str) -> String {
    format!("duplicate key `{key}` in one object; a Kubernetes object names each field once: remove one of them")
}

/// Whether a serde error message is [`duplicate_key`]'s (serde_json appends its position).
pub fn is_duplicate_key(message: &str) -> bool {
    message.starts_with("duplicate key `") && message.contains("names each field once")
}

/// Inserts `key` into `map`, refusing a key already there.
pub fn insert_unique<E: de::Error>(map: &mut Map<String, Value>, key: String, value: Value) -> Result<(), E> {
    if map.contains_key(&key) {
        return Err(E::custom(duplicate_key(&key)));
    }
    map.insert(key, value);
    Ok(())
}

/// A [`Value`] whose objects name each key once (at every depth).
pub struct Strict(pub Value);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        StrictSeed.deserialize(deserializer).map(Strict)
    }
}

/// Decodes one strict [`Value`]: what a visitor passes to `next_value_seed` where it keeps a value.
#[derive(Clone, Copy)]
pub struct StrictSeed;

impl<'de> DeserializeSeed<'de> for StrictSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(StrictSeed)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(StrictSeed)?;
            insert_unique(&mut out, key, value)?;
        }
        Ok(Value::Object(out))
    }
}

/// A JSON value checked as [`Strict`] checks it, without building it: each object's keys are
/// held while it is read (to find a repeated one), nothing else (an edit reads a file so before
/// it splices it, `manifest::json_patch`).
pub struct StrictChecked;

impl<'de> de::Deserialize<'de> for StrictChecked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StrictChecked, D::Error> {
        deserializer.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = StrictChecked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }
    fn visit_str<E>(self, _: &str) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }
    fn visit_unit<E>(self) -> Result<StrictChecked, E> {
        Ok(StrictChecked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrictChecked, A::Error> {
        while seq.next_element::<StrictChecked>()?.is_some() {}
        Ok(StrictChecked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrictChecked, A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                return Err(de::Error::custom(duplicate_key(&key)));
            }
            map.next_value::<StrictChecked>()?;
            keys.insert(key);
        }
        Ok(StrictChecked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_refused_at_any_depth_and_values_are_serde_jsons() {
        for text in [r#"{"kind":"Pod","a":1,"kind":"CiliumNode"}"#, r#"[{"m": {"x": 1, "x": 1}}]"#] {
            let err = serde_json::from_str::<Strict>(text).err().expect("refused").to_string();
            assert!(is_duplicate_key(&err), "{err}");
        }
        let text = r#"{"a": [1, -2, 2.5, 18446744073709551615, "s", null, true, {}], "b": {"c": "d"}}"#;
        assert_eq!(serde_json::from_str::<Strict>(text).unwrap().0, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn the_check_refuses_what_strict_refuses_and_accepts_what_it_reads() {
        for text in [r#"{"kind":"Pod","a":1,"kind":"CiliumNode"}"#, r#"[{"m": {"x": 1, "x": [1]}}]"#] {
            let err = serde_json::from_str::<StrictChecked>(text).err().expect("refused").to_string();
            assert!(is_duplicate_key(&err) && err.contains('`'), "{err}");
        }
        for text in [r#"{"a": [1, -2, 2.5, "s", null, true, {}], "b": {"c": "d"}}"#, "[]", "{\"a\": {\"a\": 1}}"] {
            assert!(serde_json::from_str::<StrictChecked>(text).is_ok(), "{text}");
        }
        assert!(serde_json::from_str::<StrictChecked>("{\"a\": }").is_err());
    }
}
