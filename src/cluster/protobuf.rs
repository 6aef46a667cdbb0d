//! A list of pods as the API server encodes it in protobuf (`application/vnd.kubernetes.protobuf`),
//! decoded into the model's [`Pod`]s as its bytes arrive. The messages below declare only the fields
//! [`Pod::decode_into`] reads, with the numbers of Kubernetes' `k8s.io/api/core/v1/generated.proto`
//! and `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`; prost skips every other field
//! without building it. A pod list in protobuf is 0.62 × the bytes of its JSON and costs the API
//! server less to send (docs/performance.md, "One answer per list").
//!
//! Every answer is `k8s\0` and a `runtime.Unknown` whose `raw` field holds the encoded object: a
//! `PodList` for a list, a `Status` for an error. Custom resources have no protobuf encoding.

use crate::model::ip::Addr;
use crate::model::slim::{ItemBudget, Over};
use crate::model::workload::{Ips, Names, POOL_ANNOTATION, Pod};
use prost::Message;
use prost::encoding::WireType;
use std::io::Read;

/// The four bytes before every protobuf answer of the API server.
pub const MAGIC: &[u8] = b"k8s\0";

/// The media type to ask for, and that a protobuf answer carries.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// `meta.v1.ListMeta`: the list's resourceVersion (a watch resumes from it) and the token that
/// continues a paged list.
#[derive(Clone, PartialEq, Message)]
struct ListMeta {
    #[prost(string, tag = "2")]
    resource_version: String,
    #[prost(string, tag = "3")]
    continue_token: String,
}

/// `core.v1.Pod`.
#[derive(Clone, PartialEq, Message)]
struct PodMessage {
    #[prost(message, optional, tag = "1")]
    metadata: Option<ObjectMeta>,
    #[prost(message, optional, tag = "2")]
    spec: Option<PodSpec>,
    #[prost(message, optional, tag = "3")]
    status: Option<PodStatus>,
}

/// `meta.v1.ObjectMeta`.
#[derive(Clone, PartialEq, Message)]
struct ObjectMeta {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "3")]
    namespace: String,
    /// A protobuf map is a repeated message of a key and a value.
    #[prost(message, repeated, tag = "12")]
    annotations: Vec<Annotation>,
}

#[derive(Clone, PartialEq, Message)]
struct Annotation {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// `core.v1.PodSpec`.
#[derive(Clone, PartialEq, Message)]
struct PodSpec {
    #[prost(string, optional, tag = "10")]
    node_name: Option<String>,
    #[prost(bool, tag = "11")]
    host_network: bool,
}

/// `core.v1.PodStatus`.
#[derive(Clone, PartialEq, Message)]
struct PodStatus {
    #[prost(string, tag = "1")]
    phase: String,
    #[prost(string, tag = "6")]
    pod_ip: String,
    #[prost(message, repeated, tag = "12")]
    pod_ips: Vec<PodIp>,
}

#[derive(Clone, PartialEq, Message)]
struct PodIp {
    #[prost(string, tag = "1")]
    ip: String,
}

/// `meta.v1.Status`: what an error answer holds.
#[derive(Clone, PartialEq, Message)]
struct StatusMessage {
    #[prost(string, tag = "2")]
    status: String,
    #[prost(string, tag = "3")]
    message: String,
    #[prost(string, tag = "4")]
    reason: String,
    #[prost(int32, tag = "6")]
    code: i32,
}

/// Why a protobuf answer could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtobufError {
    #[error("it does not begin as the API server's protobuf answers do")]
    NoMagic,
    #[error("{0}")]
    Malformed(String),
    /// The answer's bytes could not be read (its connection failed).
    #[error("{0}")]
    Io(String),
    /// The list held more pods than its object cap has left, or the reading was halted.
    #[error("the reading stopped: {0:?}")]
    Stopped(Over),
}

