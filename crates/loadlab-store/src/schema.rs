//! The store's schema and how a file gets to it: numbered migrations, applied in order, each
//! in one transaction that also sets `PRAGMA user_version`, so a file is always at exactly
//! one version and a failed migration leaves it at the version before.
//!
//! A migration, once released, is never edited: files in the wild were made by it. Change the
//! schema by appending one. This module must not read or write runs itself; migrations may
//! only reshape what is there (a data migration in SQL, as migration 2's back-fill).
//!
//! # Layout (after migration 6)
//!
//! `experiments`: one row per `loadlab experiment` invocation (a resumed one continues its
//! row). `runs`: one row per run; the measured phase's figures as columns SQL can query, the
//! whole result document (`result`, its `result_encoding` saying how it is kept), and the
//! caller's configuration and environment as JSON text. Runs of an experiment carry its id,
//! their variant (the arm's label), block and repetition; a completed run of one (variant,
//! block) is unique per experiment, while interrupted attempts may sit beside it.
//! `run_streams` and `run_intervals` (migration 3): a run written as it goes (`--save`, an
//! experiment), its writer and its finished intervals; see [`crate::stream`].
//! `revision` and `branch` (migration 4): the code a run measured, so runs can be read as a
//! history over revisions (`loadlab history`); absent for runs saved before. `scenario`
//! (migration 5): the name of the scenario a run ran, a history's third kind of series.
//! `capacity_searches` and `capacity_probes` (migration 6): a capacity search or sweep, its
//! document (what `--json` writes) and its probes' runs in order; see [`crate::capacity`].

use crate::error::{Result, StoreError};
use rusqlite::{Connection, Transaction, TransactionBehavior};
use std::path::Path;

/// One step of the schema.
pub struct Migration {
    /// The `user_version` a file has after this step.
    pub version: i64,
    /// What it does, for error messages.
    pub what: &'static str,
    pub sql: &'static str,
}

/// Every migration, in order; the last one's version is the current schema.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        what: "the first schema: runs with their summary and result",
        sql: r#"
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    started_at         TEXT NOT NULL,
    tag                TEXT,
    interrupted        INTEGER NOT NULL CHECK (interrupted IN (0, 1)),
    command            TEXT NOT NULL,
    target_url         TEXT NOT NULL,
    load_model         TEXT NOT NULL,
    requests_issued    INTEGER NOT NULL,
    requests_completed INTEGER NOT NULL,
    requests_failed    INTEGER NOT NULL,
    rps                REAL NOT NULL,
    latency_p50_us     REAL,
    latency_p99_us     REAL,
    latency_max_us     REAL,
    result_json        TEXT NOT NULL,
    config_json        TEXT,
    environment_json   TEXT
);
CREATE INDEX runs_by_tag ON runs (tag, id) WHERE tag IS NOT NULL;
"#,
    },
    Migration {
        version: 2,
        what: "experiments, run status, more summary columns, compressed results",
        sql: r#"
CREATE TABLE experiments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    file        TEXT NOT NULL,
    plan_hash   TEXT NOT NULL,
    plan_json   TEXT NOT NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    status      TEXT NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'interrupted', 'complete'))
);
CREATE INDEX experiments_by_name ON experiments (name, id);

ALTER TABLE runs ADD COLUMN experiment_id INTEGER REFERENCES experiments (id);
ALTER TABLE runs ADD COLUMN variant TEXT;
ALTER TABLE runs ADD COLUMN block INTEGER;
ALTER TABLE runs ADD COLUMN repetition INTEGER;
ALTER TABLE runs ADD COLUMN status TEXT NOT NULL DEFAULT 'complete'
    CHECK (status IN ('complete', 'interrupted', 'server_exited'));
ALTER TABLE runs ADD COLUMN duration_s REAL;
ALTER TABLE runs ADD COLUMN latency_p90_us REAL;
ALTER TABLE runs ADD COLUMN latency_p99_9_us REAL;
ALTER TABLE runs ADD COLUMN error_rate REAL;
ALTER TABLE runs ADD COLUMN bytes_sent INTEGER;
ALTER TABLE runs ADD COLUMN bytes_received INTEGER;
ALTER TABLE runs ADD COLUMN busiest_second_sent_bytes INTEGER;
ALTER TABLE runs ADD COLUMN server_cpu_p50_cores REAL;
ALTER TABLE runs ADD COLUMN server_cpu_p99_cores REAL;
ALTER TABLE runs ADD COLUMN server_rss_p99_bytes INTEGER;
ALTER TABLE runs ADD COLUMN server_memory_p99_bytes INTEGER;
ALTER TABLE runs ADD COLUMN generator_cpu_s_per_100k REAL;
ALTER TABLE runs ADD COLUMN cold_start INTEGER CHECK (cold_start IN (0, 1));
ALTER TABLE runs ADD COLUMN ready_s REAL;
ALTER TABLE runs RENAME COLUMN result_json TO result;
ALTER TABLE runs ADD COLUMN result_encoding TEXT NOT NULL DEFAULT 'json'
    CHECK (result_encoding IN ('json', 'zlib'));

