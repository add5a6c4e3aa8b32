//! The one parser of the absolute URLs users type (`loadlab run`'s target, a scenario's
//! `base_url` and step URLs): the `url` crate reads the scheme, host and port, and the path is
//! kept as typed, byte for byte (`url` would normalise `/a/../b` and re-encode some
//! characters, and a load tester sends what the user wrote). Every refusal names the problem
//! and the fix. It knows no templates: callers fill them in first.

use crate::Origin;

/// `http://host:port/path` (no template left in it) into its origin and its path (possibly
/// empty), parsed by the `url` crate; the path is the one typed, byte for byte (`url` would
/// normalise `/a/../b` and re-encode some characters).
pub fn parse_origin(url: &str) -> Result<(Origin, String), String> {
    let no_scheme = || format!("`{url}` has no scheme; write it as http://{url}");
    let no_host = || format!("`{url}` has no host; e.g. http://127.0.0.1:8080/");
    let invalid_port = || {
        format!("`{url}`: invalid port; a port is a number from 1 to 65535, e.g. http://127.0.0.1:8080/")
    };
    if url.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!(
            "{url:?} contains a space or control character; remove it, or percent-encode it in \
             the path (a space is %20)"
        ));
    }
    let parsed = match ::url::Url::parse(url) {
        Ok(parsed) => parsed,
        Err(::url::ParseError::RelativeUrlWithoutBase) => return Err(no_scheme()),
        Err(::url::ParseError::InvalidPort) => return Err(invalid_port()),
        Err(::url::ParseError::EmptyHost) => return Err(no_host()),
        Err(e) => {
            return Err(format!(
                "`{url}` is not a valid URL ({e}); e.g. http://127.0.0.1:8080/"
            ))
        }
    };
    // `localhost:8080/` parses as scheme `localhost`: a scheme counts only before `://`.
    let after_scheme = url
        .get(parsed.scheme().len()..)
        .and_then(|rest| rest.strip_prefix("://"))
        .ok_or_else(no_scheme)?;
    let https = match parsed.scheme() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "`{url}`: unsupported scheme `{other}`; use http:// or https://"
            ))
        }
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(format!(
            "`{url}` carries credentials (user:password@); loadlab does not send them \
             silently: pass them as a header instead, e.g. -H 'Authorization: Basic ...'"
        ));
    }
    let end = after_scheme
        .find(['/', '?', '#', '\\'])
        .unwrap_or(after_scheme.len());
    let (authority, path) = after_scheme.split_at(end);
    // `url` reads `http:///x` as host `x`, `h:` as no port and port 0 as a port.
    if authority.is_empty() {
        return Err(no_host());
    }
    if authority.ends_with(':') || parsed.port() == Some(0) {
        return Err(invalid_port());
    }
    if path.starts_with('\\') {
        return Err(format!("`{url}`: a path starts with /, not \\"));
    }
    let (host, host_header) = match parsed.host() {
        // Sockets want IPv6 without brackets, the Host header with them.
        Some(::url::Host::Ipv6(ip)) => (ip.to_string(), format!("[{ip}]")),
        Some(host) => (host.to_string(), host.to_string()),
        None => return Err(no_host()),
    };
    let port = parsed
        .port_or_known_default()
        .unwrap_or(if https { 443 } else { 80 });
    // `url` reports no port when it is the scheme's default.
    let authority = match parsed.port() {
        Some(p) => format!("{host_header}:{p}"),
        None => host_header,
    };
    Ok((
        Origin {
            https,
            host,
            port,
            authority,
        },
        path.split('#').next().unwrap_or("").to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_origin;
    use crate::Scenario;
    use std::path::Path;

    fn first_request(base_url: &str, url: &str) -> String {
        let text = format!("name = \"s\"\n{base_url}[[steps]]\nname = \"a\"\nurl = \"{url}\"");
        let s = Scenario::from_toml_str(&text, Path::new(".")).expect(url);
        let bytes = s.steps[0].requests[0].constant_bytes(false).unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    /// `url` would send `/b?x=~`; the step says `/a/../b?x=%7e`, and that is what is sent.
    #[test]
    fn paths_are_sent_as_typed() {
        let head = first_request("", "http://H:8080/a/../b?x=%7e");
        assert!(
            head.starts_with("GET /a/../b?x=%7e HTTP/1.1\r\nHost: h:8080\r\n"),
            "{head}"
        );
        let head = first_request("base_url = \"http://h/api/../v1/\"\n", "/x/./y");
        assert!(
            head.starts_with("GET /api/../v1/x/./y HTTP/1.1\r\n"),
            "{head}"
        );
        let (_, path) = parse_origin("http://h/%7E/a?q#frag").unwrap();
        assert_eq!(path, "/%7E/a?q");
    }

    #[test]
    fn ipv6_literals_and_default_ports() {
        let (origin, path) = parse_origin("http://[::1]:8080/x").unwrap();
        assert_eq!(
            (origin.host.as_str(), origin.port, origin.authority.as_str()),
            ("::1", 8080, "[::1]:8080")
        );
        assert_eq!(path, "/x");
        let head = first_request("", "http://[::1]:8080/x");
        assert!(head.contains("\r\nHost: [::1]:8080\r\n"), "{head}");
        let (origin, path) = parse_origin("https://h:443").unwrap();
        assert_eq!((origin.port, origin.authority.as_str()), (443, "h"));
        assert_eq!(path, "");
    }

    #[test]
    fn refusals_keep_their_meaning() {
        for (url, needle) in [
            (
                "localhost:8080/",
                "has no scheme; write it as http://localhost:8080/",
            ),
            ("ftp://h/", "unsupported scheme `ftp`"),
            ("http://u:p@h/", "credentials"),
            ("http://", "has no host"),
            ("http:///x", "has no host"),
            ("http://h:/", "invalid port"),
            ("http://h:0/", "invalid port"),
            ("http://h:65536/", "invalid port"),
            ("http://[::1/", "not a valid URL"),
            ("http://h/a b", "space or control character"),
        ] {
            let err = parse_origin(url).expect_err(url);
            assert!(err.contains(needle), "{url}: {err}");
        }
    }
}
