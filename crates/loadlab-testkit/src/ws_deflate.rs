//! A WebSocket server for tests that speaks permessage-deflate (RFC 7692), which
//! tungstenite's server side does not: tungstenite answers the upgrade (with the extension
//! answer a test gives), then frames are read and written here by hand, DEFLATE being
//! flate2's. It counts what it read as a client's count is held to: messages, those that
//! came compressed (RSV1), their bytes on the wire and inflated, the offers it saw, and the
//! client's messages it could not inflate. It echoes each message compressed, or in
//! fragments with a ping between them, or answers the first with a decompression bomb.
//!
//! Its frames' side (`serve_frames`) also serves `crate::ws_h2`'s WebSockets over HTTP/2.
//!
//! It must not listen anywhere but 127.0.0.1.

use crate::background::Background;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// What the server does once upgraded.
#[derive(Debug, Clone)]
pub enum DeflateBehavior {
    /// Echo each message, deflated as `answer` agreed (when the client offered the
    /// extension; plain frames otherwise).
    Echo,
    /// Echo each message deflated in `fragments` frames, a ping between each two.
    Fragmented { fragments: usize },
    /// Answer the first message with a compressed one that inflates to `bytes` zeros.
    Bomb { bytes: usize },
}

#[derive(Debug, Default)]
pub struct DeflateCounters {
    pub upgraded: AtomicU64,
    /// Text and binary messages read, and those that came compressed.
    pub messages: AtomicU64,
    pub compressed: AtomicU64,
    /// The messages' payload bytes on the wire, and inflated.
    pub wire_bytes: AtomicU64,
    pub payload_bytes: AtomicU64,
    /// Compressed messages that did not inflate (a client that kept its window when told
    /// not to fails here).
    pub bad: AtomicU64,
    /// Close frames read.
    pub closes: AtomicU64,
    /// Each upgrade's `Sec-WebSocket-Extensions` (empty: none offered).
    pub offers: Mutex<Vec<String>>,
}

pub struct DeflateServer {
    background: Background,
    counters: Arc<DeflateCounters>,
}

