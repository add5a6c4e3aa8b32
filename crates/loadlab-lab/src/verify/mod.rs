//! `lab verify NAME|URL`: holds a running server to the workload contract
//! (`targets/CONTRACT.md`) and reports every check. A failed request is a finding, never an
//! early return: the report says which endpoint broke, what was expected and what came back.
//! Verification sends a few dozen requests to the one server it was pointed at; it does not
//! generate load.

mod cases;
pub mod client;
pub mod expect;
mod upstream_checks;
mod upstream_grpc_checks;

pub use upstream_grpc_checks::GrpcSummary;

use crate::content::ReferenceSite;
use crate::lab::Lab;
use crate::serve::ServeOptions;
use crate::LabError;
use loadlab_upstream::{Stats, Upstream, UpstreamConfig};
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The reference content; `verify_target` uses the lab's when `None`.
    pub content_dir: Option<PathBuf>,
    /// The base URL of the mock upstream the server calls (`verify_url` only; `verify_target`
    /// starts its own). Without it the `/upstream` checks are skipped.
    pub upstream_url: Option<String>,
    /// Whether the server implements `/upstream-grpc` (the manifest's `upstream-grpc`
    /// capability; `verify_target` reads it from there). When false its checks are skipped.
    pub upstream_grpc: bool,
    /// Longest wait for any one response.
    pub request_timeout: Duration,
    /// Longest wait for `Date` to change, counted after the first second.
    pub date_change_timeout: Duration,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            content_dir: None,
            upstream_url: None,
            upstream_grpc: true,
            request_timeout: Duration::from_secs(10),
            date_change_timeout: Duration::from_secs(2),
        }
    }
}

/// The result of one comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail { expected: String, got: String },
    Skip { reason: String },
}

/// One aspect of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The request, e.g. `GET /delay?ms=-1` or `POST /echo (chunked, 70000 bytes)`.
    pub endpoint: String,
    /// What was compared: `status`, `body`, `Date header`, `upstream connections`, ...
    pub what: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// Connection reuse seen by the mock upstream during the `/upstream` checks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct UpstreamSummary {
    /// Traffic caused by the pooled `/upstream?calls=8` requests.
    pub pooled: Stats,
    /// Traffic caused by the `client=per-call` requests.
    pub per_call: Stats,
    /// Upstream requests per connection with the pooled client (1.0 = no reuse).
    pub pooled_reuse_ratio: Option<f64>,
}

/// Everything `verify` found.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Target name, or the URL for `verify URL`.
    pub target: String,
    pub addr: SocketAddr,
    pub checks: Vec<Check>,
    pub upstream: Option<UpstreamSummary>,
    /// The same for `/upstream-grpc`, when it was checked.
    pub upstream_grpc: Option<GrpcSummary>,
}

impl Report {
    /// True when nothing failed (skips do not fail a report).
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }

    pub fn failures(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Fail { .. }))
    }

    /// The distinct endpoints with at least one failed check, in check order.
    pub fn failed_endpoints(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for check in self.failures() {
            if !seen.contains(&check.endpoint.as_str()) {
                seen.push(&check.endpoint);
            }
        }
        seen
    }

    /// (passed, failed, skipped).
    pub fn counts(&self) -> (usize, usize, usize) {
        self.checks
            .iter()
            .fold((0, 0, 0), |(p, f, s), c| match c.outcome {
                Outcome::Pass => (p + 1, f, s),
                Outcome::Fail { .. } => (p, f + 1, s),
                Outcome::Skip { .. } => (p, f, s + 1),
            })
    }
}

/// Verifies the running server at `url` (`http://HOST:PORT`).
pub async fn verify_url(url: &str, options: &VerifyOptions) -> Result<Report, LabError> {
    let addr = resolve(url).await?;
    let content_dir = options
        .content_dir
        .clone()
        .ok_or(LabError::NoReferenceContent)?;
    let reference = ReferenceSite::load(&content_dir)?;
    let stats_addr = match &options.upstream_url {
        Some(upstream) => Some(resolve(upstream).await?),
        None => None,
    };
    Ok(cases::run(url.to_string(), addr, &reference, stats_addr, options).await)
}

/// Starts the built target `name` with a mock upstream of its own (HTTP and gRPC on one port),
/// verifies it, and stops both. `serve` sets workers, backlog and timeouts; its upstream URL is
/// replaced; `options.upstream_grpc` is replaced by the manifest's capability.
pub async fn verify_target(
    lab: &Lab,
    name: &str,
    serve: &ServeOptions,
    options: &VerifyOptions,
) -> Result<Report, LabError> {
    let reference = ReferenceSite::load(
        &options
            .content_dir
            .clone()
            .unwrap_or_else(|| lab.content_dir()),
    )?;
    let mut options = options.clone();
    options.upstream_grpc = lab.target(name)?.has(crate::manifest::UPSTREAM_GRPC);
    let options = &options;
    let upstream = Upstream::start(UpstreamConfig::default()).await?;
    let mut serve = serve.clone();
    serve.upstream_url = Some(upstream.url());
    let (lab_owned, name_owned) = (lab.clone(), name.to_string());
    // Starting a process and polling /healthz blocks; keep it off the runtime's threads.
    let mut served = tokio::task::spawn_blocking(move || lab_owned.serve(&name_owned, &serve))
        .await
        .map_err(|e| LabError::Startup {
            name: name.into(),
            message: format!("the start-up task failed: {e}"),
            stderr_tail: Vec::new(),
        })??;
    let mut report = cases::run(
        name.to_string(),
        served.addr(),
        &reference,
        Some(upstream.addr()),
        options,
    )
    .await;
    if !served.is_running() {
        report.checks.push(Check {
            endpoint: "process".into(),
            what: "still running after verification".into(),
            outcome: Outcome::Fail {
                expected: "the target process still running".into(),
                got: format!("it exited; last stderr lines: {:?}", served.stderr_tail()),
            },
        });
    }
    served.stop();
    let _ = upstream.shutdown().await;
    Ok(report)
}

/// `http://HOST:PORT[/...]` to a socket address.
async fn resolve(url: &str) -> Result<SocketAddr, LabError> {
    let bad = |reason: &str| LabError::BadUrl {
        url: url.into(),
        reason: reason.into(),
    };
    let uri: hyper::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if uri.scheme_str() != Some("http") {
        return Err(bad("only http:// is supported"));
    }
    let host = uri
        .host()
        .ok_or_else(|| bad("no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let mut addrs = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| bad(&format!("cannot resolve: {e}")))?;
    let addr = addrs.next();
    addr.ok_or_else(|| bad("the host resolves to no address"))
}
