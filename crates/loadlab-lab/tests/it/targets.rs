//! The reference targets, built by `Lab::build` and served as real processes: each passes
//! `verify` (the targets in other languages only where their toolchain is installed; otherwise
//! the test says it skipped them), `/upstream-grpc` and `/metrics` included where the
//! manifest declares them; each Rust target makes exactly the upstream calls it is asked for, over HTTP and over gRPC,
//! with the connection behaviour its client mode promises, and all serve the same portfolio
//! bytes.

use super::support::{assert_skips_and_grpc, built_lab, serve, skip_reason, RUST_TARGETS};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use loadlab_lab::content::ReferenceSite;
use loadlab_lab::verify::verify_target;
use loadlab_lab::{ServeOptions, VerifyOptions};
use loadlab_upstream::{Stats, Upstream, UpstreamConfig};

async fn verify_passes(name: &str) {
    let lab = built_lab();
    let serve = ServeOptions {
        workers: Some(2),
        ..ServeOptions::default()
    };
    let report = verify_target(lab, name, &serve, &VerifyOptions::default())
        .await
        .unwrap();
    let failures: Vec<String> = report
        .failures()
        .map(|c| format!("{} [{}]: {:?}", c.endpoint, c.what, c.outcome))
        .collect();
    assert!(
        failures.is_empty(),
        "{name} failed verification:\n{}",
        failures.join("\n")
    );
    let (passed, _, _) = report.counts();
    if let Some(grpc) = assert_skips_and_grpc(lab, name, &report, "over HTTP") {
        // One channel per process: the Rust targets have one process; Node's cluster and the
        // Python servers' two worker processes have a channel each.
        assert!(
            (1..=2).contains(&grpc.pooled.grpc_connections),
            "{name}: one channel per process: {grpc:?}"
        );
        eprintln!("{name}: upstream gRPC {grpc:?}");
    }
    assert!(passed > 200, "{name}: only {passed} checks ran");
    let upstream = report.upstream.expect("upstream summary");
    eprintln!(
        "{name}: {passed} checks passed; pooled upstream {:?} (reuse ratio {:?}), per-call {:?}",
        upstream.pooled, upstream.pooled_reuse_ratio, upstream.per_call
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_rust_actix_web() {
    verify_passes("rust-actix-web").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_rust_axum() {
    verify_passes("rust-axum").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_rust_hyper() {
    verify_passes("rust-hyper").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_rust_warp() {
    verify_passes("rust-warp").await;
}

/// `verify_passes`, unless the target's toolchain is missing here (then it says so).
async fn verify_passes_if_installed(name: &str) {
    if skip_reason(name).is_none() {
        verify_passes(name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_erlang_cowboy() {
    verify_passes_if_installed("erlang-cowboy").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_go_nethttp() {
    verify_passes_if_installed("go-nethttp").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_java_vertx() {
    verify_passes_if_installed("java-vertx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_java_webflux() {
    verify_passes_if_installed("java-webflux").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_kotlin_ktor() {
    verify_passes_if_installed("kotlin-ktor").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_kotlin_micronaut() {
    verify_passes_if_installed("kotlin-micronaut").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_kotlin_ratpack() {
    verify_passes_if_installed("kotlin-ratpack").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_kotlin_vertx() {
    verify_passes_if_installed("kotlin-vertx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_node_http() {
    verify_passes_if_installed("node-http").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_node_express() {
    verify_passes_if_installed("node-express").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_python_flask() {
    verify_passes_if_installed("python-flask").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_python_starlette() {
    verify_passes_if_installed("python-starlette").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_python_tornado() {
    verify_passes_if_installed("python-tornado").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_passes_for_python_flask_uwsgi() {
    verify_passes_if_installed("python-flask-uwsgi").await;
}

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

async fn get(client: &HttpClient, url: &str) -> (u16, Bytes) {
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status().as_u16();
    (
        status,
        response.into_body().collect().await.unwrap().to_bytes(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_calls_8_counts_requests_and_connections_for_every_target() {
    built_lab();
    const ROUNDS: u64 = 5;
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let mut table = Vec::new();
    for name in RUST_TARGETS {
        let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
        let target = serve(name, Some(upstream.url()));
        let base = target.base_url();

        let before = upstream.stats();
        for _ in 0..ROUNDS {
            let (status, body) = get(&client, &format!("{base}/upstream?calls=8")).await;
            assert_eq!(status, 200, "{name}");
            assert_eq!(
                &body[..],
                br#"{"calls":8,"client":"pooled","upstream_bytes":16}"#,
                "{name}"
            );
        }
        let pooled = upstream.stats().since(&before);
        assert_eq!(
            pooled.requests,
            8 * ROUNDS,
            "{name}: 8 upstream requests per call"
        );
        // One shared pooled client and sequential calls: normally a single kept-alive
        // connection; at most one per /upstream request (a connection handed back to the pool
        // a moment late) still means 8 calls shared it.
        assert!(
            (1..=ROUNDS).contains(&pooled.connections),
            "{name}: the pooled client did not reuse connections: {pooled:?}"
        );

        let before = upstream.stats();
        for _ in 0..2 {
            let (status, body) =
                get(&client, &format!("{base}/upstream?calls=8&client=per-call")).await;
            assert_eq!(status, 200, "{name}");
            assert_eq!(
                &body[..],
                br#"{"calls":8,"client":"per-call","upstream_bytes":16}"#,
                "{name}"
            );
        }
        let per_call = upstream.stats().since(&before);
        assert_eq!(
            per_call,
            Stats {
                requests: 16,
                connections: 16,
                ..Stats::default()
            },
            "{name}: a client per call means a connection per request"
        );
        table.push(format!(
            "{name:16} pooled: {:3} requests / {} connections (reuse ratio {:.0}); per-call: {} / {}",
            pooled.requests,
            pooled.connections,
            pooled.reuse_ratio().unwrap_or(0.0),
            per_call.requests,
            per_call.connections
        ));
        drop(target);
        upstream.shutdown().await.unwrap();
    }
    eprintln!("{}", table.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_grpc_counts_connections_and_streams_for_every_rust_target() {
    built_lab();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    for name in RUST_TARGETS {
        let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
        // The lab derives UPSTREAM_GRPC_URL from UPSTREAM_URL: the same port serves both.
        let target = serve(name, Some(upstream.url()));
        let base = target.base_url();

        // Pooled: one channel for the process, so one connection however many calls.
        for calls in [1u64, 8, 64] {
            let (status, body) = get(&client, &format!("{base}/upstream-grpc?calls={calls}")).await;
            assert_eq!(status, 200, "{name}");
            let expected = format!(
                r#"{{"calls":{calls},"client":"pooled","upstream_bytes":{}}}"#,
                2 * calls
            );
            assert_eq!(&body[..], expected.as_bytes(), "{name}");
        }
        let pooled = upstream.stats();
        assert_eq!(
            (
                pooled.grpc_requests,
                pooled.grpc_streams,
                pooled.grpc_connections
            ),
            (73, 73, 1),
            "{name}: a pooled channel is one connection: {pooled:?}"
        );
        assert_eq!(pooled.requests, 0, "{name}: no HTTP/1.1 calls: {pooled:?}");

        // Per call: a channel, so a connection, per call.
        let (status, body) = get(
            &client,
            &format!("{base}/upstream-grpc?calls=5&client=per-call"),
        )
        .await;
        assert_eq!(status, 200, "{name}");
        assert_eq!(
            &body[..],
            br#"{"calls":5,"client":"per-call","upstream_bytes":10}"#,
            "{name}"
        );
        let per_call = upstream.stats().since(&pooled);
        assert_eq!(
            (per_call.grpc_requests, per_call.grpc_connections),
            (5, 5),
            "{name}: a channel per call means a connection per call: {per_call:?}"
        );
        drop(target);
        upstream.shutdown().await.unwrap();
    }
}

/// Each Ratpack 1.9 `HttpClient` builds a DNS resolver with a UDP socket that `close()` leaves
/// open: a client per call leaked one descriptor per call (100 for 100 calls) until the target
/// ran out. The target gives its per-call clients Netty's JDK resolver (no socket).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kotlin_ratpack_per_call_clients_leak_no_descriptors() {
    if skip_reason("kotlin-ratpack").is_some() {
        return;
    }
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let target = serve("kotlin-ratpack", Some(upstream.url()));
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let url = format!("{}/upstream?calls=1&client=per-call", target.base_url());
    let descriptors = || {
        std::fs::read_dir(format!("/proc/{}/fd", target.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    // The first calls load the client's classes and start what a process starts once.
    for _ in 0..10 {
        assert_eq!(get(&client, &url).await.0, 200);
    }
    let before = descriptors();
    for _ in 0..100 {
        assert_eq!(get(&client, &url).await.0, 200);
    }
    let after = descriptors();
    assert!(
        after < before + 10,
        "100 per-call clients left {} more descriptors ({before} then {after})",
        after.saturating_sub(before)
    );
    assert_eq!(upstream.stats().connections, 110, "a connection per call");
    drop(target);
    upstream.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_grpc_without_a_url_is_503() {
    built_lab();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let target = serve("rust-hyper", None);
    let (status, body) = get(
        &client,
        &format!("{}/upstream-grpc?calls=1", target.base_url()),
    )
    .await;
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portfolio_pages_are_byte_identical_across_targets() {
    let lab = built_lab();
    let reference = ReferenceSite::load(&lab.content_dir()).unwrap();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let served: Vec<_> = RUST_TARGETS.iter().map(|name| serve(name, None)).collect();
    for page in &reference.pages {
        let mut bodies = Vec::new();
        for target in &served {
            let (status, body) = get(&client, &format!("{}{}", target.base_url(), page.path)).await;
            assert_eq!(status, page.status, "{} {}", target.name(), page.path);
            bodies.push((target.name().to_string(), body));
        }
        let (first_name, first) = &bodies[0];
        for (name, body) in &bodies[1..] {
            assert!(
                body == first,
                "{} differs between {first_name} and {name}",
                page.path
            );
        }
        assert!(
            first == page.body.as_bytes(),
            "{} differs from the reference content",
            page.path
        );
    }
    assert!(reference.pages.len() >= 7);
}

/// `lab verify URL --grpc` against a server that does not serve the contract's gRPC service
/// (rust-actix-web, whose HTTP/2 sends no trailers, speaks HTTP/1.1 alone over plain TCP;
/// rust-hyper, which this test used, serves the service now): the first call fails saying what came
/// back, the three loads after it are skipped saying why (not run into the same refusal),
/// and the checks after them still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_checks_fail_on_a_server_without_the_service() {
    let lab = built_lab();
    let target = serve("rust-actix-web", None);
    let options = VerifyOptions {
        content_dir: Some(lab.content_dir()),
        grpc: true,
        request_timeout: std::time::Duration::from_secs(2),
        ..VerifyOptions::default()
    };
    let report = loadlab_lab::verify::verify_url(&target.base_url(), &options)
        .await
        .unwrap();
    let grpc: Vec<_> = report
        .checks
        .iter()
        .filter(|c| c.endpoint.starts_with("gRPC Workload/"))
        .collect();
    assert_eq!(grpc.len(), 4, "{grpc:?}");
    let loadlab_lab::Outcome::Fail { got, .. } = &grpc[0].outcome else {
        panic!("the first call passed on a server without the service: {grpc:?}");
    };
    assert!(got.contains("the call failed"), "{got}");
    for check in &grpc[1..] {
        let loadlab_lab::Outcome::Skip { reason } = &check.outcome else {
            panic!("{check:?}");
        };
        assert!(reason.contains("the first call got no answer"), "{reason}");
    }
    assert!(!report.passed());
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.endpoint.contains("/compute?n=100001")),
        "the bad inputs ran after them: {:?}",
        report.checks
    );
}
