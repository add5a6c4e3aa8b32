//! WebSocket runs (RFC 6455, `ws://` and `wss://`; with `--http2`, over HTTP/2 by RFC 8441):
//! what a user asks for ([`WsSpec`]), the checked form ([`WsConfig`]), and how tungstenite's
//! errors and a server's close frames become failure classes. The driving is `engine::ws`'s;
//! this module does no I/O.
//!
//! Three loads, by [`WsMode`]:
//! - `echo`: each connection sends a message and waits for its echo (closed loop), or
//!   messages go out on the open loop's schedule, each timed from when it was due; a message
//!   from the server that is not the echo of the one owed is counted as pushed;
//! - `hold`: connections opened and held idle for the run, pinged every `--ws-ping`; each
//!   answered ping is a completed exchange timed ping to pong;
//! - `connect`: connection storms: each exchange is a handshake (TCP, TLS, upgrade), timed
//!   from when it was due, then a clean close.
//!
//! Each upgrade offers permessage-deflate (RFC 7692), as browsers do, unless
//! `--ws-no-deflate`: tungstenite has no such extension, so `engine::ws::deflate` deflates
//! and inflates beneath it; [`deflate`] counts what it saved.

pub mod deflate;
pub mod ramp;

use crate::error::ErrorClass;
use hdrhistogram::Histogram;
use loadlab_result::format::shown;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tokio_tungstenite::tungstenite::error::{CapacityError, ProtocolError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Error as WsError;

/// The largest message loadlab accepts from a server when the payload sent is smaller: a
/// frame announcing more (up to 2^63 bytes) or endless fragments fail as a protocol error,
/// never an allocation of that size.
pub const MAX_MESSAGE_BYTES: usize = 16 << 20;

/// Payload when none is given (`--body`/`--body-file`): this many bytes unless `--ws-size`.
pub const DEFAULT_SIZE: usize = 16;

/// How often a held connection pings when `--ws-ping` is not given.
pub const DEFAULT_PING: Duration = Duration::from_secs(10);

/// What each WebSocket connection does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WsMode {
    /// Messages and their echoes.
    #[default]
    Echo,
    /// Connections held open and idle, pinged.
    Hold,
    /// Handshakes: connection storms.
    Connect,
}

impl WsMode {
    pub fn name(self) -> &'static str {
        match self {
            WsMode::Echo => "echo",
            WsMode::Hold => "hold",
            WsMode::Connect => "connect",
        }
    }
}

/// The WebSocket settings as typed (used only with a `ws://` or `wss://` URL).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WsSpec {
    pub mode: WsMode,
    /// Send binary messages (text by default, which must then be UTF-8).
    pub binary: bool,
    /// `--ws-size`: a message of this many bytes when no body is given.
    pub size: Option<usize>,
    /// `--ws-ping`: how often a held connection pings.
    pub ping: Option<Duration>,
    /// `--ws-held`: echo runs also open this many connections and hold them idle beside the
    /// echo load (not pinged, not timed; one refused or broken fails as an exchange), so the
    /// echoes' times say what that many held connections cost the server.
    pub held: Option<usize>,
    /// `--ws-connect-rate`: held connections (hold's `-c`, or `--ws-held`'s) open at this
    /// many a second over the whole run, each due `i / rate` after the start.
    pub connect_rate: Option<f64>,
    /// `--ws-no-deflate`: the upgrades do not offer permessage-deflate.
    pub no_deflate: bool,
}

/// A checked WebSocket run.
#[derive(Debug, Clone)]
pub struct WsConfig {
    pub mode: WsMode,
    pub binary: bool,
    /// The message each send carries (echo mode).
    pub payload: bytes::Bytes,
    /// Held connections ping this often.
    pub ping: Duration,
    /// Echo: connections held idle beside the echo load (`--ws-held`), 0 for none.
    pub held: usize,
    /// Held connections open at this many a second (`--ws-connect-rate`), over the whole
    /// run; `None`: as fast as [`HANDSHAKES_AT_ONCE`] in flight allow.
    pub connect_rate: Option<f64>,
    /// The handshake's URI (`ws://` or `wss://`, host, port, path and query).
    pub uri: String,
    /// The largest message accepted from the server (inflated, when compressed).
    pub max_message_bytes: usize,
    /// Each upgrade offers permessage-deflate (not `--ws-no-deflate`).
    pub deflate: bool,
    /// `--http2`: each WebSocket a stream of an HTTP/2 connection (RFC 8441's extended
    /// CONNECT), `--streams` of them a connection.
    pub http2: bool,
}

