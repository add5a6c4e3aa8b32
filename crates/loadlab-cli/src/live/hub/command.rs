//! The live page of a command that makes many runs (`capacity`, `sweep`, `experiment`): its
//! plan, a row per step (a probe judged, an experiment's run started then finished), what
//! the steps say so far (marked not final until the command ends), and, over a fleet, each
//! generator's last interval. Each run's own intervals are the hub's as for `loadlab run`:
//! a new run's start begins its figures anew (a `run` event tells the page to clear).
//!
//! Memory: [`MAX_ROWS`] rows and one interval per generator at most. The rows' cells are
//! made by the command (text: the page sets them as text, never as markup).

use super::{Event, Hub};
use loadlab_result::{IntervalSummary, RunResult};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};

/// Rows kept: far more than a search's probes or most experiments' runs; the oldest go first.
pub const MAX_ROWS: usize = 2_000;

/// What the command tells the page, besides its runs' intervals.
#[derive(Clone)]
pub enum Update {
    /// What will run (sent once, before the first run).
    Plan(Box<Plan>),
    /// A step started or ended: a row with the key of an earlier one replaces it.
    Step(Box<Row>, Option<Box<SoFar>>),
    /// What the steps say now (the final answer once the command ends).
    SoFar(Box<SoFar>),
    /// A run of the command ended: its failures by class, and whether it was stopped.
    RunEnded(Box<RunResult>),
    /// Generator `part` of a fleet finished an interval of the run going on.
    Part(usize, Box<IntervalSummary>),
    /// The fleet's generators' names, by part.
    Generators(Vec<String>),
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Plan {
    /// `capacity`, `sweep` or `experiment`.
    pub kind: String,
    /// The plan in a few lines (objectives, arms, blocks).
    pub lines: Vec<String>,
    /// The rows' column names.
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// A row with the same key replaces this one (a run started, then finished).
    pub key: String,
    pub cells: Vec<String>,
    /// `running`, `pass`, `fail`, `other` or `done`: how the page marks the row.
    pub state: String,
    /// The step as the command's document has it (a capacity probe's record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SoFar {
    pub title: String,
    pub text: String,
    /// The command has ended and this is its answer; until then it is marked not final.
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// The command's part of the hub.
#[derive(Debug, Default, Serialize)]
pub struct State {
    pub plan: Option<Plan>,
    pub rows: VecDeque<Row>,
    pub so_far: Option<SoFar>,
    /// Each generator's last interval in the run going on.
    pub parts: BTreeMap<usize, IntervalSummary>,
    /// A fleet's generators' names, by part (as its file names them).
    pub generators: Vec<String>,
    /// Runs started so far.
    pub runs: u64,
}

#[derive(Serialize)]
struct StepEvent<'a> {
    row: &'a Row,
    so_far: Option<&'a SoFar>,
}

#[derive(Serialize)]
struct PartEvent<'a> {
    part: usize,
    name: Option<&'a String>,
    last: &'a IntervalSummary,
}

#[derive(Serialize)]
struct RunEvent<'a> {
    run: u64,
    target: Option<String>,
    errors: &'a super::Errors,
}

impl State {
    fn upsert(&mut self, row: Row) {
        match self.rows.iter_mut().rev().find(|r| r.key == row.key) {
            Some(kept) => *kept = row,
            None => {
                if self.rows.len() >= MAX_ROWS {
                    self.rows.pop_front();
                }
                self.rows.push_back(row);
            }
        }
    }
}

impl Hub {
    /// The command's plan, rows, answer so far and generators (as the terminal draws them).
    pub fn command_state(&self) -> &State {
        &self.command
    }

    /// A run's start (its header): the page told its target (a page opened before the run
    /// started has none yet: a fleet's takes seconds to start). For a command of many runs,
    /// the figures of the one before are let go and the page told to clear its charts.
    pub(super) fn start_run(&mut self, header: RunResult) -> Option<Event> {
        let again = self.header.is_some();
        self.header = Some(header);
        self.command.runs += 1;
        // (A fleet's generators' first intervals may come before the merged run's start.)
        if again {
            self.command.parts.clear();
            self.window.clear();
            self.coarse.clear();
            self.coarse_group = 0;
            self.histogram = None;
            self.offered_weighted = 0.0;
            self.server_cpu_s = (0.0, 0.0);
            self.since = Default::default();
            self.errors = Default::default();
            self.load_ended = false;
        }
        let json = serde_json::to_string(&RunEvent {
            run: self.command.runs,
            target: self.target(),
            errors: &self.errors,
        })
        .unwrap_or_default();
        Some(self.emit("run", &json))
    }

