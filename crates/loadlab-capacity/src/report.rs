//! The document a search or a sweep leaves (JSON, and the store's runs beside it), and its
//! table for the terminal and the reports.

use crate::objective::Metric;
use crate::probe::{Criteria, Judgment, Measure};
use crate::search::{rate, Finding, Policy};
use crate::sweep::Knee;
use loadlab_report::{bytes, duration_us};
use serde::{Deserialize, Serialize};

/// The version of this document's layout.
pub const CAPACITY_SCHEMA_VERSION: u32 = 1;

/// A capacity search or a sweep: every probe, its judgment, and what was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityReport {
    pub schema_version: u32,
    /// "capacity" or "sweep".
    pub kind: String,
    pub loadlab_version: String,
    pub started_at: String,
    pub url: String,
    /// The server loadlab launched or watched, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The scenario each probe ran (`--scenario`), by its name: the loads are then its
    /// iterations per second, and each probe's counts its iterations (`Measure::iterations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub criteria: Criteria,
    /// The objectives as written, e.g. `p99<50ms`.
    pub objectives: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    pub warmup_s: f64,
    pub probe_s: f64,
    pub probes: Vec<ProbeRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finding: Option<Finding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee: Option<Knee>,
    /// What was found, in one line.
    pub verdict: String,
    /// Why the search ended before it finished: "budget", "interrupted", "server died".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    /// The fleet's path check before the first probe (`--generators` with the server's
    /// agent): each generator's path both ways against what the load asks of it
    /// (docs/path.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_check: Option<loadlab_result::path::PathCheck>,
    pub elapsed_s: f64,
}

/// One probe.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    /// 1-based, in the order run.
    pub index: usize,
    /// The search round (0 first); none in a sweep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round: Option<usize>,
    pub measure: Measure,
    pub judgment: Judgment,
    /// The run's id in the results store, when it was kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// `--vary ws-held`: the WebSocket connections held beside the echo load, the load
    /// searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_held: Option<usize>,
}

impl ProbeRecord {
    /// The load this probe ran at: held connections when they varied, requests/s offered,
    /// or connections.
    pub fn load(&self) -> f64 {
        if let Some(held) = self.ws_held {
            return held as f64;
        }
        self.measure
            .offered_per_s
            .or(self.measure.connections.map(|c| c as f64))
            .unwrap_or(0.0)
    }

    /// What the probe came to, as the search's policy sees it.
    pub fn search_verdict(&self) -> crate::search::Verdict {
        use crate::search::Verdict;
        if self.judgment.generator_limited.is_some() {
            Verdict::GeneratorLimited
        } else if self.measure.interrupted {
            Verdict::Interrupted
        } else if self.judgment.pass {
            Verdict::Pass
        } else if self.judgment.marginal {
            Verdict::Marginal
        } else {
            Verdict::Fail
        }
    }

    /// The probe as the search's policy sees it (a sweep's probe has no round: `None`).
    pub fn outcome(&self) -> Option<crate::search::Outcome> {
        Some(crate::search::Outcome {
            rate: self.load(),
            round: self.round?,
            verdict: self.search_verdict(),
        })
    }

    /// "held", "missed: ...", or "loadlab was the limit: ...".
    pub fn verdict(&self) -> String {
        if let Some(why) = &self.judgment.generator_limited {
            return format!(
                "loadlab was the limit ({why}): {}",
                self.judgment.missed.join("; ")
            );
        }
        if self.measure.interrupted {
            return "interrupted".into();
        }
        if self.judgment.pass {
            match crate::probe::generator_limited(&self.measure) {
                Some(why) => format!("held (though loadlab was late: {why})"),
                None => "held".into(),
            }
        } else {
            let marginal = if self.judgment.marginal && self.round.is_some() {
                " (response time only: run again)"
            } else {
                ""
            };
            format!("missed{marginal}: {}", self.judgment.missed.join("; "))
        }
    }
}

impl CapacityReport {
    /// Whether the loads are connection counts (a closed-loop sweep).
    pub fn closed_loop(&self) -> bool {
        self.probes
            .first()
            .is_some_and(|p| p.measure.connections.is_some())
    }

