//! Every protocol ends a run by `-n` and `-d` the same way when nothing listens (issue 45,
//! item 9: HTTP/1.1 stopped after its 20 refused connects, HTTP/2 retried until killed).
//! Each case's port was bound and closed again, so every connect is refused at once; each run
//! must end within a bound far above its own length (`run_within`), count each refused connect
//! as a failed request, and give the "nothing succeeded" verdict the CLI exits 2 on.
//!
//! The same verdict when something listens and never lets a connection finish opening (issue
//! 46, item 1: a TLS handshake never answered was "0 of 0 issued", no verdict, exit 0): the
//! requests that waited for those connections are due and never sent.

use loadlab_engine::scenario::Scenario;
use loadlab_engine::{RunResult, RunSpec};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common;

/// A port nothing listens on: bound, then closed.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One spec per protocol (and per loop where they differ), with the rest left to the caller.
fn protocols(port: u16) -> Vec<(&'static str, RunSpec)> {
    let base = |url: String| RunSpec {
        url,
        threads: Some(1),
        connections: Some(1),
        timeout: Duration::from_secs(5),
        pm_qos: false,
        ..RunSpec::default()
    };
    let http = format!("http://127.0.0.1:{port}/");
    let https = format!("https://127.0.0.1:{port}/");
    let scenario = Scenario::from_toml_str(
        &format!("name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"{http}\""),
        Path::new("."),
    )
    .expect("valid scenario");
    vec![
        ("HTTP/1.1", base(http.clone())),
        ("HTTPS", base(https.clone())),
        (
            "HTTP/2 (h2c)",
            RunSpec {
                http2: true,
                ..base(http.clone())
            },
        ),
        (
            "HTTP/2 (h2c), 4 streams",
            RunSpec {
                http2: true,
                streams: 4,
                ..base(http.clone())
            },
        ),
        (
            "HTTP/2 over TLS",
            RunSpec {
                http2: true,
                ..base(https)
            },
        ),
        (
            "scenario",
            RunSpec {
                scenario: Some(Arc::new(scenario)),
                ..base(String::new())
            },
        ),
    ]
}

fn nothing_succeeded(name: &str, r: &RunResult) {
    let q = &r.measured.requests;
    assert_eq!(q.completed, 0, "{name}");
    assert!(q.failed > 0, "{name}: no refused connect was counted");
    assert_eq!(
        r.measured.errors.get("connect_refused"),
        Some(&q.failed),
        "{name}: {:?}",
        r.measured.errors
    );
    assert!(
        r.verdicts.iter().any(|v| v.contains("nothing succeeded")),
        "{name}: {:?}",
        r.verdicts
    );
}

#[test]
fn a_request_count_ends_every_protocol_when_nothing_listens() {
    let port = closed_port();
    // The protocols at once: each run spends its time backing off from refused connects
    // (about 2 s for 20), so the five take one's time.
    std::thread::scope(|s| {
        for (name, spec) in protocols(port) {
            s.spawn(move || {
                let r = common::run_within(
                    RunSpec {
                        requests: Some(20),
                        ..spec
                    },
                    Duration::from_secs(60),
                );
                nothing_succeeded(name, &r);
                let q = &r.measured.requests;
                assert_eq!((q.issued, q.failed), (20, 20), "{name}: {q:?}");
            });
        }
    });
}

#[test]
fn a_duration_ends_every_protocol_and_loop_when_nothing_listens() {
    let port = closed_port();
    let mut cases = protocols(port);
    for http2 in [false, true] {
        cases.push((
            if http2 {
                "open loop, HTTP/2"
            } else {
                "open loop, HTTP/1.1"
            },
            RunSpec {
                rate: Some(50.0),
                connections: None,
                max_connections: Some(4),
                http2,
                ..cases[0].1.clone()
            },
        ));
    }
    // At once, as above: each run backs off from refused connects for its 500 ms.
    std::thread::scope(|s| {
        for (name, spec) in cases {
            s.spawn(move || {
                let r = common::run_within(
                    RunSpec {
                        duration: Some(Duration::from_millis(500)),
                        ..spec
                    },
                    Duration::from_secs(60),
                );
                nothing_succeeded(name, &r);
            });
        }
    });
}

/// A listener that never accepts: the kernel completes each TCP handshake into its queue, and
/// nothing ever answers a TLS ClientHello. The connect timeout is far longer than the run, so
/// every connection is still opening when the run ends.
#[test]
fn connects_never_finished_are_due_never_sent_and_nothing_succeeded() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let https = format!("https://127.0.0.1:{port}/");
    let base = RunSpec {
        url: https.clone(),
        threads: Some(1),
        connections: Some(2),
        duration: Some(Duration::from_millis(500)),
        connect_timeout: Duration::from_secs(600),
        pm_qos: false,
        ..RunSpec::default()
    };
    let scenario = Scenario::from_toml_str(
        &format!("name = \"s\"\n[[steps]]\nname = \"a\"\nurl = \"{https}\""),
        Path::new("."),
    )
    .expect("valid scenario");
    let closed = [
        ("HTTPS", base.clone()),
        (
            "HTTP/2 over TLS",
            RunSpec {
                http2: true,
                ..base.clone()
            },
        ),
        (
            "scenario over TLS",
            RunSpec {
                url: String::new(),
                scenario: Some(Arc::new(scenario)),
                ..base.clone()
            },
        ),
    ];
    for (name, spec) in closed {
        let r = common::run_within(spec, Duration::from_secs(60));
        let q = &r.measured.requests;
        // One request per connection waited for it, and was never sent.
        assert_eq!(
            (q.issued, q.completed, q.failed, q.not_sent),
            (0, 0, 0, 2),
            "{name}: {q:?}"
        );
        assert!(
            r.verdicts.iter().any(|v| v.contains("nothing succeeded")),
            "{name}: {:?}",
            r.verdicts
        );
        assert!(
            r.warnings.iter().any(|w| w.contains("still opening")),
            "{name}: {:?}",
            r.warnings
        );
    }
    // An open loop first waits for its first connections up to --connect-timeout (see
    // `open::preopen`), and at its end for the requests it handed to connections, those still
    // connecting included (which then fail as connect timeouts): whichever way they are
    // counted, nothing succeeded.
    let open = common::run_within(
        RunSpec {
            rate: Some(20.0),
            connections: None,
            max_connections: Some(2),
            connect_timeout: Duration::from_secs(5),
            ..base
        },
        Duration::from_secs(60),
    );
    let q = &open.measured.requests;
    assert_eq!(q.completed, 0, "open loop: {q:?}");
    assert!(q.issued + q.not_sent > 0, "open loop: {q:?}");
    assert!(
        open.verdicts
            .iter()
            .any(|v| v.contains("nothing succeeded")),
        "open loop: {:?}",
        open.verdicts
    );
    drop(silent);
}

