//! From the store's runs of a series to revisions in order: runs grouped by revision and
//! environment, each group placed at its first run's start, filtered by branch, `--since` and
//! `--last`.
//! A run saved without a revision has no place in a history and is counted, not guessed.
//!
//! The environment is a fingerprint of what changes performance without changing the code:
//! the CPU model, the kernel, the CPU governor, and loadlab's own version and commit. The
//! host name is left out on purpose: two CI machines of one type are one environment. This
//! module must not compute statistics.

use loadlab_store::{RunId, SeriesRun, Summary};
use serde_json::Value;
use std::collections::hash_map::{Entry, HashMap};

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

/// The revisions a history takes unless told (`--last`): the detector's time grows as the
/// square of a history's length (about 2 s for these on four metrics, with changes in them,
/// on a 2-core machine), and the newest revisions are the ones a gate asks about.
pub const LAST_DEFAULT: usize = 500;

/// The most `--last` takes, so time (about 15 s on four metrics) and memory (a change's
/// size comes from every pair of runs either side of it) stay bounded.
pub const LAST_MAX: usize = 2000;

/// Which runs a history takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filters {
    /// Only runs saved with this branch.
    pub branch: Option<String>,
    /// A date (`2026-11-01`, or a time in UTC, `2026-11-01T10:00:30Z`): revisions first
    /// measured then or later; an impossible one is an error. Anything else is a revision
    /// (or the start of just one, at least 4 characters): that revision and those after it.
    pub since: Option<String>,
    /// Only the newest this many revisions (after `since`); `None` for all.
    pub last: Option<usize>,
}

/// The revisions of a series, in order, and what was left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    pub points: Vec<Point>,
    /// Completed runs saved without a revision (before schema 4, or with none known).
    pub without_revision: usize,
    /// Older revisions left out by [`Filters::last`].
    pub left_out: usize,
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
    // (revision, environment) to its index in `points`: a long history is grouped in one
    // pass, not by a search of every point for each run.
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
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
        match seen.entry((revision.clone(), environment)) {
            Entry::Occupied(at) => {
                let p = &mut points[*at.get()];
                if started < p.first_started_at {
                    p.first_started_at = started;
                }
                p.runs.push(entry);
            }
            Entry::Vacant(slot) => {
                points.push(Point {
                    revision: revision.clone(),
                    branch: run.row.branch.clone(),
                    first_started_at: started,
                    environment: slot.key().1.clone(),
                    runs: vec![entry],
                });
                slot.insert(points.len() - 1);
            }
        }
    }
    // Stable: revisions first measured at the same instant keep the order they were saved.
    points.sort_by(|a, b| a.first_started_at.cmp(&b.first_started_at));
    if let Some(since) = filters.since.as_deref() {
        points = apply_since(points, since)?;
    }
    let left_out = filters
        .last
        .map_or(0, |last| points.len().saturating_sub(last));
    points.drain(..left_out);
    Ok(Assembled {
        points,
        without_revision,
        left_out,
    })
}

fn apply_since(points: Vec<Point>, since: &str) -> Result<Vec<Point>, String> {
    if let Some(from) = since_time(since)? {
        return Ok(points
            .into_iter()
            .filter(|p| p.first_started_at.as_str() >= from)
            .collect());
    }
    if since.len() < 4 {
        return Err(format!(
            "--since {:?}: give a date (2026-11-01) or a revision (at least 4 characters of it)",
            since
        ));
    }
    // A revision named in full is that one, even if it begins another (tag v1.0, v1.0.1).
    let mut candidates: Vec<&str> = Vec::new();
    for p in &points {
        if p.revision.starts_with(since) && !candidates.contains(&p.revision.as_str()) {
            candidates.push(&p.revision);
        }
    }
    let chosen = match candidates.as_slice() {
        [] => {
            return Err(format!(
                "--since {}: no revision of this series starts with it; see \
                 `loadlab history SERIES` without --since for its revisions",
                since.escape_debug()
            ))
        }
        [one] => one.to_string(),
        _ if candidates.contains(&since) => since.to_string(),
        many => {
            const SHOWN: usize = 10;
            let mut listed: Vec<String> = many
                .iter()
                .take(SHOWN)
                .map(|r| r.escape_debug().to_string())
                .collect();
            if many.len() > SHOWN {
                listed.push(format!("and {} more", many.len() - SHOWN));
            }
            return Err(format!(
                "--since {}: {} revisions of this series start with it ({}); give more of \
                 the one you mean",
                since.escape_debug(),
                many.len(),
                listed.join(", ")
            ));
        }
    };
    let start = points
        .iter()
        .position(|p| p.revision == chosen)
        .expect("a candidate is a point's revision");
    Ok(points.into_iter().skip(start).collect())
}

