//! Holm-Bonferroni adjustment of p-values for comparing several metrics at once.
//!
//! Comparing many metrics at 95% would flag one in twenty by chance; Holm's step-down keeps
//! the chance of any false "significant" at the nominal level without Bonferroni's full cost.
//! This module adjusts numbers only; which metrics form the family is the caller's choice.

/// Holm-adjusted p-values, in the order given.
///
/// Sorting ascending, the i-th smallest (0-based) becomes (k - i)·p, made monotone by taking
/// the running maximum and capped at 1: a metric is significant after adjustment exactly when
/// Holm's step-down procedure rejects it. NaN inputs sort last and stay NaN.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let k = p_values.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut adjusted = vec![0.0; k];
    let mut running_max = 0.0f64;
    for (i, &index) in order.iter().enumerate() {
        let scaled = ((k - i) as f64 * p_values[index]).min(1.0);
        running_max = if scaled.is_nan() {
            scaled
        } else {
            running_max.max(scaled)
        };
        adjusted[index] = running_max;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_empty() {
        assert_eq!(holm(&[]), Vec::<f64>::new());
        assert_eq!(holm(&[0.03]), vec![0.03]);
    }
}
