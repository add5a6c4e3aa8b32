//! Bytes a server sent over TCP, from the kernel's own per-socket counters (`sock_diag`, the
//! interface `ss` uses): for every socket of the server's listening port, `tcpi_bytes_acked`,
//! what the peer acknowledged. `/proc/PID/io` cannot serve here: it counts `write(2)` but not
//! `send(2)`, which Rust's std and tokio use, so it reads 0 for a Rust server. The same dump
//! gives each connection's whole `tcp_info` ([`crate::tcp_info`]): the path's figures, from
//! either end ([`tcp_sockets_to`]: a generator's connections to a port).
//!
//! Written by hand: one read-only dump request in a kernel ABI that does not change; the
//! netlink crates would bring four dependencies and an API that moves between versions.

use std::collections::HashMap;

mod connections;
mod own;
pub use connections::{ConnectionDump, Connections};
pub use own::own_connections_to;

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const INET_DIAG_INFO: u16 = 2;
const INET_DIAG_REQ_BYTECODE: u16 = 1;
const INET_DIAG_BC_S_EQ: u8 = 11;
const INET_DIAG_BC_D_EQ: u8 = 12;
const TCP_LISTEN: u32 = 10;

/// One TCP socket as the kernel describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketInfo {
    pub cookie: u64,
    pub local_port: u16,
    pub inode: u32,
    pub listening: bool,
    /// `None` when the kernel gave no `tcp_info` (a listener, a socket being torn down).
    pub bytes_acked: Option<u64>,
    /// The rest of its `tcp_info` (round trips, bytes received, chrono stats).
    pub tcp: Option<crate::tcp_info::TcpStats>,
    /// Bytes sent and not yet acknowledged, or not yet sent (`idiag_wqueue`); 0 for a
    /// listener.
    pub send_queue_bytes: u32,
}

/// Every TCP socket (IPv4 and IPv6) in this network namespace, or those with local port
/// `port` when the kernel can filter (4.16 and later).
pub fn tcp_sockets(port: Option<u16>) -> std::io::Result<Vec<SocketInfo>> {
    let filter = port.map_or(Filter::Any, Filter::Local);
    Ok(query(ALL_STATES, filter)?
        .into_iter()
        .map(|s| s.info)
        .collect())
}

/// Every TCP socket (IPv4 and IPv6) in this network namespace whose remote port is `port`:
/// a client's connections to a server on that port (a generator's own, seen from its side).
pub fn tcp_sockets_to(port: u16) -> std::io::Result<Vec<SocketInfo>> {
    Ok(query(ALL_STATES, Filter::Remote(port))?
        .into_iter()
        .map(|s| s.info)
        .filter(|s| !s.listening)
        .collect())
}

/// TCP sockets (IPv4 and IPv6) in TIME_WAIT with `port` at either end, in this network
/// namespace: a client's sockets towards a server on `port`, and the server's own.
pub fn time_wait(port: u16) -> std::io::Result<u64> {
    Ok(query(1 << TCP_TIME_WAIT, Filter::Either(port))?.len() as u64)
}

/// A listening socket's queue as the kernel holds it (what `ss -lnt` shows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenQueue {
    /// Connections waiting to be accepted now.
    pub waiting: u32,
    /// The most it queues: the backlog the server asked for, capped at `net.core.somaxconn`.
    pub backlog: u32,
}

/// The listening socket on local `port` in this network namespace, if any (the first found,
/// IPv4 then IPv6).
pub fn listen_queue(port: u16) -> std::io::Result<Option<ListenQueue>> {
    Ok(query(1 << TCP_LISTEN, Filter::Local(port))?
        .first()
        .map(|s| ListenQueue {
            waiting: s.rqueue,
            backlog: s.wqueue,
        }))
}

const ALL_STATES: u32 = u32::MAX;
const TCP_TIME_WAIT: u32 = 6;

/// Which sockets the kernel keeps, by port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Filter {
    Any,
    /// The local port.
    Local(u16),
    /// The remote port.
    Remote(u16),
    /// The local or the remote port.
    Either(u16),
}

/// One socket of a dump, with the fields the public functions need.
struct Raw {
    info: SocketInfo,
    /// For a listener: connections waiting to be accepted; else bytes unread.
    rqueue: u32,
    /// For a listener: its backlog; else bytes unsent.
    wqueue: u32,
}

