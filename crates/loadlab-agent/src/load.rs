//! The generator role (`loadlab agent --generator`): one shard of a coordinator's load, run
//! by the engine on this host from an agreed instant, its finished intervals kept for the
//! coordinator to read as they come (`/v1/loads/{id}/intervals`, long-polled), then its
//! result. One load at a time; a lease stops it when the coordinator stops asking.
//!
//! Memory stays flat however long the load: a read `after=N` acknowledges the first N
//! intervals, which are dropped (the coordinator has them; a read repeated with the same N,
//! after a lost answer, still finds what followed them), and the result goes back without a
//! timeline, since every interval of it has already travelled. What is held is what finished
//! since the last read, and at most a lease's worth when the coordinator stops reading (the
//! lease then stops the load and frees it).
//!
//! It must not read files a client names (the load carries every file's contents) nor
//! print; the engine runs on a thread of its own, never on the agent's runtime.

use crate::protocol::load::{LoadBatch, LoadStarted, StartLoad};
use crate::protocol::Busy;
use crate::reply::{json, Refusal, Reply};
use crate::session::lock;
use crate::state::State;
use hyper::StatusCode;
use loadlab_engine::collector::IntervalSink;
use loadlab_engine::RunControl;
use loadlab_machine::counters;
use loadlab_machine::netns::Scope;
use loadlab_result::{IntervalSummary, RunResult};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest a load may wait for its start: the coordinator asks for a second or so.
const MAX_START_AHEAD: Duration = Duration::from_secs(60);

/// A load's threads per CPU of this host, at most.
pub(crate) const MAX_THREADS_PER_CPU: usize = 4;

pub(crate) const NO_GENERATOR: &str = "this agent was started without --generator: it does \
    not send load; start it with --generator on a host meant to generate load";

/// What a load has produced so far.
#[derive(Default)]
pub(crate) struct Produced {
    header: Option<RunResult>,
    /// The finished intervals the coordinator has not acknowledged yet, oldest first.
    intervals: VecDeque<IntervalSummary>,
    /// How many intervals were acknowledged and dropped: the absolute index of
    /// `intervals[0]`, so that `after` keeps counting from the load's first interval.
    acknowledged: u64,
    done: bool,
    result: Option<RunResult>,
    error: Option<String>,
}

/// A load being sent.
pub(crate) struct LoadRun {
    pub id: String,
    pub busy: Busy,
    pub lease: Duration,
    renewed: Mutex<Instant>,
    control: RunControl,
    produced: Arc<Mutex<Produced>>,
    changed: Arc<tokio::sync::Notify>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl LoadRun {
    pub fn renew(&self) {
        *lock(&self.renewed) = Instant::now();
    }

    pub fn expired(&self, now: Instant) -> bool {
        crate::session::lease_expired(*lock(&self.renewed), self.lease, now)
    }

    pub fn stop(&self) {
        self.control.stop();
    }

    /// Stops the load and waits for its thread (blocking).
    pub fn close(&self) {
        self.control.stop();
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }

    pub fn done(&self) -> bool {
        lock(&self.produced).done
    }

    /// The 409 for another coordinator's load while this one holds the slot: running, or
    /// ended with its result kept for its coordinator until it closes the load (after
    /// reading it, a read whose answer was lost can be repeated) or its lease runs out.
    pub fn refuse_another(&self) -> Result<(), Refusal> {
        let why = if self.done() {
            "has ended, and its result is kept until its coordinator closes it or its lease \
             runs out"
        } else {
            "is being sent"
        };
        Err(Refusal {
            busy: Some(Box::new(self.busy.clone())),
            ..Refusal::new(
                StatusCode::CONFLICT,
                format!(
                    "busy: the load for run {} from host {} {why}; this agent sends one load at \
                     a time",
                    self.busy.run.as_deref().unwrap_or("(unnamed)"),
                    self.busy.client
                ),
            )
        })
    }
}

/// Before a load's body is read (up to 16 MiB): the role, the load slot, and one body read
/// at a time. The permit is held while the body is read; a request refused here is refused
/// without reading a byte of its body.
pub(crate) fn admit(state: &State) -> Result<tokio::sync::OwnedSemaphorePermit, Refusal> {
    if !state.config.generator {
        return Err(Refusal::new(StatusCode::FORBIDDEN, NO_GENERATOR));
    }
    if let Some(held) = lock(&state.load).as_ref() {
        held.refuse_another()?;
    }
    state.load_body.clone().try_acquire_owned().map_err(|_| {
        Refusal::new(
            StatusCode::CONFLICT,
            "busy: another load's request is being received; this agent sends one load at a \
             time",
        )
    })
}

/// Hands the engine's finished intervals to the coordinator's reader.
struct Keep {
    produced: Arc<Mutex<Produced>>,
    changed: Arc<tokio::sync::Notify>,
}

impl IntervalSink for Keep {
    fn start(&mut self, header: &RunResult) -> Result<(), String> {
        lock(&self.produced).header = Some(header.clone());
        self.changed.notify_waiters();
        Ok(())
    }

