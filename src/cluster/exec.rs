//! Exec credential plugins (`users[].user.exec` of a kubeconfig), run here as client-go runs
//! them rather than by kube-rs, which waits for them without a deadline, reads their output
//! whole and leaves them running when the command ends. A run here has a deadline, its output a
//! bound, its process is killed when the run ends or the command does (`interrupt::adopt`), and
//! every credential it returns is remembered as a secret before any request carries it.

use crate::interrupt;
use k8s_openapi::jiff::Timestamp;
use kube::config::{ExecConfig, ExecInteractiveMode};
use secrecy::SecretString;
use std::io::{IsTerminal, Read};
use std::time::Duration;

/// The most bytes a plugin may write on its stdout: an ExecCredential is a few KiB, a client
/// certificate and key included.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// A run's deadline when `--request-timeout 0` takes the deadline off requests: a plugin that
/// never answers must still not hang the command, and an interactive login has time.
pub const DEADLINE_WITHOUT_TIMEOUT: Duration = Duration::from_secs(300);

/// One exec credential plugin of a kubeconfig, ready to run.
pub struct Plugin {
    config: ExecConfig,
    deadline: Duration,
    /// How the deadline is named in messages (`--request-timeout 5s`).
    deadline_named: String,
}

/// What a plugin returned: a bearer token, or a client certificate and key.
pub struct Credential {
    pub token: Option<SecretString>,
    pub client_certificate_data: Option<String>,
    pub client_key_data: Option<SecretString>,
    /// When the plugin must be run again (`status.expirationTimestamp`).
    pub expires: Option<Timestamp>,
}

/// Why a plugin gave no credential: one line each, without its arguments, environment or output
/// (they may hold credentials).
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot start {plugin}: {kind}{hint}")]
    Start { plugin: String, kind: std::io::ErrorKind, hint: String },
    #[error("{plugin} needs a terminal (interactiveMode: Always) and standard input is not one")]
    NeedsTerminal { plugin: String },
    #[error("{plugin} did not finish within {deadline} and was ended; run it yourself to see why")]
    TimedOut { plugin: String, deadline: String },
    #[error(
        "{plugin} wrote more than {} and was ended; nothing it wrote is shown (an ExecCredential is a few KiB)",
        crate::bytes::show(MAX_OUTPUT_BYTES)
    )]
    TooMuchOutput { plugin: String },
    #[error("{plugin} failed ({status}); {}", HIDDEN)]
    Failed { plugin: String, status: String },
    #[error("{plugin} printed no valid ExecCredential ({why}); {}", HIDDEN)]
    Invalid { plugin: String, why: String },
}

const HIDDEN: &str = "its arguments, environment and output are not shown: they may hold credentials; run it yourself to see why";

impl Plugin {
    /// The plugin of `config`, its runs bounded by `deadline` (a request's, `None`: none was
    /// given, [`DEADLINE_WITHOUT_TIMEOUT`]) named in messages as `deadline_named`.
    pub fn new(config: ExecConfig, deadline: Option<Duration>, deadline_named: String) -> Plugin {
        match deadline {
            Some(deadline) => Plugin { config, deadline, deadline_named },
            None => Plugin {
                config,
                deadline: DEADLINE_WITHOUT_TIMEOUT,
                deadline_named: format!(
                    "{}, the exec plugin's deadline under --request-timeout 0",
                    humantime::format_duration(DEADLINE_WITHOUT_TIMEOUT)
                ),
            },
        }
    }

    /// The plugin as messages name it: its command, never its arguments.
    pub fn name(&self) -> String {
        match &self.config.command {
            Some(command) => format!("the exec credential plugin {command}"),
            None => "the exec credential plugin".to_string(),
        }
    }

