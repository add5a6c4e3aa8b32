//! Shared fixtures: the repository's lab, built once; serving a target with a test upstream.

use loadlab_lab::manifest::{GRPC, HTTP3, METRICS, UPSTREAM_GRPC};
use loadlab_lab::{toolchain, Check, Lab, LabError, Outcome, Report, ServeOptions, ServedTarget};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

pub const RUST_TARGETS: [&str; 4] = ["rust-actix-web", "rust-axum", "rust-hyper", "rust-warp"];

/// The targets in other languages (issue 6). Each is verified when its toolchain is on `PATH`
/// and skipped, with a message saying so, when it is not.
pub const OTHER_TARGETS: [&str; 14] = [
    "erlang-cowboy",
    "go-nethttp",
    "java-vertx",
    "java-webflux",
    "kotlin-ktor",
    "kotlin-micronaut",
    "kotlin-ratpack",
    "kotlin-vertx",
    "node-express",
    "node-http",
    "python-flask",
    "python-flask-uwsgi",
    "python-starlette",
    "python-tornado",
];

pub fn targets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets")
}

/// The repository's lab with every target built whose toolchain is installed (once per test
/// binary; later calls wait for the first build and then reuse it). Builds are cached by
/// source fingerprint across runs, so only the first run on a machine pays for them.
pub fn built_lab() -> &'static Lab {
    static BUILT: OnceLock<Lab> = OnceLock::new();
    BUILT.get_or_init(|| {
        let lab = Lab::open(&targets_dir()).expect("open targets/");
        for target in lab.targets() {
            match lab.build(target, false) {
                Ok(outcome) => eprintln!(
                    "lab build {}: {:?} in {:.1} s",
                    outcome.name,
                    outcome.action,
                    outcome.duration.as_secs_f64()
                ),
                // Not a failure: the tests of this target say they are skipped.
                Err(err @ LabError::ToolchainMissing { .. }) => {
                    eprintln!("lab build {}: SKIPPED: {err}", target.name())
                }
                Err(err) => panic!("lab build {}: {err}", target.name()),
            }
        }
        lab
    })
}

/// Why `name` cannot be tested here (its toolchain is missing; a runtime such as `node` or
/// `java` is part of it, so an old build is not enough), after the lab is built; `None` when
/// it can. The reason is printed, so a skipped target is visible in the output.
pub fn skip_reason(name: &str) -> Option<String> {
    let lab = built_lab();
    let target = lab.target(name).expect("a target of the repository's lab");
    let missing = toolchain::missing(&target.manifest.toolchain);
    if missing.is_empty() {
        return None;
    }
    let reason = format!(
        "SKIPPED {name}: {} not on PATH (install: `{}`)",
        missing.join(", "),
        target.manifest.toolchain_install
    );
    eprintln!("{reason}");
    Some(reason)
}

/// Serves `name` with two workers (the machine is small and tests run side by side).
pub fn serve(name: &str, upstream_url: Option<String>) -> ServedTarget {
    let options = ServeOptions {
        workers: Some(2),
        upstream_url,
        ready_timeout: Duration::from_secs(30),
        ..ServeOptions::default()
    };
    built_lab()
        .serve(name, &options)
        .unwrap_or_else(|e| panic!("serve {name}: {e}"))
}

/// A verification's skips and gRPC counts, over HTTP or HTTPS (`over`): by name, the only
/// checks that may be skipped are `/upstream-grpc`'s and `/metrics`'s, each only when the
/// manifest does not declare it; one that declares it made its 24 pooled calls, and 8 connections for the 8
/// calls of a per-call request. Returns the gRPC summary, when there is one, for the caller's
/// own checks.
pub fn assert_skips_and_grpc(
    lab: &Lab,
    name: &str,
    report: &Report,
    over: &str,
) -> Option<loadlab_lab::verify::GrpcSummary> {
    let (_, _, skipped) = report.counts();
    let has_grpc = lab.target(name).unwrap().has(UPSTREAM_GRPC);
    let has_metrics = lab.target(name).unwrap().has(METRICS);
    let has_service = lab.target(name).unwrap().has(GRPC);
    // HTTP/3 is served beside HTTPS only.
    let http3_checked = lab.target(name).unwrap().has(HTTP3) && over == "over HTTPS";
    let skips: Vec<&Check> = report
        .checks
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Skip { .. }))
        .collect();
    assert!(
        skips
            .iter()
            .all(|c| (!has_grpc && c.endpoint.contains("/upstream-grpc"))
                || (!has_metrics && c.endpoint == "GET /metrics")
                || (!http3_checked && c.endpoint.contains("(HTTP/3"))
                || (!has_service && c.endpoint.starts_with("gRPC Workload/"))),
        "{name}: nothing but /upstream-grpc, /metrics, the gRPC service (not declared) and \
         HTTP/3 (not declared, or not over HTTPS) may be skipped {over}: {skips:?}"
    );
    assert_eq!(
        skipped == 0,
        has_grpc && has_metrics && http3_checked && has_service,
        "{name}: {skips:?}"
    );
    if has_service {
        // The reply read whole, 40 calls, the status past the maximum, the echo stream.
        let passed = report
            .checks
            .iter()
            .filter(|c| c.endpoint.starts_with("gRPC Workload/") && c.outcome == Outcome::Pass)
            .count();
        assert_eq!(passed, 4, "{name} {over}: gRPC checks {:?}", report.checks);
    }
    if http3_checked {
        // Three requests, each held to status, Server, Date, framing, Content-Type and body.
        let passed = report
            .checks
            .iter()
            .filter(|c| c.endpoint.contains("(HTTP/3") && c.outcome == Outcome::Pass)
            .count();
        assert_eq!(passed, 18, "{name}: HTTP/3 checks {:?}", report.checks);
    }
    if !has_grpc {
        return None;
    }
    let grpc = report.upstream_grpc.expect("the gRPC summary");
    assert_eq!(grpc.pooled.grpc_requests, 24, "{name}: {grpc:?}");
    assert_eq!(grpc.per_call.grpc_connections, 8, "{name}: {grpc:?}");
    Some(grpc)
}
