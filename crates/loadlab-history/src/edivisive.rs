//! E-Divisive means: change points in a series, found by energy statistics and confirmed one
//! at a time by a permutation test (Matteson & James, "A nonparametric approach for multiple
//! change point analysis of multivariate data", JASA 2014), in the form MongoDB's performance
//! CI uses (Daly et al., ICPE 2020; the `signal-processing-algorithms` package, now Apache
//! Otava's `change_point_divisive`).
//!
//! # The statistic
//!
//! Split a window `Z[a..b)` at τ into `X = Z[a..τ)` (n values) and `Y = Z[τ..b)` (m values).
//! With averages of pairwise distances `|·|` between and within the two,
//!
//! ```text
//! E(X, Y) = 2·mean|x - y| - mean|x - x'| - mean|y - y'|      q(τ) = n·m / (n + m) · E(X, Y)
//! ```
//!
//! the best split of a window is the τ with the largest q. As in the paper, Y may end before
//! the window does: the search is over τ and Y's end κ (O(n²) per window with prefix sums),
//! so a change that reverts within the window (a regression fixed later) is found too;
//! MongoDB's package fixes κ at the window's end ([`Options::search_end`] = false gives
//! exactly its statistic, which the tests compare with it). Within-sample means divide by n²
//! (all ordered pairs, the zero diagonal included) as MongoDB's package does, where the
//! paper's U-statistic divides by n(n - 1); with at least `min_size` values a side the two
//! rank splits alike. The distance's exponent is 1.
//!
//! # The search
//!
//! Hierarchical: each round takes the windows between the change points found so far, finds
//! each one's best split (with at least `min_size` values on either side), and keeps the
//! best of them if a permutation test says it is significant: the values of every window are
//! shuffled within their window `permutations` times, and p = (1 + #{shuffled best ≥
//! observed best}) / (1 + permutations). The search stops at the first split that is not
//! significant at `alpha`.
//!
//! # Robustness to a wild value
//!
//! Each value is first clipped to within four noise scales of its neighbours' median
//! ([`tame`], [`Options::tame`], on by default): untamed, one wild value makes any short
//! window holding it look like a change (the search of κ finds that window). `min_size` (3 by default) means no split isolates one or two values; and callers
//! feed one value per revision (the median of its runs, on log values), so one wild run of
//! several cannot move its revision at all.
//!
//! Pure: a function of the series and the options (the shuffles come from a seeded
//! generator, so a series always gives the same answer). This module must not know what the
//! values measure, take logs, or read anything.

use serde::Serialize;

/// How the search is run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Options {
    /// A split is kept when its permutation p-value is at most this.
    pub alpha: f64,
    /// Shuffles per permutation test; p can go no lower than 1 / (1 + permutations).
    pub permutations: usize,
    /// The fewest values on either side of a split.
    pub min_size: usize,
    /// Seeds the shuffles, so that the same series always gives the same answer.
    pub seed: u64,
    /// Clip each value to within [`TAME_SCALES`] noise scales of the median of its five
    /// neighbours (see [`tame`]) before the search: one wild value then weighs no more than
    /// an unlucky ordinary one, while steps pass unchanged.
    pub tame: bool,
    /// Search each split's end κ too, as the paper does (true), or end every split at its
    /// window's end, as MongoDB's package does (false; it misses a change that reverts).
    pub search_end: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.01,
            permutations: 999,
            min_size: 3,
            seed: 0x6c6f_6164_6c61_6221,
            tame: true,
            search_end: true,
        }
    }
}

/// A change point: the series changes starting at `index`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChangePoint {
    /// The first value after the change.
    pub index: usize,
    /// q at the split, within the window it was found in.
    pub q: f64,
    /// The permutation test's p-value for that split.
    pub p_value: f64,
}

