//! One generator's path in a capacity probe, judged by the path rule (docs/path.md,
//! `loadlab_result::path::rule`): what a probe's record keeps, and all that `probe` needs of
//! the path (the search's verdicts over many probes are `path`'s, which reads the records).

use loadlab_result::RunResult;
use serde::{Deserialize, Serialize};

/// One generator's path in a probe: the rule's verdict and the figures it read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathEvidence {
    /// The fleet generator; `None` for this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
    /// "path" (a queue on the path), "not_path" or "inconclusive".
    pub verdict: String,
    /// The median interval's goodput, bits/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_bits_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_rtt_us: Option<f64>,
    /// The rule's words.
    pub said: String,
}

impl PathEvidence {
    /// Every generator's path in `result`, judged.
    pub fn of(result: &RunResult) -> Vec<PathEvidence> {
        use loadlab_result::path::{judge, Evidence, PathVerdict};
        result
            .path
            .iter()
            .filter(|r| r.side == "generator")
            .map(|r| {
                let e = Evidence::in_run(result, r);
                let v = judge(&e);
                PathEvidence {
                    generator: r.generator.clone(),
                    verdict: match v {
                        PathVerdict::Path { .. } => "path",
                        PathVerdict::NotPath { .. } => "not_path",
                        PathVerdict::Inconclusive { .. } => "inconclusive",
                    }
                    .into(),
                    goodput_bits_per_s: e.goodput().map(|g| g * 8.0),
                    rtt_us: e.rtt_us,
                    min_rtt_us: e.min_rtt_us,
                    said: v.describe(),
                }
            })
            .collect()
    }

    pub fn is_path(&self) -> bool {
        self.verdict == "path"
    }
}
