//! A result made of parts: each shard's place in its run and when it started, what a merge
//! of shards found about them, and each part's own summary as it was before the merge.

use serde::{Deserialize, Serialize};

/// One shard's place in its run, and when it started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// From 1, as given to `--shard I/N`.
    pub index: u32,
    pub count: u32,
    /// A digest of what every shard of the run shares (request, whole load, timing, shard
    /// count, start time): results with different ones are shards of different runs.
    pub plan_id: String,
    /// The whole run's plan in words (all shards together).
    pub whole_plan: String,
    /// `--start-at`, RFC 3339 with microseconds, and as Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_at_unix_s: Option<f64>,
    /// When this shard really started, by its machine's clock: RFC 3339 with microseconds,
    /// and as Unix seconds.
    pub started_wall: String,
    pub started_unix_s: f64,
    /// Whether the kernel reported the clock as synchronised (NTP, chrony), and its
    /// estimated error in seconds (`adjtimex`); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_synced: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_error_s: Option<f64>,
}

/// What a merge of shards found about them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardsSummary {
    /// The shards the run was planned with.
    pub count: u32,
    /// Shards whose results were merged, from 1.
    pub reported: Vec<u32>,
    /// Shards with no result: their share of the load is not in the merged figures.
    pub missing: Vec<u32>,
    /// Shards that reported, but were interrupted or had no request succeed.
    pub failed: Vec<u32>,
    /// The latest shard's actual start minus the earliest's, by their own clocks.
    pub start_spread_s: f64,
    /// The spread beyond which the merge warns.
    pub start_spread_bound_s: f64,
    /// The largest clock error any shard's kernel estimated: a spread smaller than it is
    /// within the clocks' uncertainty. Absent when no shard knew its error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clock_error_s: Option<f64>,
}

/// One part of a merged result, as it was on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartSummary {
    pub started_at: String,
    pub hostname: String,
    pub interrupted: bool,
    pub duration_s: f64,
    pub issued: u64,
    pub completed: u64,
    pub failed: u64,
    pub per_second: f64,
    /// Open loop: requests/s the part's schedule asked for, over its measured time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    /// The part's own generator health: its busiest worker thread (CPU over wall time) and
    /// how late it noticed due requests (open loop, p99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_busy_max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_lag_p99_us: Option<f64>,
    /// The part's own verdicts (a saturated generator, a target that could not keep up).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<String>,
    /// A shard's place and start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
}