impl From<prost::DecodeError> for ProtobufError {
    fn from(e: prost::DecodeError) -> ProtobufError {
        ProtobufError::Malformed(e.to_string())
    }
}

/// A pod list: its pods, decoded, its resourceVersion, and the token that asks for its next page
/// (the API server pages a list only when asked to; a server that pages anyway is followed).
#[derive(Debug, Default)]
pub struct PodPage {
    pub pods: Vec<Pod>,
    pub resource_version: Option<String>,
    pub continue_token: Option<String>,
}

/// The pods of a protobuf list answer, read from `answer` as its bytes arrive, each counted by
/// `budget` before it is decoded (the byte bound of a whole list grows with the count,
/// `cluster::limits::WholeList`): a list with more pods than its cap, or read while the budget is
/// halted, is refused at that pod. Memory holds one encoded pod at a time, never the answer.
pub fn read_pod_list(answer: impl Read, budget: &ItemBudget, names: &mut Names) -> Result<PodPage, ProtobufError> {
    let mut page = PodPage::default();
    read_envelope(answer, |list| {
        let mut field = Vec::new();
        while let Some((tag, wire_type)) = list.key()? {
            match (tag, wire_type) {
                (1, WireType::LengthDelimited) => {
                    let meta = ListMeta::decode(list.field(&mut field)?)?;
                    page.resource_version = Some(meta.resource_version).filter(|version| !version.is_empty());
                    page.continue_token = Some(meta.continue_token).filter(|token| !token.is_empty());
                }
                (2, WireType::LengthDelimited) => {
                    budget.count().map_err(ProtobufError::Stopped)?;
                    page.pods.push(PodMessage::decode(list.field(&mut field)?)?.into_pod(names));
                }
                _ => list.skip(wire_type)?,
            }
        }
        if list.0.limit() > 0 {
            return Err(ProtobufError::Malformed("the answer ended inside its list".into()));
        }
        Ok(())
    })?;
    Ok(page)
}

/// An error answer's Status: its code, reason and message.
pub fn read_status(answer: &[u8]) -> Result<(u16, String, String), ProtobufError> {
    let mut status = None;
    read_envelope(answer, |raw| {
        let mut bytes = Vec::new();
        raw.0.read_to_end(&mut bytes).map_err(|e| ProtobufError::Io(e.to_string()))?;
        if raw.0.limit() > 0 {
            return Err(ProtobufError::Malformed("the answer ended inside a field".into()));
        }
        status = Some(StatusMessage::decode(bytes.as_slice())?);
        Ok(())
    })?;
    let status = status.unwrap_or_default();
    let code = u16::try_from(status.code).map_err(|_| ProtobufError::Malformed(format!("status code {}", status.code)))?;
    Ok((code, status.reason, status.message))
}

/// Reads an answer's envelope, `k8s\0` and a `runtime.Unknown`, to its end, handing its field 2,
/// `raw` (the encoded object), to `object` as a stream of its own.
fn read_envelope<R: Read>(
    answer: R,
    mut object: impl FnMut(&mut Wire<std::io::Take<&mut R>>) -> Result<(), ProtobufError>,
) -> Result<(), ProtobufError> {
    let mut answer = Wire(answer);
    let mut magic = [0; MAGIC.len()];
    answer.0.read_exact(&mut magic).map_err(|_| ProtobufError::NoMagic)?;
    if magic != MAGIC {
        return Err(ProtobufError::NoMagic);
    }
    while let Some((tag, wire_type)) = answer.key()? {
        if (tag, wire_type) != (2, WireType::LengthDelimited) {
            answer.skip(wire_type)?;
            continue;
        }
        let len = answer.varint()?;
        object(&mut Wire(Read::take(&mut answer.0, len)))?;
    }
    Ok(())
}

/// Protobuf's wire format read from a stream: keys, varints, fields.
struct Wire<R>(R);

