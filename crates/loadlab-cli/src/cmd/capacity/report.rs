//! The report of a capacity search or a sweep: the probes' table, the curve against load,
//! and the runs worth seeing over time.

use crate::output::write_atomically;
use anyhow::Context as _;
use loadlab_capacity::search::rate;
use loadlab_capacity::{CapacityReport, ProbeRecord};
use loadlab_engine::RunResult;
use loadlab_report::html::{self, Curve, Section};
use std::path::Path;

pub(super) enum ReportKind {
    Html,
    Markdown,
}

pub(super) fn report_kind(path: &Path) -> anyhow::Result<ReportKind> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") | Some("htm") => Ok(ReportKind::Html),
        Some("md") | Some("markdown") => Ok(ReportKind::Markdown),
        _ => anyhow::bail!("--report {}: name an .html or .md file", path.display()),
    }
}

/// The report: the probes' table, the curve against load, and the runs worth seeing over
/// time (a sweep's every load; a search's highest rate held and lowest failed).
pub(super) fn write_report(
    path: &Path,
    report: &CapacityReport,
    results: &[(ProbeRecord, RunResult)],
) -> anyhow::Result<()> {
    let out = match report_kind(path)? {
        ReportKind::Html => html_page(report, results, Vec::new())?,
        ReportKind::Markdown => {
            let section = section(report, Vec::new());
            let shown = shown_runs(report, results);
            let labelled: Vec<(&str, &RunResult)> =
                shown.iter().map(|(l, r)| (l.as_str(), *r)).collect();
            let mut out = Vec::new();
            let md = |s: &str| s.replace('|', "\\|");
            out.extend(format!("# {}\n\n", md(&section.title)).into_bytes());
            out.extend(format!("| {} |\n", section.columns.join(" | ")).into_bytes());
            out.extend(format!("|{}\n", "---|".repeat(section.columns.len())).into_bytes());
            for r in &section.rows {
                let cells: Vec<String> = r.iter().map(|c| md(c)).collect();
                out.extend(format!("| {} |\n", cells.join(" | ")).into_bytes());
            }
            out.push(b'\n');
            for n in &section.notes {
                out.extend(format!("{}\n\n", md(n)).into_bytes());
            }
            loadlab_report::markdown::render_runs(&labelled, &mut out)?;
            out
        }
    };
    write_atomically(path, &out)
        .with_context(|| format!("--report: cannot write {}", path.display()))
}

/// The HTML report of a search or sweep: `--report FILE.html`'s page, and `loadlab ui`'s
/// page of a stored one (the one renderer of both), `links` each probe's row's link (the
/// ui's to the probe's run page; none in a file).
pub(crate) fn html_page(
    report: &CapacityReport,
    results: &[(ProbeRecord, RunResult)],
    links: Vec<Option<String>>,
) -> std::io::Result<Vec<u8>> {
    let section = section(report, links);
    let shown = shown_runs(report, results);
    let labelled: Vec<(&str, &RunResult)> = shown.iter().map(|(l, r)| (l.as_str(), *r)).collect();
    let mut sorted: Vec<&ProbeRecord> = report.probes.iter().collect();
    sorted.sort_by(|a, b| a.load().total_cmp(&b.load()));
    let curve = Curve {
        load_label: if report.closed_loop() {
            "connections".into()
        } else {
            "offered requests/s".into()
        },
        open_loop: !report.closed_loop(),
        load: sorted.iter().map(|p| p.load()).collect(),
        achieved_per_s: sorted.iter().map(|p| p.measure.achieved_per_s).collect(),
        p50_us: sorted.iter().map(|p| p.measure.p50_us).collect(),
        p99_us: sorted.iter().map(|p| p.measure.p99_us).collect(),
        held: sorted.iter().map(|p| p.judgment.pass).collect(),
        marker: match (&report.finding, &report.knee) {
            (Some(loadlab_capacity::Finding::Capacity { estimate, .. }), _) => {
                Some(("capacity".into(), *estimate))
            }
            (_, Some(k)) => Some(("knee".into(), k.load)),
            _ => None,
        },
    };
    let mut out = Vec::new();
    html::render_curve_report(&labelled, &[section], &curve, &mut out)?;
    Ok(out)
}

/// The probes' table, titled, with the verdict and the objectives as its notes.
fn section(report: &CapacityReport, links: Vec<Option<String>>) -> Section {
    let (columns, rows) = report.table();
    let title = if report.kind == "capacity" {
        format!("Capacity of {}", report.url)
    } else {
        format!("Sweep of {}", report.url)
    };
    let notes = vec![
        report.verdict.clone(),
        format!(
            "Objectives: {}. Each probe warmed up {:.1} s, then measured {:.1} s.",
            report.objectives.join(", "),
            report.warmup_s,
            report.probe_s
        ),
    ];
    Section {
        title,
        columns,
        rows,
        notes,
        links,
    }
}

fn shown_runs<'a>(
    report: &CapacityReport,
    results: &'a [(ProbeRecord, RunResult)],
) -> Vec<(String, &'a RunResult)> {
    let label = |p: &ProbeRecord| {
        if report.closed_loop() {
            format!("{} connections", p.load())
        } else {
            format!("{}/s", rate(p.load()))
        }
    };
    if report.kind == "sweep" {
        return results.iter().map(|(p, r)| (label(p), r)).collect();
    }
    let held = results
        .iter()
        .filter(|(p, _)| p.judgment.pass)
        .max_by(|a, b| a.0.load().total_cmp(&b.0.load()));
    let failed = results
        .iter()
        .filter(|(p, _)| !p.judgment.pass)
        .filter(|(p, _)| held.is_none_or(|(h, _)| p.load() > h.load()))
        .min_by(|a, b| a.0.load().total_cmp(&b.0.load()));
    let mut out = Vec::new();
    if let Some((p, r)) = held {
        out.push((format!("{} (held)", label(p)), r));
    }
    if let Some((p, r)) = failed {
        out.push((format!("{} (failed)", label(p)), r));
    }
    out
}
