//! The log gives back the very samples pushed (so the report made from them is the report
//! made from the samples kept in memory), whatever their values, holding little in memory.

use super::*;
use crate::report::{summarize, windows};

/// A run of `n` samples every 100 ms (jittered, one pair at the same instant), whose
/// figures move as a server's do and also as they rarely do: a CPU total that falls (a PID
/// reused), throttling and charged memory that come and go, values near `u64::MAX`.
fn series(origin: Instant, n: u64) -> Vec<Sample> {
    let mut cpu = 0u64;
    (0..n)
        .map(|i| {
            cpu = if i == 500 {
                cpu / 2
            } else {
                cpu + 3_000_000 + (i * 7_919) % 40_000_000
            };
            let jitter = (i * 104_729) % 3_000_000;
            let at = if i == 700 { 100 * 699 } else { 100 * i };
            Sample {
                at: origin + Duration::from_millis(at) + Duration::from_nanos(jitter),
                cpu_ns: cpu,
                throttling: (i % 300 < 200).then_some(Throttling {
                    periods: i,
                    throttled: i / 3,
                    throttled_ns: i * 1_234_567,
                }),
                rss_bytes: (40 << 20) + ((i * 37) % 1_000) * 4096 - (i % 2) * 8192,
                memory_bytes: (i % 11 != 3).then_some((50 << 20) + i * 4096),
                threads: 4 + i % 3,
                fds: 10 + (i * 13) % 50,
                generator_cpu_ns: i * 20_000_000 + jitter,
                processes: 1 + i % 2,
                sent_bytes: (i > 5).then_some(u64::MAX - 100_000_000_000 + i * 1_000_003),
                oom_kills: (i % 400 != 0).then_some(i / 1_000),
            }
        })
        .collect()
}

/// 1,234 samples (123.4 s: not a whole number of 1 s intervals), through a log on a file
/// and one in memory: the samples, their windows and the summary over a measured span that
/// ends inside an interval are exactly those of the samples kept whole.
#[test]
fn the_report_from_the_log_is_the_report_from_the_samples() {
    let origin = Instant::now();
    let raw = series(origin, 1_234);
    for mut log in [SampleLog::new(), SampleLog::in_memory()] {
        for s in &raw {
            log.push(s);
        }
        assert_eq!(log.len(), raw.len());
        let back = log.samples();
        assert_eq!(back, raw);
        assert_eq!(windows(&back, origin), windows(&raw, origin));
        for (from, to) in [(0.0, 123.4), (2.0, 77.77), (10.0, 200.0)] {
            let want = summarize(&raw, origin, from, to, Some(0.5), Some(64 << 20));
            assert!(want.is_some());
            assert_eq!(
                summarize(&back, origin, from, to, Some(0.5), Some(64 << 20)),
                want
            );
        }
    }
    // A sample before the first one's instant (no sampler takes one, but it round-trips).
    let mut log = SampleLog::in_memory();
    let early = Sample {
        at: origin - Duration::from_millis(5),
        ..raw[0]
    };
    log.push(&raw[0]);
    log.push(&early);
    assert_eq!(log.samples(), [raw[0], early]);
}

/// 50,000 samples (83 minutes at 100 ms): the file takes them, the memory holds at most
/// one flush's worth, and each costs far less than a `Sample`.
#[test]
fn a_long_run_holds_little_in_memory() {
    let origin = Instant::now();
    let raw = series(origin, 50_000);
    let mut log = SampleLog::new();
    assert!(
        log.file.is_some(),
        "no anonymous file in {}",
        std::env::temp_dir().display()
    );
    for s in &raw {
        log.push(s);
        assert!(log.held_bytes() < FLUSH_AT);
    }
    let per_sample = (log.written as usize + log.held_bytes()) / raw.len();
    assert!(
        per_sample * 4 < std::mem::size_of::<Sample>(),
        "{per_sample} bytes a sample"
    );
    assert_eq!(log.samples(), raw);
}

/// The disk fills: what the file holds is read back first, the rest from memory.
#[test]
fn a_file_that_takes_no_more_leaves_the_rest_in_memory() {
    let origin = Instant::now();
    let raw = series(origin, 3_000);
    let mut log = SampleLog::new();
    for (i, s) in raw.iter().enumerate() {
        if i == 1_500 {
            log.writable = false;
        }
        log.push(s);
    }
    assert!(log.written > 0 && log.held_bytes() > FLUSH_AT);
    assert_eq!(log.samples(), raw);
}

/// A sampler whose samples only stream (the agent's) hands none back: it keeps none.
#[test]
fn a_streaming_sampler_that_keeps_nothing_hands_nothing_back() {
    let (tx, rx) = std::sync::mpsc::channel();
    let sampler = crate::Sampler::start_streaming(
        None,
        crate::Source::Tree {
            pid: std::process::id(),
        },
        Duration::from_millis(10),
        None,
        Box::new(|| {}),
        Box::new(move |s, _| {
            let _ = tx.send(*s);
        }),
        false,
    );
    for _ in 0..3 {
        rx.recv().expect("a sample");
    }
    let samples = sampler.finish();
    assert!(samples.samples.is_empty() && samples.exit.is_none());
}
