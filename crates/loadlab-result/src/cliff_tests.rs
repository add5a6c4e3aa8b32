//! The cliff rules on synthetic mixtures with known shares, and on distributions without a
//! gap (none may be flagged). Samples come from a seeded generator: deterministic.

use super::*;
use crate::histogram::new_histogram;

/// xorshift64*: a small deterministic generator, uniform in (0, 1).
struct Rng(u64);

impl Rng {
    fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        (x as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// Lognormal around `median_us`, in nanoseconds.
    fn lognormal_ns(&mut self, median_us: f64, sigma: f64) -> u64 {
        (median_us * 1_000.0 * (sigma * self.normal()).exp()) as u64
    }
}

const N: u64 = 100_000;

/// A fast lognormal mode (median 200 µs) and `slow_share` of requests at 88-92 ms, the first
/// `strays` of them spread between instead (1.5 ms, 3 ms, 6 ms, ... doubling up to 48 ms).
fn throttled(slow_share: f64, strays: u64) -> Histogram<u64> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut h = new_histogram();
    let slow = (N as f64 * slow_share).round() as u64;
    for _ in 0..N - slow {
        h.record(rng.lognormal_ns(200.0, 0.3)).unwrap();
    }
    for i in 0..slow {
        let ns = if i < strays {
            1_500_000 << (i % 6)
        } else {
            88_000_000 + (rng.uniform() * 4_000_000.0) as u64
        };
        h.record(ns).unwrap();
    }
    h
}

fn flagged(h: &Histogram<u64>) -> Vec<String> {
    cliffs(h).into_iter().map(|c| c.percentile).collect()
}

#[test]
fn p99_is_on_the_cliff_at_0_9_and_1_1_percent_slow() {
    for share in [0.009, 0.011] {
        let h = throttled(share, 0);
        assert_eq!(flagged(&h), ["p99"], "{share}");
        let c = &cliffs(&h)[0];
        assert!((c.slow_share - share).abs() < 1e-9, "{c:?}");
        assert!(c.gap_from_us < 1_000.0 && c.gap_to_us >= 87_900.0, "{c:?}");
        assert!((180.0..220.0).contains(&c.fast_mode_us), "{c:?}");
        assert!((88_000.0..92_100.0).contains(&c.slow_mode_us), "{c:?}");
        assert!(c.threshold_us > c.gap_from_us && c.threshold_us < c.gap_to_us);
        assert_eq!(c.gap_share, 0.0);
    }
    // What the flag is for: p99 itself jumps from one mode to the other.
    let p99_ms = |share| throttled(share, 0).value_at_quantile(0.99) as f64 / 1e6;
    assert!(p99_ms(0.009) < 1.0 && p99_ms(0.011) > 80.0);
}

