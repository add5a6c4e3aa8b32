//! Running a prepared session: plan, progress bar, Ctrl-C handling, then the result printed
//! and written to the outputs opened beforehand. Shared by every command that drives load;
//! it must not parse flags.

use crate::output::{self, Destination, Outputs};
use crate::progress::Progress;
use crate::spill::run::{Save, Spill};
use anyhow::Context as _;
use loadlab_engine::{RunControl, RunResult};
use loadlab_report::{HdrLogExporter, JsonExporter};
use loadlab_session::metrics::MetricsPlan;
use loadlab_session::{Session, SessionOutcome};
use loadlab_store::RunId;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

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
    install_ctrlc(&control)?;
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
    spill.done(quiet);
    if !quiet {
        output::print_summary(&result, stdout_taken)?;
        metrics_lines.iter().for_each(|l| eprintln!("{l}"));
    }
    let nothing_succeeded =
        result.measured.requests.issued > 0 && result.measured.requests.completed == 0;
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

/// First Ctrl-C: stop the run and keep what was measured. Second: leave at once (deleting
/// any cgroup and shaped link loadlab made; a launched server dies with loadlab).
fn install_ctrlc(control: &RunControl) -> anyhow::Result<()> {
    let control = control.clone();
    crate::signals::set_handler(move || {
        if CTRL_C.swap(true, Ordering::AcqRel) {
            loadlab_probe::cgroup::cleanup_all();
            loadlab_machine::link::cleanup_all();
            std::process::exit(crate::signals::interrupted_code().into());
        }
        control.stop();
    })
    .context("cannot install the Ctrl-C handler")
}
