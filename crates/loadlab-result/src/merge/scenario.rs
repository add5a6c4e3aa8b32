//! Merging the scenario sections of shards or repetitions: every step's counts, statuses,
//! failures, checks and bytes added, its histograms added and its percentiles read from the
//! sum, the iterations likewise. Parts must have run the same scenario (same name, same
//! steps in the same order); a part without a scenario section among parts with one is
//! refused, as a merge of different workloads would be.

use super::{add_encoded, MergeError, Mode};
use crate::failure::add_counts;
use crate::histogram::{encode_histogram, new_histogram};
use crate::latency::LatencySummary;
use crate::run::RunResult;
use crate::scenario::{ScenarioSummary, StepBytes, StepSummary};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The parts' scenario sections merged; `duration_s` is the merged measured time (the
/// longest part's for shards, the sum for repetitions), over which rates are taken.
pub(super) fn merge_scenarios(
    parts: &[RunResult],
    mode: Mode,
    duration_s: f64,
) -> Result<Option<ScenarioSummary>, MergeError> {
    let Some(first) = parts.first().and_then(|p| p.scenario.as_ref()) else {
        return match parts.iter().position(|p| p.scenario.is_some()) {
            Some(part) => Err(not_alike(
                part,
                "has a scenario section and the first has none",
            )),
            None => Ok(None),
        };
    };
    for (i, p) in parts.iter().enumerate() {
        let Some(s) = &p.scenario else {
            return Err(not_alike(i, "has no scenario section"));
        };
        let same_steps = s.steps.len() == first.steps.len()
            && s.steps
                .iter()
                .zip(&first.steps)
                .all(|(a, b)| a.name == b.name);
        if s.name != first.name || !same_steps {
            return Err(not_alike(
                i,
                &format!(
                    "ran scenario `{}`, not the first's `{}`",
                    s.name, first.name
                ),
            ));
        }
    }
    let sections: Vec<&ScenarioSummary> =
        parts.iter().filter_map(|p| p.scenario.as_ref()).collect();
    let rate = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            0.0
        }
    };
    let mut iteration = new_histogram();
    for (i, s) in sections.iter().enumerate() {
        add_encoded(
            &mut iteration,
            s.iteration_histogram.as_deref(),
            i,
            "iteration",
        )?;
    }
    let steps = (0..first.steps.len())
        .map(|k| merge_step(&sections, k, &rate))
        .collect::<Result<Vec<_>, _>>()?;
    let iterations = sections.iter().map(|s| s.iterations).sum();
    // Side by side, the parts' users and offered rates add up; one after another, each
    // repetition ran the first's.
    let side_by_side = |f: fn(&ScenarioSummary) -> Option<f64>| match mode {
        Mode::Concurrent => sections.iter().map(|s| f(s)).sum::<Option<f64>>(),
        Mode::Sequential => f(first),
    };
    let users = |f: fn(&ScenarioSummary) -> Option<usize>| match mode {
        Mode::Concurrent => sections.iter().map(|s| f(s)).sum::<Option<usize>>(),
        Mode::Sequential => f(first),
    };
    Ok(Some(ScenarioSummary {
        virtual_users: users(|s| s.virtual_users),
        iteration_slots: users(|s| s.iteration_slots),
        offered_per_s: side_by_side(|s| s.offered_per_s),
        offered_iterations_per_s: side_by_side(|s| s.offered_iterations_per_s),
        iterations,
        iterations_failed: sections.iter().map(|s| s.iterations_failed).sum(),
        iterations_per_s: rate(iterations),
        iteration_us: LatencySummary::from_histogram(&iteration),
        iteration_histogram: (!iteration.is_empty()).then(|| encode_histogram(&iteration)),
        steps,
        ..first.clone()
    }))
}

fn not_alike(part: usize, why: &str) -> MergeError {
    MergeError::Scenario {
        part,
        why: why.to_string(),
    }
}

fn merge_step(
    sections: &[&ScenarioSummary],
    k: usize,
    rate: &dyn Fn(u64) -> f64,
) -> Result<StepSummary, MergeError> {
    let first = &sections[0].steps[k];
    let what = format!("step {} latency", first.name);
    let mut latency = new_histogram();
    let mut requests: Option<Histogram<u64>> = None;
    let mut merged = StepSummary {
        issued: 0,
        completed: 0,
        failed: 0,
        status_codes: BTreeMap::new(),
        errors: BTreeMap::new(),
        content_encodings: BTreeMap::new(),
        messages: None,
        bytes: StepBytes {
            sent: 0,
            received: 0,
            decoded: 0,
        },
        ..first.clone()
    };
    for (i, s) in sections.iter().enumerate() {
        let step = &s.steps[k];
        add_encoded(&mut latency, Some(&step.histogram), i, &what)?;
        if let Some(text) = &step.request_histogram {
            let into = requests.get_or_insert_with(new_histogram);
            add_encoded(into, Some(text), i, &format!("step {} request", first.name))?;
        }
        merged.issued += step.issued;
        merged.completed += step.completed;
        merged.failed += step.failed;
        add_counts(&mut merged.status_codes, &step.status_codes);
        add_counts(&mut merged.errors, &step.errors);
        add_counts(&mut merged.content_encodings, &step.content_encodings);
        merged.bytes.sent += step.bytes.sent;
        merged.bytes.received += step.bytes.received;
        merged.bytes.decoded += step.bytes.decoded;
        if let Some(m) = &step.messages {
            let into = merged.messages.get_or_insert_with(Default::default);
            into.sent += m.sent;
            into.received += m.received;
        }
        if i > 0 {
            for (into, c) in merged.checks.iter_mut().zip(&step.checks) {
                into.failed += c.failed;
                if into.first_failure.is_none() {
                    into.first_failure = c.first_failure.clone();
                }
            }
        }
    }
    merged.per_second = rate(merged.completed);
    merged.latency_us = LatencySummary::from_histogram(&latency);
    merged.histogram = encode_histogram(&latency);
    // A page's request times: exact when every part kept its histogram, else the first's.
    let every_page_kept = sections
        .iter()
        .all(|s| s.steps[k].request_histogram.is_some());
    if let (Some(h), true) = (requests, every_page_kept) {
        merged.request_latency_us = LatencySummary::from_histogram(&h);
        merged.request_histogram = Some(encode_histogram(&h));
    }
    Ok(merged)
}
