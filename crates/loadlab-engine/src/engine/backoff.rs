//! Waiting after failed connects: 10 ms, doubling with each failure in a row, at most 1 s,
//! cut short by the run's end or a stop. Without it a refused port costs tens of thousands
//! of attempts a second, which starve the connections that work and fill the result with one
//! error.

use super::ThreadCtx;
use std::time::{Duration, Instant};

/// The first wait after a failed connect; it doubles with each failure in a row, up to
/// [`MAX_CONNECT_BACKOFF`].
pub(super) const FIRST_CONNECT_BACKOFF: Duration = Duration::from_millis(10);
pub(super) const MAX_CONNECT_BACKOFF: Duration = Duration::from_secs(1);

/// The wait after `failures` failed connects in a row; `None` after none.
pub(super) fn backoff_after(failures: u32) -> Option<Duration> {
    (failures > 0).then(|| {
        FIRST_CONNECT_BACKOFF
            .saturating_mul(1 << (failures - 1).min(16))
            .min(MAX_CONNECT_BACKOFF)
    })
}

/// Sleeps `wait`, but not past the run's end, and wakes at once on a stop.
pub(super) async fn back_off(ctx: &ThreadCtx, wait: Duration) {
    let until = ctx
        .deadline
        .map_or(Instant::now() + wait, |d| d.min(Instant::now() + wait));
    tokio::select! {
        biased;
        _ = ctx.stop.stopped() => {}
        _ = tokio::time::sleep_until(until.into()) => {}
    }
}
