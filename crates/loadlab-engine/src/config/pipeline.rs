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

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(spec: RunSpec) -> String {
        match spec.validate() {
            Err(e) => {
                assert_eq!(e.setting, "pipeline", "{e}");
                e.message
            }
            Ok(_) => panic!("accepted"),
        }
    }

    fn spec(pipeline: usize) -> RunSpec {
        RunSpec {
            url: "http://127.0.0.1:8080/".into(),
            pipeline,
            ..RunSpec::default()
        }
    }

    #[test]
    fn depths_out_of_range_are_refused_with_the_fix() {
        assert!(refusal(spec(0)).contains("try --pipeline 16"));
        assert!(refusal(spec(MAX_PIPELINE + 1)).contains("more than loadlab pipelines (1024)"));
        let many = RunSpec {
            connections: Some(10_000),
            ..spec(1_000)
        };
        assert!(refusal(many).contains("10000 connections x 1000 pipelined"));
        assert_eq!(spec(16).validate().unwrap().pipeline, 16);
        assert_eq!(spec(1).validate().unwrap().pipeline, 1);
    }

    #[test]
    fn what_pipelining_does_not_apply_to_is_refused_with_why() {
        let h2 = RunSpec {
            http2: true,
            ..spec(16)
        };
        assert!(refusal(h2).contains("give --streams 16 instead"));
        let h3 = RunSpec {
            url: "https://127.0.0.1:8443/".into(),
            http3: true,
            ..spec(8)
        };
        assert!(refusal(h3).contains("HTTP/3 carries requests on concurrent streams"));
        let close = RunSpec {
            keepalive: false,
            ..spec(16)
        };
        assert!(refusal(close).contains("drop --no-keepalive"));
        let post = RunSpec {
            method: "post".into(),
            ..spec(16)
        };
        assert!(refusal(post).contains("RFC 9112 9.3.2"));
        let expect = RunSpec {
            method: "PUT".into(),
            headers: vec!["Expect: 100-continue".into()],
            ..spec(16)
        };
        assert!(refusal(expect).contains("Expect: 100-continue"));
        let paced = RunSpec {
            pace: Some(std::time::Duration::from_secs(1)),
            ..spec(16)
        };
        assert!(refusal(paced).contains("a virtual user sends its steps one after another"));
        // Staged connections pipeline, each while its stage has it working.
        let staged = RunSpec {
            stages: Some("1s:2, 1s:4".into()),
            closed_stages: true,
            ..spec(16)
        };
        assert_eq!(staged.validate().unwrap().pipeline, 16);
        // HTTP/1.1 over TLS pipelines too.
        let tls = RunSpec {
            url: "https://127.0.0.1:8443/".into(),
            ..spec(16)
        };
        assert_eq!(tls.validate().unwrap().pipeline, 16);
    }
}
