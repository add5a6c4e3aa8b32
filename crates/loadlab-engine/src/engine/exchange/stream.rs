//! The socket of one HTTP/1.1 connection: plain TCP, TLS over TCP, or TCP whose reads carry
//! the kernel's receive time, and how it is opened (TCP connect, then the TLS handshake).
//! It reads and writes bytes; it knows nothing of HTTP and records only the connect.

use super::super::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// An open connection: plain TCP, or TLS over TCP.
pub(in crate::engine) enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// Plain TCP whose reads carry the kernel's receive time (an open loop on a tick).
    Stamped(super::super::stamped::StampedTcp),
}

impl Stream {
    /// When the bytes of the last read arrived, where the kernel stamped them.
    #[inline]
    pub(super) fn last_rx(&self) -> Option<Instant> {
        match self {
            Stream::Stamped(s) => s.last_rx(),
            _ => None,
        }
    }
}

impl AsyncRead for Stream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Stream::Stamped(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(_) | Stream::Stamped(_) => Poll::Ready(Ok(())),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Stream::Stamped(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Opens a connection: TCP, then TLS for https. The failure carries a detail worth showing
/// (a certificate's problem) when there is one.
pub(in crate::engine) async fn connect(
    ctx: &ThreadCtx,
    phase: Phase,
) -> Result<Stream, (ErrorClass, Option<String>)> {
    let started = Instant::now();
    let tcp = match tokio::time::timeout(ctx.connect_timeout, TcpStream::connect(ctx.address)).await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err((ErrorClass::from_connect(&e), None)),
        Err(_) => return Err((ErrorClass::ConnectTimeout, None)),
    };
    // Requests are written whole; Nagle would only delay them.
    let _ = tcp.set_nodelay(true);
    let connected = Instant::now();
    {
        let mut rec = ctx.recorder.borrow_mut();
        let stats = rec.phase(phase);
        stats.connections_opened += 1;
        stats
            .connect
            .saturating_record((connected - started).as_nanos() as u64);
    }
    let Some(tls) = &ctx.tls else {
        if let Some(clock) = ctx.stamp_clock {
            if super::super::stamped::StampedTcp::enable_stamps(&tcp) {
                return super::super::stamped::StampedTcp::new(tcp, clock)
                    .map(Stream::Stamped)
                    .map_err(|e| (ErrorClass::from_io(&e), None));
            }
        }
        return Ok(Stream::Plain(tcp));
    };
    let budget = ctx.connect_timeout.saturating_sub(connected - started);
    let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
    let stream = match tokio::time::timeout(budget, handshake).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let (class, detail) = crate::tls::classify_handshake_error(&e);
            return Err((class, Some(detail)));
        }
        Err(_) => {
            return Err((
                ErrorClass::ConnectTimeout,
                Some("the TLS handshake did not finish within --connect-timeout".into()),
            ))
        }
    };
    let resumed = stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    let mut rec = ctx.recorder.borrow_mut();
    let stats = rec.phase(phase);
    stats
        .tls_handshake
        .saturating_record(connected.elapsed().as_nanos() as u64);
    if resumed {
        stats.tls_resumed += 1;
    } else {
        stats.tls_full += 1;
    }
    Ok(Stream::Tls(Box::new(stream)))
}
