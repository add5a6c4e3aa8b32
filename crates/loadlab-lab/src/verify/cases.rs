//! The contract, as a sequence of requests. Order matters: the plain endpoints first, then
//! `Date`, keep-alive, echo, the portfolio, `/upstream` and `/upstream-grpc`, and the bad inputs last, each
//! followed by a liveness check, so a target that crashes on bad input still gets every other
//! finding reported.

use super::client::{Probe, Reply, SendBody, TlsClient, CONNECT_FAILED};
use super::expect::{compare, BodyRule, Expect, HTML, JSON, OCTETS, TEXT};
use super::{Check, Outcome, Report, VerifyOptions};
use crate::content::ReferenceSite;
use bytes::Bytes;
use hyper::header::DATE;
use hyper::Method;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const MAX_ECHO_BYTES: usize = 1024 * 1024;
const MAX_BYTES_N: usize = 10 * 1024 * 1024;

/// Verifying over HTTPS: how to connect, what to trust, and the certificate the target was
/// given (when loadlab made it) for the identity check.
pub(super) struct TargetTls {
    pub client: TlsClient,
    pub ca_pem: Vec<u8>,
    pub expected_cert: Option<rustls::pki_types::CertificateDer<'static>>,
}

/// Where the mock upstream's `/__stats` is, and over TLS or not.
pub(super) struct UpstreamStats {
    pub addr: SocketAddr,
    pub tls: Option<TlsClient>,
    /// A second, plain mock upstream that serves (and counts) the gRPC calls, when this one
    /// serves HTTPS (gRPC is served without TLS only); `None`: this one's gRPC side.
    pub grpc_addr: Option<SocketAddr>,
}

pub(super) struct Runner<'a> {
    pub(super) addr: SocketAddr,
    pub(super) options: &'a VerifyOptions,
    /// Set over HTTPS: every probe, fresh ones included, speaks TLS.
    pub(super) tls: Option<TlsClient>,
    probe: Probe,
    pub(super) checks: Vec<Check>,
    /// Set when the target stopped answering; later requests are skipped with this reason.
    down: Option<String>,
}

pub(super) async fn run(
    target: String,
    addr: SocketAddr,
    reference: &ReferenceSite,
    upstream_stats: Option<UpstreamStats>,
    target_tls: Option<TargetTls>,
    options: &VerifyOptions,
) -> Report {
    let tls = target_tls.as_ref().map(|t| t.client.clone());
    let mut runner = Runner {
        addr,
        options,
        probe: Probe::with_tls(addr, options.request_timeout, tls.clone()),
        tls,
        checks: Vec::new(),
        down: None,
    };
    runner.fixed_endpoints().await;
    let tls_summary = match &target_tls {
        Some(tls) => Some(runner.tls_checks(tls).await),
        None => None,
    };
    runner.http3(target_tls.as_ref(), options.http3).await;
    runner.date_changes().await;
    runner.keep_alive().await;
    runner.echo().await;
    runner.portfolio(reference).await;
    // gRPC is served on the mock upstream's port over plain HTTP/2 only: an HTTPS mock
    // upstream has no gRPC side (unless a plain one beside it serves it).
    let grpc_upstream = upstream_stats.as_ref().map(|u| match u.grpc_addr {
        Some(addr) => (addr, false),
        None => (u.addr, u.tls.is_some()),
    });
    let upstream = runner.upstream(upstream_stats).await;
    let upstream_grpc = runner
        .upstream_grpc(grpc_upstream, options.upstream_grpc)
        .await;
    runner.metrics(options.metrics).await;
    let ca_pem = target_tls.as_ref().map(|t| t.ca_pem.clone());
    runner.grpc(ca_pem, options.grpc).await;
    runner.bad_inputs().await;
    Report {
        target,
        addr,
        checks: runner.checks,
        upstream,
        upstream_grpc,
        tls: tls_summary,
    }
}

