//! The Hodges-Lehmann estimate of the shift between two arms and its exact distribution-free
//! confidence interval (Moses 1953; Bauer 1972).
//!
//! The shift is "test minus control", estimated by the median of all n·m pairwise differences.
//! The interval comes from inverting the Mann-Whitney test, so it needs only the exact null
//! distribution of U and no assumption about the noise. This module works on whatever scale
//! it is given; taking logs to get ratios is the choice of [`compare`](mod@crate::compare),
//! not made here.

use crate::normal;
use crate::null_distribution::{NullDistribution, EXACT_MAX_TOTAL};
use serde::Serialize;

/// The outcome of [`hodges_lehmann`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HodgesLehmann {
    /// Median of the differences `test[j] - control[i]`.
    pub estimate: f64,
    /// `[D(k), D(nm + 1 - k)]` covering the shift with probability at least the requested
    /// confidence; `None` when no interval can reach it with these run counts.
    pub interval: Option<(f64, f64)>,
    /// The interval's actual coverage, 1 - 2·P(U <= k - 1) (at least the requested level; the
    /// exact distribution is discrete). When `interval` is `None`, the best coverage these run
    /// counts allow: that of the widest interval [D(1), D(nm)], 1 - 2 / C(n+m, n).
    pub coverage: f64,
    /// Whether k came from the exact distribution of U (else the normal approximation).
    pub exact: bool,
}

/// Which order statistics bound the interval: the interval is `[D(k), D(nm + 1 - k)]` for
/// the 1-based `k`, or there is none.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalRank {
    pub k: Option<usize>,
    pub coverage: f64,
    pub exact: bool,
}

/// The rule, for arms of `n` and `m` values and confidence 1 - α:
///
/// k is the largest integer >= 1 with P(U <= k - 1) <= α/2, under the tie-free null
/// distribution of U. By the symmetry of U, P(D(k) <= shift <= D(nm + 1 - k))
/// = 1 - 2·P(U <= k - 1) >= 1 - α. If even k = 1 fails (P(U = 0) = 1 / C(n+m, n) > α/2)
/// there is no interval. This matches R's `wilcox.test(conf.int = TRUE)` except that R, in
/// that case, silently returns [D(1), D(nm)] with lower coverage, and R's quantile convention
/// gives one rank narrower when P(U <= k - 1) equals α/2 exactly, where this rule keeps the
/// interval whose coverage is exactly 1 - α.
///
/// Known values (two-sided 5% critical values of U from published tables are k - 1):
/// 5 v 5 -> k = 3 (coverage 1 - 8/252 ≈ 0.968); 4 v 4 -> k = 1; 10 v 10 -> k = 24; 3 v 3 -> none.
///
/// Above [`EXACT_MAX_TOTAL`] pooled values, the same rule on the normal approximation with
/// continuity correction: P(U <= k - 1) ≈ Φ((k - 1/2 - nm/2) / σ) <= α/2 gives
/// k = floor(nm/2 + 1/2 - z·σ), σ² = nm(n + m + 1)/12, z the upper α/2 normal quantile.
pub fn interval_rank(n: usize, m: usize, confidence: f64) -> IntervalRank {
    assert!(
        n > 0 && m > 0,
        "an interval needs at least one value per arm"
    );
    assert!(
        confidence > 0.0 && confidence < 1.0,
        "confidence must be in (0, 1), got {confidence}"
    );
    // A hair of slack so that a level like 0.90, whose 1 - 0.90 rounds below 0.1, still
    // admits an interval whose coverage is exactly 90%.
    let half_alpha = (1.0 - confidence) / 2.0 * (1.0 + 1e-9);
    let pairs = n * m;
    // The lower index may not pass the upper one: k <= nm + 1 - k.
    let k_max = pairs.div_ceil(2).max(1);

    if n + m <= EXACT_MAX_TOTAL {
        exact_rank(n, m, half_alpha, k_max)
    } else {
        normal_rank(n, m, half_alpha, k_max)
    }
}

fn exact_rank(n: usize, m: usize, half_alpha: f64, k_max: usize) -> IntervalRank {
    let dist = NullDistribution::u_tie_free(n, m);
    // Largest k with P(U <= k - 1) <= α/2; P grows with k, so walk up from k = 0 (none).
    let mut k = 0;
    while k < k_max && dist.p_at_most(k as u64) <= half_alpha {
        k += 1;
    }
    // For k = 0 report the coverage of the widest interval, k = 1.
    IntervalRank {
        k: (k > 0).then_some(k),
        coverage: 1.0 - 2.0 * dist.p_at_most(k.max(1) as u64 - 1),
        exact: true,
    }
}

