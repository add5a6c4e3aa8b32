//! A fleet run end to end on loopback: generator agents in-process, a counting server, the
//! coordinator's [`Fleet::run`] with a spill file as its sink. What is checked is where the
//! timeline comes from: the intervals handed to the sink (the shards' results bring none),
//! read back as for one generator, every one of them, a lost generator's too, each count
//! exact against the server's.

use super::lead::lead_after;
use super::{Fleet, Generator};
use crate::spill::sink::SpillSink;
use crate::spill::timeline::rebuild;
use crate::AgentEndpoint;
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::{RunControl, RunSpec};
use loadlab_result::{IntervalSummary, RunResult};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// `loadlab agent --generator` in-process on 127.0.0.1:0, stopped when dropped.
pub(super) struct Agent {
    stop: Arc<Mutex<(bool, Option<Waker>)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let waker = {
            let mut stop = self.stop.lock().unwrap();
            stop.0 = true;
            stop.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The agents' token in a file as the agent makes its own: private (0600), else the client
/// refuses it.
pub(super) fn token_file(dir: &ScratchDir, name: &str) -> std::path::PathBuf {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.path().join(format!("{name}.token"));
    let mut file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    writeln!(file, "{TOKEN}").unwrap();
    path
}

pub(super) fn generator(dir: &ScratchDir, name: &str) -> (Agent, Generator) {
    let ca = loadlab_certs::Authority::new("fleet-test").unwrap();
    let issued = ca.issue_loopback(&[]).unwrap();
    let fingerprint = loadlab_agent::protocol::fingerprint(issued.cert_der.as_ref());
    let tls = loadlab_certs::server_config_for(&issued, &[b"http/1.1"]).unwrap();
    let mut config = loadlab_agent::AgentConfig::new(loadlab_agent::Token::new(TOKEN), tls);
    config.generator = true;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The agent's shutdown signal: ready once the test drops the agent.
    let stop: Arc<Mutex<(bool, Option<Waker>)>> = Arc::default();
    let stopped = stop.clone();
    let shutdown = std::future::poll_fn(move |cx| {
        let mut s = stopped.lock().unwrap();
        if s.0 {
            return Poll::Ready(());
        }
        s.1 = Some(cx.waker().clone());
        Poll::Pending
    });
    let thread = std::thread::spawn(move || {
        let _ = loadlab_agent::serve(listener, config, shutdown);
    });
    let token_file = token_file(dir, name);
    let g = Generator {
        name: name.into(),
        endpoint: AgentEndpoint {
            url: format!("https://{addr}"),
            token_file,
            fingerprint: Some(fingerprint),
            cacert: None,
        },
    };
    let agent = Agent {
        stop,
        thread: Some(thread),
    };
    (agent, g)
}

/// The spill file's sink, counting the intervals handed to it.
struct Counted(SpillSink, Arc<AtomicU64>);

impl IntervalSink for Counted {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        self.0.start(header)
    }
    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        self.1.fetch_add(1, Ordering::Relaxed);
        self.0.interval(interval)
    }
    fn finish(&mut self) -> Result<(), String> {
        self.0.finish()
    }
}

/// Completed requests over both phases.
fn completed(r: &RunResult) -> u64 {
    r.measured.requests.completed + r.warmup.as_ref().map_or(0, |w| w.requests.completed)
}

/// A closed loop of 600 requests over two generators, one connection each paced at 10 ms:
/// about 30 intervals of 100 ms.
fn spec(server: &TestServer) -> RunSpec {
    RunSpec {
        url: server.url("/"),
        connections: Some(2),
        requests: Some(600),
        pace: Some(Duration::from_millis(10)),
        interval: Duration::from_millis(100),
        ..RunSpec::default()
    }
}

/// The run's result keeps each merged interval's counts; the whole intervals are read back
/// from the sink, as one generator's are, and add up exactly to the result and the server.
#[test]
fn a_fleet_runs_timeline_is_what_its_sink_was_given() {
    let dir = ScratchDir::new("fleet-timeline");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let (a, ga) = generator(&dir, "gen0");
    let (b, gb) = generator(&dir, "gen1");
    let fleet = Fleet::of(vec![ga, gb]);
    let path = dir.path().join("run.spill");
    let control = RunControl::new();
    let written = Arc::new(AtomicU64::new(0));
    control.stream_intervals_to(Box::new(Counted(
        SpillSink::new(path.clone()),
        written.clone(),
    )));
    let result = fleet.run(&spec(&server), &control).unwrap();
    let report = control.stream_report().unwrap();
    assert_eq!(report.error, None);
    assert_eq!(report.intervals_written, written.load(Ordering::Relaxed));
    assert!(report.intervals_written >= 10, "{report:?}");
    // Counts only, one per interval written: the whole ones are in the spill file.
    assert_eq!(result.timeline.len() as u64, report.intervals_written);
    assert!(result.timeline.iter().all(|i| i.histogram.is_none()));
    let sum = |t: &[IntervalSummary]| t.iter().map(|i| i.completed).sum::<u64>();
    assert_eq!(sum(&result.timeline), 600);
    assert_eq!(
        (completed(&result), server.counters().requests()),
        (600, 600)
    );
    // The two shards' own summaries, offered rate included, as before.
    assert_eq!(result.parts.len(), 2);
    assert_eq!(result.parts.iter().map(|p| p.issued).sum::<u64>(), 600);

    let rebuilt = rebuild(&path, report.intervals_written, &result.timeline).unwrap();
    assert_eq!(rebuilt.read, report.intervals_written);
    assert_eq!(sum(&rebuilt.timeline), 600);
    let mut all = loadlab_result::new_histogram();
    for text in rebuilt
        .timeline
        .iter()
        .filter_map(|i| i.histogram.as_deref())
    {
        all.add(loadlab_result::decode_histogram(text).unwrap())
            .unwrap();
    }
    assert_eq!(all.len(), 600);
    eprintln!(
        "{} intervals written; at most {} waited for a slower generator at once",
        report.intervals_written, report.max_held_intervals
    );
    drop((a, b));
}

