//! A WebSocket run's own figures, beside its exchanges (`measured`: an exchange is an echo, a
//! pong or a handshake): what the server sent unasked (pushes: their count, bytes, rate, and
//! the gaps between two on one connection), its pings, and the held connections. Over the
//! whole run, warm-up included, as the server pushes whatever loadlab measures. The gaps'
//! histogram is kept, encoded, so shards merge exactly.

use crate::histogram::{decode_histogram, encode_histogram, new_histogram};
use crate::latency::LatencySummary;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WsSummary {
    /// `echo`, `hold` or `connect` (`--ws-mode`).
    pub mode: String,
    /// Text and binary messages the server sent that answered nothing (not the echo owed).
    pub pushed: u64,
    /// Their payloads' bytes.
    pub pushed_bytes: u64,
    /// Pushes per second over `over_s`.
    pub pushed_per_s: f64,
    /// The time the rate is over: the run's, warm-up included.
    pub over_s: f64,
    /// Between one push and the next on the same connection (a connection's first push has
    /// no gap: `count` is `pushed` less one per connection that had any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_gap_us: Option<LatencySummary>,
    /// The gaps' histogram, encoded (see `crate::histogram`); absent when there were none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_gap_histogram: Option<String>,
    /// Pings from the server (each answered with a pong).
    pub server_pings: u64,
    /// `--ws-mode hold` and `--ws-held`: the most connections held open at once.
    #[serde(default)]
    pub held_peak: u64,
}

impl WsSummary {
    /// Sets the gaps' summary and encoded histogram from `gaps` (nanoseconds).
    pub fn set_gaps(&mut self, gaps: &hdrhistogram::Histogram<u64>) {
        self.push_gap_us = LatencySummary::from_histogram(gaps);
        self.push_gap_histogram = (!gaps.is_empty()).then(|| encode_histogram(gaps));
    }
}

/// The parts' WebSocket sections merged: counts summed, gaps' histograms added. Parts that
/// ran at once (`concurrent`: a fleet's shards) add their rates and held connections; parts
/// run one after another (repetitions) give the rate over their time together and the most
/// any held. None when no part has one.
pub fn merge(parts: &[&WsSummary], concurrent: bool) -> Result<Option<WsSummary>, String> {
    let Some(first) = parts.first() else {
        return Ok(None);
    };
    let mut merged = (*first).clone();
    let mut gaps = new_histogram();
    for p in parts {
        if p.mode != first.mode {
            return Err(format!(
                "the parts ran different WebSocket loads ({} and {})",
                first.mode, p.mode
            ));
        }
        if let Some(text) = &p.push_gap_histogram {
            gaps.add(decode_histogram(text)?)
                .map_err(|e| format!("{e:?}"))?;
        }
    }
    merged.pushed = parts.iter().map(|p| p.pushed).sum();
    merged.pushed_bytes = parts.iter().map(|p| p.pushed_bytes).sum();
    merged.server_pings = parts.iter().map(|p| p.server_pings).sum();
    if concurrent {
        merged.pushed_per_s = parts.iter().map(|p| p.pushed_per_s).sum();
        merged.over_s = parts.iter().map(|p| p.over_s).fold(0.0, f64::max);
        merged.held_peak = parts.iter().map(|p| p.held_peak).sum();
    } else {
        merged.over_s = parts.iter().map(|p| p.over_s).sum();
        merged.pushed_per_s = merged.pushed as f64 / merged.over_s.max(1e-3);
        merged.held_peak = parts.iter().map(|p| p.held_peak).max().unwrap_or(0);
    }
    merged.set_gaps(&gaps);
    Ok(Some(merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(gaps_ms: &[u64], over_s: f64) -> WsSummary {
        let mut h = new_histogram();
        for g in gaps_ms {
            h.record(g * 1_000_000).unwrap();
        }
        let pushed = gaps_ms.len() as u64 + 1;
        let mut s = WsSummary {
            mode: "echo".into(),
            pushed,
            pushed_bytes: pushed * 6,
            pushed_per_s: pushed as f64 / over_s,
            over_s,
            push_gap_us: None,
            push_gap_histogram: None,
            server_pings: 1,
            held_peak: 10,
        };
        s.set_gaps(&h);
        s
    }

    #[test]
    fn shards_add_rates_and_gaps_exactly() {
        let (a, b) = (part(&[10, 10, 10], 2.0), part(&[40], 2.0));
        let m = merge(&[&a, &b], true).unwrap().unwrap();
        assert_eq!((m.pushed, m.pushed_bytes, m.server_pings), (6, 36, 2));
        assert_eq!(m.pushed_per_s, 3.0);
        assert_eq!(m.held_peak, 20);
        let gaps = m.push_gap_us.unwrap();
        assert_eq!(gaps.count, 4);
        assert!((gaps.max - 40_000.0).abs() < 40.0, "{gaps:?}");
        assert!((gaps.p50 - 10_000.0).abs() < 10.0, "{gaps:?}");
    }

    #[test]
    fn repetitions_give_the_rate_over_their_time_together() {
        let (a, b) = (part(&[10], 1.0), part(&[], 3.0));
        let m = merge(&[&a, &b], false).unwrap().unwrap();
        assert_eq!(m.pushed, 3);
        assert_eq!(m.over_s, 4.0);
        assert_eq!(m.pushed_per_s, 0.75);
        assert_eq!(m.held_peak, 10);
        assert_eq!(m.push_gap_us.unwrap().count, 1);
        let mut c = a.clone();
        c.mode = "hold".into();
        assert!(merge(&[&a, &c], true)
            .unwrap_err()
            .contains("different WebSocket loads"));
    }
}
