//! HTTP/2 requests the server did not process are sent again, not failed (issue 29; RFC
//! 9113 6.8): an h2 server that shuts each connection down gracefully after 50 requests
//! (GOAWAY, then a second GOAWAY whose last stream id is below the streams still opening)
//! must end the run with every request answered, none failed, and its own count equal to
//! loadlab's.

use loadlab_engine::RunSpec;
use loadlab_testkit::{H2Behavior, H2Server};
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common;

#[test]
fn streams_above_a_goaways_last_stream_id_are_sent_again_on_a_new_connection() {
    let server = H2Server::start(H2Behavior {
        goaway_after: Some(50),
        ..H2Behavior::default()
    });
    let r = common::run_within(
        RunSpec {
            url: format!("http://{}/", server.addr()),
            http2: true,
            threads: Some(2),
            connections: Some(2),
            streams: 8,
            requests: Some(1_000),
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    );
    let q = &r.measured.requests;
    assert_eq!(
        (q.issued, q.completed, q.failed),
        (1_000, 1_000, 0),
        "{:?} {:?}",
        r.measured.errors,
        r.measured.error_details
    );
    // The streams sent again are in the result (112 of 1,000 failed before they were).
    let retried = r.measured.retried;
    assert!((1..1_000).contains(&retried), "retried: {retried}");
    let counters = server.counters();
    assert_eq!(counters.answered.load(Ordering::SeqCst), 1_000);
    // Each connection answers its 50 and the streams it let in before its last GOAWAY.
    let connections = counters.connections.load(Ordering::SeqCst);
    assert!(
        connections >= 5,
        "a new connection after each GOAWAY: {connections}"
    );
}

/// 100 streams against a server taking 4 at a time (lighttpd's stall in the interop matrix
/// began with streams opened before its SETTINGS arrived): every request answered, never
/// more than 4 streams open on the connection.
#[test]
fn a_servers_max_concurrent_streams_holds_from_the_first_request() {
    let server = H2Server::start(H2Behavior {
        max_concurrent_streams: Some(4),
        ..H2Behavior::default()
    });
    let r = common::run_within(
        RunSpec {
            url: format!("http://{}/", server.addr()),
            http2: true,
            threads: Some(1),
            connections: Some(1),
            streams: 100,
            requests: Some(2_000),
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    );
    let q = &r.measured.requests;
    assert_eq!(
        (q.completed, q.failed),
        (2_000, 0),
        "{:?} {:?}",
        r.measured.errors,
        r.measured.error_details
    );
    let counters = server.counters();
    assert_eq!(counters.answered.load(Ordering::SeqCst), 2_000);
    let most = counters
        .max_streams_on_one_connection
        .load(Ordering::SeqCst);
    assert!(most <= 4, "{most} streams open at once");
}
