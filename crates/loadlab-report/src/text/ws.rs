//! A WebSocket run in the text summary: what the server pushed unasked (count, bytes, rate
//! over the run) with the gaps between two pushes on one connection, and its pings.

use super::timeline::row;
use crate::format::{count, duration_us};
use loadlab_result::RunResult;

/// The `Pushed` and `Push gap` rows (and `Server pings` when it pinged); nothing for an
/// HTTP run.
pub(super) fn section(s: &mut String, r: &RunResult) {
    let Some(w) = r.websocket.as_ref() else {
        return;
    };
    let rate = if w.pushed_per_s >= 10.0 || w.pushed_per_s == 0.0 {
        format!("{:.0}", w.pushed_per_s)
    } else {
        format!("{:.2}", w.pushed_per_s)
    };
    row(
        s,
        "Pushed",
        &format!(
            "{} messages, {} bytes, {rate}/s over {:.1} s (from the server unasked; not answers)",
            count(w.pushed),
            count(w.pushed_bytes),
            w.over_s
        ),
    );
    if let Some(g) = &w.push_gap_us {
        let line = format!(
            "p50 {}, p99 {}, max {}  (between two pushes on one connection, {} gaps)",
            duration_us(g.p50),
            duration_us(g.p99),
            duration_us(g.max),
            count(g.count)
        );
        row(s, "Push gap", &line);
    }
    if w.server_pings > 0 {
        row(
            s,
            "Server pings",
            &format!("{} (each answered with a pong)", count(w.server_pings)),
        );
    }
}
