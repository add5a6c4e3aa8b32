//! Comparisons as people and programs read them: a terminal table in the form of post 000's
//! (metric, control, test, change, interval, verdict), Markdown, CSV (long form: one row per
//! comparison and metric) and JSON. Text only; colours are the CLI's.

use crate::analysis::{median, verdict_words, Comparison, Row};
use crate::metrics;
use std::fmt::Write as _;

/// The output formats of `loadlab compare --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
}

impl Format {
    pub fn parse(raw: &str) -> Result<Format, String> {
        match raw {
            "text" | "txt" => Ok(Format::Text),
            "markdown" | "md" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(format!(
                "unknown format {other:?}: use text, markdown, csv or json"
            )),
        }
    }
}

pub fn render(comparisons: &[Comparison], format: Format) -> String {
    match format {
        Format::Text => text(comparisons),
        Format::Markdown => markdown(comparisons),
        Format::Csv => csv(comparisons),
        Format::Json => serde_json::to_string_pretty(comparisons).expect("plain data") + "\n",
    }
}

/// The arm's median and its spread, e.g. `6,322/s (6,210-6,401)`.
fn arm_cell(row: &Row, values: &[f64]) -> String {
    let unit = metrics::metric(row.metric).expect("known").unit;
    let Some(m) = median(values) else {
        return "-".into();
    };
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    if values.len() > 1 && hi > lo {
        format!(
            "{} ({}–{})",
            metrics::format(unit, m),
            metrics::bare(unit, lo),
            metrics::bare(unit, hi)
        )
    } else {
        metrics::format(unit, m)
    }
}

fn change(row: &Row) -> (String, String) {
    match &row.comparison {
        Some(c) => (
            c.ratio.map_or("-".into(), |r| signed(r - 1.0)),
            c.ci.map_or("-".into(), |(lo, hi)| {
                format!("[{}, {}]", signed(lo - 1.0), signed(hi - 1.0))
            }),
        ),
        None => ("-".into(), "-".into()),
    }
}

fn signed(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

/// A row's label; the share beyond a cliff names its threshold.
fn label(row: &Row) -> String {
    match &row.cliff {
        Some(f) => format!(
            "beyond {} (the cliff)",
            metrics::duration_us(f.threshold_us)
        ),
        None => row.label.to_string(),
    }
}

fn rows(c: &Comparison) -> Vec<[String; 6]> {
    c.rows
        .iter()
        .map(|row| {
            let (change, interval) = change(row);
            [
                label(row),
                arm_cell(row, &row.control_values),
                arm_cell(row, &row.test_values),
                change,
                interval,
                verdict_words(row),
            ]
        })
        .collect()
}

fn header(c: &Comparison) -> [String; 6] {
    let n = |r: &[Row], control: bool| {
        r.first().map_or(0, |r| {
            if control {
                r.control_values.len()
            } else {
                r.test_values.len()
            }
        })
    };
    [
        "metric".into(),
        format!("{} (control, n={})", c.control, n(&c.rows, true)),
        format!("{} (test, n={})", c.test, n(&c.rows, false)),
        "change".into(),
        "95% interval".into(),
        "verdict".into(),
    ]
}

fn footnotes(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for s in &c.startup {
        let mut line = format!("{}: ", s.arm);
        match (s.ready_s_median, s.ready_s_max) {
            (Some(m), Some(x)) => {
                let _ = write!(
                    line,
                    "started in {:.0} ms (median; max {:.0} ms)",
                    m * 1e3,
                    x * 1e3
                );
            }
            _ => line.push_str("not launched by loadlab"),
        }
        if let (Some(f), Some(r)) = (s.first_p50_us_median, s.rest_p50_us_median) {
            let _ = write!(
                line,
                "; first 100 requests p50 {} against {} after",
                metrics::duration_us(f),
                metrics::duration_us(r)
            );
        }
        let _ = write!(
            line,
            "; cold start flagged in {} of {} runs",
            s.cold_starts, s.runs
        );
        out.push(line);
    }
    for n in &c.noise {
        out.push(format!("noisy: {n}"));
    }
    for p in &c.paths {
        out.push(format!(
            "path: {p} (the path check before the runs): these figures may be the path's, \
             not the server's"
        ));
    }
    if let Some(note) = crate::analysis::inconclusive_note(c) {
        out.push(note);
    }
    out
}

/// The method, once under all tables.
pub fn method_note() -> &'static str {
    "The unit is the run: each arm's runs give one value per metric. Change is the \
     Hodges-Lehmann estimate of the ratio test/control on log values, with its exact \
     distribution-free 95% interval; verdicts come from the exact Mann-Whitney U test, \
     Holm-adjusted across every comparison in a metric family (service: requests/s, p50, \
     p90, p99; server: CPU, memory, bytes; health: p99.9, errors, loadlab's CPU). \"~\" is \
     no significant difference; \"equivalent\" means the whole interval lies within the \
     margin. A percentile on a cliff (a gap between a fast and a slow mode, its tail share \
     within 2x of the share beyond the gap, or its runs on both sides) gets no verdict: which \
     side it fell on is not a speed; the share of requests beyond the cliff (one threshold for \
     both arms, from their pooled histograms) is tested in its place, in the service family. \
     Do not re-run until a difference turns significant: decide the runs first."
}