/// Holds a port bound and not listening once its server is gone: every connect to it is
/// refused, and no other test's server can take it meanwhile.
struct HeldPort(i32);

impl HeldPort {
    fn hold(port: u16) -> HeldPort {
        // SAFETY: a socket made, configured and bound with valid arguments; its descriptor
        // is closed by Drop.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let one: libc::c_int = 1;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
                },
                sin_zero: [0; 8],
            };
            let bound = libc::bind(
                fd,
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            assert_eq!(bound, 0, "bind: {}", std::io::Error::last_os_error());
            HeldPort(fd)
        }
    }
}

impl Drop for HeldPort {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

/// A server that answers, then disappears mid-run (issue 45 item 9's other half): every
/// protocol's run still ends by `-d`, and by `-n` once nothing has answered for
/// `give_up_after` while connects fail (the rest of the count given up and counted, not
/// retried at ten connects a second for minutes), with what the server answered kept.
#[test]
fn a_server_that_disappears_mid_run_ends_every_protocol_by_count_and_by_time() {
    use loadlab_testkit::{response, Behavior, H2Behavior, H2Server, TestCa, TestServer};
    let ca = TestCa::new();
    enum Server {
        H1(TestServer),
        H2(H2Server),
    }
    impl Server {
        fn answered(&self) -> u64 {
            match self {
                Server::H1(s) => s.counters().answered(),
                Server::H2(s) => s
                    .counters()
                    .answered
                    .load(std::sync::atomic::Ordering::SeqCst),
            }
        }
        fn port(&self) -> u16 {
            match self {
                Server::H1(s) => s.addr().port(),
                Server::H2(s) => s.addr().port(),
            }
        }
    }
    let ok = || Behavior::Fixed(response(200, "ok"));
    for by_count in [true, false] {
        for name in [
            "HTTP/1.1",
            "HTTPS",
            "HTTP/2 (h2c)",
            "HTTP/2 over TLS",
            "scenario",
        ] {
            let server = match name {
                "HTTP/1.1" | "scenario" => Server::H1(TestServer::start(ok())),
                "HTTPS" => Server::H1(TestServer::start_tls(ok(), &ca)),
                "HTTP/2 (h2c)" => Server::H2(H2Server::start(H2Behavior::default())),
                _ => Server::H2(H2Server::start_tls(H2Behavior::default(), &ca)),
            };
            let port = server.port();
            let (_, mut spec) = protocols(port)
                .into_iter()
                .find(|(n, _)| *n == name)
                .unwrap();
            if spec.url.starts_with("https") {
                spec.tls.ca_pem = Some(ca.pem().into_bytes());
            }
            spec.connections = Some(2);
            // One second without an answer, connects failing, is enough here (5 s unless set).
            spec.give_up_after = Duration::from_secs(1);
            if by_count {
                spec.requests = Some(3_000);
            } else {
                spec.duration = Some(Duration::from_secs(1));
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let running = std::thread::spawn(move || {
                let _ = tx.send(common::run_within(spec, Duration::from_secs(60)));
            });
            // Gone once it has answered some: waited for, not slept for.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while server.answered() < 50 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            let answered = server.answered();
            drop(server);
            let _held = HeldPort::hold(port);
            let r = rx
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{name}: the run did not end"));
            running.join().unwrap();
            let q = &r.measured.requests;
            assert!(answered >= 50, "{name}: the server answered {answered}");
            assert!(q.completed >= 50, "{name}: {q:?}");
            assert!(
                q.failed > 0,
                "{name}: nothing failed after the server went: {q:?}"
            );
            assert_eq!(q.issued, q.completed + q.failed, "{name}: {q:?}");
            let gave_up = r
                .verdicts
                .iter()
                .find(|v| v.contains("the target went away"));
            if by_count {
                // Once gone, the rest of the count is given up, each request of it named:
                // sent and answered, sent and failed, or never sent.
                assert!(q.issued < 3_000, "{name}: {q:?}");
                let unsent = format!("({} requests never sent)", 3_000 - q.issued);
                assert!(
                    gave_up.is_some_and(|v| v.contains(&unsent)),
                    "{name}: {unsent}: {:?}",
                    r.verdicts
                );
            } else {
                assert!(gave_up.is_none(), "{name}: a run by time ends by its time");
            }
            assert!(
                r.measured
                    .errors
                    .get("connect_refused")
                    .copied()
                    .unwrap_or(0)
                    > 0,
                "{name}: {:?}",
                r.measured.errors
            );
            assert!(
                !r.verdicts.iter().any(|v| v.contains("nothing succeeded")),
                "{name}: {:?}",
                r.verdicts
            );
        }
    }
}
