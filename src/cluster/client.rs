//! A Kubernetes client from kubectl's connection flags: `--kubeconfig`,
//! `--context`, `--cluster`, `--user`, `--as`, `--as-group`, `--request-timeout`, and
//! `KUBECONFIG` as a path list merged the way kubectl merges it.

use super::limits::{BoundLayer, Refused};
#[cfg(doc)]
use super::limits::{MAX_EVENT_BYTES, MAX_RESPONSE_BYTES};
use super::trace::TraceLayer;
use crate::error::{cluster, input};
use crate::secrets;
use anyhow::Result;
use kube::config::{Config, KubeConfigOptions, Kubeconfig};
use std::time::Duration;

/// The connected client and what the user should see about where it points.
pub struct Connection {
    pub client: kube::Client,
    pub server: String,
    pub context: Option<String>,
    /// The user as kubectl would name it (impersonated user, else the kubeconfig user).
    pub user: String,
    /// `--request-timeout` and the bounds derived from it, as connected with.
    pub deadlines: Deadlines,
    /// The exec credential plugin of the kubeconfig user, for messages.
    pub exec_command: Option<String>,
}

/// kubectl's connection flags, resolved: which kubeconfig, context, cluster and user, whom to
/// impersonate, and how long one request may take (`None`: no limit).
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    pub kubeconfig: Option<String>,
    pub context: Option<String>,
    pub cluster: Option<String>,
    pub user: Option<String>,
    pub as_user: Option<String>,
    pub as_group: Vec<String>,
    /// `--request-timeout` and the bounds derived from it.
    pub deadlines: Deadlines,
    /// `--cilium-namespace`: where ConfigMap `cilium-config` (the IPAM mode) lives.
    pub cilium_namespace: String,
    /// `-v`: every request on stderr ([`super::trace`]).
    pub trace_requests: bool,
    /// `--max-response-size`: the most bytes one answer may have ([`MAX_RESPONSE_BYTES`] by default).
    pub max_response_bytes: u64,
    /// `serve --max-event-size`: the most bytes one watch event may have ([`MAX_EVENT_BYTES`] by default).
    pub max_event_bytes: u64,
}

/// How long one request may take, from connecting to the last byte of its answer, when
/// `--request-timeout` is not given. A server that never answers, or trickles its answer, ends
/// the command (exit 3) instead of hanging it. Watch streams get it only until they begin (they
/// may be quiet for minutes). docs/design/exit-codes.md.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// The deadlines every request runs under, from `--request-timeout`: one value from the flag to
/// the connection. Not given: [`DEFAULT_DEADLINE`] to connect and for each whole request, no
/// bound per read; `0`: none at all; `N`: N to connect, for each whole request and per read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Deadlines {
    /// `--request-timeout` as given: `None` when not given ([`DEFAULT_DEADLINE`] applies), zero
    /// for no deadline at all.
    pub request: Option<Duration>,
}

impl Deadlines {
    /// TCP connect and TLS handshake.
    fn connect(self) -> Option<Duration> {
        self.whole_request()
    }

    /// From sending a request to the last byte of its answer (to its headers for a watch).
    pub fn whole_request(self) -> Option<Duration> {
        match self.request {
            None => Some(DEFAULT_DEADLINE),
            Some(given) => Some(given).filter(|given| !given.is_zero()),
        }
    }

    /// The deadline as messages name it: `--request-timeout 5s`, or the default's duration.
    pub fn named(self) -> String {
        match self.request {
            Some(given) => format!("--request-timeout {}", humantime::format_duration(given)),
            None => format!("{}, the default deadline", humantime::format_duration(DEFAULT_DEADLINE)),
        }
    }

    /// Each read (and write) on the connection, watch streams included: `--request-timeout`
    /// when given and not 0.
    pub fn per_read(self) -> Option<Duration> {
        self.request.filter(|given| !given.is_zero())
    }
}

