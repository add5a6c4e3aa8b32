//! loadlab's result document, as data.
//!
//! A run's result is what every later step reads: the store keeps it, comparisons and reports
//! read it, shards are merged from it. It lives here, apart from the engine that produces it,
//! so that reading a result never pulls in an HTTP stack or a runtime.
//!
//! # Layout
//!
//! - [`run`]: [`RunResult`] and its parts (load model, phases, timeline, generator health,
//!   environment, first requests), with [`SCHEMA_VERSION`].
//! - [`scenario`]: a scenario run's per-step figures ([`scenario::ScenarioSummary`]).
//! - [`grpc`]: a gRPC run's method, messages and per-message times ([`grpc::GrpcSummary`]).
//! - [`ws`]: a WebSocket run's pushes, the gaps between them, held connections
//!   ([`ws::WsSummary`]).
//! - [`server`]: the server's side ([`ServerReport`]): limits, start-up, CPU and memory.
//! - [`metrics`]: the server's own Prometheus metrics read during a run.
//! - [`latency`]: a latency distribution summarised in microseconds.
//! - [`cliff`]: percentiles on a cliff: a gap between a fast and a slow mode, and the share
//!   of requests beyond it.
//! - [`histogram`]: the histogram bounds and codec (HdrHistogram's compressed V2, base64).
//! - [`failure`]: the failure classes' names and explanations.
//! - [`path`]: the path between each generator and the server, from both ends' TCP stacks,
//!   and the rule that tells a queue on the path from one in the server.
//! - [`machine`]: the machine and the wire around a run: preflight checks, the kernel's TCP
//!   counters, the shaped link.
//! - [`attach`]: joins a server report to a run's result, with the verdicts it calls for.
//! - [`merge`]: an exact merge of several results (shards run together, or repetitions):
//!   histograms added, counts summed, timelines aligned, each part's figures kept.
//! - [`shards`]: the shards of one run merged: one run or refused, missing and failed shards
//!   named, timelines aligned by wall clock, the spread of their start times.
//!
//! This crate must not measure, launch or print anything: it depends on serde and
//! hdrhistogram only.

pub mod attach;
pub mod cliff;
pub mod failure;
pub mod format;
pub mod grpc;
pub mod health;
pub mod histogram;
pub mod latency;
pub mod machine;
pub mod median;
pub mod merge;
pub mod metrics;
pub mod parts;
pub mod path;
pub mod run;
pub mod scenario;
pub mod server;
pub mod shards;
pub mod ws;

pub use attach::attach_server;
pub use cliff::Cliff;
pub use histogram::{decode_histogram, encode_histogram, new_histogram};
pub use latency::LatencySummary;
pub use machine::{Check, CheckStatus, KernelCounters, LinkReport};
pub use median::median;
pub use merge::{
    merge, merge_concurrent_intervals, merge_repetitions, merge_with, MergeError, Mode,
};
pub use metrics::ServerMetrics;
pub use run::*;
pub use server::{AgentReport, ServerReport};
pub use shards::{merge_shards, ShardMergeError, START_SPREAD_BOUND_S};
