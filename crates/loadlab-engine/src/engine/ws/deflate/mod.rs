//! permessage-deflate (RFC 7692) under tungstenite, which has none (0.30: it neither offers
//! the extension nor reads a frame with RSV1 set): [`Deflated`] sits between tungstenite and
//! the connection, inflating the server's compressed messages into plain frames before
//! tungstenite reads them (`read`) and deflating tungstenite's frames on their way out
//! (`write`); `negotiate` makes the offer and reads the answer. Written by hand because no
//! maintained crate adds the extension to tungstenite (the project's WebSocket library);
//! DEFLATE itself is flate2's (raw streams, its miniz_oxide backend).
//!
//! Until the upgrade's answer is read, [`Deflated`] hands tungstenite its bytes up to the end
//! of the answer's header block and no further: tungstenite keeps what it reads past the
//! answer as the connection's first bytes, and a compressed message the server sent at
//! once would reach it without passing through here. Without the extension agreed, bytes
//! pass untouched (the only cost: one pointer a connection).

mod frame;
pub(in crate::engine) mod negotiate;
mod read;
#[cfg(test)]
mod tests;
mod write;

use super::{OpenFailed, WsIo};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::ws::deflate::{Broken, DeflateTotals};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::WebSocketStream;

pub(in crate::engine) use negotiate::Agreed;

/// Adds the offer to an upgrade request, unless the run says `--ws-no-deflate` (a
/// scenario's steps offer it as a browser does) or the request makes its own; returns what
/// the request offers, which the answer is checked against.
pub(in crate::engine) fn offer(ctx: &ThreadCtx, headers: &mut http::HeaderMap) -> Option<String> {
    let asked = ctx.ws.as_ref().is_none_or(|w| w.config.deflate);
    negotiate::offer(headers, asked)
}

/// The upgrade was answered: its `Sec-WebSocket-Extensions` read against the offer, the
/// layer set to what was agreed, or the connection refused naming what cannot be honoured.
pub(in crate::engine) fn settle(
    ctx: &ThreadCtx,
    ws: &mut WebSocketStream<WsIo>,
    offered: Option<&str>,
    answer: &http::HeaderMap,
    limit: usize,
) -> Result<(), OpenFailed> {
    let agreed = negotiate::agreed(offered, answer).map_err(|detail| OpenFailed {
        class: ErrorClass::WsBadHandshake,
        detail: Some(detail),
        status: None,
    })?;
    let totals = ctx.ws.as_ref().map(|w| w.totals.deflate.clone());
    if let (Some(t), Some(_)) = (&totals, offered) {
        t.upgraded(agreed.is_some());
    }
    match ws.get_mut() {
        WsIo::Dialled(d) => d.agreed(agreed, limit, totals),
        WsIo::H2(d) => d.agreed(agreed, limit, totals),
    }
    Ok(())
}

/// A WebSocket's bytes between tungstenite and the connection `S`.
pub(in crate::engine) struct Deflated<S> {
    inner: S,
    input: InBuf,
    mode: Mode,
}

enum Mode {
    /// Reading the upgrade's answer: how many line ends in a row were just handed over
    /// (`\r` aside); two end the header block.
    Handshake {
        line_ends: u8,
    },
    /// No extension: bytes pass as they are.
    Plain,
    Deflate(Box<Deflate>),
}

struct Deflate {
    read: read::Inflating,
    write: write::Deflating,
    tally: Tally,
}

impl<S> Deflated<S> {
    /// A connection whose upgrade is yet to be answered.
    pub(in crate::engine) fn new(inner: S) -> Deflated<S> {
        Deflated {
            inner,
            input: InBuf::default(),
            mode: Mode::Handshake { line_ends: 0 },
        }
    }

    /// The upgrade was answered: from now on, messages are deflated as `agreed` says (none
    /// when `None`), a message from the server inflating to at most `limit` bytes.
    pub(in crate::engine) fn agreed(
        &mut self,
        agreed: Option<Agreed>,
        limit: usize,
        totals: Option<Arc<DeflateTotals>>,
    ) {
        if self.input.data().is_empty() {
            // The answer's read buffer, kept no longer than the handshake (idle connections
            // read a few bytes at a time from now on).
            self.input = InBuf::default();
        }
        self.mode = match agreed {
            None => Mode::Plain,
            Some(a) => Mode::Deflate(Box::new(Deflate {
                read: read::Inflating::new(limit, a.server_no_context_takeover),
                write: write::Deflating::new(a.client_no_context_takeover),
                tally: Tally(totals),
            })),
        };
    }

