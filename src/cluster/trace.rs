//! `-v`: every request on stderr as kubectl's `-v=6` shows it (method, URL, status, time), and a
//! "waiting for" line when an answer has not begun after [`WAITING_AFTER`], so that a slow server
//! is seen as slow and not as a hung plugin. The URL never holds a credential (kube-rs sends the
//! token in a header); the line still goes through `warn_line!`, which redacts and escapes it.

use http::{Request, Response};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// How long an answer may take to begin before `-v` says the plugin is waiting for it.
pub const WAITING_AFTER: Duration = Duration::from_secs(2);

/// A tower layer that reports each request of a client on stderr when `enabled` (`-v`);
/// `server` is the cluster's URL without credentials (`secrets::safe_url`), printed before each
/// request's path.
#[derive(Clone, Debug)]
pub struct TraceLayer {
    pub server: String,
    pub enabled: bool,
}

impl<S> tower::Layer<S> for TraceLayer {
    type Service = Trace<S>;
    fn layer(&self, inner: S) -> Trace<S> {
        Trace { inner, server: self.server.trim_end_matches('/').to_string(), enabled: self.enabled }
    }
}

#[derive(Clone)]
pub struct Trace<S> {
    inner: S,
    server: String,
    enabled: bool,
}

/// The request as kubectl prints it: method and URL (path and query; the server when the URI
/// does not name one yet).
fn described<B>(server: &str, request: &Request<B>) -> String {
    let uri = request.uri();
    let target = match uri.authority() {
        Some(_) => uri.to_string(),
        None => format!("{server}{}", uri.path_and_query().map_or("/", |p| p.as_str())),
    };
    // kube-rs starts its query with `&` (`?&limit=500`); kubectl's log shows `?limit=500`.
    let target = target.replacen("?&", "?", 1);
    format!("{} {target}", request.method())
}

/// A duration as kubectl's request log gives it, in whole milliseconds.
fn millis(elapsed: Duration) -> String {
    format!("{} ms", elapsed.as_millis())
}

impl<S, In, B> tower::Service<Request<In>> for Trace<S>
where
    S: tower::Service<Request<In>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display + Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<In>) -> Self::Future {
        if !self.enabled {
            return Box::pin(self.inner.call(request));
        }
        let what = described(&self.server, &request);
        let server = self.server.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let started = Instant::now();
            tokio::pin!(answer);
            let result = match tokio::time::timeout(WAITING_AFTER, &mut answer).await {
                Ok(result) => result,
                Err(_) => {
                    warn_line!("waiting for {server}: {what} has not answered after {}", millis(started.elapsed()));
                    answer.await
                }
            };
            let elapsed = millis(started.elapsed());
            match &result {
                Ok(response) => warn_line!("{what} {} in {elapsed}", response.status()),
                Err(error) => warn_line!("{what} failed in {elapsed}: {error}"),
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_as_kubectl_prints_it() {
        let relative = Request::get("/api/v1/pods?&limit=500").body(()).unwrap();
        assert_eq!(described("https://10.0.0.1:6443", &relative), "GET https://10.0.0.1:6443/api/v1/pods?limit=500");
        let absolute = Request::get("https://10.0.0.1:6443/apis/cilium.io/v2/ciliumnodes").body(()).unwrap();
        assert_eq!(described("https://other", &absolute), "GET https://10.0.0.1:6443/apis/cilium.io/v2/ciliumnodes");
        assert_eq!(millis(Duration::from_micros(12_900)), "12 ms");
    }
}