fn normal_rank(n: usize, m: usize, half_alpha: f64, k_max: usize) -> IntervalRank {
    let (nf, mf) = (n as f64, m as f64);
    let mean = nf * mf / 2.0;
    let sd = (nf * mf * (nf + mf + 1.0) / 12.0).sqrt();
    let z = normal::upper_quantile(half_alpha);
    let k = (mean + 0.5 - z * sd).floor();
    let k = (k >= 1.0).then(|| (k as usize).min(k_max));
    let coverage_of = |k: usize| 1.0 - 2.0 * normal::upper_tail((mean - (k as f64 - 0.5)) / sd);
    IntervalRank {
        k,
        coverage: coverage_of(k.unwrap_or(1)),
        exact: false,
    }
}

/// Hodges-Lehmann shift of `test` relative to `control` with its confidence interval.
///
/// Builds and sorts all n·m differences, so memory is n·m floats: fine for benchmark run
/// counts, not for arms of many thousands of values.
///
/// # Panics
/// If either arm is empty, a value is NaN, or `confidence` is not in (0, 1).
pub fn hodges_lehmann(control: &[f64], test: &[f64], confidence: f64) -> HodgesLehmann {
    assert!(
        !control.is_empty() && !test.is_empty(),
        "Hodges-Lehmann needs at least one value per arm"
    );
    let mut differences: Vec<f64> = test
        .iter()
        .flat_map(|&b| control.iter().map(move |&a| b - a))
        .collect();
    assert!(
        differences.iter().all(|d| !d.is_nan()),
        "Hodges-Lehmann cannot use NaN"
    );
    differences.sort_by(f64::total_cmp);
    let estimate = median_of_sorted(&differences);
    let rank = interval_rank(control.len(), test.len(), confidence);
    let interval = rank
        .k
        .map(|k| (differences[k - 1], differences[differences.len() - k]));
    HodgesLehmann {
        estimate,
        interval,
        coverage: rank.coverage,
        exact: rank.exact,
    }
}

/// The median of sorted, non-empty values (mean of the middle two for an even count).
pub(crate) fn median_of_sorted(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided α = 0.05 critical values of U from published Mann-Whitney tables
    /// (reject when U <= value): the interval rank is that value plus one.
    #[test]
    fn interval_ranks_match_critical_value_tables() {
        for (n, m, critical) in [
            (4, 4, 0),
            (5, 5, 2),
            (5, 7, 5),
            (6, 6, 5),
            (8, 8, 13),
            (10, 10, 23),
        ] {
            let r = interval_rank(n, m, 0.95);
            assert_eq!(r.k, Some(critical + 1), "{n} v {m}");
            assert!(r.exact);
            assert!(r.coverage >= 0.95);
        }
        let r = interval_rank(5, 5, 0.95);
        assert!((r.coverage - (1.0 - 8.0 / 252.0)).abs() < 1e-15);
    }

    #[test]
    fn too_few_runs_give_no_interval_and_say_what_is_reachable() {
        let r = interval_rank(3, 3, 0.95);
        assert_eq!(r.k, None);
        assert!((r.coverage - 0.9).abs() < 1e-15);
        let h = hodges_lehmann(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], 0.95);
        assert_eq!(h.interval, None);
        assert_eq!(h.estimate, 1.0);
        // At 90% the widest interval suffices.
        let h = hodges_lehmann(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0], 0.90);
        assert_eq!(h.interval, Some((-1.0, 3.0)));
    }

    #[test]
    fn large_sample_rule_agrees_with_exact_at_the_limit() {
        // Within one rank (the approximation ignores skew-free discreteness at the edges).
        for (n, m) in [(50, 50), (30, 70), (40, 45)] {
            let exact = exact_rank(n, m, 0.025, n * m);
            let approx = normal_rank(n, m, 0.025, n * m);
            let (a, b) = (exact.k.unwrap(), approx.k.unwrap());
            assert!(a.abs_diff(b) <= 1, "{n} v {m}: exact {a}, approximate {b}");
            assert!((exact.coverage - approx.coverage).abs() < 1e-3);
        }
        let r = interval_rank(51, 50, 0.95);
        assert!(!r.exact);
        assert!((r.coverage - 0.95).abs() < 2e-3);
    }

    #[test]
    fn median() {
        assert_eq!(median_of_sorted(&[1.0]), 1.0);
        assert_eq!(median_of_sorted(&[1.0, 2.0]), 1.5);
        assert_eq!(median_of_sorted(&[1.0, 2.0, 10.0]), 2.0);
    }
}
