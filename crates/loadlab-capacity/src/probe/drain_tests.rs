//! A probe's achieved rate against an open loop's drain (`drain_s`): a backlog answered after
//! the load's end counts over the time it took, one response time after a kept-up load does
//! not count against it.

use super::Measure;
use loadlab_result::RunResult;

/// A saved open-loop run over 3 s, with `completed` requests, a median response time of
/// `p50_us`, and a drain of `drain_s`.
fn open_loop(completed: u64, p50_us: f64, drain_s: Option<f64>) -> RunResult {
    let path = format!(
        "{}/../loadlab-report/tests/fixtures/open.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut r: RunResult = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let m = &mut r.measured;
    m.requests.completed = completed;
    m.requests.issued = completed;
    m.latency_us.as_mut().unwrap().p50 = p50_us;
    m.drain_s = drain_s;
    r
}

#[test]
fn a_backlog_answered_after_the_end_is_not_counted_as_kept_up() {
    // 200/s offered for 3 s to a target that answers 100/s: its 300-request backlog takes
    // 3 s more, the median answer 1.5 s. Over the planned 3 s alone it read 200/s.
    let m = Measure::of(&open_loop(600, 1_500_000.0, Some(3.0)), &[], false);
    assert!(
        (m.achieved_per_s - 600.0 / (3.0 + 3.0 - 1.5)).abs() < 1e-9,
        "{m:?}"
    );
    // A target that kept up: its drain is its last answer's response time (200 ms, the
    // median 190 ms), which costs the rate nothing beyond the 10 ms between them.
    let m = Measure::of(&open_loop(600, 190_000.0, Some(0.2)), &[], false);
    assert!((m.achieved_per_s - 600.0 / 3.01).abs() < 1e-9, "{m:?}");
    // A closed loop or an older result: the planned time, as before.
    let m = Measure::of(&open_loop(600, 190_000.0, None), &[], false);
    assert!((m.achieved_per_s - 200.0).abs() < 1e-9, "{m:?}");
}
