//! `loadlab experiment FILE`: print the plan and its expected duration, run it (resumable,
//! stoppable with Ctrl-C), keep every run in the store, then print the comparisons and judge
//! the gates. Glue only: the experiment crate plans, runs and compares.
//!
//! This file holds the flags and the command's sequence; what is printed before and during
//! the runs (the plan, each run's line) is in `progress`, the comparisons and load curves
//! made from the kept runs in `comparisons`.

mod comparisons;
mod live;
mod progress;

use crate::cmd::gates::{self, GateArgs};
use anyhow::Context as _;
use clap::Args;
pub use comparisons::compare;
use comparisons::curves;
use loadlab_experiment::runner::{self, Control, Ending};
use loadlab_experiment::table::{self, Format};
use loadlab_experiment::{Experiment, Plan};
use progress::{print_plan, show};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Run an experiment file: variants x axes, repeated in randomized blocks, stored, compared",
    after_help = "Exit codes: 0 complete (and every gate passed); 1 a gate failed; 2 bad usage, \
                  a target failed verification, or a run could not start; 4 a relative gate is \
                  inconclusive; 130 interrupted by Ctrl-C, 143 by SIGTERM, 129 by SIGHUP \
                  (runs so far are kept: --resume continues).\n\n\
                  Examples:\n  \
                  loadlab experiment scenarios/portfolio-migration.toml\n  \
                  loadlab experiment my.toml --dry-run\n  \
                  loadlab experiment my.toml --resume --fail-if \"p99 regressed > 5%\""
)]
pub struct ExperimentArgs {
    /// The experiment file (TOML; see scenarios/README.md).
    pub file: PathBuf,

    /// Print the plan and its expected duration, run nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Override the file's repetitions (a quick look; a different plan).
    #[arg(long, value_name = "N")]
    pub repetitions: Option<usize>,

    /// Override the file's measured time per run, e.g. 3s.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,

    /// Override the file's warm-up per run, e.g. 1s.
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,

    /// Continue an interrupted experiment from its first missing run (the plan must be
    /// unchanged).
    #[arg(long)]
    pub resume: bool,

    #[command(flatten)]
    pub store: crate::cmd::store_args::DbArgs,

    #[command(flatten)]
    pub provenance: crate::cmd::runs::ProvenanceArgs,

    /// The targets directory [default: the nearest targets/ above here].
    #[arg(long, value_name = "DIR")]
    pub targets: Option<PathBuf>,

    /// strict: refuse to run when a limit cannot be applied (not root); best-effort: run, and
    /// say in each result which limits held.
    #[arg(long, value_enum, default_value_t = crate::cmd::server::LimitsArg::Strict)]
    pub limits: crate::cmd::server::LimitsArg,

    /// Refuse to start a run when a check of the machine against it FAILs (see `loadlab
    /// doctor`); without it the checks only warn, but a closed loop with more connections
    /// than the machine can open (open files, local ports) is refused either way.
    #[arg(long)]
    pub strict: bool,

    /// The comparison's format: text, markdown, csv or json.
    #[arg(long, default_value = "text")]
    pub format: String,

    /// Write a report of the experiment (HTML, Markdown or CSV, by the file's extension).
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    #[command(flatten)]
    pub gates: GateArgs,

    #[command(flatten)]
    pub metrics: crate::cmd::run::MetricsArgs,

    #[command(flatten)]
    pub generators: crate::cmd::generators::GeneratorArgs,

    #[command(flatten)]
    pub live: crate::live::LiveArgs,

    #[command(flatten)]
    pub tui: crate::tui::TuiArgs,
}

