//! The byte stream under a WebSocket: a dialled connection, upgraded by HTTP/1.1 (RFC 6455),
//! or a stream of an HTTP/2 connection, opened by an extended CONNECT (RFC 8441); either
//! through permessage-deflate's layer (RFC 8441 section 4 carries extensions over HTTP/2 as
//! over HTTP/1.1). tungstenite reads and writes both alike.

use super::deflate::Deflated;
use super::h2::H2Io;
use crate::engine::exchange::Stream;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub(in crate::engine) enum WsIo {
    /// Through permessage-deflate's layer (which passes bytes as they are unless agreed).
    Dialled(Deflated<Stream>),
    /// The same layer over an HTTP/2 stream, its mode set from the CONNECT's 2xx before
    /// tungstenite reads a byte (the answer's header fields never pass through the stream).
    H2(Box<Deflated<H2Io>>),
}

impl AsyncRead for WsIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WsIo::Dialled(s) => Pin::new(s).poll_read(cx, buf),
            WsIo::H2(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WsIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WsIo::Dialled(s) => Pin::new(s).poll_write(cx, buf),
            WsIo::H2(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WsIo::Dialled(s) => Pin::new(s).poll_flush(cx),
            WsIo::H2(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WsIo::Dialled(s) => Pin::new(s).poll_shutdown(cx),
            WsIo::H2(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
