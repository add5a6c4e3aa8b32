//! Waiting after failed connects: 10 ms, doubling with each failure in a row, at most 100 ms,
//! cut short by the run's end or a stop. Without it a refused port costs tens of thousands
//! of attempts a second, which starve the connections that work and fill the result with one
//! error.

use super::ThreadCtx;
use std::time::{Duration, Instant};

/// The first wait after a failed connect; it doubles with each failure in a row, up to
/// [`MAX_CONNECT_BACKOFF`].
pub(super) const FIRST_CONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// Short enough that a run bounded by a request count whose every connect fails (a rejected
/// certificate) still ends in seconds; long enough that a refused port costs ten attempts a
/// second per connection, not thousands.
pub(super) const MAX_CONNECT_BACKOFF: Duration = Duration::from_millis(100);

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
