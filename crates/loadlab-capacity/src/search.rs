//! The search policy: which rate to probe next, and when to stop. A pure function of the
//! probes so far ([`next`]), tested on tables of outcomes with no network.
//!
//! Round 0 doubles from the start rate until a probe fails (halving instead when the start
//! fails), then bisects between the highest rate that passed and the lowest that failed
//! until they are within the tolerance. Each later round repeats the search near the
//! boundary: it starts at round 0's answer and steps by `1 + 4 x tolerance` instead of
//! doubling, then bisects the same way. Every round's answer is the highest rate that passed
//! in it; the capacity is their median, reported with their range, never as one bare number.
//!
//! The load searched is a rate by default; with [`Unit::Held`] (`--vary ws-held`) it is a
//! count of WebSocket connections held beside a fixed echo load: the same search over whole
//! numbers, bisection ending at adjacent counts at the latest.
//!
//! A probe where loadlab itself was the limit says nothing about the service: it runs again
//! once (the machine may have hiccuped), and a second time at that rate ends the search,
//! since a higher rate would only say it again.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How the search proceeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// The first rate probed (requests/s).
    pub start: f64,
    /// The search never probes above this; passing here ends it ("at least").
    pub max_rate: f64,
    /// ... nor below this; failing here ends it ("below").
    pub min_rate: f64,
    /// Bisection stops when the failing rate is within this share above the passing one.
    pub tolerance: f64,
    /// Rounds of the search (the first plus repeats near the boundary).
    pub rounds: usize,
    /// What the numbers count (a rate unless said).
    #[serde(default)]
    pub unit: Unit,
}

/// What a search varies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Requests (or WebSocket messages) per second, probed at three significant figures.
    #[default]
    Rate,
    /// WebSocket connections held beside a fixed echo load: whole numbers.
    Held,
}

impl Unit {
    /// A load as a person reads it: `11,800/s`, `2,400 held`.
    pub fn show(self, load: f64) -> String {
        match self {
            Unit::Rate => format!("{}/s", rate(load)),
            Unit::Held => format!("{} held", loadlab_report::count(load.round() as u64)),
        }
    }

    /// The word for the flags' numbers: "rate" or "count".
    fn what(self) -> &'static str {
        match self {
            Unit::Rate => "rate",
            Unit::Held => "count",
        }
    }
}

impl Policy {
    /// Checks the policy's numbers, naming the flag of each.
    pub fn check(&self) -> Result<(), String> {
        if !(self.start.is_finite() && self.start > 0.0) {
            return Err("--start: give a rate above 0, e.g. 100".into());
        }
        if !(self.max_rate.is_finite() && self.max_rate >= self.start) {
            return Err(format!(
                "--max-rate {}: must be at least --start ({})",
                self.max_rate, self.start
            ));
        }
        if !(self.min_rate > 0.0 && self.min_rate <= self.start) {
            return Err(format!(
                "--min-rate {}: must be above 0 and at most --start ({})",
                self.min_rate, self.start
            ));
        }
        if !(0.01..=0.5).contains(&self.tolerance) {
            return Err(format!(
                "--tolerance {}: give a share between 0.01 (1%) and 0.5 (50%)",
                self.tolerance
            ));
        }
        if !(1..=10).contains(&self.rounds) {
            return Err(format!("--repeats {}: give 1 to 10 rounds", self.rounds));
        }
        Ok(())
    }

    /// The step of a repeat round, from round 0's answer.
    fn near_step(&self) -> f64 {
        1.0 + 4.0 * self.tolerance
    }

    /// A load the search may probe: a rate to three figures, a count whole.
    fn snap(&self, load: f64) -> f64 {
        match self.unit {
            Unit::Rate => nice(load),
            Unit::Held => load.round().max(1.0),
        }
    }

    /// Whether a pass at `p` and a failure at `f` are close enough to end the round.
    fn narrow(&self, p: f64, f: f64) -> bool {
        f - p <= self.tolerance * p || (self.unit == Unit::Held && f - p <= 1.0)
    }
}

/// What one probe came to, as the policy sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// Missed only a response-time objective, while keeping up with no queue growing: one
    /// stall of the machine in a probe of seconds can move a p99. Run again once; a pass
    /// then makes it a pass, a second miss a failure.
    Marginal,
    /// loadlab was the limit: no evidence about the service.
    GeneratorLimited,
    /// Stopped before it ended: no evidence either way.
    Interrupted,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub rate: f64,
    pub round: usize,
    pub verdict: Verdict,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Probe { rate: f64, round: usize },
    Done(Finding),
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Finding {
    /// The median of the rounds' answers, with their range.
    Capacity {
        estimate: f64,
        low: f64,
        high: f64,
        /// Each finished round's highest passing rate.
        rounds: Vec<f64>,
        /// Rounds planned (more than `rounds.len()` when the search was stopped early).
        planned: usize,
    },
    /// It passed at the highest rate allowed: the capacity is at least this.
    AtLeast { rate: f64 },
    /// It failed even at the lowest rate allowed.
    Below { rate: f64 },
    /// loadlab could not send faster than this on this machine.
    GeneratorLimit {
        rate: f64,
        /// The highest rate the service passed before that.
        passed: Option<f64>,
    },
    /// Stopped (budget, Ctrl-C) before any round finished.
    Unfinished {
        passed: Option<f64>,
        failed: Option<f64>,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text(Unit::Rate))
    }
}

