//! The run's QUIC connections for the path's sampler (`RunControl::quic_paths`, docs/path.md):
//! taken in windows while a run opens and closes connections, the windows must add up to
//! every byte the connections received (those that closed between two takes included, none
//! counted twice) but what crossed after a connection closed, held against the testkit
//! server's own quinn counts, and carry quinn's round trips.

use loadlab_engine::{RunControl, RunSpec};
use loadlab_testkit::{H3Server, TestCa};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[test]
fn quic_windows_add_up_to_every_byte_of_connections_that_come_and_go() {
    let ca = TestCa::new();
    let server = H3Server::start(&ca);
    // Without keep-alive each connection carries one request a stream and closes: the run
    // opens about 60 while the windows are taken.
    let n = 300;
    let config = RunSpec {
        url: format!("{}bytes?n=4096", server.url()),
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..Default::default()
        },
        http3: true,
        threads: Some(1),
        connections: Some(2),
        streams: 5,
        requests: Some(n),
        keepalive: false,
        pm_qos: false,
        ..RunSpec::default()
    }
    .validate()
    .expect("valid spec");
    let control = RunControl::new();
    let done = AtomicBool::new(false);
    let (mut received, mut sent, mut round_trips, mut most_open) = (0u64, 0u64, 0usize, 0usize);
    let outcome = std::thread::scope(|s| {
        let taker = s.spawn(|| {
            while !done.load(Ordering::Acquire) {
                let take = control.quic_paths().take();
                most_open = most_open.max(take.open.len());
                received += take.closed_received_bytes;
                sent += take.closed_sent_bytes;
                for c in &take.open {
                    received += c.received_bytes;
                    sent += c.sent_bytes;
                    round_trips += usize::from(c.rtt_us.is_some_and(|r| r > 0.0));
                    assert!(c.min_rtt_us <= c.rtt_us.map(|r| r * 4.0), "{c:?}");
                }
                // Polling: how often does not change the sums, only how they are split.
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        let outcome = loadlab_engine::run(&config, &control);
        done.store(true, Ordering::Release);
        taker.join().unwrap();
        outcome
    });
    let result = loadlab_engine::summarize(&config, &outcome.expect("the run starts"));
    let m = &result.measured;
    assert_eq!(m.requests.completed, n, "{:?}", m.error_details);
    // The last take, once the run is over: every connection has closed and given its bytes.
    let last = control.quic_paths().take();
    assert!(last.open.is_empty(), "{last:?}");
    received += last.closed_received_bytes;
    sent += last.closed_sent_bytes;
    assert!(
        round_trips > 0 && most_open >= 1,
        "{round_trips} {most_open}"
    );

    let counters = server.counters();
    let until = Instant::now() + Duration::from_secs(10);
    while counters.closed() < counters.connections() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    let conns = counters.connections();
    assert!(conns >= 50, "{conns} connections");
    let (server_sent, server_received) = counters.udp_bytes();
    // Booked as each connection's driver ends, after its last request: at least what the
    // requests booked as they ended (`wire_bytes`).
    let wire = m.wire_bytes.clone().expect("wire bytes over HTTP/3");
    assert!(received >= wire.received, "windows {received}, {wire:?}");
    // What the server sent is what the connections received, but what crossed after a client
    // closed (the server's last acknowledgement: about 300 bytes a connection here), as for
    // the wire bytes. Under two datagrams a connection: on a busy machine the close is acknowledged, or a probe
    // sent, once more (76,413 bytes for 60 connections, 1,273 each, was seen in a CI run).
    let datagrams = conns * 2 * 1_200;
    assert!(
        received <= server_sent && server_sent - received < datagrams,
        "windows {received}, the server sent {server_sent}, {conns} connections"
    );
    // Sent less lost (nothing is lost on loopback): a quinn server does not count a
    // connection's first datagram, the client's Initial of 1,200 bytes.
    let received_by_server = server_received + datagrams;
    assert!(
        sent <= received_by_server && received_by_server - sent < datagrams,
        "windows {sent}, the server received {server_received} and {conns} first datagrams"
    );
}
