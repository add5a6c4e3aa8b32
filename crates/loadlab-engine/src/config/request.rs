//! The request's parts as a user writes them: the URL (http or https, host, port, path),
//! the method (an HTTP token) and `Name: value` headers.

use super::{reject, ConfigError, TargetUrl};

pub(super) fn parse_url(raw: &str) -> Result<TargetUrl, ConfigError> {
    const FLAG: &str = "url";
    if raw.is_empty() {
        return Err(reject(
            FLAG,
            "missing; give one, e.g. http://127.0.0.1:8080/",
        ));
    }
    let Some((scheme, _)) = raw.split_once("://") else {
        return Err(reject(
            FLAG,
            format!("`{raw}` has no scheme; write it as http://{raw}"),
        ));
    };
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(reject(
                FLAG,
                format!("`{raw}`: unsupported scheme `{other}`; use http:// or https://"),
            ))
        }
    };
    check_port(raw)?;
    let credentials = raw
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?', '#']).next())
        .is_some_and(|authority| authority.contains('@'));
    if credentials {
        return Err(reject(
            FLAG,
            format!(
                "`{raw}` carries credentials (user:password@); loadlab does not send them \
                 silently: pass them as a header instead, e.g. -H 'Authorization: Basic ...'"
            ),
        ));
    }
    let uri: http::Uri = raw
        .parse()
        .map_err(|e| reject(FLAG, format!("`{raw}` is not a valid URL ({e})")))?;
    let host = uri.host().filter(|h| !h.is_empty()).ok_or_else(|| {
        reject(
            FLAG,
            format!("`{raw}` has no host; e.g. http://127.0.0.1:8080/"),
        )
    })?;
    // `http::Uri` keeps IPv6 brackets in `host()`; sockets want them off.
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let default_port = if https { 443 } else { 80 };
    let port = uri.port_u16().unwrap_or(default_port);
    let authority = match uri.port_u16() {
        Some(p) if p != default_port => format!("{host}:{p}"),
        _ => host.to_string(),
    };
    let path_and_query = uri
        .path_and_query()
        .map(|pq| pq.as_str())
        .filter(|pq| !pq.is_empty())
        .unwrap_or("/")
        .to_string();
    Ok(TargetUrl {
        original: raw.to_string(),
        host: bare_host,
        port,
        authority,
        path_and_query,
        https,
    })
}

/// A port, when the URL gives one, is a number from 1 to 65535: `http::Uri` would read a
/// bad one as no port at all and the run would go to port 80.
fn check_port(raw: &str) -> Result<(), ConfigError> {
    let Some((_, rest)) = raw.split_once("://") else {
        return Ok(());
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = if let Some(after) = host_port.strip_prefix('[') {
        // [v6]:port
        match after.split_once(']') {
            Some((_, tail)) => tail.strip_prefix(':'),
            None => None,
        }
    } else {
        host_port.rsplit_once(':').map(|(_, p)| p)
    };
    let Some(port) = port else {
        return Ok(());
    };
    match port.parse::<u32>() {
        Ok(p) if (1..=65_535).contains(&p) && !port.starts_with('+') => Ok(()),
        _ => Err(reject(
            "url",
            format!(
                "`{raw}`: invalid port {port:?}; a port is a number from 1 to 65535, e.g. \
                 http://127.0.0.1:8080/"
            ),
        )),
    }
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
