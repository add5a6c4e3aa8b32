//! One worker thread, from its start to its report: see [`thread`].

use super::exchange::Dialer;
use super::gate::{Place, StartGate};
use super::stamped::StampClock;
use super::thread::{Plan, Shared};
use super::{busy_poll, closed, feed, h2, h3, open, pipeline, scenario, spawn_guarded, ThreadCtx};
use super::{ThreadProgress, ThreadReport};
use crate::stats::Recorder;
use crate::sys;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a worker thread does: gets ready (pinned, with its event loop, and for an open loop
/// its first connections), waits for the start, then drives its share of the load.
pub(super) fn thread(
    shared: Shared,
    plan: Plan,
    progress: Arc<ThreadProgress>,
    gate: &StartGate,
    feed: Option<Rc<feed::Feed>>,
) -> ThreadReport {
    let cpu_start = sys::thread_cpu_time();
    let wall_start = Instant::now();
    let place = Place::new(gate);
    if let Some(cpus) = &shared.generator_cpus {
        // Placement was checked when it was decided; a failure here leaves the thread where
        // it was rather than failing the run.
        let _ = sys::pin_current_thread(cpus);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .expect("a current-thread runtime only fails without an OS event queue");
    let local = tokio::task::LocalSet::new();
    let stamp_clock = shared.stamped.then(StampClock::new);
    // HTTP/2: the bytes the thread's connections cross, pre-opened ones included.
    let h2_wire = std::rc::Rc::new(super::h2::WireBytes::default());
    let preopened = match &plan.schedule {
        // A plain open loop, over HTTP/1.1 or HTTP/2; a scenario's iterations open their own.
        // HTTP/3 opens its connections as the run needs them.
        // A WebSocket run's open loop opens its own.
        Some(schedule)
            if shared.scenario.is_none() && shared.h3.is_none() && shared.ws.is_none() =>
        {
            let dialer = Dialer {
                address: shared.address,
                connect_timeout: shared.connect_timeout,
                tls: shared.tls.as_ref(),
                stamp_clock,
                progress: &progress,
            };
            let h2_streams = shared.h2.is_some().then_some(shared.streams);
            let opening = open::preopen(
                &dialer,
                schedule,
                plan.open_cap,
                h2_streams.map(|streams| (streams, h2_wire.clone())),
                &shared.control,
            );
            local.block_on(&runtime, opening)
        }
        _ => Vec::new(),
    };
    let recorder = ThreadCtx::recorder(&shared);
    let Some(times) = place.ready_and_wait() else {
        // The run did not start.
        return ThreadReport {
            recorder: Recorder::default(),
            crashed: false,
            cpu: sys::CpuTime::default(),
            wall: Duration::ZERO,
            spin_idle: Duration::ZERO,
            waited: None,
        };
    };
    let waited_before = sys::run_queue_wait();
    let (numbering, connections) = (plan.numbering, plan.connections);
    let ctx = ThreadCtx::new(
        shared,
        times,
        plan,
        progress,
        stamp_clock,
        recorder,
        h2_wire,
    );
    local.block_on(&runtime, async {
        if let Some(feed) = &feed {
            spawn_guarded(&ctx, feed::tick(ctx.clone(), feed.clone()));
        }
        spawn_guarded(&ctx, super::gone::watch(ctx.clone()));
        // `--ws-held`: connections held idle beside the echo load, open or closed loop.
        let held = super::ws::spawn_held(&ctx, numbering);
        if ctx.open.is_some() {
            let schedule = async {
                match &ctx.scenario {
                    Some(run) => scenario::open::run(ctx.clone(), run.clone(), numbering).await,
                    None if ctx.ws.is_some() => super::ws::open::run(ctx.clone()).await,
                    None => open::run(ctx.clone(), preopened, wall_start).await,
                }
            };
            tokio::select! {
                biased;
                _ = ctx.stop.stopped() => {}
                _ = schedule => {}
            }
            if !ctx.stop.is_stopped() {
                super::ws::held_closed(&held).await;
            }
            return;
        }
        if ctx.busy_poll {
            spawn_guarded(&ctx, busy_poll(ctx.clone()));
        }
        // Closed loop: connection k of this thread is number first + k * step overall (thread
        // + k * threads without shards), so that stages activate connections evenly across
        // threads and shards.
        let (first, step) = numbering;
        for k in 0..connections {
            if let Some(run) = &ctx.scenario {
                spawn_guarded(
                    &ctx,
                    scenario::drive(ctx.clone(), run.clone(), first + k * step),
                );
            } else if ctx.ws.is_some() {
                spawn_guarded(&ctx, super::ws::drive(ctx.clone(), first + k * step));
            } else if ctx.h3.is_some() {
                spawn_guarded(&ctx, h3::drive(ctx.clone()));
            } else if ctx.h2.is_some() {
                spawn_guarded(&ctx, h2::drive(ctx.clone()));
            } else if ctx.pipeline > 1 {
                spawn_guarded(&ctx, pipeline::drive(ctx.clone(), first + k * step));
            } else {
                spawn_guarded(&ctx, closed::drive(ctx.clone(), first + k * step));
            }
        }
        let deadline = async {
            match ctx.deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        let all_done = async {
            if ctx.live_connections.get() > 0 {
                ctx.all_done.notified().await;
            }
        };
        tokio::select! {
            biased;
            _ = ctx.stop.stopped() => {}
            _ = deadline => {}
            _ = all_done => {}
        }
        if ctx.ws.is_some() && !ctx.stop.is_stopped() {
            // WebSocket connections end with a close frame (code 1000) and the server's answer,
            // given a moment, so that servers see goodbyes, not dropped connections.
            let closed = async {
                if ctx.live_connections.get() > 0 {
                    ctx.all_done.notified().await;
                }
            };
            let _ = tokio::time::timeout(super::ws::CLOSE_GRACE, closed).await;
            super::ws::held_closed(&held).await;
        }
    });
    // Dropping the set abandons requests still in flight; the recorder counts them.
    drop(local);
    if let Some(h3) = &ctx.h3 {
        h3.close(&runtime);
    }
    drop(runtime);
    let mut recorder = ctx.recorder.take();
    if let Some(open) = &ctx.open {
        let (warm, measured) = open.unsent(recorder.in_flight, ctx.warmup_end, Instant::now());
        recorder.phase(crate::stats::Phase::Warmup).not_sent += warm;
        recorder.phase(crate::stats::Phase::Measured).not_sent += measured;
    }
    recorder.intervals.finish();
    if let Some(feed) = &feed {
        let ended = Some(ctx.start.elapsed());
        let busy = feed::busy(&ctx);
        let _ = feed
            .tx
            .send(feed.take(&mut recorder, usize::MAX, ended, busy));
    }
    ThreadReport {
        recorder,
        crashed: ctx.crashed.get(),
        cpu: sys::thread_cpu_time() - cpu_start,
        wall: wall_start.elapsed(),
        spin_idle: ctx.spin_idle.get(),
        waited: waited_before
            .zip(sys::run_queue_wait())
            .map(|(before, after)| after.saturating_sub(before)),
    }
}
