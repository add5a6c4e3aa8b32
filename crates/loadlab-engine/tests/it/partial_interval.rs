//! A run that ends inside an interval (1.5 s at 1 s intervals) reports that last interval as
//! partial, with its real length and its rates per second of it: the rate it held, not half
//! of it (issue 27, item 4).

use loadlab_engine::RunSpec;
use loadlab_testkit::{response, Behavior, TestServer};
use std::time::Duration;

use crate::common;

#[test]
fn the_last_interval_is_partial_and_scaled_by_its_real_length() {
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let r = common::run_within(
        RunSpec {
            url: server.url("/"),
            rate: Some(200.0),
            duration: Some(Duration::from_millis(1_500)),
            threads: Some(1),
            ..RunSpec::default()
        },
        Duration::from_secs(30),
    );
    let t = &r.timeline;
    assert!(t.len() >= 2, "{t:?}");
    let (first, last) = (&t[0], &t[1]);
    assert!(!first.partial && first.duration_s == 1.0, "{first:?}");
    assert!(last.partial, "{last:?}");
    assert!(
        (0.45..=0.65).contains(&last.duration_s),
        "the run ended 0.5 s into it: {}",
        last.duration_s
    );
    // Offered and achieved are per second of its real length: about 200, not about 100.
    let offered = last.offered_per_s.unwrap();
    assert!((150.0..=250.0).contains(&offered), "offered {offered}/s");
    assert!(
        (150.0..=250.0).contains(&last.achieved_per_s),
        "achieved {}/s over {} s ({} requests)",
        last.achieved_per_s,
        last.duration_s,
        last.completed
    );
    // Nothing after it: a 1.5 s run has two intervals (a third would hold only a drain).
    assert!(
        t[2..].iter().all(|i| i.partial),
        "any later interval is partial too"
    );
}
