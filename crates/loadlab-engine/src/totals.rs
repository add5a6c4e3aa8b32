//! Running totals over a run's finished intervals: their histograms merged exactly, their
//! counts and bytes summed, a fixed size however long the run. What stays in memory while
//! the timeline itself goes to a spill file (the CLI's), and what a recovered result's
//! figures are built from. It must not keep intervals, and it does no I/O.
//!
//! It lives in the engine for speed as much as for place: merging a histogram scans each of
//! its buckets (about 43,000 at loadlab's bounds), and the engine is built optimised even in
//! tests.

use loadlab_result::failure::describe_failure;
use loadlab_result::format::shown;
use loadlab_result::{
    decode_histogram, encode_histogram, new_histogram, IntervalSummary, LatencySummary,
    PhaseSummary,
};
use std::collections::BTreeMap;

/// Running totals of one phase's intervals.
#[derive(Debug, Clone)]
pub struct PhaseTotals {
    pub latency: hdrhistogram::Histogram<u64>,
    pub completed: u64,
    pub failed: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub duration_s: f64,
    pub intervals: u64,
    /// The busiest interval's bytes per second (an interval is the finest grain written).
    pub max_sent_per_s: u64,
    pub max_received_per_s: u64,
    /// Failures by class, as the intervals carry them (none from files made before they
    /// did); at most one entry per failure class.
    pub errors: BTreeMap<String, u64>,
}

impl Default for PhaseTotals {
    fn default() -> Self {
        PhaseTotals {
            latency: new_histogram(),
            completed: 0,
            failed: 0,
            bytes_sent: 0,
            bytes_received: 0,
            duration_s: 0.0,
            intervals: 0,
            max_sent_per_s: 0,
            max_received_per_s: 0,
            errors: BTreeMap::new(),
        }
    }
}

/// Everything kept in memory while intervals stream past: a fixed size, however long the run.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub measured: PhaseTotals,
    pub warmup: PhaseTotals,
    /// Where the last interval written ended, from the start of the run.
    pub last_end_s: f64,
}

/// The latest any interval of a run may end, from its start: a century. Far beyond any run
/// (a `-n` run has no time limit), and still far inside what the clock's arithmetic takes
/// (an interval 1e308 s in panicked `loadlab recover`).
pub const LATEST_END_S: f64 = 100.0 * 365.25 * 86_400.0;

/// Seconds as a reader can take them in: `1e308`, not 309 digits.
fn seconds(s: f64) -> String {
    if s.abs() >= 1e9 {
        format!("{s:e}")
    } else {
        format!("{s}")
    }
}

