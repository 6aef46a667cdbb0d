//! The answers of the CiliumEndpoint Table read (`src/cluster/endpoint_table.rs`) as a hostile
//! or broken API server gives them, for the fault proxy (`faults.rs`, [`super::faults::Fault::Tables`]):
//! the CRD, the namespace list and the Tables, each generated as it is sent. Every other request
//! (pools, nodes, pods, a whole list of the endpoints) goes on to the real API server.

use std::sync::atomic::AtomicU64;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// What is hostile about the Table read. Sizes are bytes of the answer's generated part.
#[derive(Clone, Copy, Debug)]
pub enum TableFault {
    /// Every Table's one row holds an address cell of `[]`s.
    HugeCell(u64),
    /// Every Table's column definitions are `{}`s.
    EmptyColumns(u64),
    /// The namespace list is `{}` items.
    EmptyNamespaces(u64),
    /// The CiliumEndpoint CRD's v2 schema holds `[]`s before its printer columns.
    PaddedCrd(u64),
    /// `namespaces` namespaces, each Table of `rows` rows.
    Rows { namespaces: usize, rows: u64 },
    /// Every Table refused (500) with an error body of this many bytes.
    RefusedTables(u64),
    /// This many namespaces in one answer, whatever `limit` asked; each Table empty.
    IgnoredLimit(usize),
}

/// The column definitions of a Table of CiliumEndpoints, as the API server prints them.
const COLUMNS: &str = r#"[{"name":"Name","type":"string","format":"name"},{"name":"Security Identity","type":"integer","format":""},{"name":"Endpoint State","type":"string","format":""},{"name":"IPv4","type":"string","format":""},{"name":"IPv6","type":"string","format":""}]"#;

/// The CiliumEndpoint CRD's v2 printer columns of the addresses.
const CRD_COLUMNS: &str = r#"[{"name":"IPv4","type":"string","jsonPath":".status.networking.addressing[0].ipv4"},{"name":"IPv6","type":"string","jsonPath":".status.networking.addressing[0].ipv6"}]"#;

/// What the proxy does with one request under `fault`: answered here (true), or passed on.
pub async fn answer(fault: TableFault, stream: &mut TcpStream, path: &str, table: bool, sent: &AtomicU64) -> bool {
    let table_path = path.starts_with("/apis/cilium.io/v2/namespaces/") && path.ends_with("/ciliumendpoints");
    let _ = if path.ends_with("/customresourcedefinitions/ciliumendpoints.cilium.io") {
        crd(fault, stream, sent).await
    } else if path == "/api/v1/namespaces" {
        match namespaces(fault) {
            Namespaces::Names(names) => {
                let items: Vec<String> = names.iter().map(|n| format!(r#"{{"metadata":{{"name":"{n}"}}}}"#)).collect();
                let list = format!(
                    r#"{{"kind":"NamespaceList","apiVersion":"v1","metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
                    items.join(",")
                );
                super::faults::generated(stream, list.as_bytes(), b" ", 0, b"", sent).await
            }
            Namespaces::Empty(bytes) => {
                let start = br#"{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{}"#;
                super::faults::generated(stream, start, b",{}", bytes, b"]}", sent).await
            }
            Namespaces::Real => return false,
        }
    } else if table_path && table {
        match fault {
            TableFault::HugeCell(bytes) => {
                let start = format!(
                    r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{{}},"columnDefinitions":{COLUMNS},"rows":[{{"cells":["web-1",7,"ready",[[]"#
                );
                super::faults::generated(stream, start.as_bytes(), b",[]", bytes, br#"],null]}]}"#, sent).await
            }
            TableFault::EmptyColumns(bytes) => {
                let start = br#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[{}"#;
                super::faults::generated(stream, start, b",{}", bytes, br#"],"rows":[]}"#, sent).await
            }
            TableFault::Rows { rows, .. } => {
                let row = r#"{"cells":["web-1",7,"ready","10.40.0.9",null]}"#;
                let start = format!(
                    r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{{}},"columnDefinitions":{COLUMNS},"rows":[{row}"#
                );
                let unit = format!(",{row}");
                let bytes = rows.saturating_sub(1) * unit.len() as u64;
                super::faults::generated(stream, start.as_bytes(), unit.as_bytes(), bytes, b"]}", sent).await
            }
            TableFault::RefusedTables(bytes) => refused(stream, bytes, sent).await,
            TableFault::IgnoredLimit(_) => {
                let table =
                    format!(r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{{}},"columnDefinitions":{COLUMNS},"rows":[]}}"#);
                super::faults::generated(stream, table.as_bytes(), b" ", 0, b"", sent).await
            }
            TableFault::EmptyNamespaces(_) | TableFault::PaddedCrd(_) => return false,
        }
    } else {
        return false;
    };
    let _ = stream.shutdown().await;
    true
}

/// The CiliumEndpoint CRD, padded when the fault says so.
async fn crd(fault: TableFault, stream: &mut TcpStream, sent: &AtomicU64) -> std::io::Result<()> {
    let start = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ciliumendpoints.cilium.io"},"spec":{"group":"cilium.io","versions":[{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"padding":[[]"#;
    let end = format!(r#"]}}}},"additionalPrinterColumns":{CRD_COLUMNS}}}]}}}}"#);
    let bytes = if let TableFault::PaddedCrd(bytes) = fault { bytes } else { 0 };
    super::faults::generated(stream, start.as_bytes(), b",[]", bytes, end.as_bytes(), sent).await
}

enum Namespaces {
    Names(Vec<String>),
    /// `{}` items of this many bytes.
    Empty(u64),
    /// The real API server's.
    Real,
}

fn namespaces(fault: TableFault) -> Namespaces {
    let named = |n: usize| Namespaces::Names((0..n).map(|i| format!("ns-{i:05}")).collect());
    match fault {
        TableFault::EmptyNamespaces(bytes) => Namespaces::Empty(bytes),
        TableFault::Rows { namespaces, .. } => named(namespaces),
        TableFault::IgnoredLimit(namespaces) => named(namespaces),
        _ => Namespaces::Real,
    }
}

/// A 500 whose body is `bytes` of text.
async fn refused(stream: &mut TcpStream, bytes: u64, sent: &AtomicU64) -> std::io::Result<()> {
    stream.write_all(b"HTTP/1.1 500 Refused\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n").await?;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..n]).await?;
        sent.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        left -= n as u64;
    }
    Ok(())
}
