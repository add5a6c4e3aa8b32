//! Streaming gRPC calls against the mock upstream's streaming methods (tonic's server side,
//! every message counted): for each kind, the calls completed equal the server's calls and
//! the messages each way equal the server's messages (and the timeline's intervals add up to
//! them), closed and open loop; a server stream ended at loadlab's cap, a bidirectional
//! stream on a rate's schedule, and an endless stream without a cap bounded by --timeout.

use super::grpc::{against_upstream, grpc, upstream_call};
use crate::common;
use loadlab_engine::grpc::{Data, GrpcSpec};
use loadlab_engine::RunSpec;
use std::time::Duration;

fn method(name: &str, json: &str) -> GrpcSpec {
    GrpcSpec {
        method: format!("loadlab.upstream.v1.Upstream/{name}"),
        data: Data::Json(json.into()),
        ..upstream_call()
    }
}

/// The messages each way over the result's timeline (each interval counts those of the calls
/// that ended in it).
fn timeline_messages(r: &loadlab_engine::RunResult) -> (u64, u64) {
    let each = r.timeline.iter().filter_map(|i| i.messages);
    each.fold((0, 0), |(s, r), m| (s + m.sent, r + m.received))
}

/// A closed loop of `calls` calls of `spec`, on 2 connections x 4 streams.
fn closed(url: String, spec: GrpcSpec, calls: u64) -> RunSpec {
    RunSpec {
        connections: Some(2),
        streams: 4,
        requests: Some(calls),
        ..grpc(url, spec)
    }
}

#[test]
fn server_streams_are_counted_message_by_message() {
    let (r, up) = against_upstream(|url| closed(url, method("Stream", "5"), 200));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, up.grpc_requests), (200, 200));
    let g = r.grpc.as_ref().expect("a gRPC section");
    assert_eq!(g.kind, "server_streaming");
    assert_eq!((g.messages_sent, up.grpc_messages_received), (200, 200));
    assert_eq!((g.messages_received, up.grpc_messages_sent), (1_000, 1_000));
    assert_eq!(g.first_message_us.as_ref().unwrap().count, 200);
    assert_eq!(g.message_gap_us.as_ref().unwrap().count, 800);
    assert_eq!(g.capped_calls, 0);
    assert_eq!(g.message_latency_us, None);
}

#[test]
fn an_endless_server_stream_ends_at_the_cap_or_the_timeout() {
    // Stream(0) never ends: capped at 3 answers, each call is complete.
    let capped = GrpcSpec {
        messages: Some(3),
        ..method("Stream", "0")
    };
    let (r, up) = against_upstream(|url| closed(url, capped, 40));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, up.grpc_requests), (40, 40));
    let g = r.grpc.unwrap();
    assert_eq!(g.capped_calls, 40);
    assert!(g.messages_received >= 120, "{}", g.messages_received);
    // Without a cap: --timeout, loadlab's own limit, ends each call.
    let (r, up) = against_upstream(|url| RunSpec {
        connections: Some(1),
        streams: 2,
        requests: Some(2),
        timeout: Duration::from_millis(300),
        ..grpc(url, method("Stream", "0"))
    });
    let m = &r.measured;
    assert_eq!(m.errors.get("request_timeout"), Some(&2), "{:?}", m.errors);
    assert_eq!(up.grpc_requests, 2);
}

#[test]
fn client_streams_send_their_messages_then_read_one_answer() {
    let spec = GrpcSpec {
        messages: Some(7),
        ..method("Collect", "{}")
    };
    let (r, up) = against_upstream(|url| closed(url, spec, 100));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, up.grpc_requests), (100, 100));
    let g = r.grpc.unwrap();
    assert_eq!(
        (g.kind.as_str(), g.messages_per_call),
        ("client_streaming", Some(7))
    );
    assert_eq!((g.messages_sent, up.grpc_messages_received), (700, 700));
    assert_eq!((g.messages_received, up.grpc_messages_sent), (100, 100));
}

#[test]
fn bidirectional_ping_pong_times_every_answer() {
    let spec = GrpcSpec {
        messages: Some(5),
        ..method("Chat", "{}")
    };
    let (r, up) = against_upstream(|url| closed(url, spec, 120));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, up.grpc_requests), (120, 120));
    let seen = timeline_messages(&r);
    let g = r.grpc.unwrap();
    assert_eq!(g.message_rate_per_s, None);
    assert_eq!((g.messages_sent, up.grpc_messages_received), (600, 600));
    assert_eq!((g.messages_received, up.grpc_messages_sent), (600, 600));
    assert_eq!(g.message_latency_us.unwrap().count, 600);
    assert_eq!(seen, (600, 600));
}

