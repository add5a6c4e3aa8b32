//! The exact merge, against known answers: two parts with known latencies merge into the
//! distribution of all their values together (not an average of percentiles).

use loadlab_result::{encode_histogram, merge, new_histogram, MergeError, RunResult};

fn fixture() -> RunResult {
    let path = format!(
        "{}/../loadlab-report/tests/fixtures/ok.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

/// A part whose measured latencies are exactly `values_us`, one timeline interval per second.
fn part(values_us: std::ops::RangeInclusive<u64>, started_at: &str) -> RunResult {
    let mut r = fixture();
    let mut h = new_histogram();
    for v in values_us.clone() {
        h.record(v * 1_000).unwrap();
    }
    let n = h.len();
    r.started_at = started_at.to_string();
    r.measured.requests.issued = n;
    r.measured.requests.completed = n;
    r.measured.requests.failed = 0;
    r.measured.duration_s = 2.0;
    r.measured.requests.per_second = n as f64 / 2.0;
    r.measured.histograms.latency = encode_histogram(&h);
    r.measured.status_codes = [("200".to_string(), n)].into();
    r.measured.errors.clear();
    r.warmup = None;
    let first = r.timeline[0].clone();
    r.timeline = vec![first.clone(), first];
    for (i, iv) in r.timeline.iter_mut().enumerate() {
        iv.start_s = i as f64;
        iv.warmup = false;
        iv.completed = n / 2;
        iv.histogram = Some(encode_histogram(&h));
    }
    r
}

#[test]
fn merged_percentiles_are_those_of_all_values_together() {
    let a = part(1..=1_000, "2026-01-01T00:00:00Z");
    let b = part(1_001..=3_000, "2026-01-01T00:00:00.002Z");
    let m = merge(&[a.clone(), b.clone()]).unwrap();
    // The union of the values, recorded directly.
    let mut all = new_histogram();
    for v in 1..=3_000u64 {
        all.record(v * 1_000).unwrap();
    }
    let lat = m.measured.latency_us.as_ref().unwrap();
    assert_eq!(lat.count, 3_000);
    let us = |q: f64| all.value_at_quantile(q) as f64 / 1_000.0;
    assert_eq!(lat.p50, us(0.5));
    assert_eq!(lat.p99, us(0.99));
    // 1,500 µs, where averaging the parts' medians would say (500 + 2,000) / 2 = 1,250.
    assert!((lat.p50 - 1_500.0).abs() <= 1.0, "{lat:?}");
    assert_eq!(m.measured.requests.completed, 3_000);
    assert_eq!(m.measured.status_codes["200"], 3_000);
    // Side by side for 2 s: the merged rate is both parts' together.
    assert!((m.measured.requests.per_second - 1_500.0).abs() < 1e-9);
    // Timelines aligned by interval start, intervals added.
    assert_eq!(m.timeline.len(), 2);
    assert_eq!(
        m.timeline[0].completed,
        a.timeline[0].completed + b.timeline[0].completed
    );
    assert_eq!(m.parts.len(), 2);
    assert_eq!(m.parts[1].completed, 2_000);
    assert_eq!(
        m.parts[0].p50_us,
        a.measured.latency_us.as_ref().map(|l| l.p50)
    );
    // Merging merged results keeps every original part.
    let again = merge(&[m.clone(), part(1..=10, "2026-01-01T00:00:01Z")]).unwrap();
    assert_eq!(again.parts.len(), 3);
    assert_eq!(again.measured.requests.completed, 3_010);
}

#[test]
fn a_merge_refuses_what_it_cannot_merge_exactly() {
    assert_eq!(merge(&[]).unwrap_err(), MergeError::Empty);
    let a = part(1..=10, "2026-01-01T00:00:00Z");
    let mut b = a.clone();
    b.load.interval_s = 0.5;
    let err = merge(&[a.clone(), b]).unwrap_err();
    assert!(err.to_string().contains("--interval"), "{err}");
    let mut c = a.clone();
    c.measured.histograms.latency = "not base64!".into();
    let err = merge(&[a.clone(), c]).unwrap_err();
    assert!(err.to_string().contains("result 2"), "{err}");
    let mut d = a.clone();
    d.schema_version = 99;
    assert!(matches!(
        merge(&[a, d]).unwrap_err(),
        MergeError::Schema { part: 1, .. }
    ));
}

#[test]
fn repetitions_merge_as_runs_one_after_another() {
    let a = part(1..=1_000, "2026-01-01T00:00:00Z");
    let b = part(1_001..=3_000, "2026-01-01T00:01:00Z");
    let m = loadlab_result::merge_repetitions(&[a.clone(), b.clone()]).unwrap();
    // 3,000 requests over 2 s + 2 s: 750/s, not the 1,500/s of shards side by side.
    assert!((m.measured.requests.per_second - 750.0).abs() < 1e-9);
    assert!((m.measured.duration_s - 4.0).abs() < 1e-9);
    // The same exact distribution as shards.
    assert_eq!(m.measured.latency_us.as_ref().unwrap().count, 3_000);
    // The timeline is each interval's mean over the runs.
    assert_eq!(
        m.timeline[0].completed,
        (a.timeline[0].completed + b.timeline[0].completed) / 2
    );
    // The load model stays one run's.
    assert_eq!(m.load.connections, a.load.connections);
    // A verdict both runs share is said once, counted.
    let mut c = a.clone();
    c.verdicts = vec!["the server was CPU-bound on its quota: it used 99%".into()];
    let mut d = b.clone();
    d.verdicts = vec!["the server was CPU-bound on its quota: it used 98%".into()];
    let m = loadlab_result::merge_repetitions(&[c, d]).unwrap();
    assert_eq!(m.verdicts.len(), 1, "{:?}", m.verdicts);
    assert!(m.verdicts[0].contains("in 2 of 2 runs"), "{:?}", m.verdicts);
}

/// An open loop's rate counts its drain: shards that ran together end with the latest one's
/// drain, repetitions add theirs up, and the merged rate is the completions over that span.
#[test]
fn drains_merge_into_the_span_the_rate_is_over() {
    let drained = |values, started_at, drain_s: f64| {
        let mut p = part(values, started_at);
        let m = &mut p.measured;
        m.drain_s = Some(drain_s);
        m.requests.per_second = m.requests.completed as f64 / (2.0 + drain_s);
        m.bytes.sent_per_s = m.bytes.sent as f64 / (2.0 + drain_s);
        p
    };
    // 1,000 and 2,000 requests over 2 s, the second part answering its last 1.5 s late.
    let a = drained(1..=1_000, "2026-01-01T00:00:00Z", 0.5);
    let b = drained(1_001..=3_000, "2026-01-01T00:00:00.002Z", 1.5);
    let m = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(m.measured.duration_s, 2.0);
    assert_eq!(m.measured.drain_s, Some(1.5));
    assert!((m.measured.requests.per_second - 3_000.0 / 3.5).abs() < 1e-9);
    let sent = a.measured.bytes.sent + b.measured.bytes.sent;
    assert!((m.measured.bytes.sent_per_s - sent as f64 / 3.5).abs() < 1e-9);
    // One after another: 2 + 0.5 and 2 + 1.5 s.
    let r = loadlab_result::merge_repetitions(&[a.clone(), b]).unwrap();
    assert_eq!(
        (r.measured.duration_s, r.measured.drain_s),
        (4.0, Some(2.0))
    );
    assert!((r.measured.requests.per_second - 3_000.0 / 6.0).abs() < 1e-9);
    // A part without a drain (a closed loop, an older result) counts its planned time.
    let m = merge(&[a, part(1..=10, "2026-01-01T00:00:01Z")]).unwrap();
    assert_eq!(m.measured.drain_s, Some(0.5));
    assert!((m.measured.requests.per_second - 1_010.0 / 2.5).abs() < 1e-9);
    let closed = merge(&[part(1..=10, "2026-01-01T00:00:01Z")]).unwrap();
    assert_eq!(closed.measured.drain_s, None);
}

/// A scenario section of two steps: `login` took `values_us`, `page` is a page whose
/// requests took the same; `failed` checks failed on `page`.
fn scenario_part(
    values_us: std::ops::RangeInclusive<u64>,
    started_at: &str,
    failed: u64,
) -> RunResult {
    use loadlab_result::scenario::{CheckSummary, ScenarioSummary, StepBytes, StepSummary};
    let mut r = part(values_us.clone(), started_at);
    let mut h = new_histogram();
    for v in values_us {
        h.record(v * 1_000).unwrap();
    }
    let n = h.len();
    let step = |name: &str, page: bool| StepSummary {
        name: name.into(),
        request: format!("GET /{name}"),
        issued: n + failed,
        completed: n,
        failed,
        per_second: n as f64 / 2.0,
        latency_us: loadlab_result::LatencySummary::from_histogram(&h),
        histogram: encode_histogram(&h),
        request_latency_us: page
            .then(|| loadlab_result::LatencySummary::from_histogram(&h))
            .flatten(),
        request_histogram: page.then(|| encode_histogram(&h)),
        status_codes: [("200".to_string(), n + failed)].into(),
        errors: if failed > 0 {
            [("check_failed".to_string(), failed)].into()
        } else {
            Default::default()
        },
        checks: vec![CheckSummary {
            check: "status 200".into(),
            failed,
            first_failure: (failed > 0).then(|| format!("failed in {started_at}")),
        }],
        bytes: StepBytes {
            sent: 10 * n,
            received: 100 * n,
            decoded: 300 * n,
        },
        content_encodings: [("gzip".to_string(), n)].into(),
        messages: (!page).then_some(loadlab_result::scenario::StepMessages {
            sent: 3 * n,
            received: 2 * n,
        }),
    };
    r.scenario = Some(ScenarioSummary {
        name: "journey".into(),
        description: None,
        mode: "sequence".into(),
        virtual_users: Some(4),
        offered_iterations_per_s: None,
        iteration_slots: None,
        pace_s: None,
        offered_per_s: None,
        new_connection_share: 0.0,
        iterations: n,
        iterations_failed: failed,
        iterations_per_s: n as f64 / 2.0,
        iteration_us: loadlab_result::LatencySummary::from_histogram(&h),
        iteration_histogram: Some(encode_histogram(&h)),
        steps: vec![step("login", false), step("page", true)],
    });
    r
}

#[test]
fn scenario_steps_merge_as_all_their_values_together() {
    let a = scenario_part(1..=1_000, "2026-01-01T00:00:00Z", 0);
    let b = scenario_part(1_001..=3_000, "2026-01-01T00:00:10Z", 5);
    let mut all = new_histogram();
    for v in 1..=3_000u64 {
        all.record(v * 1_000).unwrap();
    }
    let us = |q: f64| all.value_at_quantile(q) as f64 / 1_000.0;
    let m = loadlab_result::merge_repetitions(&[a.clone(), b.clone()]).unwrap();
    let sc = m.scenario.as_ref().expect("merged scenario");
    assert_eq!(sc.iterations, 3_000);
    assert_eq!(sc.iterations_failed, 5);
    // One after another: 3,000 iterations over 2 s + 2 s.
    assert!(
        (sc.iterations_per_s - 750.0).abs() < 1e-9,
        "{}",
        sc.iterations_per_s
    );
    assert_eq!(sc.virtual_users, Some(4));
    assert_eq!(sc.iteration_us.as_ref().unwrap().p99, us(0.99));
    for step in &sc.steps {
        let lat = step.latency_us.as_ref().unwrap();
        assert_eq!(
            (lat.count, lat.p50, lat.p99),
            (3_000, us(0.5), us(0.99)),
            "{}",
            step.name
        );
        assert_eq!(step.completed, 3_000);
        assert_eq!(step.failed, 5);
        assert_eq!(step.status_codes["200"], 3_005);
        assert_eq!(step.errors["check_failed"], 5);
        assert_eq!(step.content_encodings["gzip"], 3_000);
        assert_eq!(
            (step.bytes.received, step.bytes.decoded),
            (300_000, 900_000)
        );
        assert_eq!(step.checks[0].failed, 5);
        assert_eq!(
            step.checks[0].first_failure.as_deref(),
            Some("failed in 2026-01-01T00:00:10Z")
        );
    }
    let page = &m.scenario.as_ref().unwrap().steps[1];
    assert_eq!(page.request_latency_us.as_ref().unwrap().p50, us(0.5));
    // A streaming gRPC step's messages add up; a step without them has none.
    let stream = m.scenario.as_ref().unwrap().steps[0].messages.unwrap();
    assert_eq!((stream.sent, stream.received), (9_000, 6_000));
    assert_eq!(page.messages, None);
    assert_eq!(
        m.scenario.as_ref().unwrap().steps[0].request_latency_us,
        None
    );
    // Side by side (shards), the users add up.
    let shards = merge(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(shards.scenario.as_ref().unwrap().virtual_users, Some(8));
    // Another scenario, or none, is refused by name.
    let mut other = b.clone();
    other.scenario.as_mut().unwrap().name = "checkout".into();
    let e = merge(&[a.clone(), other]).unwrap_err();
    assert!(matches!(e, MergeError::Scenario { part: 1, .. }), "{e}");
    assert!(e.to_string().contains("checkout"), "{e}");
    let plain = part(1..=10, "2026-01-01T00:00:20Z");
    assert!(matches!(
        merge(&[a, plain]).unwrap_err(),
        MergeError::Scenario { part: 1, .. }
    ));
}

/// A fleet's generators' intervals merged into one: their failures by class add up (a
/// generator too old to keep them adds its count only).
#[test]
fn concurrent_intervals_add_their_failures_by_class() {
    let r = part(1..=10, "2026-11-22T00:00:00Z");
    let with = |classes: &[(&str, u64)]| {
        let mut iv = r.timeline[0].clone();
        iv.errors = classes.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        iv.failed = classes.iter().map(|(_, n)| n).sum();
        iv
    };
    let a = with(&[("connect_refused", 2), ("request_timeout", 1)]);
    let b = with(&[("request_timeout", 4)]);
    let older = with(&[]);
    let merged = loadlab_result::merge_concurrent_intervals(&[&a, &b, &older])
        .unwrap()
        .unwrap();
    let expected: std::collections::BTreeMap<String, u64> =
        [("connect_refused".into(), 2), ("request_timeout".into(), 5)].into();
    assert_eq!((merged.errors, merged.failed), (expected, 7));
}

/// A gRPC run's shards: each interval's stream messages each way are the exact sum of the
/// shards' (a shard with none there adds nothing; an interval no shard counted any in stays
/// without, as a document without gRPC reads), live as at the end; repetitions take the mean
/// as their other counts do.
#[test]
fn shards_grpc_messages_per_interval_add_up_exactly() {
    use loadlab_result::scenario::StepMessages;
    let m = |sent, received| Some(StepMessages { sent, received });
    let shard = |first: Option<StepMessages>| {
        let mut r = part(1..=10, "2026-11-22T00:00:00Z");
        r.timeline[0].messages = first;
        r
    };
    let big = u64::from(u32::MAX) + 3;
    let parts = [shard(m(1_000_001, 999_999)), shard(None), shard(m(big, 7))];
    let merged = loadlab_result::merge(&parts).unwrap();
    assert_eq!(merged.timeline[0].messages, m(big + 1_000_001, 1_000_006));
    assert_eq!(merged.timeline[1].messages, None);
    let json = serde_json::to_value(&merged.timeline[1]).unwrap();
    assert!(json.get("messages").is_none(), "{json}");

    let live = [
        &parts[0].timeline[0],
        &parts[1].timeline[0],
        &parts[2].timeline[0],
    ];
    let live = loadlab_result::merge_concurrent_intervals(&live)
        .unwrap()
        .unwrap();
    assert_eq!(live.messages, merged.timeline[0].messages);

    let twice = loadlab_result::merge_repetitions(&[parts[0].clone(), parts[0].clone()]);
    assert_eq!(twice.unwrap().timeline[0].messages, m(1_000_001, 999_999));
}

/// A fleet's generators' health in one interval, merged: CPU seconds and late requests
/// summed, the busiest thread and the worst lag the most of any (a punctual generator does
/// not dilute a late one); an older agent's interval, without health, adds its counts only,
/// and intervals none of whose parts measured it stay without; repetitions take the mean of
/// the sums and keep the worst.
#[test]
fn generators_health_per_interval_merges_by_its_rules() {
    use loadlab_result::IntervalHealth;
    let health = |cpu_s, busiest_thread, lag_max_us: Option<f64>, late| {
        Some(IntervalHealth {
            cpu_s,
            busiest_thread,
            lag_max_us,
            late,
        })
    };
    let shard = |h: Option<IntervalHealth>| {
        let mut r = part(1..=10, "2026-11-22T00:00:00Z");
        r.timeline[0].generator = h;
        r
    };
    let parts = [
        shard(health(0.375, 0.75, Some(200.0), 0)),
        shard(health(0.25, 0.5, Some(5_000.0), 12)),
        shard(None),
    ];
    let expected = health(0.625, 0.75, Some(5_000.0), 12);
    let live: Vec<_> = parts.iter().map(|p| &p.timeline[0]).collect();
    let live = loadlab_result::merge_concurrent_intervals(&live)
        .unwrap()
        .unwrap();
    assert_eq!(live.generator, expected);
    assert_eq!(live.completed, 3 * parts[0].timeline[0].completed);
    let merged = loadlab_result::merge(&parts).unwrap();
    assert_eq!(merged.timeline[0].generator, expected);
    assert_eq!(merged.timeline[1].generator, None);
    // A closed loop's (no lag) beside an open loop's keeps the lag it has.
    let closed = health(0.5, 0.25, None, 0).map(|h| IntervalHealth {
        lag_max_us: None,
        ..h
    });
    assert_eq!(
        IntervalHealth::merge(closed, parts[1].timeline[0].generator),
        health(0.75, 0.5, Some(5_000.0), 12)
    );

    let twice = loadlab_result::merge_repetitions(&[parts[1].clone(), parts[0].clone()]);
    assert_eq!(
        twice.unwrap().timeline[0].generator,
        health(0.3125, 0.75, Some(5_000.0), 6)
    );

    // The document: absent when not measured (and read so from an older agent's), `late`
    // left out when none was.
    let json = serde_json::to_value(&merged.timeline[1]).unwrap();
    assert!(json.get("generator").is_none(), "{json}");
    let json = serde_json::to_value(&parts[0].timeline[0]).unwrap();
    assert_eq!(
        json["generator"],
        serde_json::json!({"cpu_s": 0.375, "busiest_thread": 0.75, "lag_max_us": 200.0})
    );
    let older: loadlab_result::IntervalSummary =
        serde_json::from_value(serde_json::to_value(&merged.timeline[1]).unwrap()).unwrap();
    assert_eq!(older.generator, None);
}
