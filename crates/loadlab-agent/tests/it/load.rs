//! The generator role end to end: an in-process agent with `--generator` sends a shard to a
//! loopback server while the coordinator's client reads its intervals, as a fleet run does.
//! What is checked is what the agent holds: only what the reader has not acknowledged, so
//! its memory does not grow with the load's length, and a result without a timeline.

use crate::client::endpoint;
use crate::support::{self, eventually, start};
use loadlab_agent::client::{AgentClient, ClientError};
use loadlab_agent::clock::LocalClock;
use loadlab_agent::protocol::load::{LoadBatch, StartLoad, WireLoad};
use loadlab_agent::protocol::Hello;
use loadlab_engine::shard::Shard;
use loadlab_engine::RunSpec;
use loadlab_testkit::{response, Behavior, TestServer};
use std::time::Duration;

/// Shard 1 of 1 of `spec`, to start a moment from now (same host: one clock).
fn start_load(spec: &RunSpec, lease_ms: u64) -> StartLoad {
    let at = LocalClock::new().now_ns() + 200_000_000;
    StartLoad {
        load: WireLoad::from_spec(spec, Shard { index: 0, count: 1 }).unwrap(),
        start_at_ns: at,
        agreed_start_ns: at,
        client: "coordinator".into(),
        run: Some("flat".into()),
        lease_ms: Some(lease_ms),
    }
}

/// 600 requests over two paced connections (200/s): about 30 intervals of 100 ms, the
/// shortest allowed. Read as the coordinator reads them (`after` = the count it has), the
/// agent holds only the intervals of each answer, never those already read, however many
/// came before; a read repeated with the same `after` gets the same ones, one below what was
/// acknowledged is refused, and the result comes without a timeline while the intervals
/// read add up exactly to it and to the server's count.
#[test]
fn the_agent_holds_only_what_the_coordinator_has_not_read() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let agent = start(|c| c.generator = true);
    let ep = endpoint(&agent, support::TOKEN, "load");
    let (mut client, _) = AgentClient::connect(&ep).unwrap();
    let spec = RunSpec {
        url: server.url("/"),
        connections: Some(2),
        requests: Some(600),
        pace: Some(Duration::from_millis(10)),
        interval: Duration::from_millis(100),
        ..RunSpec::default()
    };
    let id = client.start_load(&start_load(&spec, 10_000)).unwrap().load;

    let mut read: Vec<loadlab_result::IntervalSummary> = Vec::new();
    let (mut max_held, mut repeated) = (0u64, false);
    let result = loop {
        let batch: LoadBatch = client
            .load_batch(&id, read.len() as u64, Duration::from_millis(1000))
            .unwrap();
        assert_eq!(batch.after, read.len() as u64);
        // What the agent holds is exactly what this answer carries: nothing before `after`.
        assert_eq!(
            batch.held,
            batch.intervals.len() as u64,
            "after {}",
            batch.after
        );
        max_held = max_held.max(batch.held);
        if !repeated && !batch.intervals.is_empty() && !read.is_empty() {
            // The answer lost: the same `after` again finds the same intervals (and perhaps
            // newer ones behind them).
            let again = client
                .load_batch(&id, read.len() as u64, Duration::ZERO)
                .unwrap();
            assert_eq!(again.after, batch.after);
            assert_eq!(
                again.intervals[..batch.intervals.len()],
                batch.intervals[..]
            );
            repeated = true;
        }
        read.extend(batch.intervals);
        if batch.done {
            break batch
                .result
                .unwrap_or_else(|| panic!("no result: {:?}", batch.error));
        }
    };
    assert!(repeated, "no two reads to repeat: {} intervals", read.len());
    // Asking again below what was acknowledged: those intervals are gone, and it says so.
    if read.len() > 1 {
        let gone = client
            .load_batch(&id, 0, Duration::ZERO)
            .expect_err("intervals already acknowledged are not held");
        assert!(
            matches!(&gone, ClientError::Refused { status: 410, .. }),
            "{gone}"
        );
        assert!(gone.to_string().contains("no longer held"), "{gone}");
    }
    eprintln!(
        "{} intervals read, the agent held at most {max_held} at once",
        read.len()
    );
    assert!(read.len() >= 10, "a load of many intervals: {}", read.len());

    // The result travels without a timeline; its own part summary stands in for it.
    assert!(result.timeline.is_empty(), "{}", result.timeline.len());
    assert_eq!(result.parts.len(), 1);
    assert_eq!(result.parts[0].shard, result.shard);
    // Every request is in the intervals read, and each was the server's.
    let phases = [Some(&result.measured), result.warmup.as_ref()];
    let total = |f: fn(&loadlab_result::PhaseSummary) -> u64| -> u64 {
        phases.iter().flatten().map(|p| f(p)).sum()
    };
    let completed: u64 = read.iter().map(|i| i.completed).sum();
    let failed: u64 = read.iter().map(|i| i.failed).sum();
    assert_eq!(completed, total(|p| p.requests.completed));
    assert_eq!(failed, total(|p| p.requests.failed));
    assert_eq!((completed, failed), (600, 0));
    assert_eq!(server.counters().requests(), 600);
    client.close_load(&id).unwrap();
}