impl WsConfig {
    /// The message as tungstenite sends it.
    pub fn message(&self) -> tokio_tungstenite::tungstenite::Message {
        use tokio_tungstenite::tungstenite::Message;
        if self.binary {
            Message::Binary(self.payload.clone())
        } else {
            // Checked to be UTF-8 when the config was made.
            match tokio_tungstenite::tungstenite::Utf8Bytes::try_from(self.payload.clone()) {
                Ok(text) => Message::Text(text),
                Err(_) => Message::Binary(self.payload.clone()),
            }
        }
    }
}

/// A failure of one exchange: its class and what to show of it.
pub type Failure = (ErrorClass, Option<String>);

/// A tungstenite error as the failure of the exchange it ended (as [`classify`] classes it).
pub(crate) fn failure(e: &WsError) -> Failure {
    let (class, detail, _) = classify(e);
    (class, detail)
}

/// The next message on a WebSocket; an error is its failure, and the end of the stream a
/// connection closed without a close frame. One reader for the echo loads and the
/// scenarios' WebSocket steps.
pub(crate) async fn next_message<S>(
    socket: &mut tokio_tungstenite::WebSocketStream<S>,
) -> Result<tokio_tungstenite::tungstenite::Message, Failure>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt as _;
    match socket.next().await {
        Some(Ok(m)) => Ok(m),
        Some(Err(e)) => Err(failure(&e)),
        None => Err((
            ErrorClass::ClosedBeforeResponse,
            Some("the server closed the connection without a close frame".into()),
        )),
    }
}

/// An error from tungstenite, during the handshake or after it, as a failure class. A
/// refused upgrade also gives its HTTP status (counted among the status codes).
pub fn classify(err: &WsError) -> (ErrorClass, Option<String>, Option<u16>) {
    match err {
        WsError::Http(response) => {
            let status = response.status();
            let detail = format!(
                "the server answered the upgrade with HTTP {} {}, not 101",
                status.as_u16(),
                shown(status.canonical_reason().unwrap_or(""))
            );
            (ErrorClass::WsRefused, Some(detail), Some(status.as_u16()))
        }
        WsError::Protocol(ProtocolError::HandshakeIncomplete) => (
            ErrorClass::ClosedBeforeResponse,
            Some("the server closed the connection before it answered the upgrade".into()),
            None,
        ),
        WsError::Protocol(p) if is_handshake(p) => (
            ErrorClass::WsBadHandshake,
            Some(format!("the server's upgrade answer is not valid: {p}")),
            None,
        ),
        WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake) => (
            ErrorClass::ClosedBeforeResponse,
            Some("the server closed the connection without a close frame".into()),
            None,
        ),
        WsError::Protocol(p) => (
            ErrorClass::WsProtocolError,
            Some(format!("the server broke RFC 6455: {p}")),
            None,
        ),
        WsError::Utf8(e) => (
            ErrorClass::WsProtocolError,
            Some(format!(
                "a text message from the server is not UTF-8 ({})",
                shown(e)
            )),
            None,
        ),
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => (
            ErrorClass::WsProtocolError,
            Some(format!(
                "the server sent a message or frame of {size} bytes, over the {max_size} \
                 loadlab accepts (the largest is twice the message sent, at least 16 MiB)"
            )),
            None,
        ),
        WsError::Capacity(e) => (ErrorClass::WsProtocolError, Some(e.to_string()), None),
        WsError::AttackAttempt => (
            ErrorClass::WsBadHandshake,
            Some(
                "the server's answer began with a request (tungstenite calls it an attack)".into(),
            ),
            None,
        ),
        WsError::HttpFormat(e) => (
            ErrorClass::WsBadHandshake,
            Some(format!("the upgrade could not be made: {e}")),
            None,
        ),
        WsError::Io(e) if e.get_ref().is_some_and(|r| r.is::<deflate::Broken>()) => (
            ErrorClass::WsProtocolError,
            Some(format!(
                "the server broke RFC 7692 (permessage-deflate): {e}"
            )),
            None,
        ),
        WsError::Io(e) => match e.get_ref().and_then(|e| e.downcast_ref::<h2::Error>()) {
            // Over HTTP/2: the server's RST_STREAM or GOAWAY, or its broken framing.
            Some(h2) => (
                ErrorClass::from_h2(h2),
                Some(format!("the WebSocket's HTTP/2 stream: {h2}")),
                None,
            ),
            None => (ErrorClass::from_io(e), None, None),
        },
        WsError::ConnectionClosed | WsError::AlreadyClosed => (
            ErrorClass::ClosedBeforeResponse,
            Some("the WebSocket was already closed".into()),
            None,
        ),
        WsError::Tls(e) => (ErrorClass::TlsHandshake, Some(e.to_string()), None),
        WsError::Url(e) => (ErrorClass::WsBadHandshake, Some(e.to_string()), None),
        WsError::WriteBufferFull(_) => (ErrorClass::IoError, None, None),
    }
}

