//! A plain TCP connection whose reads carry the kernel's receive time (`SO_TIMESTAMPNS`).
//!
//! Used by the open loop over plain HTTP/1.1: the thread sleeps from one due time (or tick) to
//! the next and does not wake for each response, so when it reads a response, the response
//! may have been waiting since before the thread's last sleep ended. The kernel stamps every packet when it reaches the socket; `recvmsg`
//! hands that stamp back with the bytes, so a response's end (and first byte) are when they
//! arrived, not when loadlab got round to reading them. On one machine the stamp is taken in
//! the server's `send`, as the packet is delivered over loopback.
//!
//! tokio's `TcpStream` cannot do `recvmsg` with control messages while keeping its short-read
//! rule (a read shorter than the buffer proves the socket drained, so readiness is cleared
//! without an `EAGAIN` read); `AsyncFd` lets us keep that rule by hand.

use std::io;
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Maps the kernel's receive stamps (`CLOCK_REALTIME`) onto `Instant` (`CLOCK_MONOTONIC`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct StampClock {
    /// The same moment on both clocks.
    base: Instant,
    base_real_ns: i128,
}

impl StampClock {
    /// Reads both clocks a few times and keeps the pair read closest together.
    pub fn new() -> StampClock {
        let mut best: Option<(Duration, StampClock)> = None;
        for _ in 0..5 {
            let before = Instant::now();
            let real = SystemTime::now();
            let after = Instant::now();
            let Ok(since_epoch) = real.duration_since(SystemTime::UNIX_EPOCH) else {
                continue;
            };
            let gap = after - before;
            let clock = StampClock {
                base: before + gap / 2,
                base_real_ns: since_epoch.as_nanos() as i128,
            };
            if best.as_ref().is_none_or(|(g, _)| gap < *g) {
                best = Some((gap, clock));
            }
        }
        best.map_or(
            StampClock {
                base: Instant::now(),
                base_real_ns: 0,
            },
            |(_, c)| c,
        )
    }

    /// The instant of a realtime stamp, or `None` if it cannot be represented.
    pub fn instant(&self, real_ns: i128) -> Option<Instant> {
        if self.base_real_ns == 0 {
            return None;
        }
        let delta = real_ns - self.base_real_ns;
        let magnitude = Duration::from_nanos(delta.unsigned_abs().min(u64::MAX as u128) as u64);
        if delta >= 0 {
            self.base.checked_add(magnitude)
        } else {
            self.base.checked_sub(magnitude)
        }
    }
}

/// A plain TCP stream read with `recvmsg`, keeping the receive stamp of the last read.
pub(crate) struct StampedTcp {
    io: AsyncFd<std::net::TcpStream>,
    clock: StampClock,
    /// When the bytes of the last read arrived (the stamp of its last packet).
    last_rx: Option<Instant>,
}