    /// Runs the plugin once, within its deadline and output bound; the credential it returns is
    /// remembered as a secret before this returns. Dropping the future kills the plugin.
    pub async fn run(&self) -> Result<Credential, ExecError> {
        let plugin = self.name();
        let interactive = self.interactive()?;
        let mut command = self.command(interactive)?;
        let mut child = command.spawn().map_err(|e| self.start_failed(e.kind()))?;
        // A plugin that reads the terminal stays in its process group (a background group
        // could not read it); any other leads its own, so that what it starts ends with it.
        let adopted = interrupt::adopt(child.id(), !interactive);
        let Some(mut stdout) = child.stdout.take() else { return Err(self.start_failed(std::io::ErrorKind::BrokenPipe)) };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        // A thread, not the runtime: reading and waiting block, and the runtime has one thread.
        std::thread::spawn(move || {
            let mut output = Vec::new();
            let read = (&mut stdout).take(MAX_OUTPUT_BYTES + 1).read_to_end(&mut output);
            if output.len() as u64 > MAX_OUTPUT_BYTES {
                // Said at once: the run's end kills the plugin, and then it can be reaped.
                let _ = sender.send(Err(None));
                drop(stdout);
                let _ = child.wait();
                return;
            }
            let status = child.wait();
            let _ = sender.send(read.and(status).map(|status| (status, output)).map_err(Some));
        });
        let ran = tokio::time::timeout(self.deadline, receiver).await;
        // The thread sends after waiting for the plugin, but for too much output.
        adopted.end(matches!(ran, Ok(Ok(Ok(_) | Err(Some(_))))));
        let (status, output) = match ran {
            Err(_) => return Err(ExecError::TimedOut { plugin, deadline: self.deadline_named.clone() }),
            Ok(Ok(Err(None))) => return Err(ExecError::TooMuchOutput { plugin }),
            Ok(Ok(Err(Some(error)))) => return Err(ExecError::Failed { plugin, status: format!("reading its output: {}", error.kind()) }),
            Ok(Err(_)) => return Err(ExecError::Failed { plugin, status: "ended without a result".into() }),
            Ok(Ok(Ok(done))) => done,
        };
        if !status.success() {
            return Err(ExecError::Failed { plugin, status: status.to_string() });
        }
        let credential = parse(&output, self.config.api_version.as_deref()).map_err(|why| ExecError::Invalid { plugin, why })?;
        remember(&credential);
        Ok(credential)
    }

    /// Whether the plugin may talk to the user, as client-go decides: never for `Never`, only
    /// on a terminal for `IfAvailable` (also when unset), and a terminal is required for `Always`.
    fn interactive(&self) -> Result<bool, ExecError> {
        let terminal = std::io::stdin().is_terminal();
        match self.config.interactive_mode {
            Some(ExecInteractiveMode::Never) => Ok(false),
            Some(ExecInteractiveMode::Always) if !terminal => Err(ExecError::NeedsTerminal { plugin: self.name() }),
            _ => Ok(terminal),
        }
    }

    /// The plugin's command line and environment as client-go gives them, `KUBERNETES_EXEC_INFO`
    /// included. Not interactive, its stdin is empty and its stderr dropped (never shown: it may
    /// quote credentials); interactive, both are the terminal, for its prompts.
    fn command(&self, interactive: bool) -> Result<std::process::Command, ExecError> {
        use std::process::Stdio;
        let Some(program) = &self.config.command else {
            return Err(ExecError::Invalid { plugin: self.name(), why: "the kubeconfig names no command".into() });
        };
        let mut command = std::process::Command::new(program);
        command.args(self.config.args.iter().flatten());
        for pair in self.config.env.iter().flatten() {
            if let (Some(name), Some(value)) = (pair.get("name"), pair.get("value")) {
                command.env(name, value);
            }
        }
        for name in self.config.drop_env.iter().flatten() {
            command.env_remove(name);
        }
        command.env("KUBERNETES_EXEC_INFO", self.exec_info(interactive).to_string());
        command.stdout(Stdio::piped());
        if interactive {
            command.stdin(Stdio::inherit()).stderr(Stdio::inherit());
        } else {
            command.stdin(Stdio::null()).stderr(Stdio::null());
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
        }
        Ok(command)
    }

    /// `KUBERNETES_EXEC_INFO`: an ExecCredential of the kubeconfig's apiVersion whose spec says
    /// whether the plugin may be interactive and, with `provideClusterInfo`, the cluster.
    fn exec_info(&self, interactive: bool) -> serde_json::Value {
        let mut spec = serde_json::json!({ "interactive": interactive });
        if self.config.provide_cluster_info
            && let Some(cluster) = &self.config.cluster
        {
            spec["cluster"] = serde_json::to_value(cluster).unwrap_or_default();
        }
        serde_json::json!({
            "apiVersion": self.config.api_version.as_deref().unwrap_or("client.authentication.k8s.io/v1"),
            "kind": "ExecCredential",
            "spec": spec,
        })
    }

