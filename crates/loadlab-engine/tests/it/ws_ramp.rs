//! The ends and beginnings of WebSocket loads: an open loop's idle connections say goodbye
//! together at the run's end, within one grace however many there are and however slowly
//! the server answers; and held connections open at `--ws-connect-rate`, each handshake
//! timed from when its connection was due.

use loadlab_engine::RunSpec;
use loadlab_testkit::{WsBehavior, WsCounters, WsServer};
use std::time::{Duration, Instant};

use crate::common;

fn get(c: &std::sync::atomic::AtomicU64) -> u64 {
    WsCounters::get(c)
}

/// An open loop whose echoes take 100 ms keeps about ten connections busy at 100 messages a
/// second; at the end they are idle, and the server answers their goodbyes after 5 s. Each
/// goodbye gives up after 200 ms: awaited one after another, ten of them held the run's end
/// 2 s; together, the end comes within one grace.
#[test]
fn idle_open_loop_connections_say_goodbye_together() {
    let server = WsServer::start(WsBehavior::Slow {
        echo_after: Duration::from_millis(100),
        goodbye_after: Duration::from_secs(5),
    });
    let started = Instant::now();
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            rate: Some(100.0),
            duration: Some(Duration::from_millis(300)),
            max_connections: Some(50),
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let took = started.elapsed();
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    let opened = get(&server.counters().upgraded);
    assert!(opened >= 8, "only {opened} connections: too few to tell");
    // Every one said goodbye (the server counts the close frames it read).
    let since = Instant::now();
    while get(&server.counters().closes) < opened && since.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(get(&server.counters().closes), opened);
    // 300 ms of load, the last echoes' 100 ms, one goodbye's 200 ms, and the run's own
    // start and end: well under the 200 ms a connection of one after another.
    assert!(
        took < Duration::from_millis(1_200),
        "{opened} goodbyes took the run to {took:?}"
    );
}
