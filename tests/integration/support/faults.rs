//! A fault-injecting HTTP proxy in front of a [`TestCluster`]'s real kube-apiserver: the one
//! place a scripted HTTP layer belongs (issue 28). The plugin talks plain HTTP to the proxy
//! ([`FaultProxy::kubeconfig`], a made-up token); the proxy forwards every request to the
//! apiserver over TLS with the test cluster's own credentials (a kube client of its kubeconfig)
//! and answers as the API server did, except for the requests its [`Fault`] names.
//!
//! Each connection carries one request and its answer ends by closing the connection, so the
//! proxy needs no chunked encoding and the plugin cannot tell it from a server that does so.
//! Watch requests are streamed through as the API server sends them, unless a [`WatchFault`] set
//! with [`FaultProxy::set_watch_fault`] names their resource: then the proxy answers them itself.

use super::TestCluster;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    /// Streaming lists refused (422, without a final line break) as a server with the WatchList
    /// feature off refuses them; pages and resumed watches pass.
    RefuseStreamingLists { resources: &'static [&'static str] },
    /// The CiliumEndpoint Table read answered by the proxy as `support::tables` says.
    Tables(super::tables::TableFault),
}

impl Fault {
    fn resources(&self) -> &'static [&'static str] {
        match self {
            Fault::RepeatContinue { resources }
            | Fault::Trickle { resources, .. }
            | Fault::Inflate { resources, .. }
            | Fault::JunkItems { resources }
            | Fault::Delay { resources, .. }
            | Fault::EmptyItems { resources, .. }
            | Fault::RefuseStreamingLists { resources } => resources,
            Fault::Tables(_) => &[],
        }
    }
}

/// What the proxy answers to resumed watch requests (no `sendInitialEvents`) of one resource:
/// the initial listing goes through, then each watch misbehaves.
#[derive(Clone, Copy, Debug)]
pub enum WatchFault {
    /// Half an event, then the connection is closed.
    CutMidEvent,
    /// The headers, then the connection is closed: an empty answer.
    Empty,
    /// The headers, then nothing, whatever `timeoutSeconds` said, until the plugin hangs up.
    Silent,
    /// One event that never ends: 1 MiB chunks without a line break.
    Endless,
    /// One complete event holding an object of this many bytes.
    Huge(u64),
    /// ADDED pods with new names, as fast as the plugin reads them.
    Flood,
    /// A `410 Gone` error event: the plugin must list again.
    Gone,
    /// A line that is no JSON.
    Garbage,
    /// Streaming lists (not resumed watches) passed on one line (event) at a time, this far apart,
    /// and ended at the `timeoutSeconds` they asked for, as the API server ends a list of a large
    /// cluster that outlasts it.
    SlowInitialEvents(Duration),
}

/// The most bytes an endless event or a flood sends on one connection (the proxy ends too).
const ENDLESS_BOUND: u64 = 4 << 30;

/// The watch fault in force and the requests seen, shared with the proxy's connections.
#[derive(Default)]
struct Watches {
    fault: Mutex<Option<(&'static str, WatchFault)>>,
    /// Requests per resource plural: (watches, lists).
    requests: Mutex<HashMap<String, (u64, u64)>>,
    /// The `limit` each list request of a resource plural asked for (`""`: none), in order.
    limits: Mutex<HashMap<String, Vec<String>>>,
    /// A frozen proxy answers nothing and passes nothing on, as a SIGSTOPped API server.
    frozen: std::sync::atomic::AtomicBool,
}

impl Watches {
    fn frozen(&self) -> bool {
        self.frozen.load(Ordering::Relaxed)
    }