impl Totals {
    /// Adds one interval. One that cannot be a run's (a histogram that does not decode, a
    /// time before the start or beyond [`LATEST_END_S`], a negative duration, counts whose
    /// sums overflow) is an error naming it, and changes nothing: intervals come from files
    /// a user may have altered, and no figure may be made up from them.
    pub fn add(&mut self, iv: &IntervalSummary) -> Result<(), String> {
        let altered = |what: String| {
            format!(
                "{what}: the file was altered after it was written (loadlab writes no such \
                 interval); recover from an unaltered copy"
            )
        };
        if !(0.0..=LATEST_END_S).contains(&iv.start_s) {
            return Err(altered(format!(
                "an interval starts {} s into the run, not between 0 and {} s (a century)",
                seconds(iv.start_s),
                seconds(LATEST_END_S)
            )));
        }
        let altered =
            |what: String| altered(format!("the interval at {} s {what}", seconds(iv.start_s)));
        if !(0.0..=LATEST_END_S - iv.start_s).contains(&iv.duration_s) {
            return Err(altered(format!(
                "lasts {} s, not between 0 and the {} s left to a century",
                seconds(iv.duration_s),
                seconds(LATEST_END_S - iv.start_s)
            )));
        }
        let phase = if iv.warmup {
            &mut self.warmup
        } else {
            &mut self.measured
        };
        let sum = |total: u64, n: u64, what: &str| {
            total
                .checked_add(n)
                .ok_or_else(|| altered(format!("makes the {what} overflow a 64-bit count")))
        };
        let completed = sum(phase.completed, iv.completed, "requests completed")?;
        let failed = sum(phase.failed, iv.failed, "requests failed")?;
        sum(completed, failed, "requests completed and failed")?;
        // The classes loadlab names, at most the interval's failures (all of them, but for a
        // file made before intervals kept them, or a fleet's interval merged with an older
        // generator's): anything else was not written by loadlab.
        if let Some(class) = iv.errors.keys().find(|c| describe_failure(c).is_none()) {
            return Err(altered(format!(
                "counts failures of a class loadlab does not have ({})",
                shown(class)
            )));
        }
        let classes = iv
            .errors
            .values()
            .try_fold(0u64, |all, n| all.checked_add(*n));
        if classes.is_none_or(|n| n > iv.failed) {
            return Err(altered(format!(
                "counts {} failures by class, more than its {} failed",
                classes.map_or("more than 2^64".into(), |n| n.to_string()),
                iv.failed
            )));
        }
        let mut errors = phase.errors.clone();
        // A class counted 0 times is left out, as the result leaves it out.
        for (class, n) in iv.errors.iter().filter(|(_, n)| **n > 0) {
            let total = errors.entry(class.clone()).or_default();
            *total = sum(*total, *n, "failures of a class")?;
        }
        let bytes_sent = sum(phase.bytes_sent, iv.bytes_sent, "bytes sent")?;
        let bytes_received = sum(phase.bytes_received, iv.bytes_received, "bytes received")?;
        if let Some(text) = &iv.histogram {
            let h = decode_histogram(text).map_err(|e| {
                format!(
                    "the interval at {} s has a histogram that does not decode ({e}); the file \
                     was altered after it was written",
                    iv.start_s
                )
            })?;
            phase
                .latency
                .add(&h)
                .map_err(|e| format!("the interval at {} s does not merge: {e:?}", iv.start_s))?;
        }
        phase.completed = completed;
        phase.failed = failed;
        phase.errors = errors;
        phase.bytes_sent = bytes_sent;
        phase.bytes_received = bytes_received;
        phase.duration_s += iv.duration_s;
        phase.intervals += 1;
        let per_s = |n: u64| (n as f64 / iv.duration_s.max(1e-9)) as u64;
        phase.max_sent_per_s = phase.max_sent_per_s.max(per_s(iv.bytes_sent));
        phase.max_received_per_s = phase.max_received_per_s.max(per_s(iv.bytes_received));
        self.last_end_s = self.last_end_s.max(iv.start_s + iv.duration_s);
        Ok(())
    }
}