impl DeflateServer {
    /// `answer`: the server's `Sec-WebSocket-Extensions` when the client offered
    /// permessage-deflate (e.g. `permessage-deflate; server_no_context_takeover`).
    pub fn start(behavior: DeflateBehavior, answer: &str) -> DeflateServer {
        let counters = Arc::new(DeflateCounters::default());
        let (c, answer) = (counters.clone(), answer.to_string());
        let background = Background::serve_each(move |stream| {
            serve(stream, behavior.clone(), answer.clone(), c.clone())
        });
        DeflateServer {
            background,
            counters,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{}", self.background.addr, path)
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn counters(&self) -> &DeflateCounters {
        &self.counters
    }
}

async fn serve(
    stream: TcpStream,
    behavior: DeflateBehavior,
    answer: String,
    c: Arc<DeflateCounters>,
) {
    let offered = Arc::new(Mutex::new(String::new()));
    let (seen, answered) = (offered.clone(), answer.clone());
    // The error type is tungstenite's `Callback` signature, not ours to shrink.
    #[allow(clippy::result_large_err)]
    let callback = move |req: &Request, mut res: Response| {
        let offer = req
            .headers()
            .get("sec-websocket-extensions")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        if offered_and_answered(&offer, &answered) {
            res.headers_mut()
                .insert("sec-websocket-extensions", answered.parse().unwrap());
        }
        *seen.lock().unwrap() = offer;
        Ok(res)
    };
    let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    let offer = offered.lock().unwrap().clone();
    // The frames from here are this server's: tungstenite read nothing past the upgrade
    // (a client sends no frame before the 101).
    serve_frames(ws.into_inner(), &offer, &answer, &behavior, &c).await;
}

/// Serves one upgraded WebSocket's frames on `io` as `behavior` says, deflated when `offer`
/// (the client's `Sec-WebSocket-Extensions`) named permessage-deflate and `answer` (the
/// server's) agreed it; counted in `c`. Also a WebSocket over an HTTP/2 stream's
/// (`crate::ws_h2`), RFC 8441 carrying the same negotiation.
pub(crate) async fn serve_frames<T>(
    io: T,
    offer: &str,
    answer: &str,
    behavior: &DeflateBehavior,
    c: &DeflateCounters,
) where
    T: AsyncRead + AsyncWrite + Unpin,
{
    c.upgraded.fetch_add(1, Ordering::SeqCst);
    c.offers.lock().unwrap().push(offer.to_string());
    let agreed = offered_and_answered(offer, answer);
    let mut peer = Peer {
        io,
        inflate: Decompress::new(false),
        deflate: Compress::new(Compression::fast(), false),
        agreed,
        // What the answer agreed: the client starts each message afresh (so must this
        // side's inflater, or a client that did not would go unnoticed), and so does the
        // server.
        reset_inflate: agreed && answer.contains("client_no_context_takeover"),
        reset_deflate: agreed && answer.contains("server_no_context_takeover"),
    };
    let _ = peer.run(behavior, c).await;
}

/// Whether the server's `answer` is given: the client offered the extension and the server
/// has an answer to give.
pub(crate) fn offered_and_answered(offer: &str, answer: &str) -> bool {
    offer.contains("permessage-deflate") && !answer.is_empty()
}

/// One frame as read: its first byte's bits and its payload, unmasked.
struct Frame {
    fin: bool,
    rsv1: bool,
    opcode: u8,
    payload: Vec<u8>,
}

struct Peer<T> {
    io: T,
    inflate: Decompress,
    deflate: Compress,
    agreed: bool,
    reset_inflate: bool,
    reset_deflate: bool,
}

/// The tail a compressed message's sender strips, and its receiver adds back.
const TAIL: [u8; 4] = [0, 0, 0xff, 0xff];

impl<T: AsyncRead + AsyncWrite + Unpin> Peer<T> {
    async fn run(
        &mut self,
        behavior: &DeflateBehavior,
        c: &DeflateCounters,
    ) -> std::io::Result<()> {
        loop {
            // A message: its frames, control ones between them handled as they come.
            let (mut message, mut opcode, mut compressed, mut wire) = (Vec::new(), 0, false, 0);
            loop {
                let f = self.read_frame().await?;
                match f.opcode {
                    8 => {
                        c.closes.fetch_add(1, Ordering::SeqCst);
                        self.write_frame(true, false, 8, &f.payload).await?;
                        return Ok(());
                    }
                    9 => {
                        self.write_frame(true, false, 10, &f.payload).await?;
                        continue;
                    }
                    10 => continue,
                    0 => {}
                    op => {
                        opcode = op;
                        compressed = f.rsv1;
                    }
                }
                wire += f.payload.len();
                message.extend_from_slice(&f.payload);
                if f.fin {
                    break;
                }
            }
            c.messages.fetch_add(1, Ordering::SeqCst);
            c.wire_bytes.fetch_add(wire as u64, Ordering::SeqCst);
            if compressed {
                c.compressed.fetch_add(1, Ordering::SeqCst);
                match self.inflated(&message) {
                    Some(m) => message = m,
                    None => {
                        c.bad.fetch_add(1, Ordering::SeqCst);
                        return Ok(());
                    }
                }
            }
            c.payload_bytes
                .fetch_add(message.len() as u64, Ordering::SeqCst);
            match behavior {
                DeflateBehavior::Echo => self.send(opcode, &message, 1).await?,
                DeflateBehavior::Fragmented { fragments } => {
                    self.send(opcode, &message, *fragments).await?
                }
                DeflateBehavior::Bomb { bytes } => {
                    let bomb = self.bomb(*bytes);
                    self.write_frame(true, true, 2, &bomb).await?;
                }
            }
        }
    }

    fn inflated(&mut self, message: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(message.len() * 4 + 64);
        for part in [message, &TAIL[..]] {
            let mut input = part;
            loop {
                if out.capacity() - out.len() < 1024 {
                    out.reserve(out.capacity().max(4096));
                }
                let before = self.inflate.total_in();
                self.inflate
                    .decompress_vec(input, &mut out, FlushDecompress::None)
                    .ok()?;
                input = &input[(self.inflate.total_in() - before) as usize..];
                if input.is_empty() && out.len() < out.capacity() {
                    break;
                }
            }
        }
        if self.reset_inflate {
            self.inflate.reset(false);
        }
        Some(out)
    }

    fn deflated(&mut self, message: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(message.len() + 64);
        let mut input = message;
        loop {
            let before = self.deflate.total_in();
            self.deflate
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .unwrap();
            input = &input[(self.deflate.total_in() - before) as usize..];
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
            out.reserve(input.len() + 64);
        }
        if out.ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        if self.reset_deflate {
            self.deflate.reset();
        }
        out
    }

    /// A message, deflated when agreed, in `fragments` frames with a ping between each two.
    async fn send(&mut self, opcode: u8, message: &[u8], fragments: usize) -> std::io::Result<()> {
        let body = if self.agreed {
            self.deflated(message)
        } else {
            message.to_vec()
        };
        let fragments = fragments.clamp(1, body.len().max(1));
        let size = body.len().div_ceil(fragments).max(1);
        let parts: Vec<&[u8]> = if body.is_empty() {
            vec![&body[..]]
        } else {
            body.chunks(size).collect()
        };
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                self.write_frame(true, false, 9, b"between").await?;
            }
            let (first, last) = (i == 0, i + 1 == parts.len());
            let op = if first { opcode } else { 0 };
            self.write_frame(last, first && self.agreed, op, part)
                .await?;
        }
        Ok(())
    }

