//! Capacity: the highest load a service sustains within its objectives, and the whole
//! latency-throughput curve.
//!
//! A search ([`run_search`]) probes an open loop at rising rates through one session (the
//! server stays up between probes), judges each probe on the objectives, on errors, on
//! keeping up and on queue growth within the probe, and narrows to the boundary; a sweep
//! ([`run_sweep`]) measures a list of rates or connection counts and marks the knee.
//!
//! # Layout
//!
//! - [`objective`]: `--slo` and `--until` as written.
//! - [`probe`]: a probe's figures from its result, and the judgment on them (pure).
//! - [`path_evidence`]: one probe's generators' paths judged by the path rule (kept in the
//!   probe's record).
//! - [`path`]: the search's verdict over the records when a queue on a path, not the
//!   server, held the load back.
//! - [`search`]: what to probe next and when to stop (pure, tested on tables).
//! - [`sweep`]: the knee of a curve (pure).
//! - [`variable`]: what a search varies (a rate, or held WebSocket connections) on each
//!   probe's load.
//! - [`driver`]: probes run through a [`loadlab_session::Session`], with a budget and a stop.
//! - [`report`]: the document a search or sweep leaves, and its terminal table.
//!
//! This crate must not print, read flags or write files: progress comes back through
//! [`driver::Events`], and the document is returned.

pub mod driver;
pub mod objective;
pub mod path;
pub mod path_evidence;
pub mod probe;
pub mod report;
pub mod search;
pub mod sweep;
pub mod variable;

pub use driver::{run_search, run_sweep, Events, Loads, ProbeShape, SearchSpec, Stop, SweepSpec};
pub use objective::{parse_slo, parse_until, Metric, Objective};
pub use probe::{judge, Criteria, Judgment, Measure};
pub use report::{CapacityReport, ProbeRecord};
pub use search::{Finding, Outcome, Policy, Step, Unit, Verdict};
pub use variable::Variable;
