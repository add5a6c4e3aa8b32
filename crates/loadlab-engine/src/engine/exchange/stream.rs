//! The socket of one HTTP/1.1 connection: plain TCP, TLS over TCP, or TCP whose reads carry
//! the kernel's receive time, and how it is opened (TCP connect, then the TLS handshake).
//! It reads and writes bytes; it knows nothing of HTTP and records only the connect (and a
//! closed loop's connect the run's end abandons).

use super::super::stamped::{StampClock, StampedTcp};
use super::super::{ThreadCtx, ThreadProgress};
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::tls::TlsSettings;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// An open connection, counted among its thread's open ones while it lives.
pub(in crate::engine) struct Stream {
    pub io: Io,
    _open: Open,
}

/// The socket: plain TCP, or TLS over TCP.
pub(in crate::engine) enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
    /// Plain TCP whose reads carry the kernel's receive time (an open loop on a tick).
    Stamped(StampedTcp),
}

/// One of the thread's open connections, for the live figures (`--metrics-out`'s
/// `loadlab_connections_open`): counted when it opens, and no longer when it is dropped,
/// whoever drops it (an HTTP/1.1 exchange, or an HTTP/2 connection's driver).
struct Open(Arc<ThreadProgress>);

impl Open {
    fn new(progress: &Arc<ThreadProgress>) -> Open {
        progress.connections_open.fetch_add(1, Ordering::Relaxed);
        Open(progress.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.connections_open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Stream {
    /// When the bytes of the last read arrived, where the kernel stamped them.
    #[inline]
    pub(in crate::engine) fn last_rx(&self) -> Option<Instant> {
        match &self.io {
            Io::Stamped(s) => s.last_rx(),
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
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Io::Stamped(s) => Pin::new(s).poll_read(cx, buf),
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
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Io::Stamped(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(_) | Io::Stamped(_) => Poll::Ready(Ok(())),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match &mut self.get_mut().io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Io::Stamped(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Where and how a thread's connections are opened: what a connect needs, without the
/// thread's recorder, so that an open loop can open connections before the run starts
/// (`open::preopen`).
/// It borrows the TLS settings: a connect per request (`--no-keepalive`) copies nothing.
#[derive(Clone, Copy)]
pub(in crate::engine) struct Dialer<'a> {
    pub address: SocketAddr,
    pub connect_timeout: Duration,
    pub tls: Option<&'a TlsSettings>,
    /// Plain TCP whose reads carry the kernel's receive time.
    pub stamp_clock: Option<StampClock>,
    /// Where the thread's open connections are counted.
    pub progress: &'a Arc<ThreadProgress>,
}

impl Dialer<'_> {
    pub fn of(ctx: &ThreadCtx) -> Dialer<'_> {
        Dialer {
            address: ctx.address,
            connect_timeout: ctx.connect_timeout,
            tls: ctx.tls.as_ref(),
            stamp_clock: ctx.stamp_clock,
            progress: &ctx.progress,
        }
    }
}

/// What opening one connection took, for a phase's stats.
#[derive(Debug, Clone, Copy)]
pub(in crate::engine) struct Dialed {
    pub connect: Duration,
    /// Over TLS: the handshake's time, and whether it resumed a session.
    pub tls: Option<(Duration, bool)>,
}

impl Dialed {
    pub fn record(&self, ctx: &ThreadCtx, phase: Phase) {
        let mut rec = ctx.recorder.borrow_mut();
        let stats = rec.phase(phase);
        stats.connections_opened += 1;
        stats
            .connect
            .saturating_record(self.connect.as_nanos() as u64);
        if let Some((handshake, resumed)) = self.tls {
            stats
                .tls_handshake
                .saturating_record(handshake.as_nanos() as u64);
            if resumed {
                stats.tls_resumed += 1;
            } else {
                stats.tls_full += 1;
            }
        }
    }
}

/// Why a connection could not be opened, with a detail worth showing (a certificate's
/// problem) when there is one.
pub(in crate::engine) type DialError = (ErrorClass, Option<String>);

/// Opens a connection and records it in `phase`'s stats: TCP, then TLS for https.
pub(in crate::engine) async fn connect(ctx: &ThreadCtx, phase: Phase) -> Result<Stream, DialError> {
    let (dialed, outcome) =
        super::record::unsent_if_abandoned(ctx, phase, dial(&Dialer::of(ctx))).await;
    if let Some(d) = dialed {
        d.record(ctx, phase);
    }
    outcome
}

/// Opens a connection: TCP, then TLS for https. What it took comes back whenever the TCP
/// connect worked, even if the handshake then failed: that still opened a connection.
pub(in crate::engine) async fn dial(d: &Dialer<'_>) -> (Option<Dialed>, Result<Stream, DialError>) {
    let started = Instant::now();
    let tcp = match tokio::time::timeout(d.connect_timeout, TcpStream::connect(d.address)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return (None, Err((ErrorClass::from_connect(&e), None))),
        Err(_) => return (None, Err((ErrorClass::ConnectTimeout, None))),
    };
    // Requests are written whole; Nagle would only delay them.
    let _ = tcp.set_nodelay(true);
    let stream = |io| Stream {
        io,
        _open: Open::new(d.progress),
    };
    let connected = Instant::now();
    let mut dialed = Dialed {
        connect: connected - started,
        tls: None,
    };
    let Some(tls) = d.tls else {
        if let Some(clock) = d.stamp_clock {
            if StampedTcp::enable_stamps(&tcp) {
                let stamped = StampedTcp::new(tcp, clock)
                    .map(|s| stream(Io::Stamped(s)))
                    .map_err(|e| (ErrorClass::from_io(&e), None));
                return (Some(dialed), stamped);
            }
        }
        return (Some(dialed), Ok(stream(Io::Plain(tcp))));
    };
    let budget = d.connect_timeout.saturating_sub(connected - started);
    let handshake = tls.connector.connect(tls.server_name.clone(), tcp);
    let tls_stream = match tokio::time::timeout(budget, handshake).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let (class, detail) = crate::tls::classify_handshake_error(&e);
            return (Some(dialed), Err((class, Some(detail))));
        }
        Err(_) => {
            let detail = "the TLS handshake did not finish within --connect-timeout";
            return (
                Some(dialed),
                Err((ErrorClass::ConnectTimeout, Some(detail.into()))),
            );
        }
    };
    let resumed = tls_stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    dialed.tls = Some((connected.elapsed(), resumed));
    (Some(dialed), Ok(stream(Io::Tls(Box::new(tls_stream)))))
}
