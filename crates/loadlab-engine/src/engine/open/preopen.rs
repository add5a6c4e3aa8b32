//! An open loop's first connections, opened before its clock starts (the engine's start waits
//! for them: see `gate`).
//!
//! Without them, the schedule's first requests all find no connection: each waits for one to
//! be opened (a few at a time, on the thread that should be sending), so the first
//! milliseconds of every run carry a send lag that is the generator's start-up, not the
//! target's. At 40,000/s on one machine that start-up alone put the send lag's p99 at 0.7 to
//! 3 ms in a 5 s run, where the same run after a second's warm-up had 0.05 to 0.3 ms
//! (docs/open-loop.md). oha and wrk2 open their connections before they start, too.
//!
//! How many: one for each request due within twice the first connection's opening time plus
//! a millisecond, the connections the first requests need if each response takes about a
//! round trip, with a margin for the thread's own hiccups. More are opened as the run needs
//! them, as before; fewer than needed only costs what the run costs today. Over HTTP/2 each
//! connection carries `--streams` of those requests at once, and its handshake is done too.

use super::super::exchange::{dial, Dialed, Dialer, Stream};
use super::super::RunControl;
use crate::engine::h2::WireBytes;
use crate::schedule::Schedule;
use bytes::Bytes;
use h2::client::SendRequest;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A connection opened before the start.
pub(crate) enum Opened {
    Http1(Stream),
    /// HTTP/2, its handshake done (its driver runs on the thread's task set).
    H2(SendRequest<Bytes>),
}

/// Opens one connection: over HTTP/2 (given where its bytes are counted), with its
/// handshake.
async fn open_one(dialer: &Dialer<'_>, h2: Option<Rc<WireBytes>>) -> Option<(Opened, Dialed)> {
    let (Some(dialed), Ok(stream)) = dial(dialer).await else {
        return None;
    };
    let Some(wire) = h2 else {
        return Some((Opened::Http1(stream), dialed));
    };
    let send = super::super::h2::handshake(stream, dialer.tls.is_some(), wire)
        .await
        .ok()?;
    Some((Opened::H2(send), dialed))
}

/// The most connections a thread opens before the start.
const MAX_PREOPEN: usize = 1024;

/// How many connections it opens at once.
const AT_ONCE: usize = 32;

/// Beyond twice the first connection's opening time, how far into the schedule the
/// connections opened before the start reach.
const MARGIN: Duration = Duration::from_millis(1);

/// How many connections to open before the start: one per request of `schedule` due within
/// `window` of it, at least one, at most `cap` (and [`MAX_PREOPEN`]).
pub(super) fn wanted(schedule: &Schedule, window: Duration, cap: usize) -> usize {
    let most = cap.clamp(1, MAX_PREOPEN);
    let mut schedule = schedule.clone();
    let mut due = 0;
    while due < most && schedule.next_offset().is_some_and(|at| at <= window) {
        due += 1;
    }
    due.max(1)
}

/// Opens the connections `schedule`'s first requests need (see the module's comment), while
/// connecting works, within `--connect-timeout` and until the run is stopped. A connection
/// that fails to open is not recorded: the requests that meet the same failure will be.
/// `h2`: over HTTP/2, the streams each connection carries, and where the thread counts its
/// connections' bytes.
pub(crate) async fn preopen(
    dialer: &Dialer<'_>,
    schedule: &Schedule,
    cap: usize,
    h2: Option<(usize, Rc<WireBytes>)>,
    stop: &RunControl,
) -> Vec<(Opened, Dialed)> {
    let began = Instant::now();
    let mut opened = Vec::new();
    let (h2_streams, wire) = (h2.as_ref().map(|h| h.0), h2.map(|h| h.1));
    let Some((first, dialed)) = open_one(dialer, wire.clone()).await else {
        return opened;
    };
    opened.push((first, dialed));
    let took = dialed.connect + dialed.tls.map_or(Duration::ZERO, |(t, _)| t);
    let requests = wanted(schedule, took * 2 + MARGIN, cap);
    let want = h2_streams.map_or(requests, |streams| requests.div_ceil(streams.max(1)));
    // The batch's tasks share one copy of the TLS settings.
    let tls = Rc::new(dialer.tls.cloned());
    while opened.len() < want && began.elapsed() < dialer.connect_timeout && !stop.is_stopped() {
        let mut batch = tokio::task::JoinSet::new();
        for _ in 0..(want - opened.len()).min(AT_ONCE) {
            let tls = tls.clone();
            let progress = dialer.progress.clone();
            let (address, connect_timeout, stamp_clock) =
                (dialer.address, dialer.connect_timeout, dialer.stamp_clock);
            let wire = wire.clone();
            batch.spawn_local(async move {
                let d = Dialer {
                    address,
                    connect_timeout,
                    tls: tls.as_ref().as_ref(),
                    stamp_clock,
                    progress: &progress,
                };
                open_one(&d, wire).await
            });
        }
        let mut failed = false;
        while let Some(done) = batch.join_next().await {
            match done {
                Ok(Some(one)) => opened.push(one),
                _ => failed = true,
            }
        }
        if failed {
            break;
        }
    }
    opened
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{Arrival, Profile};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn one_connection_per_request_due_in_the_window_at_least_one_at_most_the_cap() {
        // 10,000/s: a request every 100 µs, the first at 0.
        let at =
            |rate: f64| Schedule::new(&Profile::constant(rate, ms(1_000)), Arrival::Uniform, 0, 1);
        assert_eq!(
            wanted(&at(10_000.0), Duration::from_micros(1_050), 10_000),
            11
        );
        assert_eq!(wanted(&at(10_000.0), ms(1), 5), 5, "the cap");
        assert_eq!(wanted(&at(1_000_000.0), ms(10), 100_000), MAX_PREOPEN);
        // 2/s: one request due in the window, and at least one connection.
        assert_eq!(wanted(&at(2.0), ms(1), 10_000), 1);
        assert_eq!(wanted(&at(2.0), Duration::ZERO, 10_000), 1);
    }
}