-- Version 1 kept the result as JSON text: fill the new columns from it, so old runs answer
-- the same queries as new ones.
UPDATE runs SET
    status = CASE
        WHEN interrupted = 1 THEN 'interrupted'
        WHEN json_extract(result, '$.server.exit') IS NOT NULL THEN 'server_exited'
        ELSE 'complete' END,
    duration_s = json_extract(result, '$.measured.duration_s'),
    latency_p90_us = json_extract(result, '$.measured.latency_us.p90'),
    latency_p99_9_us = json_extract(result, '$.measured.latency_us.p99_9'),
    error_rate = CASE WHEN requests_issued > 0
        THEN CAST(requests_failed AS REAL) / requests_issued END,
    bytes_sent = json_extract(result, '$.measured.bytes.sent'),
    bytes_received = json_extract(result, '$.measured.bytes.received'),
    busiest_second_sent_bytes = json_extract(result, '$.measured.bytes.max_sent_per_s'),
    server_cpu_p50_cores = json_extract(result, '$.server.summary.cpu_cores.p50'),
    server_cpu_p99_cores = json_extract(result, '$.server.summary.cpu_cores.p99'),
    server_rss_p99_bytes = CAST(round(json_extract(result, '$.server.summary.rss_bytes.p99'))
        AS INTEGER),
    server_memory_p99_bytes =
        CAST(round(json_extract(result, '$.server.summary.memory_bytes.p99')) AS INTEGER),
    generator_cpu_s_per_100k = json_extract(result, '$.generator.cpu_s_per_100k_requests'),
    cold_start = json_extract(result, '$.first_requests.cold_start'),
    ready_s = json_extract(result, '$.server.startup.ready_s');

CREATE INDEX runs_by_experiment ON runs (experiment_id, variant, block)
    WHERE experiment_id IS NOT NULL;
-- A resumed experiment must never hold two completed runs of one (variant, block).
CREATE UNIQUE INDEX runs_completed_once ON runs (experiment_id, variant, block)
    WHERE experiment_id IS NOT NULL AND interrupted = 0;
