//! One module per subcommand; each exposes `Args` (clap) and `run(args) -> Result<ExitCode>`.

pub mod agent;
pub mod capacity;
pub mod compare;
pub mod completions;
pub mod demo;
pub mod dist;
pub mod dist_agents;
pub mod dist_pod;
pub mod doctor;
pub mod experiment;
pub mod gates;
pub mod generators;
pub mod history;
pub mod import;
pub mod lab;
pub mod man;
pub mod merge;
pub mod recover;
pub mod report;
pub mod run;
pub mod runs;
pub mod runs_command;
pub mod server;
pub mod shard;
pub mod store_args;
pub mod upstream;

use crate::cli::{Cli, Command};
use std::process::ExitCode;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => {
            runs::set_provenance(&args.provenance)?;
            run::run(*args)
        }
        Command::Demo(args) => demo::run(args),
        Command::Doctor(args) => doctor::run(*args),
        Command::Lab(args) => lab::run(args),
        Command::Upstream(args) => upstream::run(args),
        Command::Experiment(args) => {
            runs::set_provenance(&args.provenance)?;
            experiment::run(*args)
        }
        Command::Compare(args) => compare::run(args),
        Command::Runs(args) => runs_command::run(args),
        Command::Ui(args) => crate::live::store::run(args),
        Command::History(args) => history::run(*args),
        Command::Report(args) => report::run(args),
        Command::Capacity(args) => {
            runs::set_provenance(&args.probe.provenance)?;
            capacity::capacity(*args)
        }
        Command::Sweep(args) => {
            runs::set_provenance(&args.probe.provenance)?;
            capacity::sweep(*args)
        }
        Command::Merge(args) => merge::run(args),
        Command::Recover(args) => recover::run(args),
        Command::Dist(args) => dist::run(*args),
        Command::Import(args) => import::run(args),
        Command::Agent(args) => agent::run(*args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
