//! A plain summary of one arm's raw run values, shown next to the verdict so a reader can see
//! the spread behind it.
//!
//! Descriptive only: nothing here feeds the test or the interval.

use crate::hodges_lehmann::median_of_sorted;
use serde::Serialize;

/// One arm (control or test) of a comparison, on the metric's own scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Arm {
    /// Number of runs.
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Coefficient of variation: sample standard deviation (n - 1 denominator) over the mean;
    /// 0 for a single run.
    pub cv: f64,
    /// `cv` exceeds the noise threshold: the runs disagree enough that the machine or the
    /// target was probably not steady, whatever the verdict says.
    pub noisy: bool,
}

impl Arm {
    /// Summarises non-empty, finite values.
    pub(crate) fn summarise(values: &[f64], noise_cv: f64) -> Arm {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        let cv = if n < 2 || mean == 0.0 {
            0.0
        } else {
            let variance =
                sorted.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
            variance.sqrt() / mean.abs()
        };
        Arm {
            n,
            median: median_of_sorted(&sorted),
            min: sorted[0],
            max: sorted[n - 1],
            cv,
            noisy: cv > noise_cv,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary() {
        let a = Arm::summarise(&[3.0, 1.0, 2.0], 0.05);
        assert_eq!((a.n, a.median, a.min, a.max), (3, 2.0, 1.0, 3.0));
        // stdev 1, mean 2
        assert!((a.cv - 0.5).abs() < 1e-15);
        assert!(a.noisy);
        let a = Arm::summarise(&[7.0], 0.05);
        assert_eq!(a.cv, 0.0);
        assert!(!a.noisy);
    }
}
