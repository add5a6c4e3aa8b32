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
    for (name, spec) in protocols(port) {
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
    }
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
    for (name, spec) in cases {
        let r = common::run_within(
            RunSpec {
                duration: Some(Duration::from_millis(500)),
                ..spec
            },
            Duration::from_secs(60),
        );
        nothing_succeeded(name, &r);
    }
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
