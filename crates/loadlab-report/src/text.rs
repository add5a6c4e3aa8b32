//! The human summary: what ran, what came back, how fast, and what to distrust. Plain text
//! that reads well in a terminal, a CI log or an issue.

use crate::format::{bytes, count, duration_us, rate};
use crate::Exporter;
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
    let _ = writeln!(
        s,
        "{} {}  ({})",
        r.target.method, r.target.url, r.target.address
    );
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
            "{} requests/s over {:.2}s",
            rate(q.per_second),
            m.duration_s
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
    let codes = if m.status_codes.is_empty() {
        "none".to_string()
    } else {
        m.status_codes
            .iter()
            .map(|(code, n)| format!("{code}: {}", count(*n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    row(&mut s, "Status", &codes);
    if m.errors.is_empty() {
        row(&mut s, "Errors", "none");
    } else {
        let mut first = true;
        for (key, n) in &m.errors {
            let what = loadlab_result::failure::describe_failure(key).unwrap_or("");
            let line = format!("{key}: {}  ({what})", count(*n));
            row(&mut s, if first { "Errors" } else { "" }, &line);
            if let Some(detail) = m.error_details.get(key) {
                row(&mut s, "", &format!("  {detail}"));
            }
            first = false;
        }
    }
    let b = &m.bytes;
    row(
        &mut s,
        "Sent",
        &format!(
            "{} ({}/s; busiest second {}/s)",
            bytes(b.sent as f64),
            bytes(b.sent_per_s),
            bytes(b.max_sent_per_s as f64)
        ),
    );
    row(
        &mut s,
        "Received",
        &format!(
            "{} ({}/s; busiest second {}/s)",
            bytes(b.received as f64),
            bytes(b.received_per_s),
            bytes(b.max_received_per_s as f64)
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
    s
}

/// What loadlab saw of the server: limits, start-up, CPU and memory over the measured phase.
fn server_section(s: &mut String, server: &loadlab_result::ServerReport) {
    s.push_str("\nServer\n");
    let mut what = format!("{} ({})", server.description, server.source);
    if let Some(pid) = server.pid {
        let _ = write!(what, ", pid {pid}");
    }
    row(s, "  Process", &what);
    if let Some(l) = &server.limits {
        let held = l.describe();
        if !held.is_empty() {
            row(
                s,
                "  Limits",
                &format!("{} via {}", held.join(", "), l.mechanism),
            );
        }
    }
    if let Some(st) = &server.startup {
        let mut line = format!(
            "ready in {} (first 2xx from {}), idle RSS {}",
            duration_us(st.ready_s * 1e6),
            st.health_url,
            bytes(st.idle_rss_bytes as f64)
        );
        if let Some(m) = st.idle_memory_bytes {
            let _ = write!(line, ", cgroup memory {}", bytes(m as f64));
        }
        row(s, "  Start-up", &line);
    }
    if let Some(sum) = &server.summary {
        let c = &sum.cpu_cores;
        let mut cpu = match &sum.cpu_cores_per_s {
            Some(sec) => format!(
                "{:.3} cores at p50 per second, p99 {:.3}; per 100 ms p50 {:.3}, p99 {:.3}, max {:.3}",
                sec.p50, sec.p99, c.p50, c.p99, c.max
            ),
            None => format!(
                "p50 {:.3} cores, p99 {:.3}, max {:.3}",
                c.p50, c.p99, c.max
            ),
        };
        if let (Some(q), Some(share)) = (sum.cpu_quota_cores, &sum.cpu_quota_share) {
            let _ = write!(
                cpu,
                "; {:.0}% of the {q}-core quota at p50, {:.0}% at p99",
                share.p50 * 100.0,
                share.p99 * 100.0
            );
        }
        if let (Some(t), Some(p)) = (sum.throttled_periods, sum.periods) {
            if p > 0 {
                let _ = write!(
                    cpu,
                    "; throttled in {} of {} periods ({:.2} s)",
                    count(t),
                    count(p),
                    sum.throttled_s.unwrap_or(0.0)
                );
            }
        }
        row(s, "  CPU", &cpu);
        let m = &sum.rss_bytes;
        let mut mem = format!(
            "RSS p50 {}, p99 {}, max {}",
            bytes(m.p50),
            bytes(m.p99),
            bytes(m.max)
        );
        if let Some(g) = &sum.memory_bytes {
            let _ = write!(mem, "; cgroup p99 {}", bytes(g.p99));
            if let (Some(limit), Some(share)) = (sum.memory_limit_bytes, &sum.memory_limit_share) {
                let _ = write!(
                    mem,
                    " ({:.0}% of {})",
                    share.p99 * 100.0,
                    bytes(limit as f64)
                );
            }
        }
        row(s, "  Memory", &mem);
        if let (Some(sent), Some(per_s)) = (sum.sent_bytes, &sum.sent_per_s) {
            row(
                s,
                "  Sent",
                &format!(
                    "{} to its clients; per second p50 {}/s, p99 {}/s, max {}/s (100 ms windows)",
                    bytes(sent as f64),
                    bytes(per_s.p50),
                    bytes(per_s.p99),
                    bytes(per_s.max)
                ),
            );
        }
        row(
            s,
            "  Processes",
            &format!(
                "{} process{}, {} threads, {} open files at most; loadlab used p50 {:.2} cores",
                sum.processes_max,
                if sum.processes_max == 1 { "" } else { "es" },
                sum.threads_max,
                sum.fds_max,
                sum.generator_cpu_cores.p50
            ),
        );
    }
    if let Some(exit) = &server.exit {
        row(
            s,
            "  Exit",
            &format!(
                "{} at {:.1} s{}",
                exit.status,
                exit.at_s,
                if exit.oom_killed { " (OOM-killed)" } else { "" }
            ),
        );
    }
}

/// At most this many rows of timeline; longer runs are shown in groups of intervals.
const TIMELINE_ROWS: usize = 20;

/// The run over time: a row per interval (or group of intervals).
fn timeline(s: &mut String, r: &RunResult) {
    let t = &r.timeline;
    if t.len() < 2 {
        return;
    }
    let group = t.len().div_ceil(TIMELINE_ROWS);
    let open = r.load.model == "open_loop";
    let staged = t.iter().any(|i| i.connections.is_some());
    let _ = writeln!(
        s,
        "\nTimeline{}",
        if group > 1 {
            format!(" ({} intervals a row)", group)
        } else {
            String::new()
        }
    );
    let level = if open {
        "offered/s"
    } else if staged {
        "conns"
    } else {
        ""
    };
    let with_server = t.iter().any(|i| i.server.is_some());
    let _ = writeln!(
        s,
        "  {:>8} {:>10} {:>11} {:>9} {:>9} {:>9} {:>7}{}",
        "at",
        level,
        "achieved/s",
        "p50",
        "p99",
        "max",
        "failed",
        if with_server {
            format!(" {:>9} {:>10}", "srv cpu", "srv rss")
        } else {
            String::new()
        }
    );
    for rows in t.chunks(group) {
        let first = &rows[0];
        let secs: f64 = rows.iter().map(|i| i.duration_s).sum();
        let completed: u64 = rows.iter().map(|i| i.completed).sum();
        let failed: u64 = rows.iter().map(|i| i.failed).sum();
        let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
        for i in rows {
            if let Some(h) = i
                .histogram
                .as_deref()
                .and_then(|e| decode_histogram(e).ok())
            {
                match merged.as_mut() {
                    Some(m) => {
                        let _ = m.add(&h);
                    }
                    None => merged = Some(h),
                }
            }
        }
        let q = |q: f64| {
            merged.as_ref().map_or("-".to_string(), |h| {
                duration_us(h.value_at_quantile(q) as f64 / 1e3)
            })
        };
        let level = if open {
            let offered: f64 = rows
                .iter()
                .map(|i| i.offered_per_s.unwrap_or(0.0) * i.duration_s)
                .sum();
            format!("{:.0}", offered / secs)
        } else {
            first
                .connections
                .map_or(String::new(), |c| format!("{c:.0}"))
        };
        let server = if with_server {
            let secs_with: f64 = rows
                .iter()
                .filter(|i| i.server.is_some())
                .map(|i| i.duration_s)
                .sum();
            let cpu: f64 = rows
                .iter()
                .filter_map(|i| i.server.map(|x| x.cpu_cores * i.duration_s))
                .sum();
            let rss = rows
                .iter()
                .filter_map(|i| i.server.map(|x| x.rss_bytes))
                .max();
            match rss {
                Some(rss) if secs_with > 0.0 => format!(
                    " {:>9} {:>10}",
                    format!("{:.3}", cpu / secs_with),
                    bytes(rss as f64)
                ),
                _ => format!(" {:>9} {:>10}", "-", "-"),
            }
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "  {:>7.1}s {:>10} {:>11.0} {:>9} {:>9} {:>9} {:>7}{}{}",
            first.start_s,
            level,
            completed as f64 / secs,
            q(0.5),
            q(0.99),
            merged
                .as_ref()
                .map_or("-".to_string(), |h| duration_us(h.max() as f64 / 1e3)),
            count(failed),
            server,
            if first.warmup { "  warm-up" } else { "" }
        );
    }
}

fn row(s: &mut String, label: &str, text: &str) {
    let _ = writeln!(s, "{label:<12} {text}");
}

fn percentile_table(s: &mut String, l: &LatencySummary) {
    let cols = [
        ("p50", l.p50),
        ("p75", l.p75),
        ("p90", l.p90),
        ("p95", l.p95),
        ("p99", l.p99),
        ("p99.9", l.p99_9),
        ("p99.99", l.p99_99),
        ("max", l.max),
    ];
    let cells: Vec<(String, String)> = cols
        .iter()
        .map(|(h, v)| (h.to_string(), duration_us(*v)))
        .collect();
    let widths: Vec<usize> = cells
        .iter()
        .map(|(h, v)| h.chars().count().max(v.chars().count()))
        .collect();
    let mut head = String::from("  ");
    let mut vals = String::from("  ");
    for ((h, v), w) in cells.iter().zip(&widths) {
        let _ = write!(head, "{h:>w$}  ");
        let _ = write!(vals, "{v:>w$}  ");
    }
    let _ = writeln!(s, "{}", head.trim_end());
    let _ = writeln!(s, "{}", vals.trim_end());
}

/// Latency histogram on 1-2-5 bucket edges from the fastest to the slowest request.
fn distribution(s: &mut String, m: &PhaseSummary) {
    let Ok(h) = decode_histogram(&m.histograms.latency) else {
        return;
    };
    if h.is_empty() {
        return;
    }
    let (lo, hi) = (h.min().max(1), h.max().max(1));
    // Bucket i holds latencies in (edge[i-1], edge[i]]; edges run from the first 1-2-5 value
    // at or above the fastest request to the first at or above the slowest.
    let mut edges = Vec::new();
    let mut decade = 1u64;
    'outer: loop {
        for step in [1, 2, 5] {
            let edge = decade * step;
            if edge >= lo {
                edges.push(edge);
            }
            if edge >= hi {
                break 'outer;
            }
        }
        decade *= 10;
    }
    let mut counts = vec![0u64; edges.len()];
    for v in h.iter_recorded() {
        let value = v.value_iterated_to();
        let i = edges
            .iter()
            .position(|&e| value <= e)
            .unwrap_or(edges.len() - 1);
        counts[i] += v.count_at_value();
    }
    let total = h.len() as f64;
    let peak = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    for (edge, n) in edges.iter().zip(&counts) {
        let share = *n as f64 / total;
        let cells = (*n as f64 / peak * BAR_WIDTH as f64 * 8.0).round() as usize;
        let mut bar = "█".repeat(cells / 8);
        if !cells.is_multiple_of(8) {
            bar.push(['▏', '▎', '▍', '▌', '▋', '▊', '▉'][cells % 8 - 1]);
        }
        let _ = writeln!(
            s,
            "  ≤ {:>9} {:>6.2}% {bar}",
            duration_us(*edge as f64 / 1_000.0),
            share * 100.0
        );
    }
}