impl Finding {
    /// The finding in words, its loads in `unit`.
    pub fn text(&self, unit: Unit) -> String {
        let mut s = String::new();
        let _ = self.write(&mut s, unit);
        s
    }

    fn write(&self, f: &mut impl fmt::Write, unit: Unit) -> fmt::Result {
        let rate = |x: f64| unit.show(x);
        let what = unit.what();
        match self {
            Finding::Capacity {
                estimate,
                low,
                high,
                rounds,
                planned,
            } => {
                write!(f, "capacity {}", rate(*estimate))?;
                if rounds.len() > 1 {
                    write!(
                        f,
                        ", between {} and {} over {} repeats",
                        rate(*low),
                        rate(*high),
                        rounds.len()
                    )?;
                } else {
                    write!(f, " (one round: no range)")?;
                }
                if rounds.len() < *planned {
                    write!(f, " ({} of {} rounds finished)", rounds.len(), planned)?;
                }
                Ok(())
            }
            Finding::AtLeast { rate: r } => write!(
                f,
                "capacity at least {}: it held at the highest {what} allowed (raise --max-rate)",
                rate(*r)
            ),
            Finding::Below { rate: r } => write!(
                f,
                "capacity below {}: it failed even at the lowest {what} allowed (lower --min-rate)",
                rate(*r)
            ),
            Finding::GeneratorLimit { rate: r, passed } => {
                write!(
                    f,
                    "no capacity found: loadlab itself was the limit at {}",
                    rate(*r)
                )?;
                if let Some(p) = passed {
                    write!(f, " (the service held {})", rate(*p))?;
                }
                write!(
                    f,
                    "; give loadlab more cores or threads, or spread the load over machines"
                )
            }
            Finding::Unfinished { passed, failed } => {
                write!(f, "search stopped before it finished")?;
                match (passed, failed) {
                    (Some(p), Some(q)) => write!(
                        f,
                        ": the capacity is between {} (held) and {} (failed)",
                        rate(*p),
                        rate(*q)
                    ),
                    (Some(p), None) => write!(f, ": it held {}", rate(*p)),
                    (None, Some(q)) => write!(f, ": it failed at {}", rate(*q)),
                    (None, None) => Ok(()),
                }
            }
        }
    }
}

/// A rate as a person reads it: `11,800`, `950`, `12.5`.
pub fn rate(r: f64) -> String {
    if r >= 100.0 {
        loadlab_report::count(r.round() as u64)
    } else {
        let s = format!("{r:.1}");
        s.trim_end_matches(".0").to_string()
    }
}

/// What to probe next, or what was found, from the probes so far.
pub fn next(policy: &Policy, history: &[Outcome]) -> Step {
    if let Some(last) = history.last().filter(|o| o.verdict == Verdict::Marginal) {
        let tries = history
            .iter()
            .filter(|o| o.round == last.round && o.rate == last.rate)
            .count();
        if tries < 2 {
            return Step::Probe {
                rate: last.rate,
                round: last.round,
            };
        }
    }
    // loadlab late once may be a hiccup of the machine: the same probe runs again. Late
    // twice at one rate is the limit.
    let limited = |o: &&Outcome| o.verdict == Verdict::GeneratorLimited;
    if let Some(last) = history.last().filter(limited) {
        let again = history
            .iter()
            .filter(limited)
            .filter(|o| o.rate == last.rate)
            .count();
        if again < 2 {
            return Step::Probe {
                rate: last.rate,
                round: last.round,
            };
        }
        return Step::Done(Finding::GeneratorLimit {
            rate: last.rate,
            passed: highest_pass(history.iter(), f64::INFINITY),
        });
    }
    match walk(policy, history) {
        (answers, None) => Step::Done(capacity(&answers, policy.rounds)),
        (answers, Some(Pending::Probe(rate))) => Step::Probe {
            rate,
            round: answers.len(),
        },
        (_, Some(Pending::Edge(finding))) => Step::Done(finding),
    }
}

/// What the probes so far say when the search is stopped early: the finished rounds, or the
/// bracket the first round had reached.
pub fn stopped(policy: &Policy, history: &[Outcome]) -> Finding {
    match next(policy, history) {
        Step::Done(finding) => finding,
        Step::Probe { .. } => {
            let (answers, _) = walk(policy, history);
            if answers.is_empty() {
                let (passed, failed) = bracket(history.iter().filter(|o| o.round == 0));
                Finding::Unfinished { passed, failed }
            } else {
                capacity(&answers, policy.rounds)
            }
        }
    }
}

enum Pending {
    Probe(f64),
    Edge(Finding),
}

