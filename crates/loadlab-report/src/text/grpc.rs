//! A gRPC run in the text summary: the calls' gRPC statuses where an HTTP run shows its
//! status codes (every gRPC answer is HTTP 200: "Status 200" said nothing), and a streaming
//! run's messages each way with their times.

use super::timeline::row;
use crate::format::{count, duration_us};
use loadlab_result::{LatencySummary, RunResult};

/// The `gRPC status` row: OK for the calls completed, then each failing code counted (the
/// failures' own lines, with the server's message, follow under Errors). None: not gRPC.
pub(super) fn status_row(s: &mut String, r: &RunResult) -> bool {
    if r.load.protocol != "grpc" {
        return false;
    }
    let m = &r.measured;
    let mut codes = vec![format!("OK: {}", count(m.requests.completed))];
    for (key, n) in &m.errors {
        if let Some(code) = key.strip_prefix("grpc_") {
            codes.push(format!("{}: {}", code.to_ascii_uppercase(), count(*n)));
        }
    }
    row(s, "gRPC status", &codes.join(", "));
    true
}

/// A streaming run's messages and their times; nothing for a unary run.
pub(super) fn section(s: &mut String, r: &RunResult) {
    let Some(g) = r.grpc.as_ref().filter(|g| g.kind != "unary") else {
        return;
    };
    let plan = match (g.kind.as_str(), g.messages_per_call, g.message_rate_per_s) {
        ("server_streaming", Some(cap), _) => format!("; ended by loadlab at {cap} answers"),
        (_, Some(n), Some(rate)) => format!("; {n} per call at {rate}/s"),
        (_, Some(n), None) if g.pace.as_deref() == Some("ping_pong") => {
            format!("; {n} per call, ping-pong")
        }
        (_, Some(n), None) if g.kind != "server_streaming" => {
            format!("; {n} per call, back to back")
        }
        _ => String::new(),
    };
    row(
        s,
        "Messages",
        &format!(
            "{} sent, {} received ({}{plan})",
            count(g.messages_sent),
            count(g.messages_received),
            g.kind.replace('_', " ")
        ),
    );
    if g.capped_calls > 0 {
        let line = format!(
            "{} (server streams ended at the cap)",
            count(g.capped_calls)
        );
        row(s, "Capped", &line);
    }
    let timed: [(&str, &str, &Option<LatencySummary>); 3] = [
        ("First msg", "from the call's send", &g.first_message_us),
        ("Msg gap", "between answers", &g.message_gap_us),
        (
            "Msg latency",
            "answer from when its message was due",
            &g.message_latency_us,
        ),
    ];
    for (label, what, l) in timed {
        if let Some(l) = l {
            let line = format!(
                "p50 {}, p99 {}, max {}  ({what})",
                duration_us(l.p50),
                duration_us(l.p99),
                duration_us(l.max)
            );
            row(s, label, &line);
        }
    }
}
