//! The QUIC side of HTTP/3: the client configuration (the run's rustls configuration, with
//! ALPN h3), one UDP endpoint per worker thread (its receive buffer sized), and opening one
//! connection: the QUIC handshake (transport and TLS in one), then HTTP/3's own set-up; with
//! `--http3-0rtt` a connection holding a session ticket starts as a 0-RTT one (`early`).
//! It records only the connection's opening; requests are `h3`'s.

use super::super::exchange::Dialed;
use super::super::{ThreadCtx, ThreadProgress};
use super::classify;
use super::early::{Conn, Early};
use super::Handle;
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::tls::TlsSettings;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The receive buffer asked for each thread's UDP socket. A QUIC client reads every response
/// through one socket: at tens of thousands of responses a second a burst outgrows the
/// kernel's default (about 208 KiB) between two reads, and what does not fit is dropped,
/// then resent after a loss timer: latency that is the generator's, not the server's.
pub const RCVBUF_BYTES: u64 = 4 << 20;

/// The QUIC client configuration for a run: the rustls configuration the run built for TCP
/// (its trust, client certificate, SNI name and resumption), offering h3 by ALPN, and early
/// data with `early_data` (`--http3-0rtt`: the requests sent early are counted apart).
/// `Err`: why it cannot carry QUIC (TLS 1.2 only).
pub(crate) fn client_config(
    tls: &TlsSettings,
    early_data: bool,
) -> Result<quinn::ClientConfig, String> {
    let mut rustls_config = (**tls.connector.config()).clone();
    rustls_config.alpn_protocols = vec![b"h3".to_vec()];
    rustls_config.enable_early_data = early_data;
    let crypto =
        quinn::crypto::rustls::QuicClientConfig::try_from(rustls_config).map_err(|_| {
            "QUIC carries only TLS 1.3 (with TLS_AES_128_GCM_SHA256); drop --tls-version 1.2"
                .to_string()
        })?;
    let mut transport = quinn::TransportConfig::default();
    // An open loop's pooled connection may wait long between requests at a low rate: kept
    // alive, it is not lost to the idle timeout (the request finding it gone would fail).
    transport.keep_alive_interval(Some(KEEP_ALIVE));
    let mut client = quinn::ClientConfig::new(Arc::new(crypto));
    client.transport_config(Arc::new(transport));
    Ok(client)
}

/// How often an idle connection sends a PING: well under the idle timeouts servers set
/// (quinn's default is 30 s).
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// Binds a thread's endpoint: one UDP socket on an ephemeral port that all the thread's
/// connections share (QUIC tells them apart by connection id), read through `bogus_vn`. The socket's receive buffer
/// is sized to [`RCVBUF_BYTES`]; the least any thread got goes to `rcvbuf`, for the result's
/// warning.
pub(super) fn bind(
    target: SocketAddr,
    client: &quinn::ClientConfig,
    rcvbuf: &AtomicU64,
) -> std::io::Result<quinn::Endpoint> {
    let local: SocketAddr = if target.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(local)?;
    let got = size_receive_buffer(&socket, RCVBUF_BYTES);
    rcvbuf.fetch_min(got, Ordering::Relaxed);
    // Version Negotiation packets listing v1 are dropped before quinn reads them
    // (`bogus_vn`).
    let runtime = Arc::new(quinn::TokioRuntime);
    let socket = quinn::Runtime::wrap_udp_socket(&*runtime, socket)?;
    let mut endpoint = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        None,
        Arc::new(super::bogus_vn::DropBogusVn(socket)),
        runtime,
    )?;
    endpoint.set_default_client_config(client.clone());
    Ok(endpoint)
}

