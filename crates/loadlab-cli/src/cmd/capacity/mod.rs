//! `loadlab capacity` and `loadlab sweep`: the flags become a session (the server launched
//! once) and a search or sweep (`loadlab-capacity`); this prints each probe as it ends,
//! keeps each probe's run in the store, handles Ctrl-C (the probes so far are kept and
//! judged), and writes the document and the report.

use crate::cmd::run::{count, flags_named, parse_duration, RequestArgs};
use crate::cmd::server::ServerArgs;
use crate::output::{self, write_atomically};
use anyhow::Context as _;
use clap::Args;
use loadlab_capacity::driver::{self, Loads, ProbeShape, SearchSpec, Stop, SweepSpec};
use loadlab_capacity::search::{rate, Policy, Unit};
use loadlab_capacity::{parse_slo, parse_until, CapacityReport, Criteria, Events, ProbeRecord};
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunResult;
use loadlab_session::spill::store_sink::{StoreSink, StreamedRun};
use loadlab_session::spill::stored;
use loadlab_session::{BusyPoll, Session, SessionSpec};
use loadlab_store::Store;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod live;
mod report;
mod vary;
use report::{report_kind, write_report};

/// What a search and a sweep share: the objectives, the probes' shape, the server, outputs.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The URL to load, e.g. http://127.0.0.1:8080/plaintext; with --target or --exec, a
    /// path such as /plaintext. With --scenario, none: the scenario names its URLs.
    #[arg(required_unless_present = "scenario")]
    pub url: Option<String>,

    /// --scenario and --var: each probe an open loop of the scenario's iterations.
    #[command(flatten)]
    pub scenario: crate::cmd::run::ScenarioArgs,

    /// Objectives each probe must hold, e.g. "p99<50ms, errors<1%" (pNN for any percentile,
    /// mean, max, errors). Without an errors objective, errors<1% is added.
    #[arg(long, value_name = "OBJECTIVES", default_value = "errors<1%")]
    pub slo: String,

    /// Also fail a probe once the server's CPU reaches this share of its quota (--cpus), of
    /// its pinned CPUs, or of one core: server-cpu=0.85 (post 003's criterion).
    #[arg(long, value_name = "server-cpu=SHARE")]
    pub until: Option<String>,

    /// How long each probe measures.
    #[arg(short = 'd', long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "5s")]
    pub duration: Duration,

    /// Load before each probe measures (reported apart): lets the server warm and drain
    /// the queue the last probe left.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s")]
    pub warmup: Duration,

    /// Pause after a probe that failed, so its queue drains before the next.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration, default_value = "1s")]
    pub cooldown: Duration,

    /// Write the document (every probe, its judgment, the finding) as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write a report: HTML (throughput and p99 against offered load, the probes' table,
    /// the boundary probes over time) or Markdown, by the file's extension.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,

    /// --save, --no-save, --tag and --db.
    #[command(flatten)]
    pub store: crate::cmd::store_args::StoreArgs,

    #[command(flatten)]
    pub provenance: crate::cmd::runs::ProvenanceArgs,

    /// Print only the table and the verdict.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    #[command(flatten)]
    pub generators: crate::cmd::generators::GeneratorArgs,

    #[command(flatten)]
    pub metrics: crate::cmd::run::MetricsArgs,

    #[command(flatten)]
    pub live: crate::live::LiveArgs,

    #[command(flatten)]
    pub tui: crate::tui::TuiArgs,
}

#[derive(Debug, Args)]
#[command(
    about = "Find the highest request rate a service sustains within its objectives",
    after_help = "Open-loop probes at rising rates: doubling from --start until a probe fails, \
                  then bisection to --tolerance; then --repeats rounds near the boundary, so \
                  the capacity comes with its range. A probe passes when it holds every \
                  objective, keeps up (98% of the offered rate answered) and no queue grows \
                  during it; a probe where loadlab itself was the limit ends the search with \
                  that verdict.\n\n\
                  Exit codes: 0 a capacity was found; 2 bad usage or the search could not \
                  start; 3 the server died; 4 no capacity found (loadlab was the limit, or the \
                  search hit --min-rate or --max-rate); 130 interrupted by Ctrl-C, 143 by SIGTERM, \
                  129 by SIGHUP (the probes so far are printed and written).\n\n\
                  Examples:\n  \
                  loadlab capacity --target rust-actix-web --cpus 0.5 --slo 'p99<50ms' /plaintext\n  \
                  loadlab capacity --until server-cpu=0.85 --budget 5m http://127.0.0.1:8080/json"
)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,

    /// The first rate probed (requests/s).
    #[arg(long, default_value_t = 100.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub start: f64,

    /// The highest rate probed (requests/s).
    #[arg(long, default_value_t = 1_000_000.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub max_rate: f64,

    /// The lowest rate probed (requests/s).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = crate::cmd::run::rate)]
    pub min_rate: f64,

    /// Bisect until the failing rate is within this share above the passing one.
    #[arg(long, default_value_t = 0.05)]
    pub tolerance: f64,

    /// Rounds of the search: the first, and repeats near the boundary for the range.
    #[arg(long, default_value_t = 3, allow_hyphen_values = true, value_parser = count::<usize>)]
    pub repeats: usize,

    /// Start no probe that would end after this much time, e.g. 5m.
    #[arg(long, allow_hyphen_values = true, value_parser = parse_duration)]
    pub budget: Option<Duration>,

    /// --vary and --echo-rate.
    #[command(flatten)]
    pub vary: vary::VaryArgs,
}

