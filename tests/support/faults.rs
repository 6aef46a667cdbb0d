//! A fault-injecting HTTP proxy in front of a [`TestCluster`]'s real kube-apiserver: the one
//! place a scripted HTTP layer belongs (issue 28). The plugin talks plain HTTP to the proxy
//! ([`FaultProxy::kubeconfig`], a made-up token); the proxy forwards every request to the
//! apiserver over TLS with the test cluster's own credentials (a kube client of its kubeconfig)
//! and answers as the API server did, except for the requests its [`Fault`] names.
//!
//! Each connection carries one request and its answer ends by closing the connection, so the
//! proxy needs no chunked encoding and the plugin cannot tell it from a server that does so.

use super::TestCluster;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// The token the proxy's kubeconfig gives the plugin: it must never be printed.
pub const PROXY_TOKEN: &str = "ciliumpool-fault-proxy-token-0123456789";

/// What the proxy does to list requests (not watches) whose path ends with one of `resources`
/// (plurals: `ciliumnodes`, `pods`). Every other request is passed through unchanged.
#[derive(Clone, Debug)]
pub enum Fault {
    /// The real first page, with the same `continue` token on every page: a list that never ends.
    RepeatContinue { resources: &'static [&'static str] },
    /// The real answer, one byte every `every` after the headers.
    Trickle { resources: &'static [&'static str], every: Duration },
    /// A list whose one item holds `bytes` of padding, generated as it is sent.
    Inflate { resources: &'static [&'static str], bytes: u64 },
    /// The real answer with two items that are no usable objects added: a string and an object
    /// without metadata.name.
    JunkItems { resources: &'static [&'static str] },
    /// The real answer, begun only after `by`: a slow server.
    Delay { resources: &'static [&'static str], by: Duration },
    /// One list page of `bytes` of `{}` items (under the response bound, but millions of
    /// objects), generated as it is sent.
    EmptyItems { resources: &'static [&'static str], bytes: u64 },
}

impl Fault {
    fn resources(&self) -> &'static [&'static str] {
        match self {
            Fault::RepeatContinue { resources }
            | Fault::Trickle { resources, .. }
            | Fault::Inflate { resources, .. }
            | Fault::JunkItems { resources }
            | Fault::Delay { resources, .. }
            | Fault::EmptyItems { resources, .. } => resources,
        }
    }
}

/// The continue token [`Fault::RepeatContinue`] sends on every page.
pub const STUCK_TOKEN: &str = "ciliumpool-test-stuck";

/// A running proxy; it stops when dropped.
pub struct FaultProxy {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    /// A kubeconfig pointing at the proxy with [`PROXY_TOKEN`].
    pub kubeconfig: PathBuf,
    /// Bytes of faulty answers written to the plugin's connections so far.
    sent: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FaultProxy {
    /// Starts the proxy in front of `cluster`, writing its kubeconfig into `dir`.
    pub fn start(cluster: &TestCluster, fault: Fault, dir: &Path) -> FaultProxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy port");
        listener.set_nonblocking(true).expect("non-blocking listener");
        let url = format!("http://{}", listener.local_addr().expect("proxy address"));
        let kubeconfig = dir.join("proxy-kubeconfig");
        let config = json!({"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": url}}],
            "users": [{"name": "proxy-user", "user": {"token": PROXY_TOKEN}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy-user"}}]});
        std::fs::write(&kubeconfig, config.to_string()).expect("write the proxy kubeconfig");
        let upstream = Kubeconfig::read_from(&cluster.kubeconfig).expect("read the test kubeconfig");
        let sent = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let counter = sent.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("proxy runtime");
            runtime.block_on(async move {
                let config = Config::from_custom_kubeconfig(upstream, &KubeConfigOptions::default()).await.expect("upstream config");
                let client = kube::Client::try_from(config).expect("upstream client");
                let listener = TcpListener::from_std(listener).expect("tokio listener");
                let accept = async {
                    while let Ok((stream, _)) = listener.accept().await {
                        tokio::spawn(serve(stream, client.clone(), fault.clone(), counter.clone()));
                    }
                };
                tokio::select! { _ = accept => {}, _ = stopped => {} }
            });
        });
        FaultProxy { url, kubeconfig, sent, _stop: stop }
    }

    /// Bytes of faulty answers the proxy managed to write so far (the kernel's socket buffers
    /// hold some that the plugin may never have read).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// One request on one connection: forwarded, faulted or not, then the connection is closed.
