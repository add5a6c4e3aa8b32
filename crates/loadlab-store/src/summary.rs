//! The figures of a run that the store keeps as columns, so SQL (and `loadlab runs list`)
//! can filter and sort runs without opening their result documents. All come from the
//! measured phase (warm-up excluded) and from the server's report when there is one. Pure:
//! this module must not touch the database; the result document stays the source of truth.

use loadlab_result::RunResult;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// It ran to its end.
    Complete,
    /// It was stopped early (Ctrl-C, an experiment stopped): its figures cover less time.
    Interrupted,
    /// The server under test exited or was killed during the run, which ended there.
    ServerExited,
}

impl RunStatus {
    pub fn of(result: &RunResult) -> RunStatus {
        if result.interrupted {
            RunStatus::Interrupted
        } else if result.server.as_ref().is_some_and(|s| s.exit.is_some()) {
            RunStatus::ServerExited
        } else {
            RunStatus::Complete
        }
    }

    /// The name kept in the `status` column.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::ServerExited => "server_exited",
        }
    }

    pub fn parse(text: &str) -> Option<RunStatus> {
        [
            RunStatus::Complete,
            RunStatus::Interrupted,
            RunStatus::ServerExited,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// A run's figures as the store's columns hold them. Optional figures are absent when the
/// run did not measure them (no request completed, no server watched, no cold-start check).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub target_url: String,
    /// `closed_loop` or `open_loop`.
    pub load_model: String,
    pub duration_s: Option<f64>,
    pub requests_issued: u64,
    pub requests_completed: u64,
    pub requests_failed: u64,
    /// Completed requests per second.
    pub rps: f64,
    pub latency_p50_us: Option<f64>,
    pub latency_p90_us: Option<f64>,
    pub latency_p99_us: Option<f64>,
    pub latency_p99_9_us: Option<f64>,
    pub latency_max_us: Option<f64>,
    /// Failed over issued; absent when nothing was issued.
    pub error_rate: Option<f64>,
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    /// The most bytes loadlab sent in any one second.
    pub busiest_second_sent_bytes: Option<u64>,
    /// The server's CPU over the sample windows, in cores.
    pub server_cpu_p50_cores: Option<f64>,
    pub server_cpu_p99_cores: Option<f64>,
    /// The server's resident memory, p99 over the sample windows.
    pub server_rss_p99_bytes: Option<u64>,
    /// The cgroup's charged memory (what a memory limit is checked against), p99; only when
    /// the server ran in a cgroup.
    pub server_memory_p99_bytes: Option<u64>,
    /// Generator CPU seconds per 100,000 completed requests.
    pub generator_cpu_s_per_100k: Option<f64>,
    /// The first requests were much slower than the rest.
    pub cold_start: Option<bool>,
    /// From the server's spawn to its first good health check.
    pub ready_s: Option<f64>,
}

impl Summary {
    pub fn of(result: &RunResult) -> Summary {
        let m = &result.measured;
        let latency = m.latency_us.as_ref();
        let server = result.server.as_ref();
        let resources = server.and_then(|s| s.summary.as_ref());
        Summary {
            target_url: result.target.url.clone(),
            load_model: result.load.model.clone(),
            duration_s: Some(m.duration_s),
            requests_issued: m.requests.issued,
            requests_completed: m.requests.completed,
            requests_failed: m.requests.failed,
            rps: m.requests.per_second,
            latency_p50_us: latency.map(|l| l.p50),
            latency_p90_us: latency.map(|l| l.p90),
            latency_p99_us: latency.map(|l| l.p99),
            latency_p99_9_us: latency.map(|l| l.p99_9),
            latency_max_us: latency.map(|l| l.max),
            error_rate: (m.requests.issued > 0)
                .then(|| m.requests.failed as f64 / m.requests.issued as f64),
            bytes_sent: Some(m.bytes.sent),
            bytes_received: Some(m.bytes.received),
            busiest_second_sent_bytes: Some(m.bytes.max_sent_per_s),
            server_cpu_p50_cores: resources.map(|r| r.cpu_cores.p50),
            server_cpu_p99_cores: resources.map(|r| r.cpu_cores.p99),
            server_rss_p99_bytes: resources.map(|r| r.rss_bytes.p99.round() as u64),
            server_memory_p99_bytes: resources
                .and_then(|r| r.memory_bytes.as_ref())
                .map(|m| m.p99.round() as u64),
            generator_cpu_s_per_100k: result.generator.cpu_s_per_100k_requests,
            cold_start: result.first_requests.as_ref().map(|f| f.cold_start),
            ready_s: server.and_then(|s| s.startup.as_ref()).map(|s| s.ready_s),
        }
    }
}
