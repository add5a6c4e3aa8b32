//! `loadlab recover FILE`: the spill file a killed run left (SIGKILL, the OOM killer, a
//! reboot, a lost SSH session) turned into a valid result, marked interrupted, whose totals
//! are exactly the merge of the intervals written; `--list` names the spill files killed
//! runs left in the temporary directory. Written, reported, stored and gated like a
//! merged result. It only reads the spill file; it never changes or deletes it.

use crate::cmd::merge::{present, MergedOutput};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(
    about = "Turn the spill file of a killed run into a valid, partial result",
    after_help = "The result is marked interrupted, with a warning naming the file and the \
                  time of the last interval written; its counts, latency and bytes are the \
                  exact merge of the intervals written. A last record cut short by the kill \
                  is left out and said; a whole record that fails its check (damage, not a \
                  kill) is skipped and named, and the intact records after it are \
                  recovered. Exit codes: 0 recovered; 1 a --fail-if gate failed; 2 the file \
                  is not a spill file, has no header, or holds an interval no run writes; 5 \
                  recovered, but damaged records were skipped (the result is written and \
                  says which).\n\n\
                  Examples:\n  loadlab recover run.json.spill -o run.json --report run.html\n  \
                  loadlab recover --list"
)]
pub struct RecoverArgs {
    /// The spill file the run left.
    #[arg(value_name = "FILE", required_unless_present = "list")]
    pub file: Option<PathBuf>,

    /// List the spill files killed runs left in the temporary directory (path, size in
    /// bytes, writer PID), one a line; nothing is recovered or deleted.
    #[arg(long, conflicts_with = "file")]
    pub list: bool,

    #[command(flatten)]
    pub out: MergedOutput,
}

pub fn run(args: RecoverArgs) -> anyhow::Result<ExitCode> {
    let Some(file) = args.file.as_ref().filter(|_| !args.list) else {
        crate::spill::orphans::print_list();
        return Ok(ExitCode::SUCCESS);
    };
    args.out.check()?;
    let recovered = crate::spill::recover::recover(file)?;
    // Said on stderr whatever else is printed (-q included): the figures lack intervals.
    if let Some(said) = recovered.damage.describe(&file.display().to_string()) {
        eprintln!("warning: {said}");
    }
    let mut result = recovered.result;
    crate::cmd::runs::redact(&mut result);
    // Damaged records were skipped: the result is written, and the exit says it is short.
    present(result, &args.out, recovered.damage.records > 0)
}
