//! One request to the agent on the client's kept-alive HTTPS connection: made (again) when
//! missing, closed or idle too long, retried once only when it failed before any answer,
//! bounded by a timeout, signed with the token and a fresh nonce, and its answer read as
//! JSON or turned into a [`ClientError`] that names the fix.

use super::{AgentClient, ClientError, Result, IDLE_REUSE};
use crate::clock::LocalClock;
use crate::protocol::{ErrorBody, HEADER_NONCE, HEADER_PROTOCOL, PROTOCOL};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant};

impl AgentClient {
    pub(super) fn call<T: DeserializeOwned>(
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

    pub(super) fn call_timed<T: DeserializeOwned>(
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
                    return Err(ClientError::other_protocol(&url, v));
                }
            }
            if !(200..300).contains(&status) {
                let body: Option<ErrorBody> = serde_json::from_slice(&bytes).ok();
                let message = body.as_ref().map_or_else(
                    || String::from_utf8_lossy(&bytes).trim().to_string(),
                    |b| b.error.clone(),
                );
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

/// 128 random bits, hex: never reused, so a recorded request cannot be replayed.
fn nonce() -> Result<String> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| ClientError::Invalid("no randomness for a request nonce".into()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
