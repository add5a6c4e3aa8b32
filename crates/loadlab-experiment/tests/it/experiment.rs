//! An experiment end to end, with two in-process servers as its variants: runs interleaved
//! in randomized blocks, interrupted, resumed from the first missing run, and compared; and a
//! lab target's recommended warm-up applied when the file sets none; and arms over WebSocket
//! (ws:// URLs, `[load] ws_*`) compared on their echoes.

use crate::stand_in::StandIn;
use loadlab_experiment::analysis::{self, ArmRuns};
use loadlab_experiment::plan::{Arm, PlannedRun};
use loadlab_experiment::runner::{self, Control, Ending, Event, RunSink};
use loadlab_experiment::{Experiment, Plan};
use loadlab_result::RunResult;
use loadlab_testkit::{response, Behavior, TestServer, TimedServer, Timing};
use std::sync::Arc;
use std::time::Duration;

/// Keeps runs in memory, as the store keeps them on disk.
#[derive(Default)]
struct Memory {
    runs: Vec<(String, usize, RunResult)>,
    status: Option<String>,
    began: usize,
}

impl RunSink for Memory {
    fn begin(
        &mut self,
        _: &Experiment,
        _: &Plan,
        resume: bool,
    ) -> Result<Vec<(String, usize)>, String> {
        self.began += 1;
        if !resume {
            self.runs.clear();
        }
        Ok(self
            .runs
            .iter()
            .filter(|(_, _, r)| !r.interrupted)
            .map(|(l, b, _)| (l.clone(), *b))
            .collect())
    }
    fn save(&mut self, arm: &Arm, run: &PlannedRun, result: &RunResult) -> Result<(), String> {
        // A run cut short is kept, marked interrupted; a resume runs it again.
        self.runs
            .retain(|(l, b, _)| !(l == &arm.label && *b == run.block));
        self.runs
            .push((arm.label.clone(), run.block, result.clone()));
        Ok(())
    }
    fn finish(&mut self, status: &str) -> Result<(), String> {
        self.status = Some(status.to_string());
        Ok(())
    }
}

#[test]
fn an_experiment_runs_interleaved_is_interrupted_resumed_and_compared() {
    let fast = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let slow = TimedServer::start(Timing::Delay(Duration::from_millis(2)));
    let file = format!(
        r#"
name = "e2e"
repetitions = 2
seed = 3
warmup = "100ms"
duration = "400ms"
cooldown = "0s"
[load]
connections = 2
threads = 1
[[variant]]
name = "fast"
url = "{}"
[[variant]]
name = "slow"
url = "{}"
"#,
        fast.url("").trim_end_matches('/'),
        slow.url("").trim_end_matches('/')
    );
    let experiment = Experiment::parse(&file).unwrap();
    let plan = Plan::new(&experiment).unwrap();
    assert_eq!(plan.runs.len(), 4);
    let mut sink = Memory::default();
    let options = runner::Options::default();

    // Stop after the second run ends: the first block is done, the second not begun.
    let control = Control::default();
    let mut finished = 0;
    let mut order = Vec::new();
    let stopper = control.clone();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &control,
        &mut |e| {
            if let Event::Finished { label, .. } = e {
                order.push(label);
                finished += 1;
                if finished == 2 {
                    stopper.stop();
                }
            }
        },
    )
    .unwrap();
    assert_eq!(ending, Ending::Interrupted);
    assert_eq!(sink.status.as_deref(), Some("interrupted"));
    assert_eq!(sink.runs.len(), 2);
    // Block 1 ran both arms, in the plan's order.
    let planned: Vec<String> = plan.runs[..2]
        .iter()
        .map(|r| plan.arms[r.arm].label.clone())
        .collect();
    assert_eq!(order, planned);
    assert_ne!(order[0], order[1]);

    // Resume: only the missing runs run.
    let options = runner::Options {
        resume: true,
        ..runner::Options::default()
    };
    let mut resumed = None;
    let mut ran = Vec::new();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &Control::default(),
        &mut |e| match e {
            Event::Resumed { done, of } => resumed = Some((done, of)),
            Event::Starting { run, .. } => ran.push(run.block),
            _ => {}
        },
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    assert_eq!(resumed, Some((2, 4)));
    assert_eq!(ran, [1, 1]);
    assert_eq!(sink.runs.len(), 4);

    // And compare: with 2 runs per arm no verdict can be significant, and the tool says how
    // many runs it would take.
    let arm_runs = |label: &str| -> Vec<RunResult> {
        sink.runs
            .iter()
            .filter(|(l, _, _)| l == label)
            .map(|(_, _, r)| r.clone())
            .collect()
    };
    let (a, mut b) = (arm_runs("fast"), arm_runs("slow"));
    // A path the fleet's check named before the runs (every run carries the one check): the
    // comparison names it once, and its table says so.
    let check = loadlab_result::path::PathCheck {
        generators: vec![loadlab_result::path::check::PathFinding {
            generator: "g1".into(),
            down_bits_per_s: Some(9.6e6),
            up_bits_per_s: Some(9e8),
            ceiling_per_s: Some(97.0),
            share_per_s: Some(200.0),
            named: Some("the path to generator g1 carries at most 97 requests/s".into()),
        }],
        ..Default::default()
    };
    for r in &mut b {
        r.path_check = Some(check.clone());
    }
    let comparisons = analysis::compare(
        &[(
            ArmRuns {
                label: "fast".into(),
                runs: &a,
            },
            ArmRuns {
                label: "slow".into(),
                runs: &b,
            },
        )],
        &loadlab_compare::Options::default(),
    );
    let p50 = comparisons[0]
        .rows
        .iter()
        .find(|r| r.metric == "p50")
        .unwrap();
    assert_eq!(p50.control_values.len(), 2);
    assert_eq!(
        comparisons[0].paths,
        ["the path to generator g1 carries at most 97 requests/s"]
    );
    let table =
        loadlab_experiment::table::render(&comparisons, loadlab_experiment::table::Format::Text);
    assert!(
        table.contains("path: the path to generator g1 carries at most 97 requests/s"),
        "{table}"
    );
    let verdict = analysis::verdict_words(p50);
    assert!(verdict.starts_with("inconclusive"), "{verdict}");
    assert!(verdict.contains("run at least"), "{verdict}");
    // The slow arm's p50 is about 2 ms above the fast one's in every run.
    let ratio = p50.comparison.as_ref().and_then(|c| c.ratio).unwrap();
    assert!(ratio > 3.0, "ratio {ratio}");
}

