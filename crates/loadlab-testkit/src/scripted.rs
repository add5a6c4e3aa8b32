//! Hostile HTTP/1.1 servers written as scripts: each connection plays the same [`Script`],
//! a list of steps such as "read a request", "write these bytes", "wait", "drip this body",
//! "close" or "reset". A script says exactly what a misbehaving server does and when, so a
//! test can assert what loadlab decides about it (the failure class, the counts, the exit
//! code) without depending on how fast the machine is.
//!
//! This module must not grow an HTTP server: it reads requests only as far as framing needs
//! (the head, and a Content-Length body) and writes whatever bytes the script gives.

use crate::background::Background;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One thing a scripted connection does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Read one request (its head and Content-Length body). At EOF the connection ends.
    ReadRequest,
    /// Write these bytes.
    Write(Vec<u8>),
    /// Write `responses[i % len]`, where `i` counts the writes of this step across every
    /// connection of the server (a server that fails some share of its requests).
    WriteNth(Vec<Vec<u8>>),
    /// Write `bytes`, `chunk` bytes at a time, waiting `every` between chunks.
    Drip {
        bytes: Vec<u8>,
        chunk: usize,
        every: Duration,
    },
    /// Wait this long (the connection stays open, unread).
    Wait(Duration),
    /// Close the connection normally (FIN).
    Close,
    /// Close the connection with RST.
    Reset,
    /// Keep the connection open, reading and discarding what arrives, until the client
    /// closes it. Nothing after it runs.
    Hold,
    /// Go back to the first step.
    Repeat,
}

/// What each connection does, step by step. Running off the end closes the connection.
#[derive(Debug, Clone, Default)]
pub struct Script {
    steps: Vec<Step>,
}

impl Script {
    pub fn new() -> Script {
        Script::default()
    }

    pub fn step(mut self, step: Step) -> Script {
        self.steps.push(step);
        self
    }

    pub fn read_request(self) -> Script {
        self.step(Step::ReadRequest)
    }

    pub fn write(self, bytes: impl Into<Vec<u8>>) -> Script {
        self.step(Step::Write(bytes.into()))
    }

    pub fn write_nth(self, responses: Vec<Vec<u8>>) -> Script {
        assert!(!responses.is_empty(), "write_nth needs a response");
        self.step(Step::WriteNth(responses))
    }

    pub fn drip(self, bytes: impl Into<Vec<u8>>, chunk: usize, every: Duration) -> Script {
        self.step(Step::Drip {
            bytes: bytes.into(),
            chunk: chunk.max(1),
            every,
        })
    }

    pub fn wait(self, d: Duration) -> Script {
        self.step(Step::Wait(d))
    }

    pub fn close(self) -> Script {
        self.step(Step::Close)
    }

    pub fn reset(self) -> Script {
        self.step(Step::Reset)
    }

    pub fn hold(self) -> Script {
        self.step(Step::Hold)
    }

    pub fn repeat(self) -> Script {
        self.step(Step::Repeat)
    }

    /// The common shape: read a request, answer it with `response`, for every request on
    /// the connection.
    pub fn answer_every(response: impl Into<Vec<u8>>) -> Script {
        Script::new().read_request().write(response).repeat()
    }
}

/// What a scripted server has seen.
#[derive(Debug, Default)]
pub struct ScriptCounters {
    pub accepted: AtomicU64,
    /// Requests read whole.
    pub requests: AtomicU64,
    /// Write steps completed (a `Drip` counts once, when its last chunk went).
    pub writes: AtomicU64,
    /// Connections the client closed while the script was reading or holding.
    pub closed_by_client: AtomicU64,
    nth: AtomicU64,
}

impl ScriptCounters {
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::SeqCst)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }
    pub fn closed_by_client(&self) -> u64 {
        self.closed_by_client.load(Ordering::SeqCst)
    }
}

