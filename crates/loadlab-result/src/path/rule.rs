//! The rule that tells a queue on the path from a queue in the server (issue 52), pure and
//! tested on tables; its thresholds are written in docs/path.md.
//!
//! Both limits look alike from far away: the requests per second stop rising and the
//! response times grow. What differs is where the waiting happens. A standing queue on the
//! path (a capped link's buffer) holds every segment, the ACKs of the generator's requests
//! included, so the generator's smoothed round trip grows by the queue's delay while its
//! goodput stays flat at the link's figure. A slow server holds the requests in its own
//! queue, behind its socket: the round trip stays near the path's minimum.
//!
//! Delayed ACKs blur this, and the thresholds are set with them in mind (measured on Linux
//! 6.18 in namespaces): a server that answers late ACKs a request late, at the latest when
//! its delayed-ACK timer fires (40 ms on Linux, `TCP_DELACK_MIN`), so a busy server can lift
//! the generator's round trip by tens of milliseconds (7.3 ms at 1 connection and a 7.6 ms
//! response time; 10-16 ms at 64 connections and 72 ms); a 10 Mbit/s cap with a 100 ms
//! buffer lifted it by 100 ms at a 122 ms response time. So a queue is called the path's only
//! when it is past the delayed-ACK bound with margin (60 ms) AND explains at least half of
//! the response time or is deeper than 100 ms (an open loop at twice the cap: 124 ms of
//! queue under 1.3 s response times, its requests also waiting for a free connection); it
//! is called not the path's when it is under 20 ms or under a fifth of the response time;
//! between the two, inconclusive. The receiver's own estimate
//! (`tcpi_rcv_rtt`) is kept as data but not used: it includes the server's time, and swung
//! from 11 ms to 460 ms between the connections of one slow server.
//!
//! The server's sockets, when its agent samples them, settle the middle band: a path that
//! limits keeps them busy with data in flight (cwnd-limited) most of the time; a server
//! that limits leaves them idle between answers.

use super::{PathInterval, PathReport};
use crate::median;

/// The queue's delay (round trip less its minimum) past which it can be the path's: above
/// Linux's delayed-ACK bound (40 ms), with margin.
pub const QUEUE_US: f64 = 60_000.0;
/// ... and the share of the median response time it must explain, unless it is deeper
/// than `DEEP_QUEUE_US`, past any delayed ACK (an overloaded open loop's requests also wait
/// for a free connection, so its response times run far past the path's queue).
pub const QUEUE_SHARE: f64 = 0.5;
pub const DEEP_QUEUE_US: f64 = 100_000.0;
/// Under this delay, or under this share of the response time, it is not the path's.
pub const NO_QUEUE_US: f64 = 20_000.0;
pub const NO_QUEUE_SHARE: f64 = 0.2;
/// Flat: the busier half of the measured intervals' goodput within this share of the
/// busiest (a ceiling: intervals with a loss's timeout carry less).
pub const FLAT_SHARE: f64 = 0.15;
/// The server's sockets: busy (data in flight) this share of their time, and of that
/// network-limited this share, is a path that limits; busy under `SENDER_IDLE`, not.
pub const SENDER_BUSY: f64 = 0.8;
pub const SENDER_NETWORK: f64 = 0.8;
pub const SENDER_IDLE: f64 = 0.3;
/// Over QUIC the round trip also holds the server's own wait to read its packets (a QUIC
/// stack runs in the server's process: a busy server reads them late, and quinn takes out
/// only the ACK delay the server reports, counted from its read), so a queue is called the
/// path's only when the server's CPU was sampled and under this (cores, or share of its
/// quota), among other signs (`quic_doubt`): caddy on one CPU lifted quinn's round trip
/// 140 ms at 512 connections, uncapped.
pub const QUIC_SERVER_BUSY: f64 = 0.8;
/// Fewer measured intervals than this are not enough to call a figure flat.
pub const MIN_INTERVALS: usize = 2;

/// What the rule reads about one generator's path over one measured span.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// The fleet generator, by name; `None` for this machine.
    pub generator: Option<String>,
    /// Each measured interval's goodput, bytes/s.
    pub goodput_per_s: Vec<f64>,
    /// The median over the measured intervals of the connections' smoothed round trip, µs.
    pub rtt_us: Option<f64>,
    pub min_rtt_us: Option<f64>,
    /// The generator's median response time, µs.
    pub response_p50_us: Option<f64>,
    /// The server's sockets (its agent's sampling), over the measured intervals.
    pub sender_busy_share: Option<f64>,
    pub sender_network_limited_share: Option<f64>,
    /// The round trips are quinn's (HTTP/3), not the kernel's.
    pub quic: bool,
    /// The server's CPU over the run, when it was sampled: a share of its quota, or cores.
    pub server_cpu: Option<f64>,
}

