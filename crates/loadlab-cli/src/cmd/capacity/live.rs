//! `capacity --ui` and `sweep --ui`: what the search or sweep tells its live page
//! (`crate::live::follow`): the plan, each probe as it starts and as it is judged (its rate,
//! what was answered, the objective's percentile, errors, the verdict and its reason), the
//! answer so far (the search's as if stopped now, the sweep's from its probes so far),
//! marked not final until the document's own verdict ends it. Does nothing without `--ui`.

use crate::live::follow::{self, Kept};
use crate::live::hub::command::{Plan, Row, SoFar};
use loadlab_capacity::driver::{self, Stop};
use loadlab_capacity::search::{self, rate, Policy, Unit, Verdict};
use loadlab_capacity::{CapacityReport, Criteria, ProbeRecord};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunResult;
use std::sync::Arc;

/// What the page needs to say what the probes so far come to.
pub(super) enum Judge {
    Search(Policy),
    Sweep { knee_factor: f64 },
}

pub(super) struct Page {
    on: bool,
    judge: Judge,
    criteria: Criteria,
    closed: bool,
    stop: Arc<Stop>,
    records: Vec<ProbeRecord>,
    /// The probe's intervals, when no store keeps them.
    kept: Option<Kept>,
}

impl Page {
    /// Tells the page the plan; its stop button then stops the search as Ctrl-C does.
    pub fn new(judge: Judge, criteria: &Criteria, closed: bool, stop: Arc<Stop>) -> Page {
        let on = follow::active();
        if on {
            let kind = match judge {
                Judge::Search(_) => "capacity",
                Judge::Sweep { .. } => "sweep",
            };
            let mut lines = vec![format!(
                "objectives: {}",
                criteria
                    .objectives
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
            if let Judge::Search(p) = &judge {
                lines.push(format!(
                    "probes from {} (doubling, then bisection to {}%), {} round{}, between {} \
                     and {}",
                    p.unit.show(p.start),
                    p.tolerance * 100.0,
                    p.rounds,
                    if p.rounds == 1 { "" } else { "s" },
                    p.unit.show(p.min_rate),
                    p.unit.show(p.max_rate)
                ));
            }
            let stop = stop.clone();
            follow::command(
                Plan {
                    kind: kind.into(),
                    lines,
                    columns: [
                        "probe",
                        "round",
                        match (&judge, closed) {
                            (_, true) => "connections",
                            (Judge::Search(p), _) if p.unit == Unit::Held => "held",
                            _ => "offered/s",
                        },
                        "answered/s",
                        &percentile_name(criteria),
                        "errors",
                        "verdict",
                    ]
                    .map(String::from)
                    .to_vec(),
                },
                move || stop.stop(),
            );
        }
        Page {
            on,
            judge,
            criteria: criteria.clone(),
            closed,
            stop,
            records: Vec::new(),
            kept: None,
        }
    }

    /// The probe's sink with the page beside it (and its run's generators on the page).
    pub fn follow(&mut self, sink: Option<Box<dyn IntervalSink>>) -> Option<Box<dyn IntervalSink>> {
        if !self.on {
            return sink;
        }
        if let Some(control) = self.stop.current() {
            follow::observe_parts(&control);
        }
        let (sink, kept) = follow::follow(sink);
        self.kept = kept;
        sink
    }

    pub fn read_back(&mut self, result: &mut RunResult) {
        if let Some(kept) = self.kept.take() {
            kept.read_back(result);
        }
    }

    pub fn starting(&self, index: usize, load: f64, round: Option<usize>) {
        if !self.on {
            return;
        }
        let mut cells = vec![
            index.to_string(),
            round.map_or("–".into(), |r| (r + 1).to_string()),
            self.load(load),
        ];
        cells.extend(["…", "…", "…", "running"].map(String::from));
        follow::step(
            Row {
                key: format!("probe {index}"),
                cells,
                state: "running".into(),
                record: None,
            },
            None,
        );
    }

    pub fn finished(&mut self, record: &ProbeRecord, result: &RunResult) {
        if !self.on {
            return;
        }
        follow::run_ended(result);
        self.records.push(record.clone());
        let m = &record.measure;
        let q = self.criteria.percentiles().first().copied().unwrap_or(99.0);
        let figure = m
            .percentiles_us
            .iter()
            .find(|(p, _)| *p == q)
            .map(|(_, us)| *us)
            .or(m.p99_us.filter(|_| q == 99.0));
        let cells = vec![
            record.index.to_string(),
            record.round.map_or("–".into(), |r| (r + 1).to_string()),
            self.load(record.load()),
            rate(m.achieved_per_s),
            figure.map_or("–".into(), loadlab_report::duration_us),
            format!("{} ({:.2}%)", m.errors, m.error_share * 100.0),
            record.verdict(),
        ];
        let state = match record.search_verdict() {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            _ => "other",
        };
        follow::step(
            Row {
                key: format!("probe {}", record.index),
                cells,
                state: state.into(),
                record: serde_json::to_value(record).ok(),
            },
            Some(self.so_far()),
        );
    }

    /// The document's verdict: the page's answer, now final.
    pub fn end(&self, report: &CapacityReport) {
        if self.on {
            follow::so_far(SoFar {
                title: self.title().into(),
                text: report.verdict.clone(),
                is_final: true,
            });
        }
    }

    fn so_far(&self) -> SoFar {
        let text = match &self.judge {
            Judge::Search(policy) => {
                // A probe a generator was lost from is no evidence (as in the search).
                let outcomes: Vec<_> = self
                    .records
                    .iter()
                    .filter(|r| r.measure.lost_generator.is_none())
                    .filter_map(ProbeRecord::outcome)
                    .collect();
                search::stopped(policy, &outcomes).text(policy.unit)
            }
            Judge::Sweep { knee_factor } => {
                driver::sweep_report(self.records.clone(), &self.criteria, *knee_factor, None)
                    .verdict
            }
        };
        SoFar {
            title: self.title().into(),
            text,
            is_final: false,
        }
    }

    fn title(&self) -> &'static str {
        match self.judge {
            Judge::Search(_) => "The search's answer",
            Judge::Sweep { .. } => "The sweep's answer",
        }
    }

    fn load(&self, load: f64) -> String {
        match &self.judge {
            _ if self.closed => format!("{load}"),
            Judge::Search(p) if p.unit == Unit::Held => format!("{}", load.round()),
            _ => rate(load),
        }
    }
}

/// The column of the objective's percentile (the first one named; p99 without one).
fn percentile_name(criteria: &Criteria) -> String {
    let q = criteria.percentiles().first().copied().unwrap_or(99.0);
    format!("p{q}")
}
