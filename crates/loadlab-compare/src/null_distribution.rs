//! Exact null distributions of the Mann-Whitney statistic: under "both arms come from the same
//! distribution" every one of the C(n+m, m) ways to split the pooled ranks between the arms is
//! equally likely, so a statistic's distribution is a count of splits per value.
//!
//! Counts are exact integers, so tail probabilities carry no accumulated rounding: a `u128`
//! holds C(100, 50) ≈ 1.0e29, the largest total allowed by [`EXACT_MAX_TOTAL`]. This module
//! does not rank data, pick between exact and approximate methods, or form p-values; that is
//! [`mann_whitney`](mod@crate::mann_whitney)'s job.

/// The largest pooled sample size (n + m) for which exact counts are computed. C(100, k) fits
/// in a `u128` for every k, and the tied-rank count below stays well under a second; beyond it
/// callers use the normal approximation.
pub const EXACT_MAX_TOTAL: usize = 100;

/// A distribution over an integer-valued statistic, stored as cumulative counts of splits.
#[derive(Debug, Clone, PartialEq)]
pub struct NullDistribution {
    /// The smallest value the statistic can take; `cumulative[i]` counts splits with value
    /// at most `lowest + i`.
    lowest: u64,
    cumulative: Vec<u128>,
}

impl NullDistribution {
    /// The distribution of U (pairs in which the second arm's value is the larger) for arms of
    /// `n` and `m` values with no ties.
    ///
    /// The count of splits with U = u is the coefficient of q^u in the Gaussian binomial
    /// [n+m choose n]_q = Π_{i=1..n} (1 - q^{m+i}) / (1 - q^i), which is the closed form of the
    /// classic recursion f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u). Building it factor by
    /// factor costs O(n · nm) additions instead of the recursion's table of n · m · nm.
    ///
    /// # Panics
    /// If n + m exceeds [`EXACT_MAX_TOTAL`] (the counts could overflow).
    pub fn u_tie_free(n: usize, m: usize) -> Self {
        assert!(
            n + m <= EXACT_MAX_TOTAL,
            "exact U distribution limited to n + m <= {EXACT_MAX_TOTAL}"
        );
        let degree = n * m;
        let mut counts = vec![0u128; degree + 1];
        counts[0] = 1;
        for i in 1..=n {
            // Divide by (1 - q^i): multiply by the series 1 + q^i + q^2i + ..., truncated at
            // `degree`, which is exact because the final polynomial has that degree.
            for j in i..=degree {
                counts[j] += counts[j - i];
            }
            // Multiply by (1 - q^{m+i}). Going downwards reads only old coefficients, and each
            // new one is a coefficient of [m+i choose i]_q, so nothing goes negative.
            let step = m + i;
            for j in (step..=degree).rev() {
                counts[j] -= counts[j - step];
            }
        }
        Self::from_counts(0, counts)
    }

    /// The distribution of the doubled rank sum of `k` values drawn from a pool whose sorted
    /// values fall into tie groups of the given sizes (in rank order). Tied values share their
    /// midrank, so this is the permutation distribution conditional on the observed ties;
    /// doubling keeps the half-integer midranks integral.
    ///
    /// Counted by dynamic programming over groups: choosing j of a group's t members adds
    /// j times its doubled midrank, in C(t, j) ways. Cost is about N · k · (largest sum).
    ///
    /// # Panics
    /// If the pool exceeds [`EXACT_MAX_TOTAL`] or `k` exceeds the pool.
    pub fn doubled_rank_sum(tie_groups: &[usize], k: usize) -> Self {
        let pool: usize = tie_groups.iter().sum();
        assert!(
            pool <= EXACT_MAX_TOTAL,
            "exact rank-sum distribution limited to {EXACT_MAX_TOTAL} values"
        );
        assert!(k <= pool, "cannot draw {k} of {pool} values");
        // The largest doubled sum is that of the top k ranks: 2 · (sum of the top k ranks).
        let max_sum = (pool + 1 - k..=pool).sum::<usize>() * 2;
        // table[c][s]: ways to choose c values (so far) with doubled rank sum s.
        let mut table = vec![vec![0u128; max_sum + 1]; k + 1];
        table[0][0] = 1;
        let mut reached = 0; // the largest sum any row can hold so far
        let mut first_rank = 1;
        for &t in tie_groups {
            let doubled_midrank = 2 * first_rank + t - 1;
            let binomials = binomial_row(t);
            // Descending c, so rows c - j with j >= 1 are still the previous groups' counts.
            for c in (1..=k).rev() {
                for j in 1..=t.min(c) {
                    let shift = j * doubled_midrank;
                    let ways = binomials[j];
                    let (lower, upper) = table.split_at_mut(c);
                    let (from, to) = (&lower[c - j], &mut upper[0]);
                    for s in 0..=reached.min(max_sum.saturating_sub(shift)) {
                        if from[s] != 0 {
                            to[s + shift] += from[s] * ways;
                        }
                    }
                }
            }
            reached = (reached + t * doubled_midrank).min(max_sum);
            first_rank += t;
        }
        let row = std::mem::take(&mut table[k]);
        let lowest = row.iter().position(|&c| c != 0).unwrap_or(0);
        let highest = row.iter().rposition(|&c| c != 0).unwrap_or(0);
        Self::from_counts(lowest as u64, row[lowest..=highest].to_vec())
    }