/// q(τ) for every τ in `0..values.len()` (X = `values[..τ]`, Y = `values[τ..]`); q(0) = 0.
/// O(n²), by moving τ one step at a time and updating three sums of distances.
pub fn q_values(values: &[f64]) -> Vec<f64> {
    let len = values.len();
    let d = |i: usize, j: usize| (values[i] - values[j]).abs();
    // Sums over unordered pairs: within X, within Y, and between them.
    let (mut within_x, mut between) = (0.0, 0.0);
    let mut within_y: f64 = (0..len)
        .map(|i| (i + 1..len).map(|j| d(i, j)).sum::<f64>())
        .sum();
    let mut out = Vec::with_capacity(len);
    for tau in 0..len {
        out.push(q_of(within_x, within_y, between, tau, len - tau));
        // Move values[tau] from Y to X.
        let to_x: f64 = (0..tau).map(|i| d(i, tau)).sum();
        let to_y: f64 = (tau + 1..len).map(|j| d(tau, j)).sum();
        between += to_y - to_x;
        within_x += to_x;
        within_y -= to_y;
    }
    out
}

/// q from the sums of distances over unordered pairs.
fn q_of(within_x: f64, within_y: f64, between: f64, n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 0.0;
    }
    let (n, m) = (n as f64, m as f64);
    let e = 2.0 * between / (n * m) - 2.0 * within_x / (n * n) - 2.0 * within_y / (m * m);
    n * m / (n + m) * e
}

/// The best split of one window, `(τ, q)` with τ relative to the window, or `None` when the
/// window is too short to split with `min_size` values on each side. With `search_end`, Y
/// runs from τ to the best end κ (the paper's search, which finds a change that reverts
/// within the window); else to the window's end (MongoDB's).
pub fn best_split(window: &[f64], min_size: usize, search_end: bool) -> Option<(usize, f64)> {
    let min_size = min_size.max(1);
    let len = window.len();
    if len < 2 * min_size {
        return None;
    }
    if !search_end {
        let q = q_values(window);
        return (min_size..=len - min_size)
            .map(|tau| (tau, q[tau]))
            .fold(None, keep_larger);
    }
    // below[k][t] = Σ_{i<t} |w_i - w_k|: each step of κ then costs O(1), the window O(len²).
    let below: Vec<Vec<f64>> = (0..len)
        .map(|k| {
            let mut row = Vec::with_capacity(len + 1);
            let mut sum = 0.0;
            row.push(0.0);
            for i in 0..len {
                sum += (window[i] - window[k]).abs();
                row.push(sum);
            }
            row
        })
        .collect();
    let mut best = None;
    let mut within_x = 0.0;
    for tau in 1..=len - min_size {
        within_x += below[tau - 1][tau - 1];
        if tau < min_size {
            continue;
        }
        let (mut within_y, mut between) = (0.0, 0.0);
        for (kappa, row) in below.iter().enumerate().skip(tau) {
            // Add window[kappa] to Y = window[tau..kappa].
            within_y += row[kappa] - row[tau];
            between += row[tau];
            let m = kappa + 1 - tau;
            if m >= min_size {
                best = keep_larger(best, (tau, q_of(within_x, within_y, between, tau, m)));
            }
        }
    }
    best
}

/// The earlier of two equal splits wins, so ties resolve the same way every time.
fn keep_larger(best: Option<(usize, f64)>, c: (usize, f64)) -> Option<(usize, f64)> {
    match best {
        Some(b) if b.1 >= c.1 => Some(b),
        _ => Some(c),
    }
}

/// The change points of `values`, in index order.
///
/// # Panics
/// If a value is not finite, or `alpha` is not in (0, 1).
pub fn e_divisive(values: &[f64], opts: &Options) -> Vec<ChangePoint> {
    assert!(
        values.iter().all(|v| v.is_finite()),
        "E-Divisive needs finite values"
    );
    assert!(
        opts.alpha > 0.0 && opts.alpha < 1.0,
        "alpha must be in (0, 1)"
    );
    let tamed;
    let values = if opts.tame {
        tamed = tame(values);
        &tamed
    } else {
        values
    };
    let mut rng = SplitMix64(opts.seed);
    let mut found: Vec<ChangePoint> = Vec::new();
    loop {
        let mut bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
        bounds.sort_unstable();
        bounds.insert(0, 0);
        bounds.push(values.len());
        let windows: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let best = windows
            .iter()
            .filter_map(|&(a, b)| {
                best_split(&values[a..b], opts.min_size, opts.search_end).map(|(t, q)| (a + t, q))
            })
            .fold(None, keep_larger);
        let Some((index, q)) = best else {
            break;
        };
        let mut shuffled = values.to_vec();
        let mut at_least = 0usize;
        for _ in 0..opts.permutations {
            let mut most = f64::NEG_INFINITY;
            for &(a, b) in &windows {
                rng.shuffle(&mut shuffled[a..b]);
                if let Some((_, q)) = best_split(&shuffled[a..b], opts.min_size, opts.search_end) {
                    most = most.max(q);
                }
            }
            if most >= q {
                at_least += 1;
            }
        }
        let p_value = (1 + at_least) as f64 / (1 + opts.permutations) as f64;
        if p_value > opts.alpha {
            break;
        }
        found.push(ChangePoint { index, q, p_value });
    }
    found.sort_by_key(|c| c.index);
    found
}

