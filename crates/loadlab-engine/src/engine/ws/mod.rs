//! WebSocket connections (see [`crate::ws`] for the three loads): opened as HTTP/1.1 ones are
//! (`exchange::dial`: TCP, then TLS from the run's one TLS configuration), upgraded by
//! tungstenite's client handshake within `--connect-timeout` (or with `--http2`, each a
//! stream of an HTTP/2 connection: `h2`, RFC 8441), then driven here: `echo` a
//! message and its echo, `hold` a held connection and its pings, `storm` a handshake as the
//! exchange; `open` hands the open loop's due messages or handshakes to them.
//!
//! Every exchange is recorded as an HTTP request is (`exchange::record_*`): a success with
//! its latency (from when it was due in an open loop) and its connection's upgrade status
//! (101; over HTTP/2 the CONNECT's 2xx), a failure by class.
//! What has no HTTP counterpart (messages the server pushed, pongs, held connections and the
//! memory they took) is counted in [`crate::ws::WsTotals`], shared by the run's threads.
//!
//! It must not read a message it did not ask for as an answer: an echo is the message sent,
//! byte for byte, and anything else is a push.

mod deflate;
mod echo;
pub(super) mod h2;
mod hold;
mod io;
pub(super) mod open;
mod storm;
pub(super) mod upgrade;

use super::exchange::{back_off, backoff_after, note_detail, record_failure, Traffic};
use super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::ws::{classify, WsConfig, WsMode, WsTotals};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

pub(super) use io::WsIo;

/// One open WebSocket, the status it was opened with, and when the server last pushed on it
/// (the next push's gap is from then).
pub(super) struct Socket {
    ws: WebSocketStream<WsIo>,
    /// What its exchanges are counted under: 101, or over HTTP/2 its CONNECT's 2xx (200
    /// mostly), as the server answered.
    status: u16,
    last_push: Option<Instant>,
}

impl std::ops::Deref for Socket {
    type Target = WebSocketStream<WsIo>;
    fn deref(&self) -> &Self::Target {
        &self.ws
    }
}

impl std::ops::DerefMut for Socket {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.ws
    }
}

impl Socket {
    /// A message that answered nothing: counted as pushed, its gap from the last push on
    /// this connection kept.
    fn pushed(&mut self, ctx: &ThreadCtx, message: &tokio_tungstenite::tungstenite::Message) {
        let ws = ctx.ws.as_ref().expect("a WebSocket run");
        ws.totals.push(message.len(), &mut self.last_push);
    }
}

/// How long a thread waits, once the run is over, for its WebSockets to close cleanly.
pub(super) const CLOSE_GRACE: Duration = Duration::from_millis(300);

/// The status an HTTP/1.1 WebSocket's exchanges are counted under: its upgrade's.
const SWITCHING_PROTOCOLS: u16 = 101;

/// What every worker thread of a WebSocket run is given alike.
#[derive(Clone)]
pub(crate) struct WsShared {
    pub config: Arc<WsConfig>,
    /// `-H` header fields, sent with every upgrade.
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    pub totals: Arc<WsTotals>,
    /// The run's WebSockets (held ones: when this many are open, the memory is read): its
    /// connections, or over HTTP/2 its connections' streams.
    connections: usize,
    /// This run's share of `--ws-held` (a fleet's shard holds only its own).
    held_share: usize,
    /// A closed loop's handshakes in flight (held connections', echo connections'), at most
    /// `HANDSHAKES_AT_ONCE` over the run's threads. An open loop's are not held back: they
    /// open as messages fall due, and a wait would be charged to the message.
    handshakes: Arc<tokio::sync::Semaphore>,
    /// A run that holds connections allocates from one malloc arena while it lasts.
    _arena: Option<Arc<OneArena>>,
}

/// glibc's malloc while a run holds connections: one arena for every thread, as set by
/// `mallopt(M_ARENA_MAX, 1)` until the run's state is dropped. With an arena per thread,
/// the peak RSS of 2,000 to 4,000 held connections grew 15 to 20 KiB per connection (debug
/// build, three paired runs); with one, 7 to 9, the heap itself being about 7: the held
/// connections' long-lived buffers and each opening's short-lived ones, made and freed by
/// different threads' arenas, left most pages partly used. Held connections are idle, so
/// one arena costs no contention worth measuring.
struct OneArena;

impl OneArena {
    fn take() -> Option<Arc<OneArena>> {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: mallopt only sets a malloc parameter; 1 is a valid arena count.
            if unsafe { libc::mallopt(libc::M_ARENA_MAX, 1) } == 1 {
                return Some(Arc::new(OneArena));
            }
        }
        None
    }
}

