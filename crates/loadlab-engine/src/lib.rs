//! loadlab's load engine.
//!
//! # Layout
//!
//! - [`config`]: what a user asked for ([`RunSpec`]) and the checked form the engine runs
//!   ([`RunConfig`]). Every rejection names the flag and the fix.
//! - [`grpc`]: gRPC calls: `.proto` files compiled at run time, the request message from
//!   JSON, the five-byte framing, status codes as failure classes; sent on the HTTP/2
//!   engine's connections (`engine::h2::grpc` reads the answers).
//! - [`ws`]: WebSocket runs (`ws://`, `wss://`): echo, held connections, connection storms;
//!   tungstenite's errors and close codes as failure classes (`engine::ws` drives them).
//! - [`http1`]: the request, encoded once; an incremental response parser that finds where
//!   each response ends without copying bodies.
//! - [`engine`]: worker threads, each a single-threaded event loop driving its connections
//!   in a closed loop; [`RunControl`] stops a run and reads its progress.
//! - [`stats`]: per-thread recorders (HDR histograms, counters, a 100 ms timeline), merged
//!   after the run; [`steps`]: a scenario's per-step figures, kept beside them.
//! - [`error`]: failure classes; a failed request is data, never an early return.
//! - [`summary`]: the raw outcome summarised into the result document (which is
//!   `loadlab-result`'s, re-exported here as [`result`]); [`verdicts`]: its conclusions;
//!   [`cold_start`]: the first requests against the rest.
//! - [`totals`]: running totals over finished intervals (a spilled run's figures);
//!   [`collector`]: each finished interval handed to a sink as the run goes, merged across
//!   threads; [`timeline`]: one interval of the result's timeline.
//! - [`alt_svc`]: the `Alt-Svc` header (RFC 7838), read for the server's HTTP/3 offer.
//! - [`sys`]: the operating system's limits and clocks.
//! - [`tls`]: the TLS client configuration (rustls) and its errors.
//! - [`shard`]: one shard of a run spread over several loadlab processes: its share, the
//!   common start time, the clock's error.
//!
//! The engine knows nothing of terminals, flags or output formats: that is the CLI's and the
//! report crate's business.

pub mod alt_svc;
pub mod cold_start;
pub mod config;
pub mod engine;
pub mod error;
pub mod grpc;
pub mod http1;
pub mod summary;
pub mod verdicts;
pub mod ws;

/// The result document, from its own crate.
pub use loadlab_result as result;
pub mod buckets;
pub mod collector;
pub mod schedule;
pub mod shard;
pub mod stats;
pub mod steps;
pub mod sys;
pub mod timeline;
pub mod tls;
pub mod totals;

pub use config::{RunConfig, RunSpec, ScenarioRun, Stop};
pub use engine::{
    run, Abandoned, EngineError, PartObserver, ProgressSnapshot, RunControl, RunOutcome,
};
pub use error::ErrorClass;
pub use loadlab_result::RunResult;
/// Scenario files, from their own crate.
pub use loadlab_scenario as scenario;
pub use summary::{plan, summarize};