impl Runner<'_> {
    pub(super) fn record(&mut self, endpoint: &str, what: &str, outcome: Outcome) {
        self.checks.push(Check {
            endpoint: endpoint.to_string(),
            what: what.to_string(),
            outcome,
        });
    }

    pub(super) fn fail(
        &mut self,
        endpoint: &str,
        what: &str,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) {
        self.record(
            endpoint,
            what,
            Outcome::Fail {
                expected: expected.into(),
                got: got.into(),
            },
        );
    }

    /// Sends one request and compares it; `None` when there was no response.
    async fn expect(
        &mut self,
        method: Method,
        path: &str,
        body: SendBody,
        label: &str,
        expect: Expect,
    ) -> Option<Reply> {
        let endpoint = if label.is_empty() {
            format!("{method} {path}")
        } else {
            format!("{method} {path} ({label})")
        };
        if let Some(reason) = self.down.clone() {
            self.record(&endpoint, "response", Outcome::Skip { reason });
            return None;
        }
        match self.probe.send(method, path, body).await {
            Ok(reply) => {
                compare(&endpoint, &reply, &expect, &mut self.checks);
                Some(reply)
            }
            Err(err) => {
                // Nothing listens any more (or never did): one finding, then skip the rest
                // instead of repeating "connection refused" for every endpoint.
                if err.starts_with(CONNECT_FAILED) {
                    self.down = Some(format!("the target is unreachable ({err})"));
                }
                self.fail(
                    &endpoint,
                    "response",
                    format!("HTTP {}", expect.status),
                    err,
                );
                None
            }
        }
    }

    /// A probe on a new connection (TLS when verifying over HTTPS).
    pub(super) fn fresh_probe(&self) -> Probe {
        Probe::with_tls(self.addr, self.options.request_timeout, self.tls.clone())
    }

    /// Whether an earlier check found the target unreachable.
    pub(super) fn is_down(&self) -> bool {
        self.down.is_some()
    }

    pub(super) async fn get(&mut self, path: &str, expect: Expect) -> Option<Reply> {
        self.expect(Method::GET, path, SendBody::Empty, "", expect)
            .await
    }

    async fn fixed_endpoints(&mut self) {
        self.get("/healthz", Expect::ok(TEXT, "ok")).await;
        self.get("/plaintext", Expect::ok(TEXT, "Hello, World!"))
            .await;
        self.get("/json", Expect::ok(JSON, r#"{"message":"Hello, World!"}"#))
            .await;
        for ms in [0u64, 50] {
            let expect = Expect {
                min_elapsed: Some(Duration::from_millis(ms)),
                ..Expect::ok(TEXT, "done")
            };
            self.get(&format!("/delay?ms={ms}"), expect.clone()).await;
            self.get(&format!("/block?ms={ms}"), expect).await;
        }
        for n in [0usize, 3, 1000, 100_000] {
            self.get(
                &format!("/compute?n={n}"),
                Expect::ok(JSON, compute_json(n)),
            )
            .await;
        }
        self.get(
            "/compute?n=3&other=1&n=5",
            Expect::ok(JSON, "[1250496027,1116302264,1000676753]"),
        )
        .await;
        for n in [0usize, 1, 27, 100_000, MAX_BYTES_N] {
            self.get(&format!("/bytes?n={n}"), Expect::ok(OCTETS, payload(n)))
                .await;
        }
    }

    /// `Date` must change: one response, then poll until it differs, for just over a second
    /// and the timeout (the contract is about wall-clock seconds). Polled from the start
    /// rather than after sleeping that second: a Date changes at the next second's turn,
    /// half a second away on average (the sleep cost every verify a second).
    async fn date_changes(&mut self) {
        let endpoint = "GET /plaintext";
        if self.down.is_some() {
            return;
        }
        let Some(first) = self.date().await else {
            return self.fail(endpoint, "Date changes", "a Date header", "none");
        };
        let deadline =
            Instant::now() + Duration::from_millis(1050) + self.options.date_change_timeout;
        loop {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let now = self.date().await;
            if now.as_ref().is_some_and(|d| *d != first) {
                return self.record(endpoint, "Date changes", Outcome::Pass);
            }
            if Instant::now() >= deadline {
                return self.fail(
                    endpoint,
                    "Date changes",
                    "a different Date a second later",
                    format!(
                        "still {first:?} after {:.1} s",
                        1.05 + self.options.date_change_timeout.as_secs_f64()
                    ),
                );
            }
        }
    }

    async fn date(&mut self) -> Option<String> {
        let reply = self
            .probe
            .send(Method::GET, "/plaintext", SendBody::Empty)
            .await
            .ok()?;
        reply.headers.get(DATE)?.to_str().ok().map(str::to_owned)
    }

    /// Three requests on a fresh probe must share one connection.
    async fn keep_alive(&mut self) {
        let endpoint = "GET /plaintext";
        if self.down.is_some() {
            return;
        }
        let mut probe = self.fresh_probe();
        for _ in 0..3 {
            if let Err(err) = probe.send(Method::GET, "/plaintext", SendBody::Empty).await {
                return self.fail(endpoint, "keep-alive", "three responses", err);
            }
        }
        if probe.connections_opened == 1 {
            self.record(endpoint, "keep-alive", Outcome::Pass);
        } else {
            self.fail(
                endpoint,
                "keep-alive",
                "3 requests on 1 connection",
                format!(
                    "the server closed it; {} connections were needed",
                    probe.connections_opened
                ),
            );
        }
    }

    async fn echo(&mut self) {
        let cases: [(&str, SendBody, Bytes); 5] = [
            ("empty", SendBody::Fixed(Bytes::new()), Bytes::new()),
            (
                "fixed, 1000 bytes",
                SendBody::Fixed(payload(1000)),
                payload(1000),
            ),
            (
                "chunked, 70000 bytes",
                SendBody::Chunked(vec![payload(1), payload(40_000), payload(29_999)]),
                concat(&[payload(1), payload(40_000), payload(29_999)]),
            ),
            (
                "fixed, the 1 MiB maximum",
                SendBody::Fixed(payload(MAX_ECHO_BYTES)),
                payload(MAX_ECHO_BYTES),
            ),
            (
                "chunked, the 1 MiB maximum",
                SendBody::Chunked(vec![
                    payload(MAX_ECHO_BYTES / 2),
                    payload(MAX_ECHO_BYTES / 2),
                ]),
                concat(&[payload(MAX_ECHO_BYTES / 2), payload(MAX_ECHO_BYTES / 2)]),
            ),
        ];
        for (label, body, expected) in cases {
            self.expect(
                Method::POST,
                "/echo",
                body,
                label,
                Expect::ok(OCTETS, expected),
            )
            .await;
        }
    }

    async fn portfolio(&mut self, reference: &ReferenceSite) {
        for page in &reference.pages {
            let expect = Expect {
                status: page.status,
                media_type: Some(HTML),
                body: BodyRule::Exact(Bytes::from(page.body.clone())),
                min_elapsed: None,
            };
            self.get(&page.path, expect).await;
        }
    }

    async fn bad_inputs(&mut self) {
        let bad = [
            "/delay",
            "/delay?ms=",
            "/delay?ms=-1",
            "/delay?ms=foo",
            "/delay?ms=1.5",
            "/delay?ms=10001",
            "/delay?ms=99999999999999999999999",
            "/block?ms=-1",
            "/block?ms=1001",
            "/compute?n=foo",
            "/compute?n=-1",
            "/compute?n=100001",
            "/bytes?n=foo",
            "/bytes?n=-1",
            "/bytes?n=10485761",
            "/upstream?calls=-1",
            "/upstream?calls=65",
            "/upstream?calls=1&client=shared",
        ];
        for path in bad {
            self.get(path, Expect::bad_request()).await;
            self.still_serving(&format!("GET {path}")).await;
        }
        let too_big = SendBody::Fixed(payload(MAX_ECHO_BYTES + 1));
        self.expect(
            Method::POST,
            "/echo",
            too_big,
            "over the 1 MiB maximum",
            Expect::status_only(413),
        )
        .await;
        self.still_serving("POST /echo (over the 1 MiB maximum)")
            .await;
        // Chunked, no length announced: the target must count what it reads (one byte over
        // the maximum, in the last chunk) and refuse it just the same.
        let too_big_chunked = SendBody::Chunked(vec![
            payload(MAX_ECHO_BYTES / 2),
            payload(MAX_ECHO_BYTES / 2 + 1),
        ]);
        self.expect(
            Method::POST,
            "/echo",
            too_big_chunked,
            "chunked, over the 1 MiB maximum",
            Expect::status_only(413),
        )
        .await;
        self.still_serving("POST /echo (chunked, over the 1 MiB maximum)")
            .await;
    }

    /// After a bad request: a fresh connection must still get `/healthz`. If not, the target
    /// crashed or hung on that input; later requests are skipped.
    pub(super) async fn still_serving(&mut self, after: &str) {
        if self.down.is_some() {
            return;
        }
        let mut fresh = self.fresh_probe();
        match fresh.send(Method::GET, "/healthz", SendBody::Empty).await {
            Ok(reply) if reply.status == 200 => {
                self.record(after, "still serving afterwards", Outcome::Pass)
            }
            outcome => {
                let got = match outcome {
                    Ok(reply) => format!("GET /healthz answered {}", reply.status),
                    Err(err) => format!("GET /healthz failed: {err}"),
                };
                self.fail(
                    after,
                    "still serving afterwards",
                    "GET /healthz answers 200",
                    got,
                );
                self.down = Some(format!("the target stopped answering after {after}"));
            }
        }
    }
}

/// The contract's `/compute` generator, written here independently of any target.
pub fn compute_json(n: usize) -> String {
    let mut x: u64 = 42;
    let numbers: Vec<String> = (0..n)
        .map(|_| {
            x = (1_103_515_245 * x + 12_345) % (1 << 31);
            x.to_string()
        })
        .collect();
    format!("[{}]", numbers.join(","))
}

/// The contract's `/bytes` payload: `abc...zabc...`.
pub fn payload(n: usize) -> Bytes {
    (0..n)
        .map(|i| b'a' + (i % 26) as u8)
        .collect::<Vec<u8>>()
        .into()
}

fn concat(parts: &[Bytes]) -> Bytes {
    parts.concat().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_generators() {
        assert_eq!(compute_json(0), "[]");
        assert_eq!(compute_json(3), "[1250496027,1116302264,1000676753]");
        assert_eq!(&payload(28)[..], b"abcdefghijklmnopqrstuvwxyzab");
    }
}
