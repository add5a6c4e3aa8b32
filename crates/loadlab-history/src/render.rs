//! A history in words: the text `loadlab history` prints and the Markdown a pull request
//! comment takes (JSON is the [`History`] itself, serialised). This module must not compute
//! anything a reader could not check against the JSON.

use crate::analysis::{Change, Direction, History, MetricHistory, Newest, NewestCheck, Size};
use crate::metric::{Metric, Scale};
use std::fmt::Write as _;

/// A value in the metric's unit, short.
pub fn value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::P50 | Metric::P90 | Metric::P99 => {
            if v < 1_000.0 {
                format!("{v:.0} µs")
            } else if v < 1_000_000.0 {
                format!("{:.2} ms", v / 1e3)
            } else {
                format!("{:.2} s", v / 1e6)
            }
        }
        Metric::Rps => format!("{v:.0}/s"),
        Metric::ErrorRate => format!("{:.2}%", v * 100.0),
    }
}

/// `+30% [+27%, +33%]` for a ratio, `+1.20 pp [+0.80, +1.60]` for a difference.
pub fn size(s: &Size) -> String {
    let one = |v: f64| match s.scale {
        Scale::Ratio => format!("{:+.1}%", (v - 1.0) * 100.0),
        Scale::Difference => format!("{:+.2} pp", v * 100.0),
    };
    match s.interval {
        Some((lo, hi)) => format!("{} [{}, {}]", one(s.estimate), one(lo), one(hi)),
        None => format!("{} (too few runs for an interval)", one(s.estimate)),
    }
}

fn p(p: f64) -> String {
    if p < 0.0001 {
        "p<0.0001".into()
    } else if p < 0.01 {
        format!("p={p:.4}")
    } else {
        format!("p={p:.2}")
    }
}

fn short(revision: &str) -> &str {
    revision.get(..12).unwrap_or(revision)
}

fn change_line(m: &MetricHistory, c: &Change) -> String {
    let word = match c.direction {
        Direction::Worse => "worse",
        Direction::Better => "better",
    };
    format!(
        "{} {word} from {}: {} ({}; {} runs before, {} after; detector {})",
        m.metric.name(),
        short(&c.revision),
        size(&c.size),
        p(c.p_value),
        c.runs_before,
        c.runs_after,
        p(c.detector_p)
    )
}

/// The newest revision's verdict in one sentence.
pub fn newest_line(m: &MetricHistory, n: &NewestCheck) -> String {
    let name = m.metric.name();
    let rev = short(&n.revision);
    let against = match &n.baseline_from {
        Some(from) => format!(
            "the {} revisions since {} ({} runs)",
            n.baseline_revisions,
            short(from),
            n.baseline_runs
        ),
        None => "nothing".into(),
    };
    match &n.verdict {
        Newest::Regression { size: s, p_value } => format!(
            "{name} REGRESSED at {rev}: {} against {against} ({})",
            size(s),
            p(*p_value)
        ),
        Newest::Improvement { size: s, p_value } => format!(
            "{name} improved at {rev}: {} against {against} ({})",
            size(s),
            p(*p_value)
        ),
        Newest::Unchanged { size: s, .. } => format!(
            "{name} unchanged at {rev}: {} against {against}, no significant change",
            size(s)
        ),
        Newest::ContinuesEarlierChange { since, size: s, .. } => format!(
            "{name} at {rev}: the change began at {} ({} from there on against the revisions \
             before it), not at this revision",
            short(since),
            size(s)
        ),
        Newest::NoBaseline => format!(
            "{name} at {rev}: the first revision measured in its environment; nothing to \
             compare with"
        ),
        Newest::TooFewRuns {
            runs,
            baseline_runs,
        } => format!(
            "{name} at {rev}: {runs} runs against {baseline_runs} cannot reach the gate's \
             confidence; it decides once more runs precede this revision (or more of it are \
             saved)"
        ),
    }
}

