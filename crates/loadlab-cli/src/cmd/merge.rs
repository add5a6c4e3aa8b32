//! `loadlab merge FILE...`: the shards of one run merged into one result (exactly: histograms
//! added, never percentiles averaged), printed, written, gated and stored like a run's. The
//! same ending serves `dist collect` and `dist ansible`, which gather the shards first.

use crate::cmd::gates::{self, GateArgs};
use crate::output::{self, Destination};
use anyhow::Context as _;
use clap::Args;
use loadlab_report::JsonExporter;
use loadlab_result::RunResult;
use std::path::PathBuf;
use std::process::ExitCode;

/// A shard missing or failed: the merge of the others is written, and the exit says so.
pub const EXIT_INCOMPLETE: u8 = 5;

#[derive(Debug, Args)]
#[command(
    about = "Merge the results of a run's shards (`run --shard I/N --json FILE`) into one",
    after_help = "Shards of different runs (another shard count, plan or start time) are \
                  refused. Exit codes: 0 merged; 1 a --fail-if gate failed on the merged \
                  result; 2 bad usage, or a file that is not a result; 5 a shard is missing or \
                  failed (the merge of the others is written, and says so).\n\n\
                  Example:\n  loadlab merge shard-*.json -o run.json --fail-if \"p99 > 50ms\""
)]
pub struct MergeArgs {
    /// The shards' result files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    #[command(flatten)]
    pub out: MergedOutput,
}

/// What becomes of a merged result: shared by `merge`, `dist collect` and `dist ansible`.
#[derive(Debug, Args, Default)]
pub struct MergedOutput {
    /// Write the merged result as JSON to this file (`-` for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,

    /// Write a report of the merged result (.html, .md or .csv).
    #[arg(long, value_name = "FILE")]
    pub report: Option<String>,

    /// --save, --no-save, --tag and --db.
    #[command(flatten)]
    pub store: crate::cmd::store_args::StoreArgs,

    /// Print no human summary.
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub gates: GateArgs,
}

impl MergedOutput {
    /// Checks paths, gates and the store before anything is gathered.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(p) = self.output.as_deref() {
            Destination::open(p, "-o/--output")?;
        }
        if let Some(p) = self.report.as_deref() {
            loadlab_report::exporter_for(p)?;
            Destination::open(p, "--report")?;
        }
        self.gates.parse()?;
        self.store.open_if_saving(false)?;
        Ok(())
    }
}

pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    args.out.check()?;
    let parts = args
        .files
        .iter()
        .map(|path| {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str::<RunResult>(&text).with_context(|| {
                format!(
                    "{} is not a loadlab result (written by `loadlab run --json`?)",
                    path.display()
                )
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    finish(&parts, Vec::new(), &args.out)
}

/// Merges `parts`, adds `notes` (sources that gave no result) to its warnings, then prints,
/// writes, stores and gates it.
pub fn finish(
    parts: &[RunResult],
    notes: Vec<String>,
    out: &MergedOutput,
) -> anyhow::Result<ExitCode> {
    let mut merged = loadlab_result::merge_shards(parts).map_err(anyhow::Error::msg)?;
    let notes_empty = notes.is_empty();
    merged.warnings.splice(0..0, notes);
    merged.command = std::env::args().collect();
    crate::cmd::runs::redact(&mut merged);
    present(merged, out, !notes_empty)
}

/// Prints, writes, stores and gates a merged result. A shard missing or failed (or, with
/// `gave_none`, a source that gave no result) makes the exit [`EXIT_INCOMPLETE`].
pub fn present(merged: RunResult, out: &MergedOutput, gave_none: bool) -> anyhow::Result<ExitCode> {
    let gates = out.gates.parse()?;
    let incomplete = gave_none
        || merged
            .shards
            .as_ref()
            .is_some_and(|s| !s.missing.is_empty() || !s.failed.is_empty());
    let output = out
        .output
        .as_deref()
        .map(|p| Destination::open(p, "-o/--output"))
        .transpose()?;
    if let Some(dest) = &output {
        output::write(dest, &JsonExporter, &merged)?;
    }
    if let Some(path) = out.report.as_deref() {
        let dest = Destination::open(path, "--report")?;
        output::write(&dest, loadlab_report::exporter_for(path)?.as_ref(), &merged)?;
    }
    if !out.quiet {
        output::print_summary(&merged, matches!(output, Some(Destination::Stdout)))?;
    }
    if let Some(store) = out.store.open_if_saving(false)? {
        let tag = out.store.tag.as_deref();
        let id = crate::cmd::runs::save(&store, &merged, tag)?;
        if !out.quiet {
            eprintln!(
                "saved as run {id}{}",
                tag.map_or(String::new(), |t| format!(" (tag {t})"))
            );
        }
    }
    let cases = gates::judge_run(&gates, "merged shards", &merged);
    let gated = if cases.is_empty() {
        ExitCode::SUCCESS
    } else {
        gates::finish(&out.gates, cases)?
    };
    Ok(if incomplete {
        ExitCode::from(EXIT_INCOMPLETE)
    } else {
        gated
    })
}