    fn from_counts(lowest: u64, mut counts: Vec<u128>) -> Self {
        for i in 1..counts.len() {
            counts[i] += counts[i - 1];
        }
        Self {
            lowest,
            cumulative: counts,
        }
    }

    /// The number of splits counted: C(n+m, n).
    pub fn total(&self) -> u128 {
        *self
            .cumulative
            .last()
            .expect("a distribution has at least one value")
    }

    /// Splits whose statistic is at most `x`.
    pub fn count_at_most(&self, x: u64) -> u128 {
        if x < self.lowest {
            return 0;
        }
        let i = (x - self.lowest) as usize;
        self.cumulative[i.min(self.cumulative.len() - 1)]
    }

    /// P(statistic <= x).
    pub fn p_at_most(&self, x: u64) -> f64 {
        self.count_at_most(x) as f64 / self.total() as f64
    }

    /// P(statistic >= x).
    pub fn p_at_least(&self, x: u64) -> f64 {
        let below = if x == 0 { 0 } else { self.count_at_most(x - 1) };
        (self.total() - below) as f64 / self.total() as f64
    }
}

/// C(t, 0..=t). t is at most [`EXACT_MAX_TOTAL`], so every entry fits in a `u128`.
fn binomial_row(t: usize) -> Vec<u128> {
    let mut row = vec![1u128; t + 1];
    for j in 1..=t {
        row[j] = row[j - 1] * (t + 1 - j) as u128 / j as u128;
    }
    row
}

/// C(n, k) as a float, for sizes where the exact count would not fit.
pub fn binomial_f64(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Textbook tables (e.g. Siegel & Castellan, Table J) give P(U <= u) for small arms.
    #[test]
    fn tie_free_counts_match_tables() {
        let d = NullDistribution::u_tie_free(3, 3);
        assert_eq!(d.total(), 20);
        // U for 3 v 3: counts 1,1,2,3,3,3,3,2,1,1.
        let counts: Vec<u128> = (0..=9)
            .map(|u| d.count_at_most(u) - if u == 0 { 0 } else { d.count_at_most(u - 1) })
            .collect();
        assert_eq!(counts, [1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);

        let d = NullDistribution::u_tie_free(5, 5);
        assert_eq!(d.total(), 252);
        assert_eq!(d.count_at_most(2), 4);
        assert_eq!(d.count_at_most(3), 7);
        assert_eq!(d.count_at_most(25), 252);

        let d = NullDistribution::u_tie_free(4, 4);
        assert_eq!(d.total(), 70);
        assert_eq!(d.count_at_most(0), 1);
        assert_eq!(d.count_at_most(1), 2);
    }

    #[test]
    fn tie_free_is_symmetric_in_arm_sizes_and_values() {
        let a = NullDistribution::u_tie_free(5, 7);
        let b = NullDistribution::u_tie_free(7, 5);
        assert_eq!(a, b);
        assert_eq!(a.total(), 792);
        for u in 0..=35 {
            assert_eq!(a.p_at_most(u), a.p_at_least(35 - u));
        }
    }

    #[test]
    fn largest_exact_case_does_not_overflow() {
        let d = NullDistribution::u_tie_free(50, 50);
        // C(100, 50)
        assert_eq!(d.total(), 100_891_344_545_564_193_334_812_497_256);
        let d = NullDistribution::u_tie_free(1, 99);
        assert_eq!(d.total(), 100);
    }

    #[test]
    fn without_ties_the_rank_sum_matches_u() {
        // Singleton groups: doubled rank sum of the 5 values = 2U + 5·6.
        let ranked = NullDistribution::doubled_rank_sum(&[1; 12], 5);
        let u = NullDistribution::u_tie_free(5, 7);
        assert_eq!(ranked.total(), u.total());
        for x in 0..=35u64 {
            assert_eq!(ranked.count_at_most(2 * x + 30), u.count_at_most(x));
        }
    }

    #[test]
    fn tied_counts_by_hand() {
        // Pool 1, 2, 2, 3 -> midranks 1, 2.5, 2.5, 4 (doubled 2, 5, 5, 8). The six pairs:
        // {1, 2.5} twice -> 7, {1, 4} -> 10, {2.5, 2.5} -> 10, {2.5, 4} twice -> 13.
        let d = NullDistribution::doubled_rank_sum(&[1, 2, 1], 2);
        assert_eq!(d.total(), 6);
        assert_eq!(d.count_at_most(6), 0);
        assert_eq!(d.count_at_most(7), 2);
        assert_eq!(d.count_at_most(10), 4);
        assert_eq!(d.count_at_most(13), 6);
        assert_eq!(d.p_at_least(13), 2.0 / 6.0);
    }

    #[test]
    fn all_tied_has_one_value() {
        let d = NullDistribution::doubled_rank_sum(&[6], 3);
        assert_eq!(d.total(), 20);
        assert_eq!(d.p_at_most(21), 1.0);
        assert_eq!(d.p_at_least(21), 1.0);
        assert_eq!(d.p_at_most(20), 0.0);
    }

    #[test]
    fn binomials() {
        assert_eq!(binomial_row(5), [1, 5, 10, 10, 5, 1]);
        assert_eq!(binomial_f64(10, 5), 252.0);
        assert_eq!(binomial_f64(6, 3), 20.0);
    }
}
