//! A run longer than an hour's intervals, as the path watch keeps it: each interval's
//! windows folded and spooled as the run goes, then folded again by the merged timeline's
//! spans as they are read back. The path's figures per merged interval must be what the raw
//! windows give over the same spans, and the windows held at the end as few as an hour's.

use super::{fold_slots, regroup, spool::Spool};
use loadlab_result::path::{intervals, spans, PathWindow};
use loadlab_result::IntervalSummary;

/// Two windows an interval of 1 s, figures varying, some absent (no connection).
fn raw(intervals: u32) -> Vec<PathWindow> {
    (1..=2 * intervals)
        .map(|i| {
            let some = i % 7 != 0;
            PathWindow {
                t_s: f64::from(i) * 0.5 - 1e-4,
                dt_s: 0.5,
                sockets: if some { i % 4 + 1 } else { 0 },
                received_bytes: 1_000 * u64::from(i % 97),
                acked_bytes: u64::from(i % 13),
                rtt_us: some.then(|| 100.0 + f64::from(i * 13 % 17)),
                min_rtt_us: some.then(|| 50.0 + f64::from(i % 5)),
                rcv_rtt_us: (i % 3 != 0).then(|| 200.0 + f64::from(i % 11)),
                busy_us: some.then(|| 400_000 + u64::from(i % 9) * 100),
                rwnd_limited_us: some.then(|| u64::from(i % 10) * 10),
                sndbuf_limited_us: some.then_some(0),
                notsent_bytes: some.then(|| u64::from(i * 31 % 11)),
                send_queue_bytes: u64::from(i * 7 % 13),
                delivery_rate: some.then(|| 1_000_000 + u64::from(i % 50) * 1_000),
                folded: None,
            }
        })
        .collect()
}

fn timeline(intervals: u32) -> Vec<IntervalSummary> {
    (0..intervals)
        .map(|k| {
            serde_json::from_value(serde_json::json!({
                "start_s": f64::from(k), "duration_s": 1.0, "warmup": k < 5,
                "offered_per_s": null, "connections": null, "achieved_per_s": 0.0,
                "completed": 0, "failed": 0, "p50_us": null, "p90_us": null, "p99_us": null,
                "max_us": null, "bytes_sent": 0, "bytes_received": 0, "steal": null,
                "histogram": null,
            }))
            .unwrap()
        })
        .collect()
}

#[test]
fn a_run_past_an_hour_has_its_path_merged_exactly_as_its_timeline() {
    // 3,700 intervals: past 3,600, the timeline shows them two at a time.
    let n = 3_700;
    let group = u64::from(n).div_ceil(3_600);
    assert_eq!(group, 2);
    let raw = raw(n);
    // As the watch does: each finished interval folded, then spooled.
    let (mut spool, mut tail) = (Spool::new(), Vec::new());
    for w in &raw {
        tail.push(*w);
        let folded = fold_slots(&mut tail, 0, 1.0);
        tail.drain(..folded).for_each(|w| spool.push(&w));
    }
    assert_eq!(
        spool.len(),
        n as usize - 1,
        "all but the last interval spooled"
    );
    assert!(
        tail.len() <= 2,
        "only the current interval's windows in memory"
    );
    let kept = regroup(spool, tail, Some(group as f64));
    // One window per merged interval (the last as it came): what an hour's run keeps.
    assert!(kept.len() <= 1_850 + 2, "{}", kept.len());
    let spans = spans(&timeline(n), group);
    assert_eq!(spans.len(), 1_850);
    assert_eq!((spans[2], spans[3]), ((4.0, 2.0, false), (6.0, 2.0, false)));
    assert!(
        spans[1].2 && !spans[2].2,
        "warm-up while the whole group is"
    );
    let (got, want) = (intervals(&kept, &spans), intervals(&raw, &spans));
    assert_eq!(got.len(), want.len());
    let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * b.abs().max(1.0),
        (a, b) => a == b,
    };
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(
            (g.start_s, g.duration_s, g.warmup),
            (w.start_s, w.duration_s, w.warmup)
        );
        assert!(close(g.rtt_us, w.rtt_us), "{g:?}\n{w:?}");
        assert!(close(g.rcv_rtt_us, w.rcv_rtt_us), "{g:?}\n{w:?}");
        assert!(close(g.busy_share, w.busy_share), "{g:?}\n{w:?}");
        assert!(close(g.network_limited_share, w.network_limited_share));
        let (gd, wd) = (
            g.delivery_rate_per_s.unwrap(),
            w.delivery_rate_per_s.unwrap(),
        );
        assert!((gd - wd).abs() <= 1.0, "{gd} {wd}");
        assert_eq!(
            (g.sockets, g.min_rtt_us, g.notsent_bytes, g.send_queue_bytes),
            (w.sockets, w.min_rtt_us, w.notsent_bytes, w.send_queue_bytes)
        );
        assert!((g.received_per_s - w.received_per_s).abs() < 1e-6);
        assert!((g.acked_per_s - w.acked_per_s).abs() < 1e-6);
    }
}
