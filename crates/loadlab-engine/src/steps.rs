//! Per-step statistics of a scenario run: each step's response times, statuses, failure
//! classes, check failures and bytes, and the iterations' times. One per worker thread, like
//! the [`crate::stats::Recorder`] that holds it, merged after the run; only the measured part
//! of the run is counted here (the warm-up is in the run's own figures).
//!
//! Memory: a step costs its counters and what it recorded, never a histogram's full range
//! ([`histogram::StepHistogram`]): a scenario's steps are many times its threads.

pub mod histogram;

use crate::error::ErrorClass;
use crate::stats::new_histogram;
use hdrhistogram::Histogram;
use histogram::StepHistogram;
use loadlab_result::scenario::StepMessages;
use loadlab_scenario::Scenario;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct StepStats {
    /// The step's response time (a page: the group's).
    pub latency: StepHistogram,
    /// A page: each request's own response time.
    pub requests: StepHistogram,
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
    /// A streaming gRPC step's messages each way (`None` for any other step).
    pub messages: Option<StepMessages>,
}

impl StepStats {
    fn new(assertions: usize) -> StepStats {
        StepStats {
            latency: StepHistogram::default(),
            requests: StepHistogram::default(),
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
            messages: None,
        }
    }

    /// A streaming gRPC call's messages: `sent` request messages, `received` answers.
    pub fn add_messages(&mut self, sent: u64, received: u64) {
        let m = self.messages.get_or_insert_with(StepMessages::default);
        m.sent += sent;
        m.received += received;
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

    /// What the step holds in memory, in bytes: itself, its histograms' counts, its check
    /// counters, and its status and encoding entries (a map's node overhead aside).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        size_of::<StepStats>()
            + self.latency.heap_bytes()
            + self.requests.heap_bytes()
            + self.checks.capacity() * size_of::<u64>()
            + self.check_details.capacity() * size_of::<Option<String>>()
            + self
                .check_details
                .iter()
                .flatten()
                .map(String::capacity)
                .sum::<usize>()
            + self.status.len() * size_of::<(u16, u64)>()
            + self
                .encodings
                .keys()
                .map(|k| size_of::<(String, u64)>() + k.capacity())
                .sum::<usize>()
    }