/// Lays the totals over a phase of the header: what the intervals carry replaces it.
pub fn apply(phase: &mut PhaseSummary, totals: &PhaseTotals) {
    let secs = totals.duration_s;
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    phase.duration_s = secs;
    // The intervals' time already holds an open loop's drain; the header's was made before
    // the run ended.
    phase.drain_s = None;
    phase.requests.completed = totals.completed;
    phase.requests.failed = totals.failed;
    phase.requests.issued = phase.requests.issued.max(totals.completed + totals.failed);
    phase.requests.per_second = rate(totals.completed);
    phase.latency_us = LatencySummary::from_histogram(&totals.latency);
    phase.histograms.latency = encode_histogram(&totals.latency);
    phase.bytes.sent = totals.bytes_sent;
    phase.bytes.received = totals.bytes_received;
    phase.bytes.sent_per_s = rate(totals.bytes_sent);
    phase.bytes.received_per_s = rate(totals.bytes_received);
    phase.bytes.max_sent_per_s = totals.max_sent_per_s;
    phase.bytes.max_received_per_s = totals.max_received_per_s;
    phase.cliffs = loadlab_result::cliff::cliffs(&totals.latency);
    if !totals.errors.is_empty() {
        phase.errors = totals.errors.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(start_s: f64, warmup: bool, values_ns: &[u64], failed: u64) -> IntervalSummary {
        let mut h = new_histogram();
        for v in values_ns {
            h.record(*v).unwrap();
        }
        IntervalSummary {
            start_s,
            duration_s: 1.0,
            partial: false,
            warmup,
            offered_per_s: None,
            connections: Some(4.0),
            achieved_per_s: values_ns.len() as f64,
            completed: values_ns.len() as u64,
            failed,
            p50_us: None,
            p90_us: None,
            p99_us: None,
            max_us: None,
            bytes_sent: 100,
            bytes_received: 1_000 * values_ns.len() as u64,
            steal: None,
            histogram: Some(encode_histogram(&h)),
            server: None,
            errors: Default::default(),
            messages: None,
            generator: None,
        }
    }

    #[test]
    fn totals_are_the_exact_merge_by_phase() {
        let mut t = Totals::default();
        t.add(&interval(0.0, true, &[5_000_000], 0)).unwrap();
        t.add(&interval(1.0, false, &[1_000, 2_000], 1)).unwrap();
        t.add(&interval(2.0, false, &[3_000], 0)).unwrap();
        assert_eq!((t.warmup.completed, t.warmup.intervals), (1, 1));
        assert_eq!((t.measured.completed, t.measured.failed), (3, 1));
        assert_eq!(t.measured.latency.len(), 3);
        assert_eq!(t.measured.max_received_per_s, 2_000);
        assert_eq!(t.last_end_s, 3.0);
        let mut expected = new_histogram();
        for v in [1_000, 2_000, 3_000] {
            expected.record(v).unwrap();
        }
        assert_eq!(t.measured.latency, expected);
    }

    /// The intervals' classes add up by phase (a recovered result has them); a class
    /// loadlab does not have, or more failures by class than the interval's, are an altered
    /// file, and change nothing.
    #[test]
    fn failures_by_class_add_up_and_altered_ones_are_refused() {
        let with = |start_s: f64, failed: u64, classes: &[(&str, u64)]| {
            let mut iv = interval(start_s, false, &[1_000], failed);
            iv.errors = classes.iter().map(|(k, n)| (k.to_string(), *n)).collect();
            iv
        };
        let mut t = Totals::default();
        t.add(&with(
            0.0,
            3,
            &[("connect_refused", 1), ("request_timeout", 2)],
        ))
        .unwrap();
        t.add(&with(1.0, 1, &[("request_timeout", 1)])).unwrap();
        // A file made before intervals kept their classes: counts only.
        t.add(&with(2.0, 5, &[])).unwrap();
        let expected = BTreeMap::from([
            ("connect_refused".to_string(), 1),
            ("request_timeout".to_string(), 3),
        ]);
        assert_eq!(t.measured.errors, expected);
        let err = t
            .add(&with(3.0, 1, &[("\u{1b}[2Jnot_a_class", 1)]))
            .unwrap_err();
        assert!(
            err.contains("does not have (\\u{1b}[2Jnot_a_class)"),
            "{err}"
        );
        let err = t.add(&with(3.0, 1, &[("request_timeout", 2)])).unwrap_err();
        assert!(
            err.contains("counts 2 failures by class, more than its 1 failed"),
            "{err}"
        );
        let err = t
            .add(&with(
                3.0,
                2,
                &[("request_timeout", u64::MAX), ("io_error", 2)],
            ))
            .unwrap_err();
        assert!(err.contains("more than 2^64"), "{err}");
        assert_eq!((t.measured.errors, t.measured.failed), (expected, 9));
    }

    #[test]
    fn a_histogram_that_does_not_decode_is_named() {
        let mut iv = interval(7.0, false, &[1_000], 0);
        iv.histogram = Some("not base64!".into());
        let err = Totals::default().add(&iv).unwrap_err();
        assert!(err.contains("at 7 s") && err.contains("altered"), "{err}");
    }
}
