//! Capacity searches and sweeps in the store: each one's document (every probe in order, its
//! judgment, the finding, the verdict, the options) kept as the exact bytes `loadlab capacity
//! --json` writes, redacted and compressed as a run's result is, with the figures the lists
//! show as columns and its probes' runs linked in order.
//!
//! The document's type is the capacity crate's, which this crate must not depend on: the
//! caller hands it over as anything serde reads and writes, and [`document_text`] makes its
//! bytes here (redacted by [`redact_json`], read back into the type, pretty-printed), so the
//! CLI's `--json` and the store hold the same text by construction. This module must not
//! judge probes or render anything.

use crate::document::{compress, decompress};
use crate::error::{Result, StoreError};
use crate::redact::{redact_json, redact_text};
use crate::runs::check_tag;
use crate::{RunId, Store};
use rusqlite::types::ValueRef;
use rusqlite::{params, OptionalExtension, Row, Transaction, TransactionBehavior};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;

/// A capacity search's (or sweep's) id in the store; never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CapacityId(pub i64);

impl fmt::Display for CapacityId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// What the lists show of a search, taken from its document by the caller (which knows its
/// type), and what links it to the rest of the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CapacityMeta {
    /// `capacity` or `sweep`.
    pub kind: String,
    pub started_at: String,
    pub target_url: String,
    /// The tag its probes were kept under.
    pub tag: Option<String>,
    pub revision: Option<String>,
    pub branch: Option<String>,
    /// The capacity found (a search's estimate), when one was.
    pub capacity: Option<f64>,
    /// What was found, in one line.
    pub verdict: String,
    /// Why it ended early ("budget", "interrupted", "server died"), when it did.
    pub stopped_by: Option<String>,
    /// Each probe's run in the order run; `None` for a probe whose run was not kept.
    pub probe_runs: Vec<Option<RunId>>,
}

/// A search as the lists show it: its columns, without the document.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityRow {
    pub id: CapacityId,
    /// When it was stored, RFC 3339 UTC.
    pub created_at: String,
    /// Its columns, redacted; in `probe_runs`, `None` also for a run deleted since.
    pub meta: CapacityMeta,
}

const COLUMNS: &str = "id, created_at, started_at, kind, target_url, tag, revision, branch, \
                       capacity, verdict, stopped_by";

/// The bytes a capacity document is kept and written as (`capacity --json`): the document
/// redacted, read back into its type (so its fields keep their order), pretty JSON and a
/// newline. A document whose redacted form no longer reads as its type (a NaN, which JSON
/// writes as null; a secret key holding a number) is kept as the redacted JSON itself, its
/// keys in order of name: a search's document is never lost to its redaction.
pub fn document_text<T: Serialize + DeserializeOwned>(document: &T) -> Result<String> {
    let bad = |e: serde_json::Error| StoreError::Document(e.to_string());
    let mut value = serde_json::to_value(document).map_err(bad)?;
    redact_json(&mut value);
    let mut text = match serde_json::from_value::<T>(value.clone()) {
        Ok(redacted) => serde_json::to_string_pretty(&redacted),
        Err(_) => serde_json::to_string_pretty(&value),
    }
    .map_err(bad)?;
    text.push('\n');
    Ok(text)
}