impl Drop for OneArena {
    fn drop(&mut self) {
        // glibc's default: 8 arenas a CPU (0, "no limit", cannot be set back).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: as in `take`; a positive arena count.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, (cpus * 8).min(i32::MAX as usize) as i32);
        }
        let _ = cpus;
    }
}

impl WsShared {
    pub fn from_config(config: &crate::config::RunConfig) -> Option<WsShared> {
        let ws = config.ws.clone()?;
        let ws_held = ws.held;
        let per_connection = if ws.http2 { config.streams } else { 1 };
        let holds = ws.mode == WsMode::Hold || ws_held > 0;
        let headers = config
            .headers
            .iter()
            .filter_map(|(n, v)| {
                Some((
                    http::HeaderName::try_from(n.as_str()).ok()?,
                    http::HeaderValue::try_from(v.as_str()).ok()?,
                ))
            })
            .collect();
        Some(WsShared {
            config: ws,
            headers,
            totals: Arc::new(totals(config)),
            connections: config.connections * per_connection,
            held_share: held_share(config, ws_held),
            _arena: holds.then(OneArena::take).flatten(),
            handshakes: Arc::new(tokio::sync::Semaphore::new(crate::ws::HANDSHAKES_AT_ONCE)),
        })
    }

    fn tungstenite_config(&self, reads: Reads) -> WebSocketConfig {
        let c = &self.config;
        // tungstenite allocates (and zero-fills) the read buffer per connection: an echo's
        // holds its message in one read; an idle one's few bytes (a pong, a close, a small
        // push) need no more than `IDLE_READ_BYTES`, and tens of thousands are held.
        let read = match (reads, c.mode) {
            (Reads::Echoes, WsMode::Echo) => (c.payload.len() + 16).clamp(4096, 64 << 10),
            _ => IDLE_READ_BYTES,
        };
        WebSocketConfig::default()
            .read_buffer_size(read)
            .max_message_size(Some(c.max_message_bytes))
            .max_frame_size(Some(c.max_message_bytes))
    }
}

/// The read buffer of a connection that only waits: held idle, or closed once opened. A
/// larger message is still read whole, in reads of this size.
const IDLE_READ_BYTES: usize = 512;

/// What a connection will read: echoes of the run's message, or next to nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reads {
    Echoes,
    Idle,
}

/// The run's totals, told the connect rate asked of it: a shard opens its connections'
/// numbers of the whole run's schedule, so its share of the rate is one shard's.
fn totals(config: &crate::config::RunConfig) -> WsTotals {
    let totals = WsTotals::default();
    if let Some(rate) = config.ws.as_ref().and_then(|w| w.connect_rate) {
        let shards = config.shard.as_ref().map_or(1, |p| p.shard.count);
        totals.ramp.asked(rate / f64::from(shards.max(1)), rate);
    }
    totals
}

/// How many of `held` connections this run's threads hold: connection `i` is the thread's
/// whose slot is `i` modulo the slots (see `spawn_held`), the slots running across shards.
fn held_share(config: &crate::config::RunConfig, held: usize) -> usize {
    let threads = config.threads.max(1);
    (0..threads)
        .map(|thread| {
            let (slot, slots) = config
                .shard
                .as_ref()
                .map_or((thread, threads), |p| p.shard.slot(thread, threads));
            if slot >= held {
                0
            } else {
                (held - slot - 1) / slots.max(1) + 1
            }
        })
        .sum()
}

/// Why a connection could not be opened and upgraded.
pub(super) struct OpenFailed {
    pub class: ErrorClass,
    pub detail: Option<String>,
    /// A refused upgrade's HTTP status.
    pub status: Option<u16>,
}

/// Opens a connection and upgrades it, within `--connect-timeout` for both; the TCP connect
/// (and TLS handshake) go in `phase`'s connect figures as an HTTP connection's do. The
/// opening is boxed: its state (dial, TLS, handshake: kilobytes) lives only while it runs,
/// not for as long as the task that holds the connection afterwards.
pub(super) async fn open_socket(
    ctx: &ThreadCtx,
    phase: Phase,
    reads: Reads,
) -> Result<Socket, OpenFailed> {
    Box::pin(open(ctx, phase, reads)).await
}

async fn open(ctx: &ThreadCtx, phase: Phase, reads: Reads) -> Result<Socket, OpenFailed> {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let mut request = match ws.config.uri.as_str().into_client_request() {
        Ok(r) => r,
        Err(e) => {
            let (class, detail, status) = classify(&e);
            return Err(OpenFailed {
                class,
                detail,
                status,
            });
        }
    };
    for (name, value) in &ws.headers {
        request.headers_mut().append(name.clone(), value.clone());
    }
    let config = ws.tungstenite_config(reads);
    let (ws, status) = if ws.config.http2 {
        h2::open(ctx, phase, &ws.config.uri, &ws.headers, config).await?
    } else {
        let ws = upgrade::upgrade(ctx, phase, request, config).await?;
        (ws, SWITCHING_PROTOCOLS)
    };
    Ok(Socket {
        ws,
        status,
        last_push: None,
    })
}

