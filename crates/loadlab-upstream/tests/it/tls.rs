//! The mock upstream over HTTPS, against real rustls clients on loopback: each counted
//! connection's handshake is counted once, full or resumed, so a pooled client (one
//! connection, one full handshake), a client that keeps its session cache (new connections
//! resume) and a client built per call (a full handshake every time) tell themselves apart.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use loadlab_certs::{client_config, server_config_for, Authority};
use loadlab_upstream::{Stats, Upstream, UpstreamConfig, UpstreamHandle};
use rustls::pki_types::ServerName;
use std::sync::Arc;

struct Fixture {
    upstream: UpstreamHandle,
    ca_pem: String,
}

async fn https_upstream() -> Fixture {
    let authority = Authority::new("upstream test CA").unwrap();
    let issued = authority.issue_loopback(&[]).unwrap();
    let tls = server_config_for(&issued, &[b"http/1.1"]).unwrap();
    let upstream = Upstream::start(UpstreamConfig::with_tls(tls))
        .await
        .unwrap();
    assert!(upstream.url().starts_with("https://127.0.0.1:"));
    Fixture {
        upstream,
        ca_pem: authority.pem(),
    }
}

fn client(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    client_config(ca_pem.as_bytes(), &[b"http/1.1"], None).unwrap()
}

/// One TLS connection: sends `requests` GETs of `path` on it, returns the bodies.
async fn connection(
    fixture: &Fixture,
    config: Arc<rustls::ClientConfig>,
    path: &str,
    requests: usize,
) -> Vec<Bytes> {
    let tcp = tokio::net::TcpStream::connect(fixture.upstream.addr())
        .await
        .unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .unwrap();
    let (mut sender, conn) = http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let mut bodies = Vec::new();
    for _ in 0..requests {
        let request = hyper::Request::get(path)
            .header("host", "127.0.0.1")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        bodies.push(response.into_body().collect().await.unwrap().to_bytes());
    }
    bodies
}

#[tokio::test]
async fn one_kept_alive_connection_is_one_full_handshake() {
    let fixture = https_upstream().await;
    let bodies = connection(&fixture, client(&fixture.ca_pem), "/", 8).await;
    assert!(bodies.iter().all(|b| &b[..] == b"ok"));
    assert_eq!(
        fixture.upstream.stats(),
        Stats {
            requests: 8,
            connections: 1,
            tls_full: 1,
            tls_resumed: 0,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn new_connections_from_one_client_resume_its_session() {
    let fixture = https_upstream().await;
    let shared = client(&fixture.ca_pem);
    for _ in 0..4 {
        connection(&fixture, shared.clone(), "/", 1).await;
    }
    let stats = fixture.upstream.stats();
    assert_eq!((stats.requests, stats.connections), (4, 4));
    // The first connection has no session to resume; every later one has one in the cache.
    assert_eq!((stats.tls_full, stats.tls_resumed), (1, 3), "{stats:?}");
}

#[tokio::test]
async fn a_client_per_call_pays_a_full_handshake_every_time() {
    let fixture = https_upstream().await;
    for _ in 0..4 {
        connection(&fixture, client(&fixture.ca_pem), "/", 1).await;
    }
    assert_eq!(
        fixture.upstream.stats(),
        Stats {
            requests: 4,
            connections: 4,
            tls_full: 4,
            tls_resumed: 0,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn stats_over_https_are_not_counted_and_show_the_handshakes() {
    let fixture = https_upstream().await;
    connection(&fixture, client(&fixture.ca_pem), "/x", 2).await;
    let bodies = connection(&fixture, client(&fixture.ca_pem), "/__stats", 2).await;
    for body in bodies {
        assert_eq!(
            &body[..],
            br#"{"requests":2,"connections":1,"tls_full":1,"tls_resumed":0,"grpc_requests":0,"grpc_connections":0,"grpc_streams":0,"grpc_messages_received":0,"grpc_messages_sent":0}"#
        );
    }
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_ca_is_refused_and_not_counted() {
    let fixture = https_upstream().await;
    let stranger = Authority::new("another CA").unwrap();
    let tcp = tokio::net::TcpStream::connect(fixture.upstream.addr())
        .await
        .unwrap();
    let refused = tokio_rustls::TlsConnector::from(client(&stranger.pem()))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await;
    assert!(refused.is_err());
    // A working client afterwards: the server is still up, and only it was counted.
    connection(&fixture, client(&fixture.ca_pem), "/", 1).await;
    assert_eq!(fixture.upstream.stats().connections, 1);
}

#[tokio::test]
async fn over_https_an_h2c_preface_is_a_failed_handshake_not_grpc() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fixture = https_upstream().await;
    let mut tcp = tokio::net::TcpStream::connect(fixture.upstream.addr())
        .await
        .unwrap();
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // The server ends the connection (after an alert, if any): read until it does.
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        tcp.read_to_end(&mut sink),
    )
    .await
    .expect("the upstream closes a connection whose handshake failed");
    connection(&fixture, client(&fixture.ca_pem), "/", 1).await;
    let stats = fixture.upstream.stats();
    assert_eq!(
        (
            stats.connections,
            stats.grpc_connections,
            stats.grpc_streams
        ),
        (1, 0, 0),
        "{stats:?}"
    );
}
