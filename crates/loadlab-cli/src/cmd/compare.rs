//! `loadlab compare A B`: compare two arms of runs (run ids, tags, `EXPERIMENT:variant`, or
//! JSON result files) with the statistics of `loadlab-compare`, print the table, and gate.
//! Glue only: resolving arms is the store's, comparing is the experiment crate's.

use crate::cmd::gates::{self, GateArgs};
use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_experiment::analysis::{self, ArmRuns};
use loadlab_experiment::table::{self, Format};
use loadlab_result::RunResult;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Compare two arms of runs: medians, the ratio B/A with its 95% interval, and a verdict per metric",
    after_help = "An arm is a run id, a tag (every run saved with it; TAG@last for the latest \
                  alone), EXPERIMENT:variant (all its runs), or JSON result files (run --json), \
                  comma-separated. Each run counts once: the unit is the run, not the request; \
                  the table's n= says how many runs each arm holds.\n\n\
                  Exit codes: 0 compared (and every gate passed); 1 a gate failed; 2 bad usage; \
                  4 a relative gate is inconclusive (too few runs to decide).\n\n\
                  Examples:\n  \
                  loadlab compare portfolio-migration:actix-web portfolio-migration:axum\n  \
                  loadlab compare baseline candidate --fail-if \"p99 regressed > 5%\"\n  \
                  loadlab compare a1.json,a2.json,a3.json,a4.json b1.json,b2.json,b3.json,b4.json"
)]
pub struct CompareArgs {
    /// The control arm.
    pub a: String,
    /// The test arm.
    pub b: String,

    /// text, markdown, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,

    /// "Equivalent" when the ratio's whole interval lies within ±this, e.g. 3%.
    #[arg(long, default_value = "3%")]
    pub margin: String,

    #[command(flatten)]
    pub store: crate::cmd::store_args::DbArgs,

    #[command(flatten)]
    pub gates: GateArgs,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let format = Format::parse(&args.format).map_err(anyhow::Error::msg)?;
    let margin = args
        .margin
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|m| (0.0..50.0).contains(m))
        .with_context(|| format!("--margin {:?}: a percentage below 50, e.g. 3%", args.margin))?
        / 100.0;
    let gates = args.gates.parse()?;
    let control = arm(&args.a, args.store.db.as_deref())?;
    let test = arm(&args.b, args.store.db.as_deref())?;
    let opts = loadlab_compare::Options {
        equivalence_margin: margin,
        ..loadlab_compare::Options::default()
    };
    let comparisons = analysis::compare(
        &[(
            ArmRuns {
                label: args.a.clone(),
                runs: &control,
            },
            ArmRuns {
                label: args.b.clone(),
                runs: &test,
            },
        )],
        &opts,
    );
    print!("{}", table::render(&comparisons, format));
    let outcome = gates::judge_comparisons(&gates, &comparisons);
    gates::finish(&args.gates, outcome)
}

/// The runs of one arm.
pub fn arm(spec: &str, db: Option<&std::path::Path>) -> anyhow::Result<Vec<RunResult>> {
    let files: Vec<&str> = spec.split(',').filter(|s| !s.is_empty()).collect();
    if files.iter().all(|f| f.ends_with(".json")) {
        return files
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("{f}: cannot read it; check the path"))?;
                serde_json::from_str(&text)
                    .with_context(|| format!("{f}: not a loadlab result (run --json)"))
            })
            .collect();
    }
    let store = crate::cmd::runs::open_store(db)?;
    let runs = store.resolve(spec).map_err(anyhow::Error::msg)?;
    if runs.is_empty() {
        bail!("{spec}: no runs; see `loadlab runs list`");
    }
    runs.iter()
        .map(|id| store.run(*id).map(|r| r.result).map_err(anyhow::Error::msg))
        .collect()
}