    /// Waits while frozen (two minutes at most).
    async fn thaw(&self) {
        for _ in 0..1200 {
            if !self.frozen() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The API server's answer to a streaming list while its WatchList feature is off (the proxy's
/// has no final line break).
const WATCH_LIST_OFF: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled","reason":"Invalid","code":422}"#;

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
    watches: Arc<Watches>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FaultProxy {
    /// Starts the proxy in front of `cluster`, writing its kubeconfig into `dir`.
    pub fn start(cluster: &TestCluster, fault: Fault, dir: &Path) -> FaultProxy {
        FaultProxy::start_with(cluster, Some(fault), dir)
    }

    /// A proxy that passes everything through until [`FaultProxy::set_watch_fault`] says otherwise.
    pub fn passing(cluster: &TestCluster, dir: &Path) -> FaultProxy {
        FaultProxy::start_with(cluster, None, dir)
    }

    fn start_with(cluster: &TestCluster, fault: Option<Fault>, dir: &Path) -> FaultProxy {
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
        let watches = Arc::new(Watches::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let counter = sent.clone();
        let shared = watches.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("proxy runtime");
            runtime.block_on(async move {
                let config = Config::from_custom_kubeconfig(upstream, &KubeConfigOptions::default()).await.expect("upstream config");
                let client = kube::Client::try_from(config).expect("upstream client");
                let listener = TcpListener::from_std(listener).expect("tokio listener");
                let accept = async {
                    while let Ok((stream, _)) = listener.accept().await {
                        tokio::spawn(serve(stream, client.clone(), fault.clone(), counter.clone(), shared.clone()));
                    }
                };
                tokio::select! { _ = accept => {}, _ = stopped => {} }
            });
        });
        FaultProxy { url, kubeconfig, sent, watches, _stop: stop }
    }

    /// From now on, resumed watches of `resource` (a plural) get `fault`; `None`: none do.
    pub fn set_watch_fault(&self, fault: Option<(&'static str, WatchFault)>) {
        *self.watches.fault.lock().unwrap() = fault;
    }

    /// Freezes (or thaws) the proxy: while frozen it answers nothing, passes no byte of an open
    /// watch on, and closes what it held when thawed, as an API server stopped and continued.
    pub fn freeze(&self, frozen: bool) {
        self.watches.frozen.store(frozen, Ordering::Relaxed);
    }

    /// Watch and list requests of `resource` (a plural) so far.
    pub fn requests(&self, resource: &str) -> (u64, u64) {
        self.watches.requests.lock().unwrap().get(resource).copied().unwrap_or_default()
    }

    /// The `limit` of each list request of `resource` (a plural) so far, in order.
    pub fn list_limits(&self, resource: &str) -> Vec<String> {
        self.watches.limits.lock().unwrap().get(resource).cloned().unwrap_or_default()
    }

    /// Bytes of faulty answers the proxy managed to write so far (the kernel's socket buffers
    /// hold some that the plugin may never have read).
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

/// A kubeconfig with context `healthy` (the test cluster's own) and `faulty` (the proxy).
pub fn two_contexts(cluster: &TestCluster, proxy: &FaultProxy, path: &std::path::Path) {
    let own: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&cluster.kubeconfig).unwrap()).expect("kubeconfig");
    let config = serde_json::json!({"apiVersion": "v1", "kind": "Config", "current-context": "healthy",
        "clusters": [{"name": "healthy", "cluster": own["clusters"][0]["cluster"]}, {"name": "faulty", "cluster": {"server": proxy.url}}],
        "users": [{"name": "healthy", "user": own["users"][0]["user"]}, {"name": "faulty", "user": {"token": PROXY_TOKEN}}],
        "contexts": [{"name": "healthy", "context": {"cluster": "healthy", "user": "healthy"}},
                     {"name": "faulty", "context": {"cluster": "faulty", "user": "faulty"}}]});
    std::fs::write(path, config.to_string()).unwrap();
}

/// One request on one connection: forwarded, faulted or not, then the connection is closed.
async fn serve(stream: TcpStream, client: kube::Client, fault: Option<Fault>, sent: Arc<AtomicU64>, watches: Arc<Watches>) {
    let mut stream = BufReader::new(stream);
    let Some((method, target, body, table)) = read_request(&mut stream).await else { return };
    if watches.frozen() {
        return watches.thaw().await;
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let is_watch = query.split('&').any(|p| p == "watch=true" || p == "watch=1");
    let is_list = method == "GET" && !is_watch;
    let resource = path.rsplit('/').next().unwrap_or_default().to_string();
    if method == "GET" {
        let mut requests = watches.requests.lock().unwrap();
        let counts = requests.entry(resource.clone()).or_default();
        if is_watch {
            counts.0 += 1
        } else {
            counts.1 += 1;
            let limit = query.split('&').find_map(|p| p.strip_prefix("limit=")).unwrap_or_default();
            watches.limits.lock().unwrap().entry(resource.clone()).or_default().push(limit.to_string());
        }
    }
    if let Some(Fault::Tables(tables)) = &fault
        && is_list
        && super::tables::answer(*tables, stream.get_mut(), path, table.is_some(), &sent).await
    {
        return;
    }
    let names_resource = |fault: &Fault| fault.resources().iter().any(|r| path.ends_with(&format!("/{r}")));
    if is_watch {
        let resumed = !query.split('&').any(|p| p == "sendInitialEvents=true");
        if let Some(refusing @ Fault::RefuseStreamingLists { .. }) = &fault
            && !resumed
            && names_resource(refusing)
        {
            let _ = respond(stream.get_mut(), 422, WATCH_LIST_OFF.as_bytes()).await;
            return;
        }
        let faulted = *watches.fault.lock().unwrap();
        match faulted {
            Some((faulted, WatchFault::SlowInitialEvents(every))) if !resumed && faulted == resource => {
                slow_initial_events(stream.get_mut(), &client, &target, every).await
            }
            Some((_, WatchFault::SlowInitialEvents(_))) => stream_through(stream.get_mut(), &client, &target, &watches).await,
            Some((faulted, watch_fault)) if resumed && faulted == resource => misbehave(stream.get_mut(), watch_fault, &watches).await,
            _ => stream_through(stream.get_mut(), &client, &target, &watches).await,
        }
        return;
    }
    let faulted = is_list && fault.as_ref().is_some_and(|f| names_resource(f) && !matches!(f, Fault::RefuseStreamingLists { .. }));
    let stream = stream.get_mut();
    let Some(fault) = fault.filter(|_| faulted) else {
        let (status, body) = forward(&client, &method, &target, body, table.as_deref()).await;
        let _ = respond(stream, status, &body).await;
        return;
    };
    match fault {
        Fault::RepeatContinue { .. } => {
            // The apiserver would refuse a made-up token: ask it for the first page every time.
            let query: Vec<&str> = query.split('&').filter(|p| !p.starts_with("continue=")).collect();
            let (status, body) = forward(&client, &method, &format!("{path}?{}", query.join("&")), Vec::new(), None).await;
            let body = edit_list(&body, |list| list["metadata"]["continue"] = json!(STUCK_TOKEN));
            let _ = respond(stream, status, &body).await;
        }
        Fault::JunkItems { .. } => {
            let (status, body) = forward(&client, &method, &target, body, None).await;
            let body = edit_list(&body, |list| {
                let items = list["items"].as_array_mut().expect("a list has items");
                items.push(json!("not an object"));
                items.push(json!({"metadata": {"namespace": "nameless"}}));
            });
            let _ = respond(stream, status, &body).await;
        }
        Fault::Delay { by, .. } => {
            tokio::time::sleep(by).await;
            let (status, body) = forward(&client, &method, &target, body, None).await;
            let _ = respond(stream, status, &body).await;
        }
        Fault::Trickle { every, .. } => {
            let (status, body) = forward(&client, &method, &target, body, None).await;
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
        Fault::RefuseStreamingLists { .. } => unreachable!("its pages are passed on unfaulted"),
        Fault::Tables(_) => unreachable!("it names no resource"),
    }
}

/// The API server's answer to the watch `target`, its status line and headers already passed on;
/// `None` when it could not be asked (the plugin is answered 502) or the plugin hung up.
async fn open_watch(stream: &mut TcpStream, client: &kube::Client, target: &str) -> Option<kube::client::Body> {
    let request = http::Request::builder().uri(target).body(kube::client::Body::empty()).expect("a request");
    let Ok(response) = client.send(request).await else {
        let _ = respond(stream, 502, b"proxy: the watch failed").await;
        return None;
    };
    stream.write_all(&head(response.status().as_u16())).await.ok()?;
    Some(response.into_body())
}

/// A watch answered as the API server answers it, each chunk passed on as it arrives.
async fn stream_through(stream: &mut TcpStream, client: &kube::Client, target: &str, watches: &Watches) {
    use http_body_util::BodyExt;
    let Some(mut body) = open_watch(stream, client, target).await else { return };
    while let Some(Ok(frame)) = body.frame().await {
        if watches.frozen() {
            return watches.thaw().await;
        }
        if let Some(data) = frame.data_ref()
            && (stream.write_all(data).await.is_err() || stream.flush().await.is_err())
        {
            return;
        }
    }
    if watches.frozen() {
        return watches.thaw().await;
    }
    let _ = stream.shutdown().await;
}

/// A streaming list passed on one event every `every`, ended at the timeout it asked for.
async fn slow_initial_events(stream: &mut TcpStream, client: &kube::Client, target: &str, every: Duration) {
    use http_body_util::BodyExt;
    let asked = target.split(['?', '&']).find_map(|p| p.strip_prefix("timeoutSeconds=")?.parse::<u64>().ok()).unwrap_or(290);
    let ends = tokio::time::Instant::now() + Duration::from_secs(asked);
    let Some(mut body) = open_watch(stream, client, target).await else { return };
    let mut pending: Vec<u8> = Vec::new();
    let passed = async {
        while let Some(Ok(frame)) = body.frame().await {
            pending.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..]));
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                tokio::time::sleep(every).await;
                if stream.write_all(&line).await.is_err() || stream.flush().await.is_err() {
                    return;
                }
            }
        }
    };
    let _ = tokio::time::timeout_at(ends, passed).await;
    let _ = stream.shutdown().await;
}

/// A resumed watch answered by the proxy as `fault` says.
async fn misbehave(stream: &mut TcpStream, fault: WatchFault, watches: &Watches) {
    if stream.write_all(&head(200)).await.is_err() {
        return;
    }
    let _ = match fault {
        WatchFault::CutMidEvent => stream.write_all(br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"na"#).await,
        WatchFault::Empty => Ok(()),
        WatchFault::Silent => {
            // Until the plugin hangs up (a read of 0 bytes), the fault is lifted (a server that
            // behaves again ends what it held open) or two minutes pass.
            let mut buffer = [0u8; 64];
            let lifted = async {
                while watches.fault.lock().unwrap().is_some() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(120), async {
                tokio::select! { _ = stream.read(&mut buffer) => {}, _ = lifted => {} }
            })
            .await;
            Ok(())
        }
        WatchFault::Endless => endless(stream, b"{\"type\":\"ADDED\",\"object\":{\"padding\":\"", None).await,
        WatchFault::Huge(bytes) => {
            let start = br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"huge","namespace":"default","resourceVersion":"1"},"padding":""#;
            endless(stream, start, Some(bytes)).await
        }
        WatchFault::Flood => flood(stream).await,
        WatchFault::Gone => {
            let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}}"#;
            stream.write_all(format!("{gone}\n").as_bytes()).await
        }
        WatchFault::Garbage => stream.write_all(b"this is not an event\n").await,
        // The caller passes every watch on itself under this fault (`slow_initial_events`).
        WatchFault::SlowInitialEvents(_) => unreachable!("a slow-initial-events fault never misbehaves"),
    };
    let _ = stream.shutdown().await;
}