impl Store {
    /// Stores a search's document ([`document_text`]'s bytes) and its columns, redacted, with
    /// its probes' runs, in one transaction; returns its id. A probe run the store does not
    /// hold is refused (`NoRun`): the link would point nowhere.
    pub fn save_capacity<T: Serialize + DeserializeOwned>(
        &self,
        document: &T,
        meta: &CapacityMeta,
    ) -> Result<CapacityId> {
        if let Some(tag) = &meta.tag {
            check_tag(tag)?;
        }
        let text = document_text(document)?;
        let r = |s: &str| redact_text(s);
        let ro = |s: &Option<String>| s.as_deref().map(redact_text);
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO capacity_searches (started_at, kind, target_url, tag, revision, branch, \
             capacity, verdict, stopped_by, document, document_encoding) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'zlib')",
            params![
                r(&meta.started_at),
                meta.kind,
                r(&meta.target_url),
                meta.tag,
                ro(&meta.revision),
                ro(&meta.branch),
                meta.capacity,
                r(&meta.verdict),
                ro(&meta.stopped_by),
                compress(text.as_bytes()),
            ],
        )?;
        let id = CapacityId(tx.last_insert_rowid());
        for (seq, run) in meta.probe_runs.iter().enumerate() {
            if let Some(run) = run {
                let held: Option<i64> = tx
                    .query_row("SELECT id FROM runs WHERE id = ?1", [run.0], |r| r.get(0))
                    .optional()?;
                if held.is_none() {
                    return Err(StoreError::NoRun(*run));
                }
            }
            tx.execute(
                "INSERT INTO capacity_probes (search_id, seq, run_id) VALUES (?1, ?2, ?3)",
                params![id.0, seq as i64, run.map(|r| r.0)],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The newest searches first, at most `limit`.
    pub fn capacity_searches(&self, limit: usize) -> Result<Vec<CapacityRow>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM capacity_searches ORDER BY id DESC LIMIT ?1"
        ))?;
        let rows = stmt
            .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], read_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        rows.into_iter()
            .map(|mut row| {
                row.meta.probe_runs = self.probe_runs(row.id)?;
                Ok(row)
            })
            .collect()
    }

    /// One search's columns.
    pub fn capacity_search(&self, id: CapacityId) -> Result<CapacityRow> {
        let mut row = self
            .conn
            .query_row(
                &format!("SELECT {COLUMNS} FROM capacity_searches WHERE id = ?1"),
                [id.0],
                read_row,
            )
            .optional()?
            .ok_or(StoreError::NoCapacity(id))?;
        row.meta.probe_runs = self.probe_runs(id)?;
        Ok(row)
    }

    /// A search's document: byte for byte what `capacity --json` wrote.
    pub fn capacity_document(&self, id: CapacityId) -> Result<String> {
        let (encoding, bytes) = self
            .conn
            .query_row(
                "SELECT document_encoding, document FROM capacity_searches WHERE id = ?1",
                [id.0],
                |r| {
                    let bytes = match r.get_ref(1)? {
                        ValueRef::Text(b) | ValueRef::Blob(b) => b.to_vec(),
                        _ => Vec::new(),
                    };
                    Ok((r.get::<_, String>(0)?, bytes))
                },
            )
            .optional()?
            .ok_or(StoreError::NoCapacity(id))?;
        let bytes = match encoding.as_str() {
            "zlib" => decompress(&bytes).map_err(|why| StoreError::CapacityCorrupt { id, why })?,
            _ => bytes,
        };
        String::from_utf8(bytes).map_err(|_| StoreError::CapacityCorrupt {
            id,
            why: "its document is not UTF-8".into(),
        })
    }

    /// The runs of a search's probes in order (`None` for one not kept or deleted since).
    fn probe_runs(&self, id: CapacityId) -> Result<Vec<Option<RunId>>> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_id FROM capacity_probes WHERE search_id = ?1 ORDER BY seq")?;
        let runs = stmt
            .query_map([id.0], |r| r.get::<_, Option<i64>>(0))?
            .map(|r| r.map(|id| id.map(RunId)))
            .collect::<rusqlite::Result<_>>()?;
        Ok(runs)
    }
}

fn read_row(r: &Row) -> rusqlite::Result<CapacityRow> {
    Ok(CapacityRow {
        id: CapacityId(r.get("id")?),
        created_at: r.get("created_at")?,
        meta: CapacityMeta {
            kind: r.get("kind")?,
            started_at: r.get("started_at")?,
            target_url: r.get("target_url")?,
            tag: r.get("tag")?,
            revision: r.get("revision")?,
            branch: r.get("branch")?,
            capacity: r.get("capacity")?,
            verdict: r.get("verdict")?,
            stopped_by: r.get("stopped_by")?,
            probe_runs: Vec::new(),
        },
    })
}