async fn serve(stream: TcpStream, client: kube::Client, fault: Fault, sent: Arc<AtomicU64>) {
    let mut stream = BufReader::new(stream);
    let Some((method, target, body)) = read_request(&mut stream).await else { return };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let is_list = method == "GET" && !query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    let faulted = is_list && fault.resources().iter().any(|r| path.ends_with(&format!("/{r}")));
    let stream = stream.get_mut();
    if !faulted {
        let (status, body) = forward(&client, &method, &target, body).await;
        let _ = respond(stream, status, &body).await;
        return;
    }
    match fault {
        Fault::RepeatContinue { .. } => {
            // The apiserver would refuse a made-up token: ask it for the first page every time.
            let query: Vec<&str> = query.split('&').filter(|p| !p.starts_with("continue=")).collect();
            let (status, body) = forward(&client, &method, &format!("{path}?{}", query.join("&")), Vec::new()).await;
            let body = edit_list(&body, |list| list["metadata"]["continue"] = json!(STUCK_TOKEN));
            let _ = respond(stream, status, &body).await;
        }
        Fault::JunkItems { .. } => {
            let (status, body) = forward(&client, &method, &target, body).await;
            let body = edit_list(&body, |list| {
                let items = list["items"].as_array_mut().expect("a list has items");
                items.push(json!("not an object"));
                items.push(json!({"metadata": {"namespace": "nameless"}}));
            });
            let _ = respond(stream, status, &body).await;
        }
        Fault::Delay { by, .. } => {
            tokio::time::sleep(by).await;
            let (status, body) = forward(&client, &method, &target, body).await;
            let _ = respond(stream, status, &body).await;
        }
        Fault::Trickle { every, .. } => {
            let (status, body) = forward(&client, &method, &target, body).await;
            if stream.write_all(&head(status)).await.is_err() {
                return;
            }
            for byte in body {
                if stream.write_all(&[byte]).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
                sent.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(every).await;
            }
        }
        Fault::Inflate { bytes, .. } => {
            let start = br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"padding"},"padding":""#;
            let _ = generated(stream, start, b"x", bytes, br#""}]}"#, &sent).await;
        }
        Fault::EmptyItems { bytes, .. } => {
            let start = br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{}"#;
            let _ = generated(stream, start, b",{}", bytes, b"]}", &sent).await;
        }
    }
}

/// A 200 answer: `start`, `unit` repeated to about `bytes`, `end`, written as it is generated.
async fn generated(stream: &mut TcpStream, start: &[u8], unit: &[u8], bytes: u64, end: &[u8], sent: &AtomicU64) -> std::io::Result<()> {
    stream.write_all(&head(200)).await?;
    stream.write_all(start).await?;
    let chunk = unit.repeat((1 << 20) / unit.len());
    let mut left = bytes;
    while left > 0 {
        // Whole units only (the chunk is a whole number of them).
        let n = (left.min(chunk.len() as u64) as usize).next_multiple_of(unit.len()).min(chunk.len());
        stream.write_all(&chunk[..n]).await?;
        sent.fetch_add(n as u64, Ordering::Relaxed);
        left = left.saturating_sub(n as u64);
    }
    stream.write_all(end).await
}

/// The request line and, when it has one, the body; `None` when the client sent nothing usable.
async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>)> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut length = 0;
    loop {
        let mut header = String::new();
        stream.read_line(&mut header).await.ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    Some((method, target, body))
}

/// The request sent on to the real apiserver; its status and whole body.
async fn forward(client: &kube::Client, method: &str, target: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let request = http::Request::builder()
        .method(method)
        .uri(target)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))
        .expect("a request");
    match client.send(request).await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.into_body().collect_bytes().await.map(|b| b.to_vec()).unwrap_or_default())
        }
        Err(e) => (502, format!("proxy: {e}").into_bytes()),
    }
}

/// A JSON list answer edited by `edit` (other answers, e.g. errors, as they were).
fn edit_list(body: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut list) if list.get("items").is_some() => {
            edit(&mut list);
            list.to_string().into_bytes()
        }
        _ => body.to_vec(),
    }
}

/// Status line and headers of an answer whose body ends when the connection closes.
fn head(status: u16) -> Vec<u8> {
    format!("HTTP/1.1 {status} Proxied\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n").into_bytes()
}

async fn respond(stream: &mut TcpStream, status: u16, body: &[u8]) -> std::io::Result<()> {
    stream.write_all(&head(status)).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}
