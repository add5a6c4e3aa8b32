//! A latency distribution in microseconds, summarised from a full HDR histogram.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p99_9: f64,
    pub p99_99: f64,
    pub max: f64,
}

impl LatencySummary {
    pub fn from_histogram(h: &Histogram<u64>) -> Option<LatencySummary> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1_000.0;
        let q = |q: f64| us(h.value_at_quantile(q));
        Some(LatencySummary {
            count: h.len(),
            min: us(h.min()),
            mean: h.mean() / 1_000.0,
            stdev: h.stdev() / 1_000.0,
            p50: q(0.50),
            p75: q(0.75),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p99_9: q(0.999),
            p99_99: q(0.9999),
            max: us(h.max()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::new_histogram;

    #[test]
    fn summary_is_in_microseconds() {
        let mut h = new_histogram();
        for _ in 0..99 {
            h.record(100_000).unwrap(); // 100 us
        }
        h.record(10_000_000).unwrap(); // 10 ms
        let s = LatencySummary::from_histogram(&h).unwrap();
        assert_eq!(s.count, 100);
        assert!((s.p50 - 100.0).abs() < 0.1, "{s:?}");
        assert!((s.max - 10_000.0).abs() < 10.0, "{s:?}");
        assert!(LatencySummary::from_histogram(&new_histogram()).is_none());
    }
}