    /// The table of probes, as plain-text columns and rows (posts 001 and 002's tables:
    /// offered, achieved, p50, p90, p99, errors, server CPU and memory, and the verdict).
    pub fn table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let closed = self.closed_loop();
        let held = self.probes.iter().any(|p| p.ws_held.is_some());
        let mut columns: Vec<String> = vec!["#".into()];
        if self.kind == "capacity" {
            columns.push("round".into());
        }
        if held {
            columns.push("ws-held".into());
        }
        columns.extend(
            [
                if closed { "connections" } else { "offered/s" },
                "achieved/s",
                "p50",
                "p90",
                "p99",
                "errors",
                "server CPU",
                "server RSS",
                "verdict",
            ]
            .map(String::from),
        );
        let latency = |v: Option<f64>| v.map_or("-".into(), duration_us);
        let rows = self
            .probes
            .iter()
            .map(|p| {
                let m = &p.measure;
                let mut row = vec![p.index.to_string()];
                if self.kind == "capacity" {
                    row.push(p.round.map_or("-".into(), |r| (r + 1).to_string()));
                }
                if held {
                    row.push(p.ws_held.map_or("-".into(), |n| n.to_string()));
                }
                let mut verdict = p.verdict();
                if self.knee.as_ref().is_some_and(|k| k.index + 1 == p.index) {
                    verdict = format!("KNEE; {verdict}");
                }
                row.extend([
                    if closed {
                        m.connections.map_or("-".into(), |c| c.to_string())
                    } else {
                        rate(p.load())
                    },
                    rate(m.achieved_per_s),
                    latency(m.p50_us),
                    latency(m.p90_us),
                    latency(m.p99_us),
                    format!("{:.2}%", m.error_share * 100.0),
                    m.server_cpu_cores
                        .map_or("-".into(), |c| format!("{c:.2} cores")),
                    m.server_rss_bytes.map_or("-".into(), |b| bytes(b as f64)),
                    verdict,
                ]);
                row
            })
            .collect();
        (columns, rows)
    }

    /// The table and the verdict for a terminal.
    pub fn text(&self) -> String {
        let (columns, rows) = self.table();
        let mut out = String::new();
        if let Some(name) = &self.scenario {
            // The name is the scenario file's (over a fleet, as a generator sent it back).
            out.push_str(&format!(
                "scenario {}: loads are iterations/s (each a new user); achieved and errors \
                 count iterations (one with a failed step is an error), response times its \
                 steps' requests\n",
                loadlab_result::format::shown(name)
            ));
        }
        out.push_str(&loadlab_report::text::grid(&columns, &rows, 0));
        if let Some(k) = &self.knee {
            let at = if self.closed_loop() {
                format!("{} connections", k.load)
            } else {
                format!("{}/s", rate(k.load))
            };
            if let Some(p99) = k.p99_us {
                out.push_str(&format!(
                    "knee: at {at} p99 was {}, {:.1}x its {} at the lowest load (the knee is \
                     where p99 first reaches {}x)\n",
                    duration_us(p99),
                    p99 / k.baseline_p99_us,
                    duration_us(k.baseline_p99_us),
                    k.factor
                ));
            } else {
                out.push_str(&format!(
                    "knee: at {at} no request got a response (p99 was {} at the lowest load)\n",
                    duration_us(k.baseline_p99_us)
                ));
            }
        }
        out.push_str(&self.verdict);
        out.push('\n');
        out
    }
}

/// With a server-CPU objective (`--until server-cpu=0.85`), whether something else set the
/// capacity found: in every round, the failing probe at the lowest load (the boundary) kept
/// the server's CPU within its objective and missed on something else. Then the capacity is
/// the machine's or the setup's, not the server's CPU (post 003's axum cells: a growing queue
/// with the server's core 61% busy, the mock upstream sharing loadlab's core). Says so, with
/// the figures, or `None`.
pub fn limit_elsewhere(probes: &[ProbeRecord], criteria: &Criteria) -> Option<String> {
    let cpu = criteria
        .objectives
        .iter()
        .find(|o| o.metric == Metric::ServerCpu)?;
    let failing = probes.iter().filter(|p| {
        !p.judgment.pass && p.judgment.generator_limited.is_none() && !p.measure.interrupted
    });
    // The lowest failing load of each round.
    let mut boundary: Vec<&ProbeRecord> = Vec::new();
    for p in failing {
        match boundary.iter_mut().find(|b| b.round == p.round) {
            Some(b) if p.load() < b.load() => *b = p,
            Some(_) => {}
            None => boundary.push(p),
        }
    }
    let shares: Vec<f64> = boundary
        .iter()
        .map(|p| p.measure.server_cpu_share)
        .collect::<Option<_>>()?;
    if boundary.is_empty() || !shares.iter().all(|&s| cpu.holds(s)) {
        return None;
    }
    let busiest = shares.iter().copied().fold(0.0, f64::max);
    let missed = boundary[0]
        .judgment
        .missed
        .first()
        .cloned()
        .unwrap_or_default();
    Some(format!(
        "the server's CPU did not set this limit: at the boundary it was at most {} busy, under \
         its {} objective, and the probes missed on something else ({missed}); look for what \
         ran out first (a mock upstream or loadlab sharing the other CPUs, a pool, the network)",
        cpu.show(busiest),
        cpu.show(cpu.limit),
    ))
}