/// Rows of the revisions table: every revision of any metric, in order.
fn rows(h: &History) -> Vec<(String, String, usize)> {
    let mut out: Vec<(String, String, usize)> = Vec::new();
    for m in &h.metrics {
        for r in &m.revisions {
            let key = (
                r.revision.clone(),
                r.first_started_at.clone(),
                r.environment,
            );
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out
}

/// One cell: median ±half the range as a share of it, `*` where a change point begins.
fn cell(m: &MetricHistory, key: &(String, String, usize)) -> String {
    let Some((i, r)) = m
        .revisions
        .iter()
        .enumerate()
        .find(|(_, r)| r.revision == key.0 && r.environment == key.2)
    else {
        return "–".into();
    };
    let spread = if r.median != 0.0 {
        format!(" ±{:.0}%", (r.max - r.min) / 2.0 / r.median.abs() * 100.0)
    } else {
        String::new()
    };
    let mark = if m.changes.iter().any(|c| c.index == i) {
        " *"
    } else {
        ""
    };
    format!("{}{spread}{mark}", value(m.metric, r.median))
}

pub fn text(h: &History) -> String {
    let mut out = String::new();
    let rows = rows(h);
    let _ = writeln!(
        out,
        "history of {}: {} revisions, {} environment{}",
        h.series,
        rows.len(),
        h.environments.len(),
        if h.environments.len() == 1 { "" } else { "s" }
    );
    if h.runs_without_revision > 0 {
        let _ = writeln!(
            out,
            "({} runs without a revision left out: save with --revision, in CI, or in a git checkout)",
            h.runs_without_revision
        );
    }
    let mut header = vec!["revision".to_string(), "first run".into(), "runs".into()];
    header.extend(h.metrics.iter().map(|m| m.metric.name().to_string()));
    let mut table = vec![header];
    let mut last_env = None;
    for key in &rows {
        if last_env.is_some() && last_env != Some(key.2) {
            table.push(vec![format!("-- environment: {}", h.environments[key.2])]);
        }
        last_env = Some(key.2);
        let runs = h
            .metrics
            .iter()
            .flat_map(|m| m.revisions.iter())
            .filter(|r| r.revision == key.0 && r.environment == key.2)
            .map(|r| r.runs.len())
            .max()
            .unwrap_or(0);
        let mut row = vec![
            short(&key.0).to_string(),
            key.1.get(..16).unwrap_or(&key.1).replace('T', " "),
            runs.to_string(),
        ];
        row.extend(h.metrics.iter().map(|m| cell(m, key)));
        table.push(row);
    }
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .filter(|r| r.len() > 1)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &table {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| match row.len() {
                1 => v.clone(),
                _ => format!("{v:<w$}", w = widths[c]),
            })
            .collect();
        let _ = writeln!(out, "  {}", line.join("  ").trim_end());
    }
    let _ = writeln!(
        out,
        "  (median of each revision's runs ±half their range; * a change point begins)"
    );
    let _ = writeln!(out, "\nchange points:");
    let changes: Vec<String> = h
        .metrics
        .iter()
        .flat_map(|m| m.changes.iter().map(move |c| change_line(m, c)))
        .collect();
    if changes.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in changes {
        let _ = writeln!(out, "  {c}");
    }
    if h.environments.len() > 1 {
        let _ = writeln!(
            out,
            "\nenvironments (each judged apart, so a move between machines is not a change):"
        );
        for (i, e) in h.environments.iter().enumerate() {
            let _ = writeln!(out, "  {}: {e}", i + 1);
        }
    }
    let _ = writeln!(out, "\nnewest revision:");
    for m in &h.metrics {
        if let Some(n) = &m.newest {
            let _ = writeln!(out, "  {}", newest_line(m, n));
        }
    }
    out
}

/// For a pull request comment: the verdicts first, the change points, then the revisions
/// folded away.
pub fn markdown(h: &History) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### loadlab history: `{}`\n", h.series);
    for m in &h.metrics {
        if let Some(n) = &m.newest {
            let icon = match n.verdict {
                Newest::Regression { .. } => "❌",
                Newest::Improvement { .. } => "✅",
                _ => "➖",
            };
            let _ = writeln!(out, "- {icon} {}", newest_line(m, n));
        }
    }
    let _ = writeln!(
        out,
        "\n| metric | from revision | change | p | runs before / after |\n|---|---|---|---|---|"
    );
    let mut any = false;
    for m in &h.metrics {
        for c in &m.changes {
            any = true;
            let _ = writeln!(
                out,
                "| {} | `{}` | {} {} | {} | {} / {} |",
                m.metric.name(),
                short(&c.revision),
                if c.direction == Direction::Worse {
                    "worse"
                } else {
                    "better"
                },
                size(&c.size),
                p(c.p_value),
                c.runs_before,
                c.runs_after
            );
        }
    }
    if !any {
        let _ = writeln!(out, "| – | – | no change point | – | – |");
    }
    let rows = rows(h);
    let _ = writeln!(
        out,
        "\n<details><summary>{} revisions</summary>\n",
        rows.len()
    );
    let names: Vec<&str> = h.metrics.iter().map(|m| m.metric.name()).collect();
    let _ = writeln!(
        out,
        "| revision | first run | {} |\n|---|---|{}",
        names.join(" | "),
        "---|".repeat(names.len())
    );
    for key in &rows {
        let cells: Vec<String> = h.metrics.iter().map(|m| cell(m, key)).collect();
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            short(&key.0),
            key.1.get(..16).unwrap_or(&key.1).replace('T', " "),
            cells.join(" | ")
        );
    }
    let _ = writeln!(out, "\n</details>");
    out
}
