//! Run configuration in two stages: [`RunSpec`] holds what a user typed (strings, options),
//! [`RunSpec::validate`] turns it into a [`RunConfig`] the engine can trust. Every rejection
//! names the flag, what was wrong, and how to fix it. Nothing here does I/O: name resolution
//! happens when the run starts.

use std::time::Duration;

/// What a user asked for, before any checking. Field names follow the CLI flags.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub url: String,
    pub method: String,
    /// Raw `Name: value` strings, as given to `-H`.
    pub headers: Vec<String>,
    pub body: Vec<u8>,
    pub connections: usize,
    /// `None`: one thread per core.
    pub threads: Option<usize>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub warmup: Duration,
    pub keepalive: bool,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            url: String::new(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            connections: 50,
            threads: None,
            duration: None,
            requests: None,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            warmup: Duration::ZERO,
            keepalive: true,
        }
    }
}

/// When the measured part of a run ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Run for this long after the warm-up.
    Duration(Duration),
    /// Issue exactly this many measured requests.
    Requests(u64),
}

/// The parts of the URL the engine needs. Only `http` for now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetUrl {
    /// The URL as the user gave it, for reports.
    pub original: String,
    pub host: String,
    pub port: u16,
    /// Value of the `Host` header: host, plus the port when it is not the default.
    pub authority: String,
    pub path_and_query: String,
}

/// A run the engine can execute: every value checked.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub url: TargetUrl,
    pub method: String,
    /// Validated header names and values, in the order given.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub connections: usize,
    pub threads: usize,
    pub stop: Stop,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub warmup: Duration,
    pub keepalive: bool,
}

/// A rejected flag. `Display` gives the whole sentence, fix included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {message}")]
pub struct ConfigError {
    pub flag: &'static str,
    pub message: String,
}

fn reject(flag: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        flag,
        message: message.into(),
    }
}

/// The default run length when neither `-d` nor `-n` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

