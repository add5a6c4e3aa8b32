//! The report as CSV in long form, for spreadsheets, pandas and R: one header, then one row per
//! figure.
//!
//! ```text
//! section,run,start_s,metric,value
//! summary,2026-11-22T03:36:31.960Z,,latency_p99_us,876.543
//! timeline,2026-11-22T03:36:31.960Z,1,p99_us,1630.207
//! ```
//!
//! - `section` says what a row belongs to: `config`, `environment`, `summary`, `failures`,
//!   `generator`, `first_requests`, `server`, `verdicts`, `warnings` (one row per run and
//!   figure), and `timeline` (one row per run, interval and figure).
//! - `run` is the run's label ([`render_runs`]); a single result is labelled by its start time.
//! - `start_s` is the interval's start, in seconds from the run's start, for `timeline` rows;
//!   empty otherwise.
//! - `metric` carries its unit in its name (`latency_p99_us`, `bytes_sent`, `requests_per_s`);
//!   `value` is a number as the result holds it (not rounded), `true`/`false`, or text.
//!
//! Pivot the timeline with e.g. `df[df.section == "timeline"].pivot(index=["run", "start_s"],
//! columns="metric", values="value")`. The server's 100 ms samples are not here (the JSON
//! has them); its per-interval figures are (`server_cpu_cores`, `server_rss_bytes`, ...).
//!
//! Quoting follows RFC 4180 (CRLF line ends; a field with a comma, quote or line break is
//! quoted, quotes doubled). Text that comes from the server or the user (URLs, error details,
//! verdicts) and begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`,
//! so a spreadsheet shows it instead of evaluating it as a formula; numbers are never changed.
//! This module must not format figures for people: values stay machine-readable.

use crate::tables::{shell_words, Run};
use crate::Exporter;
use loadlab_result::{LatencySummary, RunResult};
use std::io::{self, Write};

pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn export(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        render_runs(&[(result.started_at.as_str(), result)], out)
    }
}

