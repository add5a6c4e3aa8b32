//! `loadlab ui`'s runs: `GET /` lists the runs live on this machine (the registry's), then
//! the store's newest runs, filtered by `?tag=`, `?target=` (part of it), `?revision=` (its
//! start), `?since=` and `?until=` (days, `YYYY-MM-DD`), from a GET form; a second form picks
//! two runs to see side by side. A run being written into the store now (`--save`, by a
//! process alive) is said to be running; one whose writer was killed, as killed (this page
//! reads only: sealing it is for the commands that write). `GET /run/ID` is the run's page
//! as the offline HTML report renders it (a running or killed one's: its intervals so far).

use super::super::http::Body;
use super::registry::{self, LiveRun};
use super::shell::{self, Query};
use hyper::Response;
use loadlab_report::html::escape_html;
use loadlab_report::Exporter as _;
use loadlab_store::{Filter, RunId, RunRow, Store};
use std::collections::HashMap;

/// The newest runs the list shows.
const LISTED: usize = 500;

/// The filters, as the form names them.
const FILTERS: [(&str, &str, &str); 5] = [
    ("tag", "tag", "nightly"),
    ("target", "target contains", "/api"),
    ("revision", "revision starts", "1a2b3c"),
    ("since", "from day", "2026-11-01"),
    ("until", "to day", "2026-12-31"),
];

pub fn index(store: &Store, q: &Query) -> Response<Body> {
    for day in ["since", "until"] {
        if let Some(v) = q.get(day) {
            if !is_day(v) {
                return shell::bad_request(&format!(
                    "?{day}={}: give a day as YYYY-MM-DD, such as 2026-11-01",
                    v.escape_debug()
                ));
            }
        }
    }
    let filter = Filter {
        tag: q.get("tag").map(str::to_string),
        target: q.get("target").map(str::to_string),
        revision: q.get("revision").map(str::to_string),
        since: q.get("since").map(str::to_string),
        until: q.get("until").map(str::to_string),
        limit: Some(LISTED),
        ..Filter::default()
    };
    let rows = match store.list_runs(&filter) {
        Ok(rows) => rows,
        Err(e) => return shell::not_found(&format!("the store could not be read: {e}")),
    };
    let mut body = live_section(&registry::live_runs());
    body.push_str(&format!(
        "<form method=\"get\" action=\"/\">{}",
        q.hidden_token()
    ));
    for (name, label, example) in FILTERS {
        body.push_str(&format!(
            "<label>{label} <input name=\"{name}\" value=\"{}\" placeholder=\"{example}\" \
             size=\"12\"></label>",
            escape_html(q.get(name).unwrap_or(""))
        ));
    }
    body.push_str(&format!(
        "<button type=\"submit\">Filter</button> <a href=\"{}\">all</a></form>\n\
         <form method=\"get\" action=\"/compare\">{}<label>run <input name=\"a\" size=\"6\" \
         inputmode=\"numeric\"></label><label>beside run <input name=\"b\" size=\"6\" \
         inputmode=\"numeric\"></label><button type=\"submit\">Side by side</button></form>\n",
        q.href("/", &[]),
        q.hidden_token()
    ));
    let shown = match rows.len() {
        LISTED => format!("The newest {LISTED} runs that match."),
        1 => "1 run.".to_string(),
        n => format!("{n} runs."),
    };
    body.push_str(&format!("<p class=\"hint\">{shown}</p>\n"));
    let going = going(store);
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = run_cells(q, r);
            if let (Some(&(n, alive)), Some(status)) = (going.get(&r.id), cells.last_mut()) {
                *status = if alive {
                    format!("<strong>running now</strong>: {n} intervals so far")
                } else {
                    // Shown as it is: the page does not seal it (it only reads the store).
                    format!(
                        "<strong>killed while written</strong>: {n} intervals; the next \
                         command that writes to the store (<code>loadlab runs list</code>) \
                         keeps it as an interrupted, partial result"
                    )
                };
            }
            cells
        })
        .collect();
    body.push_str(&shell::table(&RUN_COLUMNS, &rows));
    shell::page(q, "Runs", &body)
}

