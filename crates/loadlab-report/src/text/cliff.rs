//! The run summary's line for a percentile on a cliff: the two modes, the share of requests
//! beyond the gap, and what to compare instead. Reads `measured.cliffs`; decides nothing (the
//! rule is `loadlab_result::cliff`'s).

use crate::format::duration_us;
use loadlab_result::Cliff;

/// A share of requests in percent, with the digits a small share needs (`0.09%`, `1.1%`), and
/// a share short of all by a little, the digits its rest needs (`99.96%`, not `100%`).
pub(crate) fn percent(share: f64) -> String {
    let p = share * 100.0;
    let rest = 100.0 - p;
    if p < 1.0 || (rest > 0.0 && rest < 1.0) {
        format!("{p:.2}%")
    } else if p < 10.0 || (rest > 0.0 && rest < 10.0) {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

/// One line per percentile on a cliff.
pub(crate) fn lines(cliffs: &[Cliff]) -> Vec<String> {
    cliffs
        .iter()
        .map(|c| {
            let between = if c.gap_share > 0.0 {
                format!(" ({} in between)", percent(c.gap_share))
            } else {
                String::new()
            };
            format!(
                "{p} is on a cliff: {share} of requests took {to} or more (median {slow}), the \
                 rest {from} or less (median {fast}){between}; compare the share beyond the \
                 cliff, not {p}",
                p = c.percentile,
                share = percent(c.slow_share),
                to = duration_us(c.gap_to_us),
                slow = duration_us(c.slow_mode_us),
                from = duration_us(c.gap_from_us),
                fast = duration_us(c.fast_mode_us),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cliff_in_words() {
        let c = Cliff {
            percentile: "p99".into(),
            fast_mode_us: 200.0,
            slow_mode_us: 90_100.0,
            gap_from_us: 560.0,
            gap_to_us: 88_000.0,
            threshold_us: 7_020.0,
            slow_share: 0.011,
            gap_share: 0.0,
        };
        assert_eq!(
            lines(&[c])[0],
            "p99 is on a cliff: 1.1% of requests took 88.0 ms or more (median 90.1 ms), the rest \
             560 µs or less (median 200 µs); compare the share beyond the cliff, not p99"
        );
        assert_eq!(percent(0.0009), "0.09%");
        assert_eq!(percent(0.9996), "99.96%");
        assert_eq!(percent(0.955), "95.5%");
        assert_eq!(percent(0.5), "50%");
        assert_eq!(percent(1.0), "100%");
    }
}
