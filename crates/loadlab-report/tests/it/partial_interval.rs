//! A run's last interval, cut short by the run's end, is shown as partial and never as a
//! collapse (issue 27, item 4): the text timeline prints its count and real length instead of
//! a rate near 0, and the HTML charts leave it out when it is under half an interval.

use loadlab_report::html::data::chart_data;
use loadlab_report::{render, TextExporter};
use loadlab_result::RunResult;

fn fixture(name: &str) -> RunResult {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

/// The fixture with a last interval of `secs` holding `completed` requests, as the engine
/// writes it now (rates per second of its real length, marked partial).
fn with_partial_tail(secs: f64, completed: u64) -> RunResult {
    let mut r = fixture("ok.json");
    assert_eq!(r.load.interval_s, 1.0, "the fixture's intervals are 1 s");
    let mut tail = r.timeline.last().expect("a timeline").clone();
    tail.start_s += tail.duration_s;
    tail.duration_s = secs;
    tail.partial = true;
    tail.warmup = false;
    tail.warmup = false;
    tail.completed = completed;
    tail.failed = 0;
    tail.achieved_per_s = completed as f64 / secs;
    r.timeline.push(tail);
    r
}

fn timeline_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with("Timeline"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn a_short_last_interval_shows_its_count_not_a_collapse() {
    let r = with_partial_tail(0.05, 7);
    let text = render(&TextExporter, &r);
    let rows = timeline_rows(&text);
    let last = rows.last().expect("timeline rows");
    assert!(last.contains("partial: 7 in 50 ms"), "{last}");
    // "at", then (a closed loop has no level column) the achieved rate: none.
    let achieved = last.split_whitespace().nth(1);
    assert_eq!(achieved, Some("-"), "no rate: {last}");
    // The other rows are unmarked.
    assert!(rows[..rows.len() - 1]
        .iter()
        .all(|l| !l.contains("partial")));

    let charts = chart_data(&[("run", &r)]);
    let t = &charts.runs[0].timeline;
    assert_eq!(
        t.t_s.len(),
        r.timeline.len() - 1,
        "the 50 ms tail is left out of the charts"
    );
}

#[test]
fn a_long_last_interval_is_scaled_by_its_real_length() {
    let r = with_partial_tail(0.5, 3_000);
    let text = render(&TextExporter, &r);
    let rows = timeline_rows(&text);
    let last = rows.last().expect("timeline rows");
    assert!(last.contains(" 6000 "), "3,000 in 0.5 s is 6,000/s: {last}");
    assert!(last.contains("partial: 3,000 in 500 ms"), "{last}");
    let charts = chart_data(&[("run", &r)]);
    let t = &charts.runs[0].timeline;
    assert_eq!(t.t_s.len(), r.timeline.len());
    assert_eq!(t.achieved_per_s.last(), Some(&6000.0));
}
