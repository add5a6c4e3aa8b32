//! The tables of how and where a run happened: configuration, environment, the generator's
//! health and the server's side. Plain-text cells with units; no escaping or markup here.

use super::{shell_words, yes_no, Figures, Run, Table};
use crate::format::{bytes, count, duration_us};
use loadlab_result::RunResult;

pub(super) fn configuration(runs: &[Run]) -> Table {
    let mut f = Figures::new("Configuration", runs);
    f.row("Target", |r| {
        Some(format!("{} {}", r.target.method, r.target.url))
    });
    f.row("Address", |r| Some(r.target.address.clone()));
    f.row("Protocol", |r| {
        Some(match r.load.streams {
            0 | 1 => r.load.protocol.clone(),
            n => format!("{}, {n} streams per connection", r.load.protocol),
        })
    });
    f.row("Plan", |r| Some(r.load.plan.clone()));
    f.row("Load model", |r| Some(r.load.model.replace('_', " ")));
    f.row("Connections", |r| Some(count(r.load.connections as u64)));
    f.row("Threads", |r| Some(count(r.load.threads as u64)));
    f.row("Keep-alive", |r| Some(yes_no(r.load.keepalive)));
    f.row("Duration", |r| r.load.duration_s.map(|d| format!("{d} s")));
    f.row("Request count", |r| r.load.requests.map(count));
    f.row("Warm-up", |r| Some(format!("{} s", r.load.warmup_s)));
    f.row("Timeouts (response / connect)", |r| {
        Some(format!(
            "{} s / {} s",
            r.load.timeout_s, r.load.connect_timeout_s
        ))
    });
    f.row("Arrivals", |r| {
        r.load.arrival.as_ref().map(|a| match r.load.seed {
            Some(seed) => format!("{a}, seed {seed}"),
            None => a.clone(),
        })
    });
    f.row("Stages", |r| {
        (!r.load.stages.is_empty()).then(|| {
            let each: Vec<String> = r
                .load
                .stages
                .iter()
                .map(|s| {
                    if s.from == s.to {
                        format!("{} s at {}", s.duration_s, s.from)
                    } else {
                        format!("{} s from {} to {}", s.duration_s, s.from, s.to)
                    }
                })
                .collect();
            each.join(", ")
        })
    });
    f.row("Timeline interval", |r| {
        Some(format!("{} s", r.load.interval_s))
    });
    f.row("Tick", |r| r.load.tick_s.map(|t| duration_us(t * 1e6)));
    f.row("Busy-polling", |r| {
        (r.load.busy_poll || r.load.busy_poll_why.is_some())
            .then(|| r.load.busy_poll_why.clone().unwrap_or_else(|| "yes".into()))
    });
    f.row("Kernel receive stamps", |r| {
        r.load.rx_stamps.then(|| "yes".into())
    });
    f.row("Request body", |r| {
        (r.load.body_bytes > 0).then(|| bytes(r.load.body_bytes as f64))
    });
    f.row("TLS", |r| {
        r.target.tls.as_ref().map(|t| {
            format!(
                "{}, trust: {}{}",
                t.versions,
                t.trust,
                if t.insecure { " (INSECURE)" } else { "" }
            )
        })
    });
    f.row("Started at", |r| Some(r.started_at.clone()));
    f.row("Interrupted", |r| {
        r.interrupted.then(|| "yes: partial result".into())
    });
    f.row("Command", |r| {
        (!r.command.is_empty()).then(|| shell_words(&r.command))
    });
    f.row("loadlab version", |r| Some(r.loadlab_version.clone()));
    f.table
}

pub(super) fn environment(runs: &[Run]) -> Table {
    let mut f = Figures::new("Environment", runs);
    f.row("Host", |r| Some(r.environment.hostname.clone()));
    f.row("System", |r| {
        let e = &r.environment;
        Some(format!("{} {} ({})", e.os, e.kernel, e.arch))
    });
    f.row("CPUs", |r| Some(r.environment.cpus.to_string()));
    f.table
}

