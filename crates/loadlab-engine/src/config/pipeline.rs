//! `--pipeline N` checked: HTTP/1.1 pipelining (RFC 9112 9.3.2), up to N requests written on
//! a connection before the first answer is read. Where it does not apply, the rejection says
//! why and what to give instead; the engine's `pipeline` module runs what passes.

use super::validate::MAX_CONNECTIONS;
use super::{reject, ConfigError, RunSpec};

/// The deepest pipeline loadlab writes. TechEmpower's plaintext test pipelines 16; servers
/// bound what they read ahead (nginx reads one buffer of requests), so depths in the
/// thousands only queue requests in the kernel and measure that queue.
pub const MAX_PIPELINE: usize = 1024;

impl RunSpec {
    /// The pipeline's depth against everything else the run asks for.
    pub(super) fn check_pipeline(&self) -> Result<(), ConfigError> {
        let depth = self.pipeline;
        if depth == 0 {
            return Err(reject(
                "pipeline",
                "must be at least 1 (1: no pipelining); try --pipeline 16",
            ));
        }
        if depth > MAX_PIPELINE {
            return Err(reject(
                "pipeline",
                format!(
                    "{depth} requests written ahead on a connection, more than loadlab \
                     pipelines ({MAX_PIPELINE}); servers read a few ahead at most (TechEmpower \
                     pipelines 16): give a smaller depth, with more connections (-c)"
                ),
            ));
        }
        if depth == 1 {
            return Ok(());
        }
        let concurrent = depth.saturating_mul(self.connections.unwrap_or(1));
        if concurrent > MAX_CONNECTIONS {
            return Err(reject(
                "pipeline",
                format!(
                    "{} connections x {depth} pipelined is {concurrent} requests at once, more \
                     than one loadlab carries ({MAX_CONNECTIONS}): give fewer, or run several \
                     loadlab processes (shards)",
                    self.connections.unwrap_or(1)
                ),
            ));
        }
        let multiplexed = if self.grpc.is_some() {
            Some("gRPC runs over HTTP/2")
        } else if self.http3 {
            Some("HTTP/3 carries requests on concurrent streams")
        } else if self.http2 {
            Some("HTTP/2 carries requests on concurrent streams")
        } else {
            None
        };
        if let Some(why) = multiplexed {
            return Err(reject(
                "pipeline",
                format!(
                    "is HTTP/1.1's; {why}, which already keeps several requests in flight on a \
                     connection: give --streams {depth} instead"
                ),
            ));
        }
        if !self.keepalive {
            return Err(reject(
                "pipeline",
                "writes requests ahead on a connection that stays open; drop --no-keepalive",
            ));
        }
        if self.scenario.is_some() || self.pace.is_some() || self.new_connection_share.is_some() {
            return Err(reject(
                "pipeline",
                "does not apply to a scenario (nor to --pace or --new-connection-share, run as \
                 one): a virtual user sends its steps one after another, each may need the \
                 last one's answer (captures, checks, cookies); give more users (-c) instead",
            ));
        }
        if self.closed_stages {
            return Err(reject(
                "pipeline",
                "cannot stage connections yet; drop --stages --closed (a closed loop with -c, \
                 or an open loop's --rate or --stages, pipeline)",
            ));
        }
        let method = self.method.to_ascii_uppercase();
        if matches!(method.as_str(), "POST" | "PATCH" | "CONNECT") {
            return Err(reject(
                "pipeline",
                format!(
                    "pipelines only idempotent methods (RFC 9112 9.3.2): requests a server \
                     closes on unanswered are sent again, and a {method} sent twice may act \
                     twice; use GET, HEAD, PUT, DELETE or OPTIONS, or drop --pipeline"
                ),
            ));
        }
        let expects = self.headers.iter().any(|h| {
            h.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("expect")
                    && value.trim().eq_ignore_ascii_case("100-continue")
            })
        });
        if expects {
            return Err(reject(
                "pipeline",
                "cannot be combined with Expect: 100-continue, whose body waits for the \
                 server's answer while pipelined requests would not: drop the header or \
                 --pipeline",
            ));
        }
        Ok(())
    }
}
