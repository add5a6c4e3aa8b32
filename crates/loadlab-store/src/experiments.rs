//! Experiments in the store: one row per experiment started (a resumed one continues its
//! row), its plan kept as JSON with the plan's hash, its status, its runs by variant, and what
//! a resumed experiment may skip. This module must not plan or run anything (that is the
//! experiment crate's job); it keeps what the runner reports.

use crate::error::{Result, StoreError};
use crate::redact::{redact_json, redact_text};
use crate::runs::{read_row, RunRow, ROW_COLUMNS};
use crate::{ExperimentId, RunId, Store};
use rusqlite::{params, OptionalExtension, Row};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Where an experiment stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExperimentStatus {
    /// Started and not finished; also what a killed experiment is left as.
    Running,
    /// Stopped early (Ctrl-C): it can be resumed.
    Interrupted,
    /// Every planned run is stored.
    Complete,
}

impl ExperimentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentStatus::Running => "running",
            ExperimentStatus::Interrupted => "interrupted",
            ExperimentStatus::Complete => "complete",
        }
    }

    pub fn parse(text: &str) -> Option<ExperimentStatus> {
        [
            ExperimentStatus::Running,
            ExperimentStatus::Interrupted,
            ExperimentStatus::Complete,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// An experiment as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub id: ExperimentId,
    pub name: String,
    /// The experiment file it was run from, as given.
    pub file: String,
    /// Says whether two plans are the same (same file, seed and settings).
    pub plan_hash: String,
    /// The plan, redacted.
    pub plan: Value,
    pub created_at: String,
    /// When its status last changed.
    pub updated_at: String,
    pub status: ExperimentStatus,
}

/// A run of an experiment that need not run again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletedRun {
    pub run: RunId,
    pub variant: String,
    pub block: u32,
    pub repetition: u32,
}

/// An unfinished experiment that can go on where it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumable {
    pub experiment: ExperimentId,
    /// Its runs that completed (interrupted ones must run again), in plan order.
    pub completed: Vec<CompletedRun>,
}

const EXPERIMENT_COLUMNS: &str =
    "id, name, file, plan_hash, plan_json, created_at, updated_at, status";

impl Store {
    /// Records a new experiment, `running`; its name, file and plan are stored redacted.
    pub fn create_experiment(
        &self,
        name: &str,
        file: &Path,
        plan_hash: &str,
        plan: &Value,
    ) -> Result<ExperimentId> {
        let mut plan = plan.clone();
        redact_json(&mut plan);
        self.conn.execute(
            "INSERT INTO experiments (name, file, plan_hash, plan_json) VALUES (?1, ?2, ?3, ?4)",
            params![
                redact_text(name),
                redact_text(&file.to_string_lossy()),
                plan_hash,
                plan.to_string()
            ],
        )?;
        Ok(ExperimentId(self.conn.last_insert_rowid()))
    }

    pub fn experiment(&self, id: ExperimentId) -> Result<Experiment> {
        self.conn
            .query_row(
                &format!("SELECT {EXPERIMENT_COLUMNS} FROM experiments WHERE id = ?1"),
                [id.0],
                read_experiment,
            )
            .optional()?
            .ok_or(StoreError::NoExperimentId(id))
    }

    /// The experiment of that name started last, if any.
    pub fn latest_experiment(&self, name: &str) -> Result<Option<Experiment>> {
        Ok(self
            .conn
            .query_row(
                &format!(
                    "SELECT {EXPERIMENT_COLUMNS} FROM experiments WHERE name = ?1 \
                     ORDER BY id DESC LIMIT 1"
                ),
                [name],
                read_experiment,
            )
            .optional()?)
    }

    /// Every experiment, newest first.
    pub fn experiments(&self) -> Result<Vec<Experiment>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {EXPERIMENT_COLUMNS} FROM experiments ORDER BY id DESC"
        ))?;
        let rows = stmt.query_map([], read_experiment)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The experiment `--resume` continues: the latest one of that name, when it has the same
    /// plan hash and is not complete (`running` counts: a killed runner never said it
    /// stopped). `None` when there is none, its plan changed, or it finished.
    pub fn find_resumable(&self, name: &str, plan_hash: &str) -> Result<Option<Resumable>> {
        let Some(latest) = self.latest_experiment(&redact_text(name))? else {
            return Ok(None);
        };
        if latest.plan_hash != plan_hash || latest.status == ExperimentStatus::Complete {
            return Ok(None);
        }
        let mut stmt = self.conn.prepare(
            "SELECT id, variant, block, repetition FROM runs \
             WHERE experiment_id = ?1 AND interrupted = 0 ORDER BY block, id",
        )?;
        let completed = stmt
            .query_map([latest.id.0], |r| {
                Ok(CompletedRun {
                    run: RunId(r.get(0)?),
                    variant: r.get(1)?,
                    block: r.get(2)?,
                    repetition: r.get(3)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Some(Resumable {
            experiment: latest.id,
            completed,
        }))
    }

    /// Marks where an experiment stands (`running` again when it is resumed).
    pub fn set_experiment_status(&self, id: ExperimentId, status: ExperimentStatus) -> Result<()> {
        let changed = self.conn.execute(
            "UPDATE experiments SET status = ?2, \
             updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
            params![id.0, status.as_str()],
        )?;
        match changed {
            0 => Err(StoreError::NoExperimentId(id)),
            _ => Ok(()),
        }
    }

    /// An experiment's runs by variant, each variant's in plan order (block, then the order
    /// they were stored). Interrupted attempts are included, marked: leave them out of
    /// statistics.
    pub fn experiment_runs(&self, id: ExperimentId) -> Result<BTreeMap<String, Vec<RunRow>>> {
        self.experiment(id)?;
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {ROW_COLUMNS} FROM runs WHERE experiment_id = ?1 ORDER BY variant, block, id"
        ))?;
        let mut by_variant: BTreeMap<String, Vec<RunRow>> = BTreeMap::new();
        for row in stmt.query_map([id.0], read_row)? {
            let row = row?;
            let variant = row
                .experiment
                .as_ref()
                .map(|s| s.variant.clone())
                .unwrap_or_default();
            by_variant.entry(variant).or_default().push(row);
        }
        Ok(by_variant)
    }
}

fn read_experiment(r: &Row) -> rusqlite::Result<Experiment> {
    let plan: String = r.get("plan_json")?;
    let status: String = r.get("status")?;
    Ok(Experiment {
        id: ExperimentId(r.get("id")?),
        name: r.get("name")?,
        file: r.get("file")?,
        plan_hash: r.get("plan_hash")?,
        plan: serde_json::from_str(&plan).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(4, rusqlite::types::Type::Text, Box::new(e))
        })?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
        // The table's CHECK allows no other value.
        status: ExperimentStatus::parse(&status).unwrap_or(ExperimentStatus::Running),
    })
}
