//! Credentials never reach the output. Error text from the kube client can quote them: a
//! kubeconfig parse error shows the lines around the fault (`token: ...`), a failing exec plugin's
//! error holds its arguments and output, a server URL may carry `user:password@` or
//! `?access_token=`. Three layers: messages for those errors are written here without the quoted
//! parts; every credential of the loaded kubeconfigs is remembered and [`redact`]ed from every line
//! the program prints (main's error printer and `warn_line!`); URLs are shown without userinfo or
//! query ([`safe_url`]).

use kube::config::Kubeconfig;
use secrecy::ExposeSecret;
use std::borrow::Cow;
use std::sync::Mutex;

/// Values shorter than this are not redacted by value: replacing every `ab` would garble the
/// text without protecting anything a guess would not find.
const MIN_SECRET_LEN: usize = 4;
const REDACTED: &str = "[redacted]";

static REMEMBERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Remembers every credential in `config`: tokens, passwords, client key (and certificate) data,
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
            let (_, userinfo, _, query) = split_url(server);
            values.extend(userinfo.into_iter().flat_map(|u| u.split(':')).map(str::to_string));
            values.extend(query.into_iter().flat_map(|q| q.split('&')).filter_map(|pair| pair.split_once('=')).map(|(_, v)| v.to_string()));
        }
    }
    let mut remembered = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    for value in values {
        let value = value.trim().to_string();
        if value.len() >= MIN_SECRET_LEN && !remembered.contains(&value) {
            remembered.push(value);
        }
    }
    // Longest first, so that a secret containing another is replaced whole.
    remembered.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// `text` without any remembered credential, URL userinfo, `access_token=`-style query values or
/// `Bearer` tokens.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    let remembered = REMEMBERED.lock().unwrap_or_else(|e| e.into_inner());
    for secret in remembered.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
        }
    }
    drop(remembered);
    if let Cow::Owned(patterned) = redact_patterns(&out) {
        out = Cow::Owned(patterned);
    }
    out
}

/// Credentials recognisable by their shape, whatever their value.
fn redact_patterns(text: &str) -> Cow<'_, str> {
    static PATTERNS: std::sync::LazyLock<[(regex::Regex, &str); 3]> = std::sync::LazyLock::new(|| {
        [
            // scheme://user:password@host
            (regex::Regex::new(r"(?i)([a-z][a-z0-9+.-]*://)[^/\s@]+@").expect("valid"), "${1}[redacted]@"),
            (
                regex::Regex::new(r"(?i)((?:access_token|token|password|secret|api_key|apikey|key)=)[^&\s'\x22]+").expect("valid"),
                "${1}[redacted]",
            ),
            (regex::Regex::new(r"(?i)(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}").expect("valid"), "${1} [redacted]"),
        ]
    });
    let mut out = Cow::Borrowed(text);
    for (pattern, replacement) in PATTERNS.iter() {
        if pattern.is_match(&out) {
            out = Cow::Owned(pattern.replace_all(&out, *replacement).into_owned());
        }
    }
    out
}

/// A server URL for messages: scheme, host, port and path; no userinfo, query or fragment.
pub fn safe_url(text: &str) -> String {
    let (scheme, _, rest, _) = split_url(text);
    format!("{scheme}{rest}").trim_end_matches('/').to_string()
}

/// (`scheme://`, userinfo, host and path, query) of a URL; fragments are dropped.
fn split_url(text: &str) -> (&str, Option<&str>, &str, Option<&str>) {
    let text = text.split('#').next().unwrap_or_default();
    let (scheme, rest) = match text.find("://") {
        Some(i) => text.split_at(i + 3),
        None => ("", text),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => (scheme, Some(&rest[..at]), &rest[at + 1..], query),
        None => (scheme, None, rest, query),
    }
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
    fn remembered_values_and_shapes_are_redacted() {
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
        assert_eq!(safe_url("https://admin:pw@k8s.example:6443/base?access_token=x#f"), "https://k8s.example:6443/base");
        assert!(matches!(redact("nothing secret here"), Cow::Borrowed(_)));
    }
}