/// A server on 127.0.0.1:0 whose every connection plays one script. Stops when dropped.
pub struct ScriptedServer {
    counters: Arc<ScriptCounters>,
    background: Background,
}

impl ScriptedServer {
    pub fn start(script: Script) -> ScriptedServer {
        let counters = Arc::new(ScriptCounters::default());
        let c = counters.clone();
        let script = Arc::new(script);
        let background = Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                c.accepted.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                tokio::spawn(play(stream, script.clone(), c.clone()));
            }
        });
        ScriptedServer {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr(), path)
    }

    pub fn counters(&self) -> &ScriptCounters {
        &self.counters
    }
}

/// A loopback port on which nothing listens (bound, then released): connects are refused.
pub fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// `len` bytes that are not HTTP, the same for the same seed (xorshift64*).
pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

async fn play(mut stream: TcpStream, script: Arc<Script>, c: Arc<ScriptCounters>) {
    let mut buf = Vec::new();
    let mut i = 0;
    while let Some(step) = script.steps.get(i) {
        i += 1;
        match step {
            Step::ReadRequest => {
                if !read_request(&mut stream, &mut buf).await {
                    c.closed_by_client.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                c.requests.fetch_add(1, Ordering::SeqCst);
            }
            Step::Write(bytes) => {
                if stream.write_all(bytes).await.is_err() {
                    return;
                }
                c.writes.fetch_add(1, Ordering::SeqCst);
            }
            Step::WriteNth(all) => {
                let n = c.nth.fetch_add(1, Ordering::SeqCst) as usize;
                if stream.write_all(&all[n % all.len()]).await.is_err() {
                    return;
                }
                c.writes.fetch_add(1, Ordering::SeqCst);
            }
            Step::Drip {
                bytes,
                chunk,
                every,
            } => {
                for (k, piece) in bytes.chunks(*chunk).enumerate() {
                    if k > 0 {
                        tokio::time::sleep(*every).await;
                    }
                    if stream.write_all(piece).await.is_err() {
                        return;
                    }
                }
                c.writes.fetch_add(1, Ordering::SeqCst);
            }
            Step::Wait(d) => tokio::time::sleep(*d).await,
            Step::Close => {
                let _ = stream.shutdown().await;
                return;
            }
            Step::Reset => {
                // Linger 0 makes close send RST.
                #[allow(deprecated)]
                let _ = stream.set_linger(Some(Duration::ZERO));
                return;
            }
            Step::Hold => {
                let mut sink = [0u8; 8192];
                while let Ok(n) = stream.read(&mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
                c.closed_by_client.fetch_add(1, Ordering::SeqCst);
                return;
            }
            Step::Repeat => i = 0,
        }
    }
    let _ = stream.shutdown().await;
}

/// Reads one request's head and Content-Length body into `buf` and drains it; false at EOF
/// or on an error.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let body_len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let total = end + 4 + body_len;
            if buf.len() >= total {
                buf.drain(..total);
                return true;
            }
        }
        let mut chunk = [0u8; 8192];
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_script_answers_in_order_and_repeats() {
        let server = ScriptedServer::start(
            Script::new()
                .read_request()
                .write_nth(vec![b"one".to_vec(), b"two".to_vec()])
                .repeat(),
        );
        let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
        let mut got = Vec::new();
        for _ in 0..3 {
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut b = [0u8; 3];
            s.read_exact(&mut b).unwrap();
            got.push(String::from_utf8_lossy(&b).into_owned());
        }
        assert_eq!(got, ["one", "two", "one"]);
        assert_eq!(server.counters().requests(), 3);
    }

    #[test]
    fn random_bytes_are_reproducible_and_not_http() {
        assert_eq!(random_bytes(7, 64), random_bytes(7, 64));
        assert_ne!(random_bytes(7, 64), random_bytes(8, 64));
        assert!(!random_bytes(7, 64).starts_with(b"HTTP/"));
    }
}
