//! HTTP/1.1 pipelining (`--pipeline N`, issue 54) against servers on loopback that count
//! for themselves: their count equals loadlab's, requests really go ahead of the answers
//! (the server sees N read and unanswered at once), a server that closes after a few
//! answers has the rest sent again and none counted twice, and one that answers more than
//! was asked fails the request the extra bytes came with, classified. In a closed loop, an
//! open loop, and the stages of either (`--stages`, `--stages ... --closed`).

use loadlab_engine::RunSpec;
use loadlab_testkit::{response, Behavior, Script, ScriptedServer, TestServer};
use std::time::Duration;

use crate::common;

#[test]
fn a_closed_loop_pipelines_n_requests_and_the_servers_count_is_loadlabs() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            connections: Some(2),
            pipeline: 16,
            requests: Some(3_000),
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(
        (q.issued, q.completed, q.failed),
        (3_000, 3_000, 0),
        "{:?}",
        r.measured.error_details
    );
    let c = server.counters();
    assert_eq!((c.requests(), c.answered()), (3_000, 3_000));
    assert_eq!(c.accepted(), 2, "two connections carry every request");
    // The first 16 of a connection go in one write: the server reads them all before it
    // answers the first.
    assert_eq!(c.most_ahead(), 16, "requests read ahead of their answers");
    assert_eq!(r.measured.retried, 0);
    assert!(
        r.load.plan.contains("2 connections x 16 pipelined"),
        "{}",
        r.load.plan
    );
}

#[test]
fn an_open_loop_pipelines_on_the_connections_it_opens_and_counts_exactly() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            rate: Some(2_000.0),
            duration: Some(Duration::from_millis(500)),
            max_connections: Some(1),
            pipeline: 8,
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(q.failed, 0, "{:?}", r.measured.error_details);
    // 1,000 due; a busy machine may send fewer (said so as not sent).
    assert!(q.completed >= 500, "completed: {}", q.completed);
    assert_eq!(server.counters().answered(), q.completed);
    assert!(r.load.plan.contains("x 8 pipelined"), "{}", r.load.plan);
}

/// Each connection: the server reads the pipeline (every request arrived in one write),
/// answers three, and closes without saying so. The fourth was written and never answered:
/// sent again on the next connection, first (the one sent most goes first), and counted once.
#[test]
fn a_server_closing_after_three_answers_has_the_rest_sent_again_and_none_counted_twice() {
    let answers = [response(200, "a"), response(200, "b"), response(200, "c")].concat();
    let server = ScriptedServer::start(Script::new().read_request().write(answers).close());
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            connections: Some(1),
            pipeline: 4,
            requests: Some(99),
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(
        (q.issued, q.completed, q.failed),
        (99, 99, 0),
        "{:?} {:?}",
        r.measured.errors,
        r.measured.error_details
    );
    let c = server.counters();
    // Three answers a connection: 33 connections answered the 99.
    assert_eq!((c.accepted(), c.writes() * 3), (33, 99));
    assert!(r.measured.retried >= 32, "retried: {}", r.measured.retried);
}

/// A server that answers every request five times: which answer is whose cannot be told in
/// HTTP/1.1, so the answers are taken in order, and the first one beyond the requests in
/// flight fails its request as `extra_bytes`; the run goes on, every request accounted for.
/// Five, in one write, as more than the 4 a connection can have in flight: with two the
/// client's refills kept its queue ahead of the answers, and no answer was ever beyond it
/// (the test failed 1 run in 20 alone).
#[test]
fn answers_beyond_the_requests_in_flight_are_a_classified_failure() {
    let five = response(200, "again").repeat(5);
    let server = ScriptedServer::start(Script::answer_every(five));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            connections: Some(1),
            pipeline: 4,
            requests: Some(40),
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(q.issued, 40);
    assert_eq!(q.completed + q.failed, 40);
    let extra = r.measured.errors.get("extra_bytes").copied().unwrap_or(0);
    assert!(extra > 0 && extra == q.failed, "{:?}", r.measured.errors);
}

