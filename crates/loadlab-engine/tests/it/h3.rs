//! HTTP/3 (`--http3`) against an in-process h3 server on 127.0.0.1:0 (UDP) that counts the
//! connections it accepted and the requests it answered: loadlab's counts must equal its.

use bytes::Bytes;
use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::TestCa;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

const BODY: &[u8] = b"hello over h3";

/// An HTTP/3 server on its own thread; it stops when dropped.
struct H3Server {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    rejected: Arc<AtomicU64>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl H3Server {
    fn start(ca: &TestCa) -> H3Server {
        H3Server::rejecting(ca, None)
    }

    /// A server that refuses every `every`th request with H3_REQUEST_REJECTED, unprocessed.
    fn rejecting(ca: &TestCa, every: Option<u64>) -> H3Server {
        let mut tls = (*ca.server_config()).clone();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).expect("QUIC TLS");
        let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("UDP socket");
        let addr = socket.local_addr().expect("its address");
        let (connections, answered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let rejected = Arc::new(AtomicU64::new(0));
        let counts = Counts {
            connections: connections.clone(),
            answered: answered.clone(),
            rejected: rejected.clone(),
            seen: Arc::new(AtomicU64::new(0)),
            reject_every: every,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let endpoint = quinn::Endpoint::new(
                    quinn::EndpointConfig::default(),
                    Some(config),
                    socket,
                    Arc::new(quinn::TokioRuntime),
                )
                .expect("endpoint");
                let accepting = async {
                    while let Some(incoming) = endpoint.accept().await {
                        tokio::spawn(serve(incoming, counts.clone()));
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    _ = accepting => {}
                }
                endpoint.close(0u32.into(), b"");
            });
        });
        H3Server {
            addr,
            connections,
            answered,
            rejected,
            _stop: stop,
        }
    }

    fn url(&self) -> String {
        format!("https://localhost:{}/", self.addr.port())
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}

#[derive(Clone)]
struct Counts {
    connections: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    rejected: Arc<AtomicU64>,
    seen: Arc<AtomicU64>,
    reject_every: Option<u64>,
}

