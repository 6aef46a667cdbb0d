//! The HTTP side of `serve`: `/metrics` (content negotiated), `/healthz`, `/readyz`. Each answer is
//! built from the shared state alone; nothing here reads the cluster.
//!
//! Every connection is bounded (docs/metrics.md, "The HTTP server"): its request head must arrive
//! within [`Limits::header`] (hyper times the wait for every head, so this is also the idle bound
//! of a kept-alive connection), it lives at most [`Limits::lifetime`] and is then closed after its
//! answer, and at most [`Limits::connections`] are served at once. Past that cap a connection is
//! still answered, once, in a second lane of as many connections with a short head timeout
//! ([`Limits::pressed_header`]), so that probes and scrapes, which send their request at once, are
//! answered while slow or idle clients hold the first lane; past both it waits in the kernel's
//! queue (it is not accepted) until a lane has room, which the second lane's short timeout makes
//! soon. A failing `accept()` (no file descriptor left) is retried after a backoff, never in a loop.

use super::state::{Shared, lock};
use crate::render::metrics::Encoding;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// How long in-flight scrapes may take to finish after SIGTERM, or after a connection's lifetime.
const DRAIN: Duration = Duration::from_secs(10);

/// The most connections served at once in each lane (fewer when the file-descriptor limit is low).
pub const MAX_CONNECTIONS: usize = 256;

/// File descriptors left to the rest of the process (watches, the runtime) when the connection cap
/// is sized from the process's limit.
const RESERVED_FDS: u64 = 64;

/// The first wait after a failed `accept()`; it doubles while failures go on, up to [`ACCEPT_BACKOFF_MAX`].
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(5);
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What one connection may cost.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The most time from waiting for a request head (a new connection, or a kept-alive one after
    /// an answer) to its last byte; then the connection is closed.
    pub header: Duration,
    /// The head timeout in the second lane (connections past [`Limits::connections`]).
    pub pressed_header: Duration,
    /// After this long a connection is closed once its answer is written (or [`DRAIN`] later).
    pub lifetime: Duration,
    /// Connections served at once in each lane.
    pub connections: usize,
}

impl Limits {
    /// The defaults, the connection cap sized to the process's file-descriptor limit.
    pub fn new() -> Limits {
        Limits {
            header: Duration::from_secs(10),
            pressed_header: Duration::from_secs(1),
            lifetime: Duration::from_secs(120),
            connections: connection_cap(fd_limit()),
        }
    }
}

/// [`MAX_CONNECTIONS`] per lane, or fewer so that both lanes and [`RESERVED_FDS`] fit in `fds`.
fn connection_cap(fds: Option<u64>) -> usize {
    let fitting = fds.map_or(u64::MAX, |fds| (fds.saturating_sub(RESERVED_FDS) / 2).max(1));
    usize::try_from(fitting).unwrap_or(usize::MAX).min(MAX_CONNECTIONS)
}

#[cfg(unix)]
fn fd_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(not(unix))]
fn fd_limit() -> Option<u64> {
    None
}

/// The wait after a failed `accept()`: 5 ms, doubling while failures go on, at most 1 s (what Go's
/// `net/http` does). `previous` is the last wait, `None` after a success.
fn accept_backoff(previous: Option<Duration>) -> Duration {
    previous.map_or(ACCEPT_BACKOFF_MIN, |wait| (wait * 2).min(ACCEPT_BACKOFF_MAX))
}

