//! `--fail-if` and `--junit` on `run`, `experiment` and `compare`: flags, the judging, the
//! exit code (1 a gate failed, 4 a relative gate is inconclusive) and the JUnit file. The
//! gates themselves are the experiment crate's.

use anyhow::Context as _;
use clap::Args;
use loadlab_experiment::analysis::Comparison;
use loadlab_experiment::gates::{Gate, GateOutcome};
use loadlab_experiment::junit::{self, Case};
use loadlab_experiment::metrics;
use loadlab_result::RunResult;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args, Default)]
pub struct GateArgs {
    /// Fail (exit 1) when this holds, e.g. "p99 > 50ms", "errors > 1%", "rps < 1000",
    /// "server.cpu.p99 > 0.5", "p99 > 50ms for 10s", "p99 regressed > 5%" (comparisons);
    /// repeat for more.
    #[arg(long = "fail-if", value_name = "EXPR", help_heading = "Gates")]
    pub fail_if: Vec<String>,

    /// Write the gates' outcomes as a JUnit XML report.
    #[arg(long, value_name = "FILE", help_heading = "Gates")]
    pub junit: Option<PathBuf>,
}

impl GateArgs {
    /// Parses every gate now, before anything runs.
    pub fn parse(&self) -> anyhow::Result<Vec<Gate>> {
        let gates = self
            .fail_if
            .iter()
            .map(|g| Gate::parse(g).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(path) = &self.junit {
            crate::output::check_writable(path, "--junit")?;
        }
        Ok(gates)
    }
}

/// Absolute gates on one run.
pub fn judge_run(gates: &[Gate], subject: &str, result: &RunResult) -> Vec<Case> {
    gates
        .iter()
        .filter(|g| matches!(g, Gate::Absolute { .. }))
        .map(|g| Case {
            subject: subject.to_string(),
            gate: g.text().to_string(),
            outcome: g.check_run(result),
        })
        .collect()
}

/// Relative gates on comparisons (absolute ones judge the runs).
pub fn judge_comparisons(gates: &[Gate], comparisons: &[Comparison]) -> Vec<Case> {
    let mut out = Vec::new();
    for c in comparisons {
        for gate in gates {
            let Gate::Regressed { metric, .. } = gate else {
                continue;
            };
            let subject = format!("{} against {}", c.test, c.control);
            let row = c.rows.iter().find(|r| r.metric == metric);
            let higher =
                metrics::metric(metric).is_some_and(|m| m.sense == metrics::Sense::HigherIsBetter);
            let outcome = match row {
                None => GateOutcome::Inconclusive(format!(
                    "{}: {metric} is not among the compared metrics",
                    gate.text()
                )),
                Some(row) => {
                    let ci = row.comparison.as_ref().and_then(|c| c.ci);
                    gate.check_comparison(metric, ci, higher)
                        .expect("the gate is about this metric")
                }
            };
            out.push(Case {
                subject,
                gate: gate.text().to_string(),
                outcome,
            });
        }
    }
    out
}

/// Prints the gates' outcomes, writes the JUnit file, and gives the exit code.
pub fn finish(args: &GateArgs, cases: Vec<Case>) -> anyhow::Result<ExitCode> {
    for c in &cases {
        match &c.outcome {
            GateOutcome::Pass(m) => eprintln!("gate passed: {} ({})", m, c.subject),
            GateOutcome::Fail(m) => eprintln!("gate FAILED: {} ({})", m, c.subject),
            GateOutcome::Inconclusive(m) => {
                eprintln!("gate inconclusive: {} ({})", m, c.subject)
            }
        }
    }
    if let Some(path) = &args.junit {
        crate::output::write_atomically(path, junit::render(&cases).as_bytes())
            .with_context(|| format!("--junit: cannot write {}", path.display()))?;
    }
    Ok(exit_code(&cases))
}

pub fn exit_code(cases: &[Case]) -> ExitCode {
    if cases
        .iter()
        .any(|c| matches!(c.outcome, GateOutcome::Fail(_)))
    {
        ExitCode::from(1)
    } else if cases
        .iter()
        .any(|c| matches!(c.outcome, GateOutcome::Inconclusive(_)))
    {
        ExitCode::from(4)
    } else {
        ExitCode::SUCCESS
    }
}
