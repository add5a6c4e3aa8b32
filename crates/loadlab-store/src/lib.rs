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
//! - [`capacity`](mod@capacity): capacity searches and sweeps, their documents (what
//!   `capacity --json` writes) and their probes' runs in order.
//! - [`experiments`]: experiments, their status, their runs by variant, and resuming one.
//! - [`history`]: the runs of a series (a tag, an experiment's variant) with their revision,
//!   branch and environment, for `loadlab history`.
//! - [`resolve`](mod@resolve): what a person types (`42`, `baseline`, `EXP:variant`) as runs.
//! - [`error`]: [`StoreError`], whose messages name the problem and the fix.
//!
//! Of loadlab's crates this one depends on the result crate only: it must not run, compare
//! or print anything.

pub mod capacity;
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

pub use capacity::{CapacityId, CapacityMeta, CapacityRow};
pub use document::export_text;
pub use error::{Result, StoreError};
pub use experiments::{CompletedRun, Experiment, ExperimentStatus, Resumable};
pub use history::{Series, SeriesRun, SeriesSummary};
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
/// experiment and a `loadlab run --save` may share one file. This crate's own unit tests
/// wait 1 s: the one that waits it out (a locked file) spent 10 s of CI doing nothing.
const BUSY_TIMEOUT: Duration = if cfg!(test) {
    Duration::from_secs(1)
} else {
    Duration::from_secs(10)
};

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
        // What the file is, before anything is changed in it: another program's database or
        // one from a newer loadlab is refused as it was found (switching it to WAL first
        // would change its journal for every program that uses it).
        refuse_non_store(&conn, path, false)?;
        schema::check_before_opening(&conn, path)?;
        // journal_mode answers with the mode it set; a file that cannot do WAL (some network
        // file systems) still works, in the default rollback journal.
        let _mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "wal", |row| row.get(0))
            .map_err(|e| locked_or(path, e, open))?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open)?;
        schema::migrate(&conn, path)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens the store at `path` to read only (SQLite's read-only open): nothing in the file
    /// is changed, not its journal mode, not its schema, not a killed run's row, for pages
    /// that only show it. SQLite may make the WAL's two side files beside it, as any reader
    /// of a WAL file does. Refused: a file that is not there, another program's, a newer
    /// loadlab's, and one at an older schema (migrating writes), naming the command that
    /// migrates it.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        use rusqlite::OpenFlags;
        let path = path.as_ref();
        if !path.exists() {
            return Err(StoreError::Missing {
                path: path.to_path_buf(),
            });
        }
        let open = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(open)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open)?;
        refuse_non_store(&conn, path, true)?;
        schema::check_before_opening(&conn, path)?;
        let found = schema::version(&conn).map_err(|e| match e {
            StoreError::Sqlite(e) => locked_or(path, e, open),
            e => e,
        })?;
        if found < schema::latest_version() {
            return Err(StoreError::NeedsMigration {
                path: path.to_path_buf(),
                found,
                known: schema::latest_version(),
            });
        }
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

/// `e`, unless it says another process holds the file's lock past [`BUSY_TIMEOUT`]: then
/// [`StoreError::Locked`], which says so and what to do.
/// Refuses a file that is no results store at all, whatever opens it, before anything reads
/// its schema: a file that is not SQLite's (its own error, "file is not a database", named no
/// fix); and, opened to read only, one with nothing in it (zero bytes, or an SQLite file
/// without a table), which SQLite reads as schema version 0, "older" than this loadlab's. A
/// command that writes makes such a file a store, as it makes a missing one.
fn refuse_non_store(conn: &Connection, path: &Path, read_only: bool) -> Result<()> {
    let entries = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    });
    match entries {
        Ok(0) if read_only => Err(StoreError::Empty {
            path: path.to_path_buf(),
            what: match std::fs::metadata(path).map(|m| m.len()) {
                Ok(0) => "an empty file",
                _ => "an SQLite file without a table",
            },
        }),
        Ok(_) => Ok(()),
        Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
            Err(StoreError::NotSqlite {
                path: path.to_path_buf(),
            })
        }
        Err(e) => Err(locked_or(path, e, |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })),
    }
}

