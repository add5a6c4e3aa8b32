//! `loadlab experiment FILE`: print the plan and its expected duration, run it (resumable,
//! stoppable with Ctrl-C), keep every run in the store, then print the comparisons and judge
//! the gates. Glue only: the experiment crate plans, runs and compares.

use crate::cmd::gates::{self, GateArgs};
use anyhow::Context as _;
use clap::Args;
use loadlab_experiment::analysis::{self, ArmRuns};
use loadlab_experiment::file::Source;
use loadlab_experiment::runner::{self, Control, Ending, Event};
use loadlab_experiment::table::{self, Format};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use std::path::PathBuf;
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

    /// The results store [default: $LOADLAB_DB, or loadlab.db here].
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,

    /// The targets directory [default: the nearest targets/ above here].
    #[arg(long, value_name = "DIR")]
    pub targets: Option<PathBuf>,

    /// strict: refuse to run when a limit cannot be applied (not root); best-effort: run, and
    /// say in each result which limits held.
    #[arg(long, value_enum, default_value_t = crate::cmd::server::LimitsArg::Strict)]
    pub limits: crate::cmd::server::LimitsArg,

    /// Refuse to start a run when a check of the machine against it FAILs (see `loadlab
    /// doctor`); without it the checks only warn.
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
    // A file without its own warmup gives each lab target the warm-up its manifest asks for.
    for note in experiment
        .apply_target_warmups_from(args.targets.as_deref())
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
    let store = crate::cmd::runs::open_store(args.db.as_deref())?;
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
    };
    let started = std::time::Instant::now();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &control,
        &mut |e| show(&e),
    )?;
    let id = sink.experiment_id();
    let by_arm = crate::cmd::runs::experiment_results(&store, id, &plan)?;
    let comparisons = compare(&experiment, &plan, &by_arm);
    eprintln!(
        "\n{} runs in {:.0} s, kept in {} (experiment {id})\n",
        by_arm.iter().map(Vec::len).sum::<usize>(),
        started.elapsed().as_secs_f64(),
        crate::cmd::runs::db_path(args.db.as_deref()).display()
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

/// With a `rate` or `connections` axis, the latency-throughput curve of each variant (and
/// each combination of the other axes): one row per load, each arm's repetitions merged,
/// the knee marked, as `loadlab sweep` prints it.
fn curves(
    experiment: &Experiment,
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
) -> anyhow::Result<Vec<String>> {
    let is_load = |k: &str| k == "rate" || k == "connections";
    if !plan
        .arms
        .iter()
        .any(|a| a.axes.iter().any(|(k, _)| is_load(k)))
    {
        return Ok(Vec::new());
    }
    let criteria = loadlab_capacity::Criteria::new(Vec::new());
    // Arms grouped by variant and the other axes, in plan order.
    let mut groups: Vec<(String, Vec<(f64, RunResult)>)> = Vec::new();
    for (arm, runs) in plan.arms.iter().zip(by_arm) {
        if runs.is_empty() {
            continue;
        }
        let others: Vec<String> = arm
            .axes
            .iter()
            .filter(|(k, _)| !is_load(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let mut name = experiment.variants[arm.variant].name.clone();
        if !others.is_empty() {
            name = format!("{name}[{}]", others.join(","));
        }
        let load = arm
            .axes
            .iter()
            .find(|(k, _)| is_load(k))
            .and_then(|(_, v)| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        let merged = loadlab_result::merge_repetitions(runs).map_err(|e| anyhow::anyhow!("{e}"))?;
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, points)) => points.push((load, merged)),
            None => groups.push((name, vec![(load, merged)])),
        }
    }
    Ok(groups
        .into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let records = points
                .iter()
                .enumerate()
                .map(|(i, (_, r))| loadlab_capacity::driver::record_of(i + 1, r, &criteria))
                .collect();
            let report = loadlab_capacity::driver::sweep_report(records, &criteria, 3.0, None);
            format!(
                "{name}: latency and throughput against load\n{}",
                report.text()
            )
        })
        .collect())
}

