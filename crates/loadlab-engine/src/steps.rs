//! Per-step statistics of a scenario run: each step's response times, statuses, failure
//! classes, check failures and bytes, and the iterations' times. One per worker thread, like
//! the [`crate::stats::Recorder`] that holds it, merged after the run; only the measured part
//! of the run is counted here (the warm-up is in the run's own figures).

use crate::error::ErrorClass;
use crate::stats::new_histogram;
use hdrhistogram::Histogram;
use loadlab_scenario::Scenario;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct StepStats {
    /// The step's response time (a page: the group's).
    pub latency: Histogram<u64>,
    /// A page: each request's own response time.
    pub requests: Histogram<u64>,
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    pub status: BTreeMap<u16, u64>,
    pub errors: [u64; ErrorClass::COUNT],
    /// Failures per check then capture (the scenario's assertion order).
    pub checks: Vec<u64>,
    pub check_details: Vec<Option<String>>,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub bytes_decoded: u64,
    /// Responses per `Content-Encoding` (`identity` when none).
    pub encodings: BTreeMap<String, u64>,
}

impl StepStats {
    fn new(assertions: usize) -> StepStats {
        StepStats {
            latency: new_histogram(),
            requests: new_histogram(),
            issued: 0,
            completed: 0,
            failed: 0,
            status: BTreeMap::new(),
            errors: [0; ErrorClass::COUNT],
            checks: vec![0; assertions],
            check_details: vec![None; assertions],
            bytes_sent: 0,
            bytes_received: 0,
            bytes_decoded: 0,
            encodings: BTreeMap::new(),
        }
    }

    /// Counts a response's status and encoding (no allocation once both were seen).
    pub fn response(&mut self, status: u16, encoding: &str) {
        *self.status.entry(status).or_insert(0) += 1;
        match self.encodings.get_mut(encoding) {
            Some(n) => *n += 1,
            None => {
                self.encodings.insert(encoding.to_string(), 1);
            }
        }
    }

    pub fn fail(&mut self, class: ErrorClass) {
        self.failed += 1;
        self.errors[class as usize] += 1;
    }

    /// A check (or capture) failed: `check_failed`, counted against the check.
    pub fn check_failed(&mut self, index: usize, message: String) {
        self.fail(ErrorClass::CheckFailed);
        if let Some(n) = self.checks.get_mut(index) {
            *n += 1;
            if self.check_details[index].is_none() {
                self.check_details[index] = Some(message);
            }
        }
    }

    fn merge(&mut self, o: &StepStats) {
        self.latency.add(&o.latency).expect("same bounds");
        self.requests.add(&o.requests).expect("same bounds");
        self.issued += o.issued;
        self.completed += o.completed;
        self.failed += o.failed;
        for (k, v) in &o.status {
            *self.status.entry(*k).or_insert(0) += v;
        }
        for (a, b) in self.errors.iter_mut().zip(&o.errors) {
            *a += b;
        }
        for (a, b) in self.checks.iter_mut().zip(&o.checks) {
            *a += b;
        }
        for (a, b) in self.check_details.iter_mut().zip(&o.check_details) {
            if a.is_none() {
                a.clone_from(b);
            }
        }
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.bytes_decoded += o.bytes_decoded;
        for (k, v) in &o.encodings {
            *self.encodings.entry(k.clone()).or_insert(0) += v;
        }
    }
}

#[derive(Debug, Clone)]
pub struct ScenarioStats {
    pub steps: Vec<StepStats>,
    pub iteration: Histogram<u64>,
    pub iterations: u64,
    pub iterations_failed: u64,
}

impl ScenarioStats {
    pub fn new(scenario: &Scenario) -> ScenarioStats {
        ScenarioStats {
            steps: scenario
                .steps
                .iter()
                .map(|s| StepStats::new(s.checks.len() + s.captures.len()))
                .collect(),
            iteration: new_histogram(),
            iterations: 0,
            iterations_failed: 0,
        }
    }

    pub fn merge(&mut self, o: &ScenarioStats) {
        for (a, b) in self.steps.iter_mut().zip(&o.steps) {
            a.merge(b);
        }
        self.iteration.add(&o.iteration).expect("same bounds");
        self.iterations += o.iterations;
        self.iterations_failed += o.iterations_failed;
    }
}

/// A scenario run's figures for its result; `None` for a run without a (file) scenario.
pub fn summarize(
    config: &crate::RunConfig,
    stats: Option<&ScenarioStats>,
    measured: std::time::Duration,
) -> Option<loadlab_result::scenario::ScenarioSummary> {
    use loadlab_result::scenario::{CheckSummary, ScenarioSummary, StepBytes, StepSummary};
    use loadlab_result::{encode_histogram, LatencySummary};
    let run = config.scenario.as_ref().filter(|r| !r.implicit)?;
    let stats = stats?;
    let secs = measured.as_secs_f64();
    let rate = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let scenario = &run.scenario;
    let steps = scenario
        .steps
        .iter()
        .zip(&stats.steps)
        .map(|(step, s)| StepSummary {
            name: step.name.clone(),
            request: step.describe(),
            issued: s.issued,
            completed: s.completed,
            failed: s.failed,
            per_second: rate(s.completed),
            latency_us: LatencySummary::from_histogram(&s.latency),
            histogram: encode_histogram(&s.latency),
            request_latency_us: if step.page {
                LatencySummary::from_histogram(&s.requests)
            } else {
                None
            },
            request_histogram: step.page.then(|| encode_histogram(&s.requests)),
            status_codes: s.status.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            errors: ErrorClass::ALL
                .iter()
                .filter(|c| s.errors[**c as usize] > 0)
                .map(|c| (c.key().to_string(), s.errors[*c as usize]))
                .collect(),
            checks: step
                .assertion_names()
                .into_iter()
                .enumerate()
                .map(|(k, check)| CheckSummary {
                    check,
                    failed: s.checks[k],
                    first_failure: s.check_details[k].clone(),
                })
                .collect(),
            bytes: StepBytes {
                sent: s.bytes_sent,
                received: s.bytes_received,
                decoded: s.bytes_decoded,
            },
            content_encodings: s.encodings.clone().into_iter().collect(),
        })
        .collect();
    Some(ScenarioSummary {
        name: scenario.name.clone(),
        description: scenario.description.clone(),
        mode: match scenario.mode {
            loadlab_scenario::Mode::Sequence => "sequence",
            loadlab_scenario::Mode::Mix => "mix",
        }
        .to_string(),
        virtual_users: (!config.is_open_loop()).then_some(config.connections),
        offered_iterations_per_s: match &config.model {
            crate::config::Model::Open { profile, .. } => {
                Some(profile.total_arrivals() / profile.duration().as_secs_f64().max(1e-9))
            }
            crate::config::Model::Closed { .. } => None,
        },
        iteration_slots: config.is_open_loop().then_some(config.connections),
        pace_s: run.pace.map(|p| p.as_secs_f64()),
        offered_per_s: run
            .pace
            .map(|p| crate::engine::offered_per_s(config.connections, p)),
        new_connection_share: run.new_connection_share,
        iterations: stats.iterations,
        iterations_failed: stats.iterations_failed,
        iterations_per_s: rate(stats.iterations),
        iteration_us: LatencySummary::from_histogram(&stats.iteration),
        iteration_histogram: (!stats.iteration.is_empty())
            .then(|| encode_histogram(&stats.iteration)),
        steps,
    })
}
