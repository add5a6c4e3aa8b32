//! `loadlab report SPEC -o FILE`: a report of stored or saved runs, in the format the file's
//! extension names (.html: one self-contained page; .md; .csv). SPEC is a run id, a tag, an
//! experiment's name (every arm, its repetitions merged exactly, and the comparisons), or
//! JSON result files. Glue only: rendering is the report crate's.

use anyhow::{bail, Context as _};
use clap::Args;
use loadlab_experiment::analysis::{self, ArmRuns, Comparison};
use loadlab_experiment::table::{self, Format};
use loadlab_experiment::{Experiment, Plan};
use loadlab_report::html::{self, Section};
use loadlab_result::RunResult;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Write a report (HTML, Markdown or CSV) of runs, an experiment, or a comparison",
    after_help = "Examples:\n  \
                  loadlab report portfolio-migration -o report.html   # an experiment: arms and comparisons\n  \
                  loadlab report baseline -o baseline.html            # a tagged run\n  \
                  loadlab report 12 -o run12.md\n  \
                  loadlab report a.json b.json -o both.html           # runs overlaid\n  \
                  loadlab report --compare baseline candidate -o cmp.html"
)]
pub struct ReportArgs {
    /// Runs to report: a run id, a tag, an experiment's name, or JSON result files.
    pub spec: Vec<String>,

    /// Compare two arms (run ids, tags, EXPERIMENT:variant, or comma-separated JSON files).
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with = "spec")]
    pub compare: Option<Vec<String>>,

    /// The report file; its extension picks the format (.html, .md, .csv).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,

    #[command(flatten)]
    pub store: crate::cmd::store_args::DbArgs,
}

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let kind = kind_of(&args.output)?;
    crate::output::check_writable(&args.output, "-o")?;
    if let Some(pair) = &args.compare {
        let control = crate::cmd::compare::arm(&pair[0], args.store.db.as_deref())?;
        let test = crate::cmd::compare::arm(&pair[1], args.store.db.as_deref())?;
        let (arms, comparisons) = two_arms((&pair[0], &control), (&pair[1], &test))?;
        write(&args.output, kind, &arms, &comparisons)?;
    } else {
        if args.spec.is_empty() {
            bail!("give what to report: a run id, a tag, an experiment's name, or JSON files");
        }
        let arms = runs_of(&args.spec, args.store.db.as_deref())?;
        match arms {
            Arms::Runs(runs) => write(&args.output, kind, &runs, &[])?,
            Arms::Experiment(e) => {
                let comparisons =
                    crate::cmd::experiment::compare(&e.experiment, &e.plan, &e.by_arm);
                write_experiment(
                    &args.output,
                    &e.experiment,
                    &e.plan,
                    &e.by_arm,
                    &comparisons,
                )?
            }
        }
    }
    eprintln!("report written to {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}

enum Arms {
    Runs(Vec<(String, RunResult)>),
    Experiment(Box<crate::cmd::runs::StoredExperiment>),
}

fn runs_of(spec: &[String], db: Option<&Path>) -> anyhow::Result<Arms> {
    if spec.iter().all(|s| s.ends_with(".json")) {
        return spec
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(f)
                    .with_context(|| format!("{f}: cannot read it; check the path"))?;
                let r: RunResult = serde_json::from_str(&text)
                    .with_context(|| format!("{f}: not a loadlab result (run --json)"))?;
                Ok((f.clone(), r))
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(Arms::Runs);
    }
    let store = crate::cmd::runs::open_store(db)?;
    if let [name] = spec {
        if let Some(e) = crate::cmd::runs::latest_experiment(&store, name)? {
            return Ok(Arms::Experiment(Box::new(e)));
        }
    }
    let mut out = Vec::new();
    for s in spec {
        for id in crate::cmd::runs::resolve(&store, s)? {
            out.push((format!("run {id}"), crate::cmd::runs::load(&store, id)?));
        }
    }
    Ok(Arms::Runs(out))
}

/// Runs, each with the label the report shows it by.
pub type Labelled = Vec<(String, RunResult)>;

/// Two arms compared, as `--compare A B` and `loadlab ui`'s side by side: each arm's runs
/// merged, and the comparison of A (the control) with B.
pub fn two_arms(
    a: (&str, &[RunResult]),
    b: (&str, &[RunResult]),
) -> anyhow::Result<(Labelled, Vec<Comparison>)> {
    let comparisons = analysis::compare(
        &[(
            ArmRuns {
                label: a.0.to_string(),
                runs: a.1,
            },
            ArmRuns {
                label: b.0.to_string(),
                runs: b.1,
            },
        )],
        &loadlab_compare::Options::default(),
    );
    let arms = vec![
        (a.0.to_string(), merged(a.1)?),
        (b.0.to_string(), merged(b.1)?),
    ];
    Ok((arms, comparisons))
}

/// Repetitions merged exactly: their histograms added, so an arm's distribution is the
/// distribution of all its requests.
fn merged(runs: &[RunResult]) -> anyhow::Result<RunResult> {
    loadlab_result::merge_repetitions(runs).map_err(|e| anyhow::anyhow!("{e}"))
}

#[derive(Clone, Copy)]
enum Kind {
    Html,
    Markdown,
    Csv,
}

fn kind_of(path: &Path) -> anyhow::Result<Kind> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("html" | "htm") => Ok(Kind::Html),
        Some("md" | "markdown") => Ok(Kind::Markdown),
        Some("csv") => Ok(Kind::Csv),
        _ => bail!(
            "-o {}: name the file .html, .md or .csv to choose the report's format",
            path.display()
        ),
    }
}

