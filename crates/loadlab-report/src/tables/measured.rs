//! The tables of what was measured: the summary, failures, the first requests and the
//! timeline. Plain-text cells with units; no escaping or markup here.

use super::{list_table, run_cell, Figures, Run, Table};
use crate::format::{bytes, count, duration_us, rate};
use loadlab_result::failure::describe_failure;
use loadlab_result::{decode_histogram, LatencySummary, RunResult};

pub(super) fn summary(runs: &[Run]) -> Table {
    let mut f = Figures::new("Summary", runs);
    f.row("Requests issued", |r| {
        Some(count(r.measured.requests.issued))
    });
    f.row("Completed", |r| Some(count(r.measured.requests.completed)));
    f.row("Failed", |r| {
        let q = &r.measured.requests;
        let share = if q.issued > 0 {
            format!(" ({:.2}%)", q.failed as f64 * 100.0 / q.issued as f64)
        } else {
            String::new()
        };
        Some(format!("{}{share}", count(q.failed)))
    });
    f.row("Due but never sent", |r| {
        (r.measured.requests.not_sent > 0).then(|| count(r.measured.requests.not_sent))
    });
    f.row("Abandoned in flight", |r| {
        (r.in_flight_at_end > 0).then(|| count(r.in_flight_at_end))
    });
    f.row("Throughput", |r| {
        Some(format!(
            "{} requests/s",
            rate(r.measured.requests.per_second)
        ))
    });
    // The throughput above is over this and an open loop's drain: both named, so that the
    // rate times the time is the count.
    f.row("Measured for", |r| {
        Some(format!(
            "{:.2} s{}",
            r.measured.duration_s,
            crate::text::drain_words(&r.measured)
        ))
    });
    f.row("Latency measured from", |r| {
        Some(if r.load.model == "open_loop" {
            "when each request was due (open loop)".into()
        } else {
            "the actual send (closed loop)".into()
        })
    });
    f.latency("Latency", |r| r.measured.latency_us.as_ref());
    for (name, pick) in [
        ("Service time", phase(|m| m.service_time_us.as_ref())),
        ("Send lag", phase(|m| m.send_lag_us.as_ref())),
        ("Scheduler lag", phase(|m| m.scheduler_lag_us.as_ref())),
        ("Time to first byte", phase(|m| m.ttfb_us.as_ref())),
        ("Connection setup", phase(|m| m.connect_us.as_ref())),
        ("TLS handshake", phase(|m| m.tls_handshake_us.as_ref())),
        // HTTP/3's 0-RTT connections' handshakes, kept out of the TLS handshakes above.
        (
            "0-RTT handshake",
            phase(|m| m.early_data.as_ref()?.handshake_us.as_ref()),
        ),
    ] {
        f.row(&format!("{name} p50 / p99 / max"), |r| {
            pick(r).map(|l| {
                format!(
                    "{} / {} / {}",
                    duration_us(l.p50),
                    duration_us(l.p99),
                    duration_us(l.max)
                )
            })
        });
    }
    f.row("Status codes", |r| {
        let codes = &r.measured.status_codes;
        Some(if codes.is_empty() {
            "none".into()
        } else {
            let each: Vec<String> = codes
                .iter()
                .map(|(code, n)| format!("{code}: {}", count(*n)))
                .collect();
            each.join(", ")
        })
    });
    f.row("Bytes sent", |r| {
        let b = &r.measured.bytes;
        Some(format!(
            "{} ({}/s)",
            bytes(b.sent as f64),
            bytes(b.sent_per_s)
        ))
    });
    f.row("Bytes received", |r| {
        let b = &r.measured.bytes;
        Some(format!(
            "{} ({}/s)",
            bytes(b.received as f64),
            bytes(b.received_per_s)
        ))
    });
    // HTTP/3: beside its DATA payload above, the UDP bytes that crossed the wire.
    f.row("On the wire (UDP), sent / received", |r| {
        r.measured
            .wire_bytes
            .as_ref()
            .map(|w| format!("{} / {}", bytes(w.sent as f64), bytes(w.received as f64)))
    });
    f.row("Connections opened", |r| {
        let m = &r.measured;
        let mut s = count(m.connections_opened);
        if m.connections_failed > 0 {
            s.push_str(&format!(", {} failed to open", count(m.connections_failed)));
        }
        Some(s)
    });
    f.row("TLS handshakes resumed", |r| {
        r.target.tls.as_ref().map(|_| {
            format!(
                "{} of {}",
                count(r.measured.tls_resumed),
                count(r.measured.tls_resumed + r.measured.tls_full)
            )
        })
    });
    // HTTP/3's 0-RTT (`--http3-0rtt`), as the text summary's line says it.
    f.row("0-RTT requests sent early", |r| {
        r.measured.early_data.as_ref().map(|e| {
            format!(
                "{}: {} accepted, {} rejected (sent again)",
                count(e.requests),
                count(e.requests_accepted),
                count(e.requests_rejected)
            )
        })
    });
    f.row("0-RTT connections", |r| {
        r.measured.early_data.as_ref().map(|e| {
            format!(
                "{}: {} accepted, {} rejected",
                count(e.connections),
                count(e.connections_accepted),
                count(e.connections_rejected)
            )
        })
    });
    f.row("Warm-up (excluded above)", |r| {
        r.warmup.as_ref().map(|w| {
            let mut s = format!(
                "{} completed, {} failed in {:.2} s",
                count(w.requests.completed),
                count(w.requests.failed),
                w.duration_s
            );
            if let Some(l) = &w.latency_us {
                s.push_str(&format!(", p99 {}", duration_us(l.p99)));
            }
            s
        })
    });
    f.table
}

