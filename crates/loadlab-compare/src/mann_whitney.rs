//! The two-sided Mann-Whitney U test (Wilcoxon rank-sum test) of "control and test come from
//! the same distribution", exact for the run counts benchmarks have.
//!
//! Rank-based, so it is unchanged by taking logs and needs no assumption about the shape of
//! the noise. This module only tests; it does not estimate the size of a difference (see
//! [`hodges_lehmann`](mod@crate::hodges_lehmann)) or decide what a p-value means for a user.

use crate::normal;
use crate::null_distribution::{binomial_f64, NullDistribution, EXACT_MAX_TOTAL};
use serde::Serialize;

/// How a p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Exact distribution of U; no ties in the pooled values.
    Exact,
    /// Exact permutation distribution of the rank sum over the observed midranks.
    ExactTied,
    /// Normal approximation with tie-corrected variance and continuity correction, used only
    /// when n + m exceeds [`EXACT_MAX_TOTAL`].
    Normal,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Exact => "exact Mann-Whitney U",
            Method::ExactTied => "exact Mann-Whitney U over tied ranks",
            Method::Normal => "Mann-Whitney U, normal approximation (tie and continuity corrected)",
        }
    }
}

/// The outcome of [`mann_whitney`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U for the test arm: pairs (control, test) where the test value is larger, ties counting
    /// one half. Ranges over 0..=n·m; n·m/2 means no tendency either way.
    pub u: f64,
    /// Two-sided p = min(1, 2 · min(P(U <= u), P(U >= u))).
    pub p_value: f64,
    pub method: Method,
}

/// The pooled values ranked: each arm's doubled rank sum (midranks for ties, doubled so they
/// stay integers) and the sizes of the tie groups in rank order.
struct Ranking {
    doubled_rank_sum: [u64; 2],
    tie_groups: Vec<usize>,
}

fn rank(control: &[f64], test: &[f64]) -> Ranking {
    let mut pooled: Vec<(f64, usize)> = control
        .iter()
        .map(|&v| (v, 0))
        .chain(test.iter().map(|&v| (v, 1)))
        .collect();
    pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut doubled_rank_sum = [0u64; 2];
    let mut tie_groups = Vec::new();
    let mut start = 0;
    while start < pooled.len() {
        // `==`, not `total_cmp`, so that 0.0 and -0.0 tie as the numbers they are.
        let end = start
            + pooled[start..]
                .iter()
                .take_while(|p| p.0 == pooled[start].0)
                .count();
        let t = end - start;
        // Ranks start..end (0-based) -> 1-based midrank (start + 1 + end) / 2, doubled.
        let doubled_midrank = (start + 1 + end) as u64;
        for p in &pooled[start..end] {
            doubled_rank_sum[p.1] += doubled_midrank;
        }
        tie_groups.push(t);
        start = end;
    }
    Ranking {
        doubled_rank_sum,
        tie_groups,
    }
}

/// Two-sided Mann-Whitney U test of `control` against `test`.
///
/// Exact whenever n + m <= [`EXACT_MAX_TOTAL`] (so every split of up to 50 runs per arm):
/// without ties from the distribution of U, with ties from the permutation distribution of the
/// rank sum over the actual midranks (conditional on the tie pattern, which is what makes it
/// exact). Larger samples use the normal approximation and say so in [`MannWhitney::method`].
///
/// # Panics
/// If either arm is empty or holds a NaN.
pub fn mann_whitney(control: &[f64], test: &[f64]) -> MannWhitney {
    assert!(
        !control.is_empty() && !test.is_empty(),
        "Mann-Whitney needs at least one value per arm"
    );
    assert!(
        control.iter().chain(test).all(|v| !v.is_nan()),
        "Mann-Whitney cannot rank NaN"
    );
    let (n, m) = (control.len(), test.len());
    let ranking = rank(control, test);
    let m_u64 = m as u64;
    // 2U = 2R - m(m + 1), from R = U + m(m + 1)/2.
    let doubled_u = ranking.doubled_rank_sum[1] - m_u64 * (m_u64 + 1);
    let u = doubled_u as f64 / 2.0;
    let tied = ranking.tie_groups.iter().any(|&t| t > 1);

    if n + m > EXACT_MAX_TOTAL {
        return MannWhitney {
            u,
            p_value: normal_p(u, n, m, &ranking.tie_groups),
            method: Method::Normal,
        };
    }
    let (p_value, method) = if !tied {
        let dist = NullDistribution::u_tie_free(n, m);
        let u = doubled_u / 2; // integral without ties
        (
            two_sided(dist.p_at_most(u), dist.p_at_least(u)),
            Method::Exact,
        )
    } else {
        // Count draws of the smaller arm: fewer rows in the table. The two-sided p is the same
        // for either arm because their rank sums add up to a constant.
        let (arm, k) = if m <= n { (1, m) } else { (0, n) };
        let dist = NullDistribution::doubled_rank_sum(&ranking.tie_groups, k);
        let observed = ranking.doubled_rank_sum[arm];
        (
            two_sided(dist.p_at_most(observed), dist.p_at_least(observed)),
            Method::ExactTied,
        )
    };
    MannWhitney { u, p_value, method }
}