pub(crate) fn locked_or(
    path: &Path,
    e: rusqlite::Error,
    otherwise: impl FnOnce(rusqlite::Error) -> StoreError,
) -> StoreError {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            StoreError::Locked {
                path: path.to_path_buf(),
                waited_s: BUSY_TIMEOUT.as_secs(),
            }
        }
        _ => otherwise(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal_mode(path: &Path) -> String {
        let conn = Connection::open(path).unwrap();
        conn.pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap()
    }

    /// The file's bytes and modification time.
    fn as_found(path: &Path) -> (Vec<u8>, std::time::SystemTime) {
        let modified = std::fs::metadata(path).unwrap().modified().unwrap();
        (std::fs::read(path).unwrap(), modified)
    }

    /// A read-only open changes nothing: a current file is read with its bytes and mtime
    /// as they were; one at an older schema is refused, naming the command that migrates
    /// it, and left as it was; a missing one is not made.
    #[test]
    fn a_read_only_open_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path).unwrap());
        let before = as_found(&path);
        let store = Store::open_read_only(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::latest_version());
        drop(store);
        assert!(as_found(&path) == before);

        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        drop(conn);
        let before = as_found(&path);
        let err = Store::open_read_only(&path).unwrap_err();
        assert!(
            matches!(err, StoreError::NeedsMigration { found: 1, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("opened here to read only: `loadlab runs list --db "),
            "{err}"
        );
        assert!(as_found(&path) == before);

        let missing = dir.path().join("none.db");
        let err = Store::open_read_only(&missing).unwrap_err();
        assert!(matches!(err, StoreError::Missing { .. }), "{err}");
        assert!(!missing.exists());
    }

    /// Issue 46 item 10: another program's database, or one from a newer loadlab, was
    /// switched to WAL before it was refused. It is refused as it was found.
    #[test]
    fn a_foreign_or_newer_file_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("notes.db");
        let conn = Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); CREATE TABLE tags (name TEXT);")
            .unwrap();
        drop(conn);
        let err = Store::open(&foreign).unwrap_err();
        assert!(matches!(err, StoreError::Foreign { .. }), "{err}");
        assert!(
            err.to_string().ends_with(
                "notes.db is not a loadlab results store (an SQLite file with the tables \
                 notes, tags, and no `runs`); it was left untouched: give loadlab a file of its \
                 own with --db"
            ),
            "{err}"
        );
        let newer = dir.path().join("newer.db");
        let conn = Connection::open(&newer).unwrap();
        conn.pragma_update(None, "user_version", schema::latest_version() + 1)
            .unwrap();
        conn.execute_batch("CREATE TABLE runs (id INTEGER PRIMARY KEY);")
            .unwrap();
        drop(conn);
        let err = Store::open(&newer).unwrap_err();
        assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
        for path in [&foreign, &newer] {
            assert_eq!(journal_mode(path), "delete", "{}", path.display());
            assert!(!path.with_extension("db-wal").exists());
        }
        let conn = Connection::open(&foreign).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, 0, "not migrated");
    }

    /// A file that is no store at all is named as such with the fix, not as "schema version
    /// 0" (an empty file opened to read only) or SQLite's bare "file is not a database";
    /// to write, an empty file becomes a store, as a missing one does.
    #[test]
    fn an_empty_or_non_sqlite_file_is_said_to_be_no_store() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        let bare = dir.path().join("bare.db");
        Connection::open(&bare)
            .unwrap()
            .execute_batch("CREATE TABLE t (x); DROP TABLE t;")
            .unwrap();
        for (path, what) in [
            (&empty, "an empty file"),
            (&bare, "an SQLite file without a table"),
        ] {
            let before = as_found(path);
            let err = Store::open_read_only(path).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "{p} is not a loadlab results store yet ({what}), and is opened here to \
                     read only: `loadlab run --save --db {p} URL` makes it one, or give the \
                     store's file with --db",
                    p = path.display()
                )
            );
            assert!(as_found(path) == before, "left as it was");
        }
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a database, some notes\n".repeat(200)).unwrap();
        for read_only in [true, false] {
            let err = match read_only {
                true => Store::open_read_only(&text).unwrap_err(),
                false => Store::open(&text).unwrap_err(),
            };
            assert!(matches!(err, StoreError::NotSqlite { .. }), "{err}");
            assert!(
                err.to_string().ends_with(
                    "notes.txt is not a loadlab results store (not an SQLite file); it was \
                     left untouched: give loadlab a file of its own with --db"
                ),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(&text).unwrap().len(), 5400, "untouched");
        let store = Store::open(&empty).unwrap();
        assert_eq!(store.schema_version().unwrap(), schema::latest_version());
    }

    /// Issue 46 item 10: a file another process holds locked was reported as "could not be
    /// migrated". (Waits out the store's busy timeout once: 1 s in these tests.)
    #[test]
    fn a_locked_file_is_said_to_be_locked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("busy.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch("CREATE TABLE other (x); BEGIN EXCLUSIVE; INSERT INTO other VALUES (1);")
            .unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::Locked { .. }), "{err}");
        assert!(
            err.to_string().contains("is locked by another process")
                && err.to_string().contains("wait for that process to finish"),
            "{err}"
        );
        holder.execute_batch("ROLLBACK;").unwrap();
    }

    /// The CLI wraps errors in `anyhow`, and a store may move to the thread that saves runs.
    #[test]
    fn errors_and_stores_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        fn send<T: Send>() {}
        send_sync::<super::StoreError>();
        send::<super::Store>();
    }
}
