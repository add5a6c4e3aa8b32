//! An HTTP/2 connection's bytes, counted as they cross (frames, headers included, before
//! TLS: what HTTP/1.1's counts are, its bytes written and read). The h2 library writes the
//! HEADERS frames and reads the server's itself, so counting request bodies and DATA frames
//! alone said "Sent 0 B" for 2,000 GETs. The counts are a worker thread's, shared by its
//! connections (one thread, no atomics); each request that ends takes what crossed since the
//! last one did ([`WireBytes::take`]), so the totals and the timeline are the wire's exactly
//! while a single request's share of a multiplexed connection is not known (nor reported).
//! It must not change a byte.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes a thread's HTTP/2 connections wrote and read, not yet booked.
#[derive(Debug, Default)]
pub(crate) struct WireBytes {
    written: Cell<u64>,
    read: Cell<u64>,
}

impl WireBytes {
    /// (written, read) since the last take.
    pub fn take(&self) -> (u64, u64) {
        (self.written.replace(0), self.read.replace(0))
    }
}

/// A connection whose bytes go to `wire`.
pub(crate) struct Counted<T> {
    io: T,
    wire: Rc<WireBytes>,
}

impl<T> Counted<T> {
    pub fn new(io: T, wire: Rc<WireBytes>) -> Self {
        Counted { io, wire }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let n = (buf.filled().len() - before) as u64;
            self.wire.read.set(self.wire.read.get() + n);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.wire.written.set(self.wire.written.get() + n as u64);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = polled {
            self.wire.written.set(self.wire.written.get() + n as u64);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(flavor = "current_thread")]
    async fn every_byte_each_way_is_counted_once_and_passed_unchanged() {
        let (a, mut b) = tokio::io::duplex(64);
        let wire = Rc::new(WireBytes::default());
        let mut counted = Counted::new(a, wire.clone());
        counted.write_all(b"PRI * HTTP/2.0\r\n").await.unwrap();
        let mut got = [0u8; 16];
        b.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"PRI * HTTP/2.0\r\n");
        b.write_all(&[7u8; 40]).await.unwrap();
        let mut back = [0u8; 40];
        counted.read_exact(&mut back).await.unwrap();
        assert_eq!(back, [7u8; 40]);
        assert_eq!(wire.take(), (16, 40));
        assert_eq!(wire.take(), (0, 0), "taken once");
    }
}
