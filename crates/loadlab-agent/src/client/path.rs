//! The path check from the coordinator's side (issue 52): one agent listens, another
//! checks the path to it, and the goodput both ways comes back. Nothing here moves the bulk
//! bytes: the two agents do, between their own hosts.

use super::{AgentClient, ClientError, Result};
use crate::protocol::path::{PathCheck, PathGoodput, PathListen, PathTicket};
use std::time::Duration;

impl AgentClient {
    /// `POST /v1/path/listen`.
    pub fn path_listen(&mut self, request: &PathListen) -> Result<PathTicket> {
        let body = serde_json::to_vec(request).expect("a path listen encodes");
        self.call("POST", "/v1/path/listen", Some(body), self.timeout)
    }

    /// `POST /v1/path/check`: waits for both transfers (each at most `ms`) and the connects.
    pub fn path_check(&mut self, request: &PathCheck) -> Result<PathGoodput> {
        let body = serde_json::to_vec(request).expect("a path check encodes");
        let wait = self.timeout + Duration::from_millis(2 * request.ms);
        self.call("POST", "/v1/path/check", Some(body), wait)
    }
}

/// The path between `listener`'s host and `checker`'s, measured both ways: `down` is from
/// the listener to the checker. The checker connects to the listener's host as this client
/// reached it. An agent without the endpoints (404) is an error naming the fix.
pub fn measure_path(
    listener: &mut AgentClient,
    checker: &mut AgentClient,
    bytes: u64,
    ms: u64,
) -> Result<PathGoodput> {
    let older = |e: ClientError, who: &AgentClient| match e.status() {
        Some(404) => ClientError::Invalid(format!(
            "the agent at {} has no path check (an older loadlab): run the same version on \
             every host",
            who.endpoint.url
        )),
        _ => e,
    };
    let ticket = listener
        .path_listen(&PathListen { bytes, ms })
        .map_err(|e| older(e, listener))?;
    checker
        .path_check(&PathCheck {
            host: listener.host.clone(),
            port: ticket.port,
            ticket: ticket.ticket,
            bytes,
            ms,
        })
        .map_err(|e| older(e, checker))
}
