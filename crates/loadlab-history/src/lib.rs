//! Which change made it slower: a series of stored runs (a tag, an experiment's variant)
//! read as a history over the revisions they measured, the change points in it, and the
//! verdict on the newest revision that `loadlab history --fail-on regression` gates on.
//!
//! # Layout
//!
//! - [`provenance`]: which revision and branch a run measured (flag, CI variables, git),
//!   decided from lookups the caller hands in.
//! - [`series`]: the store's runs grouped into revisions in order, one per environment.
//! - [`metric`]: the metrics followed, their sense and scale.
//! - [`edivisive`]: the detector, E-Divisive means with a permutation test; pure.
//! - [`analysis`]: medians per revision, change points per environment, their sizes with
//!   intervals (`loadlab-compare`'s Hodges-Lehmann and Mann-Whitney), the newest verdict.
//! - [`render`](mod@render): the history as text and as Markdown.
//!
//! The store is this crate's only input ([`history`]); it must not run load, print, or
//! know the command line. The HTML page is the report crate's, fed by the CLI.

pub mod analysis;
pub mod edivisive;
pub mod metric;
pub mod provenance;
pub mod render;
pub mod series;

pub use analysis::{
    analyse, analyse_with_progress, Change, Direction, History, MetricHistory, Newest, NewestCheck,
};
pub use metric::Metric;
pub use series::Filters;

use loadlab_store::{Series, Store, StoreError};

/// Why a history could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A filter that cannot be read or selects nothing; the text names the fix.
    #[error("{0}")]
    Filter(String),
}

/// The history of `spec` (a tag, or `EXPERIMENT:variant`) in `store`, on `metrics`;
/// `progress(revisions, metric, k)` as the analysis starts on the `k`th of them.
pub fn history(
    store: &Store,
    spec: &str,
    filters: &Filters,
    metrics: &[Metric],
    opts: &analysis::Options,
    progress: &mut dyn FnMut(usize, Metric, usize),
) -> Result<History, HistoryError> {
    let runs = store.series_runs(&Series::parse(spec))?;
    let assembled = series::assemble(&runs, filters).map_err(HistoryError::Filter)?;
    if assembled.points.is_empty() {
        // What the user typed, escaped as it is shown back.
        let spec = spec.escape_debug();
        let why = match (&filters.branch, &filters.since) {
            (Some(b), _) if runs.iter().all(|r| r.row.branch.as_ref() != Some(b)) => {
                format!(
                    "no run of {spec} was saved on branch {}; drop --branch or check it",
                    b.escape_debug()
                )
            }
            (_, Some(since)) => {
                format!("no revision of {spec} since {}", since.escape_debug())
            }
            _ => format!(
                "none of the {} runs of {spec} knows its revision: save runs with \
                 --revision REV (CI variables such as GITHUB_SHA and a git checkout are read \
                 by themselves)",
                runs.len()
            ),
        };
        return Err(HistoryError::Filter(why));
    }
    let revisions = assembled.points.len();
    let mut history = analyse_with_progress(
        spec,
        &assembled.points,
        assembled.without_revision,
        metrics,
        opts,
        &mut |metric, k| progress(revisions, metric, k),
    );
    history.revisions_left_out = assembled.left_out;
    Ok(history)
}
