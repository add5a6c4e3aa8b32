//! How a held load opened its connections (its ramp): when each was due under
//! `--ws-connect-rate` (connection `i` of the whole run `i / rate` after the start, so that
//! shards, each opening its own connections' numbers, together open at the rate asked, as an
//! open loop's slots do), the handshakes' times, how long until all were open and the connect
//! rate achieved, and the note that says so. No I/O here: the engine's `ws::hold` opens.

use super::HANDSHAKES_AT_ONCE;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// When connection number `index` (of the whole run, across threads and shards) is due at
/// `per_s` connections a second, after the run's start; `None` if never within a run (a
/// time past what a `Duration` holds).
pub fn due_after(index: usize, per_s: f64) -> Option<Duration> {
    Duration::try_from_secs_f64(index as f64 / per_s).ok()
}

/// What the held connections' openings count, shared by the run's threads.
#[derive(Debug, Default)]
pub struct RampTotals {
    /// When the first held connection began opening, and how long after it all were open
    /// (nanoseconds; 0: not all at once).
    pub opening_since: OnceLock<Instant>,
    pub all_open_after_ns: AtomicU64,
    /// Handshakes (TCP, TLS, upgrade), nanoseconds each: from when each was due with
    /// `--ws-connect-rate`, else from when it began.
    handshakes: Mutex<Option<Histogram<u64>>>,
    /// The first and last handshake's end, nanoseconds after `opening_since` (+1: 0 is none).
    first_open_ns: AtomicU64,
    last_open_ns: AtomicU64,
    /// `--ws-connect-rate`: what this run asked (its shard's share), and of the whole run.
    asked: OnceLock<(f64, f64)>,
}

impl RampTotals {
    /// Connections open at `share` a second, this run's part of `whole`.
    pub fn asked(&self, share: f64, whole: f64) {
        let _ = self.asked.set((share, whole));
    }

    /// A handshake ended now, having taken `took` (from when it was due, or began).
    pub fn opened(&self, took: Duration) {
        let since = *self.opening_since.get_or_init(Instant::now);
        let at = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX - 1);
        self.record(took, at);
    }

    /// A handshake that took `took` ended `at_ns` after the first began opening.
    fn record(&self, took: Duration, at_ns: u64) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let mut h = self.handshakes.lock().unwrap_or_else(|e| e.into_inner());
        h.get_or_insert_with(loadlab_result::histogram::new_histogram)
            .saturating_record(ns.clamp(1, loadlab_result::histogram::HIST_MAX_NS));
        drop(h);
        // Stored + 1: 0 is none yet, below any end, so the first's is the least non-zero.
        let at = at_ns.saturating_add(1);
        let _ = self
            .first_open_ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |was| {
                (was == 0 || at < was).then_some(at)
            });
        self.last_open_ns.fetch_max(at, Ordering::Relaxed);
    }

    pub fn report(&self) -> Ramp {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let handshakes = self
            .handshakes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .unwrap_or_else(loadlab_result::histogram::new_histogram);
        let span = get(&self.last_open_ns).saturating_sub(get(&self.first_open_ns));
        let opened = handshakes.len();
        Ramp {
            all_open_after: (get(&self.all_open_after_ns) > 0)
                .then(|| Duration::from_nanos(get(&self.all_open_after_ns))),
            // Over the gaps between the first's end and the last's: n handshakes, n - 1 gaps.
            achieved_per_s: (opened > 1 && span > 0)
                .then(|| (opened - 1) as f64 / Duration::from_nanos(span).as_secs_f64()),
            asked: self.asked.get().copied(),
            handshakes,
        }
    }
}

/// How the held connections opened, read when the run ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Ramp {
    /// From the first held connection's start until all were open.
    pub all_open_after: Option<Duration>,
    /// Handshakes, nanoseconds each (from when each was due with a connect rate).
    pub handshakes: Histogram<u64>,
    /// Handshakes a second, between the first's end and the last's.
    pub achieved_per_s: Option<f64>,
    /// `--ws-connect-rate`: this run's share, and the whole run's.
    pub asked: Option<(f64, f64)>,
}

