//! The bearer token of an exec credential plugin on every request, run again when it expires
//! (`status.expirationTimestamp`) or the server answered 401 to it, as client-go does. kube-rs
//! never sees the plugin: its own refresh would run it without bounds (`cluster::exec`).

use super::exec::{ExecError, Plugin};
use http::header::{AUTHORIZATION, HeaderValue};
use http::{Request, Response, StatusCode};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use secrecy::ExposeSecret;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tower::BoxError;

/// Takes the exec plugin out of `config` so that kube-rs never runs it, runs it once (bounded by
/// `deadline`, named in messages as `named`) and puts what it returned in its place: a client certificate and key into
/// `config`, a token into the layer returned. A plugin kube-rs would not run (the user has a
/// token, basic auth or an auth-provider, which come first) is dropped unrun.
pub async fn take_exec(
    config: &mut kube::Config,
    deadline: Option<std::time::Duration>,
    named: String,
) -> Result<ExecAuthLayer, ExecError> {
    let none = ExecAuthLayer { tokens: None };
    let Some(exec) = config.auth_info.exec.take() else { return Ok(none) };
    let auth = &config.auth_info;
    if auth.auth_provider.is_some()
        || (auth.username.is_some() && auth.password.is_some())
        || auth.token.is_some()
        || auth.token_file.is_some()
    {
        return Ok(none);
    }
    let plugin = Plugin::new(exec, deadline, named);
    let credential = plugin.run().await?;
    if let (Some(certificate), Some(key)) = (&credential.client_certificate_data, &credential.client_key_data) {
        // kube-rs reads these fields as a kubeconfig holds them: base64 of the PEM.
        use base64::Engine;
        let encode = |pem: &str| base64::engine::general_purpose::STANDARD.encode(pem);
        config.auth_info.client_certificate_data = Some(encode(certificate));
        config.auth_info.client_key_data = Some(encode(key.expose_secret()).into());
        crate::secrets::remember([encode(certificate), encode(key.expose_secret())]);
        return Ok(none);
    }
    let Some(token) = &credential.token else { return Ok(none) };
    Ok(ExecAuthLayer { tokens: Some(Arc::new(Tokens::new(plugin, token, credential.expires)?)) })
}

/// A token is run for again this long before it expires, so that no request carries one that
/// expires on its way.
const EXPIRY_MARGIN: SignedDuration = SignedDuration::from_secs(10);

/// The plugin and the token it last returned, shared by every request of one client.
pub struct Tokens {
    plugin: Plugin,
    current: Mutex<Option<Current>>,
}

#[derive(Clone)]
struct Current {
    header: HeaderValue,
    expires: Option<Timestamp>,
}

impl Tokens {
    /// The plugin's first token (already run: connecting reports its failure), kept for requests.
    pub fn new(plugin: Plugin, token: &secrecy::SecretString, expires: Option<Timestamp>) -> Result<Tokens, ExecError> {
        let current = Current { header: header(&plugin, token)?, expires };
        Ok(Tokens { plugin, current: Mutex::new(Some(current)) })
    }

    /// The header to send now, when the kept token is still good.
    fn fresh(&self) -> Option<HeaderValue> {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let current = current.as_ref()?;
        let good = current.expires.is_none_or(|expires| Timestamp::now() + EXPIRY_MARGIN < expires);
        good.then(|| current.header.clone())
    }

    /// Runs the plugin again and keeps its token.
    async fn refresh(self: Arc<Self>) -> Result<HeaderValue, ExecError> {
        let credential = self.plugin.run().await?;
        let Some(token) = credential.token else {
            return Err(ExecError::Invalid {
                plugin: self.plugin.name(),
                why: "it returned a client certificate where it had returned a token; run the command again".into(),
            });
        };
        let header = header(&self.plugin, &token)?;
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(Current { header: header.clone(), expires: credential.expires });
        Ok(header)
    }

    /// A 401 to `header`: the next request runs the plugin again (unless it already did).
    fn rejected(&self, header: &HeaderValue) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|c| c.header == header) {
            *current = None;
        }
    }
}

/// `Bearer TOKEN`, marked sensitive (never logged by the HTTP stack).
fn header(plugin: &Plugin, token: &secrecy::SecretString) -> Result<HeaderValue, ExecError> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose_secret()))
        .map_err(|_| ExecError::Invalid { plugin: plugin.name(), why: "its token is not a valid HTTP header value".into() })?;
    value.set_sensitive(true);
    Ok(value)
}

/// A tower layer that puts the plugin's token on every request (none: requests pass unchanged).
#[derive(Clone)]
pub struct ExecAuthLayer {
    tokens: Option<Arc<Tokens>>,
}

impl<S> tower::Layer<S> for ExecAuthLayer {
    type Service = ExecAuth<S>;
    fn layer(&self, inner: S) -> ExecAuth<S> {
        ExecAuth { inner, tokens: self.tokens.clone(), refreshing: None, ready: None }
    }
}

type Refreshing = Pin<Box<dyn Future<Output = Result<HeaderValue, ExecError>> + Send>>;

/// The service of [`ExecAuthLayer`]. The token is made ready in `poll_ready`: the service below
/// cannot be cloned into a future, and requests wait behind one run of the plugin, not one each.
pub struct ExecAuth<S> {
    inner: S,
    tokens: Option<Arc<Tokens>>,
    refreshing: Option<Refreshing>,
    ready: Option<HeaderValue>,
}

impl<S, In, B> tower::Service<Request<In>> for ExecAuth<S>
where
    S: tower::Service<Request<In>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        if let Some(tokens) = &self.tokens
            && self.ready.is_none()
        {
            match tokens.fresh() {
                Some(header) => self.ready = Some(header),
                None => {
                    let refreshing = self.refreshing.get_or_insert_with(|| Box::pin(tokens.clone().refresh()));
                    let refreshed = std::task::ready!(refreshing.as_mut().poll(cx));
                    self.refreshing = None;
                    self.ready = Some(refreshed?);
                }
            }
        }
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<In>) -> Self::Future {
        let Some(tokens) = self.tokens.clone() else {
            let answer = self.inner.call(request);
            return Box::pin(async move { answer.await.map_err(Into::into) });
        };
        let Some(header) = self.ready.take() else {
            return Box::pin(std::future::ready(Err("exec credential: a request sent before the service was ready".into())));
        };
        request.headers_mut().insert(AUTHORIZATION, header.clone());
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await.map_err(Into::into)?;
            if response.status() == StatusCode::UNAUTHORIZED {
                tokens.rejected(&header);
            }
            Ok(response)
        })
    }
}