/// The columns of [`run_cells`]' rows.
pub const RUN_COLUMNS: [&str; 8] = [
    "run",
    "started",
    "tag",
    "target",
    "revision",
    "requests/s",
    "p99",
    "status",
];

/// A run's row, as the run list and an experiment's runs show it.
pub fn run_cells(q: &Query, r: &RunRow) -> Vec<String> {
    let s = &r.summary;
    let id = r.id.0.to_string();
    vec![
        format!(
            "<a href=\"{}\">{id}</a>",
            q.href(&format!("/run/{id}"), &[])
        ),
        escape_html(&r.started_at),
        escape_html(r.tag.as_deref().unwrap_or("")),
        escape_html(&s.target_url),
        format!(
            "<code>{}</code>",
            escape_html(
                r.revision
                    .as_deref()
                    .map_or("", crate::cmd::runs::short_revision)
            )
        ),
        loadlab_report::rate(s.rps),
        shell::p99(s.latency_p99_us),
        r.status.as_str().replace('_', " "),
    ]
}

/// The runs going on now, each linked to its own page (on loopback: the registry keeps no
/// other); a page that needs its token (`--ui-token-file`) is not linked (the link would
/// answer 401: the registry does not keep the token), and its file is named instead.
fn live_section(live: &[LiveRun]) -> String {
    if live.is_empty() {
        return String::new();
    }
    let rows: Vec<Vec<String>> = live
        .iter()
        .map(|r| {
            let url = format!("http://{}/", r.addr);
            let page = match &r.token_file {
                None => format!("<a href=\"{url}\">{url}</a>", url = escape_html(&url)),
                Some(file) => format!(
                    "{url} needs its token: open {url}?token=TOKEN, with the token in \
                     <code>{file}</code>",
                    url = escape_html(&url),
                    file = escape_html(file)
                ),
            };
            vec![
                page,
                escape_html(&r.started_at),
                escape_html(&r.target),
                r.pid.to_string(),
                format!("<code>{}</code>", escape_html(&r.command)),
            ]
        })
        .collect();
    format!(
        "<section class=\"live\"><h2>Live now</h2>\n{}</section>\n",
        shell::table(&["page", "started", "target", "pid", "command"], &rows)
    )
}

/// The run's page: the offline HTML report of its stored result.
pub fn run_page(store: &Store, id: RunId) -> Response<Body> {
    let stored = match store.run(id) {
        Ok(s) => s,
        Err(e) => return shell::not_found(&format!("{e}")),
    };
    // A run still being written (`--save` streams it), or killed while it was and not yet
    // sealed: its intervals so far, merged as a killed run's are (read only: nothing is
    // sealed).
    let result = match going(store).contains_key(&id) {
        true => match loadlab_session::spill::stored::recover_run(store, id) {
            Ok(so_far) => so_far,
            Err(e) => return shell::not_found(&format!("run {id} is not finished: {e:#}")),
        },
        false => stored.result,
    };
    let mut page = Vec::new();
    if let Err(e) = loadlab_report::HtmlExporter.export(&result, &mut page) {
        return shell::not_found(&format!("run {} could not be rendered: {e}", id.0));
    }
    shell::report_page(page)
}

/// The runs streamed into the store and not finished, with the number of intervals they
/// wrote and whether their writer is alive (not: killed while it wrote, not yet sealed).
fn going(store: &Store) -> HashMap<RunId, (u64, bool)> {
    store
        .open_streams()
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            let alive = loadlab_session::spill::stored::writer_alive(&s.writer);
            (s.run, (s.intervals, alive))
        })
        .collect()
}

/// `YYYY-MM-DD` (the store compares the start's first ten characters with it).
fn is_day(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            _ => c.is_ascii_digit(),
        })
}
