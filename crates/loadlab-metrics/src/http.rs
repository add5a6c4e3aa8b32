//! The blocking HTTP client that scraping, sending and querying share: `ureq` over rustls
//! with ring (the workspace's one TLS stack), `http://` and `https://`, trusting the system's
//! roots or the CA file given by loadlab's one verifier (`loadlab_certs::Verifier`, the load
//! engine's: a self-signed certificate given as the file is trusted as `--cacert` trusts it;
//! see [`crate::tls`]), and a bearer token when the endpoint wants one. URLs are parsed by the
//! `url` crate only. Every exchange is bounded by one timeout; it must not be used on the
//! load's hot path, and the token never appears in an error or a `Debug` print.

use loadlab_certs::rustls;
use loadlab_certs::Trust;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The longest body read from an endpoint (a node_exporter page is about 100 KB).
const MAX_BODY_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url:?} is not an http:// or https:// URL with a host ({problem}); write e.g. http://127.0.0.1:9100/metrics")]
    BadUrl { url: String, problem: String },
    #[error("{url}: {problem}; check that the endpoint is up and reachable")]
    Failed { url: String, problem: String },
    #[error("{url}: timed out after {timeout_ms} ms; raise the timeout or check the endpoint")]
    Timeout { url: String, timeout_ms: u128 },
    #[error("{url}: the TLS handshake failed ({problem}); give the CA that signed its certificate (or a self-signed certificate itself) with --metrics-cacert FILE")]
    Tls { url: String, problem: String },
    #[error("{url}: the endpoint presents a self-signed (CA:TRUE) certificate that is not one of the trusted ones (CaUsedAsEndEntity); give that very certificate (the file its `openssl req -x509` wrote) or the CA that signed it with --metrics-cacert FILE")]
    CaAsOwn { url: String },
    #[error("{url}: {problem}; check the URL points at an HTTP endpoint")]
    BadResponse { url: String, problem: String },
    #[error("{file}: {problem}; give --metrics-cacert a PEM file holding the CA certificate(s) that signed the endpoint's")]
    BadCa { file: String, problem: String },
}

/// How to reach endpoints beyond plain HTTP: which CAs to trust, which token to send.
#[derive(Clone, Default, PartialEq)]
pub struct HttpOptions {
    /// PEM certificates trusted instead of the system's roots, and the file they came from.
    pub ca: Option<(String, Arc<Vec<u8>>)>,
    /// Sent as `Authorization: Bearer TOKEN`; never printed, never stored.
    pub bearer_token: Option<String>,
}

impl fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpOptions")
            .field("ca", &self.ca.as_ref().map(|(file, _)| file))
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

impl HttpOptions {
    /// Reads a CA file (`--metrics-cacert`) and checks it holds at least one certificate.
    pub fn read_ca(path: &str) -> Result<(String, Arc<Vec<u8>>), HttpError> {
        let bad = |problem: String| HttpError::BadCa {
            file: path.to_string(),
            problem,
        };
        let pem = std::fs::read(path).map_err(|e| bad(format!("cannot read it ({e})")))?;
        certificates(path, &pem)?;
        Ok((path.to_string(), Arc::new(pem)))
    }
}

