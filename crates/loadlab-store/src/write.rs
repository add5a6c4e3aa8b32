//! Writing a run's row: the columns a result and its [`RunMeta`] become (redacted first, the
//! document compressed), inserted as a new row or laid over an existing one (a streamed run's
//! result replacing its header, a killed run's rebuilt result). One list of columns serves
//! both, so the two can never disagree. This module must not decide when a row is written
//! ([`crate::runs`] and [`crate::stream`] do) nor read rows.

use crate::document::{compress, export_text};
use crate::error::Result;
use crate::redact::{redact, redact_json, redact_text};
use crate::runs::{check_slot, check_tag, ExperimentSlot, RunMeta};
use crate::summary::{RunStatus, Summary};
use crate::{RunId, Store};
use loadlab_result::RunResult;
use rusqlite::{params_from_iter, ToSql, Transaction, TransactionBehavior};
use serde_json::Value;

/// Column names with their values.
pub(crate) type Columns = Vec<(&'static str, Box<dyn ToSql>)>;

/// The columns that come from the result: its figures, command and document (redacted here).
pub(crate) fn result_columns(result: &RunResult) -> Columns {
    let mut result = result.clone();
    redact(&mut result);
    let document = compress(export_text(&result).as_bytes());
    let command = serde_json::to_string(&result.command).expect("strings");
    let s = Summary::of(&result);
    vec![
        ("started_at", Box::new(result.started_at.clone())),
        ("interrupted", Box::new(result.interrupted)),
        ("status", Box::new(RunStatus::of(&result).as_str())),
        ("command", Box::new(command)),
        ("target_url", Box::new(s.target_url)),
        ("load_model", Box::new(s.load_model)),
        ("duration_s", Box::new(s.duration_s)),
        ("requests_issued", Box::new(s.requests_issued)),
        ("requests_completed", Box::new(s.requests_completed)),
        ("requests_failed", Box::new(s.requests_failed)),
        ("rps", Box::new(s.rps)),
        ("latency_p50_us", Box::new(s.latency_p50_us)),
        ("latency_p90_us", Box::new(s.latency_p90_us)),
        ("latency_p99_us", Box::new(s.latency_p99_us)),
        ("latency_p99_9_us", Box::new(s.latency_p99_9_us)),
        ("latency_max_us", Box::new(s.latency_max_us)),
        ("error_rate", Box::new(s.error_rate)),
        ("bytes_sent", Box::new(s.bytes_sent)),
        ("bytes_received", Box::new(s.bytes_received)),
        (
            "busiest_second_sent_bytes",
            Box::new(s.busiest_second_sent_bytes),
        ),
        ("server_cpu_p50_cores", Box::new(s.server_cpu_p50_cores)),
        ("server_cpu_p99_cores", Box::new(s.server_cpu_p99_cores)),
        ("server_rss_p99_bytes", Box::new(s.server_rss_p99_bytes)),
        (
            "server_memory_p99_bytes",
            Box::new(s.server_memory_p99_bytes),
        ),
        (
            "generator_cpu_s_per_100k",
            Box::new(s.generator_cpu_s_per_100k),
        ),
        ("cold_start", Box::new(s.cold_start)),
        ("ready_s", Box::new(s.ready_s)),
        ("result", Box::new(document)),
        ("result_encoding", Box::new("zlib")),
        (
            "scenario",
            Box::new(result.scenario.as_ref().map(|s| s.name.clone())),
        ),
    ]
}

/// The columns that come from what the caller knows: tag, experiment slot, configuration,
/// environment, revision and branch (redacted here). Checks the tag.
pub(crate) fn meta_columns(meta: &RunMeta) -> Result<Columns> {
    if let Some(tag) = &meta.tag {
        check_tag(tag)?;
    }
    let json_text = |v: &Option<Value>| {
        v.clone().map(|mut v| {
            redact_json(&mut v);
            v.to_string()
        })
    };
    let slot = redacted_slot(meta);
    Ok(vec![
        ("tag", Box::new(meta.tag.clone())),
        (
            "experiment_id",
            Box::new(slot.as_ref().map(|s| s.experiment.0)),
        ),
        (
            "variant",
            Box::new(slot.as_ref().map(|s| s.variant.clone())),
        ),
        ("block", Box::new(slot.as_ref().map(|s| s.block))),
        ("repetition", Box::new(slot.as_ref().map(|s| s.repetition))),
        ("config_json", Box::new(json_text(&meta.config))),
        ("environment_json", Box::new(json_text(&meta.environment))),
        (
            "revision",
            Box::new(meta.revision.as_deref().map(redact_text)),
        ),
        ("branch", Box::new(meta.branch.as_deref().map(redact_text))),
    ])
}

/// The experiment slot as stored: its variant redacted.
pub(crate) fn redacted_slot(meta: &RunMeta) -> Option<ExperimentSlot> {
    meta.experiment.as_ref().map(|s| ExperimentSlot {
        variant: redact_text(&s.variant),
        ..s.clone()
    })
}

/// Inserts a row; returns its id.
pub(crate) fn insert(tx: &Transaction, columns: &Columns) -> Result<RunId> {
    let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    tx.execute(
        &format!(
            "INSERT INTO runs ({}) VALUES ({})",
            names.join(", "),
            marks.join(", ")
        ),
        params_from_iter(columns.iter().map(|(_, v)| v.as_ref())),
    )?;
    Ok(RunId(tx.last_insert_rowid()))
}

/// Lays `columns` over the row `id`; false when there is no such row.
pub(crate) fn update(tx: &Transaction, id: RunId, columns: &Columns) -> Result<bool> {
    let sets: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(i, (n, _))| format!("{n} = ?{}", i + 1))
        .collect();
    let changed = tx.execute(
        &format!(
            "UPDATE runs SET {} WHERE id = ?{}",
            sets.join(", "),
            columns.len() + 1
        ),
        params_from_iter(
            columns
                .iter()
                .map(|(_, v)| v.as_ref())
                .chain(std::iter::once(&id.0 as &dyn ToSql)),
        ),
    )?;
    Ok(changed > 0)
}

impl Store {
    /// Stores a run, redacted, in one transaction; returns its id. A result marked
    /// interrupted is stored with `interrupted = 1`. The result given is not changed.
    pub fn save_run(&self, result: &RunResult, meta: &RunMeta) -> Result<RunId> {
        let mut columns = meta_columns(meta)?;
        columns.extend(result_columns(result));
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        if let Some(slot) = redacted_slot(meta) {
            check_slot(&tx, &slot, result.interrupted)?;
        }
        let id = insert(&tx, &columns)?;
        tx.commit()?;
        Ok(id)
    }
}