/// Errors only an upgrade's answer can cause.
fn is_handshake(p: &ProtocolError) -> bool {
    matches!(
        p,
        ProtocolError::WrongHttpVersion
            | ProtocolError::MissingConnectionUpgradeHeader
            | ProtocolError::MissingUpgradeWebSocketHeader
            | ProtocolError::SecWebSocketAcceptKeyMismatch
            | ProtocolError::SecWebSocketSubProtocolError(_)
            | ProtocolError::InvalidHeader(_)
            | ProtocolError::HttparseError(_)
            | ProtocolError::JunkAfterRequest
    )
}

/// A close frame from the server, while something was owed (a message's echo, a pong, or
/// the held connection itself): 1002 (which tungstenite also puts in place of a code no
/// endpoint may send) and 1007 are protocol errors, any other is `ws_closed`, with the code
/// and the server's reason (escaped) as the detail.
pub fn closed(frame: Option<&CloseFrame>) -> Failure {
    let Some(frame) = frame else {
        return (
            ErrorClass::WsClosed,
            Some("the server closed the WebSocket with no code".into()),
        );
    };
    let code = u16::from(frame.code);
    let reason = shown(frame.reason.as_str());
    let class = match frame.code {
        CloseCode::Protocol | CloseCode::Invalid => ErrorClass::WsProtocolError,
        _ => ErrorClass::WsClosed,
    };
    let name = close_name(frame.code);
    let detail = if reason.is_empty() {
        format!("the server closed the WebSocket: {code} ({name})")
    } else {
        format!("the server closed the WebSocket: {code} ({name}): {reason}")
    };
    (class, Some(detail))
}

fn close_name(code: CloseCode) -> &'static str {
    match code {
        CloseCode::Normal => "normal closure",
        CloseCode::Away => "going away",
        CloseCode::Protocol => "protocol error, or a code no endpoint may send",
        CloseCode::Unsupported => "unsupported data",
        CloseCode::Invalid => "invalid payload data",
        CloseCode::Policy => "policy violation",
        CloseCode::Size => "message too big",
        CloseCode::Extension => "extension required",
        CloseCode::Error => "internal server error",
        CloseCode::Restart => "service restart",
        CloseCode::Again => "try again later",
        _ => "application's code",
    }
}