/// A coordinator that stops reading leaves the agent holding at most a lease's worth of
/// intervals: the lease runs out, the load is stopped and dropped, and the agent is free.
#[test]
fn a_load_nobody_reads_is_dropped_when_its_lease_runs_out() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let agent = start(|c| c.generator = true);
    let ep = endpoint(&agent, support::TOKEN, "lease");
    let (mut client, _) = AgentClient::connect(&ep).unwrap();
    let spec = RunSpec {
        url: server.url("/"),
        connections: Some(1),
        duration: Some(Duration::from_secs(600)),
        pace: Some(Duration::from_millis(10)),
        interval: Duration::from_millis(100),
        ..RunSpec::default()
    };
    let id = client.start_load(&start_load(&spec, 300)).unwrap().load;
    let busy = |c: &mut AgentClient| c.hello().map(|h: Hello| h.load_busy.is_some());
    assert!(busy(&mut client).unwrap());
    assert!(
        eventually(Duration::from_secs(60), || !busy(&mut client).unwrap()),
        "the load outlived its lease"
    );
    let gone = client
        .load_batch(&id, 0, Duration::ZERO)
        .expect_err("the load was dropped");
    assert!(
        matches!(&gone, ClientError::Refused { status: 404, .. }),
        "{gone}"
    );
}

/// A shard over HTTP/3 carries this host's UDP counters over its run (`kernel.udp`, TCP's
/// left at zero: they would be other traffic's), so datagrams a generator's kernel dropped
/// reach the coordinator as that generator's; here none were dropped, and the datagrams the
/// kernel delivered on this host are at least the responses loadlab read.
#[test]
fn a_shard_over_http3_carries_its_hosts_udp_counters() {
    let ca = loadlab_testkit::TestCa::new();
    let server = loadlab_testkit::H3Server::start(&ca);
    let agent = start(|c| c.generator = true);
    let ep = endpoint(&agent, support::TOKEN, "udp");
    let (mut client, _) = AgentClient::connect(&ep).unwrap();
    let spec = RunSpec {
        url: server.url(),
        http3: true,
        connections: Some(2),
        requests: Some(200),
        tls: loadlab_engine::tls::TlsSpec {
            ca_pem: Some(ca.pem().into_bytes()),
            ..Default::default()
        },
        ..RunSpec::default()
    };
    let id = client.start_load(&start_load(&spec, 10_000)).unwrap().load;
    let mut after = 0;
    let result = loop {
        let batch = client
            .load_batch(&id, after, Duration::from_millis(1000))
            .unwrap();
        after += batch.intervals.len() as u64;
        if batch.done {
            break batch
                .result
                .unwrap_or_else(|| panic!("no result: {:?}", batch.error));
        }
    };
    client.close_load(&id).unwrap();
    assert_eq!(result.measured.requests.completed, 200);
    let kernel = result.kernel.expect("the host's counters over the shard");
    let udp = kernel.udp.expect("UDP's counters");
    assert!(udp.datagrams_received >= 200, "{udp:?}");
    assert_eq!(udp.receive_buffer_errors, 0, "{udp:?}");
    assert!(
        !result.warnings.iter().any(|w| w.contains("datagram")),
        "{:?}",
        result.warnings
    );
}
