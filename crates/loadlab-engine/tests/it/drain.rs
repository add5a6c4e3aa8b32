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
/// 200/s; over the second and the drain it is at most the 100/s the server can carry.
#[test]
fn a_target_that_cannot_keep_up_shows_what_it_carried() {
    let server = TimedServer::start(Timing::Serial(Duration::from_millis(10)));
    let r = open_loop(server.url("/"), 200.0);
    let m = &r.measured;
    assert_eq!(m.duration_s, 1.0);
    let drain = m.drain_s.expect("an open loop has a drain");
    let q = &m.requests;
    assert!(q.completed >= 150, "{q:?}");
    // The server needs at least 10 ms an answer, one after another, all from the start: its
    // last answer comes that long after the start at the earliest (a stall only delays it).
    let least_end_s = q.completed as f64 * 0.01;
    assert!(
        drain >= least_end_s - 1.0 - 1e-3 && drain < 5.0,
        "drain {drain} s for {} answers: {q:?}",
        q.completed
    );
    assert!(
        (q.per_second - q.completed as f64 / (1.0 + drain)).abs() < 1e-6,
        "{q:?}"
    );
    assert!(
        q.per_second > 50.0 && q.per_second <= 100.5,
        "{q:?}, drain {drain} s"
    );
    let bytes = &m.bytes;
    assert!((bytes.received_per_s - bytes.received as f64 / (1.0 + drain)).abs() < 1e-6);
}

/// A target that keeps up: the drain is the last answer's response time (at most the
/// slowest's, measured: a loaded machine's stall stretches it, not the bound), and the rate
/// is the offered one within 1% beyond that.
#[test]
fn a_kept_up_open_loop_reads_its_offered_rate() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = open_loop(server.url("/"), 200.0);
    let m = &r.measured;
    let drain = m.drain_s.expect("an open loop has a drain");
    let q = &m.requests;
    assert_eq!((q.completed, q.failed, q.not_sent), (200, 0, 0), "{q:?}");
    // The last request was due before the end: its response time bounds the drain.
    let slowest_s = m.latency_us.as_ref().unwrap().max / 1e6;
    assert!(
        drain <= slowest_s + 1e-3,
        "drain {drain} s, slowest {slowest_s} s"
    );
    assert!(
        q.per_second >= 200.0 * 0.99 / (1.0 + slowest_s) && q.per_second <= 200.0,
        "{q:?}, drain {drain} s, slowest {slowest_s} s"
    );
}
