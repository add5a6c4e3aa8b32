//! The `/upstream-grpc` checks: the reply, the 400 rule, and the gRPC counts read from the mock
//! upstream's `/__stats` (the same port serves both protocols). A pooled channel is one
//! connection per process, so no pooled request of 8 calls may open more than one (the first
//! in each worker process opens its channel's); a channel per call is one connection per call.
//! A target whose manifest does not declare the `upstream-grpc` capability, or a mock upstream
//! serving HTTPS (gRPC is served without TLS only), gets every check here as a visible skip,
//! not a failure.

use super::cases::Runner;
use super::expect::{Expect, JSON};
use super::upstream_checks::{delta, StatsReader};
use super::Outcome;
use loadlab_upstream::Stats;
use serde::Serialize;
use std::net::SocketAddr;

/// What the mock upstream's gRPC method answers (`BytesValue{"ok"}`): 2 bytes per call.
const REPLY_BYTES: u32 = loadlab_upstream::RESPONSE_BODY.len() as u32;
const CALLS: u32 = 8;
/// Pooled `/upstream-grpc?calls=8` requests sent; each may open at most one connection.
const POOLED_ROUNDS: u32 = 3;

/// The requests this module sends, for skips and the 400 rule.
const BAD_INPUTS: [&str; 4] = [
    "/upstream-grpc?calls=-1",
    "/upstream-grpc?calls=65",
    "/upstream-grpc?calls=",
    "/upstream-grpc?calls=1&client=shared",
];

/// Connection reuse seen by the mock upstream's gRPC side during the `/upstream-grpc` checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GrpcSummary {
    /// Traffic caused by the pooled `/upstream-grpc?calls=8` requests.
    pub pooled: Stats,
    /// Traffic caused by the `client=per-call` request.
    pub per_call: Stats,
    /// gRPC calls per connection with the pooled channel.
    pub pooled_reuse_ratio: Option<f64>,
}

fn body(calls: u32, client: &str) -> String {
    format!(
        "{{\"calls\":{calls},\"client\":\"{client}\",\"upstream_bytes\":{}}}",
        calls * REPLY_BYTES
    )
}

impl Runner<'_> {
    /// Runs the checks, or records why they were skipped: `implemented` is the manifest's
    /// capability (always true for `verify URL` unless told otherwise).
    pub(super) async fn upstream_grpc(
        &mut self,
        upstream: Option<(SocketAddr, bool)>,
        implemented: bool,
    ) -> Option<GrpcSummary> {
        let pooled_path = format!("/upstream-grpc?calls={CALLS}");
        let per_call_path = format!("/upstream-grpc?calls={CALLS}&client=per-call");
        let skip = match (implemented, upstream) {
            (false, _) => Some(
                "the target does not implement /upstream-grpc (its target.toml lacks \
                 capabilities = [\"upstream-grpc\"])",
            ),
            (true, None) => Some(
                "no mock upstream to count calls: pass the mock upstream the server calls \
                 (--upstream URL)",
            ),
            (true, Some((_, true))) => Some(
                "the mock upstream serves HTTPS, and gRPC only without TLS (UPSTREAM_GRPC_URL \
                 comes with an http:// upstream): pass an http:// --upstream for these checks",
            ),
            (true, Some((_, false))) => None,
        };
        let stats_addr = upstream.map(|(addr, _)| addr);
        let (Some(stats_addr), None) = (stats_addr, skip) else {
            let reason = skip.unwrap_or_default();
            for path in [&pooled_path, &per_call_path] {
                self.record(
                    &format!("GET {path}"),
                    "upstream gRPC calls",
                    Outcome::Skip {
                        reason: reason.into(),
                    },
                );
            }
            if !implemented {
                for path in BAD_INPUTS {
                    let skipped = Outcome::Skip {
                        reason: reason.into(),
                    };
                    self.record(&format!("GET {path}"), "status", skipped);
                }
            }
            return None;
        };
        let mut stats = StatsReader::new(stats_addr, self.options.request_timeout, None);

        let before = stats.read().await;
        self.get(
            "/upstream-grpc?calls=0",
            Expect::ok(JSON, body(0, "pooled")),
        )
        .await;
        let after_zero = stats.read().await;
        self.count(
            "GET /upstream-grpc?calls=0",
            "upstream gRPC calls",
            0,
            delta(&before, &after_zero).map(|d| d.grpc_requests),
        );

        let endpoint = format!("GET {pooled_path}");
        // Each pooled request may open the channel's connection (a process's first call; a
        // target with several worker processes has one channel in each), never more: eight
        // calls over one connection, not eight connections.
        let mut previous = after_zero.clone();
        let mut opened = Vec::new();
        let mut unreadable = None;
        for _ in 0..POOLED_ROUNDS {
            self.get(&pooled_path, Expect::ok(JSON, body(CALLS, "pooled")))
                .await;
            let now = stats.read().await;
            match delta(&previous, &now) {
                Ok(d) => opened.push(d.grpc_connections),
                Err(e) => unreadable = Some(e),
            }
            previous = now;
        }
        let after_pooled = previous;
        let pooled = delta(&after_zero, &after_pooled);
        self.calls_and_streams(&endpoint, CALLS * POOLED_ROUNDS, &pooled);
        let what = "upstream gRPC connections opened per request (one channel per process)";
        match unreadable {
            Some(e) => self.fail(&endpoint, what, "the mock upstream's counters", e),
            None if opened.iter().all(|&n| n <= 1) => self.record(&endpoint, what, Outcome::Pass),
            None => self.fail(
                &endpoint,
                what,
                format!("at most 1 in each of {POOLED_ROUNDS} requests of {CALLS} calls"),
                format!("{opened:?}"),
            ),
        }

        self.get(&per_call_path, Expect::ok(JSON, body(CALLS, "per-call")))
            .await;
        let after_per_call = stats.read().await;
        let per_call = delta(&after_pooled, &after_per_call);
        let endpoint = format!("GET {per_call_path}");
        self.calls_and_streams(&endpoint, CALLS, &per_call);
        self.count(
            &endpoint,
            "upstream gRPC connections (a channel per call)",
            u64::from(CALLS),
            per_call
                .as_ref()
                .map(|d| d.grpc_connections)
                .map_err(Clone::clone),
        );
        self.count(
            &endpoint,
            "upstream HTTP/1.1 requests during the gRPC checks",
            0,
            delta(&after_zero, &after_per_call).map(|d| d.requests),
        );

        for path in BAD_INPUTS {
            self.get(path, Expect::bad_request()).await;
            self.still_serving(&format!("GET {path}")).await;
        }

        let pooled = pooled.ok()?;
        Some(GrpcSummary {
            pooled,
            per_call: per_call.ok()?,
            pooled_reuse_ratio: pooled.grpc_reuse_ratio(),
        })
    }

    /// `calls` gRPC calls, each its own HTTP/2 stream (a retry would show as an extra stream).
    fn calls_and_streams(&mut self, endpoint: &str, calls: u32, seen: &Result<Stats, String>) {
        let seen = seen.as_ref().map_err(Clone::clone);
        self.count(
            endpoint,
            "upstream gRPC calls",
            u64::from(calls),
            seen.clone().map(|d| d.grpc_requests),
        );
        self.count(
            endpoint,
            "upstream gRPC streams (one per unary call)",
            u64::from(calls),
            seen.map(|d| d.grpc_streams),
        );
    }
}
