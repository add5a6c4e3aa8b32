//! From the store's runs of a series to revisions in order: runs grouped by revision and
//! environment, each group placed at its first run's start, filtered by branch and `--since`.
//! A run saved without a revision has no place in a history and is counted, not guessed.
//!
//! The environment is a fingerprint of what changes performance without changing the code:
//! the CPU model, the kernel, the CPU governor, and loadlab's own version and commit. The
//! host name is left out on purpose: two CI machines of one type are one environment. This
//! module must not compute statistics.

use loadlab_store::{RunId, SeriesRun, Summary};
use serde_json::Value;

/// The environment fields a fingerprint is made of, in the order it lists them.
const FINGERPRINT_FIELDS: [(&str, &str); 5] = [
    ("cpu_model", "cpu"),
    ("kernel", "kernel"),
    ("governor", "governor"),
    ("loadlab_version", "loadlab"),
    ("git_commit", "loadlab commit"),
];

/// One revision as measured in one environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub revision: String,
    pub branch: Option<String>,
    /// The start of its first run (RFC 3339, UTC): where it sits in the history.
    pub first_started_at: String,
    /// Its environment's fingerprint (see the module comment).
    pub environment: String,
    /// Its runs, oldest first.
    pub runs: Vec<(RunId, Summary)>,
}

/// Which runs a history takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// Only runs saved with this branch.
    pub branch: Option<String>,
    /// A date (`2026-11-01`, or a full RFC 3339 time): revisions first measured then or
    /// later. Anything else is a revision (or a prefix of one, at least 4 characters): that
    /// revision and those after it.
    pub since: Option<String>,
}

/// The revisions of a series, in order, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    pub points: Vec<Point>,
    /// Completed runs saved without a revision (before schema 4, or with none known).
    pub without_revision: usize,
}

/// The fingerprint of a stored environment; `unknown` when none was stored.
pub fn fingerprint(environment: Option<&Value>) -> String {
    let Some(env) = environment else {
        return "unknown".into();
    };
    let parts: Vec<String> = FINGERPRINT_FIELDS
        .iter()
        .filter_map(|(key, label)| match env.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Some(format!("{label} {s}")),
            Some(Value::Number(n)) => Some(format!("{label} {n}")),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        "unknown".into()
    } else {
        parts.join(", ")
    }
}

/// Groups `runs` (as [`loadlab_store::Store::series_runs`] gives them) into revisions in
/// order. An error only for a `--since` revision that is not in the series.
pub fn assemble(runs: &[SeriesRun], filters: &Filters) -> Result<Assembled, String> {
    let mut without_revision = 0;
    let mut points: Vec<Point> = Vec::new();
    for run in runs {
        if filters.branch.is_some() && run.row.branch != filters.branch {
            continue;
        }
        let Some(revision) = run.row.revision.as_ref().filter(|r| !r.is_empty()) else {
            without_revision += 1;
            continue;
        };
        let environment = fingerprint(run.environment.as_ref());
        let started = run.row.started_at.clone();
        let entry = (run.row.id, run.row.summary.clone());
        match points
            .iter_mut()
            .find(|p| &p.revision == revision && p.environment == environment)
        {
            Some(p) => {
                if started < p.first_started_at {
                    p.first_started_at = started;
                }
                p.runs.push(entry);
            }
            None => points.push(Point {
                revision: revision.clone(),
                branch: run.row.branch.clone(),
                first_started_at: started,
                environment,
                runs: vec![entry],
            }),
        }
    }
    // Stable: revisions first measured at the same instant keep the order they were saved.
    points.sort_by(|a, b| a.first_started_at.cmp(&b.first_started_at));
    if let Some(since) = filters.since.as_deref() {
        points = apply_since(points, since)?;
    }
    Ok(Assembled {
        points,
        without_revision,
    })
}

fn apply_since(points: Vec<Point>, since: &str) -> Result<Vec<Point>, String> {
    let is_date = since.len() >= 10
        && since.as_bytes()[..10].iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if is_date {
        return Ok(points
            .into_iter()
            .filter(|p| p.first_started_at.as_str() >= since)
            .collect());
    }
    if since.len() < 4 {
        return Err(format!(
            "--since {since:?}: give a date (2026-11-01) or a revision (at least 4 characters of it)"
        ));
    }
    let Some(start) = points.iter().position(|p| p.revision.starts_with(since)) else {
        return Err(format!(
            "--since {since}: no revision of this series starts with it; see \
             `loadlab history SERIES` without --since for its revisions"
        ));
    };
    Ok(points.into_iter().skip(start).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprints_name_the_machine_and_loadlab_not_the_host() {
        let a = json!({"cpu_model": "EPYC 7763", "kernel": "6.1.0", "loadlab_version": "0.1.0",
                       "hostname": "ci-17"});
        let b = json!({"cpu_model": "EPYC 7763", "kernel": "6.1.0", "loadlab_version": "0.1.0",
                       "hostname": "ci-42"});
        assert_eq!(fingerprint(Some(&a)), fingerprint(Some(&b)));
        assert_eq!(
            fingerprint(Some(&a)),
            "cpu EPYC 7763, kernel 6.1.0, loadlab 0.1.0"
        );
        assert_eq!(fingerprint(None), "unknown");
        assert_eq!(fingerprint(Some(&json!({}))), "unknown");
    }

    #[test]
    fn since_takes_a_date_or_a_revision_and_refuses_the_rest() {
        let point = |rev: &str, at: &str| Point {
            revision: rev.into(),
            branch: None,
            first_started_at: at.into(),
            environment: "unknown".into(),
            runs: Vec::new(),
        };
        let points = vec![
            point("aaaa111", "2026-10-30T10:00:00Z"),
            point("bbbb222", "2026-11-01T10:00:00Z"),
            point("cccc333", "2026-11-02T10:00:00Z"),
        ];
        let revs = |ps: Vec<Point>| ps.into_iter().map(|p| p.revision).collect::<Vec<_>>();
        assert_eq!(
            revs(apply_since(points.clone(), "2026-11-01").unwrap()),
            ["bbbb222", "cccc333"]
        );
        assert_eq!(
            revs(apply_since(points.clone(), "cccc").unwrap()),
            ["cccc333"]
        );
        assert!(apply_since(points.clone(), "dddd")
            .unwrap_err()
            .contains("no revision"));
        assert!(apply_since(points, "cc")
            .unwrap_err()
            .contains("at least 4"));
    }
}