/// One comparison as plain cells, for other renderers (the HTML report): a title, the
/// header, the rows and the footnotes.
pub fn plain(c: &Comparison) -> (String, Vec<String>, Vec<Vec<String>>, Vec<String>) {
    (
        format!("{} against {}", c.test, c.control),
        header(c).to_vec(),
        rows(c).into_iter().map(|r| r.to_vec()).collect(),
        footnotes(c),
    )
}

fn text(comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for c in comparisons {
        let mut table = vec![header(c)];
        table.extend(rows(c));
        let widths: Vec<usize> = (0..6)
            .map(|i| {
                table
                    .iter()
                    .map(|r| r[i].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let _ = writeln!(out, "{} against {}", c.test, c.control);
        for (i, r) in table.iter().enumerate() {
            let mut line = String::new();
            for (j, cell) in r.iter().enumerate() {
                if j == 5 {
                    line.push_str(cell);
                } else {
                    let pad = widths[j] - cell.chars().count();
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 2));
                }
            }
            let _ = writeln!(out, "  {}", line.trim_end());
            if i == 0 {
                let total: usize = widths.iter().sum::<usize>() + 10;
                let _ = writeln!(out, "  {}", "-".repeat(total.min(160)));
            }
        }
        for f in footnotes(c) {
            let _ = writeln!(out, "  {f}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", wrap(method_note(), 96));
    out
}

fn wrap(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for word in text.split_whitespace() {
        if line + word.len() + 1 > width && line > 0 {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += word.len();
    }
    out
}

/// Markdown cell text: pipes escaped, no line breaks, no HTML.
fn md(cell: &str) -> String {
    cell.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

fn markdown(comparisons: &[Comparison]) -> String {
    let mut out = String::new();
    for c in comparisons {
        let _ = writeln!(out, "### {} against {}\n", md(&c.test), md(&c.control));
        let h = header(c);
        let _ = writeln!(
            out,
            "| {} |",
            h.iter().map(|s| md(s)).collect::<Vec<_>>().join(" | ")
        );
        let _ = writeln!(out, "|---|---:|---:|---:|---|---|");
        for r in rows(c) {
            let _ = writeln!(
                out,
                "| {} |",
                r.iter().map(|s| md(s)).collect::<Vec<_>>().join(" | ")
            );
        }
        out.push('\n');
        for f in footnotes(c) {
            let _ = writeln!(out, "- {}", md(&f));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", method_note());
    out
}

/// RFC 4180: quoted when it holds a comma, a quote or a line break.
fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn csv(comparisons: &[Comparison]) -> String {
    let mut out = String::from(
        "control,test,metric,family,control_n,control_median,test_n,test_median,ratio,ci_low,ci_high,p_value,p_adjusted,verdict\n",
    );
    let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for c in comparisons {
        for row in &c.rows {
            let cmp = row.comparison.as_ref();
            let fields = [
                csv_cell(&c.control),
                csv_cell(&c.test),
                row.metric.to_string(),
                format!("{:?}", row.family).to_lowercase(),
                row.control_values.len().to_string(),
                num(median(&row.control_values)),
                row.test_values.len().to_string(),
                num(median(&row.test_values)),
                num(cmp.and_then(|c| c.ratio)),
                num(cmp.and_then(|c| c.ci.map(|ci| ci.0))),
                num(cmp.and_then(|c| c.ci.map(|ci| ci.1))),
                num(cmp.and_then(|c| c.p_value)),
                num(cmp.and_then(|c| c.p_adjusted)),
                csv_cell(&verdict_words(row)),
            ];
            let _ = writeln!(out, "{}", fields.join(","));
        }
    }
    out
}
