//! The mock upstream over real loopback sockets: what it counts is what `lab verify` and the
//! `/upstream` tests rely on.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use loadlab_upstream::{run, Counters, Stats, Upstream, UpstreamConfig};
use std::time::{Duration, Instant};

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>;

fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn get(client: &HttpClient, url: &str) -> (u16, Bytes) {
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body)
}

#[tokio::test]
async fn pooled_client_reuses_one_connection() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let pooled = client();
    for _ in 0..8 {
        assert_eq!(
            get(&pooled, &upstream.url()).await,
            (200, Bytes::from("ok"))
        );
    }
    let stats = upstream.stats();
    assert_eq!(stats.requests, 8);
    // Normally exactly one; hyper-util may open a second if the first is handed back to its
    // pool a moment after the next request starts. Either way: far below 8.
    assert!((1..=2).contains(&stats.connections), "{stats:?}");
    assert!(stats.reuse_ratio().unwrap() >= 4.0);
}

#[tokio::test]
async fn a_client_per_call_opens_a_connection_per_request() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    for _ in 0..8 {
        get(&client(), &upstream.url()).await;
    }
    assert_eq!(
        upstream.stats(),
        Stats {
            requests: 8,
            connections: 8,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn stats_endpoint_serves_the_counters_without_counting_itself() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let pooled = client();
    get(&pooled, &format!("{}anything?x=1", upstream.url())).await;
    let stats_url = format!("{}__stats", upstream.url());
    for _ in 0..2 {
        let (status, body) = get(&client(), &stats_url).await;
        assert_eq!(status, 200);
        assert_eq!(
            &body[..],
            br#"{"requests":1,"connections":1,"tls_full":0,"tls_resumed":0,"grpc_requests":0,"grpc_connections":0,"grpc_streams":0,"grpc_messages_received":0,"grpc_messages_sent":0}"#
        );
    }
}

#[tokio::test]
async fn every_answer_waits_at_least_the_configured_delay() {
    let delay = Duration::from_millis(60);
    let upstream = Upstream::start(UpstreamConfig::with_delay(delay))
        .await
        .unwrap();
    let pooled = client();
    let started = Instant::now();
    for _ in 0..3 {
        get(&pooled, &upstream.url()).await;
    }
    // A lower bound only: a timer never fires early, so this cannot flake.
    assert!(started.elapsed() >= delay * 3, "{:?}", started.elapsed());
}

#[tokio::test]
async fn shutdown_stops_accepting_and_drops_kept_alive_connections() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let addr = upstream.addr();
    let pooled = client();
    get(&pooled, &upstream.url()).await;
    upstream.shutdown().await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    assert!(pooled
        .get(format!("http://{addr}/").parse().unwrap())
        .await
        .is_err());
}

#[tokio::test]
async fn run_returns_when_its_injected_shutdown_completes() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counters = Counters::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(run(
        listener,
        UpstreamConfig::default(),
        counters.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    get(&client(), &format!("http://{addr}/")).await;
    assert_eq!(counters.snapshot().requests, 1);
    stop.send(()).unwrap();
    server.await.unwrap().unwrap();
}