/// Both families; with a port filter an older kernel (before 4.16) refuses, so it falls back
/// to a whole dump filtered here.
fn query(states: u32, filter: Filter) -> std::io::Result<Vec<Raw>> {
    let mut out = Vec::new();
    for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
        match dump(family, states, filter) {
            Ok(s) => out.extend(s.into_iter().map(|p| p.raw)),
            Err(_) if filter != Filter::Any => {
                let mut s = dump(family, states, Filter::Any)?;
                s.retain(|x| match filter {
                    Filter::Any => true,
                    Filter::Local(p) => x.raw.info.local_port == p,
                    Filter::Remote(p) => x.remote_port == p,
                    Filter::Either(p) => x.raw.info.local_port == p || x.remote_port == p,
                });
                out.extend(s.into_iter().map(|r| r.raw));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// A socket as parsed, with the remote port for filtering here.
struct Parsed {
    raw: Raw,
    remote_port: u16,
}

fn dump(family: u8, states: u32, filter: Filter) -> std::io::Result<Vec<Parsed>> {
    let fd = diag_socket()?;
    let mut out = Vec::new();
    exchange(
        &fd,
        &request(family, states, filter),
        &mut vec![0u8; 64 * 1024],
        &mut out,
    )?;
    Ok(out)
}

/// A fresh `NETLINK_SOCK_DIAG` socket.
fn diag_socket() -> std::io::Result<std::os::fd::OwnedFd> {
    // SAFETY: a plain socket(2) call; the descriptor is owned below.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// Sends one dump `request` on `fd` and parses the whole answer into `out`, reading through
/// `buf`. The socket can take the next request once this returned `Ok`.
fn exchange(
    fd: &std::os::fd::OwnedFd,
    request: &[u8],
    buf: &mut [u8],
    out: &mut Vec<Parsed>,
) -> std::io::Result<()> {
    let raw = std::os::fd::AsRawFd::as_raw_fd(fd);
    // SAFETY: the buffer is valid for its length; the kernel is the destination (pid 0).
    let sent = unsafe {
        let mut addr: libc::sockaddr_nl = std::mem::zeroed();
        addr.nl_family = libc::AF_NETLINK as u16;
        libc::sendto(
            raw,
            request.as_ptr().cast(),
            request.len(),
            0,
            (&addr as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as u32,
        )
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    loop {
        // SAFETY: recv writes at most buf.len() bytes into buf.
        let n = unsafe { libc::recv(raw, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if parse(&buf[..n as usize], out)? {
            return Ok(());
        }
    }
}

/// `nlmsghdr` + `inet_diag_req_v2` (+ a bytecode filter on the port).
///
/// The bytecode is a list of ops `{code: u8, yes: u8, no: u16}`, each port test followed by
/// a second op-sized slot holding the port; on a match the kernel jumps `yes` bytes, else
/// `no`; landing exactly on the end keeps the socket, 4 bytes past it drops it.
fn request(family: u8, states: u32, filter: Filter) -> Vec<u8> {
    let mut body = Vec::with_capacity(80);
    body.push(family);
    body.push(libc::IPPROTO_TCP as u8);
    body.push(1 << (INET_DIAG_INFO - 1)); // extensions: tcp_info
    body.push(0);
    body.extend_from_slice(&states.to_ne_bytes());
    body.extend_from_slice(&[0u8; 48]); // socket id: any
    message(SOCK_DIAG_BY_FAMILY, body, filter)
}

/// `nlmsghdr` of `kind` + `body` + the bytecode of `filter`, as a dump request.
fn message(kind: u16, mut body: Vec<u8>, filter: Filter) -> Vec<u8> {
    let op = |ops: &mut Vec<u8>, code: u8, yes: u8, no: u16, port: u16| {
        ops.extend_from_slice(&[code, yes]);
        ops.extend_from_slice(&no.to_ne_bytes());
        ops.extend_from_slice(&[0, 0]);
        ops.extend_from_slice(&port.to_ne_bytes());
    };
    let mut ops = Vec::with_capacity(16);
    match filter {
        Filter::Any => {}
        // "S_EQ: on a match go on to the end (+8), else past it (+12)".
        Filter::Local(port) => op(&mut ops, INET_DIAG_BC_S_EQ, 8, 12, port),
        Filter::Remote(port) => op(&mut ops, INET_DIAG_BC_D_EQ, 8, 12, port),
        // "S_EQ: on a match to the end (+16), else to the next test (+8)"; then
        // "D_EQ: on a match to the end (+8), else past it (+12)".
        Filter::Either(port) => {
            op(&mut ops, INET_DIAG_BC_S_EQ, 16, 8, port);
            op(&mut ops, INET_DIAG_BC_D_EQ, 8, 12, port);
        }
    }
    if !ops.is_empty() {
        body.extend_from_slice(&((4 + ops.len()) as u16).to_ne_bytes());
        body.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
        body.extend_from_slice(&ops);
    }
    let mut msg = Vec::with_capacity(16 + body.len());
    msg.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    msg.extend_from_slice(&kind.to_ne_bytes());
    msg.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
    msg.extend_from_slice(&body);
    msg
}

fn u16_ne(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}
fn u32_ne(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Parses one datagram of the dump into `out`; true once the dump is done.
fn parse(data: &[u8], out: &mut Vec<Parsed>) -> std::io::Result<bool> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed sock_diag reply");
    let mut at = 0;
    while at + 16 <= data.len() {
        let len = u32_ne(data, at) as usize;
        let kind = u16_ne(data, at + 4);
        if len < 16 || at + len > data.len() {
            return Err(bad());
        }
        let msg = &data[at + 16..at + len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = if msg.len() >= 4 {
                    -(u32_ne(msg, 0) as i32)
                } else {
                    0
                };
                return Err(std::io::Error::from_raw_os_error(errno));
            }
            _ if msg.len() >= 72 => {
                let mut info = SocketInfo {
                    cookie: u32_ne(msg, 44) as u64 | (u32_ne(msg, 48) as u64) << 32,
                    local_port: u16::from_be_bytes([msg[4], msg[5]]),
                    inode: u32_ne(msg, 68),
                    listening: msg[1] as u32 == TCP_LISTEN,
                    bytes_acked: None,
                    tcp: None,
                    send_queue_bytes: 0,
                };
                if !info.listening {
                    info.send_queue_bytes = u32_ne(msg, 60);
                }
                // Attributes: (len u16, type u16, payload), each padded to 4 bytes.
                let mut a = 72;
                while a + 4 <= msg.len() {
                    let alen = u16_ne(msg, a) as usize;
                    if alen < 4 || a + alen > msg.len() {
                        break;
                    }
                    let payload = &msg[a + 4..a + alen];
                    if u16_ne(msg, a + 2) == INET_DIAG_INFO {
                        info.tcp = crate::tcp_info::TcpStats::parse(payload);
                        info.bytes_acked = info.tcp.and_then(|t| t.bytes_acked);
                    }
                    a += (alen + 3) & !3;
                }
                out.push(Parsed {
                    raw: Raw {
                        info,
                        rqueue: u32_ne(msg, 56),
                        wqueue: u32_ne(msg, 60),
                    },
                    remote_port: u16::from_be_bytes([msg[6], msg[7]]),
                });
            }
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Ok(false)
}

/// The socket inodes a process holds (`/proc/PID/fd/*` -> `socket:[N]`).
pub fn socket_inodes(pid: u32) -> Vec<u32> {
    socket_inodes_iter(pid).collect()
}

/// [`socket_inodes`] one at a time, so that a caller looking for one socket stops at it and
/// holds nothing per descriptor (a process with tens of thousands of sockets is common).
pub fn socket_inodes_iter(pid: u32) -> impl Iterator<Item = u32> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|link| {
            link.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
}

/// Counts the bytes a server sent to its clients: over every socket of its listening
/// port(s), what the peers acknowledged, summed over sockets as they come and go.
#[derive(Debug, Default)]
pub struct SentBytes {
    ports: Vec<u16>,
    last: HashMap<u64, u64>,
    total: u64,
    started: bool,
    samples: u32,
}

/// How often (in samples) the listening ports are looked up again from the server's fds.
const PORTS_EVERY: u32 = 10;

impl SentBytes {
    /// The running total after looking at the server's sockets now. The first call that
    /// finds them sets the baseline (bytes sent before sampling began do not count). `None`
    /// when the kernel's socket diagnostics are unavailable, or when no socket of the server
    /// listens on TCP: what it sends is then not seen here (a server whose socket another
    /// process holds, or one serving over UDP only, HTTP/3, for which the kernel keeps no
    /// byte counters), unknown rather than 0.
    pub fn update(&mut self, pids: &[u32]) -> Option<u64> {
        // Until a listening port is found (a launched server binds after its first
        // samples), on every sample: the first ones of the measured time must not miss it.
        if self.ports.is_empty() || self.samples.is_multiple_of(PORTS_EVERY) {
            let inodes: Vec<u32> = pids.iter().flat_map(|&p| socket_inodes(p)).collect();
            let all = tcp_sockets(None).ok()?;
            let mut ports: Vec<u16> = all
                .iter()
                .filter(|s| s.listening && inodes.contains(&s.inode))
                .map(|s| s.local_port)
                .collect();
            ports.sort_unstable();
            ports.dedup();
            self.ports = ports;
        }
        self.samples += 1;
        let mut now = HashMap::new();
        let sockets = match self.ports.as_slice() {
            [] => return None,
            [one] => tcp_sockets(Some(*one)).ok()?,
            many => {
                let mut all = tcp_sockets(None).ok()?;
                all.retain(|s| many.contains(&s.local_port));
                all
            }
        };
        for s in sockets {
            if let Some(acked) = s.bytes_acked {
                let before = self
                    .last
                    .get(&s.cookie)
                    .copied()
                    .unwrap_or(if self.started { 0 } else { acked });
                self.total += acked.saturating_sub(before);
                now.insert(s.cookie, acked);
            }
        }
        self.last = now;
        self.started = true;
        Some(self.total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn counts_what_a_listening_socket_sent() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let me = std::process::id();
        let mut sent = SentBytes::default();
        assert_eq!(sent.update(&[me]), Some(0));
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        server.write_all(&vec![7u8; 100_000]).unwrap();
        let mut got = vec![0u8; 100_000];
        client.read_exact(&mut got).unwrap();
        // The peer read it all, so it acknowledged it all (allow the ACK a moment).
        let mut total = 0;
        for _ in 0..100 {
            total = sent.update(&[me]).unwrap();
            if total >= 100_000 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(total, 100_000);
        // The client's own socket (another local port) is not the server's.
        client.write_all(b"not counted").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(sent.update(&[me]), Some(100_000));
        // The filtered dump sees the listener's port only.
        let only = tcp_sockets(Some(port)).unwrap();
        assert!(!only.is_empty() && only.iter().all(|s| s.local_port == port));
    }

    /// Runs `f` on a thread of a network namespace of its own, its loopback up. The kernel's
    /// TCP tables there hold only what `f` makes: a machine whose TIME_WAIT table is full
    /// (`net.ipv4.tcp_max_tw_buckets`: load tests that close their connections fill it, for a
    /// minute) creates no TIME_WAIT socket at all, and other tests' sockets would count.
    pub(super) fn in_a_netns_of_its_own(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(move || {
            // SAFETY: unshare(2) moves only this thread into a new network namespace.
            let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
            assert_eq!(
                rc,
                0,
                "unshare(CLONE_NEWNET): {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: a plain socket(2) for the ioctl below; closed by OwnedFd.
            let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
            assert!(fd >= 0, "{}", std::io::Error::last_os_error());
            // SAFETY: fd is a fresh descriptor nothing else owns.
            let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
            // SAFETY: an all-zero ifreq is valid; its name is "lo", NUL-terminated.
            let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
            for (d, s) in req.ifr_name.iter_mut().zip(b"lo") {
                *d = *s as libc::c_char;
            }
            req.ifr_ifru.ifru_flags = (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as _;
            let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
            // SAFETY: SIOCSIFFLAGS reads the ifreq it is given.
            let rc = unsafe { libc::ioctl(raw, libc::SIOCSIFFLAGS, &req) };
            assert_eq!(rc, 0, "lo up: {}", std::io::Error::last_os_error());
            f();
        })
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
    }

    /// A server that listens only after sampling began (a launched one binds after its first
    /// samples): unknown until then, found at the first sample after, not up to
    /// `PORTS_EVERY` samples later (the measured time's first windows would miss it).
    #[test]
    fn a_server_listening_late_is_found_at_the_next_sample() {
        in_a_netns_of_its_own(|| {
            let me = std::process::id();
            let mut sent = SentBytes::default();
            for _ in 0..3 {
                assert_eq!(sent.update(&[me]), None, "no listening socket yet: unknown");
            }
            let _listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            assert_eq!(sent.update(&[me]), Some(0));
        });
    }

    #[test]
    fn a_listeners_backlog_and_time_wait_on_its_port() {
        in_a_netns_of_its_own(backlog_and_time_wait);
    }

    fn backlog_and_time_wait() {
        // std listens with a backlog of 128; the kernel caps it at somaxconn.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let queue = listen_queue(port).unwrap().expect("the listener is found");
        assert!(queue.backlog >= 1 && queue.backlog <= 128, "{queue:?}");
        assert_eq!(queue.waiting, 0);
        let _waiting = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert_eq!(listen_queue(port).unwrap().unwrap().waiting, 1);
        assert_eq!(time_wait(port).unwrap(), 0);
        // The server closes first: its end goes to TIME_WAIT, with the port as its local one.
        let (server, _) = listener.accept().unwrap();
        drop(server);
        drop(_waiting);
        let mut seen = 0;
        for _ in 0..200 {
            seen = time_wait(port).unwrap();
            if seen == 1 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(seen, 1);
        // A client closing first leaves TIME_WAIT on its end, the port as its remote one.
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server, _) = listener.accept().unwrap();
        drop(client);
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(server);
        for _ in 0..200 {
            seen = time_wait(port).unwrap();
            if seen == 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(seen, 2);
        drop(listener);
        assert_eq!(listen_queue(port).unwrap(), None);
    }
}
