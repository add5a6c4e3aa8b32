//! Runs in the store: saved whole in one transaction (redacted first), read back as the
//! result they were, exported as the exact bytes `run --json` writes, listed newest first,
//! deleted. This module must not redact by any rule of its own (that is [`mod@crate::redact`]'s),
//! encode documents ([`crate::document`]'s) nor decide what a person's run spec means
//! ([`crate::resolve`]'s).

use crate::document::decompress;
use crate::error::{Result, StoreError};
use crate::summary::{RunStatus, Summary};
use crate::{ExperimentId, RunId, Store};
use loadlab_result::RunResult;
use rusqlite::types::{Type, ValueRef};
use rusqlite::{params, OptionalExtension, Row, Transaction};
use serde_json::Value;

/// Where a run sits in an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentSlot {
    pub experiment: ExperimentId,
    /// The arm's label, e.g. `fast` or `fast[connections=50]`; stored redacted.
    pub variant: String,
    /// The randomized block, from 0.
    pub block: u32,
    /// Which repetition of its variant this is, from 0 (the block, in a plan of blocks).
    pub repetition: u32,
}

/// What the caller knows about a run beyond its result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeta {
    /// A name to find the run by later; tags may repeat (the latest run wins).
    pub tag: Option<String>,
    pub experiment: Option<ExperimentSlot>,
    /// The run's configuration as the caller sees it (flags, experiment settings).
    pub config: Option<Value>,
    /// The machine and build: CPU model, governor, loadlab version and commit, the target's
    /// build fingerprint...
    pub environment: Option<Value>,
    /// The revision (commit) of the code under test, so runs read as a history over
    /// revisions; `None` when nobody knew it.
    pub revision: Option<String>,
    /// The branch that revision was built from, for `loadlab history --branch`.
    pub branch: Option<String>,
}

/// A run as `loadlab runs list` shows it: its columns, without the result document.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: RunId,
    /// When it was stored, RFC 3339 UTC.
    pub created_at: String,
    /// When it started (the result's `started_at`).
    pub started_at: String,
    pub tag: Option<String>,
    pub experiment: Option<ExperimentSlot>,
    pub interrupted: bool,
    pub status: RunStatus,
    /// The command line, redacted.
    pub command: Vec<String>,
    pub summary: Summary,
    /// The revision and branch of the code the run measured, when known (schema 4 on).
    pub revision: Option<String>,
    pub branch: Option<String>,
}

/// A whole stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub row: RunRow,
    pub config: Option<Value>,
    pub environment: Option<Value>,
    /// The result, as redacted when it was stored.
    pub result: RunResult,
}

/// Which runs [`Store::list_runs`] returns; the default is every run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub tag: Option<String>,
    pub experiment: Option<ExperimentId>,
    pub variant: Option<String>,
    /// Leave out interrupted runs.
    pub completed_only: bool,
    /// Runs whose target URL contains this text (as stored: redacted).
    pub target: Option<String>,
    /// Runs whose revision starts with this (a commit's short form finds it).
    pub revision: Option<String>,
    /// Runs started on or after this day, `YYYY-MM-DD` (UTC, as `started_at` is kept).
    pub since: Option<String>,
    /// Runs started on or before this day, `YYYY-MM-DD`.
    pub until: Option<String>,
    /// At most this many (the newest).
    pub limit: Option<usize>,
}

/// The columns a [`RunRow`] is read from; see [`read_row`].
pub(crate) const ROW_COLUMNS: &str = "id, created_at, started_at, tag, experiment_id, variant, \
    block, repetition, interrupted, status, command, target_url, load_model, duration_s, \
    requests_issued, requests_completed, requests_failed, rps, latency_p50_us, latency_p90_us, \
    latency_p99_us, latency_p99_9_us, latency_max_us, error_rate, bytes_sent, bytes_received, \
    busiest_second_sent_bytes, server_cpu_p50_cores, server_cpu_p99_cores, \
    server_rss_p99_bytes, server_memory_p99_bytes, generator_cpu_s_per_100k, cold_start, \
    ready_s, revision, branch";

