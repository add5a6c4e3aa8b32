//! The generator's side of the agent protocol: a small blocking client for one agent.
//!
//! Each client holds one kept-alive HTTPS connection (TCP_NODELAY: without it, Nagle and
//! delayed ACKs put 20 ms of error into a clock exchange) on a private current-thread
//! runtime, so that the session, which is synchronous, can call it from any thread. A
//! connection that fails is made again on the next call. The agent's certificate is
//! trusted by its SHA-256 fingerprint (`--agent-fingerprint`, printed by the agent at start)
//! or by a CA file (`--agent-cacert`); never by nothing.
//!
//! It must not print, and it never sends the token anywhere but in the `Authorization`
//! header of a request to the agent it was given.

mod trust;

use crate::clock::{Estimate, Exchange, LocalClock};
use crate::protocol::{
    self, ClockStamps, Closed, ErrorBody, Hello, HostInfo, Lease, OpenSession, Opened, SampleBatch,
    StartSampling, Stopped, HEADER_NONCE, HEADER_PROTOCOL, PROTOCOL,
};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use trust::{read_token, tls_config};

/// Where the agent is and how to trust it, as the user gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEndpoint {
    /// `https://HOST:PORT`, as the agent printed it.
    pub url: String,
    /// The file holding the agent's token (never the token itself: argv is public).
    pub token_file: PathBuf,
    /// The agent certificate's SHA-256 fingerprint.
    pub fingerprint: Option<String>,
    /// Or a CA (or the certificate itself) that signed the agent's certificate.
    pub cacert: Option<PathBuf>,
}

/// Everything that goes wrong talking to an agent. Each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot reach the agent at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the agent at {url} answered {status}: {message}")]
    Refused {
        url: String,
        status: u16,
        message: String,
        /// Boxed: the error travels up every call, the body rarely matters.
        body: Option<Box<ErrorBody>>,
    },
    #[error("the agent at {url} did not answer within {after:?} ({what})")]
    Timeout {
        url: String,
        after: Duration,
        what: String,
    },
    #[error("the agent at {url} sent what this loadlab cannot read: {0}", url = .1)]
    Protocol(String, String),
}

impl ClientError {
    /// The agent refused because another run holds it.
    pub fn busy(&self) -> Option<&protocol::Busy> {
        match self {
            ClientError::Refused { body: Some(b), .. } => b.busy.as_ref(),
            _ => None,
        }
    }

    /// The HTTP status the agent answered with, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Refused { status, .. } => Some(*status),
            _ => None,
        }
    }
}

type Result<T> = std::result::Result<T, ClientError>;

/// The longest a kept-alive connection may sit idle and still be reused. The agent closes a
/// connection that sends no request for 10 s (its header timeout), and this client's
/// connection task runs only inside a call, so it cannot notice the close in between: a
/// request written into it would fail (a session's connection is idle for a whole run while
/// its keeper polls on another). Well under the agent's bound, so the race cannot happen.
const IDLE_REUSE: Duration = Duration::from_secs(4);

/// The agent's port when the URL names none (`loadlab agent`'s default).
pub const DEFAULT_PORT: u16 = 7070;