pub(super) fn generator(runs: &[Run]) -> Table {
    let mut f = Figures::new("Generator health", runs);
    f.row("CPU (user + system)", |r| {
        let g = &r.generator;
        Some(format!("{:.2} s + {:.2} s", g.cpu_user_s, g.cpu_system_s))
    });
    f.row("CPU per 100k requests", |r| {
        r.generator
            .cpu_s_per_100k_requests
            .map(|c| format!("{c:.2} s"))
    });
    f.row("Threads busy", |r| {
        let busy: Vec<String> = r
            .generator
            .thread_busy
            .iter()
            .map(|b| format!("{:.0}%", b * 100.0))
            .collect();
        (!busy.is_empty()).then(|| busy.join(" "))
    });
    f.row("Busy-poll idle CPU", |r| {
        r.generator.busy_poll_idle_s.map(|s| format!("{s:.2} s"))
    });
    f.row("Open files limit", |r| {
        r.generator.nofile.map(|n| {
            format!(
                "{} (hard {}, was {})",
                count(n.soft),
                count(n.hard),
                count(n.soft_before)
            )
        })
    });
    f.row("PM QoS", |r| Some(r.generator.pm_qos.clone()));
    f.row("Hypervisor steal, worst interval", |r| {
        r.generator.max_steal.map(|s| format!("{:.2}%", s * 100.0))
    });
    f.table
}

pub(super) fn server(runs: &[Run]) -> Option<Table> {
    if runs.iter().all(|(_, r)| r.server.is_none()) {
        return None;
    }
    let mut f = Figures::new("Server", runs);
    f.row("Process", |r| {
        r.server.as_ref().map(|s| match s.pid {
            Some(pid) => format!("{} ({}, pid {pid})", s.description, s.source),
            None => format!("{} ({})", s.description, s.source),
        })
    });
    f.row("Limits", |r| {
        let l = r.server.as_ref()?.limits.as_ref()?;
        let held = l.describe();
        (!held.is_empty()).then(|| format!("{} via {}", held.join(", "), l.mechanism))
    });
    f.row("Start-up", |r| {
        let st = r.server.as_ref()?.startup.as_ref()?;
        Some(format!(
            "ready in {} ({}), idle RSS {}",
            duration_us(st.ready_s * 1e6),
            st.health_url,
            bytes(st.idle_rss_bytes as f64)
        ))
    });
    let sum = |r: &RunResult| r.server.as_ref().and_then(|s| s.summary.clone());
    f.row("CPU cores p50 / p99 / max", |r| {
        let s = sum(r)?;
        let c = s.cpu_cores_per_s.unwrap_or(s.cpu_cores);
        Some(format!("{:.3} / {:.3} / {:.3}", c.p50, c.p99, c.max))
    });
    f.row("CPU quota", |r| {
        let s = sum(r)?;
        let q = s.cpu_quota_cores?;
        Some(match s.cpu_quota_share {
            Some(share) => format!("{q} cores; used {:.0}% at p99", share.p99 * 100.0),
            None => format!("{q} cores"),
        })
    });
    f.row("Throttled periods", |r| {
        let s = sum(r)?;
        let (t, p) = (s.throttled_periods?, s.periods?);
        Some(format!(
            "{} of {} ({:.2} s waiting)",
            count(t),
            count(p),
            s.throttled_s.unwrap_or(0.0)
        ))
    });
    f.row("RSS p50 / p99 / max", |r| {
        let m = sum(r)?.rss_bytes;
        Some(format!(
            "{} / {} / {}",
            bytes(m.p50),
            bytes(m.p99),
            bytes(m.max)
        ))
    });
    f.row("cgroup memory p99", |r| {
        let s = sum(r)?;
        let m = s.memory_bytes?;
        Some(match s.memory_limit_bytes {
            Some(limit) => format!("{} of a {} limit", bytes(m.p99), bytes(limit as f64)),
            None => bytes(m.p99),
        })
    });
    f.row("Sent to clients", |r| {
        sum(r)?.sent_bytes.map(|b| bytes(b as f64))
    });
    f.row("Processes / threads / open files", |r| {
        let s = sum(r)?;
        Some(format!(
            "{} / {} / {}",
            s.processes_max, s.threads_max, s.fds_max
        ))
    });
    f.row("OOM kills", |r| sum(r)?.oom_kills.map(count));
    f.row("Exit", |r| {
        let e = r.server.as_ref()?.exit.as_ref()?;
        Some(format!(
            "{} at {:.1} s{}",
            e.status,
            e.at_s,
            if e.oom_killed { " (OOM-killed)" } else { "" }
        ))
    });
    Some(f.table)
}
