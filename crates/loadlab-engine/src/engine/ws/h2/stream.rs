//! One HTTP/2 stream as the byte stream under a WebSocket (RFC 8441, section 5: after the
//! extended CONNECT's 2xx, the stream's DATA frames carry the WebSocket's frames both ways),
//! so tungstenite reads and writes it as it does a TCP connection.
//!
//! Flow control: what is read is released to the server's window as soon as it is taken off
//! the stream (at most one DATA frame is held here, so the window bounds nothing else); a
//! write first reserves window and writes only what was granted. A stream the server resets,
//! or a connection it sends away (GOAWAY), comes out as an I/O error holding the `h2::Error`,
//! which `crate::ws::classify` turns into `stream_reset` or `goaway`. It must not buffer more
//! than one frame each way.

use bytes::{Buf as _, Bytes};
use h2::{Reason, RecvStream, SendStream};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A WebSocket's HTTP/2 stream, with what keeps its place on the connection.
pub(in crate::engine) struct H2Io {
    send: SendStream<Bytes>,
    recv: RecvStream,
    /// What the last DATA frame still holds, not yet read.
    unread: Bytes,
    /// END_STREAM sent: this side wrote its last.
    ended: bool,
    /// The stream the server lets this WebSocket have, and its place on the connection: both
    /// freed when it is dropped.
    _held: super::conns::Held,
}

impl H2Io {
    pub fn new(send: SendStream<Bytes>, recv: RecvStream, held: super::conns::Held) -> H2Io {
        H2Io {
            send,
            recv,
            unread: Bytes::new(),
            ended: false,
            _held: held,
        }
    }

    /// Why a write could not go: the server's reset (a NO_ERROR or CANCEL one is the stream's
    /// end, as a closed TCP connection's), or the connection's error.
    fn poll_why(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        Poll::Ready(match ready!(self.send.poll_reset(cx)) {
            Ok(Reason::NO_ERROR | Reason::CANCEL | Reason::STREAM_CLOSED) => {
                io::ErrorKind::BrokenPipe.into()
            }
            Ok(reason) => io::Error::other(h2::Error::from(reason)),
            Err(e) => as_io(e),
        })
    }
}

/// An h2 error as an I/O error that keeps it (a connection's own I/O error as itself).
pub(in crate::engine) fn as_io(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e.into_io().unwrap_or_else(|| io::ErrorKind::Other.into());
    }
    io::Error::other(e)
}

impl AsyncRead for H2Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        while self.unread.is_empty() {
            match ready!(self.recv.poll_data(cx)) {
                // The server ended its side: the WebSocket's end of file.
                None => return Poll::Ready(Ok(())),
                Some(Ok(data)) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    self.unread = data;
                }
                Some(Err(e)) => return Poll::Ready(Err(as_io(e))),
            }
        }
        let n = self.unread.len().min(buf.remaining());
        buf.put_slice(&self.unread[..n]);
        self.unread.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for H2Io {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.send.reserve_capacity(buf.len());
        let granted = loop {
            match ready!(self.send.poll_capacity(cx)) {
                // Granted, then taken back: wait for the next grant.
                Some(Ok(0)) => continue,
                Some(Ok(n)) => break n.min(buf.len()),
                // The stream is gone: why, from its reset.
                _ => return self.poll_why(cx).map(Err),
            }
        };
        let data = Bytes::copy_from_slice(&buf[..granted]);
        match self.send.send_data(data, false) {
            Ok(()) => Poll::Ready(Ok(granted)),
            Err(_) => self.poll_why(cx).map(Err),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The connection's driver writes what the stream buffered.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.end();
        Poll::Ready(Ok(()))
    }
}

impl H2Io {
    /// END_STREAM: this side's last word, as a TCP connection's FIN.
    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            let _ = self.send.send_data(Bytes::new(), true);
        }
    }
}

impl Drop for H2Io {
    fn drop(&mut self) {
        // A WebSocket dropped after its goodbye ends its stream cleanly rather than by a
        // reset (which h2 sends for a stream dropped half-open).
        self.end();
    }
}