impl Ramp {
    /// The held connections' note's part on their opening (empty when none opened): how long
    /// until all were open, the rate achieved against the one asked, and the handshakes'
    /// times (at most [`HANDSHAKES_AT_ONCE`] at a time, so a listen backlog of that many
    /// never overflows).
    pub fn note(&self) -> String {
        let h = &self.handshakes;
        if h.is_empty() {
            return String::new();
        }
        let ms = |ns: u64| ns as f64 / 1e6;
        let all = match self.all_open_after {
            Some(after) => format!(
                ", all open {:.2} s after the first began",
                after.as_secs_f64()
            ),
            None => String::new(),
        };
        let (rate, from) = match self.asked {
            Some((share, whole)) => {
                let of = if share < whole {
                    format!(", this shard's share of {}/s", per_s(whole))
                } else {
                    String::new()
                };
                let achieved = self
                    .achieved_per_s
                    .map_or("-".into(), |a| format!("{}/s", per_s(a)));
                (
                    format!(
                        "; opened at {achieved} (--ws-connect-rate {}/s{of})",
                        per_s(share)
                    ),
                    ", timed from when each was due",
                )
            }
            None => (String::new(), ""),
        };
        format!(
            "{all}{rate}; {} handshakes (at most {HANDSHAKES_AT_ONCE} at once){from}: p50 {:.1} \
             ms, p99 {:.1} ms, max {:.1} ms",
            h.len(),
            ms(h.value_at_quantile(0.5)),
            ms(h.value_at_quantile(0.99)),
            ms(h.max()),
        )
    }
}

/// A rate as the notes write it: whole when it is or above 100, else to a tenth.
fn per_s(rate: f64) -> String {
    if rate >= 100.0 || rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_fall_due_at_the_rate_by_their_number() {
        let cases = [
            (0, 200.0, Some(Duration::ZERO)),
            (1, 200.0, Some(Duration::from_millis(5))),
            (39, 200.0, Some(Duration::from_millis(195))),
            (10_000, 500.0, Some(Duration::from_secs(20))),
            (usize::MAX, 1e-300, None),
        ];
        for (index, rate, due) in cases {
            let got = due_after(index, rate);
            let close = match (got, due) {
                (Some(g), Some(d)) => g.abs_diff(d) < Duration::from_micros(1),
                (g, d) => g == d,
            };
            assert!(close, "{index} at {rate}/s: {got:?}, not {due:?}");
        }
        let shown: Vec<String> = [20.0, 12.5, 19.96, 1234.6].into_iter().map(per_s).collect();
        assert_eq!(shown, ["20", "12.5", "20.0", "1235"]);
    }

    /// Four handshakes ending 10 ms apart: 100/s, over the three gaps; the note names the
    /// rate asked (a shard's share of the whole) and times each from when it was due.
    #[test]
    fn the_rate_achieved_is_over_the_gaps_between_handshakes() {
        let t = RampTotals::default();
        t.asked(100.0, 200.0);
        for i in 0..4u64 {
            t.record(Duration::from_millis(1), (5 + 10 * i) * 1_000_000);
        }
        let r = t.report();
        let achieved = r.achieved_per_s.unwrap();
        assert!((achieved - 100.0).abs() < 1e-6, "{achieved}");
        let note = r.note();
        assert!(
            note.contains("opened at 100/s (--ws-connect-rate 100/s, this shard's share of 200/s")
                && note.contains("4 handshakes (at most 64 at once), timed from when each was due"),
            "{note}"
        );
        // Without a rate asked: no rate, handshakes from when each began.
        let t = RampTotals::default();
        t.opened(Duration::from_millis(2));
        let note = t.report().note();
        assert!(
            !note.contains("opened at") && !note.contains("due"),
            "{note}"
        );
        assert!(note.contains("1 handshakes"), "{note}");
    }
}
