//! The checks only HTTPS has (issue 19): which protocol ALPN chose when both `h2` and
//! `http/1.1` are offered (reported, not judged: HTTP/2 is served "where the framework
//! supports it"), that the certificate served is the one the target was given, and that a
//! new connection can resume the session of an earlier one. Resumption is tried with
//! TLS 1.3 (tickets) and with TLS 1.2 (session ids or tickets) apart, through rustls's
//! client session store; the check fails only when neither ever resumes, because a stack
//! that resumes with one version and not the other is a property worth reporting, not a
//! contract violation.

use super::cases::{Runner, TargetTls};
use super::Outcome;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;

/// New connections tried per TLS version after the first, before calling it "full handshake":
/// a server with several processes (each with its own ticket keys) may land a connection on
/// another process than the one that issued the ticket.
const RESUME_ATTEMPTS: usize = 4;

/// What the TLS checks saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsSummary {
    /// The protocol ALPN chose when `h2` and `http/1.1` were offered: `h2`, `http/1.1`, or
    /// `none` (the server ignored ALPN).
    pub alpn: String,
    /// The TLS version negotiated by default, e.g. `TLSv1_3`.
    pub version: String,
    /// A new connection with TLS 1.3: `resumed`, `full handshake`, or `not offered: ...`.
    pub resumption_tls13: String,
    /// The same with TLS 1.2.
    pub resumption_tls12: String,
}

impl Runner<'_> {
    pub(super) async fn tls_checks(&mut self, tls: &TargetTls) -> TlsSummary {
        let mut summary = TlsSummary {
            alpn: "-".into(),
            version: "-".into(),
            resumption_tls13: "-".into(),
            resumption_tls12: "-".into(),
        };
        if self.is_down() {
            return summary;
        }
        let endpoint = "TLS";
        // ALPN and the certificate, on one connection offering both protocols.
        let both = match loadlab_certs::client_config(&tls.ca_pem, &[b"h2", b"http/1.1"], None) {
            Ok(config) => config,
            Err(e) => {
                self.fail(
                    endpoint,
                    "handshake",
                    "a client trusting the CA",
                    e.to_string(),
                );
                return summary;
            }
        };
        let client = super::client::TlsClient::new(both, self.addr);
        match client.connect(self.addr).await {
            Ok(stream) => {
                let (_, connection) = stream.get_ref();
                summary.alpn = connection
                    .alpn_protocol()
                    .map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned());
                summary.version = connection
                    .protocol_version()
                    .map_or("-".into(), |v| format!("{v:?}"));
                self.record(
                    endpoint,
                    &format!(
                        "handshake offering h2 and http/1.1 by ALPN (chose {}, {})",
                        summary.alpn, summary.version
                    ),
                    Outcome::Pass,
                );
                let served = connection
                    .peer_certificates()
                    .and_then(|chain| chain.first())
                    .map(|c| c.as_ref().to_vec());
                match (&tls.expected_cert, served) {
                    (None, _) => self.record(
                        endpoint,
                        "certificate served",
                        Outcome::Skip {
                            reason: "loadlab did not make the target's certificate, so it has none to compare".into(),
                        },
                    ),
                    (Some(expected), Some(served)) if served.as_slice() == &expected[..] => {
                        self.record(endpoint, "certificate served", Outcome::Pass)
                    }
                    (Some(_), served) => self.fail(
                        endpoint,
                        "certificate served",
                        "the certificate in TLS_CERT",
                        match served {
                            Some(der) => format!("another certificate ({} bytes of DER)", der.len()),
                            None => "no certificate".into(),
                        },
                    ),
                }
            }
            Err(e) => {
                self.fail(
                    endpoint,
                    "handshake offering h2 and http/1.1 by ALPN",
                    "a TLS handshake",
                    e,
                );
                return summary;
            }
        }

        summary.resumption_tls13 = self.resumes(tls, &rustls::version::TLS13).await;
        summary.resumption_tls12 = self.resumes(tls, &rustls::version::TLS12).await;
        let what = format!(
            "session resumption on a new connection (TLS 1.3: {}; TLS 1.2: {})",
            summary.resumption_tls13, summary.resumption_tls12
        );
        if summary.resumption_tls13 == "resumed" || summary.resumption_tls12 == "resumed" {
            self.record(endpoint, &what, Outcome::Pass);
        } else {
            self.fail(
                endpoint,
                &what,
                "a new connection resumes an earlier session with TLS 1.3 tickets or TLS 1.2 session ids or tickets",
                format!(
                    "the stack cannot resume at all: a full handshake on every one of {} new connections per version (enable session tickets or a session cache the way the stack's documentation says)",
                    RESUME_ATTEMPTS
                ),
            );
        }
        summary
    }

    /// `resumed` if any of a few new connections with `version` resumed the session of the
    /// first (all through one rustls client session store), `full handshake` if none did,
    /// `not offered: ...` when the server does not speak `version`.
    async fn resumes(
        &mut self,
        tls: &TargetTls,
        version: &'static rustls::SupportedProtocolVersion,
    ) -> String {
        let versions = [version];
        let config =
            match loadlab_certs::client_config(&tls.ca_pem, &[b"http/1.1"], Some(&versions[..])) {
                Ok(config) => config,
                Err(e) => return format!("not tried: {e}"),
            };
        // One configuration, so one session store, for every connection below.
        let client = super::client::TlsClient::new(config, self.addr);
        for attempt in 0..=RESUME_ATTEMPTS {
            let stream = match client.connect(self.addr).await {
                Ok(stream) => stream,
                Err(e) if attempt == 0 => return format!("not offered: {e}"),
                Err(e) => return format!("a new connection failed: {e}"),
            };
            let resumed =
                stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            // A whole exchange, so that TLS 1.3 tickets (sent after the handshake) are read
            // into the session store before the next connection.
            if let Err(e) = plaintext(stream, self.options.request_timeout).await {
                return format!("GET /plaintext failed: {e}");
            }
            if attempt > 0 && resumed {
                return "resumed".into();
            }
        }
        "full handshake".into()
    }
}

/// One `GET /plaintext` on `stream`, body read to the end.
async fn plaintext(
    stream: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    timeout: std::time::Duration,
) -> Result<(), String> {
    let exchange = async {
        let (mut sender, connection) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let request = hyper::Request::get("/plaintext")
            .header(hyper::header::HOST, "127.0.0.1")
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no response within {timeout:?}")))
}
