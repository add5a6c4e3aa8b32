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
//!
//! This file holds the endpoint, the errors and the client's making; one method per agent
//! endpoint is in `calls`, one request on the kept-alive connection (connecting, the retry,
//! timeouts, refusals) in `transport`, the token and the TLS trust in `trust`.

mod calls;
mod path;
mod transport;
mod trust;

pub use path::measure_path;

use crate::protocol::{self, ErrorBody, Hello, PROTOCOL};
use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use rustls::pki_types::ServerName;
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
    /// The agent at `url` speaks protocol `theirs`, not this loadlab's: refused whether the
    /// hello said so or a response's protocol header did.
    pub(super) fn other_protocol(url: &str, theirs: impl std::fmt::Display) -> ClientError {
        ClientError::Invalid(format!(
            "the agent at {url} speaks protocol {theirs}; this loadlab speaks protocol \
             {PROTOCOL}: run the same version of loadlab on both hosts"
        ))
    }

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

/// An agent's text made as a terminal may show it, in place, by the one rule for a peer's
/// text (`loadlab_result::format::shown`: escaped when it holds a control character).
pub(crate) fn shown(text: &mut String) {
    if let std::borrow::Cow::Owned(escaped) = loadlab_result::format::shown(text) {
        *text = escaped;
    }
}

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
        let mut hello = client.hello()?;
        if hello.protocol != PROTOCOL {
            return Err(ClientError::other_protocol(&endpoint.url, hello.protocol));
        }
        // Its words reach notes, refusals and results: shown as every peer's text is.
        let Hello {
            agent_version,
            hostname,
            kernel,
            cgroup,
            busy,
            default_server,
            load_busy,
            ..
        } = &mut hello;
        for text in [agent_version, hostname, kernel] {
            shown(text);
        }
        for text in [cgroup, default_server].into_iter().flatten() {
            shown(text);
        }
        for b in [busy, load_busy].into_iter().flatten() {
            shown(&mut b.client);
            b.run.iter_mut().for_each(shown);
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
}
