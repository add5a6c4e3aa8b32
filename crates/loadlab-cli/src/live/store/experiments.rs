//! `loadlab ui`'s experiments: `GET /experiments` lists them (newest first, with their
//! status and runs); `GET /experiment/ID` is the experiment's report as `loadlab report
//! NAME -o FILE.html` writes it (each arm's repetitions merged, the comparisons on top: one
//! renderer, `cmd::report::html_page`); `GET /compare?a=ID&b=ID` two runs side by side as
//! `loadlab report --compare A B` writes them (both runs' figures and charts, and the
//! difference).

use super::super::http::Body;
use super::shell::{self, Query};
use crate::cmd::report::{experiment_arms, html_page, two_arms};
use hyper::Response;
use loadlab_report::html::escape_html;
use loadlab_store::{ExperimentId, ExperimentStatus, RunId, Store};

/// The newest experiments listed (each costs a query of its runs).
const LISTED: usize = 500;

pub fn list(store: &Store, q: &Query) -> Response<Body> {
    let experiments = match store.experiments() {
        Ok(e) => e,
        Err(e) => return shell::not_found(&format!("the store could not be read: {e}")),
    };
    let mut rows = Vec::new();
    for e in experiments.iter().take(LISTED) {
        let runs = store.experiment_runs(e.id).unwrap_or_default();
        let done = runs.values().flatten().filter(|r| !r.interrupted).count();
        let id = e.id.0.to_string();
        rows.push(vec![
            format!(
                "<a href=\"{}\">{id}</a>",
                q.href(&format!("/experiment/{id}"), &[])
            ),
            escape_html(&e.name),
            e.status.as_str().to_string(),
            escape_html(&e.created_at),
            runs.keys()
                .map(|v| escape_html(v))
                .collect::<Vec<_>>()
                .join(", "),
            done.to_string(),
            escape_html(&e.file),
        ]);
    }
    let mut body = String::from(
        "<p class=\"hint\">Each experiment's page: its arms, their repetitions merged, and \
         the comparisons, as <code>loadlab report NAME -o report.html</code> writes them.</p>\n",
    );
    if rows.is_empty() {
        body.push_str("<p>No experiments in this store yet (<code>loadlab experiment FILE</code> runs one).</p>\n");
    }
    body.push_str(&shell::table(
        &[
            "experiment",
            "name",
            "status",
            "started",
            "arms",
            "runs",
            "file",
        ],
        &rows,
    ));
    shell::page(q, "Experiments", &body)
}

pub fn page(store: &Store, id: ExperimentId) -> Response<Body> {
    let stored = match store.experiment(id) {
        Ok(e) => e,
        Err(e) => {
            return shell::not_found(&format!("{e} (the list of experiments is at /experiments)"))
        }
    };
    // The comparison of an experiment still going (or stopped) is of the runs so far.
    let caveat = match stored.status {
        ExperimentStatus::Complete => None,
        ExperimentStatus::Running => Some(
            "Not final: the experiment is still running (or was killed); this compares the \
             runs stored so far.",
        ),
        ExperimentStatus::Interrupted => Some(
            "Not final: the experiment was stopped before its last run (`loadlab experiment \
             FILE --resume` goes on); this compares the runs stored.",
        ),
    };
    let rendered = crate::cmd::runs::read_experiment(store, &stored).and_then(|e| {
        let comparisons = crate::cmd::experiment::compare(&e.experiment, &e.plan, &e.by_arm);
        let arms = experiment_arms(&e.plan, &e.by_arm)?;
        Ok(html_page(&arms, &comparisons, caveat)?)
    });
    match rendered {
        Ok(html) => shell::report_page(html),
        Err(e) => shell::not_found(&format!("experiment {} could not be shown: {e:#}", id.0)),
    }
}

/// Two runs side by side: `?a=ID&b=ID`, A the control.
pub fn compare(store: &Store, q: &Query) -> Response<Body> {
    let mut ids = Vec::new();
    for name in ["a", "b"] {
        match q.get(name).map(str::parse::<i64>) {
            Some(Ok(id)) => ids.push(RunId(id)),
            Some(Err(_)) | None => {
                return shell::bad_request(&format!(
                    "give two run ids: /compare?a=ID&b=ID (?{name}= is missing or not a number)"
                ))
            }
        }
    }
    // A run not finished as its own page shows it (its intervals so far, not the header
    // its row holds until it ends, which has none), and the comparison said to be not final.
    let mut runs = Vec::new();
    let mut unfinished = Vec::new();
    for id in &ids {
        match super::runs::shown(store, *id) {
            Ok((result, what)) => {
                runs.push(result);
                if let Some(what) = what {
                    unfinished.push(format!("run {id} {what}"));
                }
            }
            Err(e) => return shell::not_found(&e),
        }
    }
    let caveat = (!unfinished.is_empty()).then(|| format!("Not final: {}.", unfinished.join("; ")));
    let (a, b) = (format!("run {}", ids[0].0), format!("run {}", ids[1].0));
    let rendered = two_arms((&a, &runs[..1]), (&b, &runs[1..]))
        .and_then(|(arms, comparisons)| Ok(html_page(&arms, &comparisons, caveat.as_deref())?));
    match rendered {
        Ok(html) => shell::report_page(html),
        Err(e) => shell::not_found(&format!("{a} and {b} could not be compared: {e:#}")),
    }
}