    /// `bytes` zeros deflated (fast, in pieces: the zeros are never all in memory).
    fn bomb(&mut self, bytes: usize) -> Vec<u8> {
        let zeros = vec![0u8; 64 << 10];
        let mut c = Compress::new(Compression::best(), false);
        let mut out = Vec::with_capacity(bytes / 512 + 1024);
        let mut left = bytes;
        while left > 0 {
            let n = left.min(zeros.len());
            let mut input = &zeros[..n];
            while !input.is_empty() {
                if out.capacity() - out.len() < 1024 {
                    out.reserve(out.capacity());
                }
                let before = c.total_in();
                c.compress_vec(input, &mut out, FlushCompress::None)
                    .unwrap();
                input = &input[(c.total_in() - before) as usize..];
            }
            left -= n;
        }
        loop {
            out.reserve(1024);
            c.compress_vec(&[], &mut out, FlushCompress::Sync).unwrap();
            if out.len() < out.capacity() {
                break;
            }
        }
        if out.ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        out
    }

    async fn read_frame(&mut self) -> std::io::Result<Frame> {
        let mut head = [0u8; 2];
        self.io.read_exact(&mut head).await?;
        let len = match head[1] & 0x7f {
            126 => u64::from(self.io.read_u16().await?),
            127 => self.io.read_u64().await?,
            n => u64::from(n),
        };
        let mut key = [0u8; 4];
        if head[1] & 0x80 != 0 {
            self.io.read_exact(&mut key).await?;
        }
        if len > 64 << 20 {
            return Err(std::io::Error::other("a frame over 64 MiB"));
        }
        let mut payload = vec![0u8; len as usize];
        self.io.read_exact(&mut payload).await?;
        for (i, b) in payload.iter_mut().enumerate() {
            *b ^= key[i % 4];
        }
        Ok(Frame {
            fin: head[0] & 0x80 != 0,
            rsv1: head[0] & 0x40 != 0,
            opcode: head[0] & 0x0f,
            payload,
        })
    }

    /// A frame as a server sends it: unmasked.
    async fn write_frame(
        &mut self,
        fin: bool,
        rsv1: bool,
        opcode: u8,
        payload: &[u8],
    ) -> std::io::Result<()> {
        let mut out = Vec::with_capacity(payload.len() + 10);
        out.push(u8::from(fin) << 7 | u8::from(rsv1) << 6 | opcode);
        match payload.len() {
            n @ 0..=125 => out.push(n as u8),
            n @ 126..=0xffff => {
                out.push(126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(payload);
        self.io.write_all(&out).await
    }
}