/// Answers until `shutdown` turns true, then stops accepting and lets open connections finish.
pub async fn serve(listener: TcpListener, state: Shared, shutdown: watch::Sender<bool>, limits: Limits) {
    let mut stop = shutdown.subscribe();
    let lanes = [Arc::new(Semaphore::new(limits.connections)), Arc::new(Semaphore::new(limits.connections))];
    let mut backoff = None;
    loop {
        // Past both lanes a connection waits in the kernel's queue, not accepted, until one has room.
        let place = tokio::select! {
            place = room(&lanes) => place,
            _ = stop.changed() => break,
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    backoff = None;
                    admit(stream, place, &lanes, &state, &shutdown, limits);
                }
                Err(_) => {
                    // Most often EMFILE: no descriptor until a connection ends.
                    let wait = accept_backoff(backoff);
                    backoff = Some(wait);
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = stop.changed() => break,
                    }
                }
            },
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let total = u32::try_from(limits.connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(DRAIN, async {
        for lane in &lanes {
            let _ = lane.acquire_many(total).await;
        }
    })
    .await;
}

/// A place for the next connection: in the first lane when it has room, else in the first of the
/// two that has (true: the first lane). Waits while both are full.
async fn room(lanes: &[Arc<Semaphore>; 2]) -> (OwnedSemaphorePermit, bool) {
    if let Ok(permit) = lanes[0].clone().try_acquire_owned() {
        return (permit, true);
    }
    tokio::select! {
        biased;
        permit = lanes[0].clone().acquire_owned() => (permit.expect("the lanes are never closed"), true),
        permit = lanes[1].clone().acquire_owned() => (permit.expect("the lanes are never closed"), false),
    }
}

/// Serves `stream` in its lane: the first (kept alive, [`Limits::header`]) when it has room by now,
/// else the second (one request, [`Limits::pressed_header`]).
fn admit(
    stream: TcpStream,
    (mut permit, mut first): (OwnedSemaphorePermit, bool),
    lanes: &[Arc<Semaphore>; 2],
    state: &Shared,
    shutdown: &watch::Sender<bool>,
    limits: Limits,
) {
    if !first && let Ok(moved) = lanes[0].clone().try_acquire_owned() {
        (permit, first) = (moved, true);
    }
    let header = if first { limits.header } else { limits.pressed_header };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header).keep_alive(first);
    tokio::spawn(drive(stream, builder, state.clone(), shutdown.subscribe(), limits.lifetime, permit));
}

/// Runs one connection until it ends, its lifetime is over or the server stops; then lets its
/// answer in flight finish (at most [`DRAIN`]). The permit is its place in its lane.
async fn drive(
    stream: TcpStream,
    builder: hyper::server::conn::http1::Builder,
    state: Shared,
    mut stop: watch::Receiver<bool>,
    lifetime: Duration,
    permit: OwnedSemaphorePermit,
) {
    let service = hyper::service::service_fn(move |request| answer(request, state.clone()));
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let ended = tokio::select! {
        _ = connection.as_mut() => true,
        _ = stop.wait_for(|stopped| *stopped) => false,
        _ = tokio::time::sleep(lifetime) => false,
    };
    if !ended {
        connection.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(DRAIN, connection).await;
    }
    drop(permit);
}

async fn answer(request: Request<Incoming>, state: Shared) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Ok(text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n".into()));
    }
    Ok(match request.uri().path() {
        "/metrics" => {
            let accept = request.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok());
            let encoding = Encoding::negotiate(accept);
            let body = lock(&state).exposition(encoding);
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(encoding.content_type()));
            response
        }
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => {
            let status = lock(&state).status();
            match status.reason {
                None => text(StatusCode::OK, "ok\n".into()),
                Some(reason) => text(StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")),
            }
        }
        "/" => index(),
        _ => text(StatusCode::NOT_FOUND, "not found: /metrics, /healthz, /readyz\n".into()),
    })
}