/// Asks for a `want`-byte receive buffer and returns what the socket got, in bytes the
/// kernel gives to packets. As root (CAP_NET_ADMIN) SO_RCVBUFFORCE passes over
/// `net.core.rmem_max`; otherwise SO_RCVBUF is capped by it. Linux reports twice the size
/// asked (its bookkeeping share), so the size given back is half what it reports.
fn size_receive_buffer(socket: &UdpSocket, want: u64) -> u64 {
    use std::os::fd::AsRawFd;
    let fd = socket.as_raw_fd();
    let value = want.min(i32::MAX as u64) as libc::c_int;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let set = |option| {
        // SAFETY: `fd` is an open socket for the call's duration; `value` is a c_int and
        // `len` its size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                option,
                (&value as *const libc::c_int).cast(),
                len,
            ) == 0
        }
    };
    if !set(libc::SO_RCVBUFFORCE) {
        set(libc::SO_RCVBUF);
    }
    let mut got: libc::c_int = 0;
    let mut got_len = len;
    // SAFETY: as above; `got` is a c_int and `got_len` its size.
    let ok = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut got as *mut libc::c_int).cast(),
            &mut got_len,
        ) == 0
    };
    if ok {
        (got.max(0) as u64) / 2
    } else {
        0
    }
}

/// One of the thread's open QUIC connections, for the live figures: counted while its driver
/// runs.
pub(super) struct Open(Arc<ThreadProgress>);

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

/// Why a connection could not be opened: its class, and what to tell the user.
pub(super) type OpenError = (ErrorClass, String);

/// Opens an HTTP/3 connection: the QUIC handshake within `--connect-timeout`, recorded in
/// `phase`'s connection figures as TCP's connect and TLS's handshake are (over QUIC they are
/// one: both figures show it), then HTTP/3's own set-up, with its driver spawned on the
/// thread's task set. Nothing is recorded on failure: the caller fails a request with it.
///
/// With `--http3-0rtt` and a session to resume, the connection is usable at once: its
/// handshake ends while its first requests are under way, and is recorded by them
/// (`record_early_handshake`).
pub(super) async fn open(ctx: &ThreadCtx, phase: Phase) -> Result<Handle, OpenError> {
    let h3 = ctx.h3.as_ref().expect("HTTP/3 run");
    let endpoint = h3.endpoint(ctx.address)?;
    let started = Instant::now();
    let connecting = endpoint
        .connect(ctx.address, &h3.shared.server_name)
        .map_err(|e| (ErrorClass::ConnectError, format!("QUIC connect: {e}")))?;
    let connecting = if h3.shared.zero_rtt {
        match connecting.into_0rtt() {
            Ok((connection, accepted)) => {
                let early = Early::new(connection.clone(), accepted, started);
                return set_up(ctx, connection, Some(early), ctx.connect_timeout).await;
            }
            // No session to resume (the run's first connections): a full handshake.
            Err(connecting) => connecting,
        }
    } else {
        connecting
    };
    let connection = match tokio::time::timeout(ctx.connect_timeout, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return Err(classify::handshake(&e, ctx.address)),
        Err(_) => return Err(classify::no_handshake_reply(ctx.address)),
    };
    let took = started.elapsed();
    Dialed {
        connect: took,
        tls: Some((took, false)),
    }
    .record(ctx, phase);
    let budget = ctx.connect_timeout.saturating_sub(took).max(MIN_H3_SETUP);
    set_up(ctx, connection, None, budget).await
}