/// How many noise scales from its neighbours' median a value may lie before [`tame`]
/// clips it.
pub const TAME_SCALES: f64 = 4.0;

/// Each value clipped to its neighbours' median ± [`TAME_SCALES`] · σ̂. The median is of the
/// five values centred on it (fewer at the ends), which follows a step exactly and ignores
/// one wild value; σ̂ is the noise scale from successive differences, median |Δ| / 0.954
/// (the median of |Δ| for normal noise of σ is 0.954·σ), which a few steps barely move.
/// A series with no noise (σ̂ = 0) is returned as it is.
///
/// Why not ranks: on ranks a step's first values, if they happen to be its lowest, read
/// as part of the stretch before, and the change point lands late.
pub fn tame(values: &[f64]) -> Vec<f64> {
    let mut steps: Vec<f64> = values.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    if steps.is_empty() {
        return values.to_vec();
    }
    steps.sort_by(f64::total_cmp);
    let sigma = sorted_median(&steps) / 0.954;
    if sigma == 0.0 {
        return values.to_vec();
    }
    (0..values.len())
        .map(|i| {
            let mut near = values[i.saturating_sub(2)..(i + 3).min(values.len())].to_vec();
            near.sort_by(f64::total_cmp);
            let centre = sorted_median(&near);
            values[i].clamp(centre - TAME_SCALES * sigma, centre + TAME_SCALES * sigma)
        })
        .collect()
}