impl<R: Read> Wire<R> {
    /// The next byte; `None` at the end of the stream.
    fn byte(&mut self) -> Result<Option<u8>, ProtobufError> {
        let mut byte = [0];
        loop {
            return match self.0.read(&mut byte) {
                Ok(0) => Ok(None),
                Ok(_) => Ok(Some(byte[0])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => Err(ProtobufError::Io(e.to_string())),
            };
        }
    }

    fn varint(&mut self) -> Result<u64, ProtobufError> {
        self.varint_or_end()?.ok_or_else(|| ProtobufError::Malformed("the answer ended inside a field".into()))
    }

    /// A varint; `None` when the stream ends before it.
    fn varint_or_end(&mut self) -> Result<Option<u64>, ProtobufError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(byte) = self.byte()? else {
                return if shift == 0 { Ok(None) } else { Err(ProtobufError::Malformed("the answer ended inside a varint".into())) };
            };
            value |= u64::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
            if byte < 0x80 {
                return Ok(Some(value));
            }
        }
        Err(ProtobufError::Malformed("a varint longer than ten bytes".into()))
    }

    /// The next field's number and wire type; `None` at the end of the stream.
    fn key(&mut self) -> Result<Option<(u32, WireType)>, ProtobufError> {
        let Some(key) = self.varint_or_end()? else { return Ok(None) };
        let wire_type = WireType::try_from(key & 7).map_err(|_| ProtobufError::Malformed(format!("wire type {}", key & 7)))?;
        let tag = u32::try_from(key >> 3)
            .ok()
            .filter(|&tag| tag > 0)
            .ok_or_else(|| ProtobufError::Malformed(format!("field number {}", key >> 3)))?;
        Ok(Some((tag, wire_type)))
    }

    /// A length-delimited field's bytes, read into `buf` as they arrive (its length is not
    /// allocated before its bytes are there: a hostile length is only a number).
    fn field<'b>(&mut self, buf: &'b mut Vec<u8>) -> Result<&'b [u8], ProtobufError> {
        let len = self.varint()?;
        buf.clear();
        Read::take(&mut self.0, len).read_to_end(buf).map_err(|e| ProtobufError::Io(e.to_string()))?;
        if buf.len() as u64 != len {
            return Err(ProtobufError::Malformed("the answer ended inside a field".into()));
        }
        Ok(buf)
    }

    /// Skips a field of `wire_type` whose key was just read.
    fn skip(&mut self, wire_type: WireType) -> Result<(), ProtobufError> {
        let len = match wire_type {
            WireType::Varint => return self.varint().map(drop),
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::LengthDelimited => self.varint()?,
            WireType::StartGroup | WireType::EndGroup => return Err(ProtobufError::Malformed("a group (never sent by Kubernetes)".into())),
        };
        let skipped =
            std::io::copy(&mut Read::take(&mut self.0, len), &mut std::io::sink()).map_err(|e| ProtobufError::Io(e.to_string()))?;
        if skipped != len {
            return Err(ProtobufError::Malformed("the answer ended inside a field".into()));
        }
        Ok(())
    }
}

