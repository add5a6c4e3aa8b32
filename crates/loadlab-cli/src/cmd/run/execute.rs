//! Running a prepared session: plan, progress bar, Ctrl-C handling, then the result printed
//! and written to the outputs opened beforehand. Shared by every command that drives load;
//! it must not parse flags.

use crate::output::{self, Destination, Outputs};
use crate::progress::Progress;
use crate::spill::run::{Save, Spill};
use loadlab_engine::{RunControl, RunResult};
use loadlab_report::{HdrLogExporter, JsonExporter};
use loadlab_session::metrics::MetricsPlan;
use loadlab_session::{Session, SessionOutcome};
use loadlab_store::RunId;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// Runs a prepared session with a progress bar and Ctrl-C handling, then prints and writes
/// the result. Shared by every command that drives load.
pub fn execute(
    session: &mut Session,
    outputs: Outputs,
    quiet: bool,
) -> anyhow::Result<(RunResult, ExitCode)> {
    execute_with(session, outputs, quiet, &MetricsPlan::default())
}

/// [`execute`], with the server's metrics scraped and loadlab's sent as the run goes.
pub fn execute_with(
    session: &mut Session,
    outputs: Outputs,
    quiet: bool,
    metrics: &MetricsPlan,
) -> anyhow::Result<(RunResult, ExitCode)> {
    execute_saving(session, outputs, quiet, metrics, None).map(|(r, c, _)| (r, c))
}

/// [`execute_with`], the run saved in the results store as it goes when `save` is given
/// (its id returned).
pub fn execute_saving(
    session: &mut Session,
    outputs: Outputs,
    quiet: bool,
    metrics: &MetricsPlan,
    save: Option<&Save>,
) -> anyhow::Result<(RunResult, ExitCode, Option<RunId>)> {
    if !quiet {
        eprintln!("{}", loadlab_engine::plan(session.config()));
    }
    let control = RunControl::new();
    let spill = Spill::start(&control, &outputs, quiet, save, session);
    crate::live::attach(&control, session);
    crate::tui::attach(&control, session);
    // Over a fleet, its generators' rows on the page and the terminal (once for both).
    crate::live::follow::observe_parts(&control);
    install_ctrlc()?;
    *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) = Some(control.clone());
    let progress = Progress::start(session.config(), &control);
    // The session scrapes and sends around the run (and keeps it for later runs).
    session.set_metrics(metrics.clone());
    let outcome = session.run(&control);
    progress.finish();
    let SessionOutcome {
        mut result,
        server_died,
        metrics_notes: metrics_lines,
    } = outcome?;
    result.command = std::env::args().collect();
    let spill = spill.read_back(&control, &mut result, save);

    let stdout_taken = matches!(outputs.json, Some(Destination::Stdout))
        || matches!(outputs.hdr_log, Some(Destination::Stdout));
    // Secrets given on the command line never reach a file.
    crate::cmd::runs::redact(&mut result);
    if let Some(dest) = &outputs.json {
        output::write(dest, &JsonExporter, &result)?;
    }
    if let Some(dest) = &outputs.hdr_log {
        output::write(dest, &HdrLogExporter, &result)?;
    }
    if let Some(dest) = &outputs.report {
        let path = match dest {
            Destination::File(_, p) => p.display().to_string(),
            Destination::Stdout => "html".into(),
        };
        output::write(dest, loadlab_report::exporter_for(&path)?.as_ref(), &result)?;
        if !quiet {
            eprintln!("report written to {path}");
        }
    }
    let saved = save.map(|s| spill.save(s, &result)).transpose()?;
    crate::live::result(&result);
    // The terminal put back before the summary is printed.
    crate::tui::result(&result);
    spill.done(quiet);
    if !quiet {
        output::print_summary(&result, stdout_taken)?;
        metrics_lines.iter().for_each(|l| eprintln!("{l}"));
    }
    let nothing_succeeded = result.measured.requests.nothing_succeeded();
    let code = if result.interrupted {
        crate::signals::interrupted()
    } else if server_died {
        ExitCode::from(3)
    } else if nothing_succeeded {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    };
    Ok((result, code, saved))
}

static CTRL_C: AtomicBool = AtomicBool::new(false);

/// The run being measured, once it has started: a first Ctrl-C stops it.
static RUNNING: Mutex<Option<RunControl>> = Mutex::new(None);

/// Installs the Ctrl-C (and SIGTERM, SIGHUP) handler of `loadlab run` and `loadlab demo`, once
/// per process; called before anything is built or started. Until the run starts (a target
/// being built, a server launched and waited for, up to `--startup-timeout`) a Ctrl-C leaves
/// at once, deleting any cgroup (with the server in it) and shaped link loadlab made: without
/// a handler the signal killed loadlab outright, and a launched server's children outlived it
/// in a cgroup nobody removed. During the run, the first Ctrl-C stops it and keeps what was
/// measured; the second leaves at once, the same way.
pub fn install_ctrlc() -> anyhow::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            crate::signals::set_handler(|| {
                let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).clone();
                match running {
                    Some(control) if !CTRL_C.swap(true, Ordering::AcqRel) => control.stop(),
                    _ => {
                        let _leaving = crate::signals::LEAVING.lock();
                        loadlab_probe::cgroup::cleanup_all();
                        loadlab_machine::link::cleanup_all();
                        std::process::exit(crate::signals::interrupted_code().into());
                    }
                }
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))
}
