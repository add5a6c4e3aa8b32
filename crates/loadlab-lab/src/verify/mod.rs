//! `lab verify NAME|URL`: holds a running server to the workload contract
//! (`targets/CONTRACT.md`) and reports every check. A failed request is a finding, never an
//! early return: the report says which endpoint broke, what was expected and what came back.
//! Verification sends a few dozen requests to the one server it was pointed at; it does not
//! generate load. Over HTTPS (`--tls`, issue 19) every check runs over TLS, plus the TLS
//! checks of [`tls_checks`] (ALPN, the certificate served, session resumption, and, for a
//! target by name, that only one of `TLS_CERT`/`TLS_KEY` is a configuration error), and,
//! for a target that serves HTTP/3, [`h3_checks`] over QUIC on the same port number. A
//! target that serves the contract's gRPC service gets [`grpc_checks`], over h2c or TLS.

mod cases;
pub mod client;
pub mod expect;
mod grpc_checks;
mod h3_checks;
mod half_config;
mod metrics_checks;
mod tls_checks;
mod upstream_checks;
mod upstream_grpc_checks;

pub use upstream_grpc_checks::GrpcSummary;

pub use tls_checks::TlsSummary;

use crate::content::ReferenceSite;
use crate::lab::Lab;
use crate::serve::{ServeOptions, ServeTls};
use crate::LabError;
use client::TlsClient;
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
    /// Whether the server serves its own `/metrics` (the manifest's `metrics` capability;
    /// `verify_target` reads it from there). When false its checks are skipped.
    pub metrics: bool,
    /// Whether the server serves HTTP/3 beside HTTPS (the manifest's `http3` capability;
    /// `verify_target` reads it from there). Checked over HTTPS only; skipped otherwise.
    pub http3: bool,
    /// Whether the server serves the contract's gRPC service on its port (the manifest's
    /// `grpc` capability; `verify_target` reads it from there). When false its checks are
    /// skipped.
    pub grpc: bool,
    /// Longest wait for any one response.
    pub request_timeout: Duration,
    /// Longest wait for `Date` to change, counted after the first second.
    pub date_change_timeout: Duration,
    /// `verify_target`: serve the target over HTTPS with a throwaway CA and certificate, and
    /// its mock upstream too (the target gets `UPSTREAM_CA`); every check runs over TLS, plus
    /// the TLS checks.
    pub tls: bool,
    /// `verify_url` of an `https://` URL (and an `https://` upstream): the CA certificates,
    /// PEM, to trust.
    pub ca_pem: Option<Vec<u8>>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            content_dir: None,
            upstream_url: None,
            upstream_grpc: true,
            metrics: false,
            http3: false,
            grpc: false,
            request_timeout: Duration::from_secs(10),
            date_change_timeout: Duration::from_secs(2),
            tls: false,
            ca_pem: None,
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
    /// The mock upstream served HTTPS (its stats then count TLS handshakes).
    pub https: bool,
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
    /// What the TLS checks saw (HTTPS only).
    pub tls: Option<TlsSummary>,
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

/// Verifies the running server at `url` (`http://HOST:PORT`, or `https://HOST:PORT` with
/// `options.ca_pem`).
pub async fn verify_url(url: &str, options: &VerifyOptions) -> Result<Report, LabError> {
    let (addr, https) = resolve(url).await?;
    let content_dir = options
        .content_dir
        .clone()
        .ok_or(LabError::NoReferenceContent)?;
    let reference = ReferenceSite::load(&content_dir)?;
    let tls_for = |addr: SocketAddr, url: &str| -> Result<TlsClient, LabError> {
        let ca = options.ca_pem.as_deref().ok_or_else(|| LabError::BadUrl {
            url: url.into(),
            reason: "an https:// URL needs the CA that signed its certificate (--cacert FILE)"
                .into(),
        })?;
        Ok(TlsClient::new(
            loadlab_certs::client_config(ca, &[b"http/1.1"], None)?,
            addr,
        ))
    };
    let target_tls = if https {
        Some(cases::TargetTls {
            client: tls_for(addr, url)?,
            ca_pem: options.ca_pem.clone().unwrap_or_default(),
            expected_cert: None,
        })
    } else {
        None
    };
    let upstream = match &options.upstream_url {
        Some(upstream) => {
            let (stats_addr, https) = resolve(upstream).await?;
            let tls = https.then(|| tls_for(stats_addr, upstream)).transpose()?;
            Some(cases::UpstreamStats {
                addr: stats_addr,
                tls,
                grpc_addr: None,
            })
        }
        None => None,
    };
    Ok(cases::run(
        url.to_string(),
        addr,
        &reference,
        upstream,
        target_tls,
        options,
    )
    .await)
}

