//! Merging shards: the merged histogram is the histogram of all the shards' latencies
//! recorded in one (property-tested on generated latencies and splits), and a merge refuses
//! what is not one run, names what is missing, and measures how together the shards started.

use loadlab_result::{
    decode_histogram, encode_histogram, merge_shards, new_histogram, RunResult, ShardInfo,
    ShardMergeError,
};
use proptest::prelude::*;

fn fixture() -> RunResult {
    let path = format!(
        "{}/../loadlab-report/tests/fixtures/open.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

/// Shard `index` of `count` whose measured latencies (ns) are exactly `values`, started
/// `late_s` after the others, one timeline interval.
fn shard(values: &[u64], index: u32, count: u32, late_s: f64) -> RunResult {
    let mut r = fixture();
    let mut h = new_histogram();
    for v in values {
        h.record(*v).unwrap();
    }
    let n = h.len();
    r.measured.requests.issued = n;
    r.measured.requests.completed = n;
    r.measured.requests.failed = 0;
    r.measured.requests.not_sent = 0;
    r.measured.histograms.latency = encode_histogram(&h);
    r.measured.latency_us = loadlab_result::LatencySummary::from_histogram(&h);
    r.measured.status_codes = [("200".to_string(), n)].into();
    r.measured.errors.clear();
    r.warmup = None;
    r.interrupted = false;
    r.verdicts = vec!["the target could not keep up: x".into()];
    let mut iv = r.timeline[0].clone();
    iv.start_s = 0.0;
    iv.warmup = false;
    iv.completed = n;
    iv.histogram = (!h.is_empty()).then(|| encode_histogram(&h));
    r.timeline = vec![iv];
    r.shard = Some(ShardInfo {
        index,
        count,
        plan_id: "00000000feedf00d".into(),
        whole_plan: "open loop, uniform arrivals: 3s at 15000 requests/s".into(),
        start_at: Some("2026-05-01T12:00:00.000000Z".into()),
        start_at_unix_s: Some(1_777_636_800.0),
        started_wall: "2026-05-01T12:00:00.000100Z".into(),
        started_unix_s: 1_777_636_800.000_1 + late_s,
        clock_synced: Some(true),
        clock_error_s: Some(0.0005),
    });
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_merged_histogram_is_all_latencies_recorded_in_one(
        values in prop::collection::vec(1_000u64..=30_000_000_000, 1..2_000),
        count in 1u32..=6,
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 5),
    ) {
        // Split the latencies at arbitrary points into `count` shards (some may be empty).
        let mut bounds: Vec<usize> = cuts.iter().take(count as usize - 1).map(|c| c.index(values.len() + 1)).collect();
        bounds.sort();
        bounds.insert(0, 0);
        bounds.push(values.len());
        let parts: Vec<RunResult> = (0..count as usize)
            .map(|i| shard(&values[bounds[i]..bounds[i + 1]], i as u32 + 1, count, 0.0))
            .collect();
        let merged = merge_shards(&parts).unwrap();
        let mut all = new_histogram();
        for v in &values {
            all.record(*v).unwrap();
        }
        let got = decode_histogram(&merged.measured.histograms.latency).unwrap();
        prop_assert_eq!(got.len(), all.len());
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            prop_assert_eq!(got.value_at_quantile(q), all.value_at_quantile(q));
        }
        prop_assert!(got == all, "the merged histogram differs from the one recorded in one");
        let lat = merged.measured.latency_us.unwrap();
        prop_assert_eq!(lat.p99, all.value_at_quantile(0.99) as f64 / 1_000.0);
        prop_assert_eq!(merged.measured.requests.completed, values.len() as u64);
        let tl = decode_histogram(merged.timeline[0].histogram.as_deref().unwrap()).unwrap();
        prop_assert!(tl == all);
    }
}

#[test]
fn a_missing_shard_is_named_and_the_rest_merged() {
    let parts = [
        shard(&[1_000_000; 10], 1, 4, 0.0),
        shard(&[2_000_000; 10], 3, 4, 0.002),
        shard(&[3_000_000; 10], 4, 4, 0.004),
    ];
    let m = merge_shards(&parts).unwrap();
    let s = m.shards.as_ref().unwrap();
    assert_eq!(s.reported, [1, 3, 4]);
    assert_eq!(s.missing, [2]);
    assert!(
        (s.start_spread_s - 0.004).abs() < 1e-6,
        "{}",
        s.start_spread_s
    );
    assert_eq!(s.max_clock_error_s, Some(0.0005));
    assert!(
        m.warnings[0].starts_with("3 of 4 shards reported: shard 2 missing"),
        "{:?}",
        m.warnings
    );
    assert_eq!(m.measured.requests.completed, 30);
    assert_eq!(m.parts.len(), 3);
    assert_eq!(m.parts[1].shard.as_ref().unwrap().index, 3);
    // Each shard's verdicts stay its own.
    assert!(m
        .verdicts
        .iter()
        .any(|v| v.starts_with("shard 3/4: the target")));
    assert_eq!(
        m.load.plan,
        "open loop, uniform arrivals: 3s at 15000 requests/s"
    );
    assert!(m.shard.is_none());
}