/// Two WebSocket servers as the arms (`ws://` URLs), binary echoes of 64 bytes from
/// `[load] ws_*`: every run an echo load, each arm's echoes the messages its server read, and
/// the arms compared on the echoes' times.
#[test]
fn websocket_arms_run_and_compare_on_their_echoes() {
    use loadlab_testkit::{WsBehavior, WsCounters, WsServer};
    let (a, b) = (
        WsServer::start(WsBehavior::Echo),
        WsServer::start(WsBehavior::Echo),
    );
    let file = format!(
        r#"
name = "ws"
repetitions = 2
warmup = "0s"
duration = "300ms"
cooldown = "0s"
[load]
path = "/echo"
rate = 100
threads = 1
ws_binary = true
ws_size = 64
[[variant]]
name = "a"
url = "ws://{}"
[[variant]]
name = "b"
url = "ws://{}"
"#,
        a.addr(),
        b.addr()
    );
    let experiment = Experiment::parse(&file).unwrap();
    let ws = experiment.base.ws.as_ref().expect("[load] ws_*");
    assert_eq!(
        (ws.mode.as_str(), ws.binary, ws.size),
        ("echo", true, Some(64))
    );
    let plan = Plan::new(&experiment).unwrap();
    let mut sink = Memory::default();
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &runner::Options::default(),
        &Control::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    assert_eq!(sink.runs.len(), 4);
    let arm_runs = |label: &str| -> Vec<RunResult> {
        sink.runs
            .iter()
            .filter(|(l, _, _)| l == label)
            .map(|(_, _, r)| r.clone())
            .collect()
    };
    for (label, server) in [("a", &a), ("b", &b)] {
        let runs = arm_runs(label);
        let done: u64 = runs.iter().map(|r| r.measured.requests.completed).sum();
        let in_flight: u64 = runs.iter().map(|r| r.in_flight_at_end).sum();
        for r in &runs {
            assert_eq!(r.websocket.as_ref().map(|w| w.mode.as_str()), Some("echo"));
            assert!(r.target.url.ends_with("/echo"), "{}", r.target.url);
        }
        let seen = WsCounters::get(&server.counters().messages);
        assert!(done >= 40, "{label}: {done}");
        assert!(
            seen >= done && seen <= done + in_flight,
            "{label}: {seen} vs {done}"
        );
    }
    let (ra, rb) = (arm_runs("a"), arm_runs("b"));
    let comparisons = analysis::compare(
        &[(
            ArmRuns {
                label: "a".into(),
                runs: &ra,
            },
            ArmRuns {
                label: "b".into(),
                runs: &rb,
            },
        )],
        &loadlab_compare::Options::default(),
    );
    let p99 = comparisons[0]
        .rows
        .iter()
        .find(|r| r.metric == "p99")
        .unwrap();
    assert_eq!(p99.control_values.len(), 2);
}