/// `start`, then 1 MiB chunks of `x` without a line break: `bytes` of them and the event's end,
/// or (`None`) until the plugin hangs up.
async fn endless(stream: &mut TcpStream, start: &[u8], bytes: Option<u64>) -> std::io::Result<()> {
    stream.write_all(start).await?;
    let chunk = vec![b'x'; 1 << 20];
    let mut left = bytes.unwrap_or(ENDLESS_BOUND);
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..n]).await?;
        left -= n as u64;
    }
    stream.write_all(b"\"}}\n").await
}

/// ADDED pods named `flood-N`, until the plugin hangs up.
async fn flood(stream: &mut TcpStream) -> std::io::Result<()> {
    let mut sent = 0u64;
    for n in 0u64.. {
        let event = format!(
            r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"flood-{n}","namespace":"default","resourceVersion":"{n}"}},"spec":{{"nodeName":"n1"}},"status":{{"phase":"Running","podIPs":[{{"ip":"10.40.0.9"}}]}}}}}}"#
        );
        stream.write_all(format!("{event}\n").as_bytes()).await?;
        sent += event.len() as u64;
        if sent > ENDLESS_BOUND {
            break;
        }
    }
    Ok(())
}

/// A 200 answer: `start`, `unit` repeated to about `bytes`, `end`, written as it is generated.
pub(super) async fn generated(
    stream: &mut TcpStream,
    start: &[u8],
    unit: &[u8],
    bytes: u64,
    end: &[u8],
    sent: &AtomicU64,
) -> std::io::Result<()> {
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

/// The request line, the body when it has one, and the `Accept` header when it asks for a Table
/// (in JSON, as every answer of the proxy); `None` when the client sent nothing usable.
async fn read_request(stream: &mut BufReader<TcpStream>) -> Option<(String, String, Vec<u8>, Option<String>)> {
    let mut line = String::new();
    stream.read_line(&mut line).await.ok()?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_string(), parts.next()?.to_string());
    let (mut length, mut table) = (0, None);
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
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("accept")
            && value.contains("as=Table")
        {
            table = Some(value.trim().to_string());
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await.ok()?;
    Some((method, target, body, table))
}

/// The request sent on to the real apiserver (asking for a Table with `accept`); its status and
/// whole body.
async fn forward(client: &kube::Client, method: &str, target: &str, body: Vec<u8>, accept: Option<&str>) -> (u16, Vec<u8>) {
    let request = http::Request::builder()
        .method(method)
        .uri(target)
        .header("content-type", "application/json")
        .header("accept", accept.unwrap_or("application/json"))
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
