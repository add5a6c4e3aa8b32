//! The path between a generator and the server, as each end's TCP stack saw it: per
//! timeline interval, the goodput, the round trip against the path's minimum, and (at the
//! sending end) how much of the time the sockets were busy and what held them back. A
//! generator's own connections are always seen (the kernel's `tcp_info`, no agent needed);
//! the server's, when its agent samples them. [`rule`] turns them into a verdict: a queue
//! on the path, not in the server; the server; or not enough evidence to say.
//!
//! Data and pure functions only: the sampling is `loadlab-machine`'s (`path`).

use serde::{Deserialize, Serialize};

pub mod check;
mod fold;
pub mod rule;

pub use fold::{fold, Folded};

pub use check::PathCheck;
pub use rule::{judge, run_verdicts, verdicts, Evidence, PathVerdict};

/// One sample window of one end's sockets: the deltas since the previous sample, and the
/// round trips at the sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PathWindow {
    /// End of the window, seconds from the run's start.
    pub t_s: f64,
    pub dt_s: f64,
    /// Connections seen at the sample.
    pub sockets: u32,
    pub received_bytes: u64,
    /// Bytes sent and acknowledged by the peer.
    pub acked_bytes: u64,
    /// The median of the connections' smoothed round trips (`tcpi_rtt`), µs.
    pub rtt_us: Option<f64>,
    /// The lowest of the connections' minimum round trips (`tcpi_min_rtt`), µs.
    pub min_rtt_us: Option<f64>,
    /// The median of the connections' receiver-side estimates (`tcpi_rcv_rtt`), µs.
    pub rcv_rtt_us: Option<f64>,
    /// Sender chrono stats over the window, summed over the connections, µs.
    pub busy_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    /// At the sample, summed over the connections: bytes the application wrote and the
    /// kernel had not sent, and bytes sent or unsent and not yet acknowledged.
    pub notsent_bytes: Option<u64>,
    pub send_queue_bytes: u64,
    /// The connections' delivery rates summed, bytes/s.
    pub delivery_rate: Option<u64>,
    /// Set when this window is several folded into one ([`fold`]): what [`intervals`] needs
    /// to join it exactly as it would have joined them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<Folded>,
}

impl PathWindow {
    /// Socket-time: its connections over its length (a folded window's, summed).
    fn socket_s(&self) -> f64 {
        self.folded
            .map_or(self.sockets as f64 * self.dt_s, |f| f.socket_s)
    }

    /// How many windows' figures a mean over windows counts `value` of this one as: the
    /// windows folded into it that had one, or one.
    fn weight(&self, value: Option<f64>, count: fn(&Folded) -> u32) -> f64 {
        match (value, self.folded) {
            (None, _) => 0.0,
            (Some(_), None) => 1.0,
            (Some(_), Some(f)) => f64::from(count(&f)),
        }
    }
}

/// One end's path figures within one interval of the run's timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PathInterval {
    pub start_s: f64,
    pub duration_s: f64,
    pub warmup: bool,
    /// The most connections seen at once.
    pub sockets: u32,
    /// Bytes per second received, and sent and acknowledged, over all connections.
    pub received_per_s: f64,
    pub acked_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcv_rtt_us: Option<f64>,
    /// The share of the connections' time with data in flight or waiting to be sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_share: Option<f64>,
    /// Of that busy time, the share held back by the congestion window (the network), not
    /// by the peer's receive window nor by the send buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_limited_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notsent_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_queue_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_per_s: Option<f64>,
}

impl PathInterval {
    /// The interval's goodput: the busier direction's bytes per second (responses coming
    /// in, or request bodies going out).
    pub fn goodput_per_s(&self) -> f64 {
        self.received_per_s.max(self.acked_per_s)
    }
}