/// WebSocket settings in a file: checked as the flags are, and refused where no WebSocket
/// goes (an http:// url, a lab target).
#[test]
fn websocket_keys_are_checked_and_need_a_ws_url() {
    let file = |load: &str, variant: &str| {
        format!("name = \"w\"\n[load]\n{load}\n[[variant]]\nname = \"a\"\n{variant}\n")
    };
    for (load, variant, says) in [
        (
            "ws_mode = \"shout\"",
            "url = \"ws://127.0.0.1:1\"",
            "ws_mode \"shout\"",
        ),
        (
            "ws_ping = \"soon\"",
            "url = \"ws://127.0.0.1:1\"",
            "ws_ping",
        ),
        (
            "ws_size = 64",
            "url = \"http://127.0.0.1:1\"",
            "needs a ws:// or wss:// url",
        ),
        (
            "ws_held = 10",
            "target = \"rust-axum\"",
            "give url instead of target",
        ),
        ("", "url = \"ftp://127.0.0.1:1\"", "ws:// or wss://"),
    ] {
        let e = Experiment::parse(&file(load, variant)).unwrap_err();
        assert!(e.contains(says), "{load}: {e}");
    }
    let e = Experiment::parse(&file(
        "ws_mode = \"hold\"\nws_ping = \"5s\"\nconnections = 10\nws_no_deflate = true",
        "url = \"wss://h:1/x\"",
    ))
    .unwrap();
    let spec = e.base.ws.as_ref().unwrap().spec();
    assert_eq!(spec.mode, loadlab_engine::ws::WsMode::Hold);
    assert_eq!(spec.ping, Some(Duration::from_secs(5)));
    assert!(spec.no_deflate);
    // A file without them plans as before (no ws in the plan's hash).
    let plain = Experiment::parse(&file("", "url = \"http://127.0.0.1:1\"")).unwrap();
    assert!(plain.base.ws.is_none());
}

/// Answers the stand-in's next start ([`StandIn`]): serves `200 ok` to every request on its
/// port (HTTP/1.1, kept alive), then lets it go on.
fn serve_stand_in(stand_in: &StandIn) {
    use std::io::{BufRead, BufReader, Write};
    let start = stand_in.next_start();
    let listener = std::net::TcpListener::bind(("127.0.0.1", start.port))
        .expect("the stand-in's port is free");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                loop {
                    // A request: lines up to the empty one (GETs, no body).
                    loop {
                        line.clear();
                        match reader.read_line(&mut line) {
                            Ok(0) | Err(_) => return,
                            Ok(_) if line == "\r\n" => break,
                            Ok(_) => {}
                        }
                    }
                    if stream.write_all(&response(200, "ok")).is_err() {
                        return;
                    }
                }
            });
        }
    });
    stand_in.ready();
}

/// The one run of a one-variant experiment on the stand-in lab, from `file`: the arm's
/// planned warm-up and the run's result.
fn run_on_stand_in(file: &str, stand_in: &Arc<StandIn>) -> (f64, Vec<String>, RunResult) {
    let mut experiment = Experiment::parse(file).unwrap();
    let notes = experiment
        .read_lab_targets_from(Some(stand_in.lab()))
        .unwrap();
    let plan = Plan::new(&experiment).unwrap();
    let planned = plan.arms[0].settings.warmup_s;
    let mut sink = Memory::default();
    let options = runner::Options {
        targets: Some(stand_in.lab().to_path_buf()),
        skip_verify: true,
        ..runner::Options::default()
    };
    // Not a scoped thread: if the run fails, the test fails instead of waiting on a start
    // that never comes.
    let serving = std::thread::spawn({
        let stand_in = stand_in.clone();
        move || serve_stand_in(&stand_in)
    });
    let ending = runner::run(
        &experiment,
        &plan,
        &mut sink,
        &options,
        &Control::default(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(ending, Ending::Complete);
    serving.join().unwrap();
    (planned, notes, sink.runs.pop().unwrap().2)
}

#[test]
fn a_targets_recommended_warmup_applies_unless_the_file_sets_one() {
    let stand_in = Arc::new(StandIn::new(1, &[]));
    let file = r#"
name = "warmups"
repetitions = 1
duration = "300ms"
cooldown = "0s"
[load]
connections = 1
threads = 1
[[variant]]
name = "stand-in"
target = "stand-in"
"#;

    // No warmup in the file: the manifest's 1 s, in the plan and in the run's warm-up phase
    // (the file's default would be 2 s).
    let (planned, notes, result) = run_on_stand_in(file, &stand_in);
    assert_eq!(planned, 1.0);
    assert!(
        notes.len() == 1 && notes[0].contains("warm-up 1s"),
        "{notes:?}"
    );
    assert_eq!(result.load.warmup_s, 1.0);
    // The phase ran at least as long as planned (a loaded machine can only make it end
    // later, so no upper bound here: `load.warmup_s` above is what the engine was told).
    let warmup = result.warmup.expect("a warm-up phase");
    assert!(
        warmup.duration_s >= 0.95 && warmup.requests.completed > 0,
        "{warmup:?}"
    );

    // The file's own warmup overrides the manifest's.
    let own = file.replace("cooldown", "warmup = \"200ms\"\ncooldown");
    let (planned, notes, result) = run_on_stand_in(&own, &stand_in);
    assert_eq!(planned, 0.2);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(result.load.warmup_s, 0.2);
    let warmup = result.warmup.expect("a warm-up phase");
    assert!(warmup.duration_s >= 0.19, "{warmup:?}");

    // So does --warmup, given after the file is read.
    let mut experiment = Experiment::parse(file).unwrap();
    experiment.set_warmup(0.5);
    assert!(experiment
        .read_lab_targets_from(Some(stand_in.lab()))
        .unwrap()
        .is_empty());
    assert_eq!(
        Plan::new(&experiment).unwrap().arms[0].settings.warmup_s,
        0.5
    );
}