/// `--since` as a time to compare stored start times (`2026-11-01T10:00:00.000Z`, UTC) with:
/// `None` when it is no date at all (then it is a revision), an error when it looks like
/// one but is not a real date or time (`2026-13-45`, `2026-02-30`, `2026-11-01T25:00`).
fn since_time(since: &str) -> Result<Option<&str>, String> {
    let b = since.as_bytes();
    let looks_like_date = b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        });
    if !looks_like_date {
        return Ok(None);
    }
    let number = |range: std::ops::Range<usize>| since[range].parse::<u32>().unwrap_or(0);
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => {
            return Err(format!(
                "--since {}: there is no month {month}; give a date as YYYY-MM-DD (2026-11-01)",
                since.escape_debug()
            ))
        }
    };
    if !(1..=days).contains(&day) {
        return Err(format!(
            "--since {}: {year}-{month:02} has days 1 to {days}; give a date as YYYY-MM-DD \
             (2026-11-01)",
            since.escape_debug()
        ));
    }
    // The stored times are UTC and compared as text: a trailing Z adds nothing.
    let time = since[10..].strip_suffix('Z').unwrap_or(&since[10..]);
    if time.is_empty() || valid_time(time) {
        return Ok(Some(since.strip_suffix('Z').unwrap_or(since)));
    }
    Err(format!(
        "--since {}: give a date (2026-11-01) or a time in UTC (2026-11-01T10:00, \
         2026-11-01T10:00:30Z)",
        since.escape_debug()
    ))
}

/// `THH:MM`, `THH:MM:SS` or `THH:MM:SS.fraction`, within a day.
fn valid_time(time: &str) -> bool {
    let Some(clock) = time.strip_prefix('T') else {
        return false;
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let parts: Vec<&str> = hms.split(':').collect();
    let field = |s: &str, below: u32| {
        s.len() == 2 && s.bytes().all(|c| c.is_ascii_digit()) && s.parse::<u32>().unwrap() < below
    };
    matches!(parts.len(), 2 | 3)
        && field(parts[0], 24)
        && parts[1..].iter().all(|p| field(p, 60))
        && (parts.len() == 3 || !clock.contains('.'))
        && !fraction.is_empty()
        && fraction.bytes().all(|c| c.is_ascii_digit())
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

    fn point(rev: &str, at: &str) -> Point {
        Point {
            revision: rev.into(),
            branch: None,
            first_started_at: at.into(),
            environment: "unknown".into(),
            runs: Vec::new(),
        }
    }

    fn revs(points: Vec<Point>) -> Vec<String> {
        points.into_iter().map(|p| p.revision).collect()
    }

    #[test]
    fn since_takes_a_date_or_a_revision_and_refuses_the_rest() {
        let points = vec![
            point("aaaa111", "2026-10-30T10:00:00.000Z"),
            point("bbbb222", "2026-11-01T10:00:00.000Z"),
            point("cccc333", "2026-11-02T10:00:00.500Z"),
        ];
        let ok = |since: &str| revs(apply_since(points.clone(), since).unwrap());
        assert_eq!(ok("2026-11-01"), ["bbbb222", "cccc333"]);
        assert_eq!(ok("2026-11-01T10:00"), ["bbbb222", "cccc333"]);
        assert_eq!(ok("2026-11-01T10:00:01Z"), ["cccc333"]);
        assert_eq!(
            ok("2026-11-02T10:00:00Z"),
            ["cccc333"],
            "the Z does not hide .500"
        );
        assert_eq!(ok("2028-02-29"), Vec::<String>::new());
        assert_eq!(ok("cccc"), ["cccc333"]);
        let err = |since: &str| apply_since(points.clone(), since).unwrap_err();
        assert!(err("dddd").contains("no revision"));
        assert!(err("cc").contains("at least 4"));
        // Looks like a date, is not one: an error, not a date nothing is after.
        for (bad, says) in [
            ("2026-13-45", "no month 13"),
            ("2026-00-10", "no month 0"),
            ("2026-02-29", "days 1 to 28"),
            ("2026-04-31", "days 1 to 30"),
            ("2026-11-00", "days 1 to 30"),
            ("2026-11-01T25:00", "time in UTC"),
            ("2026-11-01T10:60", "time in UTC"),
            ("2026-11-01T10:00+02:00", "time in UTC"),
            ("2026-11-01x", "time in UTC"),
            ("2026-11-01T10:00.5", "time in UTC"),
        ] {
            assert!(err(bad).contains(says), "{bad}: {}", err(bad));
        }
    }

    /// A prefix that begins several revisions is refused, naming them (escaped); a
    /// revision named in full is taken even if it begins another.
    #[test]
    fn an_ambiguous_since_names_the_candidates() {
        let points = vec![
            point("v1.0.0-beta.1", "2026-11-01T10:00:00Z"),
            point("v1.0.0-beta.2", "2026-11-02T10:00:00Z"),
            point("v1.0.0-beta.2", "2026-11-02T11:00:00Z"),
            point("v1.0.0-beta.2\u{1b}[2J", "2026-11-03T10:00:00Z"),
        ];
        let e = apply_since(points.clone(), "v1.0.0-beta").unwrap_err();
        assert!(
            e.contains(
                "3 revisions of this series start with it (v1.0.0-beta.1, \
                        v1.0.0-beta.2, v1.0.0-beta.2\\u{1b}[2J)"
            ),
            "{e}"
        );
        assert!(!e.chars().any(char::is_control), "{e:?}");
        assert_eq!(
            revs(apply_since(points.clone(), "v1.0.0-beta.2").unwrap()),
            ["v1.0.0-beta.2", "v1.0.0-beta.2", "v1.0.0-beta.2\u{1b}[2J"]
        );
        assert_eq!(revs(apply_since(points, "v1.0.0-beta.1").unwrap()).len(), 4);
    }
}
