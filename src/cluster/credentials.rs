//! The credentials of a kubeconfig, for `secrets`: every one remembered so that no output line
//! shows it, and the failures of credential plugins worded without what they were given or printed.

use crate::secrets::{self, redact};
use kube::config::Kubeconfig;
use secrecy::ExposeSecret;

/// Remembers every credential in `config` ([`secrets::remember`]): tokens, passwords, client key (and certificate) data,
/// exec plugin arguments and environment values, auth-provider settings, URL userinfo.
pub fn remember(config: &Kubeconfig) {
    let mut values: Vec<String> = Vec::new();
    for named in &config.auth_infos {
        let Some(auth) = &named.auth_info else { continue };
        values.extend(auth.password.as_ref().map(|s| s.expose_secret().to_string()));
        values.extend(auth.token.as_ref().map(|s| s.expose_secret().to_string()));
        values.extend(auth.client_key_data.as_ref().map(|s| s.expose_secret().to_string()));
        values.extend(auth.client_certificate_data.clone());
        if let Some(exec) = &auth.exec {
            values.extend(exec.args.iter().flatten().filter(|a| !a.starts_with('-')).cloned());
            values.extend(exec.env.iter().flatten().filter_map(|e| e.get("value").cloned()));
        }
        if let Some(provider) = &auth.auth_provider {
            values.extend(provider.config.values().cloned());
        }
    }
    for named in &config.clusters {
        if let Some(server) = named.cluster.as_ref().and_then(|c| c.server.as_ref()) {
            let (_, userinfo, _, query) = secrets::split_url(server);
            values.extend(userinfo.into_iter().flat_map(|u| u.split(':')).map(str::to_string));
            values.extend(query.into_iter().flat_map(|q| q.split('&')).filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.to_string()));
        }
    }
    secrets::remember(values);
}

/// A failed credential plugin or auth setting, without what the plugin printed or was given.
/// `None` when `error` holds no auth failure.
pub fn auth_failure(error: &(dyn std::error::Error + 'static), exec_command: Option<&str>) -> Option<String> {
    use kube::client::AuthError;
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = current {
        if let Some(auth) = e.downcast_ref::<AuthError>() {
            let plugin =
                exec_command.map(|c| format!("the exec credential plugin {c}")).unwrap_or_else(|| "the exec credential plugin".into());
            const HIDDEN: &str =
                "its arguments, environment and output are not shown: they may hold credentials; run it yourself to see why";
            return Some(match auth {
                AuthError::AuthExecStart(io) => format!("cannot start {plugin}: {}", io.kind()),
                AuthError::AuthExecRun { out, .. } => format!("{plugin} failed ({}); {HIDDEN}", out.status),
                AuthError::AuthExecParse(_) | AuthError::ExecPluginFailed => format!("{plugin} printed no valid ExecCredential; {HIDDEN}"),
                AuthError::AuthExec(_) => format!("{plugin} failed; {HIDDEN}"),
                AuthError::InvalidBearerToken(_) => "the kubeconfig's token is not a valid HTTP header value".into(),
                AuthError::InvalidBasicAuth(_) => "the kubeconfig's username/password are not a valid HTTP header value".into(),
                other => redact(&other.to_string()).into_owned(),
            });
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_credential_of_a_kubeconfig_is_redacted() {
        let config = Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://admin:hunter22@k8s.example:6443/?access_token=qwerty123'}}]\n\
             users:\n- name: u\n  user:\n    token: tok-SECRET-1\n    exec: {command: get-token, apiVersion: client.authentication.k8s.io/v1, args: [--id, arg-SECRET-2], env: [{name: K, value: env-SECRET-3}]}\n",
        )
        .unwrap();
        remember(&config);
        let text = "failed with tok-SECRET-1 arg-SECRET-2 env-SECRET-3 https://admin:hunter22@k8s.example:6443/?access_token=qwerty123 Authorization: Bearer abcdefghijkl";
        let out = redact(text);
        for secret in ["tok-SECRET-1", "arg-SECRET-2", "env-SECRET-3", "hunter22", "qwerty123", "abcdefghijkl"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains("--id") || !text.contains("--id"));
    }
}
