//! A scenario run's steps as a table: a row per step (and per run, when several), with its
//! requests, failures, latency, statuses, checks and bytes on the wire and decoded. The text
//! summary prints the same rows, aligned.

use super::{Run, Table};
use crate::format::{bytes, count, duration_us};
use loadlab_result::scenario::StepSummary;

/// The columns, and a row per step of every run that ran a scenario.
pub fn steps(runs: &[Run]) -> Table {
    let several = runs.len() > 1;
    let mut columns: Vec<String> = Vec::new();
    if several {
        columns.push("run".into());
    }
    columns.extend(
        [
            "step", "request", "passed", "failed", "p50", "p90", "p99", "max", "statuses",
            "failures", "received", "decoded", "encoding",
        ]
        .map(String::from),
    );
    let mut rows = Vec::new();
    for (label, r) in runs {
        let Some(scenario) = &r.scenario else {
            continue;
        };
        for step in &scenario.steps {
            let mut row = Vec::new();
            if several {
                row.push(label.to_string());
            }
            row.extend(step_cells(step));
            rows.push(row);
        }
        if let Some(it) = &scenario.iteration_us {
            let mut row = Vec::new();
            if several {
                row.push(label.to_string());
            }
            row.push("(iteration)".into());
            row.push(format!("{} steps", scenario.steps.len()));
            row.push(count(scenario.iterations - scenario.iterations_failed));
            row.push(count(scenario.iterations_failed));
            for v in [it.p50, it.p90, it.p99, it.max] {
                row.push(duration_us(v));
            }
            row.extend(std::iter::repeat_n(String::new(), 5));
            rows.push(row);
        }
    }
    Table {
        title: "Steps",
        columns,
        rows,
    }
}

fn step_cells(s: &StepSummary) -> Vec<String> {
    let mut cells = vec![
        s.name.clone(),
        s.request.clone(),
        count(s.completed),
        count(s.failed),
    ];
    match &s.latency_us {
        Some(l) => cells.extend([l.p50, l.p90, l.p99, l.max].map(duration_us)),
        None => cells.extend(std::iter::repeat_n("–".to_string(), 4)),
    }
    cells.push(
        s.status_codes
            .iter()
            .map(|(code, n)| format!("{code}: {}", count(*n)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let mut failures: Vec<String> = s
        .errors
        .iter()
        .filter(|(k, _)| k.as_str() != "check_failed")
        .map(|(k, n)| format!("{k}: {}", count(*n)))
        .collect();
    failures.extend(
        s.checks
            .iter()
            .filter(|c| c.failed > 0)
            .map(|c| format!("check_failed ({}): {}", c.check, count(c.failed))),
    );
    cells.push(failures.join(", "));
    cells.push(bytes(s.bytes.received as f64));
    cells.push(bytes(s.bytes.decoded as f64));
    cells.push(
        s.content_encodings
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
    );
    cells
}

/// A table's rows as aligned plain text, for a terminal.
pub fn aligned(table: &Table) -> String {
    let widths: Vec<usize> = (0..table.columns.len())
        .map(|c| {
            std::iter::once(&table.columns[c])
                .chain(table.rows.iter().map(|r| &r[c]))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&table.columns).chain(&table.rows) {
        let mut line = String::from(" ");
        for (cell, w) in row.iter().zip(&widths) {
            line.push(' ');
            line.push_str(cell);
            line.extend(std::iter::repeat_n(' ', w - cell.chars().count() + 1));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
