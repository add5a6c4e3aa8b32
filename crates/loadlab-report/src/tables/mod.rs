//! The report's content as tables, shared by the Markdown and HTML exports so that both say
//! the same thing: what ran and where, the summary, failures, generator health, the first
//! requests, the server, verdicts, the fleet's path check, warnings, and the timeline.
//!
//! Several runs side by side: tables of figures get a column per run, lists get a `run`
//! column. Cells are plain text with units, NOT escaped: each renderer escapes for its own
//! syntax, since much of this text (URLs, error details, verdicts, commands) comes from the
//! server or the user. This module must not know about Markdown or HTML.

mod measured;
mod path_check;
mod setup;
pub mod steps;

use crate::format::duration_us;
use loadlab_result::{LatencySummary, RunResult};
use measured::{failures, first_requests, summary, timeline};
use setup::{configuration, environment, generator, server};

/// A run to report, with the label that tells it apart from the others.
pub type Run<'a> = (&'a str, &'a RunResult);

/// One table: a title, column headings and rows of plain-text cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub title: &'static str,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Every table of the report, in reading order; tables with nothing to say are left out.
pub fn tables(runs: &[Run]) -> Vec<Table> {
    let mut out = vec![
        summary(runs),
        steps::steps(runs),
        failures(runs),
        configuration(runs),
        environment(runs),
        generator(runs),
    ];
    out.extend(first_requests(runs));
    out.extend(server(runs));
    out.push(listing(runs, "Verdicts", "verdict", |r| r.verdicts.clone()));
    out.push(path_check::path_check(runs));
    out.push(listing(runs, "Warnings", "warning", |r| r.warnings.clone()));
    out.push(timeline(runs));
    out.retain(|t| !t.rows.is_empty());
    out
}

/// A table of figures: a row per metric, a column per run; rows no run has are left out.
struct Figures<'r> {
    runs: &'r [Run<'r>],
    table: Table,
}

impl<'r> Figures<'r> {
    fn new(title: &'static str, runs: &'r [Run<'r>]) -> Self {
        let mut columns = vec![String::new()];
        if runs.len() == 1 {
            columns.push("value".into());
        } else {
            columns.extend(runs.iter().map(|(label, _)| label.to_string()));
        }
        Figures {
            runs,
            table: Table {
                title,
                columns,
                rows: Vec::new(),
            },
        }
    }

    fn row(&mut self, metric: &str, cell: impl Fn(&RunResult) -> Option<String>) {
        let cells: Vec<Option<String>> = self.runs.iter().map(|(_, r)| cell(r)).collect();
        if cells.iter().any(Option::is_some) {
            let mut row = vec![metric.to_string()];
            row.extend(cells.into_iter().map(|c| c.unwrap_or_else(|| "–".into())));
            self.table.rows.push(row);
        }
    }

    fn latency(&mut self, name: &str, summary: impl Fn(&RunResult) -> Option<&LatencySummary>) {
        type Stat = fn(&LatencySummary) -> f64;
        let stats: [(&str, Stat); 10] = [
            ("mean", |l| l.mean),
            ("min", |l| l.min),
            ("p50", |l| l.p50),
            ("p75", |l| l.p75),
            ("p90", |l| l.p90),
            ("p95", |l| l.p95),
            ("p99", |l| l.p99),
            ("p99.9", |l| l.p99_9),
            ("p99.99", |l| l.p99_99),
            ("max", |l| l.max),
        ];
        for (stat, value) in stats {
            self.row(&format!("{name} {stat}"), |r| {
                summary(r).map(|l| duration_us(value(l)))
            });
        }
    }
}

/// A list (verdicts, warnings): a row per item, with a run column when there are several.
fn listing(
    runs: &[Run],
    title: &'static str,
    heading: &str,
    items: impl Fn(&RunResult) -> Vec<String>,
) -> Table {
    let mut table = list_table(runs, title, &[heading]);
    for (label, r) in runs {
        for item in items(r) {
            let mut row = run_cell(runs, label);
            row.push(item);
            table.rows.push(row);
        }
    }
    table
}

fn list_table(runs: &[Run], title: &'static str, headings: &[&str]) -> Table {
    let mut columns = run_cell(runs, "run");
    columns.extend(headings.iter().map(|h| h.to_string()));
    Table {
        title,
        columns,
        rows: Vec::new(),
    }
}

/// The run's label as the first cell, when there is more than one run.
fn run_cell(runs: &[Run], label: &str) -> Vec<String> {
    if runs.len() > 1 {
        vec![label.to_string()]
    } else {
        Vec::new()
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}

/// A command line as one string, quoting the words a shell would split or expand.
pub fn shell_words(words: &[String]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_are_quoted_for_a_shell() {
        let words = ["loadlab", "-H", "A: b", "it's", ""].map(String::from);
        assert_eq!(shell_words(&words), r"loadlab -H 'A: b' 'it'\''s' ''");
    }
}
