//! `loadlab run URL`: the flags become a session spec; the session (`loadlab-session`)
//! prepares and runs; this prints its notes, shows progress, handles Ctrl-C, and prints and
//! writes the result. The JSON file is opened before the run starts so a bad path fails in
//! a second, not after a long run.
//!
//! `args.rs` declares the flags (`grpc_args.rs` the gRPC group, `ws_args.rs` the WebSocket
//! one, `scenario_args.rs` --scenario's, shared with capacity and sweep), `parse.rs` turns
//! them into a session spec, `execute.rs` runs a prepared session; `metrics_args.rs` declares the flags
//! that wire it to Prometheus and OTLP (`--server-metrics`, `--metrics-out`, `--prometheus
//! --query`), shared with experiment, capacity and sweep (the session runs them); this glues
//! them.

mod args;
mod execute;
mod grpc_args;
mod metrics_args;
mod parse;
mod scenario_args;
mod ws_args;

pub use args::{RequestArgs, RunArgs};
pub use execute::{execute, execute_saving, install_ctrlc};
pub use metrics_args::{plan as metrics_plan, MetricsArgs};
pub use parse::{count, flag_for, flags_named, parse_duration, rate, session_spec};
pub use scenario_args::ScenarioArgs;

use crate::cmd::gates;
use crate::output::{Destination, Outputs};
use loadlab_session::{MachineOptions, Session};
use std::process::ExitCode;

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // Before anything is built or started: see `install_ctrlc`.
    install_ctrlc()?;
    let spec = session_spec(&args)?;
    let metrics = metrics_plan(
        &args.metrics,
        args.store.tag.as_deref(),
        args.shard.shard.map(|s| s.to_string()),
    )?;
    // Outputs, gates and the store are checked before anything starts, so a bad path or
    // expression fails in a second.
    let outputs = Outputs {
        json: args
            .json
            .as_deref()
            .map(|p| Destination::open(p, "--json"))
            .transpose()?,
        hdr_log: args
            .hdr_log
            .as_deref()
            .map(|p| Destination::open(p, "--hdr-log"))
            .transpose()?,
        report: match args.report.as_deref() {
            Some(p) => {
                loadlab_report::exporter_for(p)?;
                Some(Destination::open(p, "--report")?)
            }
            None => None,
        },
    };
    let gates = args.gates.parse()?;
    let store = args.store.open_if_saving(false)?;
    let machine = MachineOptions {
        strict: args.strict,
        ..MachineOptions::default()
    };
    let fleet = args.generators.fleet()?;
    if fleet.is_some() && args.shard.shard.is_some() {
        anyhow::bail!(
            "--generators splits the load into shards itself: leave out --shard (or run one \
             shard per machine without --generators)"
        );
    }
    // Bound before the run is prepared: a taken --ui port fails in a second.
    let kept_in = store.is_some().then(|| args.store.db.path());
    let _live = crate::live::start(&args.live, kept_in.as_deref())?;
    let _tui = crate::tui::start(&args.tui);
    let mut session = Session::prepare_with(spec, machine).map_err(flags_named)?;
    if !args.quiet {
        for note in session.notes() {
            eprintln!("{note}");
        }
        crate::cmd::shard::announce(&args.shard);
    }
    crate::cmd::generators::apply(fleet, &mut session, args.quiet)?;
    let save = store.as_ref().map(|store| crate::spill::run::Save {
        store,
        meta: crate::cmd::runs::run_meta(args.store.tag.as_deref()),
    });
    let (result, code, saved) =
        execute_saving(&mut session, outputs, args.quiet, &metrics, save.as_ref())?;
    if args.shard.framed {
        crate::cmd::shard::print_framed(&result)?;
    }
    if let Some(id) = saved {
        if !args.quiet {
            eprintln!(
                "saved as run {id}{}",
                args.store
                    .tag
                    .as_deref()
                    .map_or(String::new(), |t| format!(" (tag {t})"))
            );
        }
    }
    let cases = gates::judge_run(&gates, "run", &result);
    if cases.is_empty() {
        return Ok(code);
    }
    let gated = gates::finish(&args.gates, cases)?;
    // An interrupted run or a dead server says so first; then the gates.
    Ok(if code == ExitCode::SUCCESS {
        gated
    } else {
        code
    })
}