    fn start_failed(&self, kind: std::io::ErrorKind) -> ExecError {
        let hint = match (&self.config.install_hint, kind) {
            (Some(hint), std::io::ErrorKind::NotFound) => format!(" ({})", hint.trim()),
            _ => String::new(),
        };
        ExecError::Start { plugin: self.name(), kind, hint }
    }
}

/// The ExecCredential a plugin printed (JSON, or YAML as client-go also reads), checked as
/// client-go checks it. The reason of a refusal never quotes the output.
fn parse(output: &[u8], api_version: Option<&str>) -> Result<Credential, String> {
    #[derive(serde::Deserialize)]
    struct ExecCredential {
        #[serde(rename = "apiVersion")]
        api_version: Option<String>,
        kind: Option<String>,
        status: Option<Status>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Status {
        expiration_timestamp: Option<String>,
        token: Option<String>,
        client_certificate_data: Option<String>,
        client_key_data: Option<String>,
    }
    let decoded: ExecCredential = match serde_json::from_slice(output) {
        Ok(decoded) => decoded,
        Err(_) => serde_saphyr::from_slice(output).map_err(|_| "its output is neither JSON nor YAML of one".to_string())?,
    };
    if decoded.kind.as_deref() != Some("ExecCredential") {
        return Err("its kind is not ExecCredential".into());
    }
    let wanted = api_version.unwrap_or("client.authentication.k8s.io/v1");
    if decoded.api_version.as_deref() != Some(wanted) {
        return Err(format!("the kubeconfig asks for apiVersion {wanted}; it returned another"));
    }
    let status = decoded.status.ok_or("it has no status")?;
    let expires = match &status.expiration_timestamp {
        Some(time) => Some(time.parse::<Timestamp>().map_err(|_| "its expirationTimestamp is not an RFC 3339 time")?),
        None => None,
    };
    let token = status.token.filter(|t| !t.is_empty());
    let (certificate, key) = (status.client_certificate_data.filter(|c| !c.is_empty()), status.client_key_data.filter(|k| !k.is_empty()));
    if certificate.is_some() != key.is_some() {
        return Err("it returned only one of clientCertificateData and clientKeyData".into());
    }
    if token.is_none() && certificate.is_none() {
        return Err("it returned neither a token nor a client certificate and key".into());
    }
    Ok(Credential {
        token: token.map(SecretString::from),
        client_certificate_data: certificate,
        client_key_data: key.map(SecretString::from),
        expires,
    })
}

/// Every value of `credential` as a secret ([`crate::secrets::remember`]).
fn remember(credential: &Credential) {
    use secrecy::ExposeSecret;
    let mut values: Vec<String> = Vec::new();
    values.extend(credential.token.as_ref().map(|t| t.expose_secret().to_string()));
    values.extend(credential.client_key_data.as_ref().map(|k| k.expose_secret().to_string()));
    values.extend(credential.client_certificate_data.clone());
    crate::secrets::remember(values);
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    const V1: &str = "client.authentication.k8s.io/v1";

    #[test]
    fn an_exec_credential_is_read_as_client_go_reads_it() {
        let token = parse(br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"t0ken-value","expirationTimestamp":"2030-01-02T03:04:05Z"}}"#, Some(V1)).unwrap();
        assert_eq!(token.token.unwrap().expose_secret(), "t0ken-value");
        assert_eq!(token.expires.unwrap().to_string(), "2030-01-02T03:04:05Z");
        let yaml = parse(b"apiVersion: client.authentication.k8s.io/v1beta1\nkind: ExecCredential\nstatus: {clientCertificateData: CERT, clientKeyData: KEY}\n", Some("client.authentication.k8s.io/v1beta1")).unwrap();
        assert_eq!((yaml.client_certificate_data.as_deref(), yaml.token.is_none()), (Some("CERT"), true));
        for (text, why) in [
            (&br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"x"}}"#[..], "asks for apiVersion"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"Secret","status":{"token":"x"}}"#, "kind"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential"}"#, "no status"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"clientKeyData":"k"}}"#, "only one of"),
            (br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"x","expirationTimestamp":"soon"}}"#, "RFC 3339"),
            (b"token-SECRET [", "neither JSON nor YAML"),
        ] {
            let refused = parse(text, Some(V1)).err().unwrap_or_else(|| panic!("accepted {}", String::from_utf8_lossy(text)));
            assert!(refused.contains(why) && !refused.contains("SECRET"), "{refused}");
        }
    }
}