impl Evidence {
    /// From a generator's report, and the server's when its agent sampled it.
    pub fn of(generator: &PathReport, server: Option<&PathReport>) -> Evidence {
        // Measured intervals, less a last one the run ended early in (a few milliseconds'
        // bytes make a rate of nothing, or of one burst).
        let measured = |r: &PathReport| -> Vec<PathInterval> {
            let longest = r.intervals.iter().map(|i| i.duration_s).fold(0.0, f64::max);
            r.intervals
                .iter()
                .filter(|i| !i.warmup && i.duration_s >= longest / 2.0)
                .copied()
                .collect()
        };
        let mine = measured(generator);
        let theirs = server.map(measured).unwrap_or_default();
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        Evidence {
            generator: generator.generator.clone(),
            goodput_per_s: per_second(&mine),
            rtt_us: median(&mine.iter().filter_map(|i| i.rtt_us).collect::<Vec<_>>()),
            min_rtt_us: generator.min_rtt_us,
            response_p50_us: generator.response_p50_us,
            sender_busy_share: mean(theirs.iter().filter_map(|i| i.busy_share).collect()),
            sender_network_limited_share: mean(
                theirs
                    .iter()
                    .filter_map(|i| i.network_limited_share)
                    .collect(),
            ),
            quic: generator.transport == "quic",
            server_cpu: None,
        }
    }

    /// [`Evidence::of`] a generator's report in `result`, with the server's CPU when it was
    /// sampled (what an HTTP/3 run's queue needs, see [`QUIC_SERVER_BUSY`]).
    pub fn in_run(result: &crate::RunResult, generator: &PathReport) -> Evidence {
        let server = result.path.iter().find(|r| r.side == "server");
        let cpu = result
            .server
            .as_ref()
            .and_then(|s| s.summary.as_ref())
            .map(|s| {
                s.cpu_quota_share
                    .as_ref()
                    .map_or(s.cpu_cores.mean, |q| q.mean)
            });
        Evidence {
            server_cpu: cpu,
            ..Evidence::of(generator, server)
        }
    }

    /// The round trip stood past a queue's thresholds (before the goodput and the other
    /// signs are weighed).
    pub fn queued(&self) -> bool {
        let (Some(rtt), Some(min), Some(p50)) =
            (self.rtt_us, self.min_rtt_us, self.response_p50_us)
        else {
            return false;
        };
        let queue = (rtt - min).max(0.0);
        let share = if p50 > 0.0 { queue / p50 } else { 0.0 };
        queue >= QUEUE_US && (share >= QUEUE_SHARE || queue >= DEEP_QUEUE_US)
    }

    /// The busier half of the intervals' goodput, bytes/s: what the path carried when it
    /// carried most (an interval with a loss's timeout in it carries less).
    fn busiest(&self) -> Vec<f64> {
        let mut v = self.goodput_per_s.clone();
        v.sort_by(|a, b| b.total_cmp(a));
        v.truncate(v.len().div_ceil(2));
        v
    }

    /// The goodput's figure: the median of the busier half of the intervals, bytes/s.
    pub fn goodput(&self) -> Option<f64> {
        median(&self.busiest())
    }

    /// Flat at one figure: the busier half of the intervals all within [`FLAT_SHARE`] of
    /// the busiest. A capped path never carries more than its cap, and an overloaded one
    /// carries less in the intervals where a drop cost a timeout: a ceiling, not a mean.
    pub fn flat(&self) -> bool {
        let top = self.busiest();
        match top.first() {
            Some(&max) if max > 0.0 && self.goodput_per_s.len() >= MIN_INTERVALS => {
                top.iter().all(|g| max - g <= FLAT_SHARE * max)
            }
            _ => false,
        }
    }
}

/// The goodput over spans of at least a second (consecutive intervals joined, weighted by
/// their lengths; a last span under half a second left out): a capacity probe's intervals
/// are a tenth of it (200 ms for 2 s), and over 200 ms a capped path's bucket and its drops
/// make the rate jump, where over a second it is one figure.
fn per_second(intervals: &[PathInterval]) -> Vec<f64> {
    let mut out = Vec::new();
    let (mut bytes, mut time) = (0.0, 0.0);
    for i in intervals {
        bytes += i.goodput_per_s() * i.duration_s;
        time += i.duration_s;
        if time >= SPAN_S - 1e-9 {
            out.push(bytes / time);
            (bytes, time) = (0.0, 0.0);
        }
    }
    if time >= SPAN_S / 2.0 {
        out.push(bytes / time);
    }
    out
}

