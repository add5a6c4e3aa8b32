//! Runs read as a history: the completed runs of one series (every run saved under a tag,
//! one variant of every experiment of a name, or every run of a scenario), each with its revision, branch and
//! environment, in the order they were stored. This module must not order revisions, group
//! runs or judge them: that is `loadlab-history`'s job, which takes this as its only input.

use crate::error::{Result, StoreError};
use crate::runs::{read_row, RunRow, ROW_COLUMNS};
use crate::Store;
use serde_json::Value;

/// What `loadlab history SERIES` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Series {
    /// Every run saved with `--tag TAG`.
    Tag(String),
    /// `EXPERIMENT:variant`: that variant's runs in every experiment of that name (not only
    /// the latest, as `compare` takes), since a history spans many invocations.
    Variant { experiment: String, variant: String },
    /// `scenario=NAME`: every run of the scenario of that name (its file's `name`), whether
    /// run alone, under a tag or in an experiment.
    Scenario(String),
}

impl Series {
    /// `scenario=NAME`, `EXPERIMENT:variant`, else a tag.
    pub fn parse(spec: &str) -> Series {
        if let Some(name) = spec.trim().strip_prefix("scenario=") {
            return Series::Scenario(name.trim().to_string());
        }
        match spec.trim().split_once(':') {
            Some((experiment, variant)) => Series::Variant {
                experiment: experiment.to_string(),
                variant: variant.to_string(),
            },
            None => Series::Tag(spec.trim().to_string()),
        }
    }
}

/// One run of a series.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesRun {
    pub row: RunRow,
    /// Where it ran (CPU model, kernel, loadlab version...), as saved.
    pub environment: Option<Value>,
}

/// A series the store holds, for a list to pick one from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeriesSummary {
    /// As `loadlab history` takes it: a tag, or `EXPERIMENT:variant`.
    pub spec: String,
    /// Its completed runs.
    pub runs: u64,
    /// How many distinct revisions they measured (a history needs two to say anything).
    pub revisions: u64,
    /// When its newest run started.
    pub last_started_at: String,
}

impl Store {
    /// Every tag, and every experiment's variant, with completed runs: most runs first (at
    /// most `limit` of each kind, so a page listing them stays bounded).
    pub fn series_list(&self, limit: usize) -> Result<Vec<SeriesSummary>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut out = Vec::new();
        for query in [
            "SELECT tag, count(*), count(DISTINCT revision), max(started_at) FROM runs \
             WHERE tag IS NOT NULL AND interrupted = 0 GROUP BY tag \
             ORDER BY count(*) DESC, tag LIMIT ?1",
            "SELECT e.name || ':' || r.variant, count(*), count(DISTINCT r.revision), \
             max(r.started_at) FROM runs r JOIN experiments e ON e.id = r.experiment_id \
             WHERE r.interrupted = 0 GROUP BY e.name, r.variant \
             ORDER BY count(*) DESC, e.name, r.variant LIMIT ?1",
        ] {
            let mut stmt = self.conn.prepare_cached(query)?;
            let rows = stmt.query_map([limit], |r| {
                Ok(SeriesSummary {
                    spec: r.get(0)?,
                    runs: r.get(1)?,
                    revisions: r.get(2)?,
                    last_started_at: r.get(3)?,
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// The completed runs of `series`, oldest first (interrupted runs measured less than
    /// they were asked to, so a history leaves them out); an error when there are none.
    pub fn series_runs(&self, series: &Series) -> Result<Vec<SeriesRun>> {
        let (condition, a, b) = match series {
            Series::Tag(tag) => ("tag = ?1 AND ?2 IS NULL", tag.as_str(), None),
            Series::Scenario(name) => ("scenario = ?1 AND ?2 IS NULL", name.as_str(), None),
            Series::Variant {
                experiment,
                variant,
            } => (
                "experiment_id IN (SELECT id FROM experiments WHERE name = ?1) AND variant = ?2",
                experiment.as_str(),
                Some(variant.as_str()),
            ),
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {ROW_COLUMNS}, environment_json FROM runs WHERE {condition} \
             AND interrupted = 0 ORDER BY id"
        ))?;
        let rows = stmt
            .query_map(rusqlite::params![a, b], |r| {
                Ok((
                    read_row(r)?,
                    r.get::<_, Option<String>>("environment_json")?,
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        if rows.is_empty() {
            return Err(match series {
                Series::Tag(tag) => StoreError::NoTag(tag.clone()),
                Series::Scenario(name) => StoreError::NoScenario(name.clone()),
                Series::Variant {
                    experiment,
                    variant,
                } => StoreError::EmptyVariant {
                    experiment: experiment.clone(),
                    variant: variant.clone(),
                },
            });
        }
        rows.into_iter()
            .map(|(row, environment)| {
                let environment = environment
                    .map(|t| serde_json::from_str(&t))
                    .transpose()
                    .map_err(|e| StoreError::Corrupt {
                        id: row.id,
                        why: format!("its environment is not JSON: {e}"),
                    })?;
                Ok(SeriesRun { row, environment })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::Series;

    #[test]
    fn a_colon_names_an_experiments_variant_else_a_tag() {
        assert_eq!(Series::parse("nightly"), Series::Tag("nightly".into()));
        assert_eq!(
            Series::parse("scenario=checkout"),
            Series::Scenario("checkout".into())
        );
        assert_eq!(
            Series::parse("portfolio:axum"),
            Series::Variant {
                experiment: "portfolio".into(),
                variant: "axum".into()
            }
        );
    }
}