    pub(super) fn command(&mut self, update: Update) -> Option<Event> {
        let c = &mut self.command;
        let (kind, json) = match update {
            Update::Plan(plan) => {
                c.plan = Some(*plan);
                ("plan", serde_json::to_string(&c.plan))
            }
            Update::Step(row, so_far) => {
                let key = row.key.clone();
                c.upsert(*row);
                if let Some(s) = so_far {
                    c.so_far = Some(*s);
                }
                let row = c.rows.iter().rev().find(|r| r.key == key)?;
                let event = StepEvent {
                    row,
                    so_far: c.so_far.as_ref(),
                };
                ("step", serde_json::to_string(&event))
            }
            Update::SoFar(s) => {
                c.so_far = Some(*s);
                ("sofar", serde_json::to_string(&c.so_far))
            }
            Update::RunEnded(result) => {
                self.errors = super::Errors {
                    by_class: result.measured.errors.clone(),
                    details: result.measured.error_details.clone(),
                };
                self.interrupted = result.interrupted;
                ("errors", serde_json::to_string(&self.errors))
            }
            Update::Part(part, iv) => {
                c.parts.insert(part, *iv);
                let last = c.parts.get(&part)?;
                let name = c.generators.get(part);
                (
                    "part",
                    serde_json::to_string(&PartEvent { part, name, last }),
                )
            }
            Update::Generators(names) => {
                c.generators = names;
                ("generators", serde_json::to_string(&c.generators))
            }
        };
        Some(self.emit(kind, &json.unwrap_or_default()))
    }

    /// The next event of the stream, kept for pages that reconnect.
    pub(super) fn emit(&mut self, kind: &str, json: &str) -> Event {
        self.next_id += 1;
        let event = Event {
            id: self.next_id,
            text: format!("id: {}\nevent: {kind}\ndata: {json}\n\n", self.next_id).into(),
        };
        if self.events.len() >= self.window_cap {
            self.events.pop_front();
        }
        self.events.push_back(event.clone());
        event
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, state: &str) -> Update {
        Update::Step(
            Box::new(Row {
                key: key.into(),
                cells: vec![key.into(), "<b>x</b>".into()],
                state: state.into(),
                record: None,
            }),
            None,
        )
    }

    /// A row started then ended is one row; the rows stay bounded; a reloaded page's
    /// snapshot holds them.
    #[test]
    fn rows_replace_by_key_and_stay_bounded() {
        let mut hub = Hub::default();
        hub.apply(super::super::Update::Command(Update::Plan(Box::default())));
        hub.apply(super::super::Update::Command(row("run 1", "running")));
        hub.apply(super::super::Update::Command(row("run 1", "done")));
        assert_eq!(hub.command.rows.len(), 1);
        assert_eq!(hub.command.rows[0].state, "done");
        for i in 0..MAX_ROWS + 5 {
            hub.apply(super::super::Update::Command(row(&format!("p{i}"), "pass")));
        }
        assert_eq!(hub.command.rows.len(), MAX_ROWS);
        let snapshot = hub.snapshot();
        assert!(snapshot.text.contains(&format!("\"p{}\"", MAX_ROWS + 4)));
        assert!(hub.events.len() <= super::super::WINDOW);
    }

    /// A server's error message and a user's label with markup and line breaks stay inside
    /// their event's one `data:` line as JSON strings: they can neither end the event nor add
    /// one (the page then sets them as text).
    #[test]
    fn hostile_strings_cannot_break_the_stream() {
        let hostile = "</script><img src=x onerror=alert(1)>\n\nevent: end\ndata: {}\r\n";
        let mut hub = Hub::default();
        let mut result: RunResult = serde_json::from_str(include_str!(
            "../../../../loadlab-report/tests/fixtures/ok.json"
        ))
        .expect("fixture");
        result
            .measured
            .error_details
            .insert("protocol_error".into(), hostile.into());
        let events = [
            hub.apply(super::super::Update::Command(Update::RunEnded(Box::new(
                result,
            )))),
            hub.apply(super::super::Update::Command(Update::Step(
                Box::new(Row {
                    key: hostile.into(),
                    cells: vec![hostile.into()],
                    state: "done".into(),
                    record: None,
                }),
                None,
            ))),
        ];
        for event in events.iter().map(|e| e.as_ref().expect("an event")) {
            let lines: Vec<&str> = event.text.trim_end().split('\n').collect();
            assert_eq!(lines.len(), 3, "{}", event.text);
            assert!(lines[2].starts_with("data: {"));
            let data: serde_json::Value = serde_json::from_str(&lines[2][6..]).unwrap();
            assert!(
                data.to_string().contains("onerror"),
                "the words kept, as a string"
            );
            assert!(!event.text.contains('\r'));
        }
    }
}
