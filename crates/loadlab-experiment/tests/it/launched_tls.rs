//! Experiments whose servers loadlab launches, over TLS: a lab target and an exec command
//! given the run's throwaway certificate (`TLS_CERT`, `TLS_KEY`) and loaded over HTTPS and
//! HTTP/3, each run's counts held against the stand-in's own; and an http3 arm refused on a
//! target that does not serve HTTP/3, when the lab is read and again before anything is built.

use crate::stand_in::StandIn;
use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::{self, Control, Ending, Event, RunSink};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use loadlab_testkit::{response, H3Server, RouteServer, H3_BODY};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Keeps nothing: each run is checked as it finishes, against the servers of that run.
struct Discard;

impl RunSink for Discard {
    fn begin(&mut self, _: &Experiment, _: &Plan, _: bool) -> Result<Vec<(String, usize)>, String> {
        Ok(Vec::new())
    }
    fn save(&mut self, _: &Arm, _: &PlannedRun, _: &RunResult) -> Result<(), String> {
        Ok(())
    }
    fn finish(&mut self, _: &str) -> Result<(), String> {
        Ok(())
    }
}

/// What the stand-in's port serves during one run, as a lab target with the `http3`
/// capability must: HTTPS over TCP and HTTP/3 over UDP on the same port number, with the
/// certificate the run gave it.
struct Served {
    port: u16,
    https: RouteServer,
    h3: H3Server,
}

/// Serves the stand-in's next start with the certificate and key it was given.
fn serve_over_tls(stand_in: &StandIn) -> Served {
    let start = stand_in.next_start();
    let (cert, key) = start
        .tls
        .expect("launched over TLS: TLS_CERT and TLS_KEY set");
    let config = loadlab_certs::server_config(&cert, &key, &[b"http/1.1"]).unwrap();
    let h3 = H3Server::start_on(start.port, &config);
    let https = RouteServer::start_tls_on(|_| response(200, "ok").into(), start.port, config);
    stand_in.ready();
    Served {
        port: start.port,
        https,
        h3,
    }
}

/// The server counts a request once its response is finished, which the client may see
/// first: waits (bounded, generously) until it has counted at least `want`.
fn h3_answered_at_least(server: &H3Server, want: u64) -> u64 {
    let counters = server.counters();
    let until = Instant::now() + Duration::from_secs(10);
    while counters.answered() < want && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(5));
    }
    counters.answered()
}

/// One finished run against the servers of its start: over TLS to the launched server's
/// port, on the arm's protocol, nothing failed, and every request the run counted (warm-up's
/// too) the server counted, beyond them at most those in flight when the run ended.
fn check_run(label: &str, result: &RunResult, served: &Served) {
    let m = &result.measured;
    assert_eq!(m.requests.failed, 0, "{label}: {:?}", m.error_details);
    assert!(m.requests.completed > 0, "{label}");
    assert_eq!(m.status_codes.get("200"), Some(&m.requests.completed));
    assert_eq!(
        result.target.url,
        format!("https://127.0.0.1:{}/plaintext", served.port),
        "{label}"
    );
    assert!(result.target.tls.is_some(), "{label}");
    let counted = m.requests.completed + result.warmup.as_ref().unwrap().requests.completed;
    let most = counted + result.in_flight_at_end;
    let over_tcp = served.https.counters().requests_to("/plaintext");
    if label.contains("http3") {
        assert_eq!(result.load.protocol, "h3", "{label}");
        assert_eq!(
            m.bytes.received,
            m.requests.completed * H3_BODY.len() as u64
        );
        let answered = h3_answered_at_least(&served.h3, counted);
        assert!(
            (counted..=most).contains(&answered),
            "{label}: the server answered {answered} over HTTP/3, the run counted {counted}"
        );
        // Only the start-up health check came over TCP.
        assert_eq!(over_tcp, 0, "{label}");
    } else {
        assert_eq!(result.load.protocol, "http/1.1", "{label}");
        assert!(
            (counted..=most).contains(&over_tcp),
            "{label}: the server read {over_tcp} over HTTPS, the run counted {counted}"
        );
        assert_eq!(served.h3.counters().connections(), 0, "{label}");
    }
    // The launched stand-in holds no socket (the test serves its port): what it sent is
    // unknown, not 0 B/s, on either protocol.
    let server = result.server.as_ref().expect("the launched server sampled");
    let summary = server
        .summary
        .as_ref()
        .expect("a summary of the measured phase");
    assert_eq!(
        (summary.sent_bytes, summary.sent_per_s.is_some()),
        (None, false),
        "{label}"
    );
    assert!(
        server.samples.iter().all(|w| w.sent_bytes.is_none()),
        "{label}"
    );
}

