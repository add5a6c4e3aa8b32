//! HTTPS against an in-process rustls server whose certificate is made by the test.

use loadlab_engine::tls::{TlsSpec, TlsVersion};
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Behavior, TestCa, TestServer};
use std::time::Duration;

use crate::common;

fn run_spec(spec: RunSpec) -> RunResult {
    common::run_within(spec, Duration::from_secs(30))
}

fn https(server: &TestServer) -> String {
    format!("https://{}/", server.addr())
}

fn spec(url: String, tls: TlsSpec) -> RunSpec {
    RunSpec {
        url,
        tls,
        requests: Some(200),
        connections: Some(4),
        threads: Some(2),
        ..RunSpec::default()
    }
}

#[test]
fn trust_decides_whether_requests_succeed() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Behavior::Fixed(response(200, "secure")), &ca);

    // Trusted through --cacert.
    let r = run_spec(spec(
        https(&server),
        TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..TlsSpec::default()
        },
    ));
    assert_eq!(
        r.measured.requests.completed, 200,
        "{:?}",
        r.measured.errors
    );
    assert_eq!(r.measured.status_codes.get("200"), Some(&200));
    // One handshake per connection, kept alive: at most the 4 connections. (A connection
    // whose thread started after the other thread had spent the 200-request budget never
    // connects, so "exactly 4" would depend on thread start-up times.)
    let opened = r.measured.connections_opened;
    assert!((1..=4).contains(&opened), "{opened} connections");
    assert_eq!(
        r.measured.tls_handshake_us.as_ref().map(|h| h.count),
        Some(opened)
    );
    let tls = r.target.tls.as_ref().expect("tls info");
    assert!(!tls.insecure && tls.trust.contains("--cacert"), "{tls:?}");

    // The built-in web roots do not know the test CA: "certificate not trusted".
    let r = run_spec(spec(https(&server), TlsSpec::default()));
    assert_eq!(
        r.measured.errors.get("tls_certificate"),
        Some(&200),
        "{:?}",
        r.measured.errors
    );
    let detail = &r.measured.error_details["tls_certificate"];
    assert!(
        detail.contains("not trusted") && detail.contains("--cacert"),
        "{detail}"
    );
    assert_eq!(r.measured.connections_failed, 200);

    // --insecure accepts it, and says so.
    let r = run_spec(spec(
        https(&server),
        TlsSpec {
            insecure: true,
            ..TlsSpec::default()
        },
    ));
    assert_eq!(r.measured.requests.completed, 200);
    assert!(r.target.tls.as_ref().unwrap().insecure);
}

#[test]
fn sessions_resume_on_new_connections_unless_turned_off() {
    let ca = TestCa::new();
    for version in [TlsVersion::V1_2, TlsVersion::V1_3] {
        let server = TestServer::start_tls(Behavior::Fixed(response(200, "ok")), &ca);
        let tls = TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            version: Some(version),
            ..TlsSpec::default()
        };
        let r = run_spec(RunSpec {
            keepalive: false,
            requests: Some(40),
            ..spec(https(&server), tls.clone())
        });
        assert_eq!(
            r.measured.requests.completed, 40,
            "{version:?}: {:?}",
            r.measured.errors
        );
        let c = server.counters();
        // The first handshakes (one per thread, racing) are full; the rest resume.
        assert!(
            c.tls_resumed() >= 30,
            "{version:?}: resumed {}, full {}",
            c.tls_resumed(),
            c.tls_full()
        );
        assert_eq!(c.tls_resumed(), r.measured.tls_resumed, "{version:?}");

        let server = TestServer::start_tls(Behavior::Fixed(response(200, "ok")), &ca);
        let r = run_spec(RunSpec {
            keepalive: false,
            requests: Some(20),
            ..spec(
                https(&server),
                TlsSpec {
                    resume: Some(false),
                    ..tls
                },
            )
        });
        assert_eq!(r.measured.requests.completed, 20);
        assert_eq!(server.counters().tls_resumed(), 0, "{version:?}");
        assert_eq!(r.measured.tls_full, 20);
    }
}

/// A server that answers a ClientHello with plain HTTP: the handshake fails, and is
/// reported as such, not as a malformed response.
#[test]
fn a_plain_http_answer_is_a_handshake_failure() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten().take(8) {
            let mut hello = [0u8; 512];
            let _ = stream.read(&mut hello);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let r = run_spec(RunSpec {
        requests: Some(8),
        connections: Some(1),
        ..spec(
            format!("https://{addr}/"),
            TlsSpec {
                insecure: true,
                ..TlsSpec::default()
            },
        )
    });
    assert_eq!(r.measured.requests.completed, 0);
    assert_eq!(
        r.measured.errors.get("tls_handshake"),
        Some(&8),
        "{:?}",
        r.measured.errors
    );
    assert!(!r.measured.error_details["tls_handshake"].is_empty());
}