#[derive(Debug, Args)]
#[command(
    about = "Measure a list of rates or connection counts: the latency-throughput curve, knee marked",
    after_help = "Examples:\n  \
                  loadlab sweep --rates 1000,5000,10000,12000,14000,15000 --target rust-actix-web /plaintext\n  \
                  loadlab sweep --connections 100,500,1000,1500,2000,2500 http://127.0.0.1:8080/"
)]
pub struct SweepArgs {
    #[command(flatten)]
    pub probe: ProbeArgs,

    /// Open loop: requests/s, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "connections",
        required_unless_present = "connections"
    )]
    pub rates: Vec<f64>,

    /// Closed loop: connection counts, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = count::<usize>)]
    pub connections: Vec<usize>,

    /// The knee is where p99 first reaches this many times its value at the lowest load.
    #[arg(long, default_value_t = 3.0)]
    pub knee_factor: f64,
}

pub fn capacity(args: CapacityArgs) -> anyhow::Result<ExitCode> {
    let variable = args
        .vary
        .variable(args.probe.request.ws.ws_held.is_some())?;
    let policy = Policy {
        start: args.start,
        max_rate: args.max_rate,
        min_rate: args.min_rate,
        tolerance: args.tolerance,
        rounds: args.repeats,
        unit: variable.unit(),
    };
    policy.check().map_err(anyhow::Error::msg)?;
    let mut prepared = prepare(&args.probe, "capacity")?;
    prepared.unit = variable.unit();
    let spec = SearchSpec {
        policy,
        variable,
        criteria: prepared.criteria.clone(),
        shape: prepared.shape.clone(),
        budget: args.budget,
    };
    let judge = live::Judge::Search(spec.policy.clone());
    finish(
        prepared,
        &args.probe,
        false,
        judge,
        |session, stop, events| driver::run_search(session, &spec, stop, events),
    )
}

pub fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let loads = if args.connections.is_empty() {
        if let Some(bad) = args.rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
            anyhow::bail!("--rates: {bad} is not a rate; give requests/s above 0, e.g. 1000,5000");
        }
        Loads::Rates(args.rates.clone())
    } else {
        if args.connections.contains(&0) {
            anyhow::bail!("--connections: 0 is not a connection count; give 1 or more");
        }
        Loads::Connections(args.connections.clone())
    };
    if !(args.knee_factor > 1.0 && args.knee_factor.is_finite()) {
        anyhow::bail!(
            "--knee-factor {}: give a factor above 1, e.g. 3",
            args.knee_factor
        );
    }
    let prepared = prepare(&args.probe, "sweep")?;
    let spec = SweepSpec {
        loads,
        criteria: prepared.criteria.clone(),
        shape: prepared.shape.clone(),
        knee_factor: args.knee_factor,
    };
    let closed = matches!(spec.loads, Loads::Connections(_));
    let judge = live::Judge::Sweep {
        knee_factor: spec.knee_factor,
    };
    finish(
        prepared,
        &args.probe,
        closed,
        judge,
        |session, stop, events| driver::run_sweep(session, &spec, stop, events),
    )
}

struct Prepared {
    session: Session,
    criteria: Criteria,
    shape: ProbeShape,
    store: Option<Store>,
    tag: String,
    /// The fleet's paths, measured before the first probe (issue 52).
    paths: Option<loadlab_result::path::PathCheck>,
    /// What a search's loads count (a rate unless `--vary ws-held`).
    unit: Unit,
    /// `--ui`: the page, for the whole search (ended when dropped).
    page: Option<crate::live::LiveUi>,
    /// `--tui`: the terminal, for the whole search (put back before the table is printed).
    tui: Option<crate::tui::Tui>,
}

