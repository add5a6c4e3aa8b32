//! The path check's two ends (issue 52): `POST /v1/path/listen` opens a listener for one
//! check and hands out its single-use ticket; `POST /v1/path/check` connects to another
//! agent's listener and moves a bounded bulk stream each way, iperf-style, timing each at its
//! receiving end.
//!
//! Bounded everywhere: at most [`MAX_PATH_BYTES`] and [`MAX_PATH_MS`] a direction, at most
//! [`MAX_LISTENERS`] listeners and as many checks at once in this process (a resource bound:
//! the coordinator checks its paths one at a time, so that they do not share a link), a listener closed
//! after its two transfers or its deadline, a peer that does not show its ticket within a
//! second dropped. It runs nothing but the built-in transfer, and the bulk connections
//! carry the ticket and zeros only, never the token.

use crate::protocol::path::{
    PathCheck, PathGoodput, PathListen, PathTicket, Transfer, MAX_PATH_BYTES, MAX_PATH_MS,
    TICKET_CHARS,
};
use crate::reply::{json, Refusal, Reply};
use hyper::StatusCode;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, timeout_at, Instant};

/// Listeners open, and checks running, at once in this process.
pub(crate) const MAX_LISTENERS: usize = 4;
/// How long a peer has to show its ticket once connected, and to connect at all.
const HANDSHAKE: Duration = Duration::from_secs(1);
const CONNECT: Duration = Duration::from_secs(3);
/// Zeros written at a time.
const CHUNK: usize = 64 * 1024;
/// The upload's report: bytes received and microseconds, both big-endian u64.
const REPORT_BYTES: usize = 16;

static LISTENERS: AtomicUsize = AtomicUsize::new(0);
static CHECKING: AtomicUsize = AtomicUsize::new(0);

/// Which way a bulk connection moves its bytes, sent after the ticket.
const DOWN: u8 = b'D';
const UP: u8 = b'U';

fn bounds(bytes: u64, ms: u64) -> Result<(), Refusal> {
    if bytes == 0 || bytes > MAX_PATH_BYTES {
        return Err(Refusal::field(
            "bytes",
            format!("bytes {bytes} must be between 1 and {MAX_PATH_BYTES}"),
        ));
    }
    if ms == 0 || ms > MAX_PATH_MS {
        return Err(Refusal::field(
            "ms",
            format!("ms {ms} must be between 1 and {MAX_PATH_MS}"),
        ));
    }
    Ok(())
}

