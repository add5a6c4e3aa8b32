//! `loadlab ui`'s capacity searches and sweeps, as far as the store keeps them: it keeps each
//! probe's run (under the tag `capacity`, `sweep` or the one given), not the search itself
//! (its objectives, each probe's judgment, the verdict and the curve: `--report FILE` and
//! `--json` write those). `GET /capacity` lists the probes of the newest searches, a search
//! being the consecutive runs of one `loadlab capacity`/`sweep` command line, each probe
//! linked to its page.

use super::super::http::Body;
use super::runs::{run_cells, RUN_COLUMNS};
use super::shell::{self, Query};
use hyper::Response;
use loadlab_report::html::escape_html;
use loadlab_store::{Filter, RunRow, Store};

/// The newest runs looked through for probes.
const SCANNED: usize = 5000;

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
    let rows = match store.list_runs(&Filter {
        limit: Some(SCANNED),
        ..Filter::default()
    }) {
        Ok(rows) => rows,
        Err(e) => return shell::not_found(&format!("the store could not be read: {e}")),
    };
    // Newest first, as listed: a search's probes are the runs of one command line in a row.
    let mut searches: Vec<Vec<&RunRow>> = Vec::new();
    for r in rows.iter().filter(|r| is_probe(r)) {
        match searches.last_mut() {
            Some(s) if s[0].command == r.command && s.last().is_some_and(|l| l.id.0 > r.id.0) => {
                s.push(r)
            }
            _ => searches.push(vec![r]),
        }
    }
    let mut body = String::from(
        "<p class=\"hint\">The store keeps each probe's run, not the search itself: its \
         objectives, each probe's judgment, the verdict and the curve are in the report \
         <code>loadlab capacity --report FILE.html</code> writes. A search here is the runs \
         of one command line in a row.</p>\n",
    );
    if searches.is_empty() {
        body.push_str(&format!(
            "<p>No capacity search or sweep among the newest {SCANNED} runs.</p>\n"
        ));
    }
    for probes in &searches {
        let first = probes[0];
        body.push_str(&format!(
            "<h2>{} probes, tag {}</h2>\n<p><code>{}</code></p>\n",
            probes.len(),
            escape_html(first.tag.as_deref().unwrap_or("(none)")),
            escape_html(&first.command.join(" "))
        ));
        // Oldest probe first, as the search went.
        let rows: Vec<Vec<String>> = probes.iter().rev().map(|r| run_cells(q, r)).collect();
        body.push_str(&shell::table(&RUN_COLUMNS, &rows));
    }
    shell::page(q, "Capacity searches", &body)
}
