//! Command-line grammar. Raw flags only: validation into the engine's config happens in
//! `cmd::*`, so the engine never sees a half-checked value.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "loadlab",
    version,
    about = "Measure web services under load, honestly"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Drive load against a URL and report latency, throughput and failures.
    Run(Box<crate::cmd::run::RunArgs>),
    /// Check this machine against the run these flags describe (the same checks run before
    /// every run).
    Doctor(Box<crate::cmd::doctor::DoctorArgs>),
    /// Load an embedded server for a few seconds: see what loadlab reports, no setup needed.
    Demo(crate::cmd::demo::DemoArgs),
    /// The reference lab: list, build, serve and verify the target services in targets/.
    Lab(crate::cmd::lab::LabArgs),
    /// Run the mock upstream: a server that counts requests and connections.
    Upstream(crate::cmd::upstream::UpstreamArgs),
    /// Run an experiment file: variants and axes, repeated in randomized blocks, compared.
    Experiment(Box<crate::cmd::experiment::ExperimentArgs>),
    /// Compare two arms of runs with honest statistics.
    Compare(crate::cmd::compare::CompareArgs),
    /// Runs kept in the results store: list, show, delete, export; capacity searches.
    Runs(crate::cmd::runs_command::RunsArgs),
    /// The results store in a browser, read-only: the runs, and each run's page.
    Ui(crate::live::store::UiArgs),
    /// Each metric over revisions, the change points in it, and a gate on the newest revision.
    History(Box<crate::cmd::history::HistoryArgs>),
    /// Write a report (HTML, Markdown or CSV) of runs, an experiment or a comparison.
    Report(crate::cmd::report::ReportArgs),
    /// Find the highest request rate a service sustains within its objectives.
    Capacity(Box<crate::cmd::capacity::CapacityArgs>),
    /// Measure a list of rates or connection counts: the latency-throughput curve.
    Sweep(Box<crate::cmd::capacity::SweepArgs>),
    /// Merge the results of a run's shards (`run --shard I/N`) into one, exactly.
    Merge(crate::cmd::merge::MergeArgs),
    /// Turn the spill file of a killed run into a valid, partial result.
    Recover(crate::cmd::recover::RecoverArgs),
    /// Run one load as N shards on Kubernetes or Ansible, and collect their results.
    Dist(Box<crate::cmd::dist::DistArgs>),
    /// Turn a Postman collection, a HAR recording or a curl command into a scenario file.
    Import(crate::cmd::import::ImportArgs),
    /// Run the agent on the server's host, for `--agent URL` on the generator's.
    Agent(Box<crate::cmd::agent::AgentArgs>),
    /// Print a completion script for bash, zsh, fish, elvish or PowerShell.
    Completions(crate::cmd::completions::CompletionsArgs),
    /// Write man pages (or the docs' Markdown command reference) for every subcommand.
    Man(crate::cmd::man::ManArgs),
}

pub fn parse() -> Cli {
    Cli::parse()
}