/// The shortest span a goodput figure is taken over, seconds.
pub const SPAN_S: f64 = 1.0;

/// Where the waiting was, for one generator.
#[derive(Debug, Clone, PartialEq)]
pub enum PathVerdict {
    /// A queue on the path to this generator: its goodput, round trip and minimum.
    Path {
        generator: Option<String>,
        goodput_bits_per_s: f64,
        rtt_us: f64,
        min_rtt_us: f64,
    },
    /// The path's round trip does not explain the waiting: it was beyond the path.
    NotPath { why: String },
    /// Not enough evidence either way, and why.
    Inconclusive { why: String },
}

impl PathVerdict {
    pub fn is_path(&self) -> bool {
        matches!(self, PathVerdict::Path { .. })
    }

    /// In words, e.g. "the path to generator g1 carried 9.6 Mbit/s and no more, with
    /// its round trip at 35x its minimum (101 ms against 2.9 ms): a queue on the path, not in
    /// the server".
    pub fn describe(&self) -> String {
        match self {
            PathVerdict::Path {
                generator,
                goodput_bits_per_s,
                rtt_us,
                min_rtt_us,
            } => format!(
                "the path to {} carried {:.1} Mbit/s and no more, with its round trip \
                 at {}x its minimum ({} against {}): a queue on the path, not in the server",
                who(generator.as_deref()),
                goodput_bits_per_s / 1e6,
                crate::format::thousands((rtt_us / min_rtt_us.max(1.0)).round() as u64),
                ms(*rtt_us),
                ms(*min_rtt_us)
            ),
            PathVerdict::NotPath { why } | PathVerdict::Inconclusive { why } => why.clone(),
        }
    }
}

/// "generator g1", or "this machine".
pub fn who(generator: Option<&str>) -> String {
    generator.map_or("this machine".to_string(), |g| format!("generator {g}"))
}

fn ms(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.0} ms", us / 1_000.0)
    } else {
        format!("{:.2} ms", us / 1_000.0)
    }
}

/// The rule (see the module's comment).
pub fn judge(e: &Evidence) -> PathVerdict {
    let name = who(e.generator.as_deref());
    let (Some(rtt), Some(min), Some(p50)) = (e.rtt_us, e.min_rtt_us, e.response_p50_us) else {
        return PathVerdict::Inconclusive {
            why: format!("no round trip was measured on the path to {name}"),
        };
    };
    let queue = (rtt - min).max(0.0);
    let share = if p50 > 0.0 { queue / p50 } else { 0.0 };
    let sender_busy = e.sender_busy_share.zip(e.sender_network_limited_share);
    let sender_says_path =
        sender_busy.is_some_and(|(b, n)| b >= SENDER_BUSY && n >= SENDER_NETWORK);
    let sender_says_idle = sender_busy.is_some_and(|(b, _)| b < SENDER_IDLE);
    let path = || PathVerdict::Path {
        generator: e.generator.clone(),
        goodput_bits_per_s: e.goodput().unwrap_or(0.0) * 8.0,
        rtt_us: rtt,
        min_rtt_us: min,
    };
    let queued = e.queued();
    let unqueued = queue < NO_QUEUE_US || share < NO_QUEUE_SHARE;
    let sender = |b: (f64, f64)| {
        format!(
            "the server's sockets were busy {:.0}% of the time, network-limited {:.0}% of that",
            b.0 * 100.0,
            b.1 * 100.0
        )
    };
    match (queued, unqueued) {
        // Past 100 ms no delayed ACK explains the round trip: a queue on the path, even
        // when drops and timeouts (an overloaded cap) left the goodput uneven.
        (true, _) if !e.flat() && queue < DEEP_QUEUE_US => PathVerdict::Inconclusive {
            why: format!(
                "the round trip to {name} rose {} over its minimum, but its goodput was not \
                 flat at one figure: not enough to blame the path",
                ms(queue)
            ),
        },
        (true, _) if sender_says_idle => PathVerdict::Inconclusive {
            why: format!(
                "the round trip to {name} rose {} over its minimum, but {}: the evidence \
                 disagrees",
                ms(queue),
                sender(sender_busy.unwrap_or_default())
            ),
        },
        (true, _) if e.quic => match quic_doubt(e, queue, p50) {
            Some(doubt) => PathVerdict::Inconclusive {
                why: format!(
                    "the round trip to {name} rose {} over its minimum, but over QUIC it also \
                     holds the server's own wait to read its packets, and {doubt}: not enough \
                     to blame the path",
                    ms(queue)
                ),
            },
            None => path(),
        },
        (true, _) => path(),
        (false, true) if !sender_says_path => PathVerdict::NotPath {
            why: format!(
                "no queue on the path to {name}: its round trip was {} over its minimum, {:.0}% \
                 of the median response time",
                ms(queue),
                share * 100.0
            ),
        },
        _ if sender_says_path && e.flat() => path(),
        _ => PathVerdict::Inconclusive {
            why: format!(
                "the round trip to {name} rose {} over its minimum ({:.0}% of the median response \
                 time): between a path's queue and a busy server's delayed ACKs{}",
                ms(queue),
                share * 100.0,
                sender_busy.map_or(String::new(), |b| format!("; {}", sender(b)))
            ),
        },
    }
}

