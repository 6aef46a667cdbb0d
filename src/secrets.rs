//! Credentials never reach the output. Error text from the kube client can quote them: a
//! kubeconfig parse error shows the lines around the fault (`token: ...`), a failing exec plugin's
//! error holds its arguments and output, a server URL may carry `user:password@` or
//! `?access_token=`. Three layers: messages for those errors are written without the quoted
//! parts (`cluster::credentials`); every credential of the loaded kubeconfigs is remembered and [`redact`]ed from every line
//! the program prints (main's error printer and `warn_line!`); URLs are shown without userinfo or
//! query ([`safe_url`]).

use std::borrow::Cow;
use std::sync::Mutex;

/// Values shorter than this are not redacted by value: replacing every `ab` would garble the
/// text without protecting anything a guess would not find.
const MIN_SECRET_LEN: usize = 4;
const REDACTED: &str = "[redacted]";

static REMEMBERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A remembered secret this long is redacted wherever it appears, even inside a longer word: no
/// word holds one by chance, and the text around it (`\n` escaped before it) must not hide it.
/// A shorter one (a password `fail`) is redacted where it stands as a whole word only, so that
/// `failed` stays `failed`. See [`is_word`].
const ANYWHERE_LEN: usize = 16;

/// Remembers credentials (values shorter than [`MIN_SECRET_LEN`] are not): from here on,
/// [`redact`] replaces each where it appears (whole words only for short ones: [`ANYWHERE_LEN`]).
pub fn remember(values: impl IntoIterator<Item = String>) {
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
        if let Some(replaced) = replace_secret(&out, secret) {
            out = Cow::Owned(replaced);
        }
    }
    drop(remembered);
    if let Cow::Owned(patterned) = redact_patterns(&out) {
        out = Cow::Owned(patterned);
    }
    out
}

/// Whether `c` continues a word: a short secret next to one is part of another word and not
/// redacted. Letters, digits, `_` and `-` (`--fail-above` names a flag, not a password): the
/// characters that surround a credential in a URL (`=`, `&`, `/`, `:`, `@`), a header (a space),
/// JSON (`"`) or a sentence (`.`, `,`) are not, so `?token=fail&`, `Bearer fail` and `"fail"` are
/// all redacted.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// `text` with each occurrence of `secret` redacted (short secrets: whole words only); `None`
/// when there is none.
fn replace_secret(text: &str, secret: &str) -> Option<String> {
    let anywhere = secret.chars().count() >= ANYWHERE_LEN;
    let mut out = String::new();
    let mut copied = 0;
    for (at, _) in text.match_indices(secret) {
        let end = at + secret.len();
        let whole = anywhere || !(text[..at].chars().next_back().is_some_and(is_word) || text[end..].chars().next().is_some_and(is_word));
        if whole {
            out.push_str(&text[copied..at]);
            out.push_str(REDACTED);
            copied = end;
        }
    }
    (copied > 0).then(|| out + &text[copied..])
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
pub fn split_url(text: &str) -> (&str, Option<&str>, &str, Option<&str>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_values_and_url_shapes_are_redacted() {
        remember(["tok-SECRET-1".to_string(), "ab".to_string()]);
        let text = "failed with tok-SECRET-1 ab https://admin:hunter22@k8s.example:6443/?access_token=qwerty123 Authorization: Bearer abcdefghijkl";
        let out = redact(text);
        for secret in ["tok-SECRET-1", "hunter22", "qwerty123", "abcdefghijkl"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
        assert!(out.contains(" ab "), "too short to redact by value: {out}");
        assert_eq!(safe_url("https://admin:pw@k8s.example:6443/base?access_token=x#f"), "https://k8s.example:6443/base");
        assert!(matches!(redact("nothing secret here"), Cow::Borrowed(_)));
    }

    /// Issue 53: a short secret is redacted as a whole word only (`failed` is no password
    /// `fail`), wherever a credential stands: URLs, headers, JSON, sentences.
    #[test]
    fn a_short_secret_is_redacted_as_a_whole_word_only() {
        remember(["fail".to_string(), "0123456789abcdefXYZ".to_string()]);
        for (text, shown) in [
            (
                "the request failed: failure, unfailing, fail_count, failfail, --fail-above",
                "the request failed: failure, unfailing, fail_count, failfail, --fail-above",
            ),
            ("password fail was rejected.", "password [redacted] was rejected."),
            ("wrong password: fail.", "wrong password: [redacted]."),
            ("https://k8s.example/?x=fail&y=1", "https://k8s.example/?x=[redacted]&y=1"),
            ("Authorization: Basic fail", "Authorization: Basic [redacted]"),
            (r#"{"password":"fail"}"#, r#"{"password":"[redacted]"}"#),
            ("fail", "[redacted]"),
            (r"message: \n0123456789abcdefXYZ, tok0123456789abcdefXYZ99", r"message: \n[redacted], tok[redacted]99"),
        ] {
            assert_eq!(redact(text), shown, "{text}");
        }
    }
}
