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
        H3Server::with_tls(ca, every, |_| {})
    }

    /// A server that takes 0-RTT early data from sessions it resumes, through `tickets`.
    fn zero_rtt(ca: &TestCa, tickets: Arc<Tickets>) -> H3Server {
        H3Server::with_tls(ca, None, |tls| {
            tls.max_early_data_size = u32::MAX;
            // rustls takes early data only on single-use (stateful) tickets.
            tls.ticketer = Arc::new(loadlab_testkit::NoTickets);
            tls.session_storage = tickets;
        })
    }

    fn with_tls(
        ca: &TestCa,
        every: Option<u64>,
        edit: impl FnOnce(&mut rustls::ServerConfig),
    ) -> H3Server {
        H3Server::silent_after(ca, every, None, false, edit)
    }

    /// `silent_after`: once it has answered that many requests the server closes its
    /// connections and its socket, and answers nothing more. `stop_reading`: it answers
    /// without reading the request, first asking the client to stop sending it (RFC 9114
    /// 4.1, H3_NO_ERROR).
    fn silent_after(
        ca: &TestCa,
        every: Option<u64>,
        silent_after: Option<u64>,
        stop_reading: bool,
        edit: impl FnOnce(&mut rustls::ServerConfig),
    ) -> H3Server {
        let mut tls = (*ca.server_config()).clone();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        edit(&mut tls);
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
            silent_after,
            silence: Arc::new(tokio::sync::Notify::new()),
            stop_reading,
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
                let silence = counts.silence.clone();
                let accepting = async {
                    while let Some(incoming) = endpoint.accept().await {
                        tokio::spawn(serve(incoming, counts.clone()));
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    _ = silence.notified() => {}
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

/// The server's session tickets (rustls's memory cache, single use), counting resumptions
/// and refusing every `refuse_every`th ticket offered: that connection's handshake is then a
/// full one, and its 0-RTT early data is rejected.
#[derive(Debug)]
struct Tickets {
    cache: Arc<rustls::server::ServerSessionMemoryCache>,
    refuse_every: Option<u64>,
    offered: AtomicU64,
    resumed: AtomicU64,
    refused: AtomicU64,
    stored: AtomicU64,
}

impl Tickets {
    fn new(refuse_every: Option<u64>) -> Arc<Tickets> {
        Arc::new(Tickets {
            cache: rustls::server::ServerSessionMemoryCache::new(1024),
            refuse_every,
            offered: AtomicU64::new(0),
            resumed: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            stored: AtomicU64::new(0),
        })
    }
}

impl rustls::server::StoresServerSessions for Tickets {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        self.stored.fetch_add(1, Ordering::SeqCst);
        self.cache.put(key, value)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.cache.get(key)
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        let n = self.offered.fetch_add(1, Ordering::SeqCst) + 1;
        let session = self.cache.take(key);
        if self
            .refuse_every
            .is_some_and(|every| n.is_multiple_of(every))
        {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return None;
        }
        if session.is_some() {
            self.resumed.fetch_add(1, Ordering::SeqCst);
        }
        session
    }

    fn can_cache(&self) -> bool {
        true
    }
}

#[derive(Clone)]
struct Counts {
    connections: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    rejected: Arc<AtomicU64>,
    seen: Arc<AtomicU64>,
    reject_every: Option<u64>,
    silent_after: Option<u64>,
    silence: Arc<tokio::sync::Notify>,
    stop_reading: bool,
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
            if counts.stop_reading {
                stream.stop_sending(::h3::error::Code::H3_NO_ERROR);
            }
            let response = http::Response::builder().status(200).body(()).unwrap();
            if stream.send_response(response).await.is_ok()
                && stream.send_data(Bytes::from_static(BODY)).await.is_ok()
                && stream.finish().await.is_ok()
            {
                let answered = counts.answered.fetch_add(1, Ordering::SeqCst) + 1;
                if counts.silent_after == Some(answered) {
                    counts.silence.notify_one();
                }
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

/// `--http3-0rtt` with a connection a request a stream (`--no-keepalive`): every connection
/// after the first tickets arrived resumes and sends its requests early; `refuse_every`: the
/// server refuses that share of the tickets (full handshakes, early data rejected). Checks
/// the counts against the server's and returns the result.
fn zero_rtt_run(refuse_every: Option<u64>) -> RunResult {
    let ca = TestCa::new();
    let tickets = Tickets::new(refuse_every);
    let server = H3Server::zero_rtt(&ca, tickets.clone());
    let r = run_spec(RunSpec {
        connections: Some(2),
        streams: 5,
        requests: Some(500),
        keepalive: false,
        http3_0rtt: true,
        ..h3(server.url(), trusting(&ca))
    });
    let m = &r.measured;
    assert_eq!(m.requests.completed, 500, "{:?}", m.error_details);
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    assert_eq!(m.requests.issued, 500);
    assert_eq!(settled_count(&server, 500), 500, "the server's count");
    let early = m.early_data.clone().unwrap_or_else(|| {
        panic!(
            "no request went early: tickets stored {}, offered {}, resumed {}; {m:?}",
            tickets.stored.load(Ordering::SeqCst),
            tickets.offered.load(Ordering::SeqCst),
            tickets.resumed.load(Ordering::SeqCst)
        )
    });
    let (resumed, refused) = (
        tickets.resumed.load(Ordering::SeqCst),
        tickets.refused.load(Ordering::SeqCst),
    );
    // Each connection's handshake is counted once, as the server saw it.
    assert_eq!(
        m.connections_opened,
        server.connections.load(Ordering::SeqCst)
    );
    assert_eq!(early.connections_accepted, resumed, "{early:?}");
    assert_eq!(early.connections_rejected, refused, "{early:?}");
    assert_eq!(early.connections, resumed + refused);
    assert_eq!(m.tls_resumed, resumed);
    assert_eq!(m.tls_resumed + m.tls_full, m.connections_opened);
    // Every early request's fate is known (each handshake ended), and each rejected one
    // was sent again, once, and answered.
    assert_eq!(
        early.requests,
        early.requests_accepted + early.requests_rejected,
        "{early:?}"
    );
    assert_eq!(m.retried, early.requests_rejected);
    // Up to one early request a stream of each 0-RTT connection.
    assert!(early.requests <= 5 * early.connections, "{early:?}");
    let handshakes = early.handshake_us.as_ref().map(|h| h.count);
    assert_eq!(handshakes, Some(early.connections));
    // The others' handshakes are timed apart.
    assert_eq!(
        m.tls_handshake_us.as_ref().map(|h| h.count),
        Some(m.connections_opened - early.connections)
    );
    r
}

#[test]
fn h3_0rtt_resumed_connections_send_their_requests_early_and_count_them_apart() {
    let r = zero_rtt_run(None);
    let m = &r.measured;
    let early = m.early_data.as_ref().unwrap();
    // 100 connections of 5 requests: all but the first few resume, and their requests went
    // before their handshakes ended, all taken.
    assert!(m.connections_opened >= 100, "{}", m.connections_opened);
    assert!(early.connections >= 90, "{early:?}");
    assert!(early.requests_accepted >= early.connections, "{early:?}");
    assert_eq!(early.requests_rejected, 0);
    assert_eq!(early.connections_rejected, 0);
}

#[test]
fn h3_0rtt_rejected_early_requests_are_sent_again_on_the_same_connection() {
    let r = zero_rtt_run(Some(3));
    let m = &r.measured;
    let early = m.early_data.as_ref().unwrap();
    assert!(early.connections_rejected >= 20, "{early:?}");
    assert!(
        early.requests_rejected >= early.connections_rejected,
        "{early:?}"
    );
    // Sent again on the connection they went early on: no connection more for them.
    assert!(m.connections_opened <= 102, "{}", m.connections_opened);
}

#[test]
fn h3_0rtt_is_refused_without_http3_or_resumption() {
    let without = RunSpec {
        http3: false,
        http3_0rtt: true,
        ..h3("https://127.0.0.1:1/".into(), TlsSpec::default())
    };
    let e = without.validate().unwrap_err();
    assert_eq!(e.setting, "http3_0rtt");
    assert!(e.message.contains("--http3"), "{e}");
    let no_resume = RunSpec {
        http3_0rtt: true,
        tls: TlsSpec {
            resume: Some(false),
            ..TlsSpec::default()
        },
        ..h3("https://127.0.0.1:1/".into(), TlsSpec::default())
    };
    let e = no_resume.validate().unwrap_err();
    assert_eq!(e.setting, "http3_0rtt");
    assert!(e.message.contains("--tls-resume off"), "{e}");
    // Without keep-alive: a closed loop's connections only.
    let open = RunSpec {
        keepalive: false,
        rate: Some(10.0),
        duration: Some(Duration::from_secs(1)),
        ..h3("https://127.0.0.1:1/".into(), TlsSpec::default())
    };
    assert_eq!(open.validate().unwrap_err().setting, "keepalive");
}

#[test]
fn h3_0rtt_handshakes_that_never_end_fail_as_connect_timeouts() {
    let ca = TestCa::new();
    let tickets = Tickets::new(None);
    // Tickets enough for the 0-RTT connections that follow, then silence.
    let server = H3Server::silent_after(&ca, None, Some(50), false, |tls| {
        tls.max_early_data_size = u32::MAX;
        tls.ticketer = Arc::new(loadlab_testkit::NoTickets);
        tls.session_storage = tickets.clone();
    });
    let r = run_spec(RunSpec {
        connections: Some(1),
        streams: 5,
        requests: Some(1_000),
        keepalive: false,
        http3_0rtt: true,
        connect_timeout: Duration::from_millis(300),
        give_up_after: Duration::from_secs(1),
        threads: Some(1),
        ..h3(server.url(), trusting(&ca))
    });
    let m = &r.measured;
    assert_eq!(m.requests.completed, 50, "{:?}", m.error_details);
    let early = m.early_data.as_ref().expect("requests went early");
    // Early requests on connections whose handshake never ended: their fate unknown to the
    // server, failed as the connect timeouts they are, not after --timeout.
    assert!(
        early.requests > early.requests_accepted + early.requests_rejected,
        "{early:?}"
    );
    assert!(
        m.errors.get("connect_timeout").is_some_and(|&n| n >= 5),
        "{:?}",
        m.errors
    );
    assert_eq!(m.errors.get("request_timeout"), None, "{:?}", m.errors);
    assert!(m.error_details["connect_timeout"].contains("UDP port"));
}

#[test]
fn h3_without_keepalive_a_connection_carries_one_request_a_stream() {
    let ca = TestCa::new();
    let server = H3Server::start(&ca);
    let r = run_spec(RunSpec {
        connections: Some(2),
        streams: 5,
        requests: Some(200),
        keepalive: false,
        ..h3(server.url(), trusting(&ca))
    });
    check_exact(&r, &server, 200);
    // 200 requests, at most 5 a connection (the last ones of each slot may carry fewer).
    let opened = r.measured.connections_opened;
    assert!((40..=42).contains(&opened), "{opened}");
    assert_eq!(r.measured.early_data, None);
}

/// A server may answer a request it has not read, and ask the client to stop sending it (RFC
/// 9114 4.1): the response counts, and the client must not discard it. 4 MB bodies outrun
/// the stream's flow-control window, so every request is still sending when it is stopped.
#[test]
fn h3_a_response_to_a_request_the_server_stopped_reading_counts() {
    let ca = TestCa::new();
    let server = H3Server::silent_after(&ca, None, None, true, |_| {});
    let r = run_spec(RunSpec {
        connections: Some(2),
        requests: Some(40),
        method: "POST".into(),
        body: vec![b'x'; 4 << 20],
        ..h3(server.url(), trusting(&ca))
    });
    check_exact(&r, &server, 40);
}

/// HTTP/3's wire bytes (`measured.wire_bytes`): the UDP payloads quinn counted on each
/// connection, beside `bytes`, which are DATA payload alone; held against the testkit
/// server's own quinn counts of the same datagrams, read once its connections closed. Two
/// known gaps: the client books a connection's bytes as each request ends, so what crosses
/// after its last one (acknowledgements, its close) is not counted; and a quinn server does
/// not count a connection's first datagram, the client's Initial, padded to exactly 1,200
/// bytes (RFC 9000 14.1; quinn's initial MTU).
#[test]
fn h3_wire_bytes_are_the_udp_bytes_the_server_counted() {
    const FIRST_DATAGRAM: u64 = 1_200;
    let ca = TestCa::new();
    let server = loadlab_testkit::H3Server::start(&ca);
    let n = 400;
    let r = run_spec(RunSpec {
        connections: Some(2),
        streams: 4,
        requests: Some(n),
        threads: Some(1),
        ..h3(server.url(), trusting(&ca))
    });
    let m = &r.measured;
    assert_eq!(m.requests.completed, n, "{:?}", m.error_details);
    assert_eq!(m.bytes.received, n * loadlab_testkit::H3_BODY.len() as u64);
    let wire = m.wire_bytes.clone().expect("wire bytes over HTTP/3");

    // The run closed its connections at its end; the server counts each once it has closed.
    let counters = server.counters();
    let until = Instant::now() + Duration::from_secs(60);
    while counters.closed() < counters.connections() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let conns = counters.connections();
    assert_eq!((counters.closed(), conns), (2, 2));
    let (server_sent, server_received) = counters.udp_bytes();
    println!("client {wire:?}, server sent {server_sent} received {server_received}");
    // What crossed after a connection's last request: a few small packets, under a datagram.
    let tail = conns * FIRST_DATAGRAM;
    assert!(
        wire.received <= server_sent && server_sent - wire.received < tail,
        "{wire:?}: the server sent {server_sent}"
    );
    let sent = server_received + conns * FIRST_DATAGRAM;
    assert!(
        wire.sent <= sent && sent - wire.sent < tail,
        "{wire:?}: the server received {server_received}, and {conns} first datagrams"
    );
    // More than the payload: requests' HEADERS, responses' HEADERS and DATA frames, QUIC's
    // packets and the handshake (its certificate alone is hundreds of bytes).
    assert!(wire.sent > m.bytes.sent && wire.received > m.bytes.received + n * 10);
}
