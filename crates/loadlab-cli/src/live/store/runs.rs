//! `loadlab ui`'s runs: `GET /` lists the runs live on this machine (the registry's: first
//! those keeping their runs in this store, then the others apart), then the store's newest
//! runs, filtered by `?tag=`, `?target=` (part of it), `?revision=` (its start), `?since=`
//! and `?until=` (days, `YYYY-MM-DD`), from a GET form; a second form picks two runs to see
//! side by side. A run being written into the store now (`--save`, by a process alive) is
//! said to be running, with its live page when it has one; one whose writer was killed, as
//! killed (this page reads only: sealing it is for the commands that write). `GET /run/ID`
//! is the run's page as the offline HTML report renders it (a running or killed one's: its
//! intervals so far).

use super::super::http::Body;
use super::registry::{self, LiveRun};
use super::shell::{self, Query};
use hyper::Response;
use loadlab_report::html::escape_html;
use loadlab_result::RunResult;
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
    let going = going(store);
    let live = registry::live_runs();
    let mut body = live_sections(store, q, &live, &going);
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
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = run_cells(q, r);
            if let (Some(g), Some(status)) = (going.get(&r.id), cells.last_mut()) {
                let n = g.intervals;
                *status = if g.alive {
                    let page = live.iter().find(|l| l.pid == g.pid);
                    format!(
                        "<strong>running now</strong>: {n} intervals so far{}",
                        page.map_or(String::new(), |l| format!("; live page: {}", page_cell(l)))
                    )
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

/// A live run's page, linked (on loopback: the registry keeps no other); a page that needs
/// its token (`--ui-token-file`) is not linked (the link would answer 401: the registry does
/// not keep the token), and its file is named instead.
fn page_cell(r: &LiveRun) -> String {
    let url = escape_html(&format!("http://{}/", r.addr));
    match &r.token_file {
        None => format!("<a href=\"{url}\">{url}</a>"),
        Some(file) => format!(
            "{url} needs its token: open {url}?token=TOKEN, with the token in <code>{}</code>",
            escape_html(file)
        ),
    }
}

/// The runs going on now, in two sections: those keeping their runs in this store (named
/// so in their entry, or writing one of its runs now), with their run here when it has
/// begun; then the other runs live on this machine, with the store each keeps its runs in.
/// A person looking at one store sees its runs first, and the others as what they are.
fn live_sections(
    store: &Store,
    q: &Query,
    live: &[LiveRun],
    going: &HashMap<RunId, Going>,
) -> String {
    let here = registry::store_key(store.path());
    let writing = |r: &LiveRun| {
        let mut runs: Vec<RunId> = going
            .iter()
            .filter(|(_, g)| g.alive && g.pid == r.pid)
            .map(|(id, _)| *id)
            .collect();
        runs.sort();
        runs
    };
    let (ours, others): (Vec<&LiveRun>, Vec<&LiveRun>) = live
        .iter()
        .partition(|r| r.store.as_deref() == Some(here.as_str()) || !writing(r).is_empty());
    let cells = |r: &LiveRun, last: String| {
        vec![
            page_cell(r),
            escape_html(&r.started_at),
            escape_html(&r.target),
            r.pid.to_string(),
            format!("<code>{}</code>", escape_html(&r.command)),
            last,
        ]
    };
    let columns = |last| ["page", "started", "target", "pid", "command", last];
    let mut out = String::new();
    if !ours.is_empty() {
        let rows: Vec<Vec<String>> = ours
            .iter()
            .map(|r| {
                let runs = writing(r);
                let row = match runs.as_slice() {
                    [] => "no run here yet: listed below once its load starts".to_string(),
                    ids => {
                        let ids: Vec<String> = ids
                            .iter()
                            .map(|id| {
                                let href = q.href(&format!("/run/{id}"), &[]);
                                format!("<a href=\"{href}\">run {id}</a>")
                            })
                            .collect();
                        format!("{}, being written", ids.join(", "))
                    }
                };
                cells(r, row)
            })
            .collect();
        out.push_str(&format!(
            "<section class=\"live\"><h2>Live now, saving to this store</h2>\n{}</section>\n",
            shell::table(&columns("in this store"), &rows)
        ));
    }
    if !others.is_empty() {
        let rows: Vec<Vec<String>> = others
            .iter()
            .map(|r| {
                let kept = r.store.as_deref().map_or("–".to_string(), |s| {
                    format!("<code>{}</code>", escape_html(s))
                });
                cells(r, kept)
            })
            .collect();
        out.push_str(&format!(
            "<section class=\"live\"><h2>Other runs live on this machine</h2>\n\
             <p class=\"hint\">Not saving to this store: their runs are kept in the store \
             named, or in none (–).</p>\n{}</section>\n",
            shell::table(&columns("saving to"), &rows)
        ));
    }
    out
}

/// The run's page: the offline HTML report of its stored result; a run not finished with a
/// note on top saying so (its verdict reads "interrupted", as its result so far is marked).
pub fn run_page(store: &Store, id: RunId) -> Response<Body> {
    let (result, unfinished) = match shown(store, id) {
        Ok(shown) => shown,
        Err(e) => return shell::not_found(&e),
    };
    let note = unfinished.map(|what| loadlab_report::html::Section {
        title: "Not final".into(),
        notes: vec![match what {
            STILL_WRITTEN => format!(
                "Run {id} {what}: its verdict below says interrupted because the run is not \
                 over yet; reload the page for the intervals since."
            ),
            _ => format!(
                "Run {id} {what}: the next command that writes to the store (loadlab runs \
                 list) keeps them as its interrupted, partial result."
            ),
        }],
        ..Default::default()
    });
    let mut page = Vec::new();
    let runs = [(result.started_at.as_str(), &result)];
    let sections: Vec<_> = note.into_iter().collect();
    if let Err(e) = loadlab_report::html::render_report(&runs, &sections, &mut page) {
        return shell::not_found(&format!("run {} could not be rendered: {e}", id.0));
    }
    shell::report_page(page)
}

/// What [`shown`] says of a run whose writer is alive.
const STILL_WRITTEN: &str = "is still being written (its intervals so far)";

/// A run as the pages show it, and, for one not finished, what it is: its stored result; a
/// run still being written (`--save` streams it), or killed while it was and not yet sealed,
/// has only its header stored (no interval): its intervals so far, merged as a killed run's
/// are (read only: nothing is sealed). The error names the run.
pub fn shown(store: &Store, id: RunId) -> Result<(RunResult, Option<&'static str>), String> {
    let stored = store.run(id).map_err(|e| e.to_string())?;
    match going(store).get(&id) {
        None => Ok((stored.result, None)),
        Some(g) => match loadlab_session::spill::stored::recover_run(store, id) {
            Ok(so_far) => Ok((
                so_far,
                Some(match g.alive {
                    true => STILL_WRITTEN,
                    false => "was killed while it was written (the intervals it wrote)",
                }),
            )),
            Err(e) => Err(format!("run {id} is not finished: {e:#}")),
        },
    }
}

/// A run streamed into the store and not finished.
struct Going {
    /// The intervals it wrote so far.
    intervals: u64,
    /// Whether its writer is alive (not: killed while it wrote, not yet sealed).
    alive: bool,
    /// Its writer's process, as the live runs' entries name theirs.
    pid: u32,
}

/// The runs streamed into the store and not finished.
fn going(store: &Store) -> HashMap<RunId, Going> {
    store
        .open_streams()
        .unwrap_or_default()
        .into_iter()
        .map(|s| {
            let alive = loadlab_session::spill::stored::writer_alive(&s.writer);
            let going = Going {
                intervals: s.intervals,
                alive,
                pid: s.writer.pid,
            };
            (s.run, going)
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
