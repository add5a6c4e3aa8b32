//! Experiments over HTTP/3: two in-process QUIC servers compared as variants, the arms'
//! streams and 0-RTT reaching the runs, each run's counts held against the server's own.

use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::{self, Control, Ending, RunSink};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use loadlab_testkit::{H3Server, TestCa, H3_BODY};
use std::time::{Duration, Instant};

/// Keeps each run's result with its arm's label.
#[derive(Default)]
struct Runs(Vec<(String, RunResult)>);

impl RunSink for Runs {
    fn begin(&mut self, _: &Experiment, _: &Plan, _: bool) -> Result<Vec<(String, usize)>, String> {
        Ok(Vec::new())
    }
    fn save(&mut self, arm: &Arm, _: &PlannedRun, result: &RunResult) -> Result<(), String> {
        self.0.push((arm.label.clone(), result.clone()));
        Ok(())
    }
    fn finish(&mut self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Runs `file` to its end; every run's arm label and result.
fn run(file: &str) -> Vec<(String, RunResult)> {
    let experiment = Experiment::parse(file).unwrap();
    let plan = Plan::new(&experiment).unwrap();
    let mut runs = Runs::default();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut runs,
        &runner::Options::default(),
        &Control::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    runs.0
}

/// The CA's certificate in a file, for the experiment's `[load] cacert`.
fn ca_file(ca: &TestCa) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ca.pem");
    std::fs::write(&path, ca.pem()).unwrap();
    let path = path.display().to_string();
    (dir, path)
}

/// The server counts a request once its response is finished, which the client may see
/// first: waits (bounded, generously) until it has counted at least `want`.
fn answered_at_least(server: &H3Server, want: u64) -> u64 {
    let counters = server.counters();
    let until = Instant::now() + Duration::from_secs(10);
    while counters.answered() < want && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    counters.answered()
}

#[test]
fn an_experiment_compares_two_servers_over_http3() {
    let ca = TestCa::new();
    let (_dir, cacert) = ca_file(&ca);
    let (a, b) = (H3Server::start(&ca), H3Server::start(&ca));
    let file = format!(
        r#"
name = "over-h3"
repetitions = 1
warmup = "100ms"
duration = "300ms"
cooldown = "0s"
[load]
connections = 2
threads = 1
protocol = "h3"
streams = 4
cacert = "{cacert}"
[[variant]]
name = "a"
url = "{}"
[[variant]]
name = "b"
url = "{}"
"#,
        a.url().trim_end_matches('/'),
        b.url().trim_end_matches('/'),
    );
    let runs = run(&file);
    assert_eq!(runs.len(), 2);
    for (label, result) in &runs {
        let server = if label == "a" { &a } else { &b };
        let m = &result.measured;
        assert_eq!(result.load.protocol, "h3", "{label}");
        assert_eq!(result.load.streams, 4, "{label}");
        assert_eq!(m.requests.failed, 0, "{label}: {:?}", m.error_details);
        assert!(m.requests.completed > 0, "{label}");
        assert_eq!(m.status_codes.get("200"), Some(&m.requests.completed));
        assert_eq!(
            m.bytes.received,
            m.requests.completed * H3_BODY.len() as u64
        );
        // Every request the run counted, warm-up's too, the server answered; beyond them
        // at most those still in flight when the run ended (2 connections x 4 streams).
        let counted = m.requests.completed + result.warmup.as_ref().unwrap().requests.completed;
        let answered = answered_at_least(server, counted);
        assert!(
            (counted..=counted + 8).contains(&answered),
            "{label}: the server answered {answered}, the run counted {counted}"
        );
        // Two connections for the whole run: the arm's, not one per request.
        assert_eq!(server.counters().connections(), 2, "{label}");
    }
}

#[test]
fn an_experiments_http3_arms_resume_with_0rtt() {
    let ca = TestCa::new();
    let (_dir, cacert) = ca_file(&ca);
    let server = H3Server::start_0rtt(&ca);
    // keepalive = false: each connection carries one request a stream and closes, so the
    // run keeps opening connections, which resume with the tickets the earlier ones got.
    let file = format!(
        r#"
name = "h3-0rtt"
repetitions = 1
warmup = "100ms"
duration = "300ms"
cooldown = "0s"
[load]
connections = 2
threads = 1
protocol = "http3"
streams = 2
keepalive = false
http3_0rtt = true
cacert = "{cacert}"
[[variant]]
name = "quinn"
url = "{}"
"#,
        server.url().trim_end_matches('/'),
    );
    let runs = run(&file);
    let m = &runs[0].1.measured;
    assert_eq!(m.requests.failed, 0, "{:?}", m.error_details);
    let early = m.early_data.as_ref().expect("requests sent as early data");
    assert!(
        early.connections > 0 && early.requests > 0,
        "{early:?} of {} connections",
        m.connections_opened
    );
    // This server takes the early data of every session it resumes.
    assert_eq!(early.requests_accepted, early.requests, "{early:?}");
    assert_eq!(early.connections_rejected, 0, "{early:?}");
}
