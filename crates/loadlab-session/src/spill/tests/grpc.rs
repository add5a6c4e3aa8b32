//! A killed gRPC run's spill file: its intervals' stream messages are what its recovered
//! `grpc` section counts.

use super::{assert_schema_valid, header, interval, recover, temp_path, SpillWriter};
use loadlab_result::scenario::StepMessages;
use std::time::Instant;

/// A gRPC run killed mid-run: its intervals keep their stream messages, and the recovered
/// `grpc` section's messages each way are their exact sum (the header's were 0).
#[test]
fn a_recovered_grpc_run_has_its_intervals_messages() {
    let path = temp_path("grpc");
    let t0 = Instant::now();
    let mut head = header();
    head.measured.drain_s = Some(0.0);
    head.grpc = Some(
        serde_json::from_value(serde_json::json!({
            "method": "loadlab.upstream.v1.Upstream/Chat", "kind": "bidi_streaming",
            "messages_per_call": 3, "pace": "ping_pong",
            "messages_sent": 0, "messages_received": 0, "capped_calls": 0,
        }))
        .expect("a grpc section"),
    );
    let mut w = SpillWriter::create(&path, &head, t0).expect("created");
    for i in 0..3u64 {
        let mut iv = interval(i);
        iv.messages = (i != 1).then_some(StepMessages {
            sent: 150 + i,
            received: u64::from(u32::MAX) + i,
        });
        w.append(&iv, t0).expect("appended");
    }
    w.finish(t0).expect("finished");
    let result = recover(&path).expect("recovered").result;
    let _ = std::fs::remove_file(&path);
    assert_schema_valid(&result);
    let grpc = result.grpc.as_ref().expect("the header's grpc section");
    let max = u64::from(u32::MAX);
    assert_eq!(
        (grpc.messages_sent, grpc.messages_received),
        (302, 2 * max + 2)
    );
    let kept: Vec<_> = result.timeline.iter().map(|i| i.messages).collect();
    assert_eq!(kept[1], None);
    assert_eq!(
        kept[2],
        Some(StepMessages {
            sent: 152,
            received: max + 2
        })
    );
}
