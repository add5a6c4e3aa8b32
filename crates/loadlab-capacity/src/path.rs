//! The path rule (docs/path.md, `loadlab_result::path::rule`) over a capacity search: the
//! search's verdict when a path, not the server, held the load back (no capacity is claimed
//! for the server), read from each probe's [`PathEvidence`].

use crate::path_evidence::PathEvidence;
use crate::report::ProbeRecord;
use crate::search::Finding;

/// The search's verdict when a queue on a generator's path held back the probes that
/// missed: "no capacity found for the server: the path to generator g1 carried 9.6 Mbit/s in
/// every missed probe, with its round trip at 35x its minimum (...): a queue on the path,
/// not in the server". `None` when no missed probe was put down to a path.
pub fn no_capacity(records: &[ProbeRecord]) -> Option<String> {
    let held: Vec<&PathEvidence> = records
        .iter()
        .filter(|r| r.judgment.generator_limited.is_some())
        .flat_map(|r| r.measure.path.iter().filter(|p| p.is_path()))
        .collect();
    let last = *held.last()?;
    let same: Vec<f64> = held
        .iter()
        .filter(|p| p.generator == last.generator)
        .filter_map(|p| p.goodput_bits_per_s)
        .collect();
    let (lo, hi) = same
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &g| (lo.min(g), hi.max(g)));
    let carried = if hi <= lo * (1.0 + loadlab_result::path::rule::FLAT_SHARE) {
        format!("{:.1} Mbit/s in every missed probe", hi / 1e6)
    } else {
        format!(
            "{:.1}-{:.1} Mbit/s in the missed probes",
            lo / 1e6,
            hi / 1e6
        )
    };
    let (rtt, min) = (last.rtt_us.unwrap_or(0.0), last.min_rtt_us.unwrap_or(0.0));
    Some(format!(
        "no capacity found for the server: the path to {} carried {carried}, with its round \
         trip at {}x its minimum ({:.0} ms against {:.2} ms): a queue on the path, not in the \
         server; run from a generator with a wider path, or add generators",
        loadlab_result::path::rule::who(last.generator.as_deref()),
        loadlab_result::format::thousands((rtt / min.max(1.0)).round() as u64),
        rtt / 1e3,
        min / 1e3
    ))
}

/// A capacity found below a rate whose probe a queue on a generator's path held back is
/// the path's, not the server's: the finding becomes the limit at that rate (and the
/// search's verdict [`no_capacity`]'s words).
pub fn overrule(finding: Finding, records: &[ProbeRecord]) -> Finding {
    if !matches!(finding, Finding::Capacity { .. }) {
        return finding;
    }
    let Some(held) = records.iter().find(|r| {
        r.judgment.generator_limited.is_some() && r.measure.path.iter().any(PathEvidence::is_path)
    }) else {
        return finding;
    };
    let passed = records
        .iter()
        .filter(|r| r.judgment.pass)
        .map(ProbeRecord::load)
        .fold(None, |a: Option<f64>, l| Some(a.map_or(l, |a| a.max(l))));
    Finding::GeneratorLimit {
        rate: held.load(),
        passed,
    }
}

/// When a capacity was found but a missed probe's path evidence was inconclusive (a queue on
/// the path too short to tell from a busy server's delayed ACKs, say): the doubt in words,
/// to go beside the capacity rather than pick.
pub fn doubt(records: &[ProbeRecord]) -> Option<String> {
    let unsure = records
        .iter()
        .rev()
        .filter(|r| !r.judgment.pass)
        .flat_map(|r| r.measure.path.iter())
        .find(|p| p.verdict == "inconclusive")?;
    Some(format!(
        "the path's evidence was inconclusive in a missed probe ({}): this capacity may be the \
         path's to {}, not the server's",
        unsure.said,
        loadlab_result::path::rule::who(unsure.generator.as_deref())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(generator: &str, verdict: &str, mbit: f64) -> PathEvidence {
        PathEvidence {
            generator: Some(generator.into()),
            verdict: verdict.into(),
            goodput_bits_per_s: Some(mbit * 1e6),
            rtt_us: Some(101_500.0),
            min_rtt_us: Some(2_900.0),
            said: String::new(),
        }
    }

    #[test]
    fn the_search_names_the_path_that_held_every_missed_probe() {
        let record = |limited: bool, path: Vec<PathEvidence>| {
            let mut measure = crate::probe::tests::probe(100.0, 90.0, 500.0, 0.0);
            measure.path = path;
            ProbeRecord {
                index: 1,
                round: Some(0),
                measure,
                judgment: crate::probe::Judgment {
                    pass: false,
                    missed: vec!["p99".into()],
                    generator_limited: limited.then(|| "a queue".to_string()),
                    marginal: false,
                },
                run_id: None,
                ws_held: None,
            }
        };
        let records = vec![
            record(false, vec![evidence("g1", "not_path", 5.0)]),
            record(
                true,
                vec![evidence("g1", "path", 9.6), evidence("g2", "not_path", 4.0)],
            ),
            record(true, vec![evidence("g1", "path", 9.55)]),
        ];
        assert_eq!(
            no_capacity(&records).unwrap(),
            "no capacity found for the server: the path to generator g1 carried 9.6 Mbit/s in \
             every missed probe, with its round trip at 35x its minimum (102 ms against 2.90 \
             ms): a queue on the path, not in the server; run from a generator with a wider \
             path, or add generators"
        );
        assert_eq!(
            no_capacity(&records[..1]),
            None,
            "no path held a probe back"
        );
        assert_eq!(doubt(&records), None, "no missed probe was inconclusive");
        // A capacity found below a probe the path held is overruled.
        let found = Finding::Capacity {
            estimate: 93.8,
            low: 93.8,
            high: 93.8,
            rounds: vec![93.8],
            planned: 1,
        };
        assert!(matches!(
            overrule(found.clone(), &records),
            Finding::GeneratorLimit { rate, .. } if rate == 100.0
        ));
        assert_eq!(overrule(found.clone(), &records[..1]), found);
        let unsure = vec![record(false, vec![evidence("g3", "inconclusive", 9.0)])];
        assert!(doubt(&unsure)
            .unwrap()
            .contains("may be the path's to generator g3"));
    }
}