/// One end of the run's path: a generator's connections (this machine's, or a fleet
/// generator's, named), or the server's, sampled by its agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathReport {
    /// "generator" or "server".
    pub side: String,
    /// The fleet generator this is, by name; `None` for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// "tcp" (the kernel's `tcp_info`) or "quic" (quinn's estimates: round trips only).
    pub transport: String,
    /// The path's lowest round trip over the run, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<f64>,
    /// This generator's median response time over the measured time, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_p50_us: Option<f64>,
    pub intervals: Vec<PathInterval>,
}

/// The windows ending in each timeline interval `(start_s, duration_s, warmup)`, joined:
/// byte counts summed, round trips the mean of the windows' medians, queues at their
/// highest, chrono shares over the windows' time.
pub fn intervals(windows: &[PathWindow], timeline: &[(f64, f64, bool)]) -> Vec<PathInterval> {
    timeline
        .iter()
        .filter_map(|&(start_s, duration_s, warmup)| {
            let end = start_s + duration_s;
            let inside: Vec<&PathWindow> = windows
                .iter()
                .filter(|w| w.t_s > start_s && w.t_s <= end + 1e-9)
                .collect();
            let time: f64 = inside.iter().map(|w| w.dt_s).sum();
            if inside.is_empty() || time <= 0.0 {
                return None;
            }
            // The mean over the windows that have the figure (a folded window counts as the
            // windows it holds that had it).
            let mean = |f: fn(&PathWindow) -> Option<f64>, count: fn(&Folded) -> u32| {
                let (sum, n) = inside.iter().fold((0.0, 0.0), |(sum, n), w| {
                    let weight = w.weight(f(w), count);
                    (sum + f(w).unwrap_or(0.0) * weight, n + weight)
                });
                (n > 0.0).then(|| sum / n)
            };
            // Over the windows that have the figure: one with no connection at its sample
            // (before the load's first, after its last) has no chrono stats, and costs no
            // socket-time either, so it must not blank the interval's.
            let sum = |f: fn(&PathWindow) -> Option<u64>| -> Option<u64> {
                inside.iter().filter_map(|w| f(w)).reduce(|a, b| a + b)
            };
            // Socket-time: each window's connections over its length.
            let socket_us: f64 = inside.iter().map(|w| w.socket_s() * 1e6).sum();
            let busy = sum(|w| w.busy_us);
            let limited = sum(|w| Some(w.rwnd_limited_us? + w.sndbuf_limited_us?));
            Some(PathInterval {
                start_s,
                duration_s,
                warmup,
                sockets: inside.iter().map(|w| w.sockets).max().unwrap_or(0),
                received_per_s: inside.iter().map(|w| w.received_bytes).sum::<u64>() as f64 / time,
                acked_per_s: inside.iter().map(|w| w.acked_bytes).sum::<u64>() as f64 / time,
                rtt_us: mean(|w| w.rtt_us, |f| f.rtt),
                min_rtt_us: inside
                    .iter()
                    .filter_map(|w| w.min_rtt_us)
                    .min_by(f64::total_cmp),
                rcv_rtt_us: mean(|w| w.rcv_rtt_us, |f| f.rcv_rtt),
                busy_share: busy
                    .filter(|_| socket_us > 0.0)
                    .map(|b| (b as f64 / socket_us).min(1.0)),
                network_limited_share: match (busy, limited) {
                    (Some(b), Some(l)) if b > 0 => Some(b.saturating_sub(l) as f64 / b as f64),
                    _ => None,
                },
                notsent_bytes: inside.iter().filter_map(|w| w.notsent_bytes).max(),
                send_queue_bytes: inside.iter().map(|w| w.send_queue_bytes).max(),
                delivery_rate_per_s: mean(|w| w.delivery_rate.map(|r| r as f64), |f| f.delivery),
            })
        })
        .collect()
}

