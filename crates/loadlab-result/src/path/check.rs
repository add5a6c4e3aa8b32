//! The fleet's path check as data (issue 52): before a fleet's load with the server's agent,
//! each generator's path to the server's host measured both ways, what the load asks of it,
//! and whether it was named as a path that would set the figure. The check itself (I/O and
//! rule) is `loadlab_session::fleet::path`; a run's result, a capacity search's document and
//! an experiment's runs carry what it found ([`PathCheck`]), and reports say it in the words
//! of [`describe`].

use serde::{Deserialize, Serialize};

/// What the check found, once per load (run, capacity search or sweep, experiment).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathCheck {
    /// Bytes one request sends, headers included, as a first exchange from loadlab's host
    /// measured them; absent when that host could not reach the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_bytes: Option<f64>,
    /// Bytes its answer brings back, headers included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_bytes: Option<f64>,
    /// The whole fleet's planned rate (an open loop's mean), requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_per_s: Option<f64>,
    /// What the fleet's paths carry together of this load at equal shares (the slowest
    /// path's figure times the generators), requests/s, when the load's size is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_per_s: Option<f64>,
    /// One finding per generator, in the fleet's order.
    pub generators: Vec<PathFinding>,
    /// Why the paths could not be checked at all (the server's agent unreachable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One generator's path, as measured, against what the load asks of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathFinding {
    pub generator: String,
    /// Server to generator (the answers' way), bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_bits_per_s: Option<f64>,
    /// Generator to server (the requests' way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_bits_per_s: Option<f64>,
    /// The most requests a second this path carries of this load, when the load is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_per_s: Option<f64>,
    /// Its share of the planned rate, requests/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_per_s: Option<f64>,
    /// Why this path is named, or none when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub named: Option<String>,
}

impl PathCheck {
    /// The findings that named a path, in words.
    pub fn named(&self) -> impl Iterator<Item = &str> {
        self.generators.iter().filter_map(|f| f.named.as_deref())
    }

    /// The slowest path (the lowest ceiling), in words.
    pub fn slowest(&self) -> Option<String> {
        self.generators
            .iter()
            .filter(|f| f.ceiling_per_s.is_some())
            .min_by(|a, b| {
                a.ceiling_per_s
                    .partial_cmp(&b.ceiling_per_s)
                    .expect("finite")
            })
            .map(describe)
    }
}

/// Megabits, for people.
pub fn mbit(bits_per_s: f64) -> String {
    format!("{:.1} Mbit/s", bits_per_s / 1e6)
}

/// One line per path: what it carried each way and, with a known load, the most requests a
/// second it carries.
pub fn describe(f: &PathFinding) -> String {
    let show = |b: Option<f64>| b.map_or_else(|| "unknown".to_string(), mbit);
    format!(
        "path to generator {}: {} from the server, {} to it{}",
        f.generator,
        show(f.down_bits_per_s),
        show(f.up_bits_per_s),
        f.ceiling_per_s.map_or_else(String::new, |c| format!(
            ", at most {c:.0} requests/s of this load"
        ))
    )
}
