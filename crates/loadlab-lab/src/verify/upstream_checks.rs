//! The `/upstream` checks: call counts and connection reuse, read from the mock upstream's
//! `/__stats` before and after each group of requests. Kept apart from the other cases
//! because it is the only part that looks at a second server. Over HTTPS the mock upstream
//! also counts TLS handshakes: a client per call must pay a full one every call.

use super::cases::{Runner, UpstreamStats};
use super::client::{Probe, SendBody, TlsClient};
use super::expect::{Expect, JSON};
use super::{Outcome, UpstreamSummary};
use hyper::Method;
use loadlab_upstream::Stats;
use std::net::SocketAddr;
use std::time::Duration;

/// What the mock upstream answers, so `upstream_bytes` is `2 * calls`.
const UPSTREAM_BODY_BYTES: u32 = loadlab_upstream::RESPONSE_BODY.len() as u32;
/// Pooled `/upstream?calls=8` requests sent; each may open at most one connection.
const POOLED_ROUNDS: u32 = 3;
const CALLS: u32 = 8;

impl Runner<'_> {
    pub(super) async fn upstream(
        &mut self,
        stats_source: Option<UpstreamStats>,
    ) -> Option<UpstreamSummary> {
        let pooled_path = format!("/upstream?calls={CALLS}");
        let per_call_path = format!("/upstream?calls={CALLS}&client=per-call");
        let Some(stats_source) = stats_source else {
            let reason = "no mock upstream to count calls: pass the mock upstream the server calls (--upstream URL)";
            for path in [&pooled_path, &per_call_path] {
                self.record(
                    &format!("GET {path}"),
                    "upstream calls",
                    Outcome::Skip {
                        reason: reason.into(),
                    },
                );
            }
            return None;
        };
        let body = |calls: u32, client: &str| {
            format!(
                "{{\"calls\":{calls},\"client\":\"{client}\",\"upstream_bytes\":{}}}",
                calls * UPSTREAM_BODY_BYTES
            )
        };
        let https = stats_source.tls.is_some();
        let mut stats = StatsReader::new(
            stats_source.addr,
            self.options.request_timeout,
            stats_source.tls,
        );

        let before = stats.read().await;
        self.get("/upstream?calls=0", Expect::ok(JSON, body(0, "pooled")))
            .await;
        let after_zero = stats.read().await;
        self.count(
            "GET /upstream?calls=0",
            "upstream requests",
            0,
            delta(&before, &after_zero).map(|d| d.requests),
        );

        for _ in 0..POOLED_ROUNDS {
            self.get(&pooled_path, Expect::ok(JSON, body(CALLS, "pooled")))
                .await;
        }
        let after_pooled = stats.read().await;
        let pooled = delta(&after_zero, &after_pooled);
        let endpoint = format!("GET {pooled_path}");
        self.count(
            &endpoint,
            "upstream requests",
            u64::from(CALLS * POOLED_ROUNDS),
            pooled.as_ref().map(|d| d.requests).map_err(Clone::clone),
        );
        match &pooled {
            Ok(d) if d.connections <= u64::from(POOLED_ROUNDS) && d.connections > 0 => {
                self.record(&endpoint, "upstream connection reuse", Outcome::Pass)
            }
            Ok(d) => self.fail(
                &endpoint,
                "upstream connection reuse",
                format!(
                    "at most {POOLED_ROUNDS} connections for {} pooled calls (one shared pooled client)",
                    CALLS * POOLED_ROUNDS
                ),
                format!("{} connections for {} requests", d.connections, d.requests),
            ),
            Err(e) => self.fail(&endpoint, "upstream connection reuse", "the mock upstream's counters", e.clone()),
        }

        self.get(&per_call_path, Expect::ok(JSON, body(CALLS, "per-call")))
            .await;
        let after_per_call = stats.read().await;
        let per_call = delta(&after_pooled, &after_per_call);
        let endpoint = format!("GET {per_call_path}");
        self.count(
            &endpoint,
            "upstream requests",
            u64::from(CALLS),
            per_call.as_ref().map(|d| d.requests).map_err(Clone::clone),
        );
        self.count(
            &endpoint,
            "upstream connections",
            u64::from(CALLS),
            per_call
                .as_ref()
                .map(|d| d.connections)
                .map_err(Clone::clone),
        );

        if https {
            // A client per call has no session to resume: a full handshake every call (a
            // per-call client that resumed would share a session cache, a pool in disguise).
            self.count(
                &endpoint,
                "upstream full TLS handshakes",
                u64::from(CALLS),
                per_call.as_ref().map(|d| d.tls_full).map_err(Clone::clone),
            );
        }

        let pooled = pooled.ok()?;
        Some(UpstreamSummary {
            pooled,
            per_call: per_call.ok()?,
            pooled_reuse_ratio: pooled.reuse_ratio(),
            https,
        })
    }

    pub(super) fn count(
        &mut self,
        endpoint: &str,
        what: &str,
        expected: u64,
        got: Result<u64, String>,
    ) {
        match got {
            Ok(n) if n == expected => self.record(endpoint, what, Outcome::Pass),
            Ok(n) => self.fail(endpoint, what, expected.to_string(), n.to_string()),
            Err(e) => self.fail(endpoint, what, expected.to_string(), e),
        }
    }
}

/// Reads `/__stats` from the mock upstream; its own requests are not counted there.
pub(super) struct StatsReader {
    probe: Probe,
}

impl StatsReader {
    pub(super) fn new(addr: SocketAddr, timeout: Duration, tls: Option<TlsClient>) -> Self {
        StatsReader {
            probe: Probe::with_tls(addr, timeout, tls),
        }
    }

    pub(super) async fn read(&mut self) -> Result<Stats, String> {
        let reply = self
            .probe
            .send(Method::GET, loadlab_upstream::STATS_PATH, SendBody::Empty)
            .await
            .map_err(|e| format!("the mock upstream's /__stats: {e}"))?;
        serde_json::from_slice(&reply.body)
            .map_err(|e| format!("the mock upstream's /__stats is not its JSON: {e}"))
    }
}

pub(super) fn delta(
    before: &Result<Stats, String>,
    after: &Result<Stats, String>,
) -> Result<Stats, String> {
    match (before, after) {
        (Ok(b), Ok(a)) => Ok(a.since(b)),
        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
    }
}
