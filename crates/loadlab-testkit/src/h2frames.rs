//! A frame-level HTTP/2 (h2c) server that plays a script of raw frames: for the failure paths
//! a well-behaved server library cannot produce (a preface that is not SETTINGS, settings out
//! of range, DATA on stream 0, a frame over the client's maximum size, GOAWAY with an error
//! code, RST_STREAM, a window that never opens, a server that never answers at all).
//!
//! It knows just enough HTTP/2 to follow a client: the client's preface, the 9-byte frame
//! header, HEADERS opening a stream, and HPACK's static table for `:status`. It must not
//! validate what the client sends nor answer anything the script does not say: a scripted
//! server is exactly as wrong as its script.

use crate::background::Background;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Frame types (RFC 9113, section 6).
pub mod frame {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const ACK: u8 = 0x1;
}

/// Error codes (RFC 9113, section 7).
pub mod code {
    pub const NO_ERROR: u32 = 0x0;
    pub const PROTOCOL_ERROR: u32 = 0x1;
    pub const INTERNAL_ERROR: u32 = 0x2;
    pub const FLOW_CONTROL_ERROR: u32 = 0x3;
    pub const FRAME_SIZE_ERROR: u32 = 0x6;
    pub const REFUSED_STREAM: u32 = 0x7;
    pub const ENHANCE_YOUR_CALM: u32 = 0xb;
}

/// Settings identifiers (RFC 9113, section 6.5.2).
pub mod setting {
    pub const ENABLE_PUSH: u16 = 0x2;
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    pub const MAX_FRAME_SIZE: u16 = 0x5;
}

/// Which stream a frame goes on.
#[derive(Debug, Clone, Copy)]
pub enum On {
    /// The stream of the last request read.
    Current,
    /// This stream id (0 is the connection).
    Stream(u32),
}

/// One thing a scripted HTTP/2 connection does.
#[derive(Debug, Clone)]
pub enum H2Step {
    /// Read the client's 24-byte connection preface. The connection ends if it is not one.
    ReadPreface,
    /// Send a SETTINGS frame with these (identifier, value) pairs.
    Settings(Vec<(u16, u32)>),
    /// Acknowledge the client's SETTINGS.
    SettingsAck,
    /// Read frames until one is HEADERS: that stream becomes the current one.
    ReadRequest,
    /// Answer the current stream: HEADERS with `:status`, then the body in one DATA frame
    /// that ends the stream (HEADERS ends it when the body is empty).
    Respond {
        status: u16,
        body: Vec<u8>,
    },
    /// Send any frame.
    Frame {
        kind: u8,
        flags: u8,
        on: On,
        payload: Vec<u8>,
    },
    /// GOAWAY with this error code; `last_stream` is the highest stream the server says it
    /// processed (0: none, so every open stream failed).
    GoAway {
        last_stream: u32,
        code: u32,
    },
    /// RST_STREAM on the current stream.
    RstStream(u32),
    /// Bytes as they are, framed or not.
    Raw(Vec<u8>),
    Wait(Duration),
    /// Read and discard until the client closes. Nothing after it runs.
    Hold,
    /// Close the connection.
    Close,
    /// Running off the end of the script comes back here (without one, it closes).
    Loop,
}

/// The client's connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What each connection of an [`H2FrameServer`] plays.
#[derive(Debug, Clone, Default)]
pub struct H2Script {
    steps: Vec<H2Step>,
}

impl H2Script {
    pub fn new() -> H2Script {
        H2Script::default()
    }

    /// A well-behaved opening: the client's preface read, empty SETTINGS sent, and the
    /// client's acknowledged.
    pub fn handshake() -> H2Script {
        H2Script::new()
            .step(H2Step::ReadPreface)
            .step(H2Step::Settings(Vec::new()))
            .step(H2Step::SettingsAck)
    }

    pub fn step(mut self, step: H2Step) -> H2Script {
        self.steps.push(step);
        self
    }

