//! `experiment --ui`: what the experiment tells its live page (`crate::live::follow`): the
//! plan (arms x blocks), each run as it starts and ends (its block, arm and headline
//! figures), and the comparison of the runs finished so far, marked not final until the
//! experiment's own comparison ends it. The runs are followed beside the store's sink
//! ([`Followed`] wraps the experiment's `RunSink`); a `--resume`d experiment's runs kept
//! before are rows too, read back from the store. Does nothing without `--ui` or `--tui`.

use super::comparisons::compare;
use crate::live::follow;
use crate::live::hub::command::{Plan as PagePlan, Row, SoFar};
use loadlab_engine::collector::IntervalSink;
use loadlab_experiment::analysis::Comparison;
use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::{Control, Event, RunSink};
use loadlab_experiment::table::{self, Format};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::{median, RunResult};
use loadlab_store::Store;

pub(super) struct Page<'a> {
    on: bool,
    experiment: &'a Experiment,
    plan: &'a Plan,
    /// Where a `--resume`d experiment's earlier runs are kept.
    store: &'a Store,
    /// The runs finished in this process, by arm, their timelines let go (the comparison
    /// needs only their totals): small and bounded by the plan.
    by_arm: Vec<Vec<RunResult>>,
}

const TITLE: &str = "The comparison";

impl<'a> Page<'a> {
    /// Tells the page the plan; its stop button then stops the experiment as Ctrl-C does.
    pub fn new(
        experiment: &'a Experiment,
        plan: &'a Plan,
        store: &'a Store,
        control: &Control,
        fleet: Option<&loadlab_session::fleet::Fleet>,
    ) -> Page<'a> {
        let on = follow::active();
        if on {
            let mut lines = vec![format!(
                "{}: {} arms x {} blocks = {} runs, in randomized blocks (seed {})",
                experiment.name,
                plan.arms.len(),
                experiment.repetitions,
                plan.runs.len(),
                experiment.seed
            )];
            lines.extend(plan.arms.iter().map(|a| format!("arm {}", a.label)));
            if let Some(fleet) = fleet {
                follow::generators(fleet);
            }
            let control = control.clone();
            follow::command(
                PagePlan {
                    kind: "experiment".into(),
                    lines,
                    columns: [
                        "run",
                        "block",
                        "arm",
                        "requests/s",
                        "p50",
                        "p99",
                        "failed",
                        "state",
                    ]
                    .map(String::from)
                    .to_vec(),
                },
                move || control.stop(),
            );
        }
        Page {
            on,
            experiment,
            plan,
            store,
            by_arm: vec![Vec::new(); plan.arms.len()],
        }
    }

    /// A runner's event: a run started or finished.
    pub fn event(&mut self, e: &Event) {
        if !self.on {
            return;
        }
        match e {
            Event::Starting { run, of, label } => {
                let mut cells = vec![
                    format!("{}/{of}", run.index + 1),
                    (run.block + 1).to_string(),
                    label.clone(),
                ];
                cells.extend(["…", "…", "…", "…", "running"].map(String::from));
                follow::step(row(run, cells, "running"), None);
            }
            Event::Finished { run, label, result } => {
                follow::run_ended(result);
                self.done(run, label, result, None);
            }
            Event::Resumed { .. } => self.resumed(),
            _ => {}
        }
    }

    /// A `--resume`d experiment: the runs it kept before, each a row (marked so) and in the
    /// comparison so far, as if they had run in this process.
    fn resumed(&mut self) {
        let Ok(Some(kept)) = self
            .store
            .find_resumable(&self.experiment.name, &self.plan.hash)
        else {
            return;
        };
        for c in kept.completed {
            let plan = self.plan;
            let Some(run) = plan
                .runs
                .iter()
                .find(|r| plan.arms[r.arm].label == c.variant && r.block == c.block as usize)
            else {
                continue;
            };
            if let Ok(stored) = self.store.run(c.run) {
                self.done(run, &c.variant, &stored.result, Some(c.run.0));
            }
        }
    }

    /// A run finished (in this process, or kept before as run `earlier` of the store): its
    /// row, and the comparison so far with it.
    fn done(&mut self, run: &PlannedRun, label: &str, result: &RunResult, earlier: Option<i64>) {
        let m = &result.measured;
        let pick = |f: fn(&loadlab_result::LatencySummary) -> f64| {
            m.latency_us.as_ref().map_or("–".into(), |l| {
                loadlab_experiment::metrics::duration_us(f(l))
            })
        };
        let cells = vec![
            format!("{}/{}", run.index + 1, self.plan.runs.len()),
            (run.block + 1).to_string(),
            label.to_string(),
            format!("{:.0}", m.requests.per_second),
            pick(|l| l.p50),
            pick(|l| l.p99),
            m.requests.failed.to_string(),
            match earlier {
                Some(id) => format!("kept before (run {id})"),
                None if result.interrupted => "interrupted".into(),
                None => "done".into(),
            },
        ];
        let mut kept = result.clone();
        kept.timeline = Vec::new();
        if let Some(arm) = self.by_arm.get_mut(run.arm) {
            arm.push(kept);
        }
        let so_far = self.so_far();
        follow::step(row(run, cells, "done"), Some(so_far));
    }

    /// The experiment's own comparison: the page's answer, now final.
    pub fn end(&self, comparisons: &[Comparison]) {
        if self.on {
            follow::so_far(SoFar {
                title: TITLE.into(),
                text: table::render(comparisons, Format::Text),
                is_final: true,
            });
        }
    }

    /// Each arm against its control over the runs finished so far; without a pair to
    /// compare yet, each arm's medians so far.
    fn so_far(&self) -> SoFar {
        let comparisons = compare(self.experiment, self.plan, &self.by_arm);
        let text = if comparisons.is_empty() {
            let mut t = String::from(
                "no arm and its control both have a run yet; each arm's medians so far:\n",
            );
            for (arm, runs) in self.plan.arms.iter().zip(&self.by_arm) {
                if runs.is_empty() {
                    continue;
                }
                let rates: Vec<f64> = runs
                    .iter()
                    .map(|r| r.measured.requests.per_second)
                    .collect();
                let p99s: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| r.measured.latency_us.as_ref().map(|l| l.p99))
                    .collect();
                t.push_str(&format!(
                    "  {}: {} run{}, median {:.0} requests/s, median p99 {}\n",
                    arm.label,
                    runs.len(),
                    if runs.len() == 1 { "" } else { "s" },
                    median(&rates).unwrap_or(0.0),
                    median(&p99s).map_or("–".into(), loadlab_experiment::metrics::duration_us)
                ));
            }
            t
        } else {
            table::render(&comparisons, Format::Text)
        };
        SoFar {
            title: TITLE.into(),
            text,
            is_final: false,
        }
    }
}

