//! Before the first probe: every flag and output path checked, the store opened, the
//! session prepared (the server starts here), the live page and terminal started. Nothing is
//! measured here.

use super::report::report_kind;
use super::ProbeArgs;
use crate::cmd::run::flags_named;
use crate::output;
use loadlab_capacity::driver::ProbeShape;
use loadlab_capacity::search::Unit;
use loadlab_capacity::{parse_slo, parse_until, Criteria};
use loadlab_session::{BusyPoll, Session, SessionSpec};
use loadlab_store::Store;
use std::time::Duration;

pub(super) struct Prepared {
    pub(super) session: Session,
    pub(super) criteria: Criteria,
    pub(super) shape: ProbeShape,
    pub(super) store: Option<Store>,
    pub(super) tag: String,
    /// The fleet's paths, measured before the first probe (issue 52).
    pub(super) paths: Option<loadlab_result::path::PathCheck>,
    /// What a search's loads count (a rate unless `--vary ws-held`).
    pub(super) unit: Unit,
    /// `--ui`: the page, for the whole search (ended when dropped).
    pub(super) page: Option<crate::live::LiveUi>,
    /// `--tui`: the terminal, for the whole search (put back before the table is printed).
    pub(super) tui: Option<crate::tui::Tui>,
}

/// Checks every flag and output path, then prepares the session (the server starts here).
pub(super) fn prepare(args: &ProbeArgs, kind: &str) -> anyhow::Result<Prepared> {
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
    // A search kept in a store is listed by `loadlab ui` of that store as its own live run.
    let kept_in = store.is_some().then(|| args.store.db.path());
    let page = crate::live::start(&args.live, kept_in.as_deref())?;
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