    pub fn read_request(self) -> H2Script {
        self.step(H2Step::ReadRequest)
    }

    pub fn respond(self, status: u16, body: &[u8]) -> H2Script {
        self.step(H2Step::Respond {
            status,
            body: body.to_vec(),
        })
    }

    pub fn frame(self, kind: u8, flags: u8, on: On, payload: Vec<u8>) -> H2Script {
        self.step(H2Step::Frame {
            kind,
            flags,
            on,
            payload,
        })
    }

    pub fn goaway(self, last_stream: u32, code: u32) -> H2Script {
        self.step(H2Step::GoAway { last_stream, code })
    }

    pub fn rst_stream(self, code: u32) -> H2Script {
        self.step(H2Step::RstStream(code))
    }

    pub fn hold(self) -> H2Script {
        self.step(H2Step::Hold)
    }

    pub fn close(self) -> H2Script {
        self.step(H2Step::Close)
    }

    pub fn looped(self) -> H2Script {
        self.step(H2Step::Loop)
    }
}

/// What a frame-level server has seen.
#[derive(Debug, Default)]
pub struct H2FrameCounters {
    pub connections: AtomicU64,
    /// HEADERS frames read (requests).
    pub requests: AtomicU64,
    /// Error codes of the GOAWAY frames the client sent (what it told the server was wrong).
    pub client_goaways: Mutex<Vec<u32>>,
}

impl H2FrameCounters {
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    pub fn client_goaways(&self) -> Vec<u32> {
        self.client_goaways.lock().expect("not poisoned").clone()
    }
}

/// An h2c server on 127.0.0.1:0 whose every connection plays one script. Stops when dropped.
pub struct H2FrameServer {
    counters: Arc<H2FrameCounters>,
    background: Background,
}

impl H2FrameServer {
    pub fn start(script: H2Script) -> H2FrameServer {
        let counters = Arc::new(H2FrameCounters::default());
        let c = counters.clone();
        let script = Arc::new(script);
        let background = Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                c.connections.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nodelay(true);
                tokio::spawn(play(stream, script.clone(), c.clone()));
            }
        });
        H2FrameServer {
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

    pub fn counters(&self) -> &H2FrameCounters {
        &self.counters
    }
}

/// A frame: the 9-byte header, then the payload.
pub fn encode_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut out = Vec::with_capacity(9 + payload.len());
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A header block holding only `:status`: HPACK's static table where it has the code,
/// else a literal with the indexed name `:status` (index 8), never indexed into the table.
pub fn status_block(status: u16) -> Vec<u8> {
    let index = match status {
        200 => 8,
        204 => 9,
        206 => 10,
        304 => 11,
        400 => 12,
        404 => 13,
        500 => 14,
        _ => 0,
    };
    if index > 0 {
        return vec![0x80 | index];
    }
    let digits = status.to_string();
    let mut out = vec![0x08, digits.len() as u8];
    out.extend_from_slice(digits.as_bytes());
    out
}