pub async fn connect(flags: &ConnectOptions) -> Result<Connection> {
    let deadlines = flags.deadlines;
    let options = KubeConfigOptions { context: flags.context.clone(), cluster: flags.cluster.clone(), user: flags.user.clone() };
    let (mut config, context, kube_user, exec_command) = match load_kubeconfig(flags.kubeconfig.as_deref())? {
        Some(file) => {
            super::credentials::remember(&file);
            check_names(&file, &options)?;
            let (context, user) = kubeconfig_names(&file, &options);
            let exec_command = user.as_ref().and_then(|u| file.auth_infos.iter().find(|a| &a.name == u)).and_then(|a| a.auth_info.as_ref()?.exec.as_ref()?.command.clone());
            let config = Config::from_custom_kubeconfig(file, &options).await.map_err(|e| input(format!("kubeconfig: {}", secrets::redact(&e.to_string()))))?;
            (config, context, user, exec_command)
        }
        None if flags.context.is_some() || flags.cluster.is_some() || flags.user.is_some() => {
            return Err(input("no kubeconfig found (KUBECONFIG, ~/.kube/config) for --context/--cluster/--user; set KUBECONFIG or --kubeconfig"));
        }
        // Keeps in-cluster configuration working when there is no kubeconfig.
        None => (
            Config::incluster().map_err(|e| {
                // A configuration to fix, as a missing --kubeconfig file is (exit 2): no cluster was asked.
                input(format!("no cluster configured: no kubeconfig and not in a cluster ({}); set KUBECONFIG or --kubeconfig, or pass -f FILE to work offline", secrets::redact(&e.to_string())))
            })?,
            None,
            None,
            None,
        ),
    };
    if let Some(user) = &flags.as_user {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !flags.as_group.is_empty() {
        config.auth_info.impersonate_groups = Some(flags.as_group.clone());
    }
    config.connect_timeout = deadlines.connect();
    config.read_timeout = deadlines.per_read();
    config.write_timeout = deadlines.per_read();
    let server = secrets::safe_url(&config.cluster_url.to_string());
    let failed = |e: kube::Error| {
        let cause =
            super::credentials::auth_failure(&e, exec_command.as_deref()).unwrap_or_else(|| secrets::redact(&e.to_string()).into_owned());
        cluster(format!("cannot build a client for {server}: {cause}"))
    };
    let exec = super::exec_auth::take_exec(&mut config, deadlines.whole_request(), deadlines.named())
        .await
        .map_err(|e| cluster(format!("cannot build a client for {server}: {e}")))?;
    let builder = kube::client::ClientBuilder::try_from(config).map_err(failed)?;
    let client = builder
        .with_layer(&exec)
        .with_layer(&BoundLayer {
            deadline: deadlines.whole_request(),
            max_bytes: flags.max_response_bytes,
            max_event_bytes: flags.max_event_bytes,
        })
        .with_layer(&TraceLayer { server: server.clone(), enabled: flags.trace_requests })
        .build();
    let user = flags.as_user.clone().or(kube_user).unwrap_or_else(|| "the current user".to_string());
    Ok(Connection { client, server, context, user, deadlines, exec_command })
}

/// The kubeconfig kubectl would use: `--kubeconfig`, else the files of `KUBECONFIG` merged (the
/// first to set a value wins; missing files are skipped, as kubectl skips them), else
/// `~/.kube/config`. `None` when there is none.
fn load_kubeconfig(explicit: Option<&str>) -> Result<Option<Kubeconfig>> {
    if let Some(path) = explicit {
        return read_kubeconfig(std::path::Path::new(path)).map(Some);
    }
    let paths: Vec<std::path::PathBuf> = match std::env::var_os("KUBECONFIG") {
        Some(list) if !list.is_empty() => std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect(),
        _ => std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".kube/config")).into_iter().collect(),
    };
    let mut merged: Option<Kubeconfig> = None;
    for path in paths.iter().filter(|p| p.exists()) {
        let next = read_kubeconfig(path)?;
        merged = Some(match merged {
            None => next,
            Some(done) => done.merge(next).map_err(|e| input(format!("cannot merge kubeconfig {}: {e}", path.display())))?,
        });
    }
    Ok(merged)
}

/// The names of every context of the kubeconfig kubectl would use (`--all-contexts`), in its order.
pub fn context_names(explicit: Option<&str>) -> Result<Vec<String>> {
    let file = load_kubeconfig(explicit)?
        .ok_or_else(|| input("no kubeconfig found: --all-contexts reads the contexts of --kubeconfig, $KUBECONFIG or ~/.kube/config"))?;
    Ok(file.contexts.into_iter().map(|c| c.name).collect())
}

/// The API server each of `contexts` reaches, from the kubeconfig kubectl would use (no request
/// is made; `--cluster` overrides every context's cluster): `None` when its cluster has no
/// server. A context (or `--cluster`, `--user`) the kubeconfig does not have is bad input (exit
/// 2), said before any cluster is asked.
pub fn context_servers(
    explicit: Option<&str>,
    contexts: &[String],
    cluster: Option<&str>,
    user: Option<&str>,
) -> Result<Vec<Option<String>>> {
    let file = load_kubeconfig(explicit)?
        .ok_or_else(|| input("no kubeconfig found (KUBECONFIG, ~/.kube/config) for --context; set KUBECONFIG or --kubeconfig"))?;
    let mut servers = Vec::new();
    for context in contexts {
        let options =
            KubeConfigOptions { context: Some(context.clone()), cluster: cluster.map(str::to_string), user: user.map(str::to_string) };
        check_names(&file, &options)?;
        let named = || file.contexts.iter().find(|c| &c.name == context)?.context.as_ref().map(|c| c.cluster.clone());
        let cluster_name = cluster.map(str::to_string).or_else(named);
        let server = cluster_name
            .and_then(|name| file.clusters.iter().find(|c| c.name == name)?.cluster.as_ref()?.server.clone())
            .map(|server| server.trim_end_matches('/').to_string());
        servers.push(server);
    }
    Ok(servers)
}

