//! The closed loop: each connection sends its next request when the last one ends. With
//! `--stages ... --closed`, connection `i` (numbered across threads) works only while the
//! profile's level is above `i`, so the number of active connections follows the stages.

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
        if let Some(profile) = &ctx.closed_stages {
            // The warm-up runs at the first stage's level.
            let into = now.saturating_duration_since(ctx.warmup_end);
            if (index as f64) >= profile.level_at(into).floor() {
                conn.close();
                match profile.when_at_least((index + 1) as f64, into) {
                    Some(at) => tokio::time::sleep_until((ctx.warmup_end + at).into()).await,
                    None => break,
                }
                continue;
            }
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
