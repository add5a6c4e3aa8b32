//! The request's parts as a user writes them: the URL (http or https, host, port, path),
//! the method (an HTTP token) and `Name: value` headers. The URL is parsed by the `url`
//! crate; only the path is taken from the raw string, so that it is sent byte for byte.

use super::{reject, ConfigError, TargetUrl};
use loadlab_scenario::origin::parse_origin;

pub(super) fn parse_url(raw: &str) -> Result<TargetUrl, ConfigError> {
    const FLAG: &str = "url";
    if raw.is_empty() {
        return Err(reject(
            FLAG,
            "missing; give one, e.g. http://127.0.0.1:8080/",
        ));
    }
    // The one parser of the URLs users type, shared with scenarios.
    let (origin, rest) = parse_origin(raw).map_err(|m| reject(FLAG, m))?;
    let path_and_query = raw_path_and_query(raw, &rest)?;
    Ok(TargetUrl {
        original: raw.to_string(),
        host: origin.host,
        port: origin.port,
        authority: origin.authority,
        path_and_query,
        https: origin.https,
    })
}

/// The path and query as the user typed them (without the `#fragment`, which is never
/// sent), `/` when there is none; refused, with the percent-encoded form `url` would send,
/// when HTTP does not allow one of its characters.
fn raw_path_and_query(raw: &str, rest: &str) -> Result<String, ConfigError> {
    let typed = rest.split('#').next().unwrap_or("");
    let typed = if typed.is_empty() || typed.starts_with('?') {
        format!("/{typed}")
    } else {
        typed.to_string()
    };
    // `http` lets bytes above 127 through, but a request line is ASCII (RFC 9112).
    if !typed.is_ascii()
        || typed.contains('\\')
        || typed.parse::<http::uri::PathAndQuery>().is_err()
    {
        // What `url` would send instead (it parsed `raw` already, so this does not fail).
        let encoded = url::Url::parse(raw).map_or_else(
            |_| typed.clone(),
            |u| u[url::Position::BeforePath..url::Position::AfterQuery].to_string(),
        );
        return Err(reject(
            "url",
            format!(
                "`{raw}`: the path holds characters HTTP does not allow; percent-encode them, \
                 e.g. {encoded}"
            ),
        ));
    }
    Ok(typed)
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub(super) fn validate_method(raw: &str) -> Result<String, ConfigError> {
    if !is_token(raw) {
        return Err(reject(
            "method",
            format!("`{raw}` is not an HTTP method; use e.g. GET, POST, PUT"),
        ));
    }
    Ok(raw.to_string())
}

pub(super) fn parse_header(raw: &str) -> Result<(String, String), ConfigError> {
    const FLAG: &str = "headers";
    let Some((name, value)) = raw.split_once(':') else {
        return Err(reject(
            FLAG,
            format!("`{raw}` is not `Name: value`; write e.g. -H 'Accept: application/json'"),
        ));
    };
    let name = name.trim();
    if !is_token(name) {
        return Err(reject(
            FLAG,
            format!("`{name}` in `{raw}` is not a valid header name (letters, digits and -); write e.g. -H 'X-Trace: 1'"),
        ));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(reject(
            FLAG,
            format!("the value of `{name}` contains a line break or NUL; remove it"),
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse_url;

    fn refusal(raw: &str) -> String {
        parse_url(raw).expect_err(raw).to_string()
    }

    /// `url` would send `/b?x=~`; the user typed `/a/../b?x=%7e`, and that is what is sent.
    #[test]
    fn the_path_is_sent_as_typed() {
        for (raw, sent) in [
            ("http://h/a/../b?x=%7e", "/a/../b?x=%7e"),
            ("http://h/./a//b/", "/./a//b/"),
            ("http://h/%7E/%zz?q=a'b", "/%7E/%zz?q=a'b"),
            ("http://h?x=1", "/?x=1"),
            ("http://h/p#frag", "/p"),
            ("http://h#frag", "/"),
        ] {
            assert_eq!(parse_url(raw).unwrap().path_and_query, sent, "{raw}");
        }
    }

    /// The request line and Host header the engine writes carry the path as typed.
    #[test]
    fn the_request_line_carries_the_typed_path() {
        let config = crate::RunSpec {
            url: "http://LOCALHOST:8080/a/../b?x=%7e".into(),
            ..crate::RunSpec::default()
        }
        .validate()
        .unwrap();
        let bytes = crate::http1::request::encode(&config).bytes;
        let head = String::from_utf8_lossy(&bytes);
        assert!(head.starts_with("GET /a/../b?x=%7e HTTP/1.1\r\n"), "{head}");
        assert!(head.contains("\r\nHost: localhost:8080\r\n"), "{head}");
        let plan = crate::summary::plan(
            &crate::RunSpec {
                paths: vec!["/p".into(), "/q".into()],
                ..crate::RunSpec {
                    url: "http://[::1]:8080/x".into(),
                    ..crate::RunSpec::default()
                }
            }
            .validate()
            .unwrap(),
        );
        assert!(
            plan.starts_with("GET http://[::1]:8080 /p, /q in rotation"),
            "{plan}"
        );
    }

    #[test]
    fn ipv6_literals_lose_their_brackets_for_sockets_only() {
        let url = parse_url("http://[::1]:8080/x").unwrap();
        assert_eq!(
            (url.host.as_str(), url.port, url.authority.as_str()),
            ("::1", 8080, "[::1]:8080")
        );
        assert_eq!(url.path_and_query, "/x");
        assert_eq!(url.origin(), "http://[::1]:8080");
        let url = parse_url("https://[::1]/").unwrap();
        assert_eq!((url.port, url.authority.as_str()), (443, "[::1]"));
        assert_eq!(url.origin(), "https://[::1]");
    }

    #[test]
    fn default_ports_and_origins() {
        let url = parse_url("http://Example.TEST:80/a").unwrap();
        assert_eq!((url.host.as_str(), url.port), ("example.test", 80));
        assert_eq!(url.authority, "example.test");
        assert_eq!(url.origin(), "http://example.test");
        let url = parse_url("HTTPS://h:8443").unwrap();
        assert!(url.https);
        assert_eq!((url.port, url.origin().as_str()), (8443, "https://h:8443"));
    }

    #[test]
    fn refusals_keep_their_meaning() {
        for (raw, needle) in [
            (
                "localhost:8080/",
                "has no scheme; write it as http://localhost:8080/",
            ),
            ("127.0.0.1:8080", "has no scheme"),
            ("/just/a/path", "has no scheme"),
            ("ftp://h/", "unsupported scheme `ftp`"),
            ("http:h/x", "has no scheme"),
            ("http://u:p@h/", "-H 'Authorization"),
            ("http://u@h/", "credentials"),
            ("http://", "has no host"),
            ("http:///x", "has no host"),
            ("http://:8080/", "has no host"),
            ("http://h:/", "invalid port"),
            ("http://h:0/", "invalid port"),
            ("http://h:65536/", "invalid port"),
            ("http://[::1]:x/", "invalid port"),
            ("http://h/a b", "space or control character"),
            ("http://h/a\tb", "space or control character"),
            ("http://h/caf\u{e9}", "percent-encode them, e.g. /caf%C3%A9"),
            ("http://h\\x", "a path starts with /, not \\"),
            ("http://h/a\\b", "percent-encode"),
        ] {
            let err = refusal(raw);
            assert!(err.contains(needle), "{raw}: {err}");
        }
    }
}
