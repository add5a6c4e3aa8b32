//! `loadlab runs list|show|delete|export|capacity`: the runs (and capacity searches) kept in
//! the results store, read back. The glue the commands share to keep them is `cmd::runs`.

use crate::cmd::runs::short_revision;
use anyhow::{bail, Context as _};
use clap::{Args, Subcommand};
use loadlab_store::{Filter, RunId};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
#[command(about = "Runs kept in the results store: list, show, delete, export; capacity searches")]
pub struct RunsArgs {
    #[command(flatten)]
    pub store: crate::cmd::store_args::DbArgs,

    #[command(subcommand)]
    pub command: RunsCommand,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// The newest runs, one line each.
    List {
        /// Only runs with this tag.
        #[arg(long)]
        tag: Option<String>,
        /// At most this many.
        #[arg(short = 'n', long, default_value_t = 30)]
        limit: usize,
    },
    /// One run's summary (the same text `loadlab run` prints).
    Show { run: String },
    /// Delete runs (ids, tags, EXPERIMENT:variant).
    Delete { run: String },
    /// One run's result as JSON, byte for byte what `run --json` wrote.
    Export {
        run: String,
        /// Write to this file instead of standard output.
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
        /// The timeline with every interval the store kept: a run past 3,600 intervals has
        /// them merged in its result (its warning says so), and the store keeps each one
        /// (without steal or server samples, which only the merged timeline has). The same
        /// as without it when nothing was merged.
        #[arg(long)]
        intervals: bool,
    },
    /// Capacity searches and sweeps: the newest, or one (ID) as `loadlab capacity` printed
    /// it, or its document (ID --json).
    Capacity(crate::cmd::capacity::StoredArgs),
}

/// "revision 1a2b3c4d5e6f on main": what a run measured, shortened as git shortens a commit
/// (a revision that is not a commit hash is shown whole).
fn revision_of(r: &loadlab_store::RunRow) -> Option<String> {
    let short = short_revision(r.revision.as_deref()?);
    // Escaped: a store may hold runs saved before control characters were refused.
    let short = short.escape_debug();
    Some(match &r.branch {
        Some(b) => format!("revision {short} on {}", b.escape_debug()),
        None => format!("revision {short}"),
    })
}

pub fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = args.store.open()?;
    match args.command {
        RunsCommand::List { tag, limit } => {
            let rows = store.list_runs(&Filter {
                tag,
                limit: Some(limit),
                ..Filter::default()
            })?;
            if rows.is_empty() {
                println!(
                    "no runs in {} yet: `loadlab run --save URL` keeps one",
                    store.path().display()
                );
            }
            let running: Vec<RunId> = store.open_streams()?.iter().map(|o| o.run).collect();
            for r in rows {
                let s = &r.summary;
                let mut what = match (&r.tag, &r.experiment) {
                    (Some(t), _) => format!("tag {t}"),
                    (None, Some(e)) => {
                        format!("experiment {} {} #{}", e.experiment, e.variant, e.block + 1)
                    }
                    _ => String::new(),
                };
                if let Some(rev) = revision_of(&r) {
                    what = if what.is_empty() {
                        rev
                    } else {
                        format!("{what}, {rev}")
                    };
                }
                println!(
                    "{:>5}  {}  {:>10.0} req/s  p99 {:>10}  {}{}  {}",
                    r.id,
                    r.started_at
                        .get(..19)
                        .unwrap_or(&r.started_at)
                        .replace('T', " "),
                    s.rps,
                    s.latency_p99_us
                        .map_or("-".into(), loadlab_experiment::metrics::duration_us),
                    s.target_url,
                    if running.contains(&r.id) {
                        " (running)"
                    } else if r.interrupted {
                        " (interrupted)"
                    } else {
                        ""
                    },
                    what
                );
            }
        }
        RunsCommand::Show { run } => {
            for id in store.resolve(&run)? {
                let r = store.run(id)?;
                match store.open_stream(id)? {
                    Some(open) => println!(
                        "run {id} (running: {} intervals written so far by process {}; its \
                         figures come when it ends)",
                        open.intervals, open.writer.pid
                    ),
                    None => println!("run {id}"),
                }
                if let Some(rev) = revision_of(&r.row) {
                    println!("measured {rev}");
                }
                crate::output::print_summary(&r.result, false)?;
            }
        }
        RunsCommand::Delete { run } => {
            let ids = store.resolve(&run)?;
            for id in &ids {
                store.delete_run(*id)?;
            }
            println!(
                "deleted {} run{}",
                ids.len(),
                if ids.len() == 1 { "" } else { "s" }
            );
        }
        RunsCommand::Export {
            run,
            output,
            intervals,
        } => {
            let ids = store.resolve(&run)?;
            let [id] = ids.as_slice() else {
                bail!(
                    "{run} names {} runs; export one at a time (an id)",
                    ids.len()
                );
            };
            let text = if intervals {
                store.export_json_with_intervals(*id)?
            } else {
                store.export_json(*id)?
            };
            match output {
                Some(path) => crate::output::write_atomically(&path, text.as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => print!("{text}"),
            }
        }
        RunsCommand::Capacity(args) => crate::cmd::capacity::stored::run(&store, args)?,
    }
    Ok(ExitCode::SUCCESS)
}