pub fn run(args: ExperimentArgs) -> anyhow::Result<ExitCode> {
    let mut experiment = Experiment::load(&args.file)?;
    if let Some(n) = args.repetitions {
        if n == 0 || n > 1_000 {
            anyhow::bail!("--repetitions {n}: between 1 and 1000");
        }
        experiment.repetitions = n;
    }
    if let Some(d) = &args.duration {
        let secs =
            loadlab_experiment::file::duration_s(d, "--duration").map_err(anyhow::Error::msg)?;
        if secs <= 0.0 {
            anyhow::bail!("--duration must be longer than 0; try --duration 10s");
        }
        experiment.base.duration_s = secs;
    }
    if let Some(w) = &args.warmup {
        experiment.set_warmup(
            loadlab_experiment::file::duration_s(w, "--warmup").map_err(anyhow::Error::msg)?,
        );
    }
    // The lab targets' manifests: an http3 arm on a target that does not serve HTTP/3 is
    // refused here, before a plan is shown; and a file without its own warmup gives each
    // target the warm-up its manifest asks for.
    for note in experiment
        .read_lab_targets_from(args.targets.as_deref())
        .map_err(anyhow::Error::msg)?
    {
        eprintln!("{note}");
    }
    let plan = Plan::new(&experiment).map_err(anyhow::Error::msg)?;
    // Each run's series are labelled with the experiment, its arm and its number. Flags
    // replace the file's [metrics] table whole.
    let metrics = if args.metrics.is_given() {
        crate::cmd::run::metrics_plan(&args.metrics, None, None)?
    } else {
        let table = file_metrics(&experiment.metrics)
            .map_err(|e| anyhow::anyhow!("{}: [metrics]: {e:#}", args.file.display()))?;
        crate::cmd::run::metrics_plan(&table, None, None)
            .map_err(|e| anyhow::anyhow!("{}: [metrics]: {e:#}", args.file.display()))?
    };
    let format = Format::parse(&args.format).map_err(anyhow::Error::msg)?;
    let gates = args.gates.parse()?;
    if let Some(report) = &args.report {
        crate::output::check_writable(report, "--report")?;
    }
    print_plan(&experiment, &plan);
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    // Bound before the first run: a taken --ui port fails in a second.
    let _page = crate::live::start(&args.live, Some(&args.store.path()))?;
    let tui = crate::tui::start(&args.tui);
    let store = args.store.open()?;
    let control = Control::default();
    {
        let control = control.clone();
        crate::signals::set_handler(move || control.stop())
            .context("cannot install the Ctrl-C handler")?;
    }
    let mut sink = crate::cmd::runs::ExperimentSink::new(&store, &args.file);
    let options = runner::Options {
        resume: args.resume,
        targets: args.targets.clone(),
        skip_verify: false,
        limits: match args.limits {
            crate::cmd::server::LimitsArg::Strict => loadlab_probe::LimitsMode::Strict,
            crate::cmd::server::LimitsArg::BestEffort => loadlab_probe::LimitsMode::BestEffort,
        },
        strict: args.strict,
        metrics,
        // `--generators` wins over the file's `[load] generators`.
        fleet: match match (&args.generators.generators, &experiment.generators) {
            (Some(_), _) => args.generators.fleet()?,
            (None, Some(source)) => Some(crate::cmd::generators::read(
                &loadlab_session::fleet::FleetSource::parse(source)?
                    .relative_to(args.file.parent().unwrap_or(Path::new("."))),
            )?),
            (None, None) => None,
        } {
            Some(fleet) => {
                // Each run checks its own share of connections; here, that every generator
                // answers and may send load.
                let check = fleet.check(0, None)?;
                for note in check.notes {
                    eprintln!("{note}");
                }
                for warning in check.warnings {
                    eprintln!("warning: {warning}");
                }
                Some(fleet)
            }
            None => None,
        },
    };
    let mut page = live::Page::new(&experiment, &plan, &store, &control, options.fleet.as_ref());
    let started = std::time::Instant::now();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut live::Followed {
            inner: &mut sink,
            control: control.clone(),
        },
        &options,
        &control,
        &mut |e| {
            // With --tui the runs are its rows (a line here would be drawn over).
            if !crate::tui::is_on()
                || !matches!(
                    e,
                    runner::Event::Starting { .. } | runner::Event::Finished { .. }
                )
            {
                show(&e);
            }
            page.event(&e);
        },
    )?;
    let id = sink.experiment_id();
    let by_arm = crate::cmd::runs::experiment_results(&store, id, &plan)?;
    let comparisons = compare(&experiment, &plan, &by_arm);
    page.end(&comparisons);
    // The terminal put back (its last frame the final comparison) before anything is printed.
    drop(tui);
    eprintln!(
        "\n{} runs in {:.0} s, kept in {} (experiment {id})\n",
        by_arm.iter().map(Vec::len).sum::<usize>(),
        started.elapsed().as_secs_f64(),
        args.store.path().display()
    );
    let left_out = crate::cmd::runs::interrupted_runs(&store, id)?;
    if left_out > 0 {
        eprintln!(
            "{left_out} interrupted run{} left out of the statistics: stopped or killed, \
             {} less than the plan asks (--resume runs them again)\n",
            if left_out == 1 { " is" } else { "s are" },
            if left_out == 1 {
                "it measured"
            } else {
                "they measured"
            }
        );
    }
    print!("{}", table::render(&comparisons, format));
    if matches!(format, table::Format::Text) {
        for curve in curves(&experiment, &plan, &by_arm)? {
            print!("\n{curve}");
        }
    }
    if let Some(report) = &args.report {
        crate::cmd::report::write_experiment(report, &experiment, &plan, &by_arm, &comparisons)?;
        eprintln!("report written to {}", report.display());
    } else {
        eprintln!(
            "\nNext: loadlab report {} -o {}.html   (charts of every run, shareable)",
            experiment.name, experiment.name
        );
    }
    let mut cases = Vec::new();
    for (arm, runs) in plan.arms.iter().zip(&by_arm) {
        for (i, r) in runs.iter().enumerate() {
            cases.extend(gates::judge_run(
                &gates,
                &format!("{}:{} run {}", experiment.name, arm.label, i + 1),
                r,
            ));
        }
    }
    cases.extend(gates::judge_comparisons(&gates, &comparisons));
    if ending == Ending::Interrupted {
        eprintln!(
            "interrupted: the runs so far are kept; `loadlab experiment {} --resume` continues",
            args.file.display()
        );
        let _ = gates::finish(&args.gates, cases)?;
        return Ok(crate::signals::interrupted());
    }
    if cases.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    gates::finish(&args.gates, cases)
}

/// The file's `[metrics]` table as the flags it stands for, checked by the same code.
fn file_metrics(
    table: &loadlab_experiment::file::MetricsFile,
) -> anyhow::Result<crate::cmd::run::MetricsArgs> {
    Ok(crate::cmd::run::MetricsArgs {
        server_metrics: table.server_metrics.clone(),
        server_metrics_select: table.select.clone(),
        server_metrics_interval: table
            .interval
            .as_deref()
            .map(crate::cmd::run::parse_duration)
            .transpose()
            .map_err(|e| anyhow::anyhow!("interval: {e}"))?,
        metrics_out: table.out.clone(),
        metrics_out_format: table.out_format.clone(),
        metrics_labels: table.labels.clone(),
        metrics_cacert: table.cacert.as_ref().map(PathBuf::from),
        metrics_token_file: table.token_file.as_ref().map(PathBuf::from),
        ..Default::default()
    })
}
