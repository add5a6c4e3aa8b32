//! The generator's own health: over the whole run ([`GeneratorHealth`], its verdicts' inputs,
//! its link and its limits) and per interval ([`IntervalHealth`], what a fleet's page shows
//! for each generator as the run goes).

use crate::run::is_zero_u64;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorHealth {
    /// CPU time of loadlab's worker threads (not the whole process: a server embedded in the
    /// same process is not billed to the generator).
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// Generator CPU seconds (user + system) per 100,000 completed requests.
    pub cpu_s_per_100k_requests: Option<f64>,
    /// Per worker thread: CPU time over wall time. Near 1.0, the generator was the limit.
    pub thread_busy: Vec<f64>,
    /// Per worker thread: seconds it was ready to run but waited for a CPU that another task
    /// held (the kernel's run-queue wait, from the start to the end). Requests due meanwhile
    /// went out late. Empty where the kernel does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_waited_s: Vec<f64>,
    pub nofile: Option<NofileLimit>,
    /// Whether the PM QoS CPU latency was held at 0 during the run ("held"), or why not.
    pub pm_qos: String,
    /// Share of all CPU time the hypervisor stole, worst interval.
    pub max_steal: Option<f64>,
    /// Busy-polling: CPU seconds the worker threads spent polling with nothing to do (not
    /// counted in `thread_busy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_poll_idle_s: Option<f64>,
    /// The generator's own link over the run (a fleet's generators measure theirs): the
    /// busiest interface, what it carried and what it can carry. Saturated, it was the
    /// load's limit, not the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkUse>,
}

/// What a generator's link carried over a run, and what it can carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkUse {
    pub interface: String,
    pub received_bits_per_s: f64,
    pub sent_bits_per_s: f64,
    /// What the link can carry, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bits_per_s: Option<f64>,
    /// How the limit is known: "tbf qdisc", "NIC speed".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_source: Option<String>,
    /// Packets the link's own qdisc dropped over the run: it was offered more than it
    /// carries.
    #[serde(default)]
    pub dropped_packets: u64,
    /// It carried at least nine tenths of its limit in one direction, or dropped packets
    /// at its own qdisc.
    pub saturated: bool,
}

/// The `nofile` limit before and after loadlab raised its soft limit to the hard one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NofileLimit {
    pub soft_before: u64,
    pub soft: u64,
    pub hard: u64,
}

/// A generator's health over one interval: the per-interval counterpart of
/// [`GeneratorHealth`]'s `thread_busy` and of the measured phase's `scheduler_lag_us`, from
/// the same measurements. A merge (a fleet's shards, downsampling, repetitions) keeps each
/// figure exact: CPU seconds and late requests are summed, the busiest thread and the worst
/// lag are the most of any part's; nothing is averaged, so one late generator is never
/// diluted by punctual ones (each generator's own stays in its row, and in its result).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IntervalHealth {
    /// CPU seconds (user and system) of the worker threads between the interval's two
    /// hand-overs, busy-polling's idle spins left out (summed over threads and generators):
    /// over `duration_s`, the cores the load used.
    pub cpu_s: f64,
    /// The busiest worker thread's CPU over the interval's length (0 to 1; near 1 that thread
    /// was the limit): the most of any thread.
    pub busiest_thread: f64,
    /// Open loop: the most any request completed in this interval had waited, once due,
    /// before the generator noticed it (its scheduler lag), microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_max_us: Option<f64>,
    /// Open loop: requests completed in this interval that the generator noticed more than
    /// 1 ms after they were due (the late-generator verdict's threshold); more than 1% of
    /// `completed` means the interval's scheduler lag p99 was over 1 ms.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub late: u64,
}

impl IntervalHealth {
    /// `a` and `b` over the same time merged (see the type), `None` only when neither was
    /// measured.
    pub fn merge(a: Option<IntervalHealth>, b: Option<IntervalHealth>) -> Option<IntervalHealth> {
        match (a, b) {
            (Some(a), Some(b)) => Some(IntervalHealth {
                cpu_s: a.cpu_s + b.cpu_s,
                busiest_thread: a.busiest_thread.max(b.busiest_thread),
                lag_max_us: match (a.lag_max_us, b.lag_max_us) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                },
                late: a.late + b.late,
            }),
            (a, b) => a.or(b),
        }
    }
}
