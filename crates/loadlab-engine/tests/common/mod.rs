//! What the engine's integration tests share.

use loadlab_engine::{run, summarize, RunControl, RunResult, RunSpec};
use std::sync::mpsc;
use std::time::Duration;

/// Runs the engine on its own thread; a run that does not end within `limit` fails the test
/// instead of hanging it.
pub fn run_within(spec: RunSpec, limit: Duration) -> RunResult {
    let config = spec.validate().expect("valid spec");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = run(&config, &RunControl::new()).expect("run starts");
        let _ = tx.send(summarize(&config, &outcome));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("the run hung: no result within {limit:?}"))
}

/// The least a latency summary can report for latencies of at least `us` microseconds. Its
/// histogram keeps 3 significant digits, and its `min` is the lower edge of the bucket the
/// least latency fell in: up to 1/1024 below it (a 1.0002 s latency reports 999.817 ms).
pub fn reported_floor_us(us: f64) -> f64 {
    let h = loadlab_result::histogram::new_histogram();
    h.lowest_equivalent((us * 1_000.0) as u64) as f64 / 1_000.0
}

/// How long the run's worker threads were ready to run but held off a CPU (the kernel's
/// run-queue wait, which the run measures itself), in milliseconds. A wall-clock upper bound
/// on loadlab's own lag or duration is a constant plus this run's stalls, so a busy machine
/// that stalls the generator raises the bound by exactly what it took: the bound holds on
/// any machine (docs/testing.md, timing tests).
pub fn stalls_ms(r: &RunResult) -> f64 {
    assert!(
        !r.generator.thread_waited_s.is_empty(),
        "the kernel reported no run-queue wait (/proc/thread-self/schedstat)"
    );
    r.generator.thread_waited_s.iter().sum::<f64>() * 1_000.0
}
