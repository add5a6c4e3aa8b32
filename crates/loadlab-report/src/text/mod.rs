//! The human summary: what ran, what came back, how fast, and what to distrust. Plain text
//! that reads well in a terminal, a CI log or an issue.

use crate::format::{bytes, count, duration_us, rate};
use crate::Exporter;
use loadlab_result::format::shown;
use loadlab_result::RunResult;
use loadlab_result::{decode_histogram, LatencySummary, PhaseSummary};
use std::fmt::Write as _;
use std::io::{self, Write};

pub struct TextExporter;

impl Exporter for TextExporter {
    fn name(&self) -> &'static str {
        "text"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(summary(result).as_bytes())
    }
}

const BAR_WIDTH: usize = 40;

fn summary(r: &RunResult) -> String {
    let mut s = String::new();
    let m = &r.measured;
    let load = &r.load;
    match &r.scenario {
        Some(sc) => {
            let _ = writeln!(
                s,
                "scenario `{}` against {}  ({})",
                sc.name, r.target.url, r.target.address
            );
        }
        None => match &r.grpc {
            // Every call is a POST to the method's path: the method and its kind say more.
            Some(g) => {
                let kind = g.kind.replace('_', " ");
                let path = format!("/{}", g.method);
                let origin = r.target.url.strip_suffix(&path).unwrap_or(&r.target.url);
                let _ = writeln!(
                    s,
                    "gRPC {kind} {} on {origin}  ({})",
                    g.method, r.target.address
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "{} {}  ({})",
                    r.target.method, r.target.url, r.target.address
                );
            }
        },
    }
    let warmup = if load.warmup_s > 0.0 {
        format!(", after a {}s warm-up (reported apart)", load.warmup_s)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{}; {} thread{}, {}{warmup}",
        load.plan,
        load.threads,
        if load.threads == 1 { "" } else { "s" },
        if load.keepalive {
            "keep-alive"
        } else {
            "a new connection per request"
        },
    );
    if r.interrupted {
        let _ = writeln!(s, "INTERRUPTED: partial result");
    }
    s.push('\n');

    let q = &m.requests;
    let mut requests = format!(
        "{} completed of {} issued, {} failed",
        count(q.completed),
        count(q.issued),
        count(q.failed)
    );
    if q.not_sent > 0 {
        let _ = write!(requests, ", {} due but never sent", count(q.not_sent));
    }
    if r.in_flight_at_end > 0 {
        let _ = write!(
            requests,
            ", {} abandoned in flight at the end",
            count(r.in_flight_at_end)
        );
    }
    row(&mut s, "Requests", &requests);
    row(
        &mut s,
        "Throughput",
        &format!(
            "{} requests/s over {:.2}s{}",
            rate(q.per_second),
            m.duration_s,
            drain_words(m)
        ),
    );
    let open = load.model == "open_loop";
    match &m.latency_us {
        Some(l) => {
            if open {
                let _ = writeln!(
                    s,
                    "\nResponse time, from when each request was due (what a user waits):"
                );
            }
            row(
                &mut s,
                if open { "Response" } else { "Latency" },
                &format!(
                    "mean {}, stdev {}, min {}, max {}",
                    duration_us(l.mean),
                    duration_us(l.stdev),
                    duration_us(l.min),
                    duration_us(l.max)
                ),
            );
            s.push('\n');
            percentile_table(&mut s, l);
            for line in cliff::lines(&m.cliffs) {
                let _ = writeln!(s, "  ! {line}");
            }
            s.push('\n');
            distribution(&mut s, m);
            if open {
                s.push('\n');
                for (label, what, summary) in [
                    ("Service", "from the actual send", &m.service_time_us),
                    ("Send lag", "actual minus intended send", &m.send_lag_us),
                    ("Scheduler", "how late loadlab noticed", &m.scheduler_lag_us),
                ] {
                    if let Some(l) = summary {
                        row(
                            &mut s,
                            label,
                            &format!(
                                "p50 {}, p99 {}, max {}  ({what})",
                                duration_us(l.p50),
                                duration_us(l.p99),
                                duration_us(l.max)
                            ),
                        );
                    }
                }
            }
        }
        None => row(&mut s, "Latency", "no request completed"),
    }
    timeline(&mut s, r);
    s.push('\n');
    scenario_section(&mut s, r);
    grpc::section(&mut s, r);
    ws::section(&mut s, r);
    let codes = if m.status_codes.is_empty() {
        "none".to_string()
    } else {
        m.status_codes
            .iter()
            .map(|(code, n)| format!("{code}: {}", count(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !grpc::status_row(&mut s, r) {
        row(&mut s, "Status", &codes);
    }
    if m.errors.is_empty() {
        row(&mut s, "Errors", "none");
    } else {
        let mut first = true;
        for (key, n) in &m.errors {
            let what = loadlab_result::failure::describe_failure(key).unwrap_or("");
            let line = format!("{key}: {}  ({what})", count(*n));
            row(&mut s, if first { "Errors" } else { "" }, &line);
            if let Some(detail) = m.error_details.get(key) {
                // A server's words (a QUIC CONNECTION_CLOSE's reason): the engine escapes
                // them as they enter a result, but one saved by an older loadlab, or edited,
                // may hold them raw.
                row(&mut s, "", &format!("  {}", shown(detail)));
            }
            first = false;
        }
    }
    if m.retried > 0 {
        let line = format!(
            "{}  (sent again: the server had not processed them; each counted once)",
            count(m.retried)
        );
        row(&mut s, "Retried", &line);
    }
    let b = &m.bytes;
    // HTTP/3's `bytes` are DATA payload: the UDP bytes beside them say what crossed the wire.
    let wire = |n: Option<u64>| match n {
        Some(n) => format!("; {} on the wire (UDP)", bytes(n as f64)),
        None => String::new(),
    };
    row(
        &mut s,
        "Sent",
        &format!(
            "{} ({}/s; busiest second {}/s){}",
            bytes(b.sent as f64),
            bytes(b.sent_per_s),
            bytes(b.max_sent_per_s as f64),
            wire(m.wire_bytes.as_ref().map(|w| w.sent))
        ),
    );
    row(
        &mut s,
        "Received",
        &format!(
            "{} ({}/s; busiest second {}/s){}",
            bytes(b.received as f64),
            bytes(b.received_per_s),
            bytes(b.max_received_per_s as f64),
            wire(m.wire_bytes.as_ref().map(|w| w.received))
        ),
    );
    let mut conns = format!("{} opened", count(m.connections_opened));
    if m.connections_failed > 0 {
        let _ = write!(conns, ", {} failed to open", count(m.connections_failed));
    }
    if let Some(w) = r.warmup.as_ref().filter(|w| w.connections_opened > 0) {
        let _ = write!(
            conns,
            " (and {} during the warm-up)",
            count(w.connections_opened)
        );
    }
    if let Some(c) = &m.connect_us {
        let _ = write!(
            conns,
            ", setup p50 {}, p99 {}, max {} (not in request latency)",
            duration_us(c.p50),
            duration_us(c.p99),
            duration_us(c.max)
        );
    }
    row(&mut s, "Connections", &conns);
    if let Some(tls) = &r.target.tls {
        let mut line = format!("TLS {}, trust: {}", tls.versions, tls.trust);
        if let Some(h) = &m.tls_handshake_us {
            let _ = write!(
                line,
                "; handshake p50 {}, p99 {}; {} resumed of {}{}",
                duration_us(h.p50),
                duration_us(h.p99),
                count(m.tls_resumed),
                count(m.tls_resumed + m.tls_full),
                if tls.resumption {
                    ""
                } else {
                    " (resumption off)"
                }
            );
        }
        row(&mut s, "TLS", &line);
    }
    if let Some(e) = &m.early_data {
        row(&mut s, "0-RTT", &early_data_line(e));
    }
    if let Some(w) = &r.warmup {
        let mut line = format!(
            "{} completed, {} failed in {:.2}s, {} requests/s",
            count(w.requests.completed),
            count(w.requests.failed),
            w.duration_s,
            rate(w.requests.per_second)
        );
        if let Some(l) = &w.latency_us {
            let _ = write!(
                line,
                ", p50 {}, p99 {}",
                duration_us(l.p50),
                duration_us(l.p99)
            );
        }
        row(&mut s, "Warm-up", &format!("{line} (excluded above)"));
    }
    let g = &r.generator;
    let mut gen = format!("CPU {:.2}s", g.cpu_user_s + g.cpu_system_s);
    if let Some(per) = g.cpu_s_per_100k_requests {
        let _ = write!(gen, " ({per:.2}s per 100k requests)");
    }
    if !g.thread_busy.is_empty() {
        let busy: Vec<String> = g
            .thread_busy
            .iter()
            .map(|b| format!("{:.0}%", b * 100.0))
            .collect();
        let _ = write!(gen, ", threads busy {}", busy.join(" "));
    }
    // Ready to run while other tasks held the workers' cores: sends due then went out late.
    let waited: f64 = g.thread_waited_s.iter().sum();
    if waited >= 1.0 {
        let _ = write!(gen, ", waited {waited:.1} s for a CPU");
    } else if waited >= 0.001 {
        let _ = write!(gen, ", waited {:.0} ms for a CPU", waited * 1_000.0);
    }
    row(&mut s, "Generator", &gen);
    if let Some(first) = &r.first_requests {
        row(
            &mut s,
            &format!("First {}", first.requests),
            &format!(
                "p50 {}, p99 {} against p50 {}, p99 {} afterwards{}",
                duration_us(first.latency_us.p50),
                duration_us(first.latency_us.p99),
                duration_us(first.rest_us.p50),
                duration_us(first.rest_us.p99),
                if first.cold_start {
                    " (cold start)"
                } else {
                    ""
                }
            ),
        );
    }
    if let Some(server) = &r.server {
        server_section(&mut s, server);
    }
    if let Some(m) = &r.server_metrics {
        metrics::metrics_section(&mut s, m);
    }
    machine_section(&mut s, r);
    shards_section(&mut s, r);
    if !r.verdicts.is_empty() {
        s.push_str("\nVerdicts\n");
        for v in &r.verdicts {
            let _ = writeln!(s, "  > {v}");
        }
    }
    if !r.warnings.is_empty() {
        s.push_str("\nWarnings\n");
        for w in &r.warnings {
            let _ = writeln!(s, "  ! {w}");
        }
    }
    if !r.notes.is_empty() {
        s.push_str("\nNotes\n");
        for n in &r.notes {
            let _ = writeln!(s, "  - {n}");
        }
    }
    s
}

mod cliff;
mod grpc;
mod machine;
mod metrics;
mod server;
mod shards;
mod timeline;
mod ws;

/// A scenario run's steps, aligned, with the iterations and the checks that failed.
fn scenario_section(s: &mut String, r: &RunResult) {
    let Some(sc) = &r.scenario else {
        return;
    };
    let mut head = format!(
        "Scenario `{}`: {} iterations ({}/s), {} with a failed step",
        sc.name,
        count(sc.iterations),
        rate(sc.iterations_per_s),
        count(sc.iterations_failed)
    );
    if let (Some(pace), Some(offered)) = (sc.pace_s, sc.offered_per_s) {
        let _ = write!(
            head,
            "; paced at one request per {pace}s per user ({} requests/s offered)",
            rate(offered)
        );
    }
    if let Some(offered) = sc.offered_iterations_per_s {
        let _ = write!(
            head,
            "; open loop: {} iterations/s offered, each a new user, steps timed from when due",
            rate(offered)
        );
    }
    if sc.new_connection_share > 0.0 {
        let _ = write!(
            head,
            "; {:.0}% of requests on a new connection",
            sc.new_connection_share * 100.0
        );
    }
    let _ = writeln!(s, "{head}");
    let table = crate::tables::steps::steps(&[("", r)]);
    s.push_str(&crate::tables::steps::aligned(&table));
    for step in &sc.steps {
        for c in step.checks.iter().filter(|c| c.failed > 0) {
            let _ = writeln!(
                s,
                "  {}: {} failed {} times{}",
                step.name,
                c.check,
                count(c.failed),
                c.first_failure
                    .as_deref()
                    .map_or(String::new(), |m| format!(" (first: {m})"))
            );
        }
    }
    s.push('\n');
}

use machine::machine_section;
use server::server_section;
use shards::shards_section;
use timeline::{distribution, percentile_table, row, timeline};

/// A table for the terminal: columns padded to their widest cell, numbers (every column but
/// the first `left` and the last) right-aligned, a rule under the headings. Cells are plain
/// text, counted in characters.
pub fn grid(columns: &[String], rows: &[Vec<String>], left: usize) -> String {
    let width = |i: usize| {
        std::iter::once(&columns[i])
            .chain(rows.iter().filter_map(|r| r.get(i)))
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns.len()).map(width).collect();
    let last = columns.len().saturating_sub(1);
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[i].saturating_sub(cell.chars().count()));
            if i < left || i == last {
                out.push_str(cell);
                if i != last {
                    out.push_str(&pad);
                }
            } else {
                out.push_str(&pad);
                out.push_str(cell);
            }
            if i != last {
                out.push_str("  ");
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(columns) + "\n";
    let total = widths.iter().sum::<usize>() + 2 * last;
    out.push_str(&"-".repeat(total.min(160)));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// HTTP/3's 0-RTT (`--http3-0rtt`): its connections and the requests they sent early.
fn early_data_line(e: &loadlab_result::EarlyData) -> String {
    let mut line = format!(
        "{} requests sent as early data: {} accepted, {} rejected (sent again); on {} \
         connections ({} accepted, {} rejected)",
        count(e.requests),
        count(e.requests_accepted),
        count(e.requests_rejected),
        count(e.connections),
        count(e.connections_accepted),
        count(e.connections_rejected),
    );
    if let Some(h) = &e.handshake_us {
        let _ = write!(
            line,
            ", their handshakes p50 {}, p99 {}",
            duration_us(h.p50),
            duration_us(h.p99)
        );
    }
    line
}

/// An open loop's drain, when it is a real part of the time its rate is over (over 5% of the
/// planned time: a target that could not keep up answering its backlog after the load's
/// end); one response time after a load that was kept up is not worth a word. The report's
/// tables say it beside the measured time too.
pub(crate) fn drain_words(m: &PhaseSummary) -> String {
    match m.drain_s {
        Some(d) if d > m.duration_s * 0.05 => {
            format!(" plus the last answers' {d:.2}s after the load's end")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod grid_tests {
    #[test]
    fn a_grid_aligns_numbers_right_and_words_left() {
        let columns = vec!["rate".to_string(), "p99".into(), "verdict".into()];
        let rows = vec![
            vec!["1,000".to_string(), "4.21 ms".into(), "held".into()],
            vec!["12,000".to_string(), "812 µs".into(), "missed p99".into()],
        ];
        let text = super::grid(&columns, &rows, 1);
        assert_eq!(
            text,
            "rate        p99  verdict\n\
             ---------------------------\n\
             1,000   4.21 ms  held\n\
             12,000   812 µs  missed p99\n"
        );
    }
}