/// A count-bound run's shards each carry their share of `-n`: the merge's `load.requests`
/// is the whole (it showed the first shard's share), and of the parts merged when one is
/// missing; a time-bound run has none.
#[test]
fn the_merged_request_count_is_the_shares_added() {
    let with_share = |index, share| {
        let mut r = shard(&[1_000_000; 10], index, 3, 0.0);
        r.load.requests = Some(share);
        r
    };
    let all = [with_share(1, 334), with_share(2, 333), with_share(3, 333)];
    assert_eq!(merge_shards(&all).unwrap().load.requests, Some(1_000));
    let two = [with_share(1, 334), with_share(3, 333)];
    assert_eq!(merge_shards(&two).unwrap().load.requests, Some(667));
    let timed = [shard(&[1], 1, 2, 0.0), shard(&[1], 2, 2, 0.0)];
    assert_eq!(timed[0].load.requests, None);
    assert_eq!(merge_shards(&timed).unwrap().load.requests, None);
}

#[test]
fn shards_of_different_runs_are_refused() {
    let a = shard(&[1_000], 1, 3, 0.0);
    let other_count = shard(&[1_000], 2, 4, 0.0);
    let err = merge_shards(&[a.clone(), other_count]).unwrap_err();
    assert!(
        matches!(err, ShardMergeError::Count { part: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("shard 2/4"), "{err}");
    let mut other_plan = shard(&[1_000], 2, 3, 0.0);
    other_plan.shard.as_mut().unwrap().plan_id = "1".into();
    let err = merge_shards(&[a.clone(), other_plan])
        .unwrap_err()
        .to_string();
    assert!(err.contains("its plan"), "{err}");
    let mut other_start = shard(&[1_000], 2, 3, 0.0);
    other_start.shard.as_mut().unwrap().start_at = None;
    let err = merge_shards(&[a.clone(), other_start])
        .unwrap_err()
        .to_string();
    assert!(err.contains("start time"), "{err}");
    let err = merge_shards(&[a.clone(), a.clone()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("shard 1 was given twice"), "{err}");
    let mut plain = a.clone();
    plain.shard = None;
    let err = merge_shards(&[a, plain]).unwrap_err().to_string();
    assert!(err.contains("not a shard"), "{err}");
}

#[test]
fn a_late_start_is_reported_and_aligned_by_interval() {
    let parts = [
        shard(&[1_000_000], 1, 2, 0.0),
        shard(&[1_000_000], 2, 2, 1.2),
    ];
    let m = merge_shards(&parts).unwrap();
    assert!(
        m.warnings
            .iter()
            .any(|w| w.contains("started 1200.0 ms apart (bound 10 ms)")),
        "{:?}",
        m.warnings
    );
    // The late shard's first interval is the earliest's second.
    assert_eq!(m.timeline.len(), 2);
    assert_eq!(m.timeline[1].completed, 1);
}

/// Shards through an agent: shard 1 alone watched the server, and the merge keeps its report;
/// servers watched by several shards each (no agent) are not one server, and none is kept.
#[test]
fn the_one_server_watched_through_an_agent_survives_the_merge() {
    let server: loadlab_result::ServerReport = serde_json::from_value(serde_json::json!({
        "source": "port",
        "description": "pid 42, listening on port 8080 on srv",
        "sample_interval_s": 0.1,
        "samples": [],
        "agent": {
            "url": "https://169.254.0.1:7070",
            "hostname": "srv",
            "protocol": 1,
            "agent_version": "0.1.0",
            "clock_offset_s": 0.002,
            "clock_uncertainty_s": 0.00005,
            "clock_estimates": []
        }
    }))
    .unwrap();
    let mut first = shard(&[1_000, 2_000], 0, 2, 0.0);
    first.server = Some(server.clone());
    let second = shard(&[3_000], 1, 2, 0.0);
    let merged = merge_shards(&[first.clone(), second.clone()]).unwrap();
    assert_eq!(merged.server.as_ref(), Some(&server));
    let mut local = server.clone();
    local.agent = None;
    let (mut a, mut b) = (first, second);
    a.server = Some(local.clone());
    b.server = Some(local);
    let merged = merge_shards(&[a, b]).unwrap();
    assert!(merged.server.is_none());
}
