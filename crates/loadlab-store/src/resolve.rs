//! What a person types to name runs (`loadlab compare A B`, `loadlab runs show X`), as run
//! ids. This module must not change the store, and must never guess: a spec that names
//! nothing is an error that says what would have.
//!
//! | spec | runs |
//! |---|---|
//! | `42` | run 42 |
//! | `baseline` | every run tagged `baseline`, newest first (a tag means its runs: five runs saved under one tag are one arm of five) |
//! | `baseline@all` | the same (kept from when a plain tag meant the latest run) |
//! | `baseline@last` | the latest run tagged `baseline` alone |
//! | `EXPERIMENT:variant` | the completed runs of that variant (the arm's label, e.g. `fast` or `fast[connections=50]`) in the latest experiment of that name, in block order |
//!
//! Tags are checked when saved so that these never collide: a tag is not digits alone and
//! holds neither `:` nor `@`.

use crate::error::{Result, StoreError};
use crate::{RunId, Store};
use rusqlite::OptionalExtension;

impl Store {
    /// The runs `spec` names (see the module's table); an error when it names none.
    pub fn resolve(&self, spec: &str) -> Result<Vec<RunId>> {
        let spec = spec.trim();
        if !spec.is_empty() && spec.bytes().all(|b| b.is_ascii_digit()) {
            let id = RunId(
                spec.parse()
                    .map_err(|_| StoreError::Unresolvable(spec.into()))?,
            );
            return match self.run_exists(id)? {
                true => Ok(vec![id]),
                false => Err(StoreError::NoRun(id)),
            };
        }
        if let Some(tag) = spec.strip_suffix("@all") {
            return self.tagged(tag, None, spec);
        }
        if let Some(tag) = spec.strip_suffix("@last") {
            return self.tagged(tag, Some(1), spec);
        }
        if let Some((name, variant)) = spec.split_once(':') {
            return self.variant_runs(name, variant);
        }
        self.tagged(spec, None, spec)
    }

    fn run_exists(&self, id: RunId) -> Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id.0], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Runs with `tag`, newest first, at most `limit`.
    fn tagged(&self, tag: &str, limit: Option<i64>, spec: &str) -> Result<Vec<RunId>> {
        if tag.is_empty() || tag.contains(['@', ':']) {
            return Err(StoreError::Unresolvable(spec.into()));
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM runs WHERE tag = ?1 ORDER BY id DESC LIMIT ?2")?;
        let ids: Vec<RunId> = stmt
            .query_map(rusqlite::params![tag, limit.unwrap_or(-1)], |r| {
                Ok(RunId(r.get(0)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        match ids.is_empty() {
            true => Err(StoreError::NoTag(tag.into())),
            false => Ok(ids),
        }
    }

    /// `EXPERIMENT:variant`: completed runs only, since an interrupted one measured less.
    fn variant_runs(&self, name: &str, variant: &str) -> Result<Vec<RunId>> {
        if name.is_empty() || variant.is_empty() {
            return Err(StoreError::Unresolvable(format!("{name}:{variant}")));
        }
        let experiment = self
            .latest_experiment(name)?
            .ok_or_else(|| StoreError::NoExperiment(name.into()))?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM runs WHERE experiment_id = ?1 AND variant = ?2 AND interrupted = 0 \
             ORDER BY block, id",
        )?;
        let ids: Vec<RunId> = stmt
            .query_map(rusqlite::params![experiment.id.0, variant], |r| {
                Ok(RunId(r.get(0)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        if !ids.is_empty() {
            return Ok(ids);
        }
        let known: Vec<String> = self
            .conn
            .prepare_cached(
                "SELECT DISTINCT variant FROM runs WHERE experiment_id = ?1 AND interrupted = 0 \
                 ORDER BY variant",
            )?
            .query_map([experiment.id.0], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        Err(StoreError::NoVariant {
            experiment: name.into(),
            id: experiment.id,
            variant: variant.into(),
            known: if known.is_empty() {
                "none yet".into()
            } else {
                known.join(", ")
            },
        })
    }
}
