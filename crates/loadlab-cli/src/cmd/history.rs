//! `loadlab history SERIES`: each metric over the revisions a series' runs measured, the
//! change points in it, and `--fail-on regression`, the CI gate on the newest revision.
//! Glue only: the history is `loadlab-history`'s, the page the report crate's, the JUnit
//! file the experiment crate's writer.

use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_experiment::gates::GateOutcome;
use loadlab_experiment::junit::{self, Case};
use loadlab_history::analysis::Options;
use loadlab_history::render::Names;
use loadlab_history::series::{LAST_DEFAULT, LAST_MAX};
use loadlab_history::{render, Filters, History, Metric, Newest};
use loadlab_report::html::history::{HistoryChart, HistoryPage, RevisionRuns};
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Each metric over revisions: medians, change points with their size, and a gate on the newest revision",
    after_help = "SERIES is a tag (every run saved with it), EXPERIMENT:variant (that variant \
                  in every experiment of the name) or scenario=NAME (every run of the scenario \
                  whose file has that name). Runs know their revision from --revision \
                  when saved, else the CI's commit variable, else the git checkout.\n\n\
                  Exit codes: 0 shown (and the gate passed); 1 --fail-on regression: the \
                  newest revision starts a change for the worse; 2 bad usage or no history; \
                  4 the gate could not decide (too few runs).\n\n\
                  Examples:\n  \
                  loadlab history nightly\n  \
                  loadlab history nightly --metric p99 --since 2026-11-01 --branch main\n  \
                  loadlab history nightly --fail-on regression --metric p99 --junit history.xml\n  \
                  loadlab history nightly --format markdown > comment.md\n  \
                  loadlab history nightly --html history.html"
)]
pub struct HistoryArgs {
    /// A tag, EXPERIMENT:variant, or scenario=NAME.
    pub series: String,

    /// Only these metrics (repeat, or comma-separate): p50, p90, p99, rps, errors
    /// [default: p50, p99, rps, errors].
    #[arg(long, value_delimiter = ',')]
    pub metric: Vec<String>,

    /// Only revisions first measured on or after this date (2026-11-01), or this revision
    /// and those after it.
    #[arg(long, value_name = "DATE|REV")]
    pub since: Option<String>,

    /// Only runs saved on this branch.
    #[arg(long, value_name = "NAME")]
    pub branch: Option<String>,

    /// Only the newest N revisions (after --since), at most 2000: the change-point search
    /// takes time as the square of a history's length [default: 500].
    #[arg(long, value_name = "N", value_parser = parse_last)]
    pub last: Option<usize>,

    /// text, markdown (for a pull request comment) or json.
    #[arg(long, default_value = "text")]
    pub format: String,

    /// Also write an HTML page: a chart per metric, change points marked, each revision's
    /// runs listed.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Also write the Markdown (whatever --format prints).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// `regression`: exit 1 when the newest revision starts a change for the worse on a
    /// metric (--metric's, else every metric shown).
    #[arg(long, value_name = "WHAT")]
    pub fail_on: Option<String>,

    /// Write the gate's outcome per metric as a JUnit XML report.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    #[command(flatten)]
    pub store: crate::cmd::store_args::DbArgs,
}