/// The spans `(start_s, duration_s, warmup)` of `timeline`'s intervals merged `group`
/// consecutive ones at a time, the last group possibly shorter: the timeline a run longer
/// than an hour's intervals shows (its merge: the first's start, the durations summed, warm-up
/// only when the group starts and ends in it).
pub fn spans(timeline: &[crate::IntervalSummary], group: u64) -> Vec<(f64, f64, bool)> {
    timeline
        .chunks(group.max(1) as usize)
        .map(|g| {
            let (first, last) = (&g[0], &g[g.len() - 1]);
            let duration_s = g.iter().map(|i| i.duration_s).sum();
            (first.start_s, duration_s, first.warmup && last.warmup)
        })
        .collect()
}

impl PathReport {
    /// A report of `side` from its windows, placed on the run's timeline.
    pub fn of(side: &str, transport: &str, windows: &[PathWindow], run: &crate::RunResult) -> Self {
        PathReport::grouped(side, transport, windows, run, 1)
    }

    /// [`PathReport::of`] on the run's timeline merged `group` intervals at a time ([`spans`]),
    /// as the result shows a timeline past an hour's intervals.
    pub fn grouped(
        side: &str,
        transport: &str,
        windows: &[PathWindow],
        run: &crate::RunResult,
        group: u64,
    ) -> Self {
        let timeline = spans(&run.timeline, group);
        PathReport {
            side: side.into(),
            generator: None,
            transport: transport.into(),
            min_rtt_us: windows
                .iter()
                .filter_map(|w| w.min_rtt_us)
                .min_by(f64::total_cmp),
            response_p50_us: run.measured.latency_us.as_ref().map(|l| l.p50),
            intervals: intervals(windows, &timeline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(t_s: f64, received: u64, rtt: f64, busy: u64, rwnd: u64) -> PathWindow {
        PathWindow {
            t_s,
            dt_s: 0.5,
            sockets: 2,
            received_bytes: received,
            rtt_us: Some(rtt),
            min_rtt_us: Some(rtt / 10.0),
            busy_us: Some(busy),
            rwnd_limited_us: Some(rwnd),
            sndbuf_limited_us: Some(0),
            send_queue_bytes: 10,
            ..PathWindow::default()
        }
    }

    #[test]
    fn windows_join_into_the_timelines_intervals() {
        let windows = [
            w(0.5, 1_000, 100.0, 500_000, 0),
            w(1.0, 3_000, 300.0, 500_000, 250_000),
            w(1.5, 500, 50.0, 0, 0),
        ];
        let out = intervals(
            &windows,
            &[(0.0, 1.0, false), (1.0, 1.0, false), (9.0, 1.0, false)],
        );
        assert_eq!(out.len(), 2, "an interval no window ended in is left out");
        let first = &out[0];
        assert_eq!(first.received_per_s, 4_000.0);
        assert_eq!(first.rtt_us, Some(200.0));
        assert_eq!(first.min_rtt_us, Some(10.0));
        // 2 sockets over 1 s: 2 s of socket time, 1 s of it busy; a quarter of the busy
        // time waited on the peer's window.
        assert_eq!(first.busy_share, Some(0.5));
        assert_eq!(first.network_limited_share, Some(0.75));
        assert_eq!(out[1].network_limited_share, None, "never busy: no share");
        assert_eq!(out[1].goodput_per_s(), 1_000.0);
    }

    /// A window with no connection at its sample (the load not yet started, or over) has no
    /// chrono stats: the interval's shares come from the windows that have them.
    #[test]
    fn a_window_without_connections_does_not_blank_the_intervals_shares() {
        let empty = PathWindow {
            t_s: 0.5,
            dt_s: 0.5,
            ..PathWindow::default()
        };
        let out = intervals(
            &[empty, w(1.0, 3_000, 300.0, 500_000, 250_000)],
            &[(0.0, 1.0, false)],
        );
        // 2 sockets over the second half: 1 s of socket time, half of it busy.
        assert_eq!(out[0].busy_share, Some(0.5));
        assert_eq!(out[0].network_limited_share, Some(0.5));
    }
}
