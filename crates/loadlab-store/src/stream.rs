//! Runs written as they go (issue 34): the row is made when the run starts, holding its
//! header marked interrupted, with a `run_streams` row naming the process that writes it;
//! each finished interval is appended to `run_intervals` in a transaction of its own; when
//! the run ends its result replaces the header in one transaction (same id) and the
//! intervals go. A run killed by any means leaves its header, its intervals and a writer
//! that is gone: [`Store::seal_run`] lays the result rebuilt from those intervals over it
//! (rebuilding is the session crate's, shared with spill files).
//!
//! This module must not merge intervals nor decide whether a writer is alive: it says which
//! process wrote (its PID and the boot it ran in), and the caller judges.

use crate::error::{Result, StoreError};
use crate::runs::{check_slot, RunMeta};
use crate::write::{insert, meta_columns, redacted_slot, result_columns, update};
use crate::{RunId, Store};
use loadlab_result::{IntervalSummary, RunResult};
use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

/// The process writing a streamed run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    pub pid: u32,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), so that a PID from before a
    /// reboot is never taken for a live one.
    pub boot_id: Option<String>,
}

/// A streamed run not finished: running now, or killed.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenStream {
    pub run: RunId,
    pub writer: Writer,
    /// When the run started writing, RFC 3339 UTC.
    pub started_at: String,
    pub intervals: u64,
    /// Where the last interval written ends, in seconds from the run's start.
    pub last_end_s: Option<f64>,
}

impl Store {
    /// Makes a streamed run's row: `header` (the result as known at the start) stored marked
    /// interrupted, until [`Store::finish_run`] replaces it.
    pub fn begin_run(&self, header: &RunResult, meta: &RunMeta, writer: &Writer) -> Result<RunId> {
        let mut header = header.clone();
        header.interrupted = true;
        header.timeline.clear();
        let mut columns = meta_columns(meta)?;
        columns.extend(result_columns(&header));
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(slot) = redacted_slot(meta) {
            check_slot(&tx, &slot, true)?;
        }
        let id = insert(&tx, &columns)?;
        tx.execute(
            "INSERT INTO run_streams (run_id, pid, boot_id) VALUES (?1, ?2, ?3)",
            params![id.0, writer.pid, writer.boot_id],
        )?;
        tx.commit()?;
        Ok(id)
    }

    /// Appends the streamed run's interval number `seq` (from 0), durably, in one
    /// transaction.
    pub fn append_interval(&self, run: RunId, seq: u64, interval: &IntervalSummary) -> Result<()> {
        let json = serde_json::to_string(interval).expect("an interval serialises");
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO run_intervals (run_id, seq, interval) VALUES (?1, ?2, ?3)",
            params![run.0, seq, json],
        )?;
        tx.execute(
            "UPDATE run_streams SET intervals = intervals + 1, last_end_s = ?2 WHERE run_id = ?1",
            params![run.0, interval.start_s + interval.duration_s],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The streamed run ended: its result replaces the header (same id, in one transaction)
    /// and its intervals go (the result's timeline has them).
    pub fn finish_run(&self, run: RunId, result: &RunResult, meta: &RunMeta) -> Result<()> {
        let mut columns = meta_columns(meta)?;
        columns.extend(result_columns(result));
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(slot) = redacted_slot(meta) {
            check_slot(&tx, &slot, result.interrupted)?;
        }
        if !update(&tx, run, &columns)? {
            return Err(StoreError::NoRun(run));
        }
        tx.execute("DELETE FROM run_intervals WHERE run_id = ?1", [run.0])?;
        tx.execute("DELETE FROM run_streams WHERE run_id = ?1", [run.0])?;
        tx.commit()?;
        Ok(())
    }

    /// A killed run's result, rebuilt from its intervals, laid over its header; its tag,
    /// experiment slot, configuration and environment stay, and so do its intervals.
    pub fn seal_run(&self, run: RunId, result: &RunResult) -> Result<()> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if !update(&tx, run, &result_columns(result))? {
            return Err(StoreError::NoRun(run));
        }
        tx.execute("DELETE FROM run_streams WHERE run_id = ?1", [run.0])?;
        tx.commit()?;
        Ok(())
    }

    /// Every streamed run not finished, oldest first.
    pub fn open_streams(&self) -> Result<Vec<OpenStream>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT run_id, pid, boot_id, started_at, intervals, last_end_s FROM run_streams \
             ORDER BY run_id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(OpenStream {
                run: RunId(r.get(0)?),
                writer: Writer {
                    pid: r.get(1)?,
                    boot_id: r.get(2)?,
                },
                started_at: r.get(3)?,
                intervals: r.get(4)?,
                last_end_s: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The streamed run `run`'s open stream, if it has one.
    pub fn open_stream(&self, run: RunId) -> Result<Option<OpenStream>> {
        Ok(self.open_streams()?.into_iter().find(|s| s.run == run))
    }

    /// Hands each interval written for `run` to `each`, in order, one at a time (never all
    /// in memory); returns how many. An interval that does not parse is an error naming it.
    pub fn for_each_interval(
        &self,
        run: RunId,
        mut each: impl FnMut(IntervalSummary) -> std::result::Result<(), String>,
    ) -> Result<u64> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, interval FROM run_intervals WHERE run_id = ?1 ORDER BY seq",
        )?;
        let mut rows = stmt.query([run.0])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let text: String = row.get(1)?;
            let interval = serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                id: run,
                why: format!("its interval {seq} does not parse: {e}"),
            })?;
            each(interval).map_err(|why| StoreError::Corrupt { id: run, why })?;
            n += 1;
        }
        Ok(n)
    }

    /// How many intervals are written for `run`.
    pub fn interval_count(&self, run: RunId) -> Result<u64> {
        Ok(self
            .conn
            .query_row(
                "SELECT count(*) FROM run_intervals WHERE run_id = ?1",
                [run.0],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0))
    }
}