    /// Writes out what deflating left pending.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>
    where
        S: AsyncWrite + Unpin,
    {
        let Mode::Deflate(d) = &mut self.mode else {
            return Poll::Ready(Ok(()));
        };
        let w = &mut d.write;
        while w.pending_pos < w.pending.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &w.pending[w.pending_pos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            w.pending_pos += n;
        }
        w.pending.clear();
        w.pending_pos = 0;
        if w.pending.capacity() > read::KEEP_BYTES {
            w.pending = Vec::new();
        }
        Poll::Ready(Ok(()))
    }
}

/// Above this many bytes pending, a write waits for the connection before taking more.
const PENDING_HIGH_BYTES: usize = 64 << 10;

impl<S: AsyncRead + Unpin> AsyncRead for Deflated<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match &mut this.mode {
            Mode::Deflate(d) => {
                d.read
                    .poll_read(&mut this.inner, cx, &mut this.input, &d.tally, buf)
            }
            Mode::Plain if this.input.data().is_empty() => {
                if this.input.bytes.capacity() > 0 {
                    this.input = InBuf::default();
                }
                Pin::new(&mut this.inner).poll_read(cx, buf)
            }
            Mode::Plain => {
                let n = buf.remaining().min(this.input.data().len());
                buf.put_slice(&this.input.data()[..n]);
                this.input.consume(n);
                Poll::Ready(Ok(()))
            }
            Mode::Handshake { line_ends } => {
                if this.input.data().is_empty()
                    && ready!(this.input.poll_fill(&mut this.inner, cx, buf.remaining()))? == 0
                {
                    return Poll::Ready(Ok(()));
                }
                let data = this.input.data();
                let mut n = 0;
                let mut done = false;
                for &b in &data[..buf.remaining().min(data.len())] {
                    n += 1;
                    match b {
                        b'\n' => *line_ends += 1,
                        b'\r' => {}
                        _ => *line_ends = 0,
                    }
                    if *line_ends == 2 {
                        done = true;
                        break;
                    }
                }
                buf.put_slice(&data[..n]);
                this.input.consume(n);
                if done {
                    this.mode = Mode::Plain;
                }
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Deflated<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let Mode::Deflate(d) = &mut this.mode else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        if d.write.pending.len() - d.write.pending_pos > PENDING_HIGH_BYTES {
            ready!(this.poll_pending(cx))?;
        }
        let Mode::Deflate(d) = &mut this.mode else {
            unreachable!("the mode changes only with `agreed`")
        };
        d.write.accept(buf, &d.tally)?;
        // Sent now if the connection takes it; otherwise the flush that follows sends it.
        if let Poll::Ready(Err(e)) = this.poll_pending(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// Bytes read from the connection and not yet handed on, from `start`.
#[derive(Default)]
pub(super) struct InBuf {
    bytes: Vec<u8>,
    start: usize,
}

/// The least and the most a read from the connection asks for: the most bounds what this
/// layer holds beside tungstenite's own read buffer (64 KiB for large echoes), one a
/// connection; an uncompressed frame's payload is read straight into tungstenite's.
const MIN_READ_BYTES: usize = 512;
const MAX_READ_BYTES: usize = 16 << 10;

impl InBuf {
    fn data(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
    }

    /// Reads up to `want` more bytes (within [`MIN_READ_BYTES`] and [`MAX_READ_BYTES`]);
    /// `Ready(Ok(0))` at the connection's end.
    fn poll_fill<S: AsyncRead + Unpin>(
        &mut self,
        inner: &mut S,
        cx: &mut Context<'_>,
        want: usize,
    ) -> Poll<io::Result<usize>> {
        if self.start > 0 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        let want = want.clamp(MIN_READ_BYTES, MAX_READ_BYTES);
        self.bytes.reserve(want);
        let len = self.bytes.len();
        let spare = &mut self.bytes.spare_capacity_mut()[..want];
        let mut rb = ReadBuf::uninit(spare);
        ready!(Pin::new(inner).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        // SAFETY: the read initialised the first `n` bytes past `len`.
        unsafe { self.bytes.set_len(len + n) };
        Poll::Ready(Ok(n))
    }
}

/// The run's permessage-deflate counts, when it keeps them (a `ws://` run does).
pub(super) struct Tally(Option<Arc<DeflateTotals>>);

impl Tally {
    fn sent(&self, payload: usize, wire: usize, first: bool) {
        if let Some(t) = &self.0 {
            t.sent(payload, wire, first);
        }
    }

    fn received_message(&self) {
        if let Some(t) = &self.0 {
            t.received_message();
        }
    }

    fn received_wire(&self, n: usize) {
        if let Some(t) = &self.0 {
            t.received_wire(n);
        }
    }

    fn received_payload(&self, n: usize) {
        if let Some(t) = &self.0 {
            t.received_payload(n);
        }
    }
}

/// A breach of RFC 7692 by the server, as the I/O error tungstenite passes on
/// ([`crate::ws::classify`] classes it as a protocol error, with this detail).
fn broken(detail: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, Broken(detail))
}
