//! Pods and CiliumEndpoints decoded straight from a deserializer into the model's structs, with
//! the name, namespace and resourceVersion a watch needs (`cluster::decoded`): no `Value` of the
//! fields read is built first (issue 44: building and dropping that pruned tree, and matching its
//! keys, was a fifth of `serve`'s CPU to ready). It reads what [`Pod::decode_into`] and
//! [`Endpoint::decode_into`] read of the objects [`super::slim::POD_FIELDS`] and
//! [`super::slim::ENDPOINT_FIELDS`] keep, with the same answers for every shape: a field of the
//! wrong type is missing, a value that is no object has no fields, the last of duplicate keys wins.

use super::ip::Addr;
use super::workload::{Endpoint, Ips, Names, Pod};
use serde::de::{Deserialize, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// A value as far as `Value::as_str` and `Value::as_bool` see it; anything else is skipped.
#[derive(Default)]
enum Scalar {
    #[default]
    Other,
    Str(String),
    Bool(bool),
}

impl Scalar {
    fn str(&self) -> Option<&str> {
        if let Scalar::Str(text) = self { Some(text) } else { None }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Scalar, D::Error> {
        deserializer.deserialize_any(AnyVisitor::<ScalarOf>(PhantomData)).map(|s| s.0)
    }
}

/// What a value becomes in [`AnyVisitor`]: the few shapes it cares for, `default()` for others.
trait Shape: Default {
    fn from_str(_: &str) -> Self {
        Self::default()
    }
    fn from_bool(_: bool) -> Self {
        Self::default()
    }
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

struct ScalarOf(Scalar);

impl Default for ScalarOf {
    fn default() -> Self {
        ScalarOf(Scalar::Other)
    }
}

impl Shape for ScalarOf {
    fn from_str(text: &str) -> Self {
        ScalarOf(Scalar::Str(text.to_string()))
    }
    fn from_bool(value: bool) -> Self {
        ScalarOf(Scalar::Bool(value))
    }
}

/// Reads any value into the shape `S` (`Scalar`, `Object`, `List`).
struct AnyVisitor<S>(PhantomData<S>);

impl<'de, S: Shape> Visitor<'de> for AnyVisitor<S> {
    type Value = S;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<S, E> {
        Ok(S::from_bool(v))
    }
    fn visit_i64<E>(self, _: i64) -> Result<S, E> {
        Ok(S::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<S, E> {
        Ok(S::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<S, E> {
        Ok(S::default())
    }
    fn visit_str<E>(self, v: &str) -> Result<S, E> {
        Ok(S::from_str(v))
    }
    fn visit_unit<E>(self) -> Result<S, E> {
        Ok(S::default())
    }
    fn visit_none<E>(self) -> Result<S, E> {
        Ok(S::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<S, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<S, A::Error> {
        S::from_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<S, A::Error> {
        S::from_map(map)
    }
}

/// The fields of an object that are read; each key's value replaces what an earlier one gave.
trait Fields: Default {
    const NAMES: &'static [&'static str];
    /// Reads the value of `NAMES[index]`.
    fn read<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error>;
}

/// An object's fields, `None` when the value is no object.
struct Object<F>(Option<F>);

impl<F> Default for Object<F> {
    fn default() -> Self {
        Object(None)
    }
}

impl<F: Fields> Shape for Object<F> {
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut fields = F::default();
        while let Some(index) = map.next_key_seed(Key(F::NAMES))? {
            match index {
                Some(index) => fields.read(index, &mut map)?,
                None => map.next_value::<IgnoredAny>().map(drop)?,
            }
        }
        Ok(Object(Some(fields)))
    }
}

/// A key as the index of one of these names (`None`: another key), without a copy of its text.
struct Key(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<usize>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

impl<'de, F: Fields> Deserialize<'de> for Object<F> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyVisitor::<Object<F>>(PhantomData))
    }
}

/// An array's elements, none when the value is no array.
struct List<T>(Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<T: DeserializeOwned> Shape for List<T> {
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<T>()? {
            items.push(item);
        }
        Ok(List(items))
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyVisitor::<List<T>>(PhantomData))
    }
}

/// Declares the fields read of an object: `Name { field: Type = "key", ... }`.
macro_rules! fields {
    ($name:ident { $($field:ident: $type:ty = $key:literal),* $(,)? }) => {
        #[derive(Default)]
        struct $name {
            $($field: $type,)*
        }

        impl Fields for $name {
            const NAMES: &'static [&'static str] = &[$($key),*];
            fn read<'de, A: MapAccess<'de>>(&mut self, index: usize, map: &mut A) -> Result<(), A::Error> {
                let mut at = 0..;
                $(if index == at.next().unwrap_or_default() {
                    self.$field = map.next_value()?;
                    return Ok(());
                })*
                map.next_value::<IgnoredAny>().map(drop)
            }
        }
    };
}

fields!(Meta { name: Scalar = "name", namespace: Scalar = "namespace", resource_version: Scalar = "resourceVersion", annotations: Object<Annotations> = "annotations" });
fields!(Annotations { pool: Scalar = "ipam.cilium.io/ip-pool" });
fields!(Spec { node_name: Scalar = "nodeName", host_network: Scalar = "hostNetwork" });
fields!(PodStatus { phase: Scalar = "phase", pod_ip: Scalar = "podIP", pod_ips: List<Object<PodIp>> = "podIPs" });
fields!(PodIp { ip: Scalar = "ip" });
fields!(PodFields { metadata: Object<Meta> = "metadata", spec: Object<Spec> = "spec", status: Object<PodStatus> = "status" });
fields!(EndpointStatus { networking: Object<Networking> = "networking" });
fields!(Networking { addressing: List<Object<Addressing>> = "addressing" });
fields!(Addressing { ipv4: Scalar = "ipv4", ipv6: Scalar = "ipv6" });
fields!(EndpointFields { metadata: Object<Meta> = "metadata", status: Object<EndpointStatus> = "status" });

/// The name, namespace and resourceVersion of an object, as a watch keeps them.
pub struct Names3 {
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource_version: Option<String>,
}

impl Meta {
    fn names(&self) -> Names3 {
        let text = |s: &Scalar| s.str().map(str::to_string);
        Names3 { name: text(&self.name), namespace: text(&self.namespace), resource_version: text(&self.resource_version) }
    }
}

/// A Pod from `deserializer`, as `Pod::decode_into` decodes it, and its names.
pub fn pod<'de, D: Deserializer<'de>>(deserializer: D, names: &mut Names) -> Result<(Names3, Pod), D::Error> {
    let fields = Object::<PodFields>::deserialize(deserializer)?.0.unwrap_or_default();
    let meta = fields.metadata.0.unwrap_or_default();
    let spec = fields.spec.0.unwrap_or_default();
    let status = fields.status.0.unwrap_or_default();
    let mut ips: Ips = status.pod_ips.0.iter().filter_map(|p| p.0.as_ref()?.ip.str().and_then(Addr::parse)).collect();
    if ips.is_empty() {
        ips.extend(status.pod_ip.str().and_then(Addr::parse));
    }
    let pod = Pod {
        namespace: names.intern(meta.namespace.str().unwrap_or_default()),
        name: meta.name.str().unwrap_or_default().into(),
        node_name: spec.node_name.str().map(|node| names.intern(node)),
        host_network: matches!(spec.host_network, Scalar::Bool(true)),
        terminated: matches!(status.phase.str(), Some("Succeeded" | "Failed")),
        ips,
        requested_pool: meta.annotations.0.as_ref().and_then(|a| a.pool.str()).map(Box::from),
    };
    Ok((meta.names(), pod))
}

/// A CiliumEndpoint from `deserializer`, as `Endpoint::decode_into` decodes it, and its names.
pub fn endpoint<'de, D: Deserializer<'de>>(deserializer: D, names: &mut Names) -> Result<(Names3, Endpoint), D::Error> {
    let fields = Object::<EndpointFields>::deserialize(deserializer)?.0.unwrap_or_default();
    let meta = fields.metadata.0.unwrap_or_default();
    let networking = fields.status.0.and_then(|s| s.networking.0);
    let addressing = networking.map(|n| n.addressing.0).unwrap_or_default();
    let ips: Ips = addressing
        .iter()
        .filter_map(|a| a.0.as_ref())
        .flat_map(|a| [&a.ipv4, &a.ipv6].map(|s| s.str().and_then(Addr::parse)))
        .flatten()
        .collect();
    let endpoint = Endpoint {
        namespace: names.intern(meta.namespace.str().unwrap_or_default()),
        name: meta.name.str().unwrap_or_default().into(),
        ips,
    };
    Ok((meta.names(), endpoint))
}