async fn serve(incoming: quinn::Incoming, counts: Counts) {
    let Ok(connection) = incoming.await else {
        return;
    };
    counts.connections.fetch_add(1, Ordering::SeqCst);
    let Ok(mut h3) = ::h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(connection))
        .await
    else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        let counts = counts.clone();
        tokio::spawn(async move {
            let Ok((_request, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            let n = counts.seen.fetch_add(1, Ordering::SeqCst) + 1;
            if counts
                .reject_every
                .is_some_and(|every| n.is_multiple_of(every))
            {
                counts.rejected.fetch_add(1, Ordering::SeqCst);
                stream.stop_stream(::h3::error::Code::H3_REQUEST_REJECTED);
                stream.stop_sending(::h3::error::Code::H3_REQUEST_REJECTED);
                return;
            }
            let response = http::Response::builder().status(200).body(()).unwrap();
            if stream.send_response(response).await.is_ok()
                && stream.send_data(Bytes::from_static(BODY)).await.is_ok()
                && stream.finish().await.is_ok()
            {
                counts.answered.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
}

fn trusting(ca: &TestCa) -> TlsSpec {
    TlsSpec {
        ca_pem: Some(ca.pem().into_bytes()),
        ..TlsSpec::default()
    }
}

fn h3(url: String, tls: TlsSpec) -> RunSpec {
    RunSpec {
        url,
        tls,
        http3: true,
        threads: Some(2),
        pm_qos: false,
        ..RunSpec::default()
    }
}

fn run_spec(spec: RunSpec) -> RunResult {
    common::run_within(spec, Duration::from_secs(30))
}

/// The server counts a request once its response is finished, which the client may see
/// first: give it a moment.
fn settled_count(server: &H3Server, want: u64) -> u64 {
    let until = Instant::now() + Duration::from_secs(2);
    while server.answered() < want && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    server.answered()
}

fn check_exact(r: &RunResult, server: &H3Server, n: u64) {
    let m = &r.measured;
    assert_eq!(m.requests.completed, n, "{:?}", m.error_details);
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    assert_eq!(m.status_codes.get("200"), Some(&n));
    assert_eq!(settled_count(server, n), n, "the server's count");
    assert_eq!(m.bytes.received, n * BODY.len() as u64);
    assert_eq!(r.load.protocol, "h3");
    assert_eq!(
        r.target.tls.as_ref().map(|t| t.versions.as_str()),
        Some("1.3")
    );
    // Connection set-up is measured apart from requests, one handshake per connection.
    let opened = m.connections_opened;
    assert_eq!(
        opened,
        server.connections.load(Ordering::SeqCst),
        "connections"
    );
    assert_eq!(m.tls_handshake_us.as_ref().map(|h| h.count), Some(opened));
}

#[test]
fn h3_closed_loop_one_stream_per_connection_counts_exactly() {
    let ca = TestCa::new();
    let server = H3Server::start(&ca);
    let r = run_spec(RunSpec {
        connections: Some(4),
        requests: Some(400),
        ..h3(server.url(), trusting(&ca))
    });
    check_exact(&r, &server, 400);
    assert!((1..=4).contains(&r.measured.connections_opened));
}

#[test]
fn h3_closed_loop_ten_streams_per_connection_counts_exactly() {
    let ca = TestCa::new();
    let server = H3Server::start(&ca);
    let r = run_spec(RunSpec {
        connections: Some(2),
        streams: 10,
        requests: Some(2_000),
        ..h3(server.url(), trusting(&ca))
    });
    check_exact(&r, &server, 2_000);
    assert!(r.load.plan.contains("HTTP/3: 2 connections x 10 streams"));
}

#[test]
fn h3_open_loop_sends_on_schedule_and_counts_exactly() {
    let ca = TestCa::new();
    let server = H3Server::start(&ca);
    let r = run_spec(RunSpec {
        rate: Some(400.0),
        duration: Some(Duration::from_millis(500)),
        streams: 10,
        max_connections: Some(50),
        ..h3(server.url(), trusting(&ca))
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    assert!(
        (190..=210).contains(&m.requests.completed),
        "{}",
        m.requests.completed
    );
    assert_eq!(m.requests.completed, m.requests.issued);
    assert_eq!(
        settled_count(&server, m.requests.completed),
        m.requests.completed
    );
}

#[test]
fn h3_requests_rejected_unprocessed_are_sent_again_and_counted_as_retried() {
    let ca = TestCa::new();
    let server = H3Server::rejecting(&ca, Some(7));
    let r = run_spec(RunSpec {
        connections: Some(2),
        streams: 5,
        requests: Some(500),
        ..h3(server.url(), trusting(&ca))
    });
    check_exact(&r, &server, 500);
    let rejected = server.rejected.load(Ordering::SeqCst);
    assert!(rejected >= 500 / 7, "{rejected}");
    assert_eq!(r.measured.retried, rejected);
    assert_eq!(r.measured.requests.issued, 500);
}

#[test]
fn h3_wrong_ca_fails_as_a_certificate_failure() {
    let (ca, other) = (TestCa::new(), TestCa::new());
    let server = H3Server::start(&ca);
    let r = run_spec(RunSpec {
        connections: Some(2),
        requests: Some(20),
        ..h3(server.url(), trusting(&other))
    });
    let m = &r.measured;
    assert_eq!(
        m.errors.get("tls_certificate"),
        Some(&20),
        "{:?}",
        m.error_details
    );
    assert_eq!(m.requests.completed, 0);
    assert_eq!(m.connections_failed, 20);
    let detail = &m.error_details["tls_certificate"];
    assert!(
        detail.contains("not trusted") && detail.contains("--cacert"),
        "{detail}"
    );
    assert_eq!(server.answered(), 0);
}

#[test]
fn h3_nothing_listening_fails_as_connect_timeouts_and_ends() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let began = Instant::now();
    let r = run_spec(RunSpec {
        connections: Some(2),
        requests: Some(4),
        connect_timeout: Duration::from_millis(200),
        ..h3(format!("https://127.0.0.1:{port}/"), TlsSpec::default())
    });
    let m = &r.measured;
    assert_eq!(m.errors.get("connect_timeout"), Some(&4), "{:?}", m.errors);
    assert_eq!(m.requests.issued, 4);
    assert_eq!(m.connections_failed, 4);
    assert!(m.error_details["connect_timeout"].contains("UDP port"));
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}

#[test]
fn h3_is_refused_without_https_or_with_http2() {
    let plain = h3("http://127.0.0.1:1/".into(), TlsSpec::default());
    let e = plain.validate().unwrap_err();
    assert_eq!(e.setting, "http3");
    assert!(e.message.contains("https://"), "{e}");
    let both = RunSpec {
        http2: true,
        ..h3("https://127.0.0.1:1/".into(), TlsSpec::default())
    };
    assert_eq!(both.validate().unwrap_err().setting, "http3");
    let tls12 = h3(
        "https://127.0.0.1:1/".into(),
        TlsSpec {
            version: Some(loadlab_engine::tls::TlsVersion::V1_2),
            ..TlsSpec::default()
        },
    );
    assert_eq!(tls12.validate().unwrap_err().setting, "tls.version");
    // --streams is HTTP/3's as HTTP/2's.
    let streams = RunSpec {
        streams: 8,
        ..h3("https://127.0.0.1:1/".into(), TlsSpec::default())
    };
    assert_eq!(streams.validate().unwrap().streams, 8);
}