/// One kubeconfig file. A parse error names the line only: the parser's own message quotes the
/// lines around it, and those hold credentials.
fn read_kubeconfig(path: &std::path::Path) -> Result<Kubeconfig> {
    let name = path.display();
    Kubeconfig::read_from(path).map_err(|e| match e {
        kube::config::KubeconfigError::ReadConfig(io, _) => input(format!("cannot read kubeconfig {name}: {io}")),
        kube::config::KubeconfigError::Parse(parse) => {
            let at = parse.location().map(|l| format!(" at line {}", l.line())).unwrap_or_default();
            input(format!("kubeconfig {name} is not a valid kubeconfig{at} (the parser's message is not shown: it quotes the file, which holds credentials); check it with kubectl config view --kubeconfig {name}"))
        }
        other => input(format!("kubeconfig {name}: {}", secrets::redact(&other.to_string()))),
    })
}

impl Connection {
    /// A failed request as an exit-3 error saying what was tried, where, as whom, and what to do.
    /// `verb` and `what` are RBAC terms (`list`, `ciliumnodes.cilium.io`).
    pub fn request_failed(&self, error: kube::Error, verb: &str, what: &str) -> anyhow::Error {
        let (server, user) = (&self.server, &self.user);
        if let Some(refused) = Refused::find(&error) {
            return cluster(self.refused(refused, verb, what));
        }
        match &error {
            kube::Error::Api(status) if status.code == 403 => cluster(format!(
                "forbidden (403): user {user} cannot {verb} {what} on {server}; ask for RBAC permission to {verb} {what}, or work offline with -f (the server said: {})",
                status.message.trim()
            )),
            kube::Error::Api(status) if status.code == 401 => cluster(format!(
                "unauthorized (401): {server} rejected the credentials of user {user}; log in again or choose another --user/--context"
            )),
            kube::Error::Api(status) => {
                cluster(format!("{verb} {what} on {server} failed ({}): {}", status.code, secrets::redact(&status.message)))
            }
            _ => cluster(format!(
                "cannot reach the API server {server} ({verb} {what}): {}; check the kubeconfig's server and the network",
                self.transport_cause(&error)
            )),
        }
    }

    /// Why a request was given up ([`super::limits`]), as one line with what to do.
    fn refused(&self, refused: &Refused, verb: &str, what: &str) -> String {
        let server = &self.server;
        let bad_server = "check that the kubeconfig's server is the API server and not a proxy that changes its answers";
        match refused {
            Refused::NoAnswer(_) => format!(
                "cannot reach the API server {server} ({verb} {what}): {}; check the kubeconfig's server and the network",
                self.no_answer()
            ),
            Refused::Unfinished { read, .. } => {
                let within =
                    if self.deadlines.request.is_some() { self.deadline() } else { format!("{}, the default deadline", self.deadline()) };
                format!(
                    "{verb} {what} on {server}: the answer did not end within {within} ({} arrived; the deadline covers the whole request, to the last byte); \
                     check the network and the server, or give a longer --request-timeout (0: none)",
                    mib(*read)
                )
            }
            Refused::TooLarge(bound) => format!(
                "{verb} {what} on {server}: an answer was larger than {} (--max-response-size, for each {} objects of a list) and was not read further; {bad_server}, or raise --max-response-size",
                crate::bytes::show(*bound),
                super::limits::PAGE_SIZE
            ),
            Refused::RepeatedToken { page } => format!(
                "{verb} {what} on {server}: page {page} of the list repeated an earlier continue token, so the list would never end; {bad_server}"
            ),
            Refused::TooManyPages(pages) => format!("{verb} {what} on {server}: the list went on past {pages} pages; {bad_server}"),
            Refused::TooManyItems(items) => format!("{verb} {what} on {server}: the list held more than {items} objects; {bad_server}"),
            // Watches only (`serve`'s lists stop at its memory budget): the watch is restarted (`cluster::reflector`), never a command's end.
            Refused::EventTooLarge(_) | Refused::Silent | Refused::Truncated(_) | Refused::OverBudget => {
                format!("{verb} {what} on {server}: {refused}")
            }
        }
    }

