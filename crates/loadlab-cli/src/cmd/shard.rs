//! `run`'s shard flags: `--shard I/N`, `--start-at TIME`, `--framed`. The arithmetic and the
//! wait are the engine's (`loadlab_engine::shard`); the frame is `loadlab-dist`'s.

use clap::Args;
use loadlab_engine::shard::{check_start_at, parse_start_at, Shard};
use loadlab_result::RunResult;
use std::io::Write as _;
use std::time::SystemTime;

#[derive(Debug, Args, Default)]
pub struct ShardArgs {
    /// Run shard I of N of this load: a closed loop's share of the connections (and of -n),
    /// or every N-th arrival of an open loop's schedule, so that N shards together send the
    /// whole plan exactly. Merge their results with `loadlab merge`.
    #[arg(long, value_name = "I/N", value_parser = Shard::parse, help_heading = "Shards")]
    pub shard: Option<Shard>,

    /// With --shard: start at this wall-clock instant (RFC 3339, e.g. 2026-05-01T12:00:00Z,
    /// or @UNIX_SECONDS), the same for every shard; at most 24h ahead, at most 1s past.
    #[arg(long, value_name = "TIME", requires = "shard", value_parser = start_at, help_heading = "Shards")]
    pub start_at: Option<SystemTime>,

    /// Also print the result on standard output as a framed base64 block, for
    /// `loadlab dist collect` to read back from logs (what each Kubernetes shard does).
    #[arg(long, help_heading = "Shards")]
    pub framed: bool,
}

fn start_at(raw: &str) -> Result<SystemTime, String> {
    let at = parse_start_at(raw)?;
    check_start_at(at, SystemTime::now())?;
    Ok(at)
}

/// Says, before the run, how long this shard will wait for the common start.
pub fn announce(args: &ShardArgs) {
    if let (Some(shard), Some(at)) = (args.shard, args.start_at) {
        let wait = at
            .duration_since(SystemTime::now())
            .map_or(0.0, |d| d.as_secs_f64());
        eprintln!(
            "shard {shard}: starting at {} ({wait:.1} s from now), with the other shards",
            humantime::format_rfc3339_millis(at)
        );
    }
}

pub fn print_framed(result: &RunResult) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(loadlab_dist::frame::frame(result).as_bytes())?;
    out.flush()?;
    Ok(())
}