/// What a WebSocket run counts beside its exchanges, shared by its threads (each count has
/// one writer per connection, and few writes: a push, a server's ping, a connection opened).
#[derive(Debug, Default)]
pub struct WsTotals {
    /// Messages from the server that answered nothing (not the echo owed).
    pub pushed: AtomicU64,
    pub pushed_bytes: AtomicU64,
    /// The gaps between two pushes on one connection, in nanoseconds (made at the first).
    pub push_gaps: Mutex<Option<Histogram<u64>>>,
    /// Pings from the server (tungstenite answers each with a pong).
    pub server_pings: AtomicU64,
    /// Held connections open now, and the most at once.
    pub held: AtomicU64,
    pub held_peak: AtomicU64,
    /// The process's resident memory before the first held connection opened, and when all
    /// were open (0: not read).
    pub rss_before: AtomicU64,
    pub rss_held: AtomicU64,
    /// How the held connections opened: the ramp a held load took.
    pub ramp: ramp::RampTotals,
    /// When the last connection's load ended, before its goodbye (nanoseconds from the
    /// run's start; 0: none ended so).
    pub load_over_ns: AtomicU64,
    /// Over HTTP/2: WebSockets that waited for a free stream, and the fewest streams a
    /// connection allowed when below `--streams` (0: none was).
    pub h2_waits: AtomicU64,
    pub h2_limit: AtomicU64,
    /// permessage-deflate's counts.
    pub deflate: std::sync::Arc<deflate::DeflateTotals>,
}

/// A WebSocket run's own figures, read from [`WsTotals`] when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct WsReport {
    pub mode: WsMode,
    pub pushed: u64,
    pub pushed_bytes: u64,
    /// Between two pushes on one connection, nanoseconds.
    pub push_gaps: Histogram<u64>,
    pub server_pings: u64,
    pub held_peak: u64,
    /// Resident memory before and with every held connection open, in bytes.
    pub rss_before_bytes: Option<u64>,
    pub rss_held_bytes: Option<u64>,
    /// How the held connections opened.
    pub ramp: ramp::Ramp,
    /// From the run's start until the last connection's load ended, before the goodbyes.
    pub load_over: Option<Duration>,
    /// Over HTTP/2: WebSockets that waited for a stream, and the server's stream limit.
    pub h2_waits: u64,
    pub h2_limit: Option<u64>,
    /// permessage-deflate's note (see [`deflate::DeflateTotals::note`]).
    pub deflate: Option<String>,
}

impl WsTotals {
    /// A push of `bytes` arrived on a connection whose last push came at `last` (updated).
    pub fn push(&self, bytes: usize, last: &mut Option<std::time::Instant>) {
        let now = std::time::Instant::now();
        self.pushed.fetch_add(1, Ordering::Relaxed);
        self.pushed_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        if let Some(before) = last.replace(now) {
            let gap = u64::try_from((now - before).as_nanos()).unwrap_or(u64::MAX);
            let mut gaps = self.push_gaps.lock().unwrap_or_else(|e| e.into_inner());
            // Clamped to the histogram's bounds (1 ns to an hour): a gap is never lost.
            let gap = gap.clamp(1, loadlab_result::histogram::HIST_MAX_NS);
            gaps.get_or_insert_with(loadlab_result::histogram::new_histogram)
                .saturating_record(gap);
        }
    }

    /// An HTTP/2 connection allows only `limit` streams, fewer than `--streams`.
    pub fn h2_limited(&self, limit: usize) {
        let limit = u64::try_from(limit).unwrap_or(u64::MAX).max(1);
        let _ = self
            .h2_limit
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |was| {
                Some(if was == 0 { limit } else { was.min(limit) })
            });
    }

    pub fn report(&self, mode: WsMode) -> WsReport {
        let histogram = |h: &Mutex<Option<Histogram<u64>>>| {
            h.lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_else(loadlab_result::histogram::new_histogram)
        };
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let nonzero = |v: u64| (v > 0).then_some(v);
        WsReport {
            mode,
            pushed: get(&self.pushed),
            pushed_bytes: get(&self.pushed_bytes),
            push_gaps: histogram(&self.push_gaps),
            server_pings: get(&self.server_pings),
            held_peak: get(&self.held_peak),
            rss_before_bytes: nonzero(get(&self.rss_before)),
            rss_held_bytes: nonzero(get(&self.rss_held)),
            ramp: self.ramp.report(),
            load_over: nonzero(get(&self.load_over_ns)).map(Duration::from_nanos),
            h2_waits: get(&self.h2_waits),
            h2_limit: nonzero(get(&self.h2_limit)),
            deflate: self.deflate.note(),
        }
    }
}

