//! Secrets out of everything the store keeps: the values of the `Authorization`,
//! `Proxy-Authorization`, `Cookie` and `X-Api-Key` headers (names matched case-insensitively)
//! and the passwords in URLs (`http://user:pass@host` becomes `http://user:<redacted>@host`).
//!
//! The CLI applies the same [`redact`] to what it writes with `--json`, so a stored run's
//! export and `run --json` stay byte-identical. Redaction is idempotent and errs towards
//! hiding: a header value runs to the end of its line (or its closing quote), so a verdict
//! that quotes a header loses the rest of that line rather than risk a secret. This module
//! must not touch the database; it works on values only.

use loadlab_result::RunResult;
use serde_json::Value;

/// What a secret is replaced by.
pub const REDACTED: &str = "<redacted>";

/// Header names whose values are secrets, lower case. `Proxy-Authorization` needs no entry of
/// its own: it ends in `authorization`, and names are matched wherever they occur (which also
/// catches `-HAuthorization: x` and `--header=Cookie: y`).
const SECRET_HEADERS: &[&str] = &["authorization", "cookie", "x-api-key"];

/// Object keys whose values are secrets in configuration and environment JSON (compared
/// case-insensitively, `_` read as `-`).
const SECRET_KEYS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "password",
];

/// Redacts every text of a result in place: the command line, the target's URL and paths,
/// the plan, verdicts, warnings, error details, the server's description and health URL, and
/// the rest. Histograms are left alone (base64 holds neither `:` nor `@`).
pub fn redact(result: &mut RunResult) {
    let r = |s: &mut String| *s = redact_text(s);
    let ro = |s: &mut Option<String>| s.iter_mut().for_each(|s| *s = redact_text(s));
    let all = |v: &mut Vec<String>| v.iter_mut().for_each(|s| *s = redact_text(s));
    r(&mut result.loadlab_version);
    r(&mut result.started_at);
    all(&mut result.command);
    redact_vars(&mut result.command);
    let t = &mut result.target;
    r(&mut t.url);
    r(&mut t.method);
    all(&mut t.paths);
    r(&mut t.address);
    if let Some(tls) = &mut t.tls {
        r(&mut tls.versions);
        r(&mut tls.trust);
    }
    let l = &mut result.load;
    r(&mut l.model);
    ro(&mut l.arrival);
    r(&mut l.plan);
    ro(&mut l.busy_poll_why);
    r(&mut l.protocol);
    for phase in std::iter::once(&mut result.measured).chain(result.warmup.as_mut()) {
        phase.error_details.values_mut().for_each(r);
    }
    all(&mut result.verdicts);
    all(&mut result.warnings);
    r(&mut result.generator.pm_qos);
    let e = &mut result.environment;
    for s in [&mut e.hostname, &mut e.os, &mut e.kernel, &mut e.arch] {
        r(s);
    }
    if let Some(server) = &mut result.server {
        r(&mut server.source);
        r(&mut server.description);
        if let Some(limits) = &mut server.limits {
            r(&mut limits.mechanism);
            r(&mut limits.mode);
            ro(&mut limits.cgroup);
            for held in [&mut limits.cpus, &mut limits.memory, &mut limits.pin]
                .into_iter()
                .flatten()
            {
                r(&mut held.requested);
                r(&mut held.how);
            }
        }
        if let Some(startup) = &mut server.startup {
            r(&mut startup.health_url);
        }
        if let Some(exit) = &mut server.exit {
            r(&mut exit.status);
        }
    }
    for part in &mut result.parts {
        r(&mut part.started_at);
        r(&mut part.hostname);
    }
}

/// Scenario variables given on the command line (`--var NAME=VALUE`, `--var=NAME=VALUE`):
/// the name stays, the value goes (tokens and passwords are passed this way).
pub fn redact_vars(command: &mut [String]) {
    let mut next_is_var = false;
    for arg in command.iter_mut() {
        let pair = if next_is_var {
            Some(arg.as_str())
        } else {
            arg.strip_prefix("--var=")
        };
        let prefix = if next_is_var { "" } else { "--var=" };
        next_is_var = arg == "--var";
        if let Some((name, value)) = pair.and_then(|p| p.split_once('=')) {
            if value != REDACTED {
                *arg = format!("{prefix}{name}={REDACTED}");
            }
        }
    }
}