/// `/`: a small page linking what the exporter serves (a browser pointed at the port).
fn index() -> Response<Full<Bytes>> {
    const PAGE: &str = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kubectl-ciliumpool serve</title></head>\n\
        <body><h1>kubectl-ciliumpool serve</h1><ul>\n\
        <li><a href=\"/metrics\">/metrics</a>: Cilium multi-pool IPAM figures (OpenMetrics or Prometheus text)</li>\n\
        <li><a href=\"/healthz\">/healthz</a>: the process answers</li>\n\
        <li><a href=\"/readyz\">/readyz</a>: every watched cluster is fresh, or why not</li>\n\
        </ul></body></html>\n";
    let mut response = text(StatusCode::OK, PAGE.into());
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/html; charset=utf-8"));
    response
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::serve::State;
    use std::io::{ErrorKind, Read, Write};
    use std::net::SocketAddr;
    use std::sync::Mutex;
    use std::time::Instant;

    /// A server on a free loopback port, run on its own thread; stopped and joined when dropped.
    struct Server {
        address: SocketAddr,
        shutdown: watch::Sender<bool>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Server {
        fn start(limits: Limits) -> Server {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let address = listener.local_addr().unwrap();
            let (shutdown, _) = watch::channel(false);
            let sender = shutdown.clone();
            let state: Shared = Arc::new(Mutex::new(State::new(Duration::from_secs(60), vec![None])));
            let thread = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                runtime.block_on(async move { serve(TcpListener::from_std(listener).unwrap(), state, sender, limits).await });
            });
            Server { address, shutdown, thread: Some(thread) }
        }

        /// A connection that sent half a request head and nothing more.
        fn half_open(&self) -> std::net::TcpStream {
            let mut stream = std::net::TcpStream::connect(self.address).unwrap();
            stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n").unwrap();
            stream
        }

        /// The status line of one GET on a new connection, None when it is closed unanswered or
        /// not answered within 3 s.
        fn get(&self, path: &str) -> Option<String> {
            self.answer(path).lines().next().filter(|l| l.starts_with("HTTP/1.1 ")).map(str::to_string)
        }

        /// The whole answer (head and body) to one GET on a new connection, as far as it came in 3 s.
        fn answer(&self, path: &str) -> String {
            let mut answer = String::new();
            let Ok(mut stream) = std::net::TcpStream::connect(self.address) else { return answer };
            stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            if stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes()).is_ok() {
                let _ = stream.read_to_string(&mut answer);
            }
            answer
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.shutdown.send(true);
            let _ = self.thread.take().unwrap().join();
        }
    }

    /// How long until the server closes `stream` (whatever it wrote first), None when it is still
    /// open after `bound`.
    fn closed_within(stream: &mut std::net::TcpStream, bound: Duration) -> Option<Duration> {
        let start = Instant::now();
        let mut buffer = [0u8; 4096];
        loop {
            stream.set_read_timeout(Some(bound.saturating_sub(start.elapsed()).max(Duration::from_millis(1)))).unwrap();
            match stream.read(&mut buffer) {
                Ok(0) => return Some(start.elapsed()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Some(start.elapsed()),
                Err(_) => return None,
            }
        }
    }

    fn limits(header: Duration, connections: usize) -> Limits {
        Limits { header, pressed_header: Duration::from_millis(500), lifetime: Duration::from_secs(60), connections }
    }

    /// Issue 42: `/` is a page linking the three paths, not a bare 404; other paths stay 404.
    #[test]
    fn the_root_links_metrics_healthz_and_readyz() {
        let server = Server::start(limits(Duration::from_secs(1), 8));
        let page = server.answer("/");
        assert!(page.starts_with("HTTP/1.1 200 OK") && page.contains("content-type: text/html"), "{page}");
        for path in ["/metrics", "/healthz", "/readyz"] {
            assert!(page.contains(&format!("<a href=\"{path}\">")), "{path}: {page}");
        }
        assert_eq!(server.get("/nope").as_deref(), Some("HTTP/1.1 404 Not Found"));
    }

    #[test]
    fn accept_errors_back_off_from_5ms_doubling_to_1s() {
        let mut waits = vec![accept_backoff(None)];
        while waits.len() < 12 {
            waits.push(accept_backoff(waits.last().copied()));
        }
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000, 1000]);
    }

    #[test]
    fn the_connection_cap_fits_the_file_descriptor_limit() {
        assert_eq!(connection_cap(None), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(1_048_576)), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(1024)), MAX_CONNECTIONS);
        assert_eq!(connection_cap(Some(128)), 32);
        assert_eq!(connection_cap(Some(10)), 1);
        assert_eq!(Limits::new().header, Duration::from_secs(10));
    }

    #[test]
    fn a_half_sent_request_and_an_idle_kept_alive_connection_are_closed_after_the_header_timeout() {
        let server = Server::start(limits(Duration::from_secs(1), 8));
        let mut half = server.half_open();
        let closed = closed_within(&mut half, Duration::from_secs(20));
        assert!(closed.is_some_and(|t| t >= Duration::from_millis(900)), "the half-sent request is closed after ~1 s: {closed:?}");
        // A kept-alive connection after a whole answer: the wait for the next head is bounded too.
        let mut kept = std::net::TcpStream::connect(server.address).unwrap();
        kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
        let closed = closed_within(&mut kept, Duration::from_secs(20));
        assert!(closed.is_some(), "an idle kept-alive connection is closed");
    }

    #[test]
    fn probes_are_answered_while_idle_connections_hold_both_lanes() {
        let server = Server::start(limits(Duration::from_secs(60), 4));
        let idle: Vec<_> = (0..4).map(|_| server.half_open()).collect();
        // The first lane is full: a probe is answered in the second.
        assert_eq!(server.get("/healthz").as_deref(), Some("HTTP/1.1 200 OK"));
        assert_eq!(server.get("/readyz").as_deref(), Some("HTTP/1.1 503 Service Unavailable"));
        // Both lanes full: the next connection waits (not accepted, no descriptor spent) until the
        // second lane's idle connections reach their short head timeout, then it is answered.
        let mut pressed: Vec<_> = (0..4).map(|_| server.half_open()).collect();
        let start = Instant::now();
        assert_eq!(server.get("/healthz").as_deref(), Some("HTTP/1.1 200 OK"));
        assert!(start.elapsed() < Duration::from_secs(3), "answered after the 0.5 s head timeout: {:?}", start.elapsed());
        for stream in &mut pressed {
            assert!(closed_within(stream, Duration::from_secs(20)).is_some(), "the second lane's head timeout");
        }
        drop(idle);
    }

    #[test]
    fn probes_are_answered_while_metrics_is_scraped_without_pause() {
        let server = Server::start(limits(Duration::from_secs(10), 4));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let scrapes = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let scrapers: Vec<_> = (0..8)
            .map(|_| {
                let (address, stop, scrapes) = (server.address, stop.clone(), scrapes.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        // Kept alive while the server keeps it; a new connection when it does not.
                        let Ok(mut stream) = std::net::TcpStream::connect(address) else { continue };
                        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                        let mut buffer = [0u8; 65536];
                        while !stop.load(std::sync::atomic::Ordering::Relaxed)
                            && stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n").is_ok()
                            && stream.read(&mut buffer).is_ok_and(|n| n > 0)
                        {
                            scrapes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        // The probes are asked while the scrapers are at it (on a busy machine the scrapers may
        // take a moment to start: the probes then wait for them instead of finishing first).
        let started = Instant::now();
        while scrapes.load(std::sync::atomic::Ordering::Relaxed) == 0 && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for _ in 0..10 {
            let start = Instant::now();
            assert_eq!(server.get("/healthz").as_deref(), Some("HTTP/1.1 200 OK"));
            assert_eq!(server.get("/readyz").as_deref(), Some("HTTP/1.1 503 Service Unavailable"));
            assert!(start.elapsed() < Duration::from_secs(2), "probes took {:?}", start.elapsed());
        }
        let during = scrapes.load(std::sync::atomic::Ordering::Relaxed);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        scrapers.into_iter().for_each(|s| s.join().unwrap());
        assert!(during > 0, "the scrapers were served while the probes were: {during}");
    }
}