/// Without a sink, nothing else holds the intervals: the result keeps them whole, as the
/// engine does for one generator.
#[test]
fn without_a_sink_the_fleets_result_keeps_whole_intervals() {
    let dir = ScratchDir::new("fleet-nosink");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let (a, ga) = generator(&dir, "gen0");
    let (b, gb) = generator(&dir, "gen1");
    let fleet = Fleet::of(vec![ga, gb]);
    let result = fleet.run(&spec(&server), &RunControl::new()).unwrap();
    assert!(result.timeline.len() >= 10, "{}", result.timeline.len());
    assert_eq!(
        result.timeline.iter().map(|i| i.completed).sum::<u64>(),
        600
    );
    let mut all = loadlab_result::new_histogram();
    for text in result
        .timeline
        .iter()
        .filter_map(|i| i.histogram.as_deref())
    {
        all.add(loadlab_result::decode_histogram(text).unwrap())
            .unwrap();
    }
    assert_eq!(all.len(), 600);
    assert_eq!(server.counters().requests(), 600);
    drop((a, b));
}

/// A fleet's first run starts its shards 1.5 s ahead; the next run of the same fleet knows how
/// long the first took to hand them out, and starts a quarter of a second or so ahead, every
/// shard on time and every request counted.
#[test]
fn a_fleets_later_runs_start_as_soon_as_handing_out_their_shards_allows() {
    assert_eq!(lead_after(None), Duration::from_millis(1500));
    assert_eq!(
        lead_after(Some(Duration::from_millis(2))),
        Duration::from_millis(250)
    );
    assert_eq!(
        lead_after(Some(Duration::from_millis(400))),
        Duration::from_millis(1300)
    );
    assert_eq!(
        lead_after(Some(Duration::from_secs(20))),
        Duration::from_secs(30)
    );
    let dir = ScratchDir::new("fleet-lead");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let (a, ga) = generator(&dir, "gen0");
    let (b, gb) = generator(&dir, "gen1");
    let first = Fleet::of(vec![ga, gb]);
    for run in 1..=2 {
        // A clone for each run, as an experiment gives its runs: the measurement is shared.
        let fleet = first.clone();
        let result = fleet.run(&spec(&server), &RunControl::new()).unwrap();
        assert_eq!(result.measured.requests.completed, 600, "run {run}");
        let shards = result.shards.as_ref().expect("shards");
        assert!(
            shards.missing.is_empty() && shards.failed.is_empty(),
            "run {run}"
        );
    }
    assert_eq!(server.counters().requests(), 1200);
    // Two posts to agents on this machine take milliseconds, even a busy one's.
    assert!(lead_after(first.posting.last()) < Duration::from_secs(1));
    drop((a, b));
}

/// A generator lost mid-run: its shard is missing from the merged totals, but every interval
/// it sent before is in the timeline (counted in the sink's, and in the result's).
#[test]
fn a_lost_generators_intervals_received_stay_in_the_timeline() {
    let dir = ScratchDir::new("fleet-lost");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let (a, ga) = generator(&dir, "gen0");
    let (b, gb) = generator(&dir, "gen1");
    let fleet = Fleet::of(vec![ga, gb]);
    let spec = RunSpec {
        requests: None,
        duration: Some(Duration::from_secs(60)),
        ..spec(&server)
    };
    let path = dir.path().join("run.spill");
    let control = RunControl::new();
    let written = Arc::new(AtomicU64::new(0));
    control.stream_intervals_to(Box::new(Counted(
        SpillSink::new(path.clone()),
        written.clone(),
    )));
    let run = {
        let control = control.clone();
        std::thread::spawn(move || fleet.run(&spec, &control))
    };
    // Once both have sent a few intervals, gen1's agent goes; once gen1 is lost (3 s without
    // an answer) and gen0 has sent more, the run is stopped.
    let wait_for = |n: u64| {
        let end = Instant::now() + Duration::from_secs(120);
        while written.load(Ordering::Relaxed) < n {
            assert!(
                Instant::now() < end,
                "only {} intervals",
                written.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(5);
    drop(b);
    let lost_at = written.load(Ordering::Relaxed);
    wait_for(lost_at + 40);
    control.stop();
    let result = run.join().unwrap().unwrap();
    assert!(result.partial().is_some(), "{:?}", result.warnings);
    let report = control.stream_report().unwrap();
    assert_eq!(result.timeline.len() as u64, report.intervals_written);
    let in_timeline: u64 = result.timeline.iter().map(|i| i.completed).sum();
    let rebuilt = rebuild(&path, report.intervals_written, &result.timeline).unwrap();
    assert_eq!(
        rebuilt.timeline.iter().map(|i| i.completed).sum::<u64>(),
        in_timeline
    );
    // gen0's shard is the merged totals; what gen1 sent before it was lost is in the
    // timeline besides, and nothing there was not the server's.
    assert!(
        in_timeline > completed(&result),
        "{in_timeline} in the timeline, {} in gen0's shard",
        completed(&result)
    );
    assert!(in_timeline <= server.counters().requests());
    drop(a);
}
