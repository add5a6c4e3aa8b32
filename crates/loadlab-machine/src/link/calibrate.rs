//! Calibrating a capped direction: one TCP connection through the link, a sender writing as
//! fast as it can, a receiver counting. After a settling time (the bucket's free burst, TCP's
//! slow start) the rate is read twice: the payload the receiver got, and the bytes loadlab's
//! end of the pair counted on the wire (headers included: what the cap limits). Bounded: a
//! fraction of a second per direction.

use super::{Link, LinkError};
use crate::netns::Scope;
use crate::rate::Rate;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// What a bulk transfer measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// TCP payload the receiver got, bytes/s.
    pub payload_bytes_per_s: f64,
    /// The same on the wire (loadlab's end of the veth pair counts Ethernet frames).
    pub wire_bytes_per_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// loadlab sends, the namespace receives.
    Up,
    /// The namespace sends, loadlab receives.
    Down,
}

/// Time for the free burst and slow start to pass before measuring.
const SETTLE: Duration = Duration::from_millis(100);
/// The measured window: long enough for this many bytes at the rate, within these bounds.
const WINDOW_BYTES: f64 = 300_000.0;
const WINDOW_MIN: Duration = Duration::from_millis(200);
const WINDOW_MAX: Duration = Duration::from_secs(2);

/// Bytes sent by the interface whose egress carries `direction` (after its qdisc: what the
/// cap let through), from `/proc/net/dev` of that interface's namespace.
fn wire_counter(link: &Link, direction: Direction) -> Option<u64> {
    let (scope, dev) = match direction {
        Direction::Up => (Scope::Own, link.host_device().to_string()),
        Direction::Down => (
            Scope::Netns(link.netns_path()),
            super::names::INSIDE.to_string(),
        ),
    };
    let text = scope
        .run(|| std::fs::read_to_string("/proc/thread-self/net/dev").ok())
        .ok()??;
    tx_bytes(&text, &dev)
}

/// `tx_bytes` of `dev` in a `/proc/net/dev` table (the ninth number after the name).
fn tx_bytes(table: &str, dev: &str) -> Option<u64> {
    table.lines().find_map(|line| {
        let (name, numbers) = line.split_once(':')?;
        (name.trim() == dev).then(|| numbers.split_whitespace().nth(8)?.parse().ok())?
    })
}

fn pump(mut stream: &TcpStream, stop: &AtomicBool) {
    let chunk = vec![0x5au8; 64 * 1024];
    while !stop.load(Ordering::Acquire) {
        if stream.write_all(&chunk).is_err() {
            return;
        }
    }
}

fn drain(mut stream: &TcpStream, count: &AtomicU64) {
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            return;
        }
        count.fetch_add(n as u64, Ordering::Relaxed);
    }
}

pub(super) fn run(link: &Link, direction: Direction, rate: Rate) -> Result<Calibration, LinkError> {
    let fail = |why: String| LinkError(format!("cannot calibrate the link: {why}"));
    let window =
        Duration::from_secs_f64(WINDOW_BYTES / rate.bytes_per_s).clamp(WINDOW_MIN, WINDOW_MAX);
    let received = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let path = link.netns_path();
    let server = link.server_address();
    std::thread::scope(|s| {
        let (received, stop) = (&received, &stop);
        let (port_tx, port_rx) = mpsc::channel::<Result<u16, String>>();
        let (peer_tx, peer_rx) = mpsc::channel::<TcpStream>();
        // The namespace's side: listens, accepts one connection, then sends or counts.
        s.spawn(move || {
            let setup = || -> Result<TcpListener, String> {
                let ns = std::fs::File::open(&path).map_err(|e| e.to_string())?;
                // SAFETY: setns(2) on a descriptor this thread owns; it moves this thread.
                let rc = unsafe {
                    libc::setns(std::os::fd::AsRawFd::as_raw_fd(&ns), libc::CLONE_NEWNET)
                };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error().to_string());
                }
                let listener = TcpListener::bind((server, 0)).map_err(|e| e.to_string())?;
                // Accept with a deadline: a connection that never comes must not hang loadlab.
                listener.set_nonblocking(true).map_err(|e| e.to_string())?;
                Ok(listener)
            };
            let listener = match setup() {
                Ok(l) => l,
                Err(e) => {
                    let _ = port_tx.send(Err(e));
                    return;
                }
            };
            let _ = port_tx.send(
                listener
                    .local_addr()
                    .map(|a| a.port())
                    .map_err(|e| e.to_string()),
            );
            let deadline = Instant::now() + Duration::from_secs(3);
            let stream = loop {
                match listener.accept() {
                    Ok((stream, _)) => break stream,
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            && Instant::now() < deadline =>
                    {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    Err(_) => return,
                }
            };
            drop(listener);
            if stream.set_nonblocking(false).is_err() {
                return;
            }
            if let Ok(handle) = stream.try_clone() {
                let _ = peer_tx.send(handle);
            }
            match direction {
                Direction::Down => pump(&stream, stop),
                Direction::Up => drain(&stream, received),
            }
        });
        let port = port_rx
            .recv_timeout(Duration::from_secs(3))
            .map_err(|_| fail("the namespace's side did not start".into()))?
            .map_err(|e| fail(format!("cannot listen inside the namespace: {e}")))?;
        let host =
            TcpStream::connect_timeout(&SocketAddr::from((server, port)), Duration::from_secs(2))
                .map_err(|e| {
                fail(format!(
                    "cannot connect through the link to {server}:{port}: {e}"
                ))
            })?;
        let peer = peer_rx
            .recv_timeout(Duration::from_secs(3))
            .map_err(|_| fail("the namespace's side did not accept".into()))?;
        let host_handle = host
            .try_clone()
            .map_err(|e| fail(format!("cannot clone a socket: {e}")))?;
        s.spawn(move || match direction {
            Direction::Down => drain(&host_handle, received),
            Direction::Up => pump(&host_handle, stop),
        });
        let read = || {
            (
                Instant::now(),
                received.load(Ordering::Relaxed),
                wire_counter(link, direction),
            )
        };
        std::thread::sleep(SETTLE);
        let (t0, got0, wire0) = read();
        std::thread::sleep(window);
        let (t1, got1, wire1) = read();
        stop.store(true, Ordering::Release);
        // Wakes a sender blocked on a full buffer and a receiver waiting for bytes.
        let _ = host.shutdown(Shutdown::Both);
        let _ = peer.shutdown(Shutdown::Both);
        let secs = (t1 - t0).as_secs_f64();
        let payload = got1.saturating_sub(got0) as f64 / secs;
        if payload <= 0.0 {
            return Err(fail(format!(
                "no bytes went through the link in {:.0} ms",
                secs * 1e3
            )));
        }
        Ok(Calibration {
            payload_bytes_per_s: payload,
            wire_bytes_per_s: match (wire0, wire1) {
                (Some(a), Some(b)) => b.saturating_sub(a) as f64 / secs,
                _ => f64::NAN,
            },
        })
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn tx_bytes_from_proc_net_dev() {
        let table = "Inter-|   Receive                                                |  Transmit\n \
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n \
    lo:    1000      10    0    0    0     0          0         0     2000      20    0    0    0     0       0          0\n \
 veth0: 5 1 0 0 0 0 0 0 1234567 900 0 0 0 0 0 0\n";
        assert_eq!(super::tx_bytes(table, "veth0"), Some(1_234_567));
        assert_eq!(super::tx_bytes(table, "lo"), Some(2000));
        assert_eq!(super::tx_bytes(table, "eth9"), None);
    }
}
