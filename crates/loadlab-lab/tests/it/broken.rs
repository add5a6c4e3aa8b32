//! A deliberately broken target must fail verification, and the report must name each broken
//! endpoint. The broken target is an in-process proxy in front of a good one (rust-hyper) that
//! breaks exactly four things: a wrong `/plaintext` body, no `Date` on `/json`, a pooled
//! `/upstream-grpc` that is really a channel per call (the right body, the wrong connection
//! count), and a crash (connection dropped, listener closed) on `/compute?n=foo`. Everything
//! else passes through, so the report must name those four endpoints and no others.

use super::support::serve;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, DATE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use loadlab_lab::verify::{verify_url, Outcome};
use loadlab_lab::VerifyOptions;
use loadlab_upstream::{Upstream, UpstreamConfig};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Notify;

type Forwarder = Client<HttpConnector, Full<Bytes>>;

/// Starts the broken proxy in front of `good`; returns its address.
async fn broken_proxy(good: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let crash = Arc::new(Notify::new());
    let client: Forwarder = Client::builder(TokioExecutor::new()).build_http();
    tokio::spawn(async move {
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let stream = tokio::select! {
                // "Crashing" drops the listener and every open connection.
                () = crash.notified() => return,
                accepted = listener.accept() => accepted.unwrap().0,
            };
            let (client, crash) = (client.clone(), crash.clone());
            connections.spawn(async move {
                let service =
                    service_fn(move |req| forward(req, good, client.clone(), crash.clone()));
                let _ = http1::Builder::new()
                    // Date headers come from the good target, so one can be left out.
                    .auto_date_header(false)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

async fn forward(
    req: Request<Incoming>,
    good: SocketAddr,
    client: Forwarder,
    crash: Arc<Notify>,
) -> Result<Response<Full<Bytes>>, String> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    if path == "/compute?n=foo" {
        crash.notify_one();
        return Err("crashed".into());
    }
    // Claims a pooled channel but opens one per call: only the upstream's counts can tell.
    let fake_pool = path == "/upstream-grpc?calls=8";
    let forwarded = if fake_pool {
        format!("{path}&client=per-call")
    } else {
        path.clone()
    };
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let mut upstream_req = Request::builder()
        .method(parts.method)
        .uri(format!("http://{good}{forwarded}"))
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
    *upstream_req.headers_mut() = parts.headers;
    let response = client
        .request(upstream_req)
        .await
        .map_err(|e| e.to_string())?;
    let (mut parts, body) = response.into_parts();
    let mut body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    match path.as_str() {
        "/plaintext" => {
            body = Bytes::from_static(b"Hello World!");
            parts
                .headers
                .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        "/json" => {
            parts.headers.remove(DATE);
        }
        _ if fake_pool => {
            let text = String::from_utf8_lossy(&body).replace("per-call", "pooled");
            body = Bytes::from(text);
            parts
                .headers
                .insert(CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        _ => {}
    }
    Ok(Response::from_parts(parts, Full::new(body)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_target_fails_with_each_broken_endpoint_named() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let good = serve("rust-hyper", Some(upstream.url()));
    let proxy = broken_proxy(good.addr()).await;
    let options = VerifyOptions {
        content_dir: Some(super::support::targets_dir().join("content")),
        upstream_url: Some(upstream.url()),
        ..VerifyOptions::default()
    };
    let report = verify_url(&format!("http://{proxy}"), &options)
        .await
        .unwrap();

    assert!(!report.passed());
    assert_eq!(
        report.failed_endpoints(),
        [
            "GET /plaintext",
            "GET /json",
            "GET /upstream-grpc?calls=8",
            "GET /compute?n=foo"
        ],
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let failure = |endpoint: &str, what: &str| {
        report
            .failures()
            .find(|c| c.endpoint == endpoint && c.what == what)
            .map(|c| c.outcome.clone())
            .unwrap_or_else(|| panic!("no failed {what} check for {endpoint}"))
    };
    assert_eq!(
        failure("GET /plaintext", "body"),
        Outcome::Fail {
            expected: "\"Hello, World!\"".into(),
            got: "\"Hello World!\"".into()
        }
    );
    assert_eq!(
        failure("GET /json", "Date header"),
        Outcome::Fail {
            expected: "a Date header".into(),
            got: "none".into()
        }
    );
    assert_eq!(
        failure(
            "GET /upstream-grpc?calls=8",
            "upstream gRPC connections opened per request (one channel per process)"
        ),
        Outcome::Fail {
            expected: "at most 1 in each of 3 requests of 8 calls".into(),
            got: "[8, 8, 8]".into()
        }
    );
    failure("GET /compute?n=foo", "response");
    failure("GET /compute?n=foo", "still serving afterwards");
    // After the crash the remaining bad inputs are skipped, with the reason.
    let skipped = report
        .checks
        .iter()
        .find(|c| c.endpoint == "GET /bytes?n=foo")
        .expect("a check for a later bad input");
    assert_eq!(
        skipped.outcome,
        Outcome::Skip {
            reason: "the target stopped answering after GET /compute?n=foo".into()
        }
    );
    // The upstream checks ran through the proxy and passed; the gRPC ones ran and counted.
    assert!(report.upstream.is_some());
    let grpc = report.upstream_grpc.expect("the gRPC summary");
    assert_eq!(
        (grpc.pooled.grpc_requests, grpc.pooled.grpc_connections),
        (24, 24)
    );
}

#[tokio::test]
async fn an_unreachable_target_is_one_finding_not_a_wall_of_them() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let options = VerifyOptions {
        content_dir: Some(super::support::targets_dir().join("content")),
        ..VerifyOptions::default()
    };
    let report = verify_url(&format!("http://{closed}"), &options)
        .await
        .unwrap();
    assert_eq!(report.failed_endpoints(), ["GET /healthz"]);
    let (passed, failed, skipped) = report.counts();
    assert_eq!((passed, failed), (0, 1));
    assert!(skipped > 20, "{skipped}");
}
