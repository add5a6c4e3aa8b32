//! Tests of [`super`] that need no network: the budget and the probes' intervals.

use super::*;

#[test]
fn a_probe_starts_only_if_it_ends_within_the_budget() {
    let s = Duration::from_secs;
    assert!(fits(s(50), s(5), None));
    assert!(fits(s(50), s(10), Some(s(60))));
    assert!(!fits(s(51), s(10), Some(s(60))));
}

#[test]
fn intervals_are_a_tenth_of_the_probe() {
    let shape = |d| ProbeShape {
        warmup: Duration::ZERO,
        duration: Duration::from_millis(d),
        cooldown: Duration::ZERO,
        first_warmup: Duration::ZERO,
    };
    assert_eq!(shape(3_000).interval(), Duration::from_millis(300));
    assert_eq!(shape(500).interval(), Duration::from_millis(100));
    assert_eq!(shape(10_000).interval(), Duration::from_secs(1));
}
