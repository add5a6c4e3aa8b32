//! The probe (issue 7): the server's side of a measurement.
//!
//! - [`limits`]: what a user asks for (`--cpus 0.08 --memory 128Mi --pin 1`), parsed and checked.
//! - [`cgroup`]: a cgroup of loadlab's own (v2 where the controllers are there, v1 otherwise)
//!   that applies those limits, holds every process of the server, charges its memory, counts
//!   throttling and OOM kills, and is deleted when the run ends, including after Ctrl-C.
//! - [`affinity`]: the CPUs a process may run on, and the processes serving a local port.
//! - [`sockets`]: the bytes the server sent its clients, from the kernel's socket counters.
//! - [`tcp_info`]: the fields of a connection's `tcp_info` (round trips, bytes, chrono stats).
//! - [`procfs`]: per-process figures from `/proc` (RSS, threads, descriptors, CPU time through the process CPU clock).
//! - [`launch`]: starts a server inside its cgroup, times its start-up to the first good
//!   health check, and kills it (by PID) when dropped.
//! - [`sampler`]: a thread that samples the server and loadlab itself every 100 ms and notices
//!   when the server dies.
//! - [`sample_log`]: the run's samples kept for its report out of memory (an anonymous file,
//!   varint differences), so that a day-long run's memory stays flat.
//! - [`shell`]: the `sh -c` line a launched command runs as (a lone command is `exec`ed).
//! - [`report`]: the samples as the result carries them: a series aligned with the latency
//!   timeline and p50/p99/max summaries (pure functions, tested with synthetic samples).
//!
//! Linux only in substance; elsewhere launching works without limits and sampling says it is
//! unsupported instead of failing.
//!
//! It must not drive load, open a network connection, or know the engine or the result's
//! verdicts: it sees the server's side and hands back what it read.

pub mod affinity;
pub mod cgroup;
pub mod launch;
pub mod limits;
pub mod pidfd;
pub mod procfs;
pub mod report;
pub mod sample_log;
pub mod sampler;
pub mod shell;
pub mod sockets;
pub mod tcp_info;

pub use cgroup::Cgroup;
pub use launch::{Launch, Launched, NetnsEntry, Readiness};
pub use limits::{Limits, LimitsMode};
pub use report::ServerReport;
pub use sampler::{Sample, Sampler, Source};

/// Everything that stops a probe from starting. Each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot apply {what}; run loadlab as root on a Linux host with cgroups, or pass --limits best-effort to run without the limits that cannot hold (the result says which held)")]
    LimitUnavailable { what: String },
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(
        "the server `{command}` did not become ready: {message}{}",
        tail(stderr_tail)
    )]
    Startup {
        command: String,
        message: String,
        stderr_tail: Vec<String>,
    },
    #[error("cannot attach to {what}: {reason}")]
    Attach { what: String, reason: String },
}

fn tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last output:\n  {}", lines.join("\n  "))
    }
}
