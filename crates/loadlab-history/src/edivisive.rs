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
    /// Splits one permutation test may evaluate, all its shuffles together (a window of
    /// len values costs about len²): past it, fewer shuffles ([`permutations_for`]). The
    /// default keeps all 999 up to 250 values, and so every answer on such a series.
    pub permutation_budget: usize,
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
            permutation_budget: 999 * 250 * 250,
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
///
/// O(len²) time and O(len) memory: the sums of distances are updated as τ and κ move, in
/// the same order as the pair-by-pair definition sums them, so q is the same to the bit.
pub fn best_split(window: &[f64], min_size: usize, search_end: bool) -> Option<(usize, f64)> {
    best_split_until(window, min_size, search_end, f64::INFINITY)
}

/// [`best_split`], but it may stop at the first split whose q reaches `enough`: a
/// permutation test only asks whether a shuffled window's best reaches the observed q.
fn best_split_until(
    window: &[f64],
    min_size: usize,
    search_end: bool,
    enough: f64,
) -> Option<(usize, f64)> {
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
    // to_x[k] = Σ_{i<τ} |w_i - w_k| for the τ at hand, kept for k ≥ τ only (the ones κ
    // reaches); diag[k] = Σ_{i<k} |w_i - w_k|, which is to_x[k] when τ reaches k. A first
    // pass of τ fills diag (each τ's update runs over k at once, where summing each diag
    // alone would wait on every addition), the second searches. Each step of κ costs O(1).
    let mut to_x = vec![0.0; len];
    let mut diag = vec![0.0; len];
    for tau in 1..len {
        add_to_x(&mut to_x, window, tau);
        diag[tau] = to_x[tau];
    }
    to_x.fill(0.0);
    let mut best = None;
    let mut within_x = 0.0;
    for tau in 1..=len - min_size {
        within_x += diag[tau - 1];
        add_to_x(&mut to_x, window, tau);
        if tau < min_size {
            continue;
        }
        let (mut within_y, mut between) = (0.0, 0.0);
        for kappa in tau..len {
            // Add window[kappa] to Y = window[tau..kappa].
            within_y += diag[kappa] - to_x[kappa];
            between += to_x[kappa];
            let m = kappa + 1 - tau;
            if m >= min_size {
                let q = q_of(within_x, within_y, between, tau, m);
                if q >= enough {
                    return Some((tau, q));
                }
                best = keep_larger(best, (tau, q));
            }
        }
    }
    best
}

/// τ moves past `window[τ - 1]`: its distance to each later value joins their sums to X.
fn add_to_x(to_x: &mut [f64], window: &[f64], tau: usize) {
    let joined = window[tau - 1];
    for (sum, w) in to_x[tau..].iter_mut().zip(&window[tau..]) {
        *sum += (joined - w).abs();
    }
}

/// The earlier of two equal splits wins, so ties resolve the same way every time.
fn keep_larger(best: Option<(usize, f64)>, c: (usize, f64)) -> Option<(usize, f64)> {
    match best {
        Some(b) if b.1 >= c.1 => Some(b),
        _ => Some(c),
    }
}

/// The shuffles one permutation test takes: [`Options::permutations`], fewer when that many
/// would evaluate more than [`Options::permutation_budget`] splits (about len² per window
/// of len values), but never so few that p could not go below alpha / 2.
pub fn permutations_for(windows: &[(usize, usize)], opts: &Options) -> usize {
    let per_shuffle: usize = windows
        .iter()
        .map(|&(a, b)| b - a)
        .filter(|&len| len >= 2 * opts.min_size.max(1))
        .map(|len| len * len)
        .sum();
    let fewest = (2.0 / opts.alpha).ceil() as usize - 1;
    let afforded = opts.permutation_budget / per_shuffle.max(1);
    opts.permutations.min(afforded.max(fewest))
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
        let permutations = permutations_for(&windows, opts);
        // Once enough shuffles reached q, p > alpha whatever the others do: the test (and
        // the search) stops there; p is reported only for a split that is kept.
        let p_of = |at_least: usize| (1 + at_least) as f64 / (1 + permutations) as f64;
        let mut shuffled = values.to_vec();
        let mut at_least = 0usize;
        for _ in 0..permutations {
            let mut reached = false;
            for &(a, b) in &windows {
                // Every window is shuffled, reached or not, so the draws stay the same.
                rng.shuffle(&mut shuffled[a..b]);
                if !reached {
                    let best = best_split_until(&shuffled[a..b], opts.min_size, opts.search_end, q);
                    reached = best.is_some_and(|(_, most)| most >= q);
                }
            }
            at_least += usize::from(reached);
            if p_of(at_least) > opts.alpha {
                break;
            }
        }
        let p_value = p_of(at_least);
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
mod tests;