/// A place among [`MAX_LISTENERS`] counted in `counter`, freed when dropped.
struct Slot(&'static AtomicUsize);

impl Slot {
    fn take(counter: &'static AtomicUsize) -> Option<Slot> {
        counter
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_LISTENERS).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(counter))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `POST /v1/path/listen`: a listener on the address the request came to, for one check.
pub(crate) async fn listen(local: SocketAddr, req: PathListen) -> Result<Reply, Refusal> {
    bounds(req.bytes, req.ms)?;
    let slot = Slot::take(&LISTENERS).ok_or_else(|| {
        Refusal::new(
            StatusCode::CONFLICT,
            format!("{MAX_LISTENERS} path checks are already waiting here; try again shortly"),
        )
    })?;
    let listener = TcpListener::bind(SocketAddr::new(local.ip(), 0))
        .await
        .map_err(|e| Refusal::internal(format!("cannot listen for a path check: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| Refusal::internal(format!("cannot listen for a path check: {e}")))?
        .port();
    let ticket = new_ticket()?;
    // Both transfers, each bounded, plus the peer's connecting: then the listener closes.
    let deadline = Instant::now() + Duration::from_millis(2 * req.ms) + 2 * CONNECT;
    tokio::spawn(serve(listener, ticket.clone(), req, deadline, slot));
    Ok(json(
        StatusCode::OK,
        &PathTicket {
            port,
            ticket,
            bytes: req.bytes,
            ms: req.ms,
        },
    ))
}

fn new_ticket() -> Result<String, Refusal> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; TICKET_CHARS / 2];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Refusal::internal("no randomness for a path ticket"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Serves one download and one upload to whoever shows the ticket, until the deadline.
async fn serve(
    listener: TcpListener,
    ticket: String,
    req: PathListen,
    deadline: Instant,
    _slot: Slot,
) {
    let (mut down, mut up) = (false, false);
    while !(down && up) {
        let Ok(Ok((mut stream, _))) = timeout_at(deadline, listener.accept()).await else {
            return;
        };
        let mut head = [0u8; TICKET_CHARS + 1];
        if !matches!(
            timeout(HANDSHAKE, stream.read_exact(&mut head)).await,
            Ok(Ok(_))
        ) {
            continue;
        }
        use subtle::ConstantTimeEq as _;
        if !bool::from(head[..TICKET_CHARS].ct_eq(ticket.as_bytes())) {
            continue;
        }
        let started = Instant::now();
        let _ = stream.set_nodelay(true);
        match head[TICKET_CHARS] {
            DOWN if !down => {
                down = true;
                let _ = timeout_at(deadline, send_zeros(&mut stream, req.bytes, req.ms)).await;
            }
            UP if !up => {
                up = true;
                let work = async {
                    let got = receive(&mut stream, req.bytes, req.ms, started).await;
                    let mut report = [0u8; REPORT_BYTES];
                    report[..8].copy_from_slice(&got.bytes.to_be_bytes());
                    report[8..].copy_from_slice(&got.elapsed_us.to_be_bytes());
                    stream.write_all(&report).await
                };
                let _ = timeout_at(deadline, work).await;
            }
            _ => {}
        }
    }
}

/// Writes up to `bytes` zeros, stopping after `ms`, then closes the sending side.
async fn send_zeros(stream: &mut TcpStream, bytes: u64, ms: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; CHUNK];
    let stop = Instant::now() + Duration::from_millis(ms);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK as u64) as usize;
        match timeout_at(stop, stream.write_all(&zeros[..n])).await {
            Ok(r) => r?,
            Err(_) => break,
        }
        left -= n as u64;
    }
    stream.shutdown().await
}

/// Reads until `bytes` arrived, the sender closed, or `ms` passed since `started`.
async fn receive(stream: &mut TcpStream, bytes: u64, ms: u64, started: Instant) -> Transfer {
    let stop = started + Duration::from_millis(ms);
    let mut buf = vec![0u8; CHUNK];
    let (mut got, mut last) = (0u64, started);
    while got < bytes {
        match timeout_at(stop, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => {
                got += n as u64;
                last = Instant::now();
            }
            _ => break,
        }
    }
    Transfer {
        bytes: got,
        elapsed_us: last.duration_since(started).as_micros() as u64,
        complete: got >= bytes,
    }
}

/// `POST /v1/path/check`: the download, then the upload, to the listening agent.
pub(crate) async fn check(req: PathCheck) -> Result<Reply, Refusal> {
    bounds(req.bytes, req.ms)?;
    if req.ticket.len() != TICKET_CHARS || !req.ticket.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Refusal::field(
            "ticket",
            format!(
                "the ticket must be the {TICKET_CHARS} hexadecimal characters /v1/path/listen gave"
            ),
        ));
    }
    if req.port == 0 || req.host.is_empty() || req.host.len() > 253 {
        return Err(Refusal::field(
            "host",
            "give the listening agent's host and the port /v1/path/listen gave",
        ));
    }
    let _slot = Slot::take(&CHECKING).ok_or_else(|| {
        Refusal::new(
            StatusCode::CONFLICT,
            format!("{MAX_LISTENERS} path checks are running here; check paths one at a time"),
        )
    })?;
    let failed = |what: &str, e: String| {
        Refusal::new(
            StatusCode::BAD_GATEWAY,
            format!(
                "the path check to {}:{} failed {what}: {e}",
                req.host, req.port
            ),
        )
    };
    let mut stream = open(&req, DOWN)
        .await
        .map_err(|e| failed("connecting", e))?;
    let started = Instant::now();
    let down = receive(&mut stream, req.bytes, req.ms, started).await;
    drop(stream);
    let mut stream = open(&req, UP).await.map_err(|e| failed("connecting", e))?;
    let _ = send_zeros(&mut stream, req.bytes, req.ms).await;
    let mut report = [0u8; REPORT_BYTES];
    match timeout(CONNECT, stream.read_exact(&mut report)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Err(failed("reading the upload's report", e.to_string())),
        Err(_) => {
            return Err(failed(
                "reading the upload's report",
                format!("none within {CONNECT:?}"),
            ))
        }
    }
    let got = u64::from_be_bytes(report[..8].try_into().expect("8 bytes"));
    let elapsed_us = u64::from_be_bytes(report[8..].try_into().expect("8 bytes"));
    let up = Transfer {
        bytes: got.min(req.bytes),
        elapsed_us,
        complete: got >= req.bytes,
    };
    Ok(json(StatusCode::OK, &PathGoodput { down, up }))
}

/// A bulk connection to the listener, its ticket and direction sent.
async fn open(req: &PathCheck, direction: u8) -> Result<TcpStream, String> {
    let mut stream = timeout(CONNECT, TcpStream::connect((req.host.as_str(), req.port)))
        .await
        .map_err(|_| format!("no connection within {CONNECT:?}"))?
        .map_err(|e| e.to_string())?;
    let _ = stream.set_nodelay(true);
    let mut head = req.ticket.clone().into_bytes();
    head.push(direction);
    stream.write_all(&head).await.map_err(|e| e.to_string())?;
    Ok(stream)
}