fn row(run: &PlannedRun, cells: Vec<String>, state: &str) -> Row {
    Row {
        key: format!("run {}", run.index + 1),
        cells,
        state: state.into(),
        record: None,
    }
}

/// The experiment's sink with the page beside each run's intervals (and, over a fleet, its
/// generators' own).
pub(super) struct Followed<'s> {
    pub inner: &'s mut dyn RunSink,
    pub control: Control,
}

impl RunSink for Followed<'_> {
    fn begin(
        &mut self,
        experiment: &Experiment,
        plan: &Plan,
        resume: bool,
    ) -> Result<Vec<(String, usize)>, String> {
        self.inner.begin(experiment, plan, resume)
    }
    fn stream(&mut self, arm: &Arm, run: &PlannedRun) -> Option<Box<dyn IntervalSink>> {
        let sink = self.inner.stream(arm, run);
        // Followed only beside the store's sink (which keeps the run's intervals; the
        // experiment's always gives one).
        if sink.is_none() || !follow::active() {
            return sink;
        }
        if let Some(control) = self.control.current() {
            follow::observe_parts(&control);
        }
        follow::follow(sink).0
    }
    fn save(&mut self, arm: &Arm, run: &PlannedRun, result: &RunResult) -> Result<(), String> {
        self.inner.save(arm, run, result)
    }
    fn finish(&mut self, status: &str) -> Result<(), String> {
        self.inner.finish(status)
    }
}