/// Redacts a JSON value in place: secret keys' values, `{"name": "Cookie", "value": ...}`
/// pairs (as HAR files and header lists hold them), and every string by [`redact_text`].
pub fn redact_json(value: &mut Value) {
    match value {
        Value::String(s) => *s = redact_text(s),
        Value::Array(items) => items.iter_mut().for_each(redact_json),
        Value::Object(map) => {
            let named_secret = map
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(is_secret_key);
            for (key, v) in map.iter_mut() {
                let secret = is_secret_key(key) || (named_secret && key == "value");
                if secret && !v.is_null() {
                    *v = Value::String(REDACTED.into());
                } else {
                    redact_json(v);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn is_secret_key(key: &str) -> bool {
    let key = key.trim().to_ascii_lowercase().replace('_', "-");
    SECRET_KEYS.contains(&key.as_str())
}

/// Redacts secret header values and URL passwords in a text: a command-line argument, a
/// plan, a verdict, an error message.
pub fn redact_text(s: &str) -> String {
    redact_headers(&redact_url_passwords(s))
}

/// `Name: value`, `"Name": "value"` and `Name:value`, for each secret header name found
/// anywhere in `s`: the value becomes [`REDACTED`]. An unquoted value runs to the end of the
/// line; a quoted one to its closing quote.
fn redact_headers(s: &str) -> String {
    let bytes = s.as_bytes();
    let lower = s.to_ascii_lowercase();
    let lower = lower.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        let Some(name) = SECRET_HEADERS
            .iter()
            .find(|n| lower[i..].starts_with(n.as_bytes()))
        else {
            i += 1;
            continue;
        };
        let mut j = i + name.len();
        // A quoted name (`"Cookie":`, or `\"Cookie\":` inside escaped JSON), then the colon.
        j += count_while(&bytes[j..], |b| matches!(b, b'"' | b'\'' | b'\\'));
        j += count_while(&bytes[j..], |b| b == b' ' || b == b'\t');
        if bytes.get(j) != Some(&b':') {
            i += name.len();
            continue;
        }
        j += 1;
        j += count_while(&bytes[j..], |b| b == b' ' || b == b'\t');
        let (start, end) = value_span(bytes, j);
        if end > start {
            // ASCII delimiters only, so `start` and `end` fall on character boundaries.
            out.push_str(&s[copied..start]);
            out.push_str(REDACTED);
            copied = end;
        }
        i = end.max(i + name.len());
    }
    out.push_str(&s[copied..]);
    out
}

/// Where a header value starting at `at` begins and ends: inside its quotes when quoted
/// (`"`, `'` or an escaped `\"`), else up to the end of the line.
fn value_span(bytes: &[u8], at: usize) -> (usize, usize) {
    let rest = &bytes[at..];
    let quote: &[u8] = if rest.starts_with(b"\\\"") {
        b"\\\""
    } else if rest.starts_with(b"\"") {
        b"\""
    } else if rest.starts_with(b"'") {
        b"'"
    } else {
        b""
    };
    let start = at + quote.len();
    let len = if quote.is_empty() {
        count_while(&bytes[start..], |b| b != b'\n' && b != b'\r')
    } else {
        // An unclosed quote hides the rest of the line.
        let line = count_while(&bytes[start..], |b| b != b'\n' && b != b'\r');
        bytes[start..start + line]
            .windows(quote.len())
            .position(|w| w == quote)
            .unwrap_or(line)
    };
    (start, start + len)
}

/// `scheme://user:password@host...`: the password becomes [`REDACTED`]. The authority ends
/// at the first `/`, `?`, `#`, white space, quote or angle bracket; the password at its last
/// `@` (a lenient reading, as browsers take an unencoded `@` in a password).
fn redact_url_passwords(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = s[from..].find("://") {
        let authority_start = from + found + 3;
        let authority_len = count_while(&s.as_bytes()[authority_start..], |b| {
            !matches!(
                b,
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'\\' | b'<' | b'>' | b'`'
            ) && !b.is_ascii_whitespace()
        });
        let authority = &s[authority_start..authority_start + authority_len];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                if colon + 1 < at {
                    out.push_str(&s[copied..authority_start + colon + 1]);
                    out.push_str(REDACTED);
                    copied = authority_start + at;
                }
            }
        }
        from = authority_start + authority_len;
    }
    out.push_str(&s[copied..]);
    out
}

fn count_while(bytes: &[u8], keep: impl Fn(u8) -> bool) -> usize {
    bytes.iter().take_while(|&&b| keep(b)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_variables_on_the_command_line_lose_their_values() {
        let mut cmd: Vec<String> = [
            "loadlab",
            "run",
            "--var",
            "TOKEN=s3cret",
            "--var=PASS=x=y",
            "-c",
            "5",
        ]
        .map(String::from)
        .to_vec();
        redact_vars(&mut cmd);
        assert_eq!(
            cmd,
            [
                "loadlab",
                "run",
                "--var",
                "TOKEN=<redacted>",
                "--var=PASS=<redacted>",
                "-c",
                "5"
            ]
        );
        redact_vars(&mut cmd);
        assert_eq!(cmd[3], "TOKEN=<redacted>");
    }

    #[test]
    fn texts_lose_their_secrets() {
        let cases = [
            ("Authorization: Bearer abc", "Authorization: <redacted>"),
            ("authorization:Basic dXNlcjpw", "authorization:<redacted>"),
            ("-HAuthorization: Bearer abc", "-HAuthorization: <redacted>"),
            ("--header=COOKIE: a=1; b=2", "--header=COOKIE: <redacted>"),
            (
                "Proxy-Authorization: Basic x",
                "Proxy-Authorization: <redacted>",
            ),
            (
                "x-api-key :k1\nnext line",
                "x-api-key :<redacted>\nnext line",
            ),
            (
                r#"{"X-Api-Key": "k", "a": 1}"#,
                r#"{"X-Api-Key": "<redacted>", "a": 1}"#,
            ),
            (r#"{\"Cookie\":\"s=1\"}"#, r#"{\"Cookie\":\"<redacted>\"}"#),
            ("Set-Cookie: s=1", "Set-Cookie: <redacted>"),
            ("http://u:p@h:80/x", "http://u:<redacted>@h:80/x"),
            (
                "get https://u:p@ss@h/ now",
                "get https://u:<redacted>@h/ now",
            ),
            ("see http://h/?a=b@c:d", "see http://h/?a=b@c:d"),
            ("http://user@host/", "http://user@host/"),
            (
                "no secrets: cookie jar empty",
                "no secrets: cookie jar empty",
            ),
            ("Authorization:", "Authorization:"),
            ("the cookie monster", "the cookie monster"),
            ("héllo Cookie: ü", "héllo Cookie: <redacted>"),
        ];
        for (input, want) in cases {
            assert_eq!(redact_text(input), want, "{input}");
            assert_eq!(redact_text(want), want, "idempotent: {want}");
        }
    }

    #[test]
    fn json_loses_secret_keys_and_pairs() {
        let mut v = serde_json::json!({
            "headers": {"Authorization": "Bearer t", "Accept": "*/*"},
            "list": ["Cookie: c=1", {"name": "x-api-key", "value": "k"}],
            "db": {"PASSWORD": "p", "url": "postgres://a:b@db/x"},
            "x_api_key": null,
        });
        redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "headers": {"Authorization": "<redacted>", "Accept": "*/*"},
                "list": ["Cookie: <redacted>", {"name": "x-api-key", "value": "<redacted>"}],
                "db": {"PASSWORD": "<redacted>", "url": "postgres://a:<redacted>@db/x"},
                "x_api_key": null,
            })
        );
    }
}
