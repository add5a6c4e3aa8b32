//! An experiment end to end, with two in-process servers as its variants: runs interleaved
//! in randomized blocks, interrupted, resumed from the first missing run, and compared.

use loadlab_experiment::analysis::{self, ArmRuns};
use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::{self, Control, Ending, Event, RunSink};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use loadlab_testkit::{response, Behavior, TestServer, TimedServer, Timing};
use std::time::Duration;

/// Keeps runs in memory, as the store keeps them on disk.
#[derive(Default)]
struct Memory {
    runs: Vec<(String, usize, RunResult)>,
    status: Option<String>,
    began: usize,
}

impl RunSink for Memory {
    fn begin(
        &mut self,
        _: &Experiment,
        _: &Plan,
        resume: bool,
    ) -> Result<Vec<(String, usize)>, String> {
        self.began += 1;
        if !resume {
            self.runs.clear();
        }
        Ok(self
            .runs
            .iter()
            .filter(|(_, _, r)| !r.interrupted)
            .map(|(l, b, _)| (l.clone(), *b))
            .collect())
    }
    fn save(&mut self, arm: &Arm, run: &PlannedRun, result: &RunResult) -> Result<(), String> {
        // A run cut short is kept, marked interrupted; a resume runs it again.
        self.runs
            .retain(|(l, b, _)| !(l == &arm.label && *b == run.block));
        self.runs
            .push((arm.label.clone(), run.block, result.clone()));
        Ok(())
    }
    fn finish(&mut self, status: &str) -> Result<(), String> {
        self.status = Some(status.to_string());
        Ok(())
    }
}

#[test]
fn an_experiment_runs_interleaved_is_interrupted_resumed_and_compared() {
    let fast = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let slow = TimedServer::start(Timing::Delay(Duration::from_millis(2)));
    let file = format!(
        r#"
name = "e2e"
repetitions = 2
seed = 3
warmup = "100ms"
duration = "400ms"
cooldown = "0s"
[load]
connections = 2
threads = 1
[[variant]]
name = "fast"
url = "{}"
[[variant]]
name = "slow"
url = "{}"
"#,
        fast.url("").trim_end_matches('/'),
        slow.url("").trim_end_matches('/')
    );
    let experiment = Experiment::parse(&file).unwrap();
    let plan = Plan::new(&experiment).unwrap();
    assert_eq!(plan.runs.len(), 4);
    let mut sink = Memory::default();
    let options = runner::Options::default();

    // Stop after the second run ends: the first block is done, the second not begun.
    let control = Control::default();
    let mut finished = 0;
    let mut order = Vec::new();
    let stopper = control.clone();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &control,
        &mut |e| {
            if let Event::Finished { label, .. } = e {
                order.push(label);
                finished += 1;
                if finished == 2 {
                    stopper.stop();
                }
            }
        },
    )
    .unwrap();
    assert_eq!(ending, Ending::Interrupted);
    assert_eq!(sink.status.as_deref(), Some("interrupted"));
    assert_eq!(sink.runs.len(), 2);
    // Block 1 ran both arms, in the plan's order.
    let planned: Vec<String> = plan.runs[..2]
        .iter()
        .map(|r| plan.arms[r.arm].label.clone())
        .collect();
    assert_eq!(order, planned);
    assert_ne!(order[0], order[1]);

    // Resume: only the missing runs run.
    let options = runner::Options {
        resume: true,
        ..runner::Options::default()
    };
    let mut resumed = None;
    let mut ran = Vec::new();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &Control::default(),
        &mut |e| match e {
            Event::Resumed { done, of } => resumed = Some((done, of)),
            Event::Starting { run, .. } => ran.push(run.block),
            _ => {}
        },
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    assert_eq!(resumed, Some((2, 4)));
    assert_eq!(ran, [1, 1]);
    assert_eq!(sink.runs.len(), 4);

    // And compare: with 2 runs per arm no verdict can be significant, and the tool says how
    // many runs it would take.
    let arm_runs = |label: &str| -> Vec<RunResult> {
        sink.runs
            .iter()
            .filter(|(l, _, _)| l == label)
            .map(|(_, _, r)| r.clone())
            .collect()
    };
    let (a, b) = (arm_runs("fast"), arm_runs("slow"));
    let comparisons = analysis::compare(
        &[(
            ArmRuns {
                label: "fast".into(),
                runs: &a,
            },
            ArmRuns {
                label: "slow".into(),
                runs: &b,
            },
        )],
        &loadlab_compare::Options::default(),
    );
    let p50 = comparisons[0]
        .rows
        .iter()
        .find(|r| r.metric == "p50")
        .unwrap();
    assert_eq!(p50.control_values.len(), 2);
    let verdict = analysis::verdict_words(p50);
    assert!(verdict.starts_with("inconclusive"), "{verdict}");
    assert!(verdict.contains("run at least"), "{verdict}");
    // The slow arm's p50 is about 2 ms above the fast one's in every run.
    let ratio = p50.comparison.as_ref().and_then(|c| c.ratio).unwrap();
    assert!(ratio > 3.0, "ratio {ratio}");
}
