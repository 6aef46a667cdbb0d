//! The HTTP side of `serve`: `/metrics` (content negotiated), `/healthz`, `/readyz`. Each answer is
//! built from the shared state alone; nothing here reads the cluster.

use super::{Shared, lock};
use crate::render::metrics::Encoding;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long in-flight scrapes may take to finish after SIGTERM.
const DRAIN: Duration = Duration::from_secs(10);

/// Answers until `shutdown` turns true, then stops accepting and lets open connections finish.
pub async fn serve(listener: TcpListener, state: Shared, shutdown: tokio::sync::watch::Sender<bool>) {
    let mut stop = shutdown.subscribe();
    let graceful = GracefulShutdown::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = state.clone();
                let service = hyper::service::service_fn(move |request| answer(request, state.clone()));
                let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
                let connection = graceful.watch(connection);
                tokio::spawn(async move { let _ = connection.await; });
            }
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let _ = tokio::time::timeout(DRAIN, graceful.shutdown()).await;
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
        _ => text(StatusCode::NOT_FOUND, "not found: /metrics, /healthz, /readyz\n".into()),
    })
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("text/plain; charset=utf-8"));
    response
}
