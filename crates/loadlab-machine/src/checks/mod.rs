//! The checks: pure functions of what the machine is ([`Readings`]) and what the run plans
//! ([`PlannedRun`]). Each says PASS, WARN or FAIL, what the machine has, what the run needs,
//! and the command that fixes it. No I/O here: the tests feed tables of readings.
//!
//! FAIL means the run as planned cannot hold (more connections than descriptors or ports, a
//! full conntrack table, limits no cgroup controller can apply); WARN means it can run but
//! its figures may suffer (a small backlog, a varying clock, a busy neighbour).

use crate::plan::PlannedRun;
use crate::readings::Readings;
use loadlab_result::{Check, CheckStatus};

mod busy;
mod host;
mod network;
mod udp;

pub use busy::busy_processes;
pub use host::{cgroup, cpu_governor, cpu_idle, cpu_sharing, link, stale_links, steal};
pub use network::{conntrack, ephemeral_ports, listen_backlog, open_files};
pub use udp::udp_buffers;

/// Descriptors loadlab needs beyond one per connection (the runtime, stdio, files).
pub const SPARE_DESCRIPTORS: u64 = 64;
/// How long a closed connection's end stays in TIME_WAIT on Linux (`TCP_TIMEWAIT_LEN`, fixed
/// in the kernel).
pub const TIME_WAIT_S: u64 = 60;
/// Share of a resource in use above which a check warns before it fails.
pub const WARN_SHARE: f64 = 0.8;
/// Steal above this share of CPU time warns (as the run's own steal warning does).
pub const STEAL_WARN: f64 = 0.05;
/// A process using more than this share of a CPU while sampling is "busy".
pub const BUSY_CORES: f64 = 0.10;
/// Idle states that take longer than this to leave cost a visible share of a fast request.
pub const DEEP_IDLE_US: u64 = 10;

/// Every check, in a fixed order.
pub fn all(r: &Readings, p: &PlannedRun) -> Vec<Check> {
    vec![
        open_files(r, p),
        ephemeral_ports(r, p),
        listen_backlog(r, p),
        conntrack(r, p),
        udp_buffers(r, p),
        cgroup(r, p),
        cpu_governor(r),
        cpu_idle(r, p),
        steal(r),
        cpu_sharing(r, p),
        busy_processes(r),
        stale_links(r),
        link(r, p),
    ]
}

fn check(
    name: &str,
    status: CheckStatus,
    found: String,
    needs: String,
    fix: Option<String>,
) -> Check {
    Check {
        name: name.into(),
        status,
        found,
        needs,
        fix,
    }
}

/// `1,234,567`.
pub use loadlab_result::format::thousands;

/// The worst status among `checks` (PASS for none).
pub fn worst(checks: &[Check]) -> CheckStatus {
    checks
        .iter()
        .map(|c| c.status)
        .max()
        .unwrap_or(CheckStatus::Pass)
}

/// One line per check, for a terminal: `WARN listen_backlog: found; needs ...; fix: ...`.
pub fn line(c: &Check) -> String {
    format!(
        "{} {}: {}; the run needs {}{}",
        c.status.label(),
        c.name,
        c.found,
        c.needs,
        c.fix
            .as_ref()
            .map_or(String::new(), |f| format!("; fix: {f}"))
    )
}

#[cfg(test)]
mod tests;