impl StampedTcp {
    /// Asks the kernel to stamp what `tcp` receives; false if it would not.
    pub fn enable_stamps(tcp: &tokio::net::TcpStream) -> bool {
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and a c_int option value of the right size.
        let rc = unsafe {
            libc::setsockopt(
                tcp.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        rc == 0
    }

    /// Takes over a connected tokio stream (after [`StampedTcp::enable_stamps`]).
    pub fn new(tcp: tokio::net::TcpStream, clock: StampClock) -> io::Result<StampedTcp> {
        let std = tcp.into_std()?;
        // SAFETY: the stream moves into the AsyncFd, which owns it until dropped, so the
        // descriptor stays open and the same for the registration's whole life.
        let io = unsafe { AsyncFd::register(std) }.map_err(|e| e.into_parts().1)?;
        Ok(StampedTcp {
            io,
            clock,
            last_rx: None,
        })
    }

    /// When the bytes of the last read reached the socket.
    pub fn last_rx(&self) -> Option<Instant> {
        self.last_rx
    }

    /// One `recvmsg`: the byte count and the receive stamp (nanoseconds since the epoch).
    fn recv(fd: libc::c_int, buf: &mut [std::mem::MaybeUninit<u8>]) -> io::Result<(usize, i128)> {
        // Room for one SCM_TIMESTAMPNS message, aligned as cmsghdr requires.
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        // SAFETY: msg points at live buffers of the lengths it states.
        let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = 0i128;
        // SAFETY: walking the control buffer the kernel filled, with the libc helpers.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                let c = &*cmsg;
                if c.cmsg_level == libc::SOL_SOCKET && c.cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                    stamp = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
        }
        Ok((n as usize, stamp))
    }
}

impl AsyncRead for StampedTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.io.poll_read_ready(cx))?;
            let fd = this.io.as_raw_fd();
            // SAFETY: recvmsg only writes into the unfilled part, and we mark as filled
            // exactly the bytes it reports.
            let unfilled = unsafe { buf.unfilled_mut() };
            let room = unfilled.len();
            match Self::recv(fd, unfilled) {
                Ok((n, stamp)) => {
                    // A short read drained the socket (as tokio's own rule): wait for the
                    // next readiness event instead of reading again for EAGAIN.
                    if n < room {
                        guard.clear_ready();
                    }
                    // SAFETY: the kernel initialised these n bytes.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    let now = Instant::now();
                    // Never later than now, whatever the clocks did.
                    this.last_rx = Some(match this.clock.instant(stamp) {
                        Some(t) if t <= now => t,
                        _ => now,
                    });
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for StampedTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            let mut guard = ready!(this.io.poll_write_ready(cx))?;
            // SAFETY: a valid socket and a live buffer of the given length. MSG_NOSIGNAL: a
            // closed peer is an error, not a SIGPIPE.
            let n = unsafe {
                libc::send(
                    this.io.as_raw_fd(),
                    data.as_ptr().cast(),
                    data.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                return Poll::Ready(Ok(n as usize));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => guard.clear_ready(),
                io::ErrorKind::Interrupted => continue,
                _ => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.get_ref().shutdown(std::net::Shutdown::Write)?;
        Poll::Ready(Ok(()))
    }
}

/// Blocks the thread until `at` (no event loop runs meanwhile: that is the point).
pub(crate) fn sleep_blocking_until(at: Instant) {
    let now = Instant::now();
    if at > now {
        std::thread::sleep(at - now);
    }
}

/// Asks the kernel to wake this thread's sleeps on time: the default 50 µs timer slack
/// would make every tick that much late.
pub(crate) fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer and only affects this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn stamps_map_onto_instants() {
        let clock = StampClock::new();
        let real = |d: i128| clock.base_real_ns + d;
        assert_eq!(clock.instant(real(0)), Some(clock.base));
        assert_eq!(
            clock.instant(real(1_500)),
            Some(clock.base + Duration::from_nanos(1_500))
        );
        assert_eq!(
            clock.instant(real(-2_000_000)),
            clock.base.checked_sub(Duration::from_millis(2))
        );
    }

    /// A response that sat in the socket for 50 ms is stamped when it arrived, not when read.
    #[test]
    fn a_late_read_carries_the_arrival_time() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (written, answered) = std::sync::mpsc::channel();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).unwrap();
            s.write_all(b"world").unwrap();
            written.send(()).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        rt.block_on(async {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            assert!(StampedTcp::enable_stamps(&tcp));
            let mut s = StampedTcp::new(tcp, StampClock::new()).unwrap();
            s.write_all(b"hello").await.unwrap();
            // Waited for, not assumed: the server has written the answer (over loopback it is
            // in our socket when its write returns), then it sits there 50 ms before the read.
            // An order, not a guess at how soon a busy machine's server answers: the stamp is
            // no later than the moment we knew the answer was in, so it predates the read by
            // at least the 50 ms slept since.
            answered
                .recv_timeout(Duration::from_secs(30))
                .expect("the server answers");
            let known_in = Instant::now();
            std::thread::sleep(Duration::from_millis(50));
            let before_read = Instant::now();
            let mut buf = [0u8; 16];
            let n = s.read(&mut buf).await.unwrap();
            assert_eq!(&buf[..n], b"world");
            let rx = s.last_rx().expect("a stamp");
            assert!(rx <= known_in, "stamped after it was known to be in");
            let waited = before_read - rx;
            assert!(
                waited >= Duration::from_millis(50),
                "the stamp should predate the read by the 50 ms wait, was {waited:?}"
            );
            s.shutdown().await.unwrap();
        });
        server.join().unwrap();
    }
}