/// Messages on a rate's schedule: a call of 4 messages 20 ms apart lasts at least 60 ms
/// (a timer never fires early, so this bound cannot flake); an open loop of such calls
/// completes what the server counts.
#[test]
fn bidirectional_streams_on_a_rate_in_an_open_loop() {
    let spec = GrpcSpec {
        messages: Some(4),
        message_rate: Some(50.0),
        ..method("Chat", "{}")
    };
    let (r, up) = against_upstream(|url| RunSpec {
        rate: Some(100.0),
        duration: Some(Duration::from_millis(600)),
        streams: 8,
        ..grpc(url, spec)
    });
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert!(m.requests.completed >= 30, "{}", m.requests.completed);
    assert_eq!(m.requests.completed, up.grpc_requests);
    let seen = timeline_messages(&r);
    let g = r.grpc.unwrap();
    assert_eq!(g.message_rate_per_s, Some(50.0));
    assert_eq!(g.messages_sent, 4 * m.requests.completed);
    let totals = (g.messages_sent, g.messages_received);
    assert_eq!(seen, totals);
    assert_eq!(
        (g.messages_sent, g.messages_received),
        (up.grpc_messages_received, up.grpc_messages_sent)
    );
    let call_min_us = m.latency_us.as_ref().unwrap().min;
    assert!(call_min_us >= 60_000.0, "{call_min_us}");
    assert_eq!(g.message_latency_us.unwrap().count, g.messages_received);
}

/// `--grpc-message-rate max`: every message sent at once, each answer timed from the
/// call's start.
#[test]
fn bidirectional_streams_back_to_back() {
    let spec = GrpcSpec {
        messages: Some(6),
        message_rate: Some(f64::INFINITY),
        ..method("Chat", "{}")
    };
    let (r, up) = against_upstream(|url| closed(url, spec, 100));
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!((m.requests.completed, up.grpc_requests), (100, 100));
    let g = r.grpc.unwrap();
    assert_eq!(
        (g.pace.as_deref(), g.message_rate_per_s),
        (Some("back_to_back"), None)
    );
    assert_eq!((g.messages_sent, up.grpc_messages_received), (600, 600));
    assert_eq!((g.messages_received, up.grpc_messages_sent), (600, 600));
    assert_eq!(g.message_latency_us.unwrap().count, 600);
}

/// A server streaming many tiny messages, each in a DATA frame of its own (as grpcio sends
/// them), all arriving before loadlab reads any: h2's default budget for small frames
/// (about a hundred buffered) closed the connection with ENHANCE_YOUR_CALM, which
/// bench/vs-ghz.sh saw against grpcio as protocol_error.
#[test]
fn hundreds_of_tiny_data_frames_are_read_not_refused() {
    let frames = vec![loadlab_testkit::grpc_frame(b""); 600];
    let server =
        loadlab_testkit::GrpcServer::start(vec![loadlab_testkit::GrpcAnswer::ok_with_data(frames)]);
    let r = common::run_within(
        RunSpec {
            connections: Some(1),
            threads: Some(1),
            streams: 4,
            requests: Some(8),
            ..grpc(server.url(), method("Stream", "600"))
        },
        Duration::from_secs(30),
    );
    let m = &r.measured;
    assert_eq!(m.requests.failed, 0, "{:?} {:?}", m.errors, m.error_details);
    assert_eq!(r.grpc.unwrap().messages_received, 8 * 600);
}

#[test]
fn a_schedule_longer_than_the_timeout_is_refused() {
    let spec = GrpcSpec {
        messages: Some(100),
        message_rate: Some(10.0),
        ..method("Chat", "{}")
    };
    let err = RunSpec {
        timeout: Duration::from_secs(5),
        ..grpc("http://127.0.0.1:9".into(), spec)
    }
    .validate()
    .unwrap_err();
    assert_eq!(err.setting, "grpc_message_rate");
    assert!(
        err.message.contains("100 messages at this rate take 9.9s"),
        "{}",
        err.message
    );
}