impl WsReport {
    /// The result's WebSocket section: pushes, their rate over the load's time and their
    /// gaps, the server's pings, the held connections. The load's time is `planned` (a run
    /// of `-d` that went to its end: its warm-up, its duration and an open loop's drain, as
    /// the other rates), else until the last connection's load ended, else `elapsed`: never
    /// the goodbyes' grace after it (up to 300 ms, in which no load is made).
    pub fn summary(
        &self,
        planned: Option<Duration>,
        elapsed: Duration,
    ) -> loadlab_result::ws::WsSummary {
        let over_s = planned
            .or(self.load_over.map(|at| at.min(elapsed)))
            .unwrap_or(elapsed)
            .as_secs_f64();
        let mut s = loadlab_result::ws::WsSummary {
            mode: self.mode.name().to_string(),
            pushed: self.pushed,
            pushed_bytes: self.pushed_bytes,
            pushed_per_s: self.pushed as f64 / over_s.max(1e-3),
            over_s,
            push_gap_us: None,
            push_gap_histogram: None,
            server_pings: self.server_pings,
            held_peak: self.held_peak,
        };
        s.set_gaps(&self.push_gaps);
        s
    }

    /// The result's notes: the held connections and the memory each took (a shard's own
    /// figure, said as such by the caller; pushes and pings are in [`WsReport::summary`]).
    pub fn notes(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.deflate.iter().cloned().collect();
        if self.mode == WsMode::Hold || self.held_peak > 0 {
            let memory = match (self.rss_before_bytes, self.rss_held_bytes) {
                (Some(before), Some(held)) if self.held_peak > 0 => format!(
                    "; loadlab's memory (RSS) went from {} to {} MiB, {:.1} KiB per held \
                     connection",
                    before >> 20,
                    held >> 20,
                    held.saturating_sub(before) as f64 / 1024.0 / self.held_peak as f64
                ),
                _ => "; not all were open at once, so no memory per connection".to_string(),
            };
            notes.push(format!(
                "WebSocket: {} connections held open at most{}{memory}",
                self.held_peak,
                self.ramp.note()
            ));
        }
        if let Some(limit) = self.h2_limit {
            notes.push(format!(
                "WebSocket over HTTP/2: the server allows {limit} streams at once on a \
                 connection (SETTINGS_MAX_CONCURRENT_STREAMS), fewer than --streams; {} \
                 WebSockets waited for a free stream rather than fail: give fewer --streams \
                 and more connections (-c)",
                self.h2_waits
            ));
        }
        notes
    }
}

/// Held connections' handshakes in flight at once, over a run's threads: a server's listen
/// backlog of this many (Python's `websockets` has 100, nginx and Node 511) never overflows,
/// where opening tens of thousands at once left connections in SYN retries for seconds. It
/// also bounds the handshakes' buffers held at once (8 KiB each).
pub const HANDSHAKES_AT_ONCE: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite::Utf8Bytes;

    #[test]
    fn close_codes_are_classed_and_reasons_escaped() {
        let frame = |code: u16, reason: &'static str| CloseFrame {
            code: CloseCode::from(code),
            reason: Utf8Bytes::from_static(reason),
        };
        let (class, detail) = closed(Some(&frame(1011, "db down\x1b[2J")));
        assert_eq!(class, ErrorClass::WsClosed);
        let detail = detail.unwrap();
        assert!(detail.contains("1011 (internal server error)"), "{detail}");
        assert!(!detail.contains('\x1b'), "{detail}");
        assert_eq!(
            closed(Some(&frame(1002, ""))).0,
            ErrorClass::WsProtocolError
        );
        assert_eq!(
            closed(Some(&frame(1007, ""))).0,
            ErrorClass::WsProtocolError
        );
        assert_eq!(closed(Some(&frame(4000, "app"))).0, ErrorClass::WsClosed);
        assert_eq!(closed(None).0, ErrorClass::WsClosed);
    }
}
