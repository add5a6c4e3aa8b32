//! The human summary, snapshot-tested on results saved from real runs (which also checks that
//! saved results still load).

use loadlab_report::{render, TextExporter};
use loadlab_result::RunResult;

fn fixture(name: &str) -> RunResult {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("fixture loads")
}

#[test]
fn summary_of_a_healthy_run() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("ok.json")));
}

/// Requests sent again (HTTP/2 GOAWAY, REFUSED_STREAM) get a line of their own, and only
/// when there were some.
#[test]
fn the_summary_names_requests_sent_again_when_there_were_some() {
    let mut result = fixture("ok.json");
    assert!(!render(&TextExporter, &result).contains("Retried"));
    result.measured.retried = 112;
    let text = render(&TextExporter, &result);
    let line = text
        .lines()
        .find(|l| l.contains("Retried"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("112"), "{line}");
    assert!(line.contains("not processed"), "{line}");
}

/// An open loop whose answers came in long after its load ended says over what time its
/// rate is; one whose drain was one response time says nothing of it.
#[test]
fn the_throughput_names_a_long_drain() {
    let mut result = fixture("open.json");
    let throughput = |r: &RunResult| {
        let text = render(&TextExporter, r);
        let line = text.lines().find(|l| l.starts_with("Throughput"));
        line.unwrap_or_else(|| panic!("{text}")).to_string()
    };
    result.measured.drain_s = Some(0.002);
    assert!(
        throughput(&result).ends_with("over 3.00s"),
        "{}",
        throughput(&result)
    );
    result.measured.drain_s = Some(2.5);
    result.measured.requests.per_second = 100.0;
    assert!(
        throughput(&result).ends_with(
            "100.0 requests/s over 3.00s plus the last answers' 2.50s after the load's end"
        ),
        "{}",
        throughput(&result)
    );
}

/// Issue 51, item 5: a result holding a server's words raw in a failure's detail (saved
/// before the engine escaped them, or edited) shows their control characters escaped, in
/// `run`'s summary and in `runs show` alike, and one already escaped is shown as it is.
#[test]
fn a_detail_with_control_characters_is_shown_escaped() {
    let mut result = fixture("refused.json");
    let key = result.measured.errors.keys().next().unwrap().clone();
    let raw = "the server closed the QUIC connection: \u{1b}[2J\u{1b}]0;owned\u{7}\r\nFAKE: all requests succeeded";
    result
        .measured
        .error_details
        .insert(key.clone(), raw.into());
    let text = render(&TextExporter, &result);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "{text:?}"
    );
    assert!(
        text.contains("\\u{1b}[2J\\u{1b}]0;owned\\u{7}\\r\\nFAKE: all requests succeeded"),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("FAKE")), "{text}");
    let escaped = raw.escape_debug().to_string();
    result.measured.error_details.insert(key, escaped.clone());
    assert!(render(&TextExporter, &result).contains(&escaped));
}

/// Notes (the server's HTTP/3 offer) close the summary, and only when there are some.
#[test]
fn the_summary_ends_with_the_notes_when_there_are_some() {
    let mut result = fixture("ok.json");
    assert!(!render(&TextExporter, &result).contains("Notes"));
    result.notes = vec!["the server advertises HTTP/3 (Alt-Svc: h3=\":443\")".into()];
    let text = render(&TextExporter, &result);
    assert!(
        text.ends_with("\nNotes\n  - the server advertises HTTP/3 (Alt-Svc: h3=\":443\")\n"),
        "{text}"
    );
}

