//! The store's errors: one enum, each message naming the problem and the fix, so the CLI can
//! print it as it is. This module must not decide anything; it only says what went wrong.

use crate::{ExperimentId, RunId};
use std::path::PathBuf;

/// Everything the store can refuse or fail at.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the results store {path}: {source}; check the path and its permissions")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error(
        "the results store {path} has schema version {found}, newer than this loadlab knows \
         ({known}): upgrade loadlab, or use another file with --db"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "the results store {path} has schema version {found}, older than this loadlab's \
         ({known}), and is opened here to read only: `loadlab runs list --db {path}` migrates \
         it (as any command that writes to the store does), then try again"
    )]
    NeedsMigration {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "there is no results store at {path}: give the file with --db (or $LOADLAB_DB); \
         `loadlab run --save` makes one"
    )]
    Missing { path: PathBuf },
    #[error(
        "{path} is not a loadlab results store (an SQLite file with the tables {tables}, and \
         no `runs`); it was left untouched: give loadlab a file of its own with --db"
    )]
    Foreign { path: PathBuf, tables: String },
    #[error(
        "{path} is not a loadlab results store (not an SQLite file); it was left untouched: \
         give loadlab a file of its own with --db"
    )]
    NotSqlite { path: PathBuf },
    /// A file with nothing in it, opened to read only: a command that writes would make it
    /// a store (as it makes a missing file one), a page that reads cannot.
    #[error(
        "{path} is not a loadlab results store yet ({what}), and is opened here to read only: \
         `loadlab run --save --db {path} URL` makes it one, or give the store's file with --db"
    )]
    Empty { path: PathBuf, what: &'static str },
    #[error(
        "the results store {path} is locked by another process (a loadlab run saving to it, or \
         another program holding it open) past a {waited_s} s wait; it was left untouched: wait \
         for that process to finish (fuser {path} names it), or give another file with --db"
    )]
    Locked { path: PathBuf, waited_s: u64 },
    #[error(
        "the results store {path} could not be migrated to schema version {version} \
         ({what}): {source}; the file is unchanged, so a newer loadlab or a fresh file with \
         --db can be tried"
    )]
    Migration {
        path: PathBuf,
        version: i64,
        what: &'static str,
        source: rusqlite::Error,
    },
    #[error("no run with id {0}: see `loadlab runs list`")]
    NoRun(RunId),
    #[error("no run is tagged `{}`: see `loadlab runs list`", .0.escape_debug())]
    NoTag(String),
    #[error(
        "no completed run of a scenario named `{}` (its file's `name`): check it with \
         `loadlab runs show ID`",
        .0.escape_debug()
    )]
    NoScenario(String),
    #[error("no experiment with id {0}: see `loadlab runs list`")]
    NoExperimentId(ExperimentId),
    #[error("no experiment is named `{}`: see `loadlab runs list`", .0.escape_debug())]
    NoExperiment(String),
    #[error(
        "no completed run of variant `{variant}` in any experiment named `{experiment}`: \
         check both names with `loadlab runs list`",
        variant = variant.escape_debug(),
        experiment = experiment.escape_debug()
    )]
    EmptyVariant { experiment: String, variant: String },
    #[error(
        "experiment `{experiment}` (id {id}) has no completed run of variant `{variant}`; \
         its variants: {known}",
        experiment = experiment.escape_debug(),
        variant = variant.escape_debug(),
        known = known.escape_debug()
    )]
    NoVariant {
        experiment: String,
        id: ExperimentId,
        variant: String,
        /// The variants it has, comma-separated, or "none yet".
        known: String,
    },
    #[error(
        "`{}` names no run: give a run id (42), a tag (baseline: every run with it; \
         baseline@last: the latest alone) or EXPERIMENT:variant; see `loadlab runs list`",
        .0.escape_debug()
    )]
    Unresolvable(String),
    #[error("the tag `{}` is not allowed: {why}", tag.escape_debug())]
    InvalidTag { tag: String, why: &'static str },
    #[error(
        "experiment {experiment} already has a completed run of `{variant}` in block {block}: \
         a resumed experiment skips completed runs, so this one was not stored twice"
    )]
    DuplicateRun {
        experiment: ExperimentId,
        variant: String,
        block: u32,
    },
    #[error("no capacity search with id {0}: see `loadlab runs capacity`")]
    NoCapacity(crate::CapacityId),
    #[error(
        "capacity search {id} is damaged in the store ({why}): its probes' runs are still \
         there (`loadlab runs capacity {id}` lists them)"
    )]
    CapacityCorrupt { id: crate::CapacityId, why: String },
    #[error("a capacity search's document could not be kept: {0}")]
    Document(String),
    #[error("run {id} is damaged in the store ({why}): delete it with `loadlab runs delete {id}`")]
    Corrupt { id: RunId, why: String },
    #[error("the results store failed its integrity check: {0}; restore it from a copy")]
    Integrity(String),
    #[error("the results store: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