impl Store {
    /// A whole run: its columns, configuration, environment and result.
    pub fn run(&self, id: RunId) -> Result<StoredRun> {
        let (row, config, environment) = self
            .conn
            .query_row(
                &format!(
                    "SELECT {ROW_COLUMNS}, config_json, environment_json FROM runs WHERE id = ?1"
                ),
                [id.0],
                |r| {
                    Ok((
                        read_row(r)?,
                        r.get::<_, Option<String>>("config_json")?,
                        r.get::<_, Option<String>>("environment_json")?,
                    ))
                },
            )
            .optional()?
            .ok_or(StoreError::NoRun(id))?;
        let parse = |text: Option<String>, what: &str| {
            text.map(|t| serde_json::from_str(&t))
                .transpose()
                .map_err(|e| corrupt(id, format!("its {what} is not JSON: {e}")))
        };
        let text = self.export_json(id)?;
        let result = serde_json::from_str(&text)
            .map_err(|e| corrupt(id, format!("its result does not parse: {e}")))?;
        Ok(StoredRun {
            row,
            config: parse(config, "configuration")?,
            environment: parse(environment, "environment")?,
            result,
        })
    }

    /// The run's result exactly as `loadlab run --json` wrote it (after redaction).
    pub fn export_json(&self, id: RunId) -> Result<String> {
        let (encoding, bytes) = self
            .conn
            .query_row(
                "SELECT result_encoding, result FROM runs WHERE id = ?1",
                [id.0],
                |r| {
                    let bytes = match r.get_ref(1)? {
                        ValueRef::Text(b) | ValueRef::Blob(b) => b.to_vec(),
                        other => {
                            return Err(rusqlite::Error::InvalidColumnType(
                                1,
                                "result".into(),
                                other.data_type(),
                            ))
                        }
                    };
                    Ok((r.get::<_, String>(0)?, bytes))
                },
            )
            .optional()?
            .ok_or(StoreError::NoRun(id))?;
        let bytes = match encoding.as_str() {
            "zlib" => decompress(&bytes).map_err(|e| corrupt(id, e))?,
            _ => bytes,
        };
        String::from_utf8(bytes).map_err(|e| corrupt(id, format!("its result is not UTF-8: {e}")))
    }

    /// Runs matching `filter`, newest first.
    pub fn list_runs(&self, filter: &Filter) -> Result<Vec<RunRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ROW_COLUMNS} FROM runs WHERE (?1 IS NULL OR tag = ?1) \
             AND (?2 IS NULL OR experiment_id = ?2) AND (?3 IS NULL OR variant = ?3) \
             AND (?4 = 0 OR interrupted = 0) \
             AND (?6 IS NULL OR instr(target_url, ?6) > 0) \
             AND (?7 IS NULL OR substr(revision, 1, length(?7)) = ?7) \
             AND (?8 IS NULL OR substr(started_at, 1, 10) >= ?8) \
             AND (?9 IS NULL OR substr(started_at, 1, 10) <= ?9) ORDER BY id DESC LIMIT ?5"
        ))?;
        let limit = filter
            .limit
            .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let rows = stmt.query_map(
            params![
                filter.tag,
                filter.experiment.map(|e| e.0),
                filter.variant,
                filter.completed_only,
                limit,
                filter.target,
                filter.revision,
                filter.since,
                filter.until
            ],
            read_row,
        )?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Removes a run for good (its id is not given to another run).
    pub fn delete_run(&self, id: RunId) -> Result<()> {
        match self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [id.0])?
        {
            0 => Err(StoreError::NoRun(id)),
            _ => Ok(()),
        }
    }
}

/// A run of an experiment must name one that exists, and a completed run of its (variant,
/// block) must not be there already.
pub(crate) fn check_slot(tx: &Transaction, slot: &ExperimentSlot, interrupted: bool) -> Result<()> {
    let exists = tx
        .query_row(
            "SELECT 1 FROM experiments WHERE id = ?1",
            [slot.experiment.0],
            |_| Ok(()),
        )
        .optional()?;
    if exists.is_none() {
        return Err(StoreError::NoExperimentId(slot.experiment));
    }
    let done = tx
        .query_row(
            "SELECT 1 FROM runs WHERE experiment_id = ?1 AND variant = ?2 AND block = ?3 \
             AND interrupted = 0",
            params![slot.experiment.0, slot.variant, slot.block],
            |_| Ok(()),
        )
        .optional()?;
    if done.is_some() && !interrupted {
        return Err(StoreError::DuplicateRun {
            experiment: slot.experiment,
            variant: slot.variant.clone(),
            block: slot.block,
        });
    }
    Ok(())
}