fn sorted_median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Steele, Lea and Flood's SplitMix64: small, fast and good enough to shuffle with; kept
/// here so the detector needs no random-number crate and its answers never change with one.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fisher-Yates; the bias of `% n` is below 2⁻⁵⁰ for the lengths a history has.
    fn shuffle(&mut self, values: &mut [f64]) {
        for i in (1..values.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            values.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// q by its definition, pair by pair, to check the O(n²) update against.
    fn q_direct(values: &[f64], tau: usize) -> f64 {
        let (x, y) = values.split_at(tau);
        if x.is_empty() || y.is_empty() {
            return 0.0;
        }
        let mean = |a: &[f64], b: &[f64]| {
            a.iter()
                .flat_map(|u| b.iter().map(move |v| (u - v).abs()))
                .sum::<f64>()
                / (a.len() * b.len()) as f64
        };
        let (n, m) = (x.len() as f64, y.len() as f64);
        n * m / (n + m) * (2.0 * mean(x, y) - mean(x, x) - mean(y, y))
    }

    #[test]
    fn q_values_match_the_definition() {
        let values = [1.0, 3.0, 2.0, 8.0, 9.5, 7.0, 8.2, 1.5];
        let q = q_values(&values);
        for (tau, got) in q.iter().enumerate() {
            let want = q_direct(&values, tau);
            assert!((got - want).abs() < 1e-12, "τ={tau}: {got} against {want}");
        }
    }

    /// A hand-computed case: [0, 0, 1, 1] split in the middle: mean|x-y| = 1, within 0, so
    /// E = 2 and q = 2·2/4·2 = 2; at τ=1, X=[0], Y=[0,1,1]: mean|x-y| = 2/3, within Y
    /// 4/9, E = 4/3 - 4/9 = 8/9, q = 3/4 · 8/9 = 2/3.
    #[test]
    fn known_q_values() {
        let q = q_values(&[0.0, 0.0, 1.0, 1.0]);
        let want = [0.0, 2.0 / 3.0, 2.0, 2.0 / 3.0];
        for (got, want) in q.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn short_or_constant_series_have_no_change_point() {
        let opts = Options::default();
        for series in [vec![], vec![1.0], vec![1.0; 5], vec![2.0; 40]] {
            assert!(e_divisive(&series, &opts).is_empty(), "{series:?}");
        }
    }

    /// Table: exact steps with no noise are found exactly, as one or several change points.
    #[test]
    fn noiseless_steps_are_found_where_they_are() {
        let step = |levels: &[(usize, f64)]| -> Vec<f64> {
            levels
                .iter()
                .flat_map(|&(n, v)| std::iter::repeat_n(v, n))
                .collect()
        };
        type Levels = &'static [(usize, f64)];
        let cases: &[(Levels, &[usize])] = &[
            (&[(10, 0.0), (10, 1.0)], &[10]),
            (&[(20, 0.0), (5, 0.5)], &[20]),
            (&[(10, 0.0), (10, 1.0), (10, 0.0)], &[10, 20]),
            (&[(8, 0.0), (8, 0.3), (8, 0.9), (8, 0.2)], &[8, 16, 24]),
        ];
        for (levels, want) in cases {
            let got: Vec<usize> = e_divisive(&step(levels), &Options::default())
                .iter()
                .map(|c| c.index)
                .collect();
            assert_eq!(&got, want, "{levels:?}");
        }
    }

    #[test]
    fn a_change_shorter_than_min_size_at_the_end_is_not_split_off() {
        let mut values = vec![0.0; 20];
        values.extend([1.0, 1.0]);
        assert!(e_divisive(&values, &Options::default()).is_empty());
        values.push(1.0);
        let found = e_divisive(&values, &Options::default());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].index, 20);
    }

    #[test]
    fn the_same_series_and_seed_give_the_same_p_values() {
        let values: Vec<f64> = (0..30).map(|i| ((i * 7919) % 13) as f64 / 13.0).collect();
        let a = e_divisive(&values, &Options::default());
        let b = e_divisive(&values, &Options::default());
        assert_eq!(a, b);
    }

    /// Table: what taming keeps (steps, noiseless series, ordinary noise) and what it clips
    /// (one wild value, to its neighbours' median plus four noise scales).
    #[test]
    fn taming_clips_a_wild_value_and_keeps_steps() {
        let noise = [0.0, 0.1, -0.1, 0.05, -0.05, 0.1, 0.0, -0.1, 0.05, 0.0];
        let cases: Vec<(Vec<f64>, Vec<f64>)> = vec![
            (vec![], vec![]),
            (vec![1.0; 6], vec![1.0; 6]),
            (
                vec![0.0, 0.0, 0.0, 5.0, 5.0, 5.0],
                vec![0.0, 0.0, 0.0, 5.0, 5.0, 5.0],
            ),
            (noise.to_vec(), noise.to_vec()),
        ];
        for (input, want) in cases {
            assert_eq!(tame(&input), want, "{input:?}");
        }
        let step: Vec<f64> = noise
            .iter()
            .enumerate()
            .map(|(i, v)| v + if i >= 5 { 3.0 } else { 0.0 })
            .collect();
        assert_eq!(tame(&step), step, "a step of 30 noise scales passes");
        let mut wild = noise.to_vec();
        wild[4] = 100.0;
        let tamed = tame(&wild);
        assert!(tamed[4] < 1.0, "{tamed:?}");
        assert_eq!(tamed[..4], wild[..4]);
        assert_eq!(tamed[5..], wild[5..]);
    }

    #[test]
    fn the_shuffle_is_a_permutation() {
        let mut rng = SplitMix64(7);
        let mut v: Vec<f64> = (0..50).map(f64::from).collect();
        rng.shuffle(&mut v);
        assert_ne!(v, (0..50).map(f64::from).collect::<Vec<_>>());
        v.sort_by(f64::total_cmp);
        assert_eq!(v, (0..50).map(f64::from).collect::<Vec<_>>());
    }
}