#[test]
fn pipelining_over_tls_counts_exactly() {
    let ca = loadlab_testkit::TestCa::new();
    let server = TestServer::start_tls(Behavior::Fixed(response(200, "ok")), &ca);
    let r = common::run_within(
        RunSpec {
            url: format!("https://localhost:{}/", server.addr().port()),
            threads: Some(1),
            connections: Some(2),
            pipeline: 8,
            requests: Some(1_000),
            tls: loadlab_engine::tls::TlsSpec {
                ca_pem: Some(ca.pem().into_bytes()),
                ..Default::default()
            },
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(
        (q.completed, q.failed),
        (1_000, 0),
        "{:?}",
        r.measured.error_details
    );
    assert_eq!(server.counters().answered(), 1_000);
    assert!(server.counters().most_ahead() > 1);
}

/// An open loop against a server that ends a connection every third answer, saying so (as
/// nginx does at its keepalive_requests): the requests pipelined behind that answer go again
/// on another connection, keeping their due times; none fails and the counts agree.
#[test]
fn an_open_loop_sends_again_what_an_announced_close_left_unprocessed() {
    let close = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".to_vec();
    let ok = response(200, "ok");
    let server = TestServer::start(Behavior::Cycle(vec![ok.clone(), ok, close]));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            rate: Some(1_000.0),
            duration: Some(Duration::from_millis(500)),
            max_connections: Some(1),
            pipeline: 16,
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(q.failed, 0, "{:?}", r.measured.error_details);
    // A connection answers three: on a busy machine its churn can fall behind the schedule
    // (the rest then not sent, and said so), so no exact total here.
    assert!(q.completed >= 100, "completed: {}", q.completed);
    let c = server.counters();
    assert_eq!(c.answered(), q.completed);
    assert!(
        c.accepted() * 3 >= q.completed,
        "{} connections",
        c.accepted()
    );
}

/// A duration-bounded closed loop's count against the server's: every request loadlab
/// completed was answered, and the server answered at most those and the ones in flight
/// when the run ended (abandoned with it: their answers may have been written, not read);
/// each request issued is counted once, completed, failed or in flight.
fn assert_closed_counts(r: &loadlab_result::RunResult, answered: u64) {
    let q = &r.measured.requests;
    assert!(r.warmup.is_none(), "no warm-up asked");
    let in_flight = r.in_flight_at_end;
    assert!(
        q.completed <= answered && answered <= q.completed + in_flight,
        "loadlab completed {}, {in_flight} in flight at the end; the server answered {answered}",
        q.completed
    );
    assert_eq!(q.issued, q.completed + q.failed + in_flight, "{q:?}");
}

/// `--stages ... --closed` pipelined: connection slot i works while the level is above i,
/// its N places pipelining on one connection, and rests (its connection closed once its
/// answers are in) while the level is at or below i. One, three, one, two: four connections
/// (slot 1 opens again in the last stage), where slots that never rest open three.
#[test]
fn closed_loop_stages_pipeline_and_the_connections_follow_the_levels() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            stages: Some("300ms:1, 300ms:3, 300ms:1, 300ms:2".into()),
            closed_stages: true,
            interval: Duration::from_millis(300),
            pipeline: 4,
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(q.failed, 0, "{:?}", r.measured.error_details);
    assert!(q.completed >= 100, "completed: {}", q.completed);
    let c = server.counters();
    assert_eq!(
        c.accepted(),
        4,
        "slot 0 throughout, 2 in the second stage, 1 in both"
    );
    assert_eq!(c.most_ahead(), 4, "requests read ahead of their answers");
    assert_closed_counts(&r, c.answered());
    let levels: Vec<Option<f64>> = r.timeline.iter().map(|i| i.connections).collect();
    assert_eq!(levels[..4], [Some(1.0), Some(3.0), Some(1.0), Some(2.0)]);
    assert!(r.timeline.iter().take(4).all(|i| i.completed > 0));
    assert_eq!(r.measured.retried, 0);
    assert!(r.load.plan.contains("x 4 pipelined"), "{}", r.load.plan);
}

/// Staged and pipelined against a server that answers three of each connection's four and
/// closes without saying so: the fourth, written and never answered, is not processed,
/// sent again on the slot's next connection and counted once; nothing fails.
#[test]
fn closed_loop_stages_send_again_what_a_close_mid_pipeline_left_and_count_it_once() {
    let answers = [response(200, "a"), response(200, "b"), response(200, "c")].concat();
    let server = ScriptedServer::start(Script::new().read_request().write(answers).close());
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            stages: Some("300ms:1, 300ms:2".into()),
            closed_stages: true,
            pipeline: 4,
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(
        q.failed, 0,
        "{:?} {:?}",
        r.measured.errors, r.measured.error_details
    );
    assert!(q.completed >= 30, "completed: {}", q.completed);
    let c = server.counters();
    assert_closed_counts(&r, c.writes() * 3);
    // Each connection but the last of a slot left one unanswered, sent again.
    assert!(
        r.measured.retried >= c.accepted() - 2,
        "retried: {}",
        r.measured.retried
    );
}

/// An open loop's `--stages` pipelines as its `--rate` does: the schedule's requests on the
/// places of one connection's pipeline, every one answered and counted once.
#[test]
fn open_loop_stages_pipeline_and_count_exactly() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            threads: Some(1),
            stages: Some("300ms:500, 300ms:500->1500".into()),
            max_connections: Some(1),
            pipeline: 8,
            ..RunSpec::default()
        },
        Duration::from_secs(20),
    );
    let q = &r.measured.requests;
    assert_eq!(q.failed, 0, "{:?}", r.measured.error_details);
    // 450 due; a busy machine may send fewer (said so as not sent).
    assert!(q.completed >= 200, "completed: {}", q.completed);
    let c = server.counters();
    assert_eq!((c.answered(), c.accepted()), (q.completed, 1));
    assert!(r.load.plan.contains("x 8 pipelined"), "{}", r.load.plan);
}
