//! Servers whose timing is the point: a fixed delay before each answer, or a freeze of the
//! whole server for a while. One OS thread per connection with blocking I/O, because the
//! delay must be precise: tokio's timers round up to the next millisecond, `nanosleep` does
//! not.

use crate::Counters;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When a [`TimedServer`] answers.
#[derive(Debug, Clone, Copy)]
pub enum Timing {
    /// Every answer after this long.
    Delay(Duration),
    /// Answers at once, except that requests arriving in `[start + at, start + at + span)`
    /// are held until the end of that window (the server "froze").
    Freeze { at: Duration, span: Duration },
    /// Every answer after this long, one request at a time over all connections: a server
    /// of fixed capacity (one per this long), the others waiting their turn.
    Serial(Duration),
}

pub struct TimedServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    /// When the server started: the origin of `Timing::Freeze`.
    pub started: Instant,
}

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

impl TimedServer {
    pub fn start(timing: Timing) -> TimedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let (c, s) = (counters.clone(), stop.clone());
        let one_at_a_time = Arc::new(Mutex::new(()));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                c.accepted.fetch_add(1, Ordering::SeqCst);
                let (c, s, turn) = (c.clone(), s.clone(), one_at_a_time.clone());
                std::thread::spawn(move || serve(stream, timing, started, &c, &s, &turn));
            }
        });
        TimedServer {
            addr,
            counters,
            stop,
            started,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }
}

impl Drop for TimedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(
    mut stream: TcpStream,
    timing: Timing,
    started: Instant,
    c: &Counters,
    stop: &AtomicBool,
    turn: &Mutex<()>,
) {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !stop.load(Ordering::Acquire) {
        // Requests here have no body: a request ends with its blank line.
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            match stream.read(&mut chunk) {
                Ok(0) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return,
            }
            continue;
        };
        buf.drain(..end + 4);
        c.requests.fetch_add(1, Ordering::SeqCst);
        // `Serial`: held while this request is served (poisoned only by a panic here).
        let _turn = matches!(timing, Timing::Serial(_))
            .then(|| turn.lock().unwrap_or_else(|e| e.into_inner()));
        let wait = match timing {
            Timing::Delay(d) | Timing::Serial(d) => d,
            Timing::Freeze { at, span } => {
                let now = started.elapsed();
                if now >= at && now < at + span {
                    at + span - now
                } else {
                    Duration::ZERO
                }
            }
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        if stream.write_all(RESPONSE).is_err() {
            return;
        }
        c.answered.fetch_add(1, Ordering::SeqCst);
    }
}