/// Checks every flag and output path, then prepares the session (the server starts here).
fn prepare(args: &ProbeArgs, kind: &str) -> anyhow::Result<Prepared> {
    let mut objectives = parse_slo(&args.slo).map_err(anyhow::Error::msg)?;
    if let Some(until) = &args.until {
        objectives.push(parse_until(until).map_err(anyhow::Error::msg)?);
    }
    let criteria = Criteria::new(objectives);
    if args.duration < Duration::from_millis(500) {
        anyhow::bail!(
            "-d/--duration {:?}: a probe must measure at least 500ms to be judged",
            args.duration
        );
    }
    for (flag, path) in [("--json", &args.json), ("--report", &args.report)] {
        if let Some(p) = path {
            output::check_writable(p, flag)?;
        }
    }
    if let Some(p) = &args.report {
        report_kind(p)?;
    }
    let store = args.store.open_if_saving(true)?;
    let server = args.server.spec()?;
    let mut run = args
        .scenario
        .spec(&args.request, args.url.as_deref(), server.is_some())?;
    // The first probe's shape, so the spec validates now; each probe sets its own.
    run.rate = Some(1.0);
    run.duration = Some(args.duration);
    run.warmup = args.warmup;
    let spec = SessionSpec {
        run,
        server,
        busy_poll: BusyPoll::Off,
    };
    let first_warmup = recommended_warmup(args);
    let tag = args.store.tag.clone().unwrap_or_else(|| kind.to_string());
    // Every probe scrapes and sends (its series under a run id of its own).
    let metrics = crate::cmd::run::metrics_plan(&args.metrics, Some(&tag), None)?;
    // Bound before the server starts: a taken --ui port fails in a second.
    let page = crate::live::start(&args.live)?;
    let tui = crate::tui::start(&args.tui);
    let mut session = Session::prepare(spec).map_err(flags_named)?;
    session.set_metrics(metrics);
    let paths = crate::cmd::generators::apply(args.generators.fleet()?, &mut session, args.quiet)?;
    if !args.quiet {
        for note in session.notes() {
            eprintln!("{note}");
        }
        if first_warmup > args.warmup {
            eprintln!(
                "the first probe warms up {} s, as {} recommends (its JIT compiles under load)",
                first_warmup.as_secs(),
                args.server.target.as_deref().unwrap_or("the target")
            );
        }
    }
    Ok(Prepared {
        session,
        criteria,
        shape: ProbeShape {
            warmup: args.warmup,
            duration: args.duration,
            cooldown: args.cooldown,
            first_warmup,
        },
        store,
        tag,
        paths,
        page,
        tui,
        unit: Unit::Rate,
    })
}

/// The warm-up a lab target's manifest recommends before measuring (30 s for the JVM
/// targets), given once, to the first probe.
fn recommended_warmup(args: &ProbeArgs) -> Duration {
    let Some(name) = &args.server.target else {
        return Duration::ZERO;
    };
    let lab = match &args.server.targets {
        Some(dir) => loadlab_lab::Lab::open(dir),
        None => match std::env::current_dir() {
            Ok(here) => loadlab_lab::Lab::discover(&here),
            Err(_) => return Duration::ZERO,
        },
    };
    lab.ok()
        .and_then(|lab| lab.target(name).ok().map(|t| t.manifest.warmup_secs))
        .map_or(Duration::ZERO, Duration::from_secs)
}

