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
