//! Across a fleet (issue 52): every generator sends an equal share of one load, so they
//! should see the same server. A generator whose response time or goodput departs from the
//! others' at that same share saw something the others did not: its own path (a capped
//! link, a queue on the way), not the server, which served them all alike.
//!
//! Pure: [`departures`] takes each generator's figures and gives the verdicts, in words.

use loadlab_result::median;

/// One generator's figures over the measured phase.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareFigures {
    pub generator: String,
    pub p50_us: Option<f64>,
    /// Bytes received a second.
    pub received_per_s: f64,
}

/// A p50 this many times the others' median departs...
pub const SLOWER: f64 = 3.0;
/// ...when it is also this much above it (sub-millisecond p50s differ by ratios that mean
/// nothing).
pub const SLOWER_BY_US: f64 = 10_000.0;
/// A goodput under this share of the others' median departs.
pub const LESS_GOODPUT: f64 = 0.5;

/// The generators that departed from the others at the same share, each named with the
/// figure and the others' median. Needs at least three generators: with two, which one
/// departed is not known (both are named as differing, neither blamed).
pub fn departures(shares: &[ShareFigures]) -> Vec<String> {
    let mut said = Vec::new();
    if shares.len() < 2 {
        return said;
    }
    for (i, me) in shares.iter().enumerate() {
        let others = || shares.iter().enumerate().filter(move |(j, _)| *j != i);
        let p50 = median(&others().filter_map(|(_, s)| s.p50_us).collect::<Vec<_>>());
        let goodput = median(&others().map(|(_, s)| s.received_per_s).collect::<Vec<_>>());
        let blame = if shares.len() >= 3 {
            ": its path, not the server, which served the others at that share"
        } else {
            ": one of the two paths, not the server (which, two generators cannot tell)"
        };
        if let (Some(mine), Some(theirs)) = (me.p50_us, p50) {
            if theirs > 0.0 && mine >= SLOWER * theirs && mine - theirs >= SLOWER_BY_US {
                said.push(format!(
                    "generator {}'s p50 is {:.0}x the others' at the same share ({:.1} ms \
                     against {:.1} ms){blame}",
                    me.generator,
                    mine / theirs,
                    mine / 1000.0,
                    theirs / 1000.0
                ));
                continue;
            }
        }
        if let Some(theirs) = goodput {
            if theirs > 0.0 && me.received_per_s < LESS_GOODPUT * theirs {
                said.push(format!(
                    "generator {} received {:.1} Mbit/s, {:.0}% of the others' {:.1} Mbit/s at \
                     the same share{blame}",
                    me.generator,
                    me.received_per_s * 8.0 / 1e6,
                    100.0 * me.received_per_s / theirs,
                    theirs * 8.0 / 1e6
                ));
            }
        }
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, p50_ms: f64, mbit: f64) -> ShareFigures {
        ShareFigures {
            generator: name.into(),
            p50_us: Some(p50_ms * 1000.0),
            received_per_s: mbit * 1e6 / 8.0,
        }
    }

    #[test]
    fn the_generator_that_departs_from_the_others_is_named() {
        #[rustfmt::skip]
        let cases: Vec<(&str, Vec<ShareFigures>, Vec<&str>)> = vec![
            ("one of three behind a queue: 31x", vec![g("g1", 4.5, 7.9), g("g2", 140.0, 7.9), g("g3", 4.4, 7.9)], vec!["g2's p50 is 31x"]),
            ("all alike, slow server: nobody", vec![g("g1", 140.0, 7.9), g("g2", 150.0, 7.9), g("g3", 145.0, 7.9)], vec![]),
            ("sub-millisecond ratios mean nothing", vec![g("g1", 0.2, 7.9), g("g2", 0.9, 7.9), g("g3", 0.2, 7.9)], vec![]),
            ("a goodput at a third of the others'", vec![g("g1", 4.0, 2.6), g("g2", 4.0, 7.9), g("g3", 4.0, 7.9)], vec!["g1 received 2.6 Mbit/s, 33%"]),
            ("a lone generator: nothing to compare", vec![g("g1", 900.0, 1.0)], vec![]),
        ];
        for (case, shares, expected) in cases {
            let said = departures(&shares);
            assert_eq!(said.len(), expected.len(), "{case}: {said:?}");
            for (s, e) in said.iter().zip(&expected) {
                assert!(s.contains(e), "{case}: {s}");
                assert!(s.contains("its path, not the server"), "{case}: {s}");
            }
        }
        let two = departures(&[g("g1", 4.0, 7.9), g("g2", 140.0, 7.9)]);
        assert_eq!(two.len(), 1, "{two:?}");
        assert!(two[0].contains("two generators cannot tell"), "{}", two[0]);
    }
}
