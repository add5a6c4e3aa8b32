//! The HTTP/3 checks (capability `http3`, targets/CONTRACT.md): over HTTPS, `GET /plaintext`,
//! `GET /json` and `POST /echo` over QUIC to the target's port number over UDP, held to the
//! same expectations as over TCP (status, `Server`, `Date`, framing, `Content-Type`, body),
//! all on one connection. A target whose manifest does not declare the capability, or one
//! verified over plain HTTP (QUIC is always encrypted), gets them as a visible skip.
//!
//! The client is quinn with the h3 crates, as loadlab's `--http3` speaks it, trusting the
//! CA the target's certificate came from; it must not send anything the contract does not
//! describe.

use super::cases::{Runner, TargetTls};
use super::client::Reply;
use super::expect::{compare, Expect, JSON, OCTETS, TEXT};
use super::Outcome;
use bytes::{Buf, Bytes, BytesMut};
use hyper::Method;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The requests, labelled as the report shows them.
const PLAINTEXT: &str = "GET /plaintext (HTTP/3)";
const JSON_ENDPOINT: &str = "GET /json (HTTP/3)";
const ECHO: &str = "POST /echo (HTTP/3, 70000 bytes)";
/// Larger than one QUIC packet and one flow-control window's first grant.
const ECHO_BYTES: usize = 70_000;

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One HTTP/3 connection to the target.
struct H3Connection {
    endpoint: quinn::Endpoint,
    send: SendRequest,
    timeout: Duration,
}

impl H3Connection {
    /// The QUIC handshake (ALPN h3, the certificate checked against `addr`'s IP) and
    /// HTTP/3's set-up, within `timeout`.
    async fn open(addr: SocketAddr, ca_pem: &[u8], timeout: Duration) -> Result<Self, String> {
        let tls = loadlab_certs::client_config(ca_pem, &[b"h3"], None)
            .map_err(|e| format!("the CA: {e}"))?;
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
            .map_err(|e| format!("a QUIC client configuration: {e}"))?;
        let local: SocketAddr = if addr.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let mut endpoint =
            quinn::Endpoint::client(local).map_err(|e| format!("a UDP socket: {e}"))?;
        endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
        let set_up = async {
            let connecting = endpoint
                .connect(addr, &addr.ip().to_string())
                .map_err(|e| format!("QUIC connect: {e}"))?;
            let connection = connecting
                .await
                .map_err(|e| format!("the QUIC handshake with UDP {addr} failed: {e}"))?;
            let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(connection))
                .await
                .map_err(|e| format!("HTTP/3 set-up: {e}"))?;
            tokio::spawn(async move {
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
            });
            Ok::<_, String>(send)
        };
        let send = tokio::time::timeout(timeout, set_up).await.map_err(|_| {
            format!(
                "no QUIC handshake with UDP {addr} within {} ms (nothing serving HTTP/3 \
                     there?)",
                timeout.as_millis()
            )
        })??;
        Ok(H3Connection {
            endpoint,
            send,
            timeout,
        })
    }

    /// One request on a new stream; the whole response read.
    async fn request(&mut self, method: Method, path: &str, body: Bytes) -> Result<Reply, String> {
        let started = Instant::now();
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("https://localhost{path}"));
        if !body.is_empty() {
            request = request.header(http::header::CONTENT_LENGTH, body.len());
        }
        let request = request.body(()).map_err(|e| e.to_string())?;
        let exchange = async {
            let mut stream = self.send.send_request(request).await?;
            // A server may answer first and stop the request's sending (RFC 9114 4.1).
            loadlab_engine::engine::h3_send_body(&mut stream, body).await?;
            let response = stream.recv_response().await?;
            let mut got = BytesMut::new();
            while let Some(mut chunk) = stream.recv_data().await? {
                let n = chunk.remaining();
                got.extend_from_slice(&chunk.copy_to_bytes(n));
            }
            Ok::<_, h3::error::StreamError>((response, got.freeze()))
        };
        let (response, body) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| format!("no response within {} ms", self.timeout.as_millis()))?
            .map_err(|e| format!("the HTTP/3 stream failed: {e}"))?;
        Ok(Reply {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body,
            elapsed: started.elapsed(),
        })
    }
}

impl Drop for H3Connection {
    fn drop(&mut self) {
        self.endpoint.close(0u32.into(), b"verified");
    }
}

impl Runner<'_> {
    /// Runs the checks over HTTP/3, or records why they were skipped (`implemented`: the
    /// manifest's capability; `tls`: verifying over HTTPS).
    pub(super) async fn http3(&mut self, tls: Option<&TargetTls>, implemented: bool) {
        let skip = match (implemented, tls) {
            (false, _) => Some(
                "the target does not serve HTTP/3 (its target.toml lacks capabilities = \
                 [\"http3\"])",
            ),
            (true, None) => Some("HTTP/3 is served over HTTPS only: verify with --tls"),
            (true, Some(_)) if self.is_down() => Some("the target is unreachable"),
            _ => None,
        };
        let (Some(tls), None) = (tls, skip) else {
            let reason = skip.unwrap_or_default();
            for endpoint in [PLAINTEXT, JSON_ENDPOINT, ECHO] {
                let skipped = Outcome::Skip {
                    reason: reason.into(),
                };
                self.record(endpoint, "response", skipped);
            }
            return;
        };
        let mut connection =
            match H3Connection::open(self.addr, &tls.ca_pem, self.options.request_timeout).await {
                Ok(c) => c,
                Err(err) => {
                    for endpoint in [PLAINTEXT, JSON_ENDPOINT, ECHO] {
                        self.fail(endpoint, "response", "an HTTP/3 response", err.clone());
                    }
                    return;
                }
            };
        let echo = super::cases::payload(ECHO_BYTES);
        let cases = [
            (
                PLAINTEXT,
                Method::GET,
                "/plaintext",
                Bytes::new(),
                Expect::ok(TEXT, "Hello, World!"),
            ),
            (
                JSON_ENDPOINT,
                Method::GET,
                "/json",
                Bytes::new(),
                Expect::ok(JSON, r#"{"message":"Hello, World!"}"#),
            ),
            (
                ECHO,
                Method::POST,
                "/echo",
                echo.clone(),
                Expect::ok(OCTETS, echo),
            ),
        ];
        for (endpoint, method, path, body, expect) in cases {
            match connection.request(method, path, body).await {
                Ok(reply) => compare(endpoint, &reply, &expect, &mut self.checks),
                Err(err) => self.fail(endpoint, "response", "an HTTP/3 response", err),
            }
        }
    }
}