impl PodMessage {
    /// The model's pod, read as [`Pod::decode_into`] reads its JSON.
    fn into_pod(self, names: &mut Names) -> Pod {
        let meta = self.metadata.unwrap_or_default();
        let spec = self.spec.unwrap_or_default();
        let status = self.status.unwrap_or_default();
        let mut ips: Ips = status.pod_ips.iter().filter_map(|pod_ip| Addr::parse(&pod_ip.ip)).collect();
        if ips.is_empty() {
            ips.extend(Addr::parse(&status.pod_ip));
        }
        Pod {
            namespace: names.intern(&meta.namespace),
            name: meta.name.into_boxed_str(),
            node_name: spec.node_name.map(|node| names.intern(&node)),
            host_network: spec.host_network,
            terminated: Pod::is_terminal(&status.phase),
            ips,
            // A map's last entry of a key wins, as in Go.
            requested_pool: meta.annotations.into_iter().rev().find(|a| a.key == POOL_ANNOTATION).map(|a| a.value.into_boxed_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `raw` in an answer's envelope, as the API server sends it (a `runtime.Unknown` with its type first).
    fn answer(raw: Vec<u8>) -> Vec<u8> {
        let mut answer = MAGIC.to_vec();
        prost::encoding::bytes::encode(1, &b"\n\x02v1\x12\x07PodList".to_vec(), &mut answer);
        prost::encoding::bytes::encode(2, &raw, &mut answer);
        prost::encoding::string::encode(4, &String::new(), &mut answer);
        answer
    }

    fn list(pods: Vec<PodMessage>, token: &str) -> Vec<u8> {
        let mut raw = Vec::new();
        prost::encoding::message::encode(1, &ListMeta { resource_version: "41".into(), continue_token: token.into() }, &mut raw);
        for pod in &pods {
            prost::encoding::message::encode(2, pod, &mut raw);
        }
        answer(raw)
    }

    /// A pod as a test writes it: name, node, phase, addresses, requested pool.
    struct Case(&'static str, Option<&'static str>, &'static str, &'static [&'static str], Option<&'static str>);

    fn pod(&Case(name, node, phase, ips, pool): &Case) -> PodMessage {
        PodMessage {
            metadata: Some(ObjectMeta {
                name: name.into(),
                namespace: "shop".into(),
                annotations: pool.map(|p| Annotation { key: POOL_ANNOTATION.into(), value: p.into() }).into_iter().collect(),
            }),
            spec: Some(PodSpec { node_name: node.map(Into::into), host_network: false }),
            status: Some(PodStatus {
                phase: phase.into(),
                pod_ip: ips.first().copied().unwrap_or_default().into(),
                pod_ips: ips.iter().map(|ip| PodIp { ip: (*ip).into() }).collect(),
            }),
        }
    }

    /// The same pod in JSON, as [`Pod::decode`] reads it.
    fn pod_json(&Case(name, node, phase, ips, pool): &Case) -> serde_json::Value {
        let mut object = json!({"metadata": {"name": name, "namespace": "shop"}, "spec": {}, "status": {"phase": phase,
            "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()}});
        if let Some(ip) = ips.first() {
            object["status"]["podIP"] = json!(ip);
        }
        if let Some(node) = node {
            object["spec"]["nodeName"] = json!(node);
        }
        if let Some(pool) = pool {
            object["metadata"]["annotations"] = json!({POOL_ANNOTATION: pool});
        }
        object
    }

    #[test]
    fn a_page_decodes_to_the_pods_its_json_decodes_to() {
        let cases = [
            Case("web-1", Some("node-1"), "Running", &["10.1.0.5", "fd00::5"], Some("blue")),
            Case("done", Some("node-1"), "Succeeded", &["10.1.0.6"], None),
            Case("pending", None, "Pending", &[], None),
            Case("odd", Some("node-2"), "Running", &["not an address", "10.1.0.7"], None),
        ];
        let page = list(cases.iter().map(pod).collect(), "next");
        let mut names = Names::default();
        let read = read_pod_list(&page[..], &ItemBudget::new(10), &mut names).unwrap();
        assert_eq!((read.continue_token.as_deref(), read.resource_version.as_deref()), (Some("next"), Some("41")));
        let expected: Vec<String> = cases.iter().map(|case| format!("{:?}", Pod::decode(&pod_json(case)))).collect();
        assert_eq!(read.pods.iter().map(|pod| format!("{pod:?}")).collect::<Vec<_>>(), expected);
        assert!(std::sync::Arc::ptr_eq(&read.pods[0].namespace, &read.pods[1].namespace), "names are shared");
    }

    #[test]
    fn host_network_and_the_pod_ip_fallback() {
        let mut host = pod(&Case("h", Some("n"), "Running", &["10.0.0.1"], None));
        host.spec.as_mut().unwrap().host_network = true;
        let mut single = pod(&Case("s", Some("n"), "Running", &[], None));
        single.status.as_mut().unwrap().pod_ip = "10.0.0.9".into();
        let read = read_pod_list(&list(vec![host, single], "")[..], &ItemBudget::new(10), &mut Names::default()).unwrap();
        assert_eq!(read.continue_token, None, "an empty token ends the list");
        assert!(read.pods[0].host_network && !read.pods[0].holds_pod_ips());
        assert_eq!(read.pods[1].ips.len(), 1, "podIP when podIPs is absent");
    }

    #[test]
    fn a_page_over_the_object_cap_is_refused_and_bad_bytes_fail() {
        let page = list(["p0", "p1", "p2"].map(|name| pod(&Case(name, None, "Running", &[], None))).into(), "");
        assert_eq!(read_pod_list(&page[..], &ItemBudget::new(3), &mut Names::default()).unwrap().pods.len(), 3);
        assert_eq!(read_pod_list(&page[..], &ItemBudget::new(2), &mut Names::default()).unwrap_err(), ProtobufError::Stopped(Over::Items));
        assert_eq!(
            read_pod_list(&b"{\"kind\":\"PodList\"}"[..], &ItemBudget::new(2), &mut Names::default()).unwrap_err(),
            ProtobufError::NoMagic
        );
        assert!(matches!(
            read_pod_list(&page[..page.len() - 3], &ItemBudget::new(9), &mut Names::default()),
            Err(ProtobufError::Malformed(_))
        ));
        // A field that says it holds 2^60 bytes and holds three: an error, not an allocation.
        let mut hostile = MAGIC.to_vec();
        hostile.extend([0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10, 0x12, 0x01, 0x00]);
        assert!(matches!(read_pod_list(&hostile[..], &ItemBudget::new(9), &mut Names::default()), Err(ProtobufError::Malformed(_))));
        let counted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::default());
        read_pod_list(&page[..], &ItemBudget::new(3).counted_in(counted.clone()), &mut Names::default()).unwrap();
        assert_eq!(counted.load(std::sync::atomic::Ordering::Relaxed), 3, "each pod decoded is counted for the byte bound");
        static HALT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
        let halted = ItemBudget::new(3).halted_by(Some(&HALT));
        assert_eq!(read_pod_list(&page[..], &halted, &mut Names::default()).unwrap_err(), ProtobufError::Stopped(Over::Halted));
    }

    proptest::proptest! {
        /// Any answer, however mangled, is read or refused: never a panic, never more pods than
        /// the cap (an API server's answer is input like any file).
        #[test]
        fn mangled_answers_are_read_or_refused(
            edits in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..8),
            cut in 0usize..256,
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ) {
            let cases = [
                Case("web-1", Some("node-1"), "Running", &["10.1.0.5", "fd00::5"], Some("blue")),
                Case("done", Some("node-2"), "Failed", &["10.1.0.6"], None),
            ];
            let mut answer = list(cases.iter().map(pod).collect(), "next");
            for (at, byte) in edits {
                let len = answer.len();
                answer[at % len] = byte;
            }
            answer.truncate(cut.max(MAGIC.len()));
            answer.extend(tail);
            if let Ok(page) = read_pod_list(&answer[..], &ItemBudget::new(2), &mut Names::default()) {
                proptest::prop_assert!(page.pods.len() <= 2);
            }
            let _ = read_status(&answer);
        }
    }

    #[test]
    fn an_error_answer_reads_as_its_status() {
        let status = StatusMessage { status: "Failure".into(), message: "pods is forbidden".into(), reason: "Forbidden".into(), code: 403 };
        assert_eq!(read_status(&answer(status.encode_to_vec())), Ok((403, "Forbidden".into(), "pods is forbidden".into())));
    }
}