    /// The innermost cause of a transport failure; the outer layers only repeat "client error".
    fn transport_cause(&self, error: &kube::Error) -> String {
        let mut innermost: &dyn std::error::Error = error;
        while let Some(source) = innermost.source() {
            innermost = source;
        }
        if let Some(auth) = super::credentials::auth_failure(error, self.exec_command.as_deref()) {
            return auth;
        }
        let cause = crate::secrets::redact(&innermost.to_string()).into_owned();
        // hyper-timeout reports a timeout as "deadline has elapsed", tower's as "request timed out".
        if !(cause.contains("deadline has elapsed") || cause.contains("timed out")) {
            return cause;
        }
        self.no_answer()
    }

    /// The deadline a request ran under: `--request-timeout 5s`, or the default's duration.
    fn deadline(&self) -> String {
        match self.deadlines.request {
            Some(given) => format!("--request-timeout {}", humantime::format_duration(given)),
            None => humantime::format_duration(DEFAULT_DEADLINE).to_string(),
        }
    }

    /// A request given up for want of an answer (a timeout in the transport, or the whole-request
    /// deadline before the answer began), naming the deadline.
    fn no_answer(&self) -> String {
        match self.deadlines.request {
            Some(_) => format!("no answer within {}", self.deadline()),
            None => {
                format!("no answer within {} (the default deadline; a longer --request-timeout waits longer, 0 forever)", self.deadline())
            }
        }
    }
}

/// Bytes as MiB for messages (`1.5 MiB`), or bytes below one.
fn mib(bytes: u64) -> String {
    if bytes < 1 << 20 { format!("{bytes} bytes") } else { format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20)) }
}

/// Refuses a `--context`, `--cluster` or `--user` the kubeconfig does not have, naming those it
/// has (kube's own message names neither).
fn check_names(file: &Kubeconfig, options: &KubeConfigOptions) -> Result<()> {
    let checks: [(&str, &Option<String>, Vec<&str>); 3] = [
        ("context", &options.context, file.contexts.iter().map(|c| c.name.as_str()).collect()),
        ("cluster", &options.cluster, file.clusters.iter().map(|c| c.name.as_str()).collect()),
        ("user", &options.user, file.auth_infos.iter().map(|a| a.name.as_str()).collect()),
    ];
    for (what, wanted, known) in checks {
        if let Some(wanted) = wanted
            && !known.contains(&wanted.as_str())
        {
            let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
            return Err(input(format!(
                "--{what} {wanted:?}: the kubeconfig has no such {what}; its {what}s: {known} (kubectl config get-{what}s)"
            )));
        }
    }
    Ok(())
}

/// The context and user names the options select in a kubeconfig (for messages only).
fn kubeconfig_names(file: &Kubeconfig, options: &KubeConfigOptions) -> (Option<String>, Option<String>) {
    let context = options.context.clone().or_else(|| file.current_context.clone());
    let user = options.user.clone().or_else(|| {
        let name = context.as_ref()?;
        file.contexts.iter().find(|c| &c.name == name)?.context.as_ref()?.user.clone()
    });
    (context, user)
}

/// CiliumPodIPPool through one API version (`v2` or `v2alpha1`), as untyped objects so that no
/// field the plugin does not model is ever dropped on a write.
pub fn pools_api(client: &kube::Client, version: &str) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::all_with(client.clone(), &pools_resource(version))
}

/// The CiliumPodIPPool resource of one API version.
pub fn pools_resource(version: &str) -> kube::api::ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("cilium.io", version, "CiliumPodIPPool");
    kube::api::ApiResource::from_gvk_with_plural(&gvk, "ciliumpodippools")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection to a closed port: only its messages are used.
    fn connection() -> Connection {
        let config = Config::new("https://127.0.0.1:1".parse().unwrap());
        Connection {
            client: kube::Client::try_from(config).unwrap(),
            server: "https://127.0.0.1:1".into(),
            context: None,
            user: "alice".into(),
            deadlines: Deadlines::default(),
            exec_command: None,
        }
    }

    #[tokio::test]
    async fn a_forbidden_request_is_one_line_with_the_servers_words() {
        let message = "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" at the cluster scope";
        let status = kube::core::Status { code: 403, message: message.into(), ..Default::default() };
        let error = connection().request_failed(kube::Error::Api(Box::new(status)), "list", "pods");
        let text = format!("{error:#}");
        assert!(!text.contains('\n'), "one line: {text:?}");
        assert!(text.starts_with("forbidden (403): user alice cannot list pods on https://127.0.0.1:1;"), "{text}");
        assert!(text.ends_with(&format!("or work offline with -f (the server said: {message})")), "{text}");
    }
}