pub fn run(args: HistoryArgs) -> anyhow::Result<ExitCode> {
    let metrics: Vec<Metric> = match args.metric.is_empty() {
        true => Metric::DEFAULT.to_vec(),
        false => args
            .metric
            .iter()
            .map(|m| Metric::parse(m).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<_>>()?,
    };
    let gate = match args.fail_on.as_deref() {
        None => false,
        Some("regression") => true,
        Some(other) => bail!("--fail-on {other:?}: the one gate is `--fail-on regression`"),
    };
    if args.junit.is_some() && !gate {
        bail!("--junit writes the gate's outcome: add --fail-on regression");
    }
    for (path, flag) in [
        (&args.html, "--html"),
        (&args.markdown, "--markdown"),
        (&args.junit, "--junit"),
    ] {
        if let Some(path) = path {
            crate::output::check_writable(path, flag)?;
        }
    }
    let format = args.format.as_str();
    if !matches!(format, "text" | "markdown" | "json") {
        bail!("--format {format:?}: use text, markdown or json");
    }
    let store = args.store.open()?;
    let filters = Filters {
        branch: args.branch.clone(),
        since: args.since.clone(),
        last: Some(args.last.unwrap_or(LAST_DEFAULT)),
    };
    let mut bar = Analysing::new(metrics.len());
    let history = loadlab_history::history(
        &store,
        &args.series,
        &filters,
        &metrics,
        &Options::default(),
        &mut |revisions, metric, k| bar.show(revisions, metric, k),
    );
    bar.finish();
    let history = history?;
    match format {
        "json" => println!("{}", serde_json::to_string_pretty(&history)?),
        "markdown" => print!("{}", render::markdown(&history)),
        _ => print!("{}", render::text(&history)),
    }
    if let Some(path) = &args.markdown {
        crate::output::write_atomically(path, render::markdown(&history).as_bytes())
            .with_context(|| format!("--markdown: cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let mut page = Vec::new();
        loadlab_report::html::history::render_history(&page_of(&history), &mut page)?;
        crate::output::write_atomically(path, &page)
            .with_context(|| format!("--html: cannot write {}", path.display()))?;
    }
    if !gate {
        return Ok(ExitCode::SUCCESS);
    }
    let cases = judge(&history);
    for c in &cases {
        match &c.outcome {
            GateOutcome::Pass(m) => eprintln!("gate passed: {m}"),
            GateOutcome::Fail(m) => eprintln!("gate FAILED: {m}"),
            GateOutcome::Inconclusive(m) => eprintln!("gate inconclusive: {m}"),
        }
    }
    if let Some(path) = &args.junit {
        crate::output::write_atomically(path, junit::render(&cases).as_bytes())
            .with_context(|| format!("--junit: cannot write {}", path.display()))?;
    }
    Ok(crate::cmd::gates::exit_code(&cases))
}

/// The gate, one case per metric: fails when the newest revision starts a change for the
/// worse; could not decide when its runs are too few.
fn judge(history: &History) -> Vec<Case> {
    let names = Names::of(history);
    history
        .metrics
        .iter()
        .filter_map(|m| {
            let newest = m.newest.as_ref()?;
            let line = render::newest_line(m, newest, &names);
            let outcome = match newest.verdict {
                Newest::Regression { .. } => GateOutcome::Fail(line),
                Newest::TooFewRuns { .. } => GateOutcome::Inconclusive(line),
                _ => GateOutcome::Pass(line),
            };
            Some(Case {
                subject: history.series.clone(),
                gate: format!("{} regression at {}", m.metric.name(), newest.revision),
                outcome,
            })
        })
        .collect()
}

/// What the report crate's page draws.
pub(crate) fn page_of(h: &History) -> HistoryPage {
    let charts = h
        .metrics
        .iter()
        .map(|m| HistoryChart {
            title: format!(
                "{} ({} is better)",
                m.metric.name(),
                match m.better {
                    loadlab_history::metric::Better::Lower => "lower",
                    loadlab_history::metric::Better::Higher => "higher",
                }
            ),
            unit: m.unit.to_string(),
            revisions: m.revisions.iter().map(|r| r.revision.clone()).collect(),
            median: m.revisions.iter().map(|r| r.median).collect(),
            min: m.revisions.iter().map(|r| r.min).collect(),
            max: m.revisions.iter().map(|r| r.max).collect(),
            changes: m
                .changes
                .iter()
                .map(|c| (c.index, format!("{} {}", c.revision, render::size(&c.size))))
                .collect(),
            environment_changes: m.environment_changes.clone(),
        })
        .collect();
    let mut revisions: Vec<RevisionRuns> = Vec::new();
    // Each revision once, found in a set: a search of the list per revision would cost
    // the square of a long history.
    let mut listed = std::collections::HashSet::new();
    for m in &h.metrics {
        for r in &m.revisions {
            if listed.insert(r.revision.as_str()) {
                revisions.push(RevisionRuns {
                    revision: r.revision.clone(),
                    first_started_at: r.first_started_at.clone(),
                    runs: r.runs.iter().map(|id| id.0).collect(),
                });
            }
        }
    }
    let names = Names::of(h);
    let verdicts = h
        .metrics
        .iter()
        .filter_map(|m| m.newest.as_ref().map(|n| render::newest_line(m, n, &names)))
        .collect();
    HistoryPage {
        title: format!("loadlab history: {}", h.series),
        verdicts,
        charts,
        revisions,
        environments: h.environments.clone(),
    }
}

/// `--last N`: 1 to [`LAST_MAX`].
fn parse_last(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=LAST_MAX).contains(&n) => Ok(n),
        _ => Err(format!(
            "give a number of revisions from 1 to {LAST_MAX} (the change-point search takes \
             time as the square of it; --since narrows a longer history)"
        )),
    }
}

/// Which metric the analysis is at, on standard error when it is a terminal and the
/// history is long enough to take a while.
struct Analysing {
    bar: Option<indicatif::ProgressBar>,
    metrics: usize,
}

impl Analysing {
    /// Below this many revisions the analysis takes well under a second: nothing shown.
    const LONG: usize = 200;

    fn new(metrics: usize) -> Analysing {
        Analysing { bar: None, metrics }
    }

    fn show(&mut self, revisions: usize, metric: Metric, k: usize) {
        if self.bar.is_none() && revisions >= Self::LONG && std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(self.metrics as u64),
                indicatif::ProgressDrawTarget::stderr(),
            );
            bar.set_style(
                indicatif::ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} metrics, {elapsed} {msg}",
                )
                .expect("static template"),
            );
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            self.bar = Some(bar);
        }
        if let Some(bar) = &self.bar {
            bar.set_position(k as u64);
            bar.set_message(format!(
                "finding change points in {} over {revisions} revisions",
                metric.name()
            ));
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