/// The certificates of a `--metrics-cacert` file's contents (at least one).
fn certificates(
    file: &str,
    pem: &[u8],
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, HttpError> {
    loadlab_certs::parse_certificates(pem, "it").map_err(|e| HttpError::BadCa {
        file: file.to_string(),
        problem: e.to_string(),
    })
}

/// Checks a URL a user typed for an endpoint: `http` or `https`, with a host.
pub fn check_url(raw: &str) -> Result<url::Url, HttpError> {
    let bad = |problem: String| HttpError::BadUrl {
        url: raw.to_string(),
        problem,
    };
    let parsed = url::Url::parse(raw).map_err(|e| bad(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad(format!("{}:// is not http or https", parsed.scheme())));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host".into()));
    }
    Ok(parsed)
}

pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A client for one purpose (a scraper, a sender): its TLS roots, token and timeout fixed.
#[derive(Clone)]
pub struct Client {
    agent: ureq::Agent,
    authorization: Option<String>,
    timeout: Duration,
}

impl Client {
    /// `timeout` bounds each whole exchange (connect, TLS, send, read).
    pub fn new(options: &HttpOptions, timeout: Duration) -> Result<Client, HttpError> {
        let (trust, file) = match &options.ca {
            Some((file, pem)) => (Trust::Cacert(certificates(file, pem)?), file.as_str()),
            None => (Trust::SystemRoots, "the system's roots"),
        };
        let tls = loadlab_certs::client_config_for(&trust, &[b"http/1.1"], None).map_err(|e| {
            HttpError::BadCa {
                file: file.to_string(),
                problem: format!("cannot build the TLS client ({e})"),
            }
        })?;
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            // Endpoints are named exactly: a proxy from the environment must not divert a
            // loopback scrape.
            .proxy(None)
            .build();
        let resolver = ureq::unversioned::resolver::DefaultResolver::default();
        Ok(Client {
            agent: ureq::Agent::with_parts(config, crate::tls::connector(tls), resolver),
            authorization: options.bearer_token.as_ref().map(|t| format!("Bearer {t}")),
            timeout,
        })
    }

    pub fn get(&self, url: &str) -> Result<Response, HttpError> {
        self.request("GET", url, &[], &[])
    }

    /// One request. `method` is GET or POST (a body is sent only with POST).
    pub fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Response, HttpError> {
        check_url(url)?;
        let result = if method == "POST" {
            let mut req = self.agent.post(url);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            if let Some(auth) = &self.authorization {
                req = req.header("Authorization", auth);
            }
            req.send(body)
        } else {
            let mut req = self.agent.get(url);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            if let Some(auth) = &self.authorization {
                req = req.header("Authorization", auth);
            }
            req.call()
        };
        let mut response = result.map_err(|e| self.error(url, e))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_BODY_BYTES)
            .read_to_vec()
            .map_err(|e| self.error(url, e))?;
        Ok(Response { status, body })
    }

    fn error(&self, url: &str, e: ureq::Error) -> HttpError {
        let url = url.to_string();
        match e {
            ureq::Error::Timeout(_) => HttpError::Timeout {
                url,
                timeout_ms: self.timeout.as_millis(),
            },
            ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
                HttpError::Timeout {
                    url,
                    timeout_ms: self.timeout.as_millis(),
                }
            }
            ureq::Error::Tls(problem) => HttpError::Tls {
                url,
                problem: problem.to_string(),
            },
            ureq::Error::Io(io) => {
                // rustls reports a refused handshake as an I/O error wrapping its own.
                let tls = io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
                if let Some(tls) = tls {
                    if loadlab_certs::is_ca_used_as_end_entity(tls) {
                        HttpError::CaAsOwn { url }
                    } else {
                        HttpError::Tls {
                            url,
                            problem: tls.to_string(),
                        }
                    }
                } else if io.kind() == std::io::ErrorKind::ConnectionRefused {
                    HttpError::Failed {
                        url,
                        problem: "connection refused".into(),
                    }
                } else {
                    HttpError::Failed {
                        url,
                        problem: io.to_string(),
                    }
                }
            }
            ureq::Error::Protocol(p) => HttpError::BadResponse {
                url,
                problem: format!("the response is not HTTP/1.x ({p})"),
            },
            ureq::Error::BodyExceedsLimit(n) => HttpError::BadResponse {
                url,
                problem: format!("the body is larger than {n} bytes"),
            },
            other => HttpError::Failed {
                url,
                problem: other.to_string(),
            },
        }
    }
}

/// One GET with no CA or token (the system's roots), bounded by `timeout`.
pub fn get(url: &str, timeout: Duration) -> Result<Response, HttpError> {
    Client::new(&HttpOptions::default(), timeout)?.get(url)
}

/// Percent-encodes a query parameter's value (the `url` crate's form encoding).
pub fn encode_query_value(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_the_token_never_printed() {
        assert!(check_url("http://127.0.0.1:9090/api/v1/write").is_ok());
        assert!(check_url("https://h/metrics").is_ok());
        let e = check_url("ftp://h/").unwrap_err().to_string();
        assert!(e.contains("ftp") && e.contains("write e.g."), "{e}");
        assert!(check_url("not a url").is_err());
        let options = HttpOptions {
            ca: None,
            bearer_token: Some("s3cret".into()),
        };
        assert!(!format!("{options:?}").contains("s3cret"));
    }

    #[test]
    fn a_refused_connection_is_named() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let url = format!("http://{addr}/metrics");
        let e = get(&url, Duration::from_secs(2)).err().unwrap().to_string();
        assert!(e.contains(&url) && e.contains("refused"), "{e}");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_with_the_fix() {
        let path = std::env::temp_dir().join(format!("loadlab-metrics-ca-{}", std::process::id()));
        std::fs::write(&path, "not a certificate\n").unwrap();
        let e = HttpOptions::read_ca(path.to_str().unwrap())
            .unwrap_err()
            .to_string();
        let _ = std::fs::remove_file(&path);
        assert!(
            e.contains("no PEM certificate") && e.contains("--metrics-cacert"),
            "{e}"
        );
    }
}
