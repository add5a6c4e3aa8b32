//! `loadlab ui`'s capacity searches and sweeps. `GET /capacity` lists those the store keeps
//! (target, date, capacity found, verdict, tag and revision), each linked to its page, then
//! the probes of searches kept before the store kept searches (their runs alone: the
//! consecutive runs of one `loadlab capacity`/`sweep` command line). `GET /capacity/ID` is
//! the search's report as `capacity --report FILE.html` writes it (one renderer,
//! `cmd::capacity::report::html_page`), each probe's row linked to its run's page.

use super::super::http::Body;
use super::runs::{run_cells, RUN_COLUMNS};
use super::shell::{self, Query};
use crate::cmd::capacity::{report::html_page, stored};
use hyper::Response;
use loadlab_report::html::escape_html;
use loadlab_store::{CapacityId, Filter, RunId, RunRow, Store};
use std::collections::HashSet;

/// The newest runs looked through for the probes of searches not kept whole.
const SCANNED: usize = 5000;
/// The newest searches listed.
const LISTED: usize = 500;

/// Whether a run's command line is a capacity search's or a sweep's (the subcommand is one
/// of the first words: global flags may come before it).
fn is_probe(r: &RunRow) -> bool {
    r.command
        .iter()
        .skip(1)
        .take(3)
        .any(|a| a == "capacity" || a == "sweep")
}

pub fn list(store: &Store, q: &Query) -> Response<Body> {
    let kept = match store.capacity_searches(LISTED) {
        Ok(rows) => rows,
        Err(e) => return shell::not_found(&format!("the store could not be read: {e}")),
    };
    let mut body = String::from(
        "<p class=\"hint\">Each search's page: its probes and their verdicts, throughput and \
         response time against load, as <code>loadlab capacity --report FILE.html</code> \
         writes it, each probe linked to its run.</p>\n",
    );
    if kept.is_empty() {
        body.push_str(
            "<p>No capacity search or sweep kept in this store yet (<code>loadlab capacity \
             URL</code> keeps one).</p>\n",
        );
    }
    let cell = |s: Option<&str>| s.map_or("–".into(), escape_html);
    let rows: Vec<Vec<String>> = kept
        .iter()
        .map(|r| {
            let m = &r.meta;
            let id = r.id.0.to_string();
            vec![
                format!(
                    "<a href=\"{}\">{id}</a>",
                    q.href(&format!("/capacity/{id}"), &[])
                ),
                escape_html(&m.kind),
                escape_html(&m.target_url),
                escape_html(m.started_at.get(..19).unwrap_or(&m.started_at)),
                m.capacity.map_or("–".into(), |c| {
                    format!("{}/s", loadlab_capacity::search::rate(c))
                }),
                escape_html(&m.verdict),
                cell(m.tag.as_deref()),
                cell(m.revision.as_deref().map(crate::cmd::runs::short_revision)),
                m.probe_runs.len().to_string(),
            ]
        })
        .collect();
    if !rows.is_empty() {
        body.push_str(&shell::table(
            &[
                "search", "kind", "target", "started", "capacity", "verdict", "tag", "revision",
                "probes",
            ],
            &rows,
        ));
    }
    let linked: HashSet<RunId> = kept
        .iter()
        .flat_map(|r| r.meta.probe_runs.iter().flatten().copied())
        .collect();
    body.push_str(&older_probes(store, q, &linked));
    shell::page(q, "Capacity searches", &body)
}

/// The probes of searches the store did not keep whole (kept before it could, or whose
/// search failed to be kept): runs of a capacity or sweep command line, grouped by it.
fn older_probes(store: &Store, q: &Query, linked: &HashSet<RunId>) -> String {
    let rows = match store.list_runs(&Filter {
        limit: Some(SCANNED),
        ..Filter::default()
    }) {
        Ok(rows) => rows,
        Err(e) => return format!("<p class=\"err\">{}</p>\n", escape_html(&e.to_string())),
    };
    // Newest first, as listed: a search's probes are the runs of one command line in a row.
    let mut searches: Vec<Vec<&RunRow>> = Vec::new();
    for r in rows
        .iter()
        .filter(|r| is_probe(r) && !linked.contains(&r.id))
    {
        match searches.last_mut() {
            Some(s) if s[0].command == r.command && s.last().is_some_and(|l| l.id.0 > r.id.0) => {
                s.push(r)
            }
            _ => searches.push(vec![r]),
        }
    }
    if searches.is_empty() {
        return String::new();
    }
    let mut body = String::from(
        "<h2>Probes of searches not kept whole</h2>\n<p class=\"hint\">Searches run before \
         this store kept them: it holds their probes' runs, not the search itself (its \
         objectives, each probe's judgment, the verdict and the curve). A search here is the \
         runs of one command line in a row.</p>\n",
    );
    for probes in &searches {
        let first = probes[0];
        body.push_str(&format!(
            "<h3>{} probes, tag {}</h3>\n<p><code>{}</code></p>\n",
            probes.len(),
            escape_html(first.tag.as_deref().unwrap_or("(none)")),
            escape_html(&first.command.join(" "))
        ));
        // Oldest probe first, as the search went.
        let rows: Vec<Vec<String>> = probes.iter().rev().map(|r| run_cells(q, r)).collect();
        body.push_str(&shell::table(&RUN_COLUMNS, &rows));
    }
    body
}

/// A kept search's page: the report's renderer, with the runs of its probes still in the
/// store (a deleted one leaves its row in the table, unlinked, and out of the charts).
pub fn page(store: &Store, id: CapacityId, q: &Query) -> Response<Body> {
    let rendered = (|| -> anyhow::Result<Vec<u8>> {
        let row = store.capacity_search(id)?;
        let report = stored::read(store, id)?;
        let mut results = Vec::new();
        let mut links = Vec::new();
        for (probe, run) in report.probes.iter().zip(&row.meta.probe_runs) {
            let held = run.and_then(|run| store.run(run).ok().map(|s| (run, s.result)));
            links.push(
                held.as_ref()
                    .map(|(run, _)| q.url(&format!("/run/{run}"), &[])),
            );
            if let Some((_, result)) = held {
                results.push((probe.clone(), result));
            }
        }
        Ok(html_page(&report, &results, links)?)
    })();
    match rendered {
        Ok(html) => shell::report_page(html),
        Err(e) => shell::not_found(&format!(
            "capacity search {id} could not be shown: {e:#} (the list is at /capacity)"
        )),
    }
}