    fn interval(&mut self, interval: &IntervalSummary) -> Result<(), String> {
        lock(&self.produced).intervals.push_back(interval.clone());
        self.changed.notify_waiters();
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// This host's UDP counters since `before` in the shard's result (`kernel`, UDP's alone:
/// its TCP counters are other traffic's). Datagrams the kernel dropped for a full receive
/// buffer are said, naming this host (a fleet's merge keeps every generator's words), and
/// take the blame for falling behind off the target, as the session does for one generator.
fn udp_counters(result: &mut RunResult, before: &counters::Snapshot) {
    let after = counters::snapshot(&[Scope::Own], None);
    let Some(k) = counters::delta(before, &after, counters::describe(&[Scope::Own]), None) else {
        return;
    };
    let host = crate::host::hostname();
    counters::spare_the_target_for_udp_drops(&mut result.verdicts, &k, Some(&host));
    let found = counters::udp_findings(&k);
    result.warnings.extend(
        found
            .warnings
            .into_iter()
            .map(|w| format!("on {host}: {w}")),
    );
    result.kernel = Some(k);
}

/// `POST /v1/loads`: checks the load, takes the load slot, and starts the engine's thread,
/// which waits for the agreed instant.
pub(crate) fn start(
    state: &State,
    start: StartLoad,
    lease_default: Duration,
) -> Result<Reply, Refusal> {
    if !state.config.generator {
        return Err(Refusal::new(StatusCode::FORBIDDEN, NO_GENERATOR));
    }
    crate::names::check_name("client", &start.client)?;
    if let Some(run) = &start.run {
        crate::names::check_name("run", run)?;
    }
    let mut spec = start
        .load
        .to_spec()
        .map_err(|e| Refusal::field("load", e))?;
    // The engine gets ready (threads, connections), then waits for this instant on this
    // host's clock: the coordinator's agreed instant plus this host's offset.
    spec.start_at = u64::try_from(start.start_at_ns)
        .ok()
        .map(|ns| std::time::UNIX_EPOCH + Duration::from_nanos(ns));
    let cpus = crate::host::cpus().max(1);
    if let Some(threads) = spec.threads.filter(|t| *t > MAX_THREADS_PER_CPU * cpus) {
        return Err(Refusal::field(
            "load.threads",
            format!(
                "threads {threads} is more than {MAX_THREADS_PER_CPU} per CPU of this host \
                 ({cpus} CPUs, so at most {}): more threads than cores only contend; give \
                 fewer, or leave it out for one per core",
                MAX_THREADS_PER_CPU * cpus
            ),
        ));
    }
    let config = spec
        .validate()
        .map_err(|e| Refusal::field("load", e.to_string()))?;
    let clock = state.config.clock;
    let wait_ns = start.start_at_ns.saturating_sub(clock.now_ns());
    if wait_ns > MAX_START_AHEAD.as_nanos() as i64 {
        return Err(Refusal::field(
            "start_at_ns",
            format!(
                "the start is {:.1} s away, more than {} s: the coordinator's clock and this \
                 agent's disagree, or the start is a mistake",
                wait_ns as f64 / 1e9,
                MAX_START_AHEAD.as_secs()
            ),
        ));
    }
    let lease = match start.lease_ms {
        None => lease_default,
        Some(ms) if (100..=600_000).contains(&ms) => Duration::from_millis(ms),
        Some(ms) => {
            return Err(Refusal::field(
                "lease_ms",
                format!("lease_ms {ms} must be between 100 and 600000"),
            ))
        }
    };
    let mut slot = lock(&state.load);
    if let Some(held) = slot.as_ref() {
        held.refuse_another()?;
    }
    // 128 random bits: with the token, the id is what lets a coordinator read its result.
    let id = crate::state_dir::random_hex(16);
    let control = RunControl::new();
    let produced: Arc<Mutex<Produced>> = Arc::default();
    let changed: Arc<tokio::sync::Notify> = Arc::default();
    control.stream_intervals_to(Box::new(Keep {
        produced: produced.clone(),
        changed: changed.clone(),
    }));
    let thread = {
        let (control, produced, changed) = (control.clone(), produced.clone(), changed.clone());
        let (start_at_ns, agreed_ns) = (start.start_at_ns, start.agreed_start_ns);
        std::thread::Builder::new()
            .name("loadlab-load".into())
            .spawn(move || {
                // This host's link over the run: a saturated link was the load's limit.
                let mut nics = None;
                // The engine waits for the instant itself; the link is read from just before
                // (a second or so early: the idle bytes are few).
                let ahead =
                    Duration::from_nanos(start_at_ns.saturating_sub(clock.now_ns()).max(0) as u64);
                // Over QUIC, this host's UDP counters over the shard: datagrams its kernel
                // dropped are this generator's loss, not the server's.
                let mut udp = None;
                // This generator's own connections: the path's figures (docs/path.md).
                let mut path = None;
                let outcome = (!control.is_stopped()).then(|| {
                    nics = Some((loadlab_machine::nic::snapshot(), Instant::now() + ahead));
                    if config.http3 {
                        udp = Some(counters::snapshot(&[Scope::Own], None));
                    }
                    let watch = loadlab_machine::path::PathWatch::for_run(&config, &control);
                    let outcome = loadlab_engine::run(&config, &control);
                    path = watch.map(loadlab_machine::path::PathWatch::finish);
                    outcome
                });
                let link = nics.and_then(|(before, at)| {
                    loadlab_machine::nic::busiest(
                        &before,
                        &loadlab_machine::nic::snapshot(),
                        at.elapsed(),
                        loadlab_machine::nic::limit_of,
                    )
                });
                let mut p = lock(&produced);
                match outcome {
                    Some(Ok(outcome)) => {
                        let mut result = loadlab_engine::summarize(&config, &outcome);
                        if let Some(verdict) = link.as_ref().and_then(saturated) {
                            result.verdicts.push(verdict);
                        }
                        result.generator.link = link;
                        if let Some(before) = &udp {
                            udp_counters(&mut result, before);
                        }
                        agreed_start(&mut result, &config, start_at_ns, agreed_ns);
                        if let Some(windows) = &path {
                            let report = loadlab_result::path::PathReport::of(
                                "generator",
                                loadlab_machine::path::transport(&config),
                                windows,
                                &result,
                            );
                            result.path.push(report);
                        }
                        without_timeline(&mut result);
                        p.result = Some(result);
                    }
                    Some(Err(e)) => p.error = Some(e.to_string()),
                    None => p.error = Some("stopped before its start".into()),
                }
                p.done = true;
                drop(p);
                changed.notify_waiters();
            })
            .map_err(|e| Refusal::internal(format!("cannot start the load's thread: {e}")))?
    };
    let run = Arc::new(LoadRun {
        id: id.clone(),
        busy: Busy {
            session: id.clone(),
            client: start.client,
            run: start.run,
            since_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64(),
        },
        lease,
        renewed: Mutex::new(Instant::now()),
        control,
        produced,
        changed,
        thread: Mutex::new(Some(thread)),
    });
    if let Some(old) = slot.replace(run) {
        old.close();
    }
    Ok(json(
        StatusCode::CREATED,
        &LoadStarted {
            load: id,
            lease_ms: lease.as_millis() as u64,
        },
    ))
}

/// The shard's result as it travels: no timeline (each interval went to the coordinator as
/// it finished, and it merges them itself), its own part summary kept instead, since that is
/// the one figure the merge takes from a shard's timeline (its offered rate). With a sink
/// the engine's timeline holds counts only, so this summary is what it would have given.
fn without_timeline(result: &mut RunResult) {
    if let Ok(alone) = loadlab_result::merge(std::slice::from_ref(result)) {
        result.parts = alone.parts;
    }
    result.timeline = Vec::new();
}

/// Records the coordinator's agreed instant as the shard's start, and its real start on the
/// coordinator's clock: this host waited for `start_at_ns` (the agreed `agreed_ns` plus its
/// clock's offset), so every shard of the run records the same start and plan, and their
/// start spread is measured on one clock.
fn agreed_start(
    result: &mut RunResult,
    config: &loadlab_engine::RunConfig,
    start_at_ns: i64,
    agreed_ns: i64,
) {
    let (Some(info), Some(plan)) = (result.shard.as_mut(), config.shard.as_ref()) else {
        return;
    };
    let Ok(agreed) = u64::try_from(agreed_ns) else {
        return;
    };
    let agreed = std::time::UNIX_EPOCH + Duration::from_nanos(agreed);
    let mut plan = plan.clone();
    plan.start_at = Some(agreed);
    info.plan_id = loadlab_engine::shard::plan_id(config, &plan);
    info.start_at = Some(humantime_rfc3339(agreed));
    info.start_at_unix_s = Some(agreed_ns as f64 / 1e9);
    let offset_s = (start_at_ns - agreed_ns) as f64 / 1e9;
    info.started_unix_s -= offset_s;
    if let Some(started) =
        std::time::UNIX_EPOCH.checked_add(Duration::from_secs_f64(info.started_unix_s.max(0.0)))
    {
        info.started_wall = humantime_rfc3339(started);
    }
}

/// RFC 3339 with microseconds, as the engine writes shard times.
fn humantime_rfc3339(t: std::time::SystemTime) -> String {
    loadlab_engine::shard::format_rfc3339_micros(t)
}

/// The verdict for a saturated link, in words.
fn saturated(link: &loadlab_result::LinkUse) -> Option<String> {
    let limit = link.limit_bits_per_s.filter(|_| link.saturated)?;
    Some(format!(
        "the generator's link was saturated: {} carried {:.1} Mbit/s received and {:.1} Mbit/s \
         sent, of the {:.1} Mbit/s it can carry ({}): the load this generator offered was \
         capped by its link, not by the server",
        link.interface,
        link.received_bits_per_s / 1e6,
        link.sent_bits_per_s / 1e6,
        limit / 1e6,
        link.limit_source.as_deref().unwrap_or("its limit")
    ))
}

/// The load named `id`.
pub(crate) fn find(state: &State, id: &str) -> Result<Arc<LoadRun>, Refusal> {
    match lock(&state.load).as_ref() {
        Some(run) if run.id == id => Ok(run.clone()),
        _ => Err(Refusal::new(
            StatusCode::NOT_FOUND,
            format!("no load {id} on this agent: it was closed or its lease ran out"),
        )),
    }
}

/// `GET /v1/loads/{id}/intervals?after=N&wait_ms=M`: acknowledges the first N intervals
/// (dropped: the coordinator has them) and waits up to `wait` for something after them.
/// Intervals from N on stay until a later read acknowledges them, so a read repeated with
/// the same N (its answer lost) gets the same intervals. N below what an earlier read
/// acknowledged is refused: those intervals are gone.
pub(crate) async fn batch(
    run: Arc<LoadRun>,
    after: u64,
    wait: Duration,
) -> Result<LoadBatch, Refusal> {
    run.renew();
    acknowledge(&mut lock(&run.produced), after)?;
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let notified = run.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let p = lock(&run.produced);
            let produced = p.acknowledged + p.intervals.len() as u64;
            if produced > after || p.done || tokio::time::Instant::now() >= deadline {
                run.renew();
                let from = after.min(produced);
                return Ok(LoadBatch {
                    header: if after == 0 { p.header.clone() } else { None },
                    intervals: p
                        .intervals
                        .iter()
                        .skip((from - p.acknowledged) as usize)
                        .cloned()
                        .collect(),
                    after: from,
                    held: p.intervals.len() as u64,
                    done: p.done,
                    result: p.result.clone(),
                    error: p.error.clone(),
                });
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// Drops the intervals before `after` (never one not yet produced), or refuses an `after`
/// below what was already dropped.
fn acknowledge(p: &mut Produced, after: u64) -> Result<(), Refusal> {
    if after < p.acknowledged {
        return Err(Refusal::new(
            StatusCode::GONE,
            format!(
                "after={after}: the first {0} intervals were acknowledged by an earlier read \
                 and are no longer held; ask with after={0} or more",
                p.acknowledged
            ),
        ));
    }
    let drop = (after - p.acknowledged).min(p.intervals.len() as u64);
    p.intervals.drain(..drop as usize);
    p.acknowledged += drop;
    Ok(())
}