#[test]
fn the_share_beyond_moves_smoothly_where_p99_jumps() {
    let (a, b) = (throttled(0.009, 0), throttled(0.011, 0));
    let threshold = find_gaps(&a)[0].threshold_ns;
    let ratio = share_beyond(&b, threshold) / share_beyond(&a, threshold);
    assert!((ratio - 11.0 / 9.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn five_percent_slow_puts_p99_firmly_in_the_slow_mode() {
    let h = throttled(0.05, 0);
    let names = flagged(&h);
    assert!(!names
        .iter()
        .any(|n| n == "p99" || n == "p99.9" || n == "p50"));
    assert_eq!(find_gaps(&h).len(), 1);
}

#[test]
fn of_two_gaps_near_p99_it_sits_on_the_widest() {
    // 98% at 200 µs, 0.9% of stalls at 2-3 ms (a busy machine), 1.1% held 400 ms: beyond the
    // first gap (about 10x) lie 2.0%, beyond the second (over 100x) 1.1%; both are near 1%.
    let mut rng = Rng(3);
    let mut h = new_histogram();
    for i in 0..N {
        let ns = match i % 1000 {
            0..=8 => 2_000_000 + (rng.uniform() * 1_000_000.0) as u64,
            9..=19 => 400_000_000,
            _ => rng.lognormal_ns(200.0, 0.2),
        };
        h.record(ns).unwrap();
    }
    assert_eq!(find_gaps(&h).len(), 2);
    let c = &cliffs(&h)[0];
    assert_eq!(c.percentile, "p99");
    assert!((c.slow_share - 0.011).abs() < 1e-9, "{c:?}");
    assert!(c.gap_to_us >= 399_000.0, "{c:?}");
}

#[test]
fn a_tenth_of_a_percent_slow_puts_p99_9_on_the_cliff() {
    assert_eq!(flagged(&throttled(0.001, 0)), ["p99.9"]);
}

#[test]
fn a_few_stragglers_inside_the_gap_do_not_fill_it() {
    // 900 slow requests, 6 of them spread over the gap (within 2% of the slow side): no
    // empty 4x range is left, and the gap holds one of them.
    let h = throttled(0.009, 6);
    let c = &cliffs(&h)[0];
    assert_eq!(c.percentile, "p99");
    assert!((c.gap_share - 1.0 / N as f64).abs() < 1e-12, "{c:?}");
    assert!((c.slow_share - 0.009).abs() <= 6.0 / N as f64, "{c:?}");
}

#[test]
fn too_few_requests_beyond_a_gap_are_not_a_mode() {
    // 5 of 100,000: the far end of a tail, not a mode.
    let h = throttled(0.00005, 0);
    assert!(find_gaps(&h).is_empty());
    assert!(cliffs(&new_histogram()).is_empty());
    assert_eq!(share_beyond(&new_histogram(), 1), 0.0);
}

fn from_samples(samples: impl Iterator<Item = u64>) -> Histogram<u64> {
    let mut h = new_histogram();
    for ns in samples {
        h.record(ns.max(1)).unwrap();
    }
    h
}

#[test]
fn distributions_without_a_gap_are_never_flagged() {
    let mut rng = Rng(42);
    let lognormal = from_samples((0..N).map(|_| rng.lognormal_ns(300.0, 1.0)));
    let mut rng = Rng(7);
    let uniform = from_samples((0..N).map(|_| (100_000.0 + rng.uniform() * 9_900_000.0) as u64));
    // A long smooth tail: Pareto with index 1 from 100 µs (p99 at 10 ms, p99.9 at 100 ms).
    let mut rng = Rng(11);
    let pareto = from_samples((0..N).map(|_| (100_000.0 / rng.uniform()).min(3e12) as u64));
    // Two overlapping modes: 80% around 200 µs, 20% around 600 µs.
    let mut rng = Rng(13);
    let overlapping = from_samples((0..N).map(|i| {
        if i % 5 == 0 {
            rng.lognormal_ns(600.0, 0.4)
        } else {
            rng.lognormal_ns(200.0, 0.4)
        }
    }));
    for (name, h) in [
        ("lognormal", lognormal),
        ("uniform", uniform),
        ("pareto", pareto),
        ("overlapping", overlapping),
    ] {
        assert!(find_gaps(&h).is_empty(), "{name}: {:?}", find_gaps(&h));
        assert!(cliffs(&h).is_empty(), "{name}");
    }
}

#[test]
fn near_is_a_factor_two_band_around_the_tail_share() {
    assert!(near(0.01, 0.01) && near(0.005, 0.01) && near(0.02, 0.01));
    assert!(!near(0.0049, 0.01) && !near(0.021, 0.01) && !near(0.5, 0.0));
    // p50: the share below the gap must be near a half too.
    assert!(near(0.4, 0.5) && near(0.75, 0.5) && near(0.25, 0.5));
    assert!(!near(0.76, 0.5) && !near(0.9996, 0.5) && !near(0.24, 0.5));
}

/// A generator starved by a CPU quota made 99.96% of its requests slow: p50 (and everything
/// above it) is firmly in the slow mode, not on a cliff. With 40% slow, p50 is.
#[test]
fn p50_is_on_the_cliff_only_with_both_modes_near_half() {
    assert_eq!(flagged(&throttled(0.9996, 0)), Vec::<String>::new());
    assert_eq!(flagged(&throttled(0.4, 0)), ["p50"]);
}