fn two_sided(lower: f64, upper: f64) -> f64 {
    (2.0 * lower.min(upper)).min(1.0)
}

/// Normal approximation: mean nm/2, variance nm/12 · ((N + 1) - Σ(t³ - t) / (N(N - 1))), and
/// |U - mean| reduced by 1/2 for continuity (the same as scipy's `method='asymptotic'`).
fn normal_p(u: f64, n: usize, m: usize, tie_groups: &[usize]) -> f64 {
    let (nf, mf) = (n as f64, m as f64);
    let total = nf + mf;
    let tie_term: f64 = tie_groups
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum();
    let variance = nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if variance <= 0.0 {
        return 1.0; // every value tied: no evidence of any difference
    }
    let distance = ((u - nf * mf / 2.0).abs() - 0.5).max(0.0);
    (2.0 * normal::upper_tail(distance / variance.sqrt())).min(1.0)
}

/// The smallest two-sided p-value any data could give with `n` and `m` runs: complete
/// separation of the arms, one split of the C(n+m, n) at each extreme, so 2 / C(n+m, n)
/// (0.10 for 3 v 3, 2/70 ≈ 0.029 for 4 v 4, 2/252 ≈ 0.0079 for 5 v 5). Ties can only raise
/// it. With an empty arm no test is possible and this is 1.
pub fn min_attainable_p(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    (2.0 / binomial_f64(n + m, n)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_p_values() {
        assert!((min_attainable_p(3, 3) - 0.1).abs() < 1e-15);
        assert!((min_attainable_p(4, 4) - 2.0 / 70.0).abs() < 1e-15);
        assert!((min_attainable_p(5, 5) - 2.0 / 252.0).abs() < 1e-15);
        assert_eq!(min_attainable_p(1, 1), 1.0);
        assert_eq!(min_attainable_p(0, 5), 1.0);
    }

    #[test]
    fn complete_separation_reaches_the_smallest_p() {
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert_eq!(r.u, 9.0);
        assert!((r.p_value - 0.1).abs() < 1e-15);
        assert_eq!(r.method, Method::Exact);
        let r = mann_whitney(&[4.0, 5.0, 6.0, 7.0, 8.0], &[1.0, 2.0, 3.0, 0.5, 0.1]);
        assert_eq!(r.u, 0.0);
        assert!((r.p_value - 2.0 / 252.0).abs() < 1e-15);
    }

    #[test]
    fn ranks_with_ties() {
        let r = rank(&[1.0, 2.0, 2.0], &[2.0, 3.0]);
        // Pooled 1, 2, 2, 2, 3 -> ranks 1, 3, 3, 3, 5.
        assert_eq!(r.doubled_rank_sum, [2 + 6 + 6, 6 + 10]);
        assert_eq!(r.tie_groups, [1, 3, 1]);
    }

    #[test]
    fn all_values_equal_gives_p_one() {
        let r = mann_whitney(&[5.0; 4], &[5.0; 6]);
        assert_eq!(r.u, 12.0);
        assert_eq!(r.p_value, 1.0);
        assert_eq!(r.method, Method::ExactTied);
        let r = mann_whitney(&[5.0; 60], &[5.0; 60]);
        assert_eq!(r.p_value, 1.0);
        assert_eq!(r.method, Method::Normal);
    }
}
