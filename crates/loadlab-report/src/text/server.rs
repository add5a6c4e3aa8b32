//! The server's side of the text summary: limits, start-up, CPU and memory, how it died.

use super::row;
use super::*;

/// What loadlab saw of the server: limits, start-up, CPU and memory over the measured phase.
pub(super) fn server_section(s: &mut String, server: &loadlab_result::ServerReport) {
    s.push_str("\nServer\n");
    let mut what = format!("{} ({})", server.description, server.source);
    if let Some(pid) = server.pid {
        let _ = write!(what, ", pid {pid}");
    }
    row(s, "  Process", &what);
    if let Some(a) = &server.agent {
        agent_rows(s, a);
    }
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
        // Read from the server's metrics: no process, thread or file counts.
        if server.source == "metrics" {
            return;
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

/// The server's host, seen through its agent: who, the clock, its TCP counters, a loss.
fn agent_rows(s: &mut String, a: &loadlab_result::AgentReport) {
    row(
        s,
        "  Host",
        &format!(
            "{} through its agent {} (protocol {}, loadlab {}); clock offset {:+.3} ms ± {:.3} ms \
             ({} estimate{})",
            a.hostname,
            a.url,
            a.protocol,
            a.agent_version,
            a.clock_offset_s * 1e3,
            a.clock_uncertainty_s * 1e3,
            a.clock_estimates.len().max(1),
            if a.clock_estimates.len() > 1 { "s" } else { "" }
        ),
    );
    if let Some(k) = &a.kernel {
        super::machine::tcp_rows(s, k, "  Host ");
    }
    if let Some(lost) = &a.lost {
        row(
            s,
            "  Agent lost",
            &format!("at {:.1} s: {}", lost.at_s, lost.reason),
        );
    }
}