/// An experiment's report: each arm's repetitions merged, overlaid, with the comparisons
/// on top.
pub fn write_experiment(
    path: &Path,
    _experiment: &Experiment,
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
    comparisons: &[Comparison],
) -> anyhow::Result<()> {
    let kind = kind_of(path)?;
    write(path, kind, &experiment_arms(plan, by_arm)?, comparisons)
}

/// An experiment's arms that ran, each its repetitions merged, labelled with their count.
pub fn experiment_arms(
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
) -> anyhow::Result<Vec<(String, RunResult)>> {
    let mut arms = Vec::new();
    for (arm, runs) in plan.arms.iter().zip(by_arm) {
        if runs.is_empty() {
            continue;
        }
        arms.push((
            format!("{} ({} runs)", arm.label, runs.len()),
            merged(runs)?,
        ));
    }
    Ok(arms)
}

/// The HTML report of runs with the comparisons on top: `loadlab report`'s page, and
/// `loadlab ui`'s pages of an experiment and of two runs (one renderer for all). `caveat`,
/// when given, heads each comparison's notes (an experiment still going: not final).
pub fn html_page(
    runs: &[(String, RunResult)],
    comparisons: &[Comparison],
    caveat: Option<&str>,
) -> std::io::Result<Vec<u8>> {
    let labelled: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let sections: Vec<Section> = comparisons
        .iter()
        .map(|c| {
            let (title, columns, rows, mut notes) = table::plain(c);
            if let Some(caveat) = caveat {
                notes.insert(0, caveat.to_string());
            }
            notes.push(table::method_note().to_string());
            Section {
                title,
                columns,
                rows,
                notes,
                links: Vec::new(),
            }
        })
        .collect();
    let mut out = Vec::new();
    html::render_report(&labelled, &sections, &mut out)?;
    Ok(out)
}

fn write(
    path: &Path,
    kind: Kind,
    runs: &[(String, RunResult)],
    comparisons: &[Comparison],
) -> anyhow::Result<()> {
    let labelled: Vec<(&str, &RunResult)> = runs.iter().map(|(l, r)| (l.as_str(), r)).collect();
    let mut out = Vec::new();
    match kind {
        Kind::Html => out = html_page(runs, comparisons, None)?,
        Kind::Markdown => {
            if !comparisons.is_empty() {
                out.extend(table::render(comparisons, Format::Markdown).into_bytes());
                out.push(b'\n');
            }
            loadlab_report::markdown::render_runs(&labelled, &mut out)?;
        }
        Kind::Csv => {
            loadlab_report::csv::render_runs(&labelled, &mut out)?;
            if !comparisons.is_empty() {
                out.push(b'\n');
                out.extend(table::render(comparisons, Format::Csv).into_bytes());
            }
        }
    }
    crate::output::write_atomically(path, &out)
        .with_context(|| format!("cannot write {}", path.display()))
}
