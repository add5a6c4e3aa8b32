//! A scenario run's own figures: every step's latency, statuses, failures, checks and bytes,
//! and the whole iteration's time. Steps are named by the scenario and described by their
//! templates (`GET /blog/{{BLOG_ID}}`), never by the values sent: values from `--var`,
//! feeders and captures may be secrets.

use crate::latency::LatencySummary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `sequence` (every step in order) or `mix` (one step per iteration, by weight).
    pub mode: String,
    /// Closed loop: virtual users, each with its own connection and cookie jar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_users: Option<usize>,
    /// An open loop of iterations (`--rate`, `--stages`): the iterations per second its
    /// schedule offered, on average over the measured time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_iterations_per_s: Option<f64>,
    /// An open loop: the most iterations each running at once (`--max-connections`), each a
    /// new user on a connection kept alive from one iteration to the next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_slots: Option<usize>,
    /// `--pace`: each virtual user's connection sends one request per this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pace_s: Option<f64>,
    /// With `--pace`: the request rate the pacing offers (virtual users / pace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_per_s: Option<f64>,
    /// Share of requests sent on a new connection (`Connection: close`); 0 is keep-alive.
    pub new_connection_share: f64,
    /// Iterations that ran every step (in a mix: their one step) in the measured time.
    pub iterations: u64,
    /// Of those, iterations in which some step failed.
    pub iterations_failed: u64,
    pub iterations_per_s: f64,
    /// From an iteration's first send (or due time; in an open loop, its slot in the
    /// schedule) to its last step's end; think times
    /// between steps included, the one after the last step not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_us: Option<LatencySummary>,
    /// The iteration times (nanoseconds, compressed V2, base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_histogram: Option<String>,
    pub steps: Vec<StepSummary>,
}

/// One step over the measured part of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub name: String,
    /// The request as written: `GET /blog/{{BLOG_ID}}`, or `page of 19 requests`.
    pub request: String,
    /// Requests sent (a page counts each of its requests).
    pub issued: u64,
    /// Requests that passed: a full response, and every check held.
    pub completed: u64,
    /// Requests that failed: see `errors` (`status`, `check_failed` and transport classes).
    pub failed: u64,
    pub per_second: f64,
    /// Response time of the step: a request from when it was due to its last byte; a
    /// page, from its first request's start to its last response. Absent when none passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<LatencySummary>,
    /// The step's response times (nanoseconds, compressed V2, base64).
    pub histogram: String,
    /// A page: each of its requests' own response time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_latency_us: Option<LatencySummary>,
    /// A page: its requests' own response times (nanoseconds, compressed V2, base64), so
    /// that merged runs can add them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_histogram: Option<String>,
    /// Responses by status code (checks failed or not).
    pub status_codes: BTreeMap<String, u64>,
    /// Failed requests by class.
    pub errors: BTreeMap<String, u64>,
    /// The step's checks then captures, each with its failures and the first message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckSummary>,
    pub bytes: StepBytes,
    /// Responses by the `Content-Encoding` they came with (`identity` when none).
    pub content_encodings: BTreeMap<String, u64>,
    /// A streaming gRPC step: its messages each way, over every call (a `--grpc` run's
    /// `messages_sent` and `messages_received`); absent on any other step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<StepMessages>,
}

/// A streaming gRPC step's messages: request messages sent, answer messages read whole.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepMessages {
    pub sent: u64,
    pub received: u64,
}

impl StepMessages {
    /// Adds `other` into these (a merge's sum, exact).
    pub fn add(&mut self, other: &StepMessages) {
        self.sent += other.sent;
        self.received += other.received;
    }

    /// `a` and `b` added, `None` only when neither counted any.
    pub fn sum(a: Option<StepMessages>, b: Option<StepMessages>) -> Option<StepMessages> {
        match (a, b) {
            (Some(mut a), Some(b)) => {
                a.add(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    /// `status 404`, `body contains "ok"`, `$.ok == true`, `capture TOKEN`.
    pub check: String,
    pub failed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
}

/// A step's bytes: as they crossed the wire, and what the bodies weighed decoded (a lost
/// compression shows as `received` near `decoded`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepBytes {
    pub sent: u64,
    pub received: u64,
    /// `received` with every compressed body counted at its decompressed size.
    pub decoded: u64,
}