impl RunSpec {
    pub fn validate(&self) -> Result<RunConfig, ConfigError> {
        let url = parse_url(&self.url)?;
        let method = validate_method(&self.method)?;
        let headers = self
            .headers
            .iter()
            .map(|h| parse_header(h))
            .collect::<Result<Vec<_>, _>>()?;
        if self.connections == 0 {
            return Err(reject(
                "-c/--connections",
                "must be at least 1, got 0; try -c 50",
            ));
        }
        let threads = match self.threads {
            Some(0) => {
                return Err(reject(
                    "-t/--threads",
                    "must be at least 1, got 0; leave it out to use one thread per core",
                ))
            }
            Some(t) => t,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
        // A thread without a connection would only burn a core.
        .min(self.connections);
        let stop = match (self.duration, self.requests) {
            (Some(_), Some(_)) => {
                return Err(reject(
                    "-d/--duration",
                    "cannot be combined with -n/--requests; give one of them",
                ))
            }
            (Some(d), None) if d.is_zero() => {
                return Err(reject("-d/--duration", "must be longer than 0; try -d 10s"))
            }
            (Some(d), None) => Stop::Duration(d),
            (None, Some(0)) => {
                return Err(reject(
                    "-n/--requests",
                    "must be at least 1, got 0; try -n 10000",
                ))
            }
            (None, Some(n)) => Stop::Requests(n),
            (None, None) => Stop::Duration(DEFAULT_DURATION),
        };
        if self.timeout.is_zero() {
            return Err(reject(
                "--timeout",
                "must be longer than 0; try --timeout 20s",
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(reject(
                "--connect-timeout",
                "must be longer than 0; try --connect-timeout 5s",
            ));
        }
        Ok(RunConfig {
            url,
            method,
            headers,
            body: self.body.clone(),
            connections: self.connections,
            threads,
            stop,
            timeout: self.timeout,
            connect_timeout: self.connect_timeout,
            warmup: self.warmup,
            keepalive: self.keepalive,
        })
    }
}

fn parse_url(raw: &str) -> Result<TargetUrl, ConfigError> {
    const FLAG: &str = "URL";
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
    match scheme.to_ascii_lowercase().as_str() {
        "http" => {}
        "https" => {
            return Err(reject(
                FLAG,
                format!("`{raw}`: HTTPS is not supported by this version yet; use an http:// URL"),
            ))
        }
        other => {
            return Err(reject(
                FLAG,
                format!("`{raw}`: unsupported scheme `{other}`; use http://"),
            ))
        }
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
    let port = uri.port_u16().unwrap_or(80);
    let authority = match uri.port_u16() {
        Some(p) if p != 80 => format!("{host}:{p}"),
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
    })
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn validate_method(raw: &str) -> Result<String, ConfigError> {
    if !is_token(raw) {
        return Err(reject(
            "-m/--method",
            format!("`{raw}` is not an HTTP method; use e.g. GET, POST, PUT"),
        ));
    }
    Ok(raw.to_string())
}

fn parse_header(raw: &str) -> Result<(String, String), ConfigError> {
    const FLAG: &str = "-H/--header";
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
    use super::*;

    fn spec(url: &str) -> RunSpec {
        RunSpec {
            url: url.into(),
            ..RunSpec::default()
        }
    }

    #[test]
    fn url_parts() {
        let c = spec("http://127.0.0.1:8080/a?b=1").validate().unwrap();
        assert_eq!(c.url.host, "127.0.0.1");
        assert_eq!(c.url.port, 8080);
        assert_eq!(c.url.authority, "127.0.0.1:8080");
        assert_eq!(c.url.path_and_query, "/a?b=1");
        let c = spec("http://example.test").validate().unwrap();
        assert_eq!((c.url.port, c.url.authority.as_str()), (80, "example.test"));
        assert_eq!(c.url.path_and_query, "/");
        let c = spec("http://[::1]:9000/x").validate().unwrap();
        assert_eq!(
            (c.url.host.as_str(), c.url.authority.as_str()),
            ("::1", "[::1]:9000")
        );
    }

    #[test]
    fn rejections_name_the_flag_and_the_fix() {
        let cases: &[(RunSpec, &str, &str)] = &[
            (spec("localhost:8080/"), "URL", "http://localhost:8080/"),
            (spec("ftp://x/"), "URL", "use http://"),
            (
                RunSpec {
                    connections: 0,
                    ..spec("http://a/")
                },
                "-c/--connections",
                "-c 50",
            ),
            (
                RunSpec {
                    headers: vec!["NoColon".into()],
                    ..spec("http://a/")
                },
                "-H/--header",
                "Name: value",
            ),
            (
                RunSpec {
                    headers: vec!["Bad Name: x".into()],
                    ..spec("http://a/")
                },
                "-H/--header",
                "not a valid header name",
            ),
            (
                RunSpec {
                    requests: Some(0),
                    ..spec("http://a/")
                },
                "-n/--requests",
                "-n 10000",
            ),
            (
                RunSpec {
                    requests: Some(5),
                    duration: Some(Duration::from_secs(1)),
                    ..spec("http://a/")
                },
                "-d/--duration",
                "one of them",
            ),
            (
                RunSpec {
                    method: "G T".into(),
                    ..spec("http://a/")
                },
                "-m/--method",
                "GET",
            ),
        ];
        for (s, flag, fix) in cases {
            let err = s.validate().unwrap_err();
            assert_eq!(err.flag, *flag, "{err}");
            assert!(err.to_string().contains(fix), "`{err}` lacks `{fix}`");
        }
    }

    #[test]
    fn threads_never_exceed_connections() {
        let c = RunSpec {
            connections: 3,
            threads: Some(8),
            ..spec("http://a/")
        }
        .validate()
        .unwrap();
        assert_eq!(c.threads, 3);
    }
}
