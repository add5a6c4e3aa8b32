//! One method per agent endpoint (hello, host, clock, sessions, sampling, samples), each a
//! call with its path, body, timeout and the most bytes its reply may have. How a call goes
//! over the wire is in `transport`.

use super::transport::{MAX_LOAD_BATCH_BYTES, MAX_SAMPLES_REPLY_BYTES};
use super::{AgentClient, ClientError, Result};
use crate::clock::{Estimate, Exchange, LocalClock};
use crate::protocol::load::{LoadBatch, LoadStarted, StartLoad};
use crate::protocol::{
    self, ClockStamps, Closed, Hello, HostInfo, Lease, OpenSession, Opened, SampleBatch,
    StartSampling, Stopped,
};
use std::time::Duration;

impl AgentClient {
    pub fn hello(&mut self) -> Result<Hello> {
        self.call("GET", "/v1/hello", None, self.timeout)
    }

    pub fn host_info(&mut self, port: Option<u16>) -> Result<HostInfo> {
        let path = match port {
            Some(p) => format!("/v1/host?port={p}"),
            None => "/v1/host".to_string(),
        };
        self.call("GET", &path, None, self.timeout)
    }

    /// A burst of `n` clock exchanges; the estimate from the fastest.
    pub fn estimate_clock(&mut self, clock: &LocalClock, n: usize) -> Result<Estimate> {
        // The connection is made (and its handshake paid) before the first exchange.
        self.ensure_connected()?;
        let mut burst = Vec::with_capacity(n);
        for _ in 0..n.max(1) {
            let mut t1 = 0;
            let mut t4 = 0;
            let stamps: ClockStamps = self.call_timed(
                "POST",
                "/v1/clock",
                Some(b"{}".to_vec()),
                &mut t1,
                &mut t4,
                clock,
            )?;
            burst.push(Exchange {
                t1_ns: t1,
                t2_ns: stamps.t2_ns,
                t3_ns: stamps.t3_ns,
                t4_ns: t4,
            });
        }
        Estimate::from_burst(&burst)
            .ok_or_else(|| ClientError::Invalid("no clock exchange was made".into()))
    }

    pub fn open(&mut self, request: &OpenSession) -> Result<Opened> {
        let timeout = self.timeout
            + match &request.server {
                protocol::ServerRequest::Target { launch, .. }
                | protocol::ServerRequest::Exec { launch, .. } => {
                    Duration::from_millis(launch.startup_timeout_ms)
                }
                _ => Duration::ZERO,
            };
        let mut opened: Opened =
            self.call("POST", "/v1/sessions", Some(json(request)?), timeout)?;
        // What the agent says of the server reaches notes and results.
        super::shown(&mut opened.description);
        opened.notes.iter_mut().for_each(super::shown);
        Ok(opened)
    }

    pub fn renew(&mut self, session: &str) -> Result<Lease> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/lease"),
            Some(b"{}".to_vec()),
            self.timeout,
        )
    }

    pub fn start_sampling(&mut self, session: &str, request: &StartSampling) -> Result<Lease> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/sampling"),
            Some(json(request)?),
            self.timeout,
        )
    }

    /// Samples after `after` (a seq), waiting up to `wait` for the first.
    pub fn samples(&mut self, session: &str, after: u64, wait: Duration) -> Result<SampleBatch> {
        self.call_up_to(
            "GET",
            &format!(
                "/v1/sessions/{session}/samples?after={after}&wait_ms={}",
                wait.as_millis()
            ),
            None,
            self.timeout + wait,
            MAX_SAMPLES_REPLY_BYTES,
        )
    }

    pub fn stop_sampling(&mut self, session: &str) -> Result<Stopped> {
        self.call(
            "POST",
            &format!("/v1/sessions/{session}/sampling/stop"),
            Some(b"{}".to_vec()),
            self.timeout,
        )
    }

    /// Starts a shard of a load (the agent's generator role).
    pub fn start_load(&mut self, request: &StartLoad) -> Result<LoadStarted> {
        self.call("POST", "/v1/loads", Some(json(request)?), self.timeout)
    }

    /// The load's intervals after the `after`-th, waiting up to `wait` for a new one.
    pub fn load_batch(&mut self, load: &str, after: u64, wait: Duration) -> Result<LoadBatch> {
        self.call_up_to(
            "GET",
            &format!(
                "/v1/loads/{load}/intervals?after={after}&wait_ms={}",
                wait.as_millis()
            ),
            None,
            self.timeout + wait,
            MAX_LOAD_BATCH_BYTES,
        )
    }

    /// Stops the load now (its result still comes, as a stopped run's).
    pub fn stop_load(&mut self, load: &str) -> Result<serde_json::Value> {
        self.call(
            "POST",
            &format!("/v1/loads/{load}/stop"),
            Some(b"{}".to_vec()),
            self.timeout,
        )
    }

    /// Ends the load and frees the agent.
    pub fn close_load(&mut self, load: &str) -> Result<serde_json::Value> {
        self.call("DELETE", &format!("/v1/loads/{load}"), None, self.timeout)
    }

    pub fn close(&mut self, session: &str) -> Result<Closed> {
        self.call(
            "DELETE",
            &format!("/v1/sessions/{session}"),
            None,
            self.timeout,
        )
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|e| ClientError::Invalid(format!("cannot encode a request to the agent: {e}")))
}