/// Each arm against its control: the control variant's arm with the same axis values; with
/// one variant, every arm against the first.
pub fn compare(
    experiment: &Experiment,
    plan: &Plan,
    by_arm: &[Vec<RunResult>],
) -> Vec<analysis::Comparison> {
    let mut pairs = Vec::new();
    for (i, arm) in plan.arms.iter().enumerate() {
        let control = if experiment.variants.len() == 1 {
            Some(0)
        } else {
            plan.control_of(i, experiment.control)
        };
        let Some(c) = control.filter(|c| *c != i) else {
            continue;
        };
        if by_arm[c].is_empty() || by_arm[i].is_empty() {
            continue;
        }
        pairs.push((
            ArmRuns {
                label: format!("{}:{}", experiment.name, plan.arms[c].label),
                runs: &by_arm[c],
            },
            ArmRuns {
                label: format!("{}:{}", experiment.name, arm.label),
                runs: &by_arm[i],
            },
        ));
    }
    let opts = loadlab_compare::Options {
        equivalence_margin: experiment.margin,
        ..loadlab_compare::Options::default()
    };
    analysis::compare(&pairs, &opts)
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

fn print_plan(experiment: &Experiment, plan: &Plan) {
    let launched = experiment
        .variants
        .iter()
        .any(|v| !matches!(v.source, Source::Url(_)));
    let expected = plan.expected_s(experiment, if launched { 1.0 } else { 0.0 });
    eprintln!(
        "{}: {} arms x {} repetitions = {} runs in randomized blocks (seed {}), about {:.0} min{}",
        experiment.name,
        plan.arms.len(),
        experiment.repetitions,
        plan.runs.len(),
        experiment.seed,
        (expected / 60.0).max(1.0),
        if experiment.description.is_empty() {
            String::new()
        } else {
            format!("\n  {}", experiment.description)
        }
    );
    for arm in &plan.arms {
        let s = &arm.settings;
        let load = match (s.rate, s.connections) {
            (Some(r), _) => format!("{r} requests/s"),
            (None, c) => format!("{} connections", c.unwrap_or(50)),
        };
        let limits: Vec<String> = [
            s.cpus.map(|c| format!("cpus {c}")),
            s.memory.as_ref().map(|m| format!("memory {m}")),
            s.pin.as_ref().map(|p| format!("pin {p}")),
            s.bandwidth.both.as_ref().map(|b| format!("bandwidth {b}")),
            s.bandwidth.up.as_ref().map(|b| format!("bandwidth up {b}")),
            s.bandwidth
                .down
                .as_ref()
                .map(|b| format!("bandwidth down {b}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        eprintln!(
            "  {:<28} {}, {} for {} s after {} s warm-up{}{}",
            arm.label,
            load,
            s.paths.join(" "),
            s.duration_s,
            s.warmup_s,
            if limits.is_empty() {
                String::new()
            } else {
                format!(", {}", limits.join(", "))
            },
            if s.keepalive {
                ""
            } else {
                ", new connection per request"
            }
        );
    }
    // Whether these repetitions can decide anything: each Holm family holds four metrics
    // for every arm compared with its control.
    let compared = plan
        .arms
        .iter()
        .enumerate()
        .filter(|(i, a)| {
            if experiment.variants.len() == 1 {
                *i != 0
            } else {
                a.variant != experiment.control
            }
        })
        .count();
    if compared > 0 {
        let family = 4 * compared;
        let n = experiment.repetitions;
        let min_p = loadlab_compare::min_attainable_p(n, n);
        let floor = family as f64 * min_p;
        if floor >= 0.05 {
            eprintln!(
                "  note: with {n} runs per arm and {compared} comparison{} of 4 metrics each, no \
                 verdict can reach 95% confidence (the smallest p {n} runs allow is {min_p:.2}, \
                 and Holm's correction for {family} tests takes it to {}); run at least {} per \
                 arm (--repetitions)",
                if compared == 1 { "" } else { "s" },
                if floor >= 1.0 {
                    "1".to_string()
                } else {
                    format!("{floor:.2}")
                },
                loadlab_compare::runs_needed(0.05, family).map_or("more".into(), |r| r.to_string())
            );
        }
    }
    let order: Vec<String> = plan
        .runs
        .iter()
        .take(plan.arms.len() * 2)
        .map(|r| plan.arms[r.arm].label.clone())
        .collect();
    eprintln!(
        "  order: {}{}  (plan {})",
        order.join(", "),
        if plan.runs.len() > order.len() {
            ", ..."
        } else {
            ""
        },
        plan.hash
    );
}

fn show(e: &Event) {
    match e {
        Event::Building(name) => eprintln!("building {name} (cached when up to date)"),
        Event::Verifying(name) => eprintln!("verifying {name} against the contract"),
        Event::Verified { name, summary } => eprintln!("verified {name}: {summary}"),
        Event::Resumed { done, of } => eprintln!("resuming: {done} of {of} runs already kept"),
        Event::Starting { run, of, label } => eprint!(
            "run {:>2}/{of}  block {}  {label:<28}",
            run.index + 1,
            run.block + 1
        ),
        Event::Note(n) => {
            if n.starts_with("started ")
                || n.starts_with("busy-polling")
                || n.starts_with("loadlab runs")
            {
                return;
            }
            // The machine's checks run before every run: say each finding once.
            if n.starts_with("WARN ") || n.starts_with("FAIL ") {
                thread_local! {
                    static SAID: std::cell::RefCell<std::collections::HashSet<String>> =
                        Default::default();
                }
                let key = n.split(':').next().unwrap_or(n).to_string();
                if !SAID.with(|s| s.borrow_mut().insert(key)) {
                    return;
                }
            }
            eprintln!("  {n}")
        }
        Event::Finished { result, .. } => {
            let m = &result.measured;
            let lat = m.latency_us.as_ref();
            let ready = result
                .server
                .as_ref()
                .and_then(|s| s.startup.as_ref())
                .map_or(String::new(), |s| {
                    format!("  ready {:.0} ms", s.ready_s * 1e3)
                });
            eprintln!(
                "  {:>9.0} req/s  p50 {:>9}  p99 {:>9}{}{}{}",
                m.requests.per_second,
                lat.map_or("-".into(), |l| loadlab_experiment::metrics::duration_us(
                    l.p50
                )),
                lat.map_or("-".into(), |l| loadlab_experiment::metrics::duration_us(
                    l.p99
                )),
                ready,
                if result.first_requests.as_ref().is_some_and(|f| f.cold_start) {
                    "  cold start"
                } else {
                    ""
                },
                if result.interrupted {
                    "  (interrupted)"
                } else {
                    ""
                }
            );
        }
    }
}
