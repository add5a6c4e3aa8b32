//! The HTML report: one self-contained file a person can open offline and forward. Charts of
//! requests/s and response-time percentiles over time, the server's CPU and memory on the same
//! time axis (the cursor moves on all of them at once), the latency distribution as
//! HdrHistogram plots it, then the same tables as the Markdown report. Several runs overlay with
//! [`render_runs`]; [`HtmlExporter`] is the one-run case.
//!
//! Why uPlot for the charts: it is small (about 50 KB minified, so the page stays light),
//! draws on a canvas fast enough for thousands of points, has cursor sync across charts and
//! log axes built in, needs no other library, and is MIT-licensed. It is vendored at a pinned
//! version and embedded; nothing is fetched, and the page's Content-Security-Policy forbids
//! fetching anything.
//!
//! Layout:
//! - [`data`]: what the charts plot, prepared in Rust (the percentile curve decoded from the
//!   histogram, series per run, the server's samples thinned).
//! - [`history`]: the page of `loadlab history --html`, a chart per metric over revisions.
//! - [`series`]: the server's own metrics (`--server-metrics`, `--query`), a chart per
//!   selector or query.
//! - `page`: the document, its header and tables, and all escaping.
//! - `assets`: the embedded uPlot, the report's script, `report.css`, and the policy's script
//!   hashes.
//! - `js/*.js` (one inline script, [`REPORT_JS`], a file per concept: state, formats, a chart's
//!   frame, a run's charts, the curve against load, history, drawing): draws the charts from
//!   the embedded data, inserting text only as text; the live page of a run (`loadlab run
//!   --ui`) and `loadlab ui` embed the same script, and the live page calls its `render` with
//!   [`data::chart_data`]'s output as intervals arrive (one renderer for all).
//!
//! This module must not reach the network, and must not put a result's strings into the page
//! unescaped.

mod assets;
pub mod data;
pub mod history;
mod page;
pub mod series;

pub use assets::{
    content_security_policy, REPORT_CSS, REPORT_JS, UPLOT_CSS, UPLOT_JS, UPLOT_VERSION,
};
pub use data::Curve;
pub use page::{escape_html, json_for_script};

use crate::tables::Run;
use crate::Exporter;
use loadlab_result::RunResult;
use std::io::{self, Write};

/// The single-run HTML report (format `html`, files ending in `.html`).
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn name(&self) -> &'static str {
        "html"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        render_runs(&[(result.started_at.as_str(), result)], out)
    }
}

/// Writes one page for several runs, each named by its label: their timelines and
/// distributions overlaid on the same charts, their tables side by side (a column per run).
/// With one run, the labels stay out of the charts' legends.
pub fn render_runs(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    render_report(runs, &[], out)
}

/// A table the caller adds above the charts (a comparison of arms), as plain text: the page
/// escapes every title, cell and note.
#[derive(Debug, Clone, Default)]
pub struct Section {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
    /// Each row's link, by row (shorter than `rows`, or `None`, for rows without one): its
    /// first cell is made a link to this page of the same site (a path beginning with one
    /// `/`, such as `loadlab ui`'s `/run/42`; anything else is left as text).
    pub links: Vec<Option<String>>,
}

/// [`render_runs`] with sections of the caller's above the charts.
pub fn render_report(runs: &[Run], sections: &[Section], out: &mut dyn Write) -> io::Result<()> {
    render(runs, sections, None, out)
}

/// A capacity search's or a sweep's report: throughput and response time against load
/// first, then the sections, then the given runs over time.
pub fn render_curve_report(
    runs: &[Run],
    sections: &[Section],
    curve: &Curve,
    out: &mut dyn Write,
) -> io::Result<()> {
    render(runs, sections, Some(curve.clone()), out)
}

fn render(
    runs: &[Run],
    sections: &[Section],
    curve: Option<Curve>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut data = data::chart_data(runs);
    data.curve = curve;
    let json = serde_json::to_string(&data).map_err(io::Error::other)?;
    page::write_page(runs, sections, &json, out)
}
