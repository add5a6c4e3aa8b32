//! A gRPC run is an HTTP/2 run whose request is the call's: a POST to
//! `/package.Service/Method` carrying the framed message and gRPC's header fields. Here the
//! spec is checked for what gRPC cannot take (a method, a body, HTTP/1.1 or HTTP/3, a
//! scenario, a stream's schedule longer than --timeout) and rewritten into that HTTP/2
//! spec, which the usual checks then validate.

use super::{reject, ConfigError, RunSpec};
use crate::grpc::{Call, RESERVED_HEADERS};

impl RunSpec {
    /// This spec as the plain HTTP/2 run that carries `call` (its `grpc` left out).
    pub(super) fn as_grpc_http2(&self, call: &Call) -> Result<RunSpec, ConfigError> {
        let conflicts = [
            (self.http3, "http3", "gRPC runs over HTTP/2; drop --http3"),
            (
                self.scenario.is_some(),
                "scenario",
                "a scenario's steps are HTTP requests; drop --grpc or --scenario",
            ),
            (
                !self.body.is_empty(),
                "body",
                "a gRPC call's message is --data or --data-file, not --body",
            ),
            (
                self.method != "GET" && self.method != "POST",
                "method",
                "every gRPC call is a POST; drop -m",
            ),
            (
                !self.paths.is_empty(),
                "paths",
                "a gRPC call's path is its method (--grpc)",
            ),
            (
                !self.keepalive,
                "keepalive",
                "gRPC keeps its connections; drop --no-keepalive",
            ),
            (
                self.pace.is_some() || self.new_connection_share.is_some(),
                "pace",
                "--pace and --new-connection-share run through scenarios, which gRPC does not \
                 yet; drop them",
            ),
        ];
        for (conflict, setting, why) in conflicts {
            if conflict {
                return Err(reject(setting, why));
            }
        }
        if let Some(d) = call.deadline {
            if d > self.timeout {
                return Err(reject(
                    "deadline",
                    format!(
                        "{d:?} is longer than --timeout {:?}: loadlab would give up on each \
                         call before the server's deadline; raise --timeout or shorten \
                         --deadline",
                        self.timeout
                    ),
                ));
            }
        }
        if let (Some(interval), Some(m)) = (call.message_interval, call.messages) {
            // The whole call is bounded by --timeout: its schedule must fit in it.
            let span = interval.saturating_mul(u32::try_from(m - 1).unwrap_or(u32::MAX));
            if span >= self.timeout {
                return Err(reject(
                    "grpc_message_rate",
                    format!(
                        "{m} messages at this rate take {span:?}, not less than --timeout {:?}, \
                         which bounds a whole call: raise --timeout, the rate, or lower \
                         --grpc-messages",
                        self.timeout
                    ),
                ));
            }
        }
        let mut headers = Vec::with_capacity(self.headers.len() + call.headers.len());
        for raw in &self.headers {
            let name = raw.split(':').next().unwrap_or("").trim();
            if let Some(own) = RESERVED_HEADERS
                .iter()
                .find(|h| h.eq_ignore_ascii_case(name))
            {
                return Err(reject(
                    "headers",
                    format!(
                        "`{own}` is set by the gRPC call itself (--deadline sets grpc-timeout, \
                         --compression grpc-encoding); drop -H '{raw}'"
                    ),
                ));
            }
            headers.push(raw.clone());
        }
        headers.extend(call.headers.iter().map(|(k, v)| format!("{k}: {v}")));
        let url = self.effective_url();
        let origin = url.trim_end_matches('/');
        if origin.matches('/').count() > 2 {
            return Err(reject(
                "url",
                format!(
                    "`{url}` has a path; a gRPC call's path is its method: give the server's \
                     origin, e.g. http://127.0.0.1:50051"
                ),
            ));
        }
        Ok(RunSpec {
            url: format!("{origin}{}", call.path),
            method: "POST".into(),
            headers,
            body: call.body.to_vec(),
            http2: true,
            grpc: None,
            ..self.clone()
        })
    }
}
