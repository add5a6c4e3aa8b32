//! The history page (`loadlab history --html`): one self-contained file with a chart per
//! metric over revisions (the median of each revision's runs, their range, change points and
//! environment changes marked), drawn by the report's own script and uPlot, and each
//! revision's runs listed under an anchor a chart's point links to.
//!
//! This module writes the document; the figures come from the caller (the history crate's
//! analysis, converted by the CLI), so this crate stays below it. It must not reach the
//! network or put a caller's string into the page unescaped.

use super::assets::{content_security_policy, REPORT_CSS, REPORT_JS, UPLOT_CSS, UPLOT_JS};
use super::page::{escape_html, json_for_script};
use serde::Serialize;
use std::io::{self, Write};

/// One metric over revisions.
#[derive(Debug, Clone, Serialize)]
pub struct HistoryChart {
    pub title: String,
    /// `us` (drawn as durations on a log axis), `requests/s`, or `fraction` (as %).
    pub unit: String,
    pub revisions: Vec<String>,
    pub median: Vec<f64>,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    /// Where a change point begins (an index into `revisions`) and its label.
    pub changes: Vec<(usize, String)>,
    /// Indices into `revisions` whose environment differs from the revision before.
    pub environment_changes: Vec<usize>,
}

/// A revision's runs, for the list the charts link to.
#[derive(Debug, Clone, Serialize)]
pub struct RevisionRuns {
    pub revision: String,
    pub first_started_at: String,
    pub runs: Vec<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryPage {
    pub title: String,
    /// The newest revision's verdict, a line per metric.
    pub verdicts: Vec<String>,
    pub charts: Vec<HistoryChart>,
    pub revisions: Vec<RevisionRuns>,
    pub environments: Vec<String>,
}

/// What the report's script (js/) reads: no runs, the history's charts.
#[derive(Serialize)]
struct Data<'a> {
    runs: [(); 0],
    time_range_s: [f64; 2],
    history: &'a [HistoryChart],
    /// Revision → its row's anchor, so a chart's click finds the row.
    anchors: Vec<(&'a str, String)>,
}

fn anchor(i: usize) -> String {
    format!("rev-{i}")
}

pub fn render_history(page: &HistoryPage, out: &mut dyn Write) -> io::Result<()> {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"generator\" content=\"loadlab\">\n\
         <title>{title}</title>\n<link rel=\"icon\" href=\"data:,\">\n\
         <style>{UPLOT_CSS}</style>\n<style>{REPORT_CSS}</style>\n</head>\n<body>\n\
         <header class=\"top\"><div class=\"wrap\">\n<p class=\"eyebrow\">loadlab history</p>\n\
         <h1>{title}</h1>\n",
        csp = content_security_policy(),
        title = escape_html(&page.title),
    )?;
    let bad = page.verdicts.iter().any(|v| v.contains("REGRESSED"));
    write!(
        out,
        "<div class=\"verdict {}\">",
        if bad { "bad" } else { "ok" }
    )?;
    for v in &page.verdicts {
        write!(out, "<p>{}</p>", escape_html(v))?;
    }
    out.write_all(b"</div>\n</div></header>\n<main class=\"wrap\">\n")?;
    out.write_all(
        b"<noscript><p class=\"note\">The charts need JavaScript; the list below has every \
          revision's runs.</p></noscript>\n<div id=\"charts\"></div>\n",
    )?;
    if page.environments.len() > 1 {
        out.write_all(b"<h2>Environments</h2>\n<p class=\"hint\">Each is judged apart: a move between machines is marked (dotted), never a change point.</p>\n<ol>")?;
        for e in &page.environments {
            write!(out, "<li>{}</li>", escape_html(e))?;
        }
        out.write_all(b"</ol>\n")?;
    }
    out.write_all(
        b"<h2>Revisions</h2>\n<p class=\"hint\">Oldest first; `loadlab runs show ID` prints a run.</p>\n\
          <div class=\"scroll\"><table id=\"revisions\"><thead><tr><th>revision</th><th>first run</th>\
          <th>runs</th></tr></thead><tbody>\n",
    )?;
    for (i, r) in page.revisions.iter().enumerate() {
        let runs: Vec<String> = r
            .runs
            .iter()
            .map(|id| format!("<code>loadlab runs show {id}</code>"))
            .collect();
        writeln!(
            out,
            "<tr id=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
            anchor(i),
            escape_html(&r.revision),
            escape_html(&r.first_started_at),
            runs.join(" ")
        )?;
    }
    out.write_all(b"</tbody></table></div>\n</main>\n")?;
    let data = Data {
        runs: [],
        time_range_s: [0.0, 1.0],
        history: &page.charts,
        anchors: page
            .revisions
            .iter()
            .enumerate()
            .map(|(i, r)| (r.revision.as_str(), anchor(i)))
            .collect(),
    };
    let json = serde_json::to_string(&data).map_err(io::Error::other)?;
    write!(
        out,
        "<script type=\"application/json\" id=\"data\">{}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{REPORT_JS}</script>\n</body>\n</html>\n",
        json_for_script(&json)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_escapes_what_it_is_given_and_lists_every_run() {
        let page = HistoryPage {
            title: "loadlab history: <nightly>".into(),
            verdicts: vec!["p99 REGRESSED at r2: +30% & more".into()],
            charts: vec![HistoryChart {
                title: "p99".into(),
                unit: "us".into(),
                revisions: vec!["r1".into(), "r2</script>".into()],
                median: vec![1000.0, 1300.0],
                min: vec![990.0, 1290.0],
                max: vec![1010.0, 1310.0],
                changes: vec![(1, "r2 +30%".into())],
                environment_changes: vec![],
            }],
            revisions: vec![
                RevisionRuns {
                    revision: "r1".into(),
                    first_started_at: "2026-11-01T00:00:00Z".into(),
                    runs: vec![1, 2],
                },
                RevisionRuns {
                    revision: "r2</script>".into(),
                    first_started_at: "2026-11-02T00:00:00Z".into(),
                    runs: vec![3],
                },
            ],
            environments: vec!["cpu A".into()],
        };
        let mut out = Vec::new();
        render_history(&page, &mut out).unwrap();
        let html = String::from_utf8(out).unwrap();
        assert!(html.contains("&lt;nightly&gt;"));
        assert!(html.contains("+30% &amp; more"));
        assert_eq!(
            html.matches("</script>").count(),
            3,
            "data, uPlot, the report's script"
        );
        assert!(html.contains("<tr id=\"rev-1\"><td><code>r2&lt;/script&gt;</code>"));
        for id in 1..=3 {
            assert!(html.contains(&format!("loadlab runs show {id}</code>")));
        }
        assert!(html.contains("verdict bad"));
    }
}