#[test]
fn an_experiment_launches_a_target_and_a_command_over_https_and_http3() {
    let stand_in = Arc::new(StandIn::new(0, &["http3"]));
    let file = format!(
        r#"
name = "launched-tls"
repetitions = 1
warmup = "100ms"
duration = "300ms"
cooldown = "0s"
[load]
connections = 2
threads = 1
path = "/plaintext"
[matrix]
protocol = ["https", "http3"]
[[variant]]
name = "target"
target = "stand-in"
[[variant]]
name = "exec"
exec = "{}"
"#,
        stand_in.exec_command()
    );
    let mut experiment = Experiment::parse(&file).unwrap();
    experiment
        .read_lab_targets_from(Some(stand_in.lab()))
        .unwrap();
    let plan = Plan::new(&experiment).unwrap();
    assert_eq!(plan.runs.len(), 4);
    let options = runner::Options {
        targets: Some(stand_in.lab().to_path_buf()),
        skip_verify: true,
        ..runner::Options::default()
    };
    // The servers of the run going on: put there at its start, taken (and so stopped) when
    // it finishes, before the next run starts. Not a scoped thread: if a run fails, the test
    // fails instead of waiting on a start that never comes.
    let current: Arc<Mutex<Option<Served>>> = Arc::default();
    let runs = plan.runs.len();
    let serving = std::thread::spawn({
        let (stand_in, current) = (stand_in.clone(), current.clone());
        move || {
            for _ in 0..runs {
                let served = serve_over_tls(&stand_in);
                let previous = current.lock().unwrap().replace(served);
                assert!(previous.is_none(), "a run's servers were not checked");
            }
        }
    });
    let mut checked = Vec::new();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut Discard,
        &options,
        &Control::default(),
        &mut |event| {
            if let Event::Finished { label, result, .. } = event {
                let served = current.lock().unwrap().take().expect("the run's servers");
                check_run(&label, &result, &served);
                checked.push(label);
            }
        },
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    serving.join().unwrap();
    checked.sort();
    assert_eq!(
        checked,
        [
            "exec[protocol=http3]",
            "exec[protocol=https]",
            "target[protocol=http3]",
            "target[protocol=https]"
        ]
    );
}

#[test]
fn an_http3_arm_is_refused_on_a_target_without_the_capability() {
    let stand_in = StandIn::new(0, &[]);
    let file = r#"
name = "no-h3"
[load]
protocol = "http3"
[[variant]]
name = "plain"
target = "stand-in"
"#;
    let refusal = "[[variant]] plain: protocol http3 needs a target that serves HTTP/3 beside \
                   HTTPS (capabilities = [\"http3\"] in its target.toml), and target stand-in \
                   does not declare it";
    // When the lab is read, before the plan is shown: with the fix this lab offers.
    let mut experiment = Experiment::parse(file).unwrap();
    assert_eq!(
        experiment.read_lab_targets_from(Some(stand_in.lab())),
        Err(format!(
            "{refusal}, nor does any target in this lab: use protocol https or http2, or give a \
             target HTTP/3 as targets/CONTRACT.md says"
        ))
    );
    stand_in.add_target("quic-b", &["metrics", "http3"]);
    stand_in.add_target("quic-a", &["http3"]);
    stand_in.add_target("tcp-only", &["metrics"]);
    let want = format!(
        "{refusal}; compare targets that do (quic-a, quic-b), or use protocol https or http2"
    );
    assert_eq!(
        experiment.read_lab_targets_from(Some(stand_in.lab())),
        Err(want.clone())
    );
    // And by the runner, for a caller that did not read it, before anything is built.
    let plan = Plan::new(&experiment).unwrap();
    let options = runner::Options {
        targets: Some(stand_in.lab().to_path_buf()),
        ..runner::Options::default()
    };
    let mut events = Vec::new();
    let err = runner::run(
        &experiment,
        &plan,
        &mut Discard,
        &options,
        &Control::default(),
        &mut |e| events.push(format!("{e:?}")),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), want);
    assert!(events.is_empty(), "{events:?}");
    // Over https the same target is fine: every target serves HTTPS with TLS_CERT set.
    let mut https = Experiment::parse(&file.replace("http3", "https")).unwrap();
    assert!(https.read_lab_targets_from(Some(stand_in.lab())).is_ok());
}
