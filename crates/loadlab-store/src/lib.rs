//! loadlab's results store: runs and experiments kept in one SQLite file.
//!
//! A run is written whole, in one transaction, or not at all: a process killed mid-write
//! leaves the file valid and every run in it readable. A run written as it goes
//! ([`stream`]) commits each finished interval on its own, so a killed one keeps them. Secrets never reach the file: each
//! result, configuration and environment is redacted before it is written, by the same
//! [`redact()`] the CLI applies to `run --json`, so a stored run exports to exactly the bytes
//! `run --json` wrote.
//!
//! # Layout
//!
//! - [`schema`]: the tables, and the numbered migrations that bring any older file to them.
//! - [`redact`](mod@redact): secret header values and URL passwords out of results and JSON.
//! - [`summary`]: the figures kept as columns, so runs can be queried without their documents.
//! - [`runs`]: saving, reading, exporting, listing and deleting runs.
//! - [`document`]: a result document as kept: `run --json`'s exact bytes, compressed.
//! - [`stream`]: runs written as they go (`--save`, experiments): the row made at the start,
//!   each finished interval appended, the result laid over it at the end or after a kill.
//! - [`experiments`]: experiments, their status, their runs by variant, and resuming one.
//! - [`history`]: the runs of a series (a tag, an experiment's variant) with their revision,
//!   branch and environment, for `loadlab history`.
//! - [`resolve`](mod@resolve): what a person types (`42`, `baseline`, `EXP:variant`) as runs.
//! - [`error`]: [`StoreError`], whose messages name the problem and the fix.
//!
//! Of loadlab's crates this one depends on the result crate only: it must not run, compare
//! or print anything.

pub mod document;
pub mod error;
pub mod experiments;
pub mod history;
pub mod redact;
pub mod resolve;
pub mod runs;
pub mod schema;
pub mod stream;
pub mod summary;
mod write;

pub use document::export_text;
pub use error::{Result, StoreError};
pub use experiments::{CompletedRun, Experiment, ExperimentStatus, Resumable};
pub use history::{Series, SeriesRun};
pub use redact::{redact, redact_json, redact_text, REDACTED};
pub use runs::{ExperimentSlot, Filter, RunMeta, RunRow, StoredRun};
pub use stream::{OpenStream, Writer};
pub use summary::{RunStatus, Summary};

use rusqlite::Connection;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A run's id in the store. Ids are never reused, even after a run is deleted, so an id
/// written down somewhere never comes to mean another run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunId(pub i64);

/// An experiment's id in the store; never reused either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExperimentId(pub i64);

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How long a writer waits for another process's write to finish before giving up: an
/// experiment and a `loadlab run --save` may share one file.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// An open results store.
pub struct Store {
    conn: Connection,
    /// For messages: which file this is.
    path: PathBuf,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the store at `path`, creating the file if there is none, and brings its schema
    /// up to date. WAL mode, so readers never wait for a writer and a killed writer leaves
    /// at most an uncommitted tail that SQLite discards; foreign keys enforced.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        let open = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let conn = Connection::open(path).map_err(open)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        // journal_mode answers with the mode it set; a file that cannot do WAL (some network
        // file systems) still works, in the default rollback journal.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(open)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open)?;
        schema::migrate(&conn, path)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file this store is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's schema version.
    pub fn schema_version(&self) -> Result<i64> {
        schema::version(&self.conn)
    }

    /// SQLite's own check of the whole file (`PRAGMA integrity_check`), and of its foreign
    /// keys: `Ok` when both find nothing wrong.
    pub fn check_integrity(&self) -> Result<()> {
        let mut stmt = self.conn.prepare("PRAGMA integrity_check")?;
        let problems: Vec<String> = stmt
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if problems != ["ok"] {
            return Err(StoreError::Integrity(problems.join("; ")));
        }
        let orphans: i64 =
            self.conn
                .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |row| {
                    row.get(0)
                })?;
        if orphans > 0 {
            return Err(StoreError::Integrity(format!(
                "{orphans} rows point at missing rows"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    /// The CLI wraps errors in `anyhow`, and a store may move to the thread that saves runs.
    #[test]
    fn errors_and_stores_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        fn send<T: Send>() {}
        send_sync::<super::StoreError>();
        send::<super::Store>();
    }
}
