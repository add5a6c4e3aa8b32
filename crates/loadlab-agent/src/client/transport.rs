//! One request to the agent on the client's kept-alive HTTPS connection: made (again) when
//! missing, closed or idle too long, retried once only when it failed before any answer,
//! bounded by a timeout, signed with the token and a fresh nonce, and its answer read as
//! JSON or turned into a [`ClientError`] that names the fix.
//!
//! Every reply body is read through [`read_bounded`], up to what that endpoint's reply can
//! legitimately be ([`MAX_REPLY_BYTES`] unless a call says more): an agent, or whatever
//! answers in its place, decides how much it sends, and a body read whole without a bound
//! let an endless reply take the coordinator's memory until it aborted.

use super::{AgentClient, ClientError, Result, IDLE_REUSE};
use crate::clock::LocalClock;
use crate::protocol::{ErrorBody, HEADER_NONCE, HEADER_PROTOCOL, PROTOCOL};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant};

/// The most bytes of an ordinary JSON reply (hello, host, clock, a session's, a lease's, an
/// error's): each is a few hundred bytes to a few KiB; 4 MiB is far above any of them.
pub(super) const MAX_REPLY_BYTES: usize = 4 << 20;
/// The most bytes of a batch of server samples: the agent sends at most 10,000 samples a
/// batch, each under 1,000 bytes of JSON with its path window (10 MB).
pub(super) const MAX_SAMPLES_REPLY_BYTES: usize = 16 << 20;
/// The most bytes of a batch of a load's intervals: the intervals the coordinator has not
/// acknowledged yet (a few, as it reads each second; some 30 of 100 ms after a 3 s gap it
/// tolerates), each at most about 0.5 MB (an interval's histogram at loadlab's bounds, every
/// bucket used, compressed then base64), with the load's header and result. 64 MiB holds
/// more than 100 such intervals.
pub(super) const MAX_LOAD_BATCH_BYTES: usize = 64 << 20;

/// Why a reply's body could not be read.
enum BodyError {
    Hyper(hyper::Error),
    /// It was, or said it would be, longer than the call's bound.
    TooLarge,
}

impl From<hyper::Error> for BodyError {
    fn from(e: hyper::Error) -> BodyError {
        BodyError::Hyper(e)
    }
}

/// A response's body, whole, when it is at most `limit` bytes: refused at once when its
/// `Content-Length` says more, else as soon as the bytes read pass the bound (the rest is
/// never read: the connection is dropped). The one place this client reads a body.
async fn read_bounded(
    response: hyper::Response<hyper::body::Incoming>,
    limit: usize,
) -> std::result::Result<Bytes, BodyError> {
    let declared = response
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    match http_body_util::Limited::new(response.into_body(), limit)
        .collect()
        .await
    {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => match e.downcast::<hyper::Error>() {
            Ok(e) => Err(BodyError::Hyper(*e)),
            // The only other error `Limited` gives is its own: the bound was passed.
            Err(_) => Err(BodyError::TooLarge),
        },
    }
}

/// `n` bytes in words: "64 MiB".
fn mib(n: usize) -> String {
    format!("{} MiB", n >> 20)
}

impl AgentClient {
    pub(super) fn call<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
    ) -> Result<T> {
        self.call_up_to(method, path, body, timeout, MAX_REPLY_BYTES)
    }

    /// [`AgentClient::call`] for a reply that may be longer than an ordinary one: at most
    /// `limit` bytes of it are read.
    pub(super) fn call_up_to<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        timeout: Duration,
        limit: usize,
    ) -> Result<T> {
        let clock = LocalClock::new();
        let (mut t1, mut t4) = (0, 0);
        let call = Call {
            method,
            path,
            timeout,
            limit,
        };
        self.call_inner(&call, body, &mut t1, &mut t4, &clock)
    }

    pub(super) fn call_timed<T: DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        t1: &mut i64,
        t4: &mut i64,
        clock: &LocalClock,
    ) -> Result<T> {
        let call = Call {
            method,
            path,
            timeout: self.timeout,
            limit: MAX_REPLY_BYTES,
        };
        self.call_inner(&call, body, t1, t4, clock)
    }

    fn call_inner<T: DeserializeOwned>(
        &mut self,
        call: &Call,
        body: Option<Vec<u8>>,
        t1: &mut i64,
        t4: &mut i64,
        clock: &LocalClock,
    ) -> Result<T> {
        let &Call {
            method,
            path,
            timeout,
            limit,
        } = call;
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
                    let bytes = read_bounded(response, limit).await?;
                    Ok::<_, BodyError>((status, version, bytes))
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
                Ok(Err(BodyError::TooLarge)) => {
                    // The rest of the body is unread: the connection cannot carry another.
                    self.conn = None;
                    return Err(ClientError::Protocol(
                        format!(
                            "its reply to {method} {path} is longer than {}, the most this \
                             loadlab reads of that reply: it is not a loadlab agent, or it \
                             misbehaves",
                            mib(limit)
                        ),
                        url,
                    ));
                }
                Ok(Err(BodyError::Hyper(e))) => {
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
                    return Err(ClientError::other_protocol(&url, v));
                }
            }
            if !(200..300).contains(&status) {
                let body: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
                // The agent's words, escaped as every peer's text is ([`super::shown`]): they
                // reach a terminal, and what answers may not be an agent at all.
                let mut message = body.as_ref().map_or_else(
                    || String::from_utf8_lossy(&bytes).trim().to_string(),
                    |b| b.error.clone(),
                );
                super::shown(&mut message);
                let message = match status {
                    // Before the token matches, the agent answers a bare 401.
                    401 if message.is_empty() => format!(
                        "the agent refused the token: give the token file the agent printed \
                         at start with --agent-token-file (this one is {})",
                        self.endpoint.token_file.display()
                    ),
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
            return serde_json::from_slice(&bytes).map_err(|e| {
                // serde's message quotes what it could not take: the peer's bytes.
                let mut e = e.to_string();
                super::shown(&mut e);
                ClientError::Protocol(format!("{method} {path}: {e}"), url.clone())
            });
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

    pub(super) fn ensure_connected(&mut self) -> Result<()> {
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

/// One call's request line, and how long and how much its answer may be.
struct Call<'a> {
    method: &'a str,
    path: &'a str,
    timeout: Duration,
    limit: usize,
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