/// A server that never answers the ClientHello: the handshake counts against
/// --connect-timeout, and the run does not hang.
#[test]
fn a_silent_server_times_the_handshake_out() {
    let server = TestServer::start(Behavior::Stall);
    let r = run_spec(RunSpec {
        requests: Some(4),
        connections: Some(2),
        connect_timeout: Duration::from_millis(300),
        ..spec(
            https(&server),
            TlsSpec {
                insecure: true,
                ..TlsSpec::default()
            },
        )
    });
    assert_eq!(
        r.measured.errors.get("connect_timeout"),
        Some(&4),
        "{:?}",
        r.measured.errors
    );
    assert!(r.measured.error_details["connect_timeout"].contains("TLS handshake"));
}

#[test]
fn mutual_tls_needs_the_client_certificate() {
    let ca = TestCa::new();
    let server = TestServer::start_mutual_tls(Behavior::Fixed(response(200, "mtls")), &ca);
    let (cert, key) = ca.issue(&["loadlab-client"]);
    let with = TlsSpec {
        ca_pem: Some(ca.pem().into_bytes()),
        cert_pem: Some(cert.into_bytes()),
        key_pem: Some(key.into_bytes()),
        ..TlsSpec::default()
    };
    let r = run_spec(RunSpec {
        requests: Some(20),
        ..spec(https(&server), with.clone())
    });
    assert_eq!(
        r.measured.requests.completed, 20,
        "{:?}",
        r.measured.error_details
    );
    assert!(r.target.tls.as_ref().unwrap().client_certificate);

    // Without it the server refuses (TLS 1.3 reports it on the first read).
    let r = run_spec(RunSpec {
        requests: Some(6),
        ..spec(
            https(&server),
            TlsSpec {
                cert_pem: None,
                key_pem: None,
                ..with
            },
        )
    });
    assert_eq!(r.measured.requests.completed, 0);
    assert_eq!(
        r.measured.errors.get("tls_handshake"),
        Some(&6),
        "{:?}",
        r.measured.errors
    );
}

/// An open loop opens the connections its first requests need before its clock starts: here
/// each takes a second to open (the server's side of every handshake starts a second late),
/// and still no request of the first second waits for one. Opened as requests fell due, the
/// first requests would each wait the second out as send lag. The connections opened
/// before the start are counted as the run's own.
#[test]
fn an_open_loop_opens_its_first_requests_connections_before_the_start() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(Behavior::Fixed(response(200, "ok")), &ca);
    let m = behind_a_late_front(server.addr(), &ca, RunSpec::default());
    // All 20 are due within twice the first connection's opening time: 20 connections.
    assert_eq!(m.connections_opened, 20);
    assert_eq!(
        server.counters().tls_full() + server.counters().tls_resumed(),
        20
    );
}

/// The same over HTTP/2: the connections are opened and their handshakes done before the
/// start, one per 10 streams of the requests due in that window, so none of the first
/// requests waits for a handshake the front holds back for a second.
#[test]
fn an_http2_open_loop_opens_its_first_connections_before_the_start() {
    let ca = TestCa::new();
    let server = loadlab_testkit::H2Server::start_tls(loadlab_testkit::H2Behavior::default(), &ca);
    let h2 = RunSpec {
        http2: true,
        streams: 10,
        ..RunSpec::default()
    };
    let m = behind_a_late_front(server.addr(), &ca, h2);
    // 20 requests due within twice the first connection's opening time, 10 streams each.
    assert_eq!(m.connections_opened, 2);
    let connections = server
        .counters()
        .connections
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(connections, 2);
}

/// 20 requests at 50/s over TLS to `server` behind a front that holds each connection back
/// for a second: all completed, none sent late by anything near that second.
fn behind_a_late_front(
    server: std::net::SocketAddr,
    ca: &TestCa,
    spec: RunSpec,
) -> loadlab_engine::result::PhaseSummary {
    const LATE: Duration = Duration::from_secs(1);
    let front = late_front(server, LATE);
    let r = run_spec(RunSpec {
        url: format!("https://{front}/"),
        tls: TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..TlsSpec::default()
        },
        rate: Some(50.0),
        duration: Some(Duration::from_millis(400)),
        threads: Some(1),
        ..spec
    });
    let m = r.measured;
    assert_eq!(m.requests.completed, 20, "{:?}", m.errors);
    let lag = m.send_lag_us.as_ref().unwrap();
    assert!(
        lag.max < (LATE / 2).as_micros() as f64,
        "a request waited {} ms to be sent",
        lag.max / 1_000.0
    );
    m
}

/// A TCP front to `backend` that starts passing each connection's bytes `late`.
fn late_front(backend: std::net::SocketAddr, late: Duration) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            std::thread::spawn(move || {
                std::thread::sleep(late);
                let Ok(server) = std::net::TcpStream::connect(backend) else {
                    return;
                };
                let (mut c2, mut s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || std::io::copy(&mut c2, &mut s2));
                let (mut s, mut c) = (server, client);
                let _ = std::io::copy(&mut s, &mut c);
            });
        }
    });
    addr
}
