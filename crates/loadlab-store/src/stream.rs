//! Runs written as they go (issue 34): the row is made when the run starts, holding its
//! header marked interrupted, with a `run_streams` row naming the process that writes it;
//! each finished interval is appended to `run_intervals` in a transaction of its own; when
//! the run ends its result replaces the header in one transaction (same id) and the
//! intervals go, unless the result's timeline merged them (a run past 3,600 intervals, see
//! [`Store::finish_run_keeping_intervals`]): they are then kept, so that
//! [`Store::export_json_with_intervals`] gives every one back. A run killed by any means leaves its header, its intervals and a writer
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
        self.finish(run, result, meta, false)
    }

    /// As [`Store::finish_run`], but the intervals stay: the result's timeline has them
    /// merged (coarser than written), and only these hold each one.
    pub fn finish_run_keeping_intervals(
        &self,
        run: RunId,
        result: &RunResult,
        meta: &RunMeta,
    ) -> Result<()> {
        self.finish(run, result, meta, true)
    }

    fn finish(&self, run: RunId, result: &RunResult, meta: &RunMeta, keep: bool) -> Result<()> {
        let mut columns = meta_columns(meta)?;
        columns.extend(result_columns(result));
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(slot) = redacted_slot(meta) {
            check_slot(&tx, &slot, result.interrupted)?;
        }
        if !update(&tx, run, &columns)? {
            return Err(StoreError::NoRun(run));
        }
        if !keep {
            tx.execute("DELETE FROM run_intervals WHERE run_id = ?1", [run.0])?;
        }
        tx.execute("DELETE FROM run_streams WHERE run_id = ?1", [run.0])?;
        tx.commit()?;
        Ok(())
    }

    /// The run's result as JSON with every interval the store kept as its timeline (a run
    /// whose result merged its intervals, or a killed one); the result's own export, byte
    /// for byte, when the store kept none (its timeline is then every interval there was).
    /// The kept intervals carry what was written as the run went: no steal, and no server
    /// samples (the result's merged timeline has those).
    pub fn export_json_with_intervals(&self, id: RunId) -> Result<String> {
        let text = self.export_json(id)?;
        if self.interval_count(id)? == 0 {
            return Ok(text);
        }
        let mut result: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                id,
                why: format!("its result does not parse: {e}"),
            })?;
        let mut timeline = Vec::new();
        self.for_each_interval(id, |iv| {
            timeline.push(serde_json::to_value(iv).map_err(|e| e.to_string())?);
            Ok(())
        })?;
        result["timeline"] = serde_json::Value::Array(timeline);
        let mut out = serde_json::to_string_pretty(&result).expect("a JSON value serialises");
        out.push('\n');
        Ok(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(i: u64) -> IntervalSummary {
        serde_json::from_value(serde_json::json!({
            "start_s": i as f64, "duration_s": 1.0, "warmup": false, "offered_per_s": null,
            "connections": 2.0, "achieved_per_s": 10.0, "completed": 10 + i, "failed": 0,
            "p50_us": null, "p90_us": null, "p99_us": null, "max_us": null, "bytes_sent": 100,
            "bytes_received": 200, "steal": null, "server": null,
        }))
        .unwrap()
    }

    fn result() -> RunResult {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../loadlab-report/tests/fixtures/ok.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// Issue 45 item 5: a run whose result merged its intervals lost them at its end; now
    /// they stay, and the export with intervals gives each one back.
    #[test]
    fn a_merged_timeline_keeps_its_intervals_for_the_export() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("runs.db")).unwrap();
        let writer = Writer {
            pid: 4_000_000,
            boot_id: None,
        };
        let mut merged = result();
        let (kept, plain) = (
            store
                .begin_run(&merged, &RunMeta::default(), &writer)
                .unwrap(),
            store
                .begin_run(&merged, &RunMeta::default(), &writer)
                .unwrap(),
        );
        for i in 0..6 {
            store.append_interval(kept, i, &interval(i)).unwrap();
            store.append_interval(plain, i, &interval(i)).unwrap();
        }
        // The result's timeline: the six merged three at a time.
        merged.timeline = vec![interval(0), interval(3)];
        store
            .finish_run_keeping_intervals(kept, &merged, &RunMeta::default())
            .unwrap();
        store
            .finish_run(plain, &merged, &RunMeta::default())
            .unwrap();
        assert_eq!(store.interval_count(kept).unwrap(), 6);
        assert_eq!(store.interval_count(plain).unwrap(), 0);
        assert!(store.open_streams().unwrap().is_empty());

        let full: RunResult =
            serde_json::from_str(&store.export_json_with_intervals(kept).unwrap()).unwrap();
        assert_eq!(full.timeline, (0..6).map(interval).collect::<Vec<_>>());
        assert_eq!(full.measured, merged.measured, "only the timeline differs");
        // Nothing kept: the export is the result's own, byte for byte.
        assert_eq!(
            store.export_json_with_intervals(plain).unwrap(),
            store.export_json(plain).unwrap()
        );
        // The plain export keeps the merged timeline.
        let plain_export: RunResult =
            serde_json::from_str(&store.export_json(kept).unwrap()).unwrap();
        assert_eq!(plain_export.timeline.len(), 2);
        store.delete_run(kept).unwrap();
        assert_eq!(store.interval_count(kept).unwrap(), 0);
    }
}
