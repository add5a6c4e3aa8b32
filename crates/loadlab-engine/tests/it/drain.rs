//! An open loop's drain: the answers that arrive after the load's planned end count over the
//! time they took, so a target that could not keep up does not show the rate it was offered.

use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{response, Behavior, TestServer, TimedServer, Timing};
use std::time::Duration;

use crate::common;

fn open_loop(url: String, rate: f64) -> RunResult {
    common::run_within(
        RunSpec {
            url,
            rate: Some(rate),
            duration: Some(Duration::from_secs(1)),
            // Room for every request of the second in flight at once: the backlog waits at
            // the server, not for a connection, as on a path that carries less than offered.
            max_connections: Some(250),
            threads: Some(1),
            timeout: Duration::from_secs(5),
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    )
}

/// A server of 100/s (one request at a time, 10 ms each) offered 200/s for 1 s: its second
/// of backlog is answered after the load's end. Over the planned second alone that read
/// ~200/s; over the second and the drain it is the ~100/s the server carried.
#[test]
fn a_target_that_cannot_keep_up_shows_what_it_carried() {
    let server = TimedServer::start(Timing::Serial(Duration::from_millis(10)));
    let r = open_loop(server.url("/"), 200.0);
    let m = &r.measured;
    assert_eq!(m.duration_s, 1.0);
    let drain = m.drain_s.expect("an open loop has a drain");
    let q = &m.requests;
    // Each answer takes 10 ms and a bit: the server's whole work after the end.
    assert!(q.completed >= 150, "{q:?}");
    let answered_after = q.completed as f64 - 100.0;
    assert!(
        drain >= answered_after * 0.01 * 0.9 && drain <= 1.5,
        "drain {drain} s for {} answers: {q:?}",
        q.completed
    );
    assert!(
        (q.per_second - q.completed as f64 / (1.0 + drain)).abs() < 1e-6,
        "{q:?}"
    );
    assert!(
        (80.0..=105.0).contains(&q.per_second),
        "{q:?}, drain {drain} s"
    );
    let bytes = &m.bytes;
    assert!((bytes.received_per_s - bytes.received as f64 / (1.0 + drain)).abs() < 1e-6);
}

/// A target that keeps up: the drain is the last answer's response time, and the rate is the
/// offered one within 1% (allowing what the machine held loadlab's thread off its CPU).
#[test]
fn a_kept_up_open_loop_reads_its_offered_rate() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = open_loop(server.url("/"), 200.0);
    let m = &r.measured;
    let drain = m.drain_s.expect("an open loop has a drain");
    let q = &m.requests;
    assert_eq!((q.completed, q.failed, q.not_sent), (200, 0, 0), "{q:?}");
    // The last request was due before the end: its response time bounds the drain.
    let max_s = m.latency_us.as_ref().unwrap().max / 1e6;
    assert!(drain <= max_s + 1e-3, "drain {drain} s, slowest {max_s} s");
    let stalled_s = common::stalls_ms(&r) / 1_000.0;
    assert!(
        q.per_second >= 200.0 * 0.99 / (1.0 + stalled_s) && q.per_second <= 200.0,
        "{q:?}, drain {drain} s, stalls {stalled_s} s"
    );
}