async fn play(mut stream: TcpStream, script: Arc<H2Script>, c: Arc<H2FrameCounters>) {
    let mut reader = FrameReader::default();
    let mut current: u32 = 0;
    let mut mark: Option<usize> = None;
    let mut i = 0;
    loop {
        let Some(step) = script.steps.get(i) else {
            match mark {
                Some(m) => {
                    i = m;
                    continue;
                }
                None => break,
            }
        };
        i += 1;
        let out = match step {
            H2Step::ReadPreface => {
                let mut got = [0u8; 24];
                if stream.read_exact(&mut got).await.is_err() || got != PREFACE {
                    return;
                }
                continue;
            }
            H2Step::ReadRequest => {
                match reader.until_headers(&mut stream, &c).await {
                    Some(id) => {
                        current = id;
                        c.requests.fetch_add(1, Ordering::SeqCst);
                    }
                    None => return,
                }
                continue;
            }
            H2Step::Settings(pairs) => {
                let mut payload = Vec::new();
                for (id, value) in pairs {
                    payload.extend_from_slice(&id.to_be_bytes());
                    payload.extend_from_slice(&value.to_be_bytes());
                }
                encode_frame(frame::SETTINGS, 0, 0, &payload)
            }
            H2Step::SettingsAck => encode_frame(frame::SETTINGS, frame::ACK, 0, &[]),
            H2Step::Respond { status, body } => {
                let mut out = if body.is_empty() {
                    encode_frame(
                        frame::HEADERS,
                        frame::END_HEADERS | frame::END_STREAM,
                        current,
                        &status_block(*status),
                    )
                } else {
                    encode_frame(
                        frame::HEADERS,
                        frame::END_HEADERS,
                        current,
                        &status_block(*status),
                    )
                };
                if !body.is_empty() {
                    out.extend(encode_frame(frame::DATA, frame::END_STREAM, current, body));
                }
                out
            }
            H2Step::Frame {
                kind,
                flags,
                on,
                payload,
            } => {
                let id = match on {
                    On::Current => current,
                    On::Stream(id) => *id,
                };
                encode_frame(*kind, *flags, id, payload)
            }
            H2Step::GoAway { last_stream, code } => {
                let mut payload = last_stream.to_be_bytes().to_vec();
                payload.extend_from_slice(&code.to_be_bytes());
                encode_frame(frame::GOAWAY, 0, 0, &payload)
            }
            H2Step::RstStream(code) => {
                encode_frame(frame::RST_STREAM, 0, current, &code.to_be_bytes())
            }
            H2Step::Raw(bytes) => bytes.clone(),
            H2Step::Wait(d) => {
                tokio::time::sleep(*d).await;
                continue;
            }
            H2Step::Hold => {
                while reader.next(&mut stream, &c).await.is_some() {}
                return;
            }
            H2Step::Close => break,
            H2Step::Loop => {
                mark = Some(i);
                continue;
            }
        };
        if stream.write_all(&out).await.is_err() {
            return;
        }
    }
    let _ = stream.shutdown().await;
}

/// Reads the client's frames from a buffer of what has arrived.
#[derive(Default)]
struct FrameReader {
    buf: Vec<u8>,
}

impl FrameReader {
    /// The next frame's type, flags and stream (its payload is skipped); `None` at EOF.
    async fn next(&mut self, stream: &mut TcpStream, c: &H2FrameCounters) -> Option<(u8, u32)> {
        loop {
            if self.buf.len() >= 9 {
                let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
                if self.buf.len() >= 9 + len {
                    let kind = self.buf[3];
                    let id =
                        u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]])
                            & 0x7fff_ffff;
                    if kind == frame::GOAWAY && len >= 8 {
                        let code = u32::from_be_bytes([
                            self.buf[13],
                            self.buf[14],
                            self.buf[15],
                            self.buf[16],
                        ]);
                        c.client_goaways.lock().expect("not poisoned").push(code);
                    }
                    self.buf.drain(..9 + len);
                    return Some((kind, id));
                }
            }
            let mut chunk = [0u8; 16384];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Skips frames until a HEADERS frame; returns its stream.
    async fn until_headers(&mut self, stream: &mut TcpStream, c: &H2FrameCounters) -> Option<u32> {
        loop {
            let (kind, id) = self.next(stream, c).await?;
            if kind == frame::HEADERS {
                return Some(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_status_blocks_are_encoded_as_the_rfc_says() {
        assert_eq!(
            encode_frame(frame::RST_STREAM, 0, 3, &code::REFUSED_STREAM.to_be_bytes()),
            [0, 0, 4, 3, 0, 0, 0, 0, 3, 0, 0, 0, 7]
        );
        assert_eq!(status_block(200), [0x88]);
        assert_eq!(status_block(503), [0x08, 3, b'5', b'0', b'3']);
    }
}