/// A cell's value: a number, a flag, or text (which may come from the server).
enum Value {
    Int(u64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Int(v)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::Int(v as u64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

/// Collects the rows of one run.
struct Rows<'w> {
    out: &'w mut dyn Write,
    run: &'w str,
    section: &'static str,
    start_s: Option<f64>,
}

impl Rows<'_> {
    fn put(&mut self, metric: &str, value: impl Into<Value>) -> io::Result<()> {
        let value = match value.into() {
            Value::Int(v) => v.to_string(),
            Value::Float(v) if v.is_finite() => v.to_string(),
            Value::Float(_) => String::new(),
            Value::Bool(v) => v.to_string(),
            Value::Text(t) => defuse(&t),
        };
        let start = self.start_s.map(|s| s.to_string()).unwrap_or_default();
        write!(
            self.out,
            "{},{},{},{},{}\r\n",
            self.section,
            field(&defuse(self.run)),
            start,
            field(metric),
            field(&value)
        )
    }

    fn opt(&mut self, metric: &str, value: Option<impl Into<Value>>) -> io::Result<()> {
        match value {
            Some(v) => self.put(metric, v),
            None => Ok(()),
        }
    }

    fn latency(&mut self, prefix: &str, l: Option<&LatencySummary>) -> io::Result<()> {
        let Some(l) = l else { return Ok(()) };
        self.put(&format!("{prefix}_count"), l.count)?;
        for (stat, v) in [
            ("min", l.min),
            ("mean", l.mean),
            ("stdev", l.stdev),
            ("p50", l.p50),
            ("p75", l.p75),
            ("p90", l.p90),
            ("p95", l.p95),
            ("p99", l.p99),
            ("p99_9", l.p99_9),
            ("p99_99", l.p99_99),
            ("max", l.max),
        ] {
            self.put(&format!("{prefix}_{stat}_us"), v)?;
        }
        Ok(())
    }
}

/// Writes the long-form CSV of one or more runs, each named by its label.
pub fn render_runs(runs: &[Run], out: &mut dyn Write) -> io::Result<()> {
    out.write_all(b"section,run,start_s,metric,value\r\n")?;
    for (label, r) in runs {
        let mut rows = Rows {
            out: &mut *out,
            run: label,
            section: "config",
            start_s: None,
        };
        config(&mut rows, r)?;
        measured(&mut rows, r)?;
        health(&mut rows, r)?;
        timeline(&mut rows, r)?;
    }
    Ok(())
}

fn config(w: &mut Rows, r: &RunResult) -> io::Result<()> {
    let l = &r.load;
    w.put("started_at", r.started_at.as_str())?;
    w.put("loadlab_version", r.loadlab_version.as_str())?;
    w.put("interrupted", r.interrupted)?;
    if !r.command.is_empty() {
        w.put("command", shell_words(&r.command))?;
    }
    w.put("target_method", r.target.method.as_str())?;
    w.put("target_url", r.target.url.as_str())?;
    w.put("target_address", r.target.address.as_str())?;
    if let Some(tls) = &r.target.tls {
        w.put("tls_versions", tls.versions.as_str())?;
        w.put("tls_trust", tls.trust.as_str())?;
        w.put("tls_insecure", tls.insecure)?;
    }
    w.put("protocol", l.protocol.as_str())?;
    w.put("streams", l.streams)?;
    w.put("model", l.model.as_str())?;
    w.put("plan", l.plan.as_str())?;
    w.put("connections", l.connections)?;
    w.put("threads", l.threads)?;
    w.put("keepalive", l.keepalive)?;
    w.opt("duration_s", l.duration_s)?;
    w.opt("requests", l.requests)?;
    w.put("warmup_s", l.warmup_s)?;
    w.put("timeout_s", l.timeout_s)?;
    w.put("connect_timeout_s", l.connect_timeout_s)?;
    w.put("body_bytes", l.body_bytes)?;
    w.opt("arrival", l.arrival.clone())?;
    w.opt("seed", l.seed)?;
    for (i, s) in l.stages.iter().enumerate() {
        w.put(&format!("stage_{i}_duration_s"), s.duration_s)?;
        w.put(&format!("stage_{i}_from"), s.from)?;
        w.put(&format!("stage_{i}_to"), s.to)?;
    }
    w.put("interval_s", l.interval_s)?;
    w.opt("tick_s", l.tick_s)?;
    w.put("busy_poll", l.busy_poll)?;
    w.opt("busy_poll_why", l.busy_poll_why.clone())?;
    w.put("rx_stamps", l.rx_stamps)?;
    w.section = "environment";
    let e = &r.environment;
    w.put("hostname", e.hostname.as_str())?;
    w.put("os", e.os.as_str())?;
    w.put("kernel", e.kernel.as_str())?;
    w.put("arch", e.arch.as_str())?;
    w.put("cpus", e.cpus)
}

fn measured(w: &mut Rows, r: &RunResult) -> io::Result<()> {
    let m = &r.measured;
    w.section = "summary";
    w.put("duration_s", m.duration_s)?;
    // An open loop's rates are over the duration and this (see `PhaseSummary::drain_s`).
    w.opt("drain_s", m.drain_s)?;
    w.put("requests_issued", m.requests.issued)?;
    w.put("requests_completed", m.requests.completed)?;
    w.put("requests_failed", m.requests.failed)?;
    w.put("requests_not_sent", m.requests.not_sent)?;
    w.put("requests_per_s", m.requests.per_second)?;
    w.put("in_flight_at_end", r.in_flight_at_end)?;
    w.latency("latency", m.latency_us.as_ref())?;
    w.latency("service_time", m.service_time_us.as_ref())?;
    w.latency("ttfb", m.ttfb_us.as_ref())?;
    w.latency("send_lag", m.send_lag_us.as_ref())?;
    w.latency("scheduler_lag", m.scheduler_lag_us.as_ref())?;
    w.latency("connect", m.connect_us.as_ref())?;
    w.latency("tls_handshake", m.tls_handshake_us.as_ref())?;
    if r.target.tls.is_some() {
        w.put("tls_resumed", m.tls_resumed)?;
        w.put("tls_full", m.tls_full)?;
    }
    if let Some(e) = &m.early_data {
        w.put("early_data_connections", e.connections)?;
        w.put("early_data_connections_accepted", e.connections_accepted)?;
        w.put("early_data_connections_rejected", e.connections_rejected)?;
        w.put("early_data_requests", e.requests)?;
        w.put("early_data_requests_accepted", e.requests_accepted)?;
        w.put("early_data_requests_rejected", e.requests_rejected)?;
        w.latency("early_data_handshake", e.handshake_us.as_ref())?;
    }
    w.put("connections_opened", m.connections_opened)?;
    w.put("connections_failed", m.connections_failed)?;
    for (code, n) in &m.status_codes {
        w.put(&format!("status_{code}"), *n)?;
    }
    let b = &m.bytes;
    w.put("bytes_sent", b.sent)?;
    w.put("bytes_received", b.received)?;
    w.put("bytes_sent_per_s", b.sent_per_s)?;
    w.put("bytes_received_per_s", b.received_per_s)?;
    w.put("max_bytes_sent_per_s", b.max_sent_per_s)?;
    w.put("max_bytes_received_per_s", b.max_received_per_s)?;
    if let Some(wire) = &m.wire_bytes {
        w.put("wire_bytes_sent", wire.sent)?;
        w.put("wire_bytes_received", wire.received)?;
    }
    if let Some(warm) = &r.warmup {
        w.put("warmup_duration_s", warm.duration_s)?;
        w.put("warmup_requests_completed", warm.requests.completed)?;
        w.put("warmup_requests_failed", warm.requests.failed)?;
        w.latency("warmup_latency", warm.latency_us.as_ref())?;
    }
    w.section = "failures";
    for (class, n) in &m.errors {
        w.put(&format!("errors_{class}"), *n)?;
    }
    for (class, detail) in &m.error_details {
        w.put(&format!("error_detail_{class}"), detail.as_str())?;
    }
    if let Some(first) = &r.first_requests {
        w.section = "first_requests";
        w.put("requests", first.requests)?;
        w.put("window_s", first.window_s)?;
        w.latency("first", Some(&first.latency_us))?;
        w.latency("rest", Some(&first.rest_us))?;
        w.put("cold_start", first.cold_start)?;
    }
    Ok(())
}

fn health(w: &mut Rows, r: &RunResult) -> io::Result<()> {
    let g = &r.generator;
    w.section = "generator";
    w.put("cpu_user_s", g.cpu_user_s)?;
    w.put("cpu_system_s", g.cpu_system_s)?;
    w.opt("cpu_s_per_100k_requests", g.cpu_s_per_100k_requests)?;
    for (i, busy) in g.thread_busy.iter().enumerate() {
        w.put(&format!("thread_{i}_busy"), *busy)?;
    }
    if let Some(n) = g.nofile {
        w.put("nofile_soft_before", n.soft_before)?;
        w.put("nofile_soft", n.soft)?;
        w.put("nofile_hard", n.hard)?;
    }
    w.put("pm_qos", g.pm_qos.as_str())?;
    w.opt("max_steal", g.max_steal)?;
    w.opt("busy_poll_idle_s", g.busy_poll_idle_s)?;
    if let Some(s) = &r.server {
        w.section = "server";
        w.put("source", s.source.as_str())?;
        w.put("description", s.description.as_str())?;
        w.opt("pid", s.pid.map(u64::from))?;
        if let Some(st) = &s.startup {
            w.put("ready_s", st.ready_s)?;
            w.put("health_url", st.health_url.as_str())?;
            w.put("idle_rss_bytes", st.idle_rss_bytes)?;
            w.opt("idle_memory_bytes", st.idle_memory_bytes)?;
        }
        if let Some(l) = &s.limits {
            for (name, held) in [("cpus", &l.cpus), ("memory", &l.memory), ("pin", &l.pin)] {
                if let Some(h) = held {
                    w.put(&format!("limit_{name}"), h.requested.as_str())?;
                    w.put(&format!("limit_{name}_applied"), h.applied)?;
                }
            }
        }
        if let Some(sum) = &s.summary {
            let c = sum.cpu_cores_per_s.unwrap_or(sum.cpu_cores);
            for (stat, v) in [("p50", c.p50), ("p99", c.p99), ("max", c.max)] {
                w.put(&format!("cpu_cores_{stat}"), v)?;
            }
            w.opt("cpu_quota_cores", sum.cpu_quota_cores)?;
            w.opt("throttled_periods", sum.throttled_periods)?;
            w.opt("periods", sum.periods)?;
            w.opt("throttled_s", sum.throttled_s)?;
            let m = sum.rss_bytes;
            for (stat, v) in [("p50", m.p50), ("p99", m.p99), ("max", m.max)] {
                w.put(&format!("rss_bytes_{stat}"), v)?;
            }
            w.opt("memory_bytes_p99", sum.memory_bytes.map(|m| m.p99))?;
            w.opt("memory_limit_bytes", sum.memory_limit_bytes)?;
            w.opt("sent_bytes", sum.sent_bytes)?;
            w.put("threads_max", sum.threads_max)?;
            w.put("fds_max", sum.fds_max)?;
            w.put("processes_max", sum.processes_max)?;
            w.opt("oom_kills", sum.oom_kills)?;
        }
        if let Some(exit) = &s.exit {
            w.put("exit_at_s", exit.at_s)?;
            w.put("exit_status", exit.status.as_str())?;
            w.put("exit_oom_killed", exit.oom_killed)?;
        }
    }
    w.section = "verdicts";
    for v in &r.verdicts {
        w.put("verdict", v.as_str())?;
    }
    w.section = "warnings";
    for v in &r.warnings {
        w.put("warning", v.as_str())?;
    }
    Ok(())
}

fn timeline(w: &mut Rows, r: &RunResult) -> io::Result<()> {
    w.section = "timeline";
    for i in &r.timeline {
        w.start_s = Some(i.start_s);
        w.put("duration_s", i.duration_s)?;
        w.put("warmup", i.warmup)?;
        w.opt("offered_per_s", i.offered_per_s)?;
        w.opt("connections", i.connections)?;
        w.put("achieved_per_s", i.achieved_per_s)?;
        w.put("completed", i.completed)?;
        w.put("failed", i.failed)?;
        w.opt("p50_us", i.p50_us)?;
        w.opt("p90_us", i.p90_us)?;
        w.opt("p99_us", i.p99_us)?;
        w.opt("max_us", i.max_us)?;
        w.put("bytes_sent", i.bytes_sent)?;
        w.put("bytes_received", i.bytes_received)?;
        w.opt("steal", i.steal)?;
        if let Some(s) = &i.server {
            w.put("server_cpu_cores", s.cpu_cores)?;
            w.put("server_rss_bytes", s.rss_bytes)?;
            w.opt("server_memory_bytes", s.memory_bytes)?;
            w.opt("server_throttled_periods", s.throttled_periods)?;
            w.opt("server_sent_bytes", s.sent_bytes)?;
            w.put("generator_cpu_cores", s.generator_cpu_cores)?;
        }
    }
    w.start_s = None;
    Ok(())
}

/// RFC 4180: quote a field holding a comma, a quote or a line break; double its quotes.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// Text a spreadsheet would evaluate as a formula gets a leading `'`.
fn defuse(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\r\nlines"), "\"two\r\nlines\"");
        assert_eq!(defuse("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(defuse("-c 10"), "'-c 10");
        assert_eq!(defuse("GET"), "GET");
    }
}
