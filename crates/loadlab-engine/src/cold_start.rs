//! A run's first requests against the measured ones after them, and the cold-start finding
//! in words. The finding says what happened to those requests: when a warm-up already kept
//! them out of the figures it says so, instead of advising the warm-up that was used (issue
//! 27, item 5). It decides nothing about the run's other figures.

use crate::engine::RunOutcome;
use loadlab_result::{FirstRequests, LatencySummary};

/// How much slower the first requests must be to count as a cold start.
const COLD_P50_FACTOR: f64 = 2.0;
/// p90, not p99: of 100 first requests, p99 is one or two requests, a hiccup rather than a
/// cold start.
const COLD_P90_FACTOR: f64 = 3.0;
const COLD_MIN_EXTRA_US: f64 = 1_000.0;

/// The run's first requests against the measured requests after them, and how many of the
/// first requests fell in the warm-up.
pub(crate) fn first_requests(outcome: &RunOutcome) -> Option<(FirstRequests, u64)> {
    let first = &outcome.recorder.first;
    let measured = &outcome.recorder.phases[crate::stats::Phase::Measured as usize].latency;
    let mut rest = measured.clone();
    // The first requests that were measured are in the measured histogram too.
    rest.subtract(&first.measured).ok()?;
    if first.all.len() < crate::stats::FIRST_REQUESTS || rest.is_empty() {
        return None;
    }
    let latency = LatencySummary::from_histogram(&first.all)?;
    let rest = LatencySummary::from_histogram(&rest)?;
    let in_warmup = first.all.len().saturating_sub(first.measured.len());
    Some((
        FirstRequests {
            requests: first.all.len(),
            window_s: first.last_end.as_secs_f64(),
            cold_start: is_cold(&latency, &rest),
            latency_us: latency,
            rest_us: rest,
        },
        in_warmup,
    ))
}

/// Whether first requests with response times `first` against `rest` afterwards make a
/// cold start: p50 at least twice the rest's, or p90 three times, and either at least 1 ms
/// slower (a difference of microseconds is no cold start however large the ratio).
pub fn is_cold(first: &LatencySummary, rest: &LatencySummary) -> bool {
    let slower = |a: f64, b: f64, factor: f64| a >= b * factor && a - b >= COLD_MIN_EXTRA_US;
    slower(first.p50, rest.p50, COLD_P50_FACTOR) || slower(first.p90, rest.p90, COLD_P90_FACTOR)
}

/// The cold-start verdict, or `None` when the first requests were not a cold start.
/// `in_warmup`: how many of them completed during the warm-up (out of the figures).
pub fn cold_start_verdict(first: &FirstRequests, in_warmup: u64) -> Option<String> {
    if !first.cold_start {
        return None;
    }
    let what = format!(
        "cold start: the first {} requests (in {:.1} s) took p50 {:.2} ms, p99 {:.2} ms, against \
         p50 {:.2} ms, p99 {:.2} ms afterwards",
        first.requests,
        first.window_s,
        first.latency_us.p50 / 1e3,
        first.latency_us.p99 / 1e3,
        first.rest_us.p50 / 1e3,
        first.rest_us.p99 / 1e3
    );
    let advice = if in_warmup >= first.requests {
        "; they fell in the warm-up and are not in the figures".to_string()
    } else if in_warmup > 0 {
        format!(
            "; {in_warmup} of them fell in the warm-up, the other {} are in the figures: a \
             --warmup longer than {:.1} s keeps them all out",
            first.requests - in_warmup,
            first.window_s
        )
    } else {
        "; keep it out of the figures with --warmup, or study it on its own".to_string()
    };
    Some(what + &advice)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(p50_us: f64, p99_us: f64) -> LatencySummary {
        LatencySummary {
            count: 100,
            min: p50_us / 2.0,
            mean: p50_us,
            stdev: 0.0,
            p50: p50_us,
            p75: p50_us,
            p90: p50_us,
            p95: p99_us,
            p99: p99_us,
            p99_9: p99_us,
            p99_99: p99_us,
            max: p99_us,
        }
    }

    fn cold() -> FirstRequests {
        FirstRequests {
            requests: 100,
            window_s: 0.4,
            latency_us: latency(8_000.0, 30_000.0),
            rest_us: latency(200.0, 900.0),
            cold_start: true,
        }
    }

    /// p50 and p90 (p90 held apart from p50 here, unlike `latency`).
    fn spread(p50_us: f64, p90_us: f64) -> LatencySummary {
        LatencySummary {
            p90: p90_us,
            ..latency(p50_us, p90_us)
        }
    }

    #[test]
    fn a_cold_start_is_twice_the_p50_or_three_times_the_p90_and_a_millisecond_more() {
        let rest = spread(500.0, 600.0);
        // A warm server (figures of a real run of the fixture): no.
        assert!(!is_cold(&spread(61.0, 141.0), &spread(36.0, 68.0)));
        // p50 twice the rest's and 1 ms more: yes; 1 µs short of either: no.
        assert!(is_cold(&spread(1_500.0, 600.0), &rest));
        assert!(!is_cold(&spread(1_499.0, 600.0), &rest));
        assert!(!is_cold(&spread(999.0, 600.0), &spread(499.0, 600.0)));
        // p90 three times and 1 ms more, p50 unmoved: yes; 1 µs short: no.
        assert!(is_cold(&spread(500.0, 1_800.0), &rest));
        assert!(!is_cold(&spread(500.0, 1_799.0), &rest));
        // Ten times slower, but by microseconds: no.
        assert!(!is_cold(&spread(90.0, 200.0), &spread(9.0, 20.0)));
    }

    #[test]
    fn first_requests_all_in_the_warm_up_are_said_to_be_out_of_the_figures() {
        let v = cold_start_verdict(&cold(), 100).unwrap();
        assert!(v.starts_with("cold start: the first 100 requests"), "{v}");
        assert!(
            v.ends_with("they fell in the warm-up and are not in the figures"),
            "{v}"
        );
        assert!(
            !v.contains("with --warmup"),
            "no advice to do what was done: {v}"
        );
    }

    #[test]
    fn first_requests_partly_in_the_warm_up_are_counted_on_each_side() {
        let v = cold_start_verdict(&cold(), 60).unwrap();
        assert!(
            v.contains("60 of them fell in the warm-up, the other 40 are in the figures"),
            "{v}"
        );
        assert!(v.contains("--warmup longer than 0.4 s"), "{v}");
    }

    #[test]
    fn without_a_warm_up_the_advice_is_to_use_one() {
        let v = cold_start_verdict(&cold(), 0).unwrap();
        assert!(
            v.contains("keep it out of the figures with --warmup"),
            "{v}"
        );
        let warm = FirstRequests {
            cold_start: false,
            ..cold()
        };
        assert_eq!(cold_start_verdict(&warm, 0), None);
    }
}