fn phase(
    pick: fn(&loadlab_result::PhaseSummary) -> Option<&LatencySummary>,
) -> impl Fn(&RunResult) -> Option<&LatencySummary> {
    move |r| pick(&r.measured)
}

pub(super) fn failures(runs: &[Run]) -> Table {
    let mut table = list_table(
        runs,
        "Failures",
        &["class", "count", "what it means", "detail"],
    );
    for (label, r) in runs {
        let m = &r.measured;
        for (class, n) in &m.errors {
            let mut row = run_cell(runs, label);
            row.extend([
                class.clone(),
                count(*n),
                describe_failure(class).unwrap_or("").to_string(),
                m.error_details.get(class).cloned().unwrap_or_default(),
            ]);
            table.rows.push(row);
        }
    }
    table
}

pub(super) fn first_requests(runs: &[Run]) -> Option<Table> {
    if runs.iter().all(|(_, r)| r.first_requests.is_none()) {
        return None;
    }
    let mut f = Figures::new("First requests", runs);
    f.row("Requests", |r| {
        r.first_requests.as_ref().map(|x| count(x.requests))
    });
    f.row("Completed within", |r| {
        r.first_requests
            .as_ref()
            .map(|x| format!("{:.2} s", x.window_s))
    });
    type Stat = fn(&LatencySummary) -> f64;
    let stats: [(&str, Stat); 3] = [("p50", |l| l.p50), ("p90", |l| l.p90), ("p99", |l| l.p99)];
    for (name, stat) in stats {
        f.row(&format!("{name}: first / afterwards"), |r| {
            r.first_requests.as_ref().map(|x| {
                format!(
                    "{} / {}",
                    duration_us(stat(&x.latency_us)),
                    duration_us(stat(&x.rest_us))
                )
            })
        });
    }
    f.row("Cold start", |r| {
        r.first_requests.as_ref().map(|x| {
            if x.cold_start {
                "yes: the first requests were much slower".into()
            } else {
                "no".into()
            }
        })
    });
    Some(f.table)
}

/// At most this many timeline rows a run; longer runs are shown in groups of intervals.
const TIMELINE_ROWS: usize = 30;

/// The run over time, a row per interval or group of intervals (percentiles from the merged
/// histograms, so a group's p99 is exact).
pub(super) fn timeline(runs: &[Run]) -> Table {
    let mut table = list_table(
        runs,
        "Timeline",
        &[
            "from",
            "offered/s",
            "achieved/s",
            "failed",
            "p50",
            "p99",
            "max",
            "server CPU",
            "server RSS",
            "",
        ],
    );
    for (label, r) in runs {
        let t = &r.timeline;
        if t.len() < 2 {
            continue;
        }
        for rows in t.chunks(t.len().div_ceil(TIMELINE_ROWS)) {
            let secs: f64 = rows.iter().map(|i| i.duration_s).sum::<f64>().max(1e-9);
            let mut merged: Option<hdrhistogram::Histogram<u64>> = None;
            for h in rows
                .iter()
                .filter_map(|i| decode_histogram(i.histogram.as_deref()?).ok())
            {
                match merged.as_mut() {
                    Some(m) => m.add(&h).unwrap_or(()),
                    None => merged = Some(h),
                }
            }
            let q = |q: f64| {
                merged.as_ref().map_or("–".into(), |h| {
                    duration_us(h.value_at_quantile(q) as f64 / 1e3)
                })
            };
            let offered = rows
                .iter()
                .map(|i| i.offered_per_s.map(|o| o * i.duration_s))
                .sum::<Option<f64>>();
            let cpu = rows
                .iter()
                .map(|i| i.server.map(|s| s.cpu_cores * i.duration_s))
                .sum::<Option<f64>>();
            let rss = rows
                .iter()
                .filter_map(|i| i.server.map(|s| s.rss_bytes))
                .max();
            let mut row = run_cell(runs, label);
            row.extend([
                format!("{:.1} s", rows[0].start_s),
                offered.map_or("–".into(), |o| count((o / secs).round() as u64)),
                count((rows.iter().map(|i| i.completed).sum::<u64>() as f64 / secs).round() as u64),
                count(rows.iter().map(|i| i.failed).sum()),
                q(0.5),
                q(0.99),
                merged
                    .as_ref()
                    .map_or("–".into(), |h| duration_us(h.max() as f64 / 1e3)),
                cpu.map_or("–".into(), |c| format!("{:.3}", c / secs)),
                rss.map_or("–".into(), |b| bytes(b as f64)),
                if rows[0].warmup {
                    "warm-up".into()
                } else {
                    String::new()
                },
            ]);
            table.rows.push(row);
        }
    }
    drop_empty_columns(&mut table);
    table
}

/// Leaves out the columns no row has a figure in (offered/s in a closed loop, the server's
/// columns when loadlab did not watch it).
fn drop_empty_columns(table: &mut Table) {
    let keep: Vec<bool> = (0..table.columns.len())
        .map(|c| table.columns[c].is_empty() || table.rows.iter().any(|r| r[c] != "–"))
        .collect();
    let filter = |cells: &mut Vec<String>| {
        let mut k = keep.iter();
        cells.retain(|_| *k.next().unwrap_or(&true));
    };
    filter(&mut table.columns);
    table.rows.iter_mut().for_each(filter);
}