    fn merge(&mut self, o: &StepStats) {
        self.latency.merge(&o.latency);
        self.requests.merge(&o.requests);
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
        if let Some(m) = &o.messages {
            self.add_messages(m.sent, m.received);
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

    /// What the steps hold in memory, in bytes ([`StepStats::heap_bytes`] summed).
    pub fn steps_heap_bytes(&self) -> usize {
        self.steps.iter().map(StepStats::heap_bytes).sum()
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
        .map(|(step, s)| {
            let latency = s.latency.to_histogram();
            let requests = step.page.then(|| s.requests.to_histogram());
            StepSummary {
                name: step.name.clone(),
                request: step.describe(),
                issued: s.issued,
                completed: s.completed,
                failed: s.failed,
                per_second: rate(s.completed),
                latency_us: LatencySummary::from_histogram(&latency),
                histogram: encode_histogram(&latency),
                request_latency_us: requests.as_ref().and_then(LatencySummary::from_histogram),
                request_histogram: requests.as_ref().map(encode_histogram),
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
                messages: s.messages,
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_result::{encode_histogram, LatencySummary};
    use std::path::Path;
    use std::sync::Arc;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_str(text, Path::new(".")).expect("a valid scenario")
    }

    fn steps_toml(n: usize) -> String {
        let mut text = String::from("name = \"many\"\nbase_url = \"http://127.0.0.1:1\"\n");
        for i in 0..n {
            text.push_str(&format!("[[steps]]\nname = \"s{i}\"\nurl = \"/{i}\"\n"));
        }
        text
    }

    /// Issue 46 item 4: each step held two full histograms (528 KiB) in every thread, so
    /// 20,000 steps took 21 GB. A step that answered 20 times now holds what it recorded.
    #[test]
    fn many_steps_cost_kilobytes_each() {
        let n = 5_000;
        let mut stats = ScenarioStats::new(&scenario(&steps_toml(n)));
        // A step's fixed figures (its counts, its messages each way since gRPC streaming
        // steps) and two empty histograms: about half a kilobyte.
        assert!(
            stats.steps_heap_bytes() / n <= 640,
            "{} bytes a step before any request",
            stats.steps_heap_bytes() / n
        );
        for (i, s) in stats.steps.iter_mut().enumerate() {
            for k in 0..20 {
                s.issued += 1;
                s.completed += 1;
                s.response(200, "identity");
                s.latency
                    .saturating_record(500_000 + ((i * 7_919 + k * 104_729) % 4_500_000) as u64);
            }
        }
        let per_step = stats.steps_heap_bytes() / n;
        assert!(
            per_step <= 2_048,
            "{per_step} bytes a step after 20 requests each"
        );
    }

    /// A known small run (two threads, a step, a page and a step never answered) gives the
    /// per-step figures it gave when each step held the result's histogram itself: the same
    /// counts, percentiles and encoded histograms.
    #[test]
    fn per_step_figures_are_unchanged() {
        let sc = scenario(
            "name = \"small\"\nbase_url = \"http://127.0.0.1:1\"\n\
             [[steps]]\nname = \"login\"\nurl = \"/login\"\n\
             [[steps]]\nname = \"home\"\n\
             [[steps.requests]]\nurl = \"/\"\n[[steps.requests]]\nurl = \"/app.js\"\n\
             [[steps]]\nname = \"never\"\nurl = \"/never\"\n",
        );
        let config = crate::RunSpec {
            scenario: Some(Arc::new(sc.clone())),
            requests: Some(100),
            ..crate::RunSpec::default()
        }
        .validate()
        .expect("a valid run");
        // Response times in ns as two threads measured them: login, home (the page), and
        // home's requests.
        let login = [
            [812_345u64, 1_020_001, 733_912, 2_500_000, 0, 911_000],
            [640_111, 1_999_999, 705_432, 15_000_000_000, 812_345, 1],
        ];
        let page = [[3_210_000u64, 2_890_000], [4_400_123, 3_210_004]];
        let page_requests = [
            [1_200_000u64, 1_900_000, 1_100_000, 2_800_000],
            [2_000_001, 3_999_999, 1_500_000, 1_600_000],
        ];
        let mut threads = Vec::new();
        for t in 0..2 {
            let mut stats = ScenarioStats::new(&sc);
            for &v in &login[t] {
                stats.steps[0].issued += 1;
                stats.steps[0].completed += 1;
                stats.steps[0].latency.saturating_record(v);
            }
            for &v in &page[t] {
                stats.steps[1].latency.saturating_record(v);
            }
            for &v in &page_requests[t] {
                stats.steps[1].issued += 1;
                stats.steps[1].completed += 1;
                stats.steps[1].requests.saturating_record(v);
            }
            threads.push(stats);
        }
        let mut merged = threads[0].clone();
        merged.merge(&threads[1]);
        let summary = summarize(&config, Some(&merged), std::time::Duration::from_secs(1))
            .expect("a scenario summary");

        // The figures as the result's own histograms give them.
        let of = |values: &[&[u64]]| {
            let mut h = new_histogram();
            for v in values.iter().flat_map(|v| v.iter()) {
                h.saturating_record(*v);
            }
            h
        };
        let login_h = of(&[&login[0], &login[1]]);
        let page_h = of(&[&page[0], &page[1]]);
        let requests_h = of(&[&page_requests[0], &page_requests[1]]);
        let [s_login, s_home, s_never] = &summary.steps[..] else {
            panic!("three steps: {:?}", summary.steps);
        };
        assert_eq!(s_login.completed, 12);
        assert_eq!(s_login.latency_us, LatencySummary::from_histogram(&login_h));
        assert_eq!(s_login.histogram, encode_histogram(&login_h));
        assert_eq!(s_login.request_histogram, None);
        assert_eq!(s_home.completed, 8);
        assert_eq!(s_home.latency_us, LatencySummary::from_histogram(&page_h));
        assert_eq!(s_home.histogram, encode_histogram(&page_h));
        assert_eq!(
            s_home.request_latency_us,
            LatencySummary::from_histogram(&requests_h)
        );
        assert_eq!(
            s_home.request_histogram,
            Some(encode_histogram(&requests_h))
        );
        assert_eq!(s_never.latency_us, None);
        assert_eq!(s_never.histogram, encode_histogram(&new_histogram()));
        // The figures themselves, so that a change in both paths is caught too.
        let p = s_login.latency_us.as_ref().unwrap();
        assert_eq!(
            (p.count, p.min, p.p50, p.max),
            (12, 0.0, 812.543, 15_007_219.711)
        );
    }
}
