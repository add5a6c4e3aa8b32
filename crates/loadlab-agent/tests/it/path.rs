//! The path check (issue 52) between two in-process agents on loopback: one listens, the
//! other checks, and both directions come back complete and fast; a stranger without the
//! ticket gets nothing and does not spoil the check; bounds and the token are enforced.

use crate::client::endpoint;
use crate::support::{self, start, Req};
use loadlab_agent::client::{measure_path, AgentClient};
use loadlab_agent::protocol::path::{PathListen, PathTicket, MAX_PATH_BYTES};
use std::io::{Read as _, Write as _};

const MIB: u64 = 1024 * 1024;

#[test]
fn a_path_on_loopback_carries_the_whole_transfer_both_ways() {
    let (server, generator) = (start(|_| {}), start(|c| c.generator = true));
    let (s, g) = (
        endpoint(&server, support::TOKEN, "path-s"),
        endpoint(&generator, support::TOKEN, "path-g"),
    );
    let (mut s, _) = AgentClient::connect(&s).unwrap();
    let (mut g, _) = AgentClient::connect(&g).unwrap();
    let goodput = measure_path(&mut s, &mut g, 4 * MIB, 2_000).unwrap();
    for (way, t) in [("down", goodput.down), ("up", goodput.up)] {
        assert!(t.complete, "{way}: {t:?}");
        assert_eq!(t.bytes, 4 * MIB, "{way}");
        // Loopback moves gigabits; 100 Mbit/s would mean the transfer is not what is timed.
        assert!(t.bits_per_s().unwrap() > 100e6, "{way}: {t:?}");
    }
    // The other way round too: every agent both listens and checks.
    let back = measure_path(&mut g, &mut s, MIB, 1_000).unwrap();
    assert!(back.down.complete && back.up.complete, "{back:?}");
}

#[test]
fn a_connection_without_the_ticket_gets_nothing_and_the_check_still_runs() {
    let (server, generator) = (start(|_| {}), start(|_| {}));
    let answer = server.call(Req::new("POST", "/v1/path/listen").json(&PathListen {
        bytes: MIB,
        ms: 1_000,
    }));
    assert_eq!(answer.status, 200);
    let ticket: PathTicket = answer.json();
    let mut stranger = std::net::TcpStream::connect((server.addr.ip(), ticket.port)).unwrap();
    stranger.write_all(&[b'0'; 32]).unwrap();
    stranger.write_all(b"D").unwrap();
    let mut got = Vec::new();
    stranger
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let _ = stranger.read_to_end(&mut got);
    assert!(
        got.is_empty(),
        "a wrong ticket was sent {} bytes",
        got.len()
    );
    // The holder of the ticket is still served.
    let g = endpoint(&generator, support::TOKEN, "path-ticket");
    let (mut g, _) = AgentClient::connect(&g).unwrap();
    let goodput = g
        .path_check(&loadlab_agent::protocol::path::PathCheck {
            host: server.addr.ip().to_string(),
            port: ticket.port,
            ticket: ticket.ticket,
            bytes: MIB,
            ms: 1_000,
        })
        .unwrap();
    assert!(goodput.down.complete && goodput.up.complete, "{goodput:?}");
}

#[test]
fn a_path_check_out_of_bounds_or_without_the_token_is_refused() {
    let agent = start(|_| {});
    let too_big = agent.call(Req::new("POST", "/v1/path/listen").json(&PathListen {
        bytes: MAX_PATH_BYTES + 1,
        ms: 1_000,
    }));
    assert_eq!(too_big.status, 400);
    assert_eq!(too_big.error().field.as_deref(), Some("bytes"));
    let too_long = agent.call(Req::new("POST", "/v1/path/listen").json(&PathListen {
        bytes: MIB,
        ms: 60_000,
    }));
    assert_eq!(too_long.error().field.as_deref(), Some("ms"));
    let bad_ticket = agent.call(Req::new("POST", "/v1/path/check").json(&serde_json::json!({
        "host": "127.0.0.1", "port": 9, "ticket": "not-hex", "bytes": 10, "ms": 10
    })));
    assert_eq!(bad_ticket.status, 400);
    assert_eq!(bad_ticket.error().field.as_deref(), Some("ticket"));
    let mut anonymous = Req::new("POST", "/v1/path/listen").json(&PathListen {
        bytes: MIB,
        ms: 1_000,
    });
    anonymous.token = None;
    assert_eq!(agent.call(anonymous).status, 401);
}
