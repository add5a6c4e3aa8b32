//! The standard normal distribution's upper tail and its inverse, for the large-sample
//! fallback of the Mann-Whitney test and the Hodges-Lehmann interval.
//!
//! Only used above the exact limit, where the approximation is good; it must not be used to
//! shortcut the exact small-sample computations.

/// Q(z) = P(Z > z) for a standard normal Z, accurate to about 1e-14 absolute.
///
/// Hart's rational approximation as given by West ("Better approximations to cumulative normal
/// functions", 2005), with a continued fraction for |z| >= 7.07. Computing the tail directly
/// (rather than 1 - Φ) keeps small p-values accurate.
pub fn upper_tail(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    let x = z.abs();
    let tail = if x > 37.0 {
        0.0
    } else {
        let e = (-x * x / 2.0).exp();
        if x < 7.071_067_811_865_47 {
            let num = [
                3.526_249_659_989_11e-2,
                0.700_383_064_443_688,
                6.373_962_203_531_65,
                33.912_866_078_383,
                112.079_291_497_871,
                221.213_596_169_931,
                220.206_867_912_376,
            ];
            let den = [
                8.838_834_764_831_84e-2,
                1.755_667_163_182_64,
                16.064_177_579_207,
                86.780_732_202_946_1,
                296.564_248_779_674,
                637.333_633_378_831,
                793.826_512_519_948,
                440.413_735_824_752,
            ];
            e * horner(&num, x) / horner(&den, x)
        } else {
            let cf = x + 1.0 / (x + 2.0 / (x + 3.0 / (x + 4.0 / (x + 0.65))));
            e / cf / 2.506_628_274_631
        }
    };
    if z >= 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// The z with Q(z) = p, for p in (0, 1). Bisection on [`upper_tail`]: slower than a rational
/// inverse but needs no second set of constants, and it is called a handful of times per
/// comparison.
pub fn upper_quantile(p: f64) -> f64 {
    assert!(
        p > 0.0 && p < 1.0,
        "upper_quantile needs p in (0, 1), got {p}"
    );
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    // Q decreases in z; 200 halvings of an interval of width 80 reach the float resolution.
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if upper_tail(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Evaluates a polynomial whose coefficients run from the highest power down.
fn horner(coefficients: &[f64], x: f64) -> f64 {
    coefficients.iter().fold(0.0, |acc, c| acc * x + c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values from scipy.stats.norm.sf / isf.
    #[test]
    fn matches_reference_values() {
        let cases = [
            (0.0, 0.5),
            (1.0, 0.158_655_253_931_457_05),
            (1.959_963_984_540_054, 0.025),
            (3.0, 0.001_349_898_031_630_094_6),
            (8.0, 6.220_960_574_271_785e-16),
            (-1.0, 0.841_344_746_068_542_9),
        ];
        for (z, q) in cases {
            let got = upper_tail(z);
            assert!(
                (got - q).abs() <= 1e-14 + 1e-10 * q,
                "Q({z}) = {got}, want {q}"
            );
        }
    }

    #[test]
    fn quantile_inverts_tail() {
        assert!((upper_quantile(0.025) - 1.959_963_984_540_054).abs() < 1e-9);
        assert!((upper_quantile(0.005) - 2.575_829_303_548_901).abs() < 1e-9);
        assert!(upper_quantile(0.5).abs() < 1e-12);
    }
}