/// HTTP/3's set-up on a QUIC connection (its control stream and SETTINGS), its driver
/// spawned on the thread's task set (with the 0-RTT handshake's watch).
async fn set_up(
    ctx: &ThreadCtx,
    connection: quinn::Connection,
    early: Option<std::rc::Rc<Early>>,
    budget: Duration,
) -> Result<Handle, OpenError> {
    let wire = std::rc::Rc::new(super::wire::Wire::new(connection.clone()));
    // Its round trip and bytes for the path's figures, until its driver ends (it closed).
    let registered = ctx.stop.quic_paths().add(&connection);
    let setup = ::h3::client::new(Conn::new(connection, early.clone()));
    let (mut driver, send) = match tokio::time::timeout(budget, setup).await {
        Ok(Ok(pair)) => pair,
        Ok(Err(e)) => {
            return Err((
                classify::connection(&e).0,
                format!("HTTP/3 set-up after the QUIC handshake: {e}"),
            ))
        }
        Err(_) => {
            return Err((
                ErrorClass::ConnectTimeout,
                "HTTP/3 set-up did not finish within --connect-timeout".into(),
            ))
        }
    };
    let open = Open::new(&ctx.progress);
    if let Some(early) = &early {
        tokio::task::spawn_local(early.clone().watch(ctx.connect_timeout));
    }
    tokio::task::spawn_local(async move {
        let (_open, _registered) = (open, registered);
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    Ok(Handle {
        send,
        early,
        wire,
        credit: Default::default(),
    })
}

/// A 0-RTT connection's handshake in `phase`'s figures, once it has ended (by the first of
/// its requests to end after it): the connection opened, its handshake in the connect
/// figure and the early-data one (not in `tls_handshake_us`, which holds the handshakes
/// that sent nothing early), resumed when the server took the early data.
pub(super) fn record_early_handshake(ctx: &ThreadCtx, phase: Phase, early: &Early) {
    use super::early::Outcome;
    let outcome = early.outcome();
    if matches!(outcome, Outcome::Underway | Outcome::Failed) || early.recorded.replace(true) {
        return;
    }
    // Its watch may not have run yet (woken by the same turn that ended this request).
    let took = early.handshake();
    let mut rec = ctx.recorder.borrow_mut();
    let stats = rec.phase(phase);
    stats.connections_opened += 1;
    stats.connect.saturating_record(took.as_nanos() as u64);
    stats.early.record_handshake(took.as_nanos() as u64);
    let e = &mut stats.early.counts;
    e.connections += 1;
    if outcome == Outcome::Accepted {
        e.connections_accepted += 1;
        stats.tls_resumed += 1;
    } else {
        e.connections_rejected += 1;
        stats.tls_full += 1;
    }
}

/// The least time HTTP/3's set-up is given after a handshake that took most of
/// `--connect-timeout`.
const MIN_H3_SETUP: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    /// `UDP_GRO` from linux/udp.h (libc has it for some C libraries only).
    const UDP_GRO: libc::c_int = 104;

    fn int_option(fd: std::os::fd::RawFd, level: libc::c_int, name: libc::c_int) -> Option<i32> {
        let mut value: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `fd` is the endpoint's open socket; `value` is a c_int and `len` its size.
        let ok = unsafe {
            libc::getsockopt(
                fd,
                level,
                name,
                (&mut value as *mut libc::c_int).cast(),
                &mut len,
            )
        } == 0;
        ok.then_some(value)
    }

    /// The socket loadlab binds itself goes through quinn-udp's set-up: receive offload on
    /// (GRO, where the kernel has it) and the receive buffer sized, what the thread got noted.
    #[test]
    fn the_endpoint_socket_has_gro_and_its_receive_buffer() {
        let tls = crate::tls::TlsSpec::default()
            .build("localhost", false)
            .expect("TLS settings");
        let client = client_config(&tls, false).expect("QUIC client configuration");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let got = AtomicU64::new(u64::MAX);
        let target: SocketAddr = "127.0.0.1:443".parse().unwrap();
        runtime.block_on(async {
            let endpoint = bind(target, &client, &got).expect("endpoint");
            let port = endpoint.local_addr().expect("bound").port();
            // The endpoint's socket is the only UDP socket of this process on that port.
            let fd = std::fs::read_dir("/proc/self/fd")
                .expect("/proc/self/fd")
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .find(|&fd| {
                    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
                    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                    // SAFETY: `addr` is a sockaddr_storage and `len` its size; a descriptor
                    // that is not a socket fails the call.
                    let named = unsafe {
                        libc::getsockname(
                            fd,
                            (&mut addr as *mut libc::sockaddr_storage).cast(),
                            &mut len,
                        )
                    } == 0;
                    let sin = (&addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                    // SAFETY: an AF_INET address fits a sockaddr_in.
                    named
                        && addr.ss_family == libc::AF_INET as libc::sa_family_t
                        && u16::from_be(unsafe { (*sin).sin_port }) == port
                        && int_option(fd, libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_DGRAM)
                })
                .expect("the endpoint's socket");
            match int_option(fd, libc::SOL_UDP, UDP_GRO) {
                Some(on) => assert_eq!(on, 1, "quinn-udp turns UDP_GRO on"),
                None => eprintln!("SKIPPED the GRO check: this kernel has no UDP_GRO"),
            }
            let rcvbuf = int_option(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).expect("SO_RCVBUF");
            assert_eq!(got.load(Ordering::Relaxed), rcvbuf as u64 / 2);
            assert!(got.load(Ordering::Relaxed) > 0);
            drop(endpoint);
        });
    }
}
