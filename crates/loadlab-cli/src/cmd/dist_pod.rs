//! `loadlab dist pod`: what each pod of a `dist k8s` Job runs. It reads the plan's flags (one
//! per line, from the Job's ConfigMap) and the pod's completion index (`JOB_COMPLETION_INDEX`,
//! set by Kubernetes in every pod of an Indexed Job), and runs `loadlab run --shard I/N
//! --framed` with them: no shell in the image is needed (the FROM scratch one has none), and
//! no value is ever re-split or re-quoted on the way.

use clap::{Args, Parser as _};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    after_help = "Run by the Job's pods, not by hand; to try one pod's share locally:\n  \
    JOB_COMPLETION_INDEX=0 loadlab dist pod --shards 4 --plan args.txt"
)]
pub struct PodArgs {
    /// How many shards the Job has (its completions).
    #[arg(long)]
    pub shards: u32,
    /// The plan's flags, one per line (the ConfigMap's `args`).
    #[arg(long, value_name = "FILE")]
    pub plan: PathBuf,
}

pub fn pod(a: PodArgs) -> anyhow::Result<ExitCode> {
    let index = std::env::var("JOB_COMPLETION_INDEX").map_err(|_| {
        anyhow::anyhow!(
            "JOB_COMPLETION_INDEX is not set: `loadlab dist pod` runs in a pod of an Indexed \
             Job, which sets it (0 to shards-1); to try it by hand, set it yourself"
        )
    })?;
    let index: u32 = index.trim().parse().map_err(|_| {
        anyhow::anyhow!("JOB_COMPLETION_INDEX is {index:?}, not a number from 0 to shards-1")
    })?;
    if a.shards == 0 || index >= a.shards {
        anyhow::bail!(
            "JOB_COMPLETION_INDEX {index} is not a shard of --shards {}: give the Job's \
             completions as --shards",
            a.shards
        );
    }
    let text = std::fs::read_to_string(&a.plan).map_err(|e| {
        anyhow::anyhow!(
            "--plan: cannot read {}: {e} (the Job mounts its ConfigMap there)",
            a.plan.display()
        )
    })?;
    let shard = format!("{}/{}", index + 1, a.shards);
    let argv = ["loadlab", "run", "--shard", &shard, "--framed"]
        .into_iter()
        .map(String::from)
        .chain(loadlab_dist::k8s::plan_args(&text));
    let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| {
        anyhow::anyhow!("the plan in {}: {}", a.plan.display(), e.to_string().trim())
    })?;
    match cli.command {
        crate::cli::Command::Run(args) => crate::cmd::run::run(*args),
        _ => unreachable!("parsed as run"),
    }
}