/// Starts the built target `name` with a mock upstream of its own (HTTP and gRPC on one port;
/// over HTTPS, a second, plain one for gRPC), verifies it, and stops them. `serve` sets
/// workers, backlog and timeouts; its upstream URLs are replaced; `options.upstream_grpc` is
/// replaced by the manifest's capability.
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
    options.metrics = lab.target(name)?.has(crate::manifest::METRICS);
    options.http3 = lab.target(name)?.has(crate::manifest::HTTP3);
    options.grpc = lab.target(name)?.has(crate::manifest::GRPC);
    let options = &options;
    // The throwaway CA and certificate live as long as this call: the target, its mock
    // upstream and the checks all use them; the files are removed when it returns.
    let certs = if options.tls {
        Some(loadlab_certs::CertDir::create(&[serve.host])?)
    } else {
        None
    };
    let upstream_config = match &certs {
        Some(certs) => UpstreamConfig::with_tls(loadlab_certs::server_config_for(
            certs.issued(),
            &[b"http/1.1"],
        )?),
        None => UpstreamConfig::default(),
    };
    let upstream = Upstream::start(upstream_config).await?;
    // gRPC is served without TLS only: over HTTPS a second, plain mock upstream serves the
    // target's gRPC calls (the target itself still serves HTTPS).
    let grpc_upstream = if certs.is_some() && options.upstream_grpc {
        Some(Upstream::start(UpstreamConfig::default()).await?)
    } else {
        None
    };
    let mut serve = serve.clone();
    serve.upstream_url = Some(upstream.url());
    serve.upstream_grpc_url = grpc_upstream
        .as_ref()
        .and_then(|u| crate::serve::grpc_url_of(&u.url()));
    serve.upstream_ca = certs.as_ref().map(|c| c.ca_path());
    serve.tls = certs.as_ref().map(ServeTls::from_dir);
    let half_config = match &certs {
        Some(certs) => {
            let (lab, name, serve, certs) = (
                lab.clone(),
                name.to_string(),
                serve.clone(),
                (certs.cert_path(), certs.key_path()),
            );
            // Processes started and waited for: off the runtime's threads.
            tokio::task::spawn_blocking(move || half_config::checks(&lab, &name, &serve, certs))
                .await
                .unwrap_or_default()
        }
        None => Vec::new(),
    };
    let tls_client = match &serve.tls {
        Some(tls) => Some(tls.client_config()?),
        None => None,
    };
    let (lab_owned, name_owned) = (lab.clone(), name.to_string());
    // Starting a process and polling /healthz blocks; keep it off the runtime's threads.
    let mut served = tokio::task::spawn_blocking(move || lab_owned.serve(&name_owned, &serve))
        .await
        .map_err(|e| LabError::Startup {
            name: name.into(),
            message: format!("the start-up task failed: {e}"),
            stderr_tail: Vec::new(),
        })??;
    let target_tls = match (&tls_client, &certs) {
        (Some(config), Some(certs)) => Some(cases::TargetTls {
            client: TlsClient::new(config.clone(), served.addr()),
            ca_pem: certs.ca_pem().as_bytes().to_vec(),
            expected_cert: Some(certs.issued().cert_der.clone()),
        }),
        _ => None,
    };
    let upstream_stats = cases::UpstreamStats {
        addr: upstream.addr(),
        tls: tls_client
            .as_ref()
            .map(|config| TlsClient::new(config.clone(), upstream.addr())),
        grpc_addr: grpc_upstream.as_ref().map(|u| u.addr()),
    };
    let mut report = cases::run(
        name.to_string(),
        served.addr(),
        &reference,
        Some(upstream_stats),
        target_tls,
        options,
    )
    .await;
    report.checks.extend(half_config);
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
    if let Some(grpc_upstream) = grpc_upstream {
        let _ = grpc_upstream.shutdown().await;
    }
    drop(certs);
    Ok(report)
}

/// `http(s)://HOST:PORT[/...]` to a socket address, and whether it is `https`.
async fn resolve(url: &str) -> Result<(SocketAddr, bool), LabError> {
    let bad = |reason: &str| LabError::BadUrl {
        url: url.into(),
        reason: reason.into(),
    };
    let uri: hyper::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(bad("only http:// and https:// are supported")),
    };
    let host = uri
        .host()
        .ok_or_else(|| bad("no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let mut addrs = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| bad(&format!("cannot resolve: {e}")))?;
    let addr = addrs.next();
    addr.map(|a| (a, https))
        .ok_or_else(|| bad("the host resolves to no address"))
}