/// A connection to one agent.
pub struct AgentClient {
    endpoint: AgentEndpoint,
    host: String,
    port: u16,
    server_name: ServerName<'static>,
    /// `HOST:PORT` for the Host header.
    authority: String,
    token: String,
    tls: Arc<rustls::ClientConfig>,
    runtime: tokio::runtime::Runtime,
    conn: Option<SendRequest<Full<Bytes>>>,
    /// When the connection last answered: one idle longer than [`IDLE_REUSE`] is not reused.
    last_used: Instant,
    /// How long an ordinary call may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for AgentClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentClient")
            .field("url", &self.endpoint.url)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl AgentClient {
    /// Checks the endpoint, reads the token, connects and says hello; refuses an agent that
    /// speaks another protocol.
    pub fn connect(endpoint: &AgentEndpoint) -> Result<(AgentClient, Hello)> {
        let mut client = AgentClient::new(endpoint)?;
        let hello = client.hello()?;
        if hello.protocol != PROTOCOL {
            return Err(ClientError::Invalid(format!(
                "the agent at {} speaks protocol {}; this loadlab speaks protocol {PROTOCOL}: run \
                 the same version of loadlab on both hosts",
                endpoint.url, hello.protocol
            )));
        }
        Ok((client, hello))
    }

    /// A client for the endpoint, not yet connected.
    pub fn new(endpoint: &AgentEndpoint) -> Result<AgentClient> {
        let url = url::Url::parse(&endpoint.url).map_err(|e| {
            ClientError::Invalid(format!(
                "--agent {}: {e}; give the URL the agent printed, such as https://10.0.0.5:7070",
                endpoint.url
            ))
        })?;
        if url.scheme() != "https" {
            return Err(ClientError::Invalid(format!(
                "--agent {}: the agent speaks HTTPS only; give its https:// URL",
                endpoint.url
            )));
        }
        if url.path() != "/" || url.query().is_some() || !url.username().is_empty() {
            return Err(ClientError::Invalid(format!(
                "--agent {}: give only the scheme, host and port (https://HOST:PORT)",
                endpoint.url
            )));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(a)) => a.to_string(),
            Some(h) => h.to_string(),
            None => {
                return Err(ClientError::Invalid(format!(
                    "--agent {}: no host",
                    endpoint.url
                )))
            }
        };
        let port = url.port().unwrap_or(DEFAULT_PORT);
        let server_name = ServerName::try_from(host.clone())
            .map_err(|e| ClientError::Invalid(format!("--agent {}: {e}", endpoint.url)))?;
        let token = read_token(&endpoint.token_file)?;
        let tls = tls_config(endpoint)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ClientError::Invalid(format!("cannot start the agent client: {e}")))?;
        let authority = match url.host() {
            Some(url::Host::Ipv6(a)) => format!("[{a}]:{port}"),
            _ => format!("{host}:{port}"),
        };
        Ok(AgentClient {
            endpoint: endpoint.clone(),
            host,
            port,
            server_name,
            authority,
            token,
            tls,
            runtime,
            conn: None,
            last_used: Instant::now(),
            timeout: Duration::from_secs(10),
        })
    }

    /// Another client for the same agent, with a connection of its own (a long poll on one
    /// connection must not hold up calls on another).
    pub fn try_clone(&self) -> Result<AgentClient> {
        AgentClient::new(&self.endpoint)
    }

    pub fn endpoint(&self) -> &AgentEndpoint {
        &self.endpoint
    }

    /// The agent's host as the URL names it (where a server it launches is reached).
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn hello(&mut self) -> Result<Hello> {
        self.call("GET", "/v1/hello", None, self.timeout)
    }

    pub fn host_info(&mut self, port: Option<u16>) -> Result<HostInfo> {
        let path = match port {
            Some(p) => format!("/v1/host?port={p}"),
            None => "/v1/host".to_string(),
        };
        self.call("GET", &path, None, self.timeout)
    }

    /// A burst of `n` clock exchanges; the estimate from the fastest.
    pub fn estimate_clock(&mut self, clock: &LocalClock, n: usize) -> Result<Estimate> {
        // The connection is made (and its handshake paid) before the first exchange.
        self.ensure_connected()?;
        let mut burst = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            let mut t1 = 0;
            let mut t4 = 0;
            let stamps: ClockStamps = self.call_timed(
                "POST",
                "/v1/clock",
                Some(b"{}".to_vec()),
                &mut t1,
                &mut t4,
                clock,
            )?;
            burst.push(Exchange {
                t1_ns: t1,
                t2_ns: stamps.t2_ns,
                t3_ns: stamps.t3_ns,
                t4_ns: t4,
            });
        }
        Estimate::from_burst(&burst)
            .ok_or_else(|| ClientError::Invalid("no clock exchange was made".into()))
    }

    pub fn open(&mut self, request: &OpenSession) -> Result<Opened> {
        let timeout = self.timeout
            + match &request.server {
                protocol::ServerRequest::Target { launch, .. }
                | protocol::ServerRequest::Exec { launch, .. } => {
                    Duration::from_millis(launch.startup_timeout_ms)
                }
                _ => Duration::ZERO,
            };
        self.call("POST", "/v1/sessions", Some(json(request)?), timeout)
    }

    pub fn renew(&mut self, session: &str) -> Result<Lease> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/lease"),
            Some(b"{}".to_vec()),
            self.timeout,
        )
    }

    pub fn start_sampling(&mut self, session: &str, request: &StartSampling) -> Result<Lease> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/sampling"),
            Some(json(request)?),
            self.timeout,
        )
    }

    /// Samples after `after` (a seq), waiting up to `wait` for the first.
    pub fn samples(&mut self, session: &str, after: u64, wait: Duration) -> Result<SampleBatch> {
        self.call(
            "GET",
            &format!(
                "/v1/sessions/{session}/samples?after={after}&wait_ms={}",
                wait.as_millis()
            ),
            None,
            self.timeout + wait,
        )
    }

    pub fn stop_sampling(&mut self, session: &str) -> Result<Stopped> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/sampling/stop"),
            Some(b"{}".to_vec()),
            self.timeout,
        )
    }

    pub fn close(&mut self, session: &str) -> Result<Closed> {
        self.call(
            "DELETE",
            &format!("/v1/sessions/{session}"),
            None,
            self.timeout,
        )
    }

    fn call<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<T> {
        let clock = LocalClock::new();
        let (mut t1, mut t4) = (0, 0);
        self.call_inner(method, path, body, timeout, &mut t1, &mut t4, &clock)
    }

    fn call_timed<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        t1: &mut i64,
        t4: &mut i64,
        clock: &LocalClock,
    ) -> Result<T> {
        let timeout = self.timeout;
        self.call_inner(method, path, body, timeout, t1, t4, clock)
    }

    #[allow(clippy::too_many_arguments)]
    fn call_inner<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
        t1: &mut i64,
        t4: &mut i64,
        clock: &LocalClock,
    ) -> Result<T> {
        let mutating = method != "GET";
        // One retry on a fresh connection when a kept-alive one was closed under us; a
        // request that reached the agent is never sent twice (a new nonce would make a
        // second one legitimate, so only a request that failed before any answer is).
        let mut attempts = 0;
        loop {
            attempts += 1;
            let fresh = self.conn.is_none();
            self.ensure_connected()?;
            let request = self.build(method, path, body.clone(), mutating)?;
            let url = self.endpoint.url.clone();
            let conn = self.conn.as_mut().expect("connected above");
            let started = Instant::now();
            *t1 = clock.ns_of(started);
            let outcome = self.runtime.block_on(async {
                tokio::time::timeout(timeout, async {
                    let response = conn.send_request(request).await?;
                    let status = response.status().as_u16();
                    let version = response
                        .headers()
                        .get(HEADER_PROTOCOL)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let bytes = response.into_body().collect().await?.to_bytes();
                    Ok::<_, hyper::Error>((status, version, bytes))
                })
                .await
            });
            *t4 = clock.now_ns();
            self.last_used = Instant::now();
            let (status, version, bytes) = match outcome {
                Err(_) => {
                    self.conn = None;
                    return Err(ClientError::Timeout {
                        url,
                        after: timeout,
                        what: format!("{method} {path}"),
                    });
                }
                Ok(Err(e)) => {
                    self.conn = None;
                    if !fresh
                        && attempts == 1
                        && (e.is_canceled() || e.is_closed() || e.is_incomplete_message())
                    {
                        continue;
                    }
                    return Err(ClientError::Unreachable {
                        url,
                        reason: e.to_string(),
                    });
                }
                Ok(Ok(answer)) => answer,
            };
            if let Some(v) = version.as_deref() {
                if v != PROTOCOL.to_string() {
                    return Err(ClientError::Invalid(format!(
                        "the agent at {url} speaks protocol {v}; this loadlab speaks protocol \
                         {PROTOCOL}: run the same version of loadlab on both hosts"
                    )));
                }
            }
            if !(200..300).contains(&status) {
                let body: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
                let message = body.as_ref().map_or_else(
                    || String::from_utf8_lossy(&bytes).trim().to_string(),
                    |b| b.error.clone(),
                );
                let message = match status {
                    401 => format!(
                        "{message} (give the token file the agent printed at start with \
                         --agent-token-file; this one is {})",
                        self.endpoint.token_file.display()
                    ),
                    _ => message,
                };
                return Err(ClientError::Refused {
                    url,
                    status,
                    message,
                    body: body.map(Box::new),
                });
            }
            return serde_json::from_slice(&bytes)
                .map_err(|e| ClientError::Protocol(format!("{method} {path}: {e}"), url.clone()));
        }
    }

    fn build(
        &self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        mutating: bool,
    ) -> Result<hyper::Request<Full<Bytes>>> {
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.authority)
            .header(
                hyper::header::AUTHORIZATION,
                format!("Bearer {}", self.token),
            )
            .header(HEADER_PROTOCOL, PROTOCOL.to_string());
        if mutating {
            builder = builder.header(HEADER_NONCE, nonce()?);
        }
        if body.is_some() {
            builder = builder.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        builder
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| ClientError::Invalid(format!("cannot build a request to the agent: {e}")))
    }

    fn ensure_connected(&mut self) -> Result<()> {
        if self.last_used.elapsed() > IDLE_REUSE {
            self.conn = None;
        }
        if self.conn.as_ref().is_some_and(|c| !c.is_closed()) {
            return Ok(());
        }
        self.conn = None;
        let (host, port, name) = (self.host.clone(), self.port, self.server_name.clone());
        let connector = tokio_rustls::TlsConnector::from(self.tls.clone());
        let url = self.endpoint.url.clone();
        let timeout = self.timeout;
        let made = self.runtime.block_on(async move {
            let connect = async {
                let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                    .await
                    .map_err(|e| e.to_string())?;
                tcp.set_nodelay(true).map_err(|e| e.to_string())?;
                let tls = connector
                    .connect(name, tcp)
                    .await
                    .map_err(|e| format!("TLS: {e}"))?;
                let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                Ok::<_, String>(send)
            };
            tokio::time::timeout(timeout, connect)
                .await
                .map_err(|_| format!("no connection within {timeout:?}"))?
        });
        match made {
            Ok(send) => {
                self.conn = Some(send);
                Ok(())
            }
            Err(reason) => Err(ClientError::Unreachable { url, reason }),
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|e| ClientError::Invalid(format!("cannot encode a request to the agent: {e}")))
}

/// 128 random bits, hex: never reused, so a recorded request cannot be replayed.
fn nonce() -> Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ClientError::Invalid("no randomness for a request nonce".into()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