/// Records an exchange that could not start because its connection could not be opened:
/// one issued and failed, its class's detail kept, a refused upgrade's status counted.
pub(super) fn record_open_failure(ctx: &ThreadCtx, phase: Phase, failed: OpenFailed) {
    record_failure(ctx, phase, failed.class, &Traffic::default(), false);
    note_detail(ctx, phase, failed.class, failed.detail);
    if let Some(status) = failed.status {
        let mut rec = ctx.recorder.borrow_mut();
        rec.phase(phase).status[status as usize % 1000] += 1;
    }
}

/// What one exchange moved, for the byte counts (payloads, not frame headers).
fn traffic(sent: usize, received: usize, end: Instant) -> Traffic {
    Traffic {
        sent: sent as u64,
        received: received as u64,
        unbooked: received as u64,
        last_read: Some(end),
        ..Traffic::default()
    }
}

/// The resident memory of this process, in bytes (`/proc/self/statm`'s second field).
pub(crate) fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Drives closed-loop connection number `index` (global, across threads) until the run ends:
/// one WebSocket, or over HTTP/2 `--streams` of them (numbered on from `index * streams`).
pub(super) async fn drive(ctx: Rc<ThreadCtx>, index: usize) {
    let config = &ctx.ws.as_ref().expect("a WebSocket run").config;
    let (mode, streams) = (config.mode, if config.http2 { ctx.streams } else { 1 });
    let one = |index| {
        let ctx = &ctx;
        async move {
            match mode {
                WsMode::Echo => echo::drive(ctx).await,
                WsMode::Hold => hold::drive(ctx, index, hold::Role::Pinged).await,
                WsMode::Connect => {
                    storm::drive(ctx).await;
                    load_over(ctx);
                }
            }
        }
    };
    futures_util::future::join_all((0..streams).map(|j| one(index * streams + j))).await;
    let live = ctx.live_connections.get() - 1;
    ctx.live_connections.set(live);
    if live == 0 {
        ctx.all_done.notify_one();
    }
}

/// The connections `--ws-held` holds beside an echo load, on one thread.
#[derive(Default)]
pub(super) struct HeldBeside {
    live: std::cell::Cell<usize>,
    done: tokio::sync::Notify,
}

/// Starts this thread's share of `--ws-held`'s connections (numbers `first`, `first + step`,
/// ... below the count: shared evenly by threads and shards), held until the run ends.
pub(super) fn spawn_held(ctx: &Rc<ThreadCtx>, (first, step): (usize, usize)) -> Rc<HeldBeside> {
    let group = Rc::new(HeldBeside::default());
    let count = ctx.ws.as_ref().map_or(0, |w| w.config.held);
    for index in (first..count).step_by(step.max(1)) {
        group.live.set(group.live.get() + 1);
        let (ctx2, group) = (ctx.clone(), group.clone());
        super::spawn_guarded(ctx, async move {
            hold::drive(&ctx2, index, hold::Role::Beside).await;
            group.live.set(group.live.get() - 1);
            if group.live.get() == 0 {
                group.done.notify_one();
            }
        });
    }
    group
}

/// Once the load has ended: waits a little for the held connections' goodbyes.
pub(super) async fn held_closed(group: &HeldBeside) {
    if group.live.get() > 0 {
        let _ = tokio::time::timeout(CLOSE_GRACE, group.done.notified()).await;
    }
}

/// After `failures` failed opens in a row: the wait before the next.
async fn after_failures(ctx: &ThreadCtx, failures: u32) {
    if let Some(wait) = backoff_after(failures) {
        back_off(ctx, wait).await;
    }
}

/// This connection's load is over (its goodbye comes next): the load's time, which the
/// pushes' rate is over, ends at the last connection's (see [`crate::ws::WsTotals`]).
fn load_over(ctx: &ThreadCtx) {
    let ws = ctx.ws.as_ref().expect("a WebSocket run");
    let at = u64::try_from(ctx.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    ws.totals
        .load_over_ns
        .fetch_max(at, std::sync::atomic::Ordering::Relaxed);
}

/// Says goodbye (close code 1000) and waits a little for the server's close in answer, so
/// that neither side resets the connection: a run that ends leaves no half-open WebSockets
/// behind it for the server to time out, nor a reset its counters would blame on it.
async fn close(mut socket: Socket) {
    upgrade::goodbye(&mut socket.ws).await;
}