/// UDP's drops over QUIC get a row in the Machine section, and only when there were some.
#[test]
fn the_summary_names_udp_drops_when_there_were_some() {
    let mut result = fixture("scenario.json");
    let kernel = result
        .kernel
        .as_mut()
        .expect("scenario.json has the kernel's counters");
    kernel.udp = Some(loadlab_result::machine::UdpCounters {
        datagrams_received: 250_000,
        ..Default::default()
    });
    assert!(!render(&TextExporter, &result).contains("  UDP"));
    let kernel = result.kernel.as_mut().unwrap();
    kernel.udp = Some(loadlab_result::machine::UdpCounters {
        datagrams_received: 250_000,
        receive_buffer_errors: 1_234,
        in_errors: 1_240,
        send_buffer_errors: 0,
    });
    let text = render(&TextExporter, &result);
    let line = text
        .lines()
        .find(|l| l.starts_with("  UDP"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(
            "1,234 datagrams dropped for a full receive buffer, 1,240 dropped on arrival in all, \
             250,000 received"
        ),
        "{line}"
    );
}

#[test]
fn summary_of_a_run_where_everything_failed() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("refused.json")));
}

/// A scenario run (post 000's five endpoints against a server that answers 200 everywhere, so
/// the `/not-found` step's 404 check fails): the per-step table and the failed check.
#[test]
fn summary_of_a_scenario_run() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("scenario.json")));
}

#[test]
fn summary_of_an_open_loop_run() {
    insta::assert_snapshot!(render(&TextExporter, &fixture("open.json")));
}

/// The interval log parses with HdrHistogram's own reader, interval by interval, and its
/// histograms add up to the run's.
#[test]
fn hdr_log_reads_back() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let result = fixture("open.json");
    let log = render(&loadlab_report::HdrLogExporter, &result);
    assert!(log.contains("#[StartTime: "), "{log}");
    let mut de = hdrhistogram::serialization::Deserializer::new();
    let (mut total, mut warm) = (0u64, 0u64);
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(log.as_bytes()) {
        if let LogEntry::Interval(i) = entry.expect("a valid log line") {
            let bytes = base64_decode(i.encoded_histogram());
            let h: hdrhistogram::Histogram<u64> = de.deserialize(&mut &bytes[..]).unwrap();
            if i.tag().map(|t| t.as_str()) == Some("warmup") {
                warm += h.len();
            } else {
                total += h.len();
            }
            intervals += 1;
        }
    }
    assert_eq!(
        intervals,
        result
            .timeline
            .iter()
            .filter(|i| i.histogram.is_some())
            .count()
    );
    let warmup_completed = result.warmup.as_ref().map_or(0, |w| w.requests.completed);
    assert_eq!(
        total + warm,
        result.measured.requests.completed + warmup_completed
    );
    assert!(warm > 0);
}

fn base64_decode(text: &str) -> Vec<u8> {
    let h = loadlab_result::decode_histogram(text).unwrap();
    // Re-encode uncompressed so the test reads the log through HdrHistogram's deserializer.
    let mut out = Vec::new();
    use hdrhistogram::serialization::Serializer;
    hdrhistogram::serialization::V2Serializer::new()
        .serialize(&h, &mut out)
        .unwrap();
    out
}

/// Three shards of one open loop merged: the shards' table (each one's rate, latency and
/// health, when it started) and the start line, with the shards' own verdicts marked.
#[test]
fn summary_of_merged_shards() {
    let parts: Vec<RunResult> = (1..=3u32)
        .map(|i| {
            let mut r = fixture("open.json");
            r.environment.hostname = format!("gen-{i}");
            r.shard = Some(loadlab_result::ShardInfo {
                index: i,
                count: 3,
                plan_id: "0123456789abcdef".into(),
                whole_plan: "open loop, uniform arrivals: 3s at 1500 requests/s; up to 10000 \
                             connections"
                    .into(),
                start_at: Some("2026-05-01T12:00:00.000000Z".into()),
                start_at_unix_s: Some(1_777_636_800.0),
                started_wall: "2026-05-01T12:00:00.000000Z".into(),
                started_unix_s: 1_777_636_800.0 + f64::from(i) * 0.000_15,
                clock_synced: Some(true),
                clock_error_s: Some(0.000_4),
            });
            r
        })
        .collect();
    let merged = loadlab_result::merge_shards(&parts).unwrap();
    insta::assert_snapshot!(render(&TextExporter, &merged));
}
