//! Experiments: the question "is B faster than A, by how much, how sure are we?" in one
//! command.
//!
//! # Layout
//!
//! - [`file`]: experiment files (TOML), checked into an [`Experiment`].
//! - [`targets`]: the lab targets' manifests, read before planning: what the arms' protocols
//!   need of them (HTTP/3), and [`warmup`], each one's recommended warm-up.
//! - [`plan`]: arms (variants under the matrix's axis values) and runs in randomized blocks,
//!   with a hash that says whether an interrupted experiment can be resumed.
//! - [`runner`]: runs the plan through sessions (verifying every target and URL first) and
//!   stores each run as it ends.
//! - [`metrics`]: the figures compared, one value per run.
//! - [`analysis`]: comparisons of arms (exact Mann-Whitney and Hodges-Lehmann, Holm across
//!   metrics), with noise flags and their likely causes.
//! - [`gates`]: `--fail-if` expressions for CI.
//! - [`junit`]: gates as a JUnit XML report.
//!
//! The flow is one way: file, plan, sessions, store, analysis. This crate must not print or
//! parse flags: progress comes back as [`runner::Event`]s, results as data.

pub mod analysis;
pub mod file;
pub mod gates;
pub mod junit;
pub mod metrics;
pub mod plan;
pub mod runner;
pub mod table;
pub mod targets;
pub mod warmup;

pub use file::Experiment;
pub use plan::Plan;