/// Walks the rounds in order: the answers of those finished, and what the first unfinished
/// one needs (`None` when every round is finished).
fn walk(policy: &Policy, history: &[Outcome]) -> (Vec<f64>, Option<Pending>) {
    let mut answers = Vec::new();
    for round in 0..policy.rounds {
        let (start, step) = match answers.first() {
            None => (policy.start, 2.0),
            Some(&first) => (first, policy.near_step()),
        };
        let outcomes: Vec<&Outcome> = history.iter().filter(|o| o.round == round).collect();
        match round_step(policy, &outcomes, start, step) {
            RoundStep::Probe(rate) => return (answers, Some(Pending::Probe(rate))),
            RoundStep::Edge(finding) => return (answers, Some(Pending::Edge(finding))),
            RoundStep::Answer(rate) => answers.push(rate),
        }
    }
    (answers, None)
}

enum RoundStep {
    Probe(f64),
    Answer(f64),
    Edge(Finding),
}

fn round_step(policy: &Policy, outcomes: &[&Outcome], start: f64, step: f64) -> RoundStep {
    let (passed, failed) = bracket(outcomes.iter().copied());
    match (passed, failed) {
        (None, None) => {
            RoundStep::Probe(policy.snap(start.clamp(policy.min_rate, policy.max_rate)))
        }
        (Some(p), None) => {
            if p >= policy.max_rate * (1.0 - 1e-9) {
                RoundStep::Edge(Finding::AtLeast { rate: p })
            } else {
                let up = policy.snap((p * step).min(policy.max_rate));
                // A count near 1 times the step rounds back to itself.
                RoundStep::Probe(if up <= p {
                    (p + 1.0).min(policy.max_rate)
                } else {
                    up
                })
            }
        }
        (None, Some(f)) => {
            if f <= policy.min_rate * (1.0 + 1e-9) {
                RoundStep::Edge(Finding::Below { rate: f })
            } else {
                let down = policy.snap((f / step).max(policy.min_rate));
                RoundStep::Probe(if down >= f {
                    (f - 1.0).max(policy.min_rate)
                } else {
                    down
                })
            }
        }
        (Some(p), Some(f)) => {
            if policy.narrow(p, f) {
                RoundStep::Answer(p)
            } else {
                let mid = policy.snap((p + f) / 2.0);
                // Rounding must not land on a load already probed (counts: f - p >= 2 here).
                let mid = if mid <= p || mid >= f {
                    match policy.unit {
                        Unit::Rate => (p + f) / 2.0,
                        Unit::Held => ((p + f) / 2.0).floor(),
                    }
                } else {
                    mid
                };
                RoundStep::Probe(mid)
            }
        }
    }
}

/// The lowest failing rate, and the highest passing rate below it (a pass above a failure
/// is noise and is not believed). Interrupted probes count for nothing. A marginal miss
/// with a pass at the same rate is a pass; a marginal miss run again and missed again is a
/// failure.
fn bracket<'a>(outcomes: impl Iterator<Item = &'a Outcome> + Clone) -> (Option<f64>, Option<f64>) {
    let all: Vec<&Outcome> = outcomes.collect();
    let failed = all
        .iter()
        .filter(|o| believed(&all, o) == Some(false))
        .map(|o| o.rate)
        .min_by(f64::total_cmp);
    let passed = all
        .iter()
        .filter(|o| believed(&all, o) == Some(true) && o.rate < failed.unwrap_or(f64::INFINITY))
        .map(|o| o.rate)
        .max_by(f64::total_cmp);
    (passed, failed)
}

/// What a probe says once its repeat is in: held, failed, or nothing (yet).
fn believed(all: &[&Outcome], o: &Outcome) -> Option<bool> {
    match o.verdict {
        Verdict::Pass => Some(true),
        Verdict::Fail => Some(false),
        Verdict::Marginal => {
            let same: Vec<&&Outcome> = all.iter().filter(|x| x.rate == o.rate).collect();
            if same.iter().any(|x| x.verdict == Verdict::Pass) {
                Some(true)
            } else if same
                .iter()
                .filter(|x| x.verdict == Verdict::Marginal)
                .count()
                >= 2
            {
                Some(false)
            } else {
                None
            }
        }
        Verdict::GeneratorLimited | Verdict::Interrupted => None,
    }
}

fn highest_pass<'a>(outcomes: impl Iterator<Item = &'a Outcome>, below: f64) -> Option<f64> {
    outcomes
        .filter(|o| o.verdict == Verdict::Pass && o.rate < below)
        .map(|o| o.rate)
        .max_by(f64::total_cmp)
}

fn capacity(answers: &[f64], planned: usize) -> Finding {
    let mut sorted = answers.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let estimate = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Finding::Capacity {
        estimate,
        low: sorted[0],
        high: sorted[n - 1],
        rounds: answers.to_vec(),
        planned,
    }
}

/// Rates to three significant figures (at least whole requests/s above 100), so the table
/// reads 11,800 rather than 11,796.875.
fn nice(r: f64) -> f64 {
    if r <= 0.0 || !r.is_finite() {
        return r;
    }
    let digits = 3 - 1 - r.log10().floor() as i32;
    let scale = 10f64.powi(digits);
    let rounded = (r * scale).round() / scale;
    if rounded >= 100.0 {
        rounded.round()
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests;