"#,
    },
    Migration {
        version: 3,
        what: "runs streamed as they go: their finished intervals and their writer",
        sql: r#"
-- A run being written: its row in `runs` holds the header (marked interrupted) until the
-- result replaces it; this row says which process writes it. A row left here by a writer
-- that is gone is a killed run, to be rebuilt from its intervals.
CREATE TABLE run_streams (
    run_id      INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    pid         INTEGER NOT NULL,
    boot_id     TEXT,
    started_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    intervals   INTEGER NOT NULL DEFAULT 0,
    last_end_s  REAL
);
-- Each finished interval of a streamed run (an IntervalSummary as JSON), in order.
CREATE TABLE run_intervals (
    run_id    INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    interval  TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"#,
    },
    Migration {
        version: 4,
        what: "runs' revision and branch: which code each run measured",
        sql: r#"
-- Runs saved before this version measured code nobody recorded: both stay NULL, and
-- `loadlab history` leaves such runs out (it says how many).
ALTER TABLE runs ADD COLUMN revision TEXT;
ALTER TABLE runs ADD COLUMN branch TEXT;
CREATE INDEX runs_by_revision ON runs (revision, id) WHERE revision IS NOT NULL;
"#,
    },
    Migration {
        version: 5,
        what: "runs' scenario: a scenario's runs read as a history",
        sql: r#"
-- The scenario a run ran (its file's `name`), so that `loadlab history scenario=NAME` finds
-- its runs; filled for the runs already here from their results, kept as JSON text or
-- compressed (`loadlab_result_json`, which `migrate` defines on the connection).
ALTER TABLE runs ADD COLUMN scenario TEXT;
UPDATE runs SET scenario =
    json_extract(loadlab_result_json(result_encoding, result), '$.scenario.name');
CREATE INDEX runs_by_scenario ON runs (scenario, id) WHERE scenario IS NOT NULL;
"#,
    },
    Migration {
        version: 6,
        what: "capacity searches and sweeps: their documents and their probes' runs",
        sql: r#"
-- A `loadlab capacity` search or `loadlab sweep`: its document (the bytes `--json` writes,
-- redacted; `document_encoding` says how it is kept), and as columns what the lists show.
-- Stores made before this version kept the probes' runs alone; they have no rows here.
CREATE TABLE capacity_searches (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    started_at        TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('capacity', 'sweep')),
    target_url        TEXT NOT NULL,
    tag               TEXT,
    revision          TEXT,
    branch            TEXT,
    capacity          REAL,
    verdict           TEXT NOT NULL,
    stopped_by        TEXT,
    document          BLOB NOT NULL,
    document_encoding TEXT NOT NULL DEFAULT 'zlib'
                      CHECK (document_encoding IN ('json', 'zlib'))
);
-- Its probes in the order run, each with its run (NULL when the run was not kept, or was
-- deleted since: the document still holds the probe's figures).
CREATE TABLE capacity_probes (
    search_id  INTEGER NOT NULL REFERENCES capacity_searches (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    run_id     INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    PRIMARY KEY (search_id, seq)
) WITHOUT ROWID;
CREATE INDEX capacity_probes_by_run ON capacity_probes (run_id) WHERE run_id IS NOT NULL;
"#,
    },
];

/// The schema version this build writes.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The file's schema version (0 for a new, empty file).
pub(crate) fn version(conn: &Connection) -> Result<i64> {
    Ok(conn.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Refuses, before anything is written to it, a file another program made (tables, none of
/// them `runs`) and one a newer loadlab made (a schema version past [`latest_version`]).
pub(crate) fn check_before_opening(conn: &Connection, path: &Path) -> Result<()> {
    let open = |source| StoreError::Open {
        path: path.to_path_buf(),
        source,
    };
    let read = || -> rusqlite::Result<(i64, Vec<String>)> {
        let found = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
        let mut stmt = conn.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name",
        )?;
        let tables = stmt
            .query_map([], |row| row.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok((found, tables))
    };
    let (found, tables) = read().map_err(|e| crate::locked_or(path, e, open))?;
    if !tables.is_empty() && !tables.iter().any(|t| t == "runs") {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            tables: tables.join(", "),
        });
    }
    if found > latest_version() {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: latest_version(),
        });
    }
    Ok(())
}

/// Brings the file up to [`latest_version`], one transaction per migration. Safe against
/// another process migrating the same file at the same moment: each step takes the write
/// lock first and re-reads the version under it.
pub(crate) fn migrate(conn: &Connection, path: &Path) -> Result<()> {
    let found = version(conn)?;
    if found > latest_version() {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            known: latest_version(),
        });
    }
    define_result_json(conn).map_err(|source| StoreError::Migration {
        path: path.to_path_buf(),
        version: found + 1,
        what: "the SQL function loadlab_result_json",
        source,
    })?;
    for m in MIGRATIONS {
        let failed = |source| {
            crate::locked_or(path, source, |source| StoreError::Migration {
                path: path.to_path_buf(),
                version: m.version,
                what: m.what,
                source,
            })
        };
        let tx =
            Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(failed)?;
        if version(&tx)? >= m.version {
            continue;
        }
        tx.execute_batch(m.sql).map_err(failed)?;
        tx.pragma_update(None, "user_version", m.version)
            .map_err(failed)?;
        tx.commit().map_err(failed)?;
    }
    Ok(())
}

/// `loadlab_result_json(result_encoding, result)`: a run's result document as JSON text,
/// whichever way it is kept, for migrations that read it (SQL alone cannot inflate zlib).
/// A document that does not inflate gives NULL: the migration leaves that run's column empty
/// rather than failing on one damaged row.
fn define_result_json(conn: &Connection) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    use rusqlite::types::ValueRef;
    conn.create_scalar_function(
        "loadlab_result_json",
        2,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            let encoding: String = ctx.get(0)?;
            let bytes = match ctx.get_raw(1) {
                ValueRef::Text(b) | ValueRef::Blob(b) => b,
                _ => return Ok(None),
            };
            let text = match encoding.as_str() {
                "zlib" => crate::document::decompress(bytes).ok(),
                _ => Some(bytes.to_vec()),
            };
            Ok(text.and_then(|t| String::from_utf8(t).ok()))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_consecutive_from_one() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.what);
        }
    }

    #[test]
    fn migrating_twice_changes_nothing() {
        let conn = Connection::open_in_memory().unwrap();
        let path = Path::new(":memory:");
        migrate(&conn, path).unwrap();
        migrate(&conn, path).unwrap();
        assert_eq!(version(&conn).unwrap(), latest_version());
    }

    #[test]
    fn a_newer_file_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", latest_version() + 1)
            .unwrap();
        let err = migrate(&conn, Path::new("x.db")).unwrap_err();
        assert!(err.to_string().contains("upgrade loadlab"), "{err}");
    }
}