/// Runs the search or sweep with Ctrl-C handling, prints the table, writes the outputs.
fn finish(
    prepared: Prepared,
    args: &ProbeArgs,
    closed: bool,
    judge: live::Judge,
    go: impl FnOnce(
        &mut Session,
        &Stop,
        &mut dyn Events,
    ) -> Result<CapacityReport, loadlab_session::SessionError>,
) -> anyhow::Result<ExitCode> {
    let Prepared {
        mut session,
        criteria,
        store,
        tag,
        paths,
        page: _page,
        tui,
        unit,
        ..
    } = prepared;
    let stop = Arc::new(Stop::new());
    install_ctrlc(stop.clone())?;
    let live = live::Page::new(judge, &criteria, closed, stop.clone());
    if !args.quiet {
        eprintln!(
            "objectives: {}",
            criteria
                .objectives
                .iter()
                .map(|o| o.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut events = Printer {
        quiet: args.quiet,
        closed,
        unit,
        store: store.as_ref(),
        tag: &tag,
        results: Vec::new(),
        failed_to_save: None,
        streamed: None,
        live,
    };
    let mut report = go(&mut session, &stop, &mut events).map_err(flags_named)?;
    crate::cmd::generators::path::claim(&mut report, paths.as_ref());
    events.live.end(&report);
    // The terminal put back (its last frame the final answer) before the table is printed.
    drop(tui);
    drop(session);
    if let Some(e) = events.failed_to_save.take() {
        eprintln!("warning: {e}");
    }
    print!("{}", report.text());
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&report)? + "\n";
        write_atomically(path, json.as_bytes())
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.report {
        write_report(path, &report, &events.results)?;
        if !args.quiet {
            eprintln!("report written to {}", path.display());
        }
    }
    if let (Some(_), false) = (&store, args.quiet) {
        eprintln!(
            "probes kept in the store under tag {tag} (loadlab runs list; loadlab report {tag}@all)"
        );
    }
    Ok(exit_code(&report))
}

fn exit_code(report: &CapacityReport) -> ExitCode {
    use loadlab_capacity::Finding;
    match report.stopped_by.as_deref() {
        Some("interrupted") => return crate::signals::interrupted(),
        Some("server died") => return ExitCode::from(3),
        _ => {}
    }
    match &report.finding {
        Some(Finding::Capacity { .. }) | None => ExitCode::SUCCESS,
        Some(_) => ExitCode::from(4),
    }
}

struct Printer<'a> {
    quiet: bool,
    /// The loads are connection counts.
    closed: bool,
    unit: Unit,
    store: Option<&'a Store>,
    tag: &'a str,
    /// Every probe's run, for the report.
    results: Vec<(ProbeRecord, RunResult)>,
    failed_to_save: Option<String>,
    /// The probe going on, written to the store as it goes.
    streamed: Option<StreamedRun>,
    live: live::Page,
}

impl Events for Printer<'_> {
    fn stream(&mut self, _index: usize) -> Option<Box<dyn IntervalSink>> {
        let sink = self.store.map(|store| {
            let meta = crate::cmd::runs::run_meta(Some(self.tag));
            let (sink, streamed) = StoreSink::new(store.path(), meta);
            self.streamed = Some(streamed);
            Box::new(sink) as Box<dyn IntervalSink>
        });
        self.live.follow(sink)
    }

    fn read_back(&mut self, result: &mut RunResult) {
        if let (Some(store), Some(streamed)) = (self.store, &self.streamed) {
            stored::read_back(store, None, streamed, result);
        }
        self.live.read_back(result);
    }

    fn starting(&mut self, index: usize, load: f64, round: Option<usize>) {
        // With --tui the probes are its rows (a line here would be drawn over).
        if !self.quiet && !crate::tui::is_on() {
            let what = if self.closed {
                format!("{load} connections")
            } else {
                self.unit.show(load)
            };
            match round {
                Some(r) => eprint!("probe {index} (round {}): {what} ... ", r + 1),
                None => eprint!("probe {index}: {what} ... "),
            }
        }
        self.live.starting(index, load, round);
    }

    fn finished(&mut self, record: &ProbeRecord, result: &RunResult) -> Option<i64> {
        let mut result = result.clone();
        result.command = std::env::args().collect();
        crate::cmd::runs::redact(&mut result);
        if !self.quiet && !crate::tui::is_on() {
            let m = &record.measure;
            eprintln!(
                "{}/s {}, p99 {}: {}",
                rate(m.achieved_per_s),
                m.done(),
                m.p99_us.map_or("-".into(), loadlab_report::duration_us),
                record.verdict()
            );
        }
        let streamed = self.streamed.take();
        let id = match self.store {
            Some(store) => match match &streamed {
                Some(streamed) => {
                    let meta = crate::cmd::runs::run_meta(Some(self.tag));
                    stored::save(store, streamed, &result, &meta)
                }
                None => crate::cmd::runs::save(store, &result, Some(self.tag)),
            } {
                Ok(id) => Some(id.0),
                Err(e) => {
                    self.failed_to_save = Some(format!("a probe's run was not kept: {e:#}"));
                    None
                }
            },
            None => None,
        };
        let mut record = record.clone();
        record.run_id = id;
        self.live.finished(&record, &result);
        self.results.push((record, result));
        id
    }
}

/// First Ctrl-C (or SIGTERM): the probe running stops, its figures are kept, and no other
/// starts. Second: leave at once.
fn install_ctrlc(stop: Arc<Stop>) -> anyhow::Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SEEN: AtomicBool = AtomicBool::new(false);
    crate::signals::set_handler(move || {
        if SEEN.swap(true, Ordering::AcqRel) {
            loadlab_probe::cgroup::cleanup_all();
            std::process::exit(crate::signals::interrupted_code().into());
        }
        stop.stop();
    })
    .context("cannot install the Ctrl-C handler")
}
