//! `loadlab capacity` and `loadlab sweep`: the flags become a session (the server launched
//! once) and a search or sweep (`loadlab-capacity`); this prints each probe as it ends,
//! keeps each probe's run in the store, handles Ctrl-C (the probes so far are kept and
//! judged), and writes the document and the report.
//!
//! Layout: `args` the flags; `prepare` everything checked and started before the first
//! probe; `printer` each probe printed and kept as it ends; `live` the live page's view of
//! the search; `report` the HTML or Markdown report (and `loadlab ui`'s page of a kept one);
//! `stored` the search kept in the store, and `loadlab runs capacity`; `vary` what a search
//! varies.

use crate::cmd::run::flags_named;
use crate::output::write_atomically;
use anyhow::Context as _;
use loadlab_capacity::driver::{self, Loads, SearchSpec, Stop, SweepSpec};
use loadlab_capacity::search::Policy;
use loadlab_capacity::{CapacityReport, Events};
use loadlab_session::Session;
use std::process::ExitCode;
use std::sync::Arc;

mod args;
mod live;
mod prepare;
mod printer;
pub(crate) mod report;
pub(crate) mod stored;
mod vary;
pub use args::{CapacityArgs, ProbeArgs, SweepArgs};
use prepare::{prepare, Prepared};
use printer::Printer;
use report::write_report;
pub use stored::StoredArgs;

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
    // The document as the store keeps it (redacted as a run's result is): --json writes the
    // same bytes, so the kept search exports to exactly them.
    let document = loadlab_store::capacity::document_text(&report)?;
    if let Some(path) = &args.json {
        write_atomically(path, document.as_bytes())
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.report {
        write_report(path, &report, &events.results)?;
        if !args.quiet {
            eprintln!("report written to {}", path.display());
        }
    }
    if let Some(store) = &store {
        match store.save_capacity(&report, &stored::meta(&report, &tag)) {
            Ok(id) if !args.quiet => eprintln!(
                "kept in the store as {} {id} (loadlab runs capacity {id}; loadlab ui), its \
                 probes under tag {tag} (loadlab report {tag}@all)",
                report.kind
            ),
            Ok(_) => {}
            Err(e) => eprintln!(
                "warning: the {} was not kept in the store: {e}",
                report.kind
            ),
        }
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