/// Over QUIC, why a queue in the round trip may be the server's (`None`: it is the path's).
/// A busy QUIC server's queue shows in the round trip as a path's does, so the path needs
/// the server's CPU sampled and idle, and the signs of a standing queue on the way back:
/// the goodput flat at one figure (no exception for a deep queue: a starved server's was
/// uneven, 79 to 255 Mbit/s, at 374 ms), and no deeper than the median response time
/// (every answer crosses such a queue; a server's handshakes lifted the round trip past it).
fn quic_doubt(e: &Evidence, queue: f64, p50: f64) -> Option<String> {
    if !e.flat() {
        return Some("its goodput was not flat at one figure".into());
    }
    if queue > p50 {
        return Some(format!(
            "it was longer than the median response time ({}), which a queue on the way \
             back would delay as much",
            ms(p50)
        ));
    }
    match e.server_cpu {
        None => Some("the server's CPU was not sampled (--agent, --pid or --exec)".into()),
        Some(c) if c >= QUIC_SERVER_BUSY => Some(format!(
            "the server was busy ({:.0}% of a core or of its quota)",
            c * 100.0
        )),
        Some(_) => None,
    }
}

/// The run's verdicts about its paths: one line per generator whose path held a queue (with
/// the server's report, when its agent sampled one).
pub fn verdicts(result: &crate::RunResult) -> Vec<PathVerdict> {
    result
        .path
        .iter()
        .filter(|r| r.side == "generator")
        .map(|r| judge(&Evidence::in_run(result, r)))
        .collect()
}

/// The run's verdict lines about its paths: each generator whose path held the queue,
/// named, so that the response times are not taken for the server's; and over QUIC, a queue
/// the rule could not pin on the path, with what was missing (an HTTP/3 run against a
/// server loadlab does not sample would otherwise say nothing of it).
pub fn run_verdicts(result: &crate::RunResult) -> Vec<String> {
    let server = server_side(result).map_or(String::new(), |w| format!("; {w}"));
    result
        .path
        .iter()
        .filter(|r| r.side == "generator")
        .filter_map(|r| {
            let e = Evidence::in_run(result, r);
            match judge(&e) {
                v @ PathVerdict::Path { .. } => Some(format!(
                    "{}{server}: these response times are not the server's (docs/path.md)",
                    v.describe()
                )),
                PathVerdict::Inconclusive { why } if e.quic && e.queued() => {
                    Some(format!("{why} (docs/path.md)"))
                }
                _ => None,
            }
        })
        .collect()
}

/// The server's side in words, when its connections were sampled: "the server was 38% busy
/// while its sockets were network-limited 91% of the time" (its CPU, of its quota or of one
/// core; its connections' time waiting on the congestion window).
pub fn server_side(result: &crate::RunResult) -> Option<String> {
    let report = result.path.iter().find(|r| r.side == "server")?;
    let measured: Vec<&PathInterval> = report.intervals.iter().filter(|i| !i.warmup).collect();
    let network: Vec<f64> = measured
        .iter()
        .filter_map(|i| Some(i.busy_share? * i.network_limited_share.unwrap_or(0.0)))
        .collect();
    if network.is_empty() {
        return None;
    }
    let network = network.iter().sum::<f64>() / network.len() as f64;
    let cpu = result
        .server
        .as_ref()
        .and_then(|s| s.summary.as_ref())
        .map(|s| s.cpu_quota_share.map_or(s.cpu_cores.mean, |q| q.mean));
    Some(match cpu {
        Some(cpu) => format!(
            "the server was {:.0}% busy while its sockets were network-limited {:.0}% of the time",
            cpu * 100.0,
            network * 100.0
        ),
        None => format!(
            "the server's sockets were network-limited {:.0}% of the time",
            network * 100.0
        ),
    })
}

#[cfg(test)]
#[path = "rule_tests.rs"]
mod tests;
