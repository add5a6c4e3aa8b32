//! Records a request's outcome: a success (its latency from when it was due, its status, its
//! bytes) or a failure (its class), in the phase's totals, on the timeline and in the live
//! progress counters. It does no I/O.

use super::super::ThreadCtx;
use super::{Due, Traffic};
use crate::error::ErrorClass;
use crate::stats::Phase;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Opens a connection (`open`: over TCP, TLS or QUIC) for a request of `phase`. A closed
/// loop's opening the run's end abandoned (a SYN, a TLS or QUIC handshake never answered,
/// within a --connect-timeout longer than the run) leaves the request it was opened for due
/// and never sent, and it is counted so: the one rule for every protocol. Without it such a
/// run was "0 of 0 issued", no verdict, exit 0. An open loop counts these itself
/// (`OpenState::unsent`: taken by a connection still connecting), so it is left out here.
pub(in crate::engine) async fn unsent_if_abandoned<T>(
    ctx: &ThreadCtx,
    phase: Phase,
    open: impl std::future::Future<Output = T>,
) -> T {
    let mut unfinished = Unfinished {
        ctx,
        phase,
        armed: true,
    };
    let opened = open.await;
    unfinished.armed = false;
    opened
}

/// See [`unsent_if_abandoned`]: armed while the opening is under way.
struct Unfinished<'a> {
    ctx: &'a ThreadCtx,
    phase: Phase,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if self.armed && self.ctx.open.is_none() {
            if let Ok(mut rec) = self.ctx.recorder.try_borrow_mut() {
                rec.phase(self.phase).not_sent += 1;
            }
        }
    }
}

/// A request is sent: one more issued in `phase`, and one more in flight, on the recorder
/// and in the thread's live count.
pub(in crate::engine) fn record_sent(ctx: &ThreadCtx, phase: Phase) {
    let mut rec = ctx.recorder.borrow_mut();
    rec.in_flight += 1;
    rec.phase(phase).issued += 1;
    ctx.progress
        .in_flight
        .store(rec.in_flight, Ordering::Relaxed);
}

/// A request sent is answered, failed or taken back: one fewer in flight.
pub(in crate::engine) fn settled(ctx: &ThreadCtx, rec: &mut crate::stats::Recorder) {
    rec.in_flight -= 1;
    ctx.progress
        .in_flight
        .store(rec.in_flight, Ordering::Relaxed);
}

pub(in crate::engine) fn record_success(
    ctx: &ThreadCtx,
    due: &Due,
    sent_at: Instant,
    status: u16,
    t: &Traffic,
) -> Instant {
    // A stamped connection's response ended when its last bytes arrived; it may have been
    // read up to a tick later. Never before the request was sent, whatever the clocks did.
    let end = t
        .last_rx
        .or(t.last_read)
        .map_or_else(Instant::now, |rx| rx.max(sent_at));
    let since_start = end - ctx.start;
    let mut rec = ctx.recorder.borrow_mut();
    settled(ctx, &mut rec);
    let intended = due.intended.unwrap_or(sent_at);
    // A send a batch took early counts from when it left (see `pacing`).
    let response_ns =
        (end - super::super::pacing::latency_origin(intended, sent_at)).as_nanos() as u64;
    rec.intervals.record(since_start, response_ns);
    if ctx.first_left.get() && ctx.take_first_slot() {
        rec.first.all.saturating_record(response_ns);
        if due.phase == crate::stats::Phase::Measured {
            rec.first.measured.saturating_record(response_ns);
        }
        rec.first.last_end = rec.first.last_end.max(since_start);
    }
    rec.last_end = rec.last_end.max(since_start);
    let bucket = rec.timeline.at(since_start);
    bucket.completed += 1;
    bucket.bytes_sent += t.sent - t.booked_sent;
    bucket.bytes_received += t.unbooked;
    let open_loop = due.intended.is_some();
    if open_loop {
        // The interval's share of the scheduler lag below: the generator's health per interval.
        bucket.noticed(due.noticed.saturating_duration_since(intended));
    }
    let stats = rec.phase(due.phase);
    stats.completed += 1;
    stats.status[status as usize % 1000] += 1;
    stats.latency.saturating_record(response_ns);
    if let Some(first) = t.first_byte {
        stats
            .ttfb
            .saturating_record((first - sent_at).as_nanos() as u64);
    }
    if open_loop {
        stats
            .service
            .saturating_record((end - sent_at).as_nanos() as u64);
        stats
            .send_lag
            .saturating_record(sent_at.saturating_duration_since(intended).as_nanos() as u64);
        stats
            .scheduler_lag
            .saturating_record(due.noticed.saturating_duration_since(intended).as_nanos() as u64);
    }
    stats.bytes_sent += t.sent - t.booked_sent;
    // What was not booked as it arrived (see `timed_out`).
    stats.bytes_received += t.unbooked;
    // Single writer: a plain store, no locked read-modify-write.
    let p = &ctx.progress.completed;
    p.store(p.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    end
}

/// Keeps the first message seen for a failure class.
pub(in crate::engine) fn note_detail(
    ctx: &ThreadCtx,
    phase: Phase,
    class: ErrorClass,
    detail: Option<String>,
) {
    if let Some(detail) = detail {
        let mut rec = ctx.recorder.borrow_mut();
        let slot = &mut rec.phase(phase).error_details[class as usize];
        if slot.is_none() {
            *slot = Some(detail);
        }
    }
}

/// `was_in_flight`: the request had been sent (a failed connect never was).
pub(in crate::engine) fn record_failure(
    ctx: &ThreadCtx,
    phase: Phase,
    class: ErrorClass,
    t: &Traffic,
    was_in_flight: bool,
) {
    let mut rec = ctx.recorder.borrow_mut();
    if was_in_flight {
        settled(ctx, &mut rec);
    } else {
        rec.phase(phase).issued += 1;
    }
    let since_start = ctx.start.elapsed();
    rec.last_end = rec.last_end.max(since_start);
    let bucket = rec.timeline.fail(since_start, class as u8);
    bucket.bytes_sent += t.sent - t.booked_sent;
    bucket.bytes_received += t.unbooked;
    let stats = rec.phase(phase);
    stats.failed += 1;
    stats.errors[class as usize] += 1;
    stats.bytes_sent += t.sent - t.booked_sent;
    // What was not booked as it arrived (see `timed_out`).
    stats.bytes_received += t.unbooked;
    // One writer per counter (this thread): a load and a store, not a locked add.
    for p in [
        &ctx.progress.failed,
        &ctx.progress.failed_by_class[class as usize],
    ] {
        p.store(p.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
}
