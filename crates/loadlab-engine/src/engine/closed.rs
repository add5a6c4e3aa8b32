//! The closed loop: each connection sends its next request when the last one ends. With
//! `--stages ... --closed`, connection `i` (numbered across threads) works only while the
//! profile's level is above `i`, so the number of active connections follows the stages
//! ([`resting`], which a pipelined connection slot follows too).

use super::exchange::Conn;
use super::ThreadCtx;
use std::rc::Rc;
use std::time::Instant;

/// Drives connection number `index` (global, across threads) until the run ends.
pub(super) async fn drive(ctx: Rc<ThreadCtx>, index: usize) {
    let mut conn = Conn::new(&ctx);
    loop {
        let now = Instant::now();
        if ctx.over(now) {
            break;
        }
        if let Some(until) = resting(&ctx, index, now) {
            conn.close();
            match until {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => break,
            }
            continue;
        }
        let Some(due) = ctx.due_now(now) else {
            break;
        };
        conn.request(&ctx, due).await;
        if let Some(wait) = conn.backoff() {
            super::exchange::back_off(&ctx, wait).await;
        }
    }
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

/// With `--stages ... --closed`: `None` while connection `index` (global) works at `now`;
/// else it rests, holding no connection, until the moment given (`None`: for the rest of the
/// run). The warm-up runs at the first stage's level.
pub(super) fn resting(ctx: &ThreadCtx, index: usize, now: Instant) -> Option<Option<Instant>> {
    let profile = ctx.closed_stages.as_ref()?;
    let into = now.saturating_duration_since(ctx.warmup_end);
    if (index as f64) < profile.level_at(into).floor() {
        return None;
    }
    Some(
        profile
            .when_at_least((index + 1) as f64, into)
            .map(|at| ctx.warmup_end + at),
    )
}