/// Tags are looked up by what a person types, so they must not read as anything else.
pub(crate) fn check_tag(tag: &str) -> Result<()> {
    let why = if tag.is_empty() {
        Some("it is empty")
    } else if tag.bytes().all(|b| b.is_ascii_digit()) {
        Some("digits alone read as a run id; add a letter")
    } else if tag.contains(':') {
        Some("`:` reads as EXPERIMENT:variant; use `-` or `_`")
    } else if tag.contains('@') {
        Some("`@` is kept for `TAG@last` and `TAG@all`; use `-` or `_`")
    } else if tag.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("white space would need quoting wherever the tag is typed; use `-` or `_`")
    } else {
        None
    };
    match why {
        Some(why) => Err(StoreError::InvalidTag {
            tag: tag.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

/// Reads the [`ROW_COLUMNS`] of one row.
pub(crate) fn read_row(r: &Row) -> rusqlite::Result<RunRow> {
    let text_column = |name: &str| -> rusqlite::Result<String> { r.get(name) };
    let command: Vec<String> = serde_json::from_str(&text_column("command")?)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(10, Type::Text, Box::new(e)))?;
    let status = text_column("status")?;
    let status = RunStatus::parse(&status).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(9, Type::Text, format!("status {status}").into())
    })?;
    let experiment = match r.get::<_, Option<i64>>("experiment_id")? {
        Some(id) => Some(ExperimentSlot {
            experiment: ExperimentId(id),
            variant: r.get("variant")?,
            block: r.get("block")?,
            repetition: r.get("repetition")?,
        }),
        None => None,
    };
    Ok(RunRow {
        id: RunId(r.get("id")?),
        created_at: r.get("created_at")?,
        started_at: r.get("started_at")?,
        tag: r.get("tag")?,
        experiment,
        interrupted: r.get("interrupted")?,
        status,
        command,
        summary: Summary {
            target_url: r.get("target_url")?,
            load_model: r.get("load_model")?,
            duration_s: r.get("duration_s")?,
            requests_issued: r.get("requests_issued")?,
            requests_completed: r.get("requests_completed")?,
            requests_failed: r.get("requests_failed")?,
            rps: r.get("rps")?,
            latency_p50_us: r.get("latency_p50_us")?,
            latency_p90_us: r.get("latency_p90_us")?,
            latency_p99_us: r.get("latency_p99_us")?,
            latency_p99_9_us: r.get("latency_p99_9_us")?,
            latency_max_us: r.get("latency_max_us")?,
            error_rate: r.get("error_rate")?,
            bytes_sent: r.get("bytes_sent")?,
            bytes_received: r.get("bytes_received")?,
            busiest_second_sent_bytes: r.get("busiest_second_sent_bytes")?,
            server_cpu_p50_cores: r.get("server_cpu_p50_cores")?,
            server_cpu_p99_cores: r.get("server_cpu_p99_cores")?,
            server_rss_p99_bytes: r.get("server_rss_p99_bytes")?,
            server_memory_p99_bytes: r.get("server_memory_p99_bytes")?,
            generator_cpu_s_per_100k: r.get("generator_cpu_s_per_100k")?,
            cold_start: r.get("cold_start")?,
            ready_s: r.get("ready_s")?,
        },
        revision: r.get("revision")?,
        branch: r.get("branch")?,
    })
}

fn corrupt(id: RunId, why: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id,
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_that_would_read_as_something_else_are_refused() {
        for bad in ["", "42", "exp:fast", "base@all", "my tag"] {
            assert!(check_tag(bad).is_err(), "{bad:?}");
        }
        for good in ["baseline", "v1.2-rc", "42a", "after_fix"] {
            assert!(check_tag(good).is_ok(), "{good:?}");
        }
    }
}
