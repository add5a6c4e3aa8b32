//! `loadlab ui`'s histories: `GET /histories` lists the series the store holds (each tag, and
//! each experiment's variant, with completed runs); `GET /history?series=SPEC` is the page
//! `loadlab history SPEC --html FILE` writes (a chart per metric over revisions, the change
//! points marked, the newest revision's verdict): the history crate's analysis, the report
//! crate's page, `cmd::history::page_of` between them. `?since=`, `?branch=` and `?last=` as
//! the command's flags.

use super::super::http::Body;
use super::shell::{self, Query};
use hyper::Response;
use loadlab_history::analysis::Options;
use loadlab_history::series::{LAST_DEFAULT, LAST_MAX};
use loadlab_history::{Filters, Metric};
use loadlab_report::html::escape_html;
use loadlab_store::Store;

/// The most series of each kind listed.
const LISTED: usize = 500;

pub fn list(store: &Store, q: &Query) -> Response<Body> {
    let series = match store.series_list(LISTED) {
        Ok(s) => s,
        Err(e) => return shell::not_found(&format!("the store could not be read: {e}")),
    };
    let rows: Vec<Vec<String>> = series
        .iter()
        .map(|s| {
            vec![
                format!(
                    "<a href=\"{}\">{}</a>",
                    q.href("/history", &[("series", &s.spec)]),
                    escape_html(&s.spec)
                ),
                s.runs.to_string(),
                s.revisions.to_string(),
                escape_html(&s.last_started_at),
            ]
        })
        .collect();
    let mut body = String::from(
        "<p class=\"hint\">A series' runs read over the revisions they measured, with the \
         change points found in them, as <code>loadlab history SERIES --html FILE</code> \
         draws it. A history needs runs saved with their revision (<code>--revision</code>, \
         the CI's commit, or the git checkout).</p>\n",
    );
    if rows.is_empty() {
        body.push_str("<p>No tagged or experiment runs in this store yet.</p>\n");
    }
    body.push_str(&shell::table(
        &["series", "runs", "revisions", "newest run"],
        &rows,
    ));
    shell::page(q, "Histories", &body)
}

pub fn page(store: &Store, q: &Query) -> Response<Body> {
    let Some(spec) = q.get("series") else {
        return shell::bad_request(
            "give a series: /history?series=TAG (or EXPERIMENT:variant, or scenario=NAME); \
             /histories lists them",
        );
    };
    let last = match q.get("last").map(str::parse::<usize>) {
        None => LAST_DEFAULT,
        Some(Ok(n)) if (1..=LAST_MAX).contains(&n) => n,
        Some(_) => {
            return shell::bad_request(&format!(
                "?last=: give a number of revisions from 1 to {LAST_MAX}"
            ))
        }
    };
    let filters = Filters {
        branch: q.get("branch").map(str::to_string),
        since: q.get("since").map(str::to_string),
        last: Some(last),
    };
    let history = loadlab_history::history(
        store,
        spec,
        &filters,
        &Metric::DEFAULT,
        &Options::default(),
        &mut |_, _, _| {},
    );
    let history = match history {
        Ok(h) => h,
        Err(e) => return shell::not_found(&format!("{e} (/histories lists the series)")),
    };
    let mut html = Vec::new();
    match loadlab_report::html::history::render_history(
        &crate::cmd::history::page_of(&history),
        &mut html,
    ) {
        Ok(()) => shell::report_page(html),
        Err(e) => shell::not_found(&format!("the history could not be drawn: {e}")),
    }
}
