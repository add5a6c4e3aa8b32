//! This process's own TCP connections to a port, read from its descriptors: what a
//! generator's path sampler reads ten times a second through a run.
//!
//! Why not a `sock_diag` dump ([`super::ConnectionDump`]): the kernel answers a dump by
//! walking its whole established hash table, every socket of every network namespace in it
//! included, whatever the filter; a machine that closed many connections lately holds tens
//! of thousands in TIME_WAIT, and on the 2-core VM with 30k of them a dump took 9 ms of
//! kernel time (`ss`), 40 ms beside a run: the sampler cost more than the run's requests. The
//! same `tcp_info` comes from `getsockopt(TCP_INFO)` on each descriptor, at a cost that grows
//! with this process's sockets only. Connections of other processes to the same port are
//! not the run's and are not read.

use super::SocketInfo;
use crate::tcp_info::TcpStats;
use std::os::fd::RawFd;

/// This process's TCP connections whose remote port is `port`, into `out` (cleared first).
/// A descriptor closed or reused while it is read is skipped.
pub fn own_connections_to(port: u16, out: &mut Vec<SocketInfo>) -> std::io::Result<()> {
    out.clear();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        let Some(fd) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(info) = connection_to(fd, port) {
            out.push(info);
        }
    }
    Ok(())
}

fn connection_to(fd: RawFd, port: u16) -> Option<SocketInfo> {
    // The cookie first (a file's descriptor fails here), read again last: what is read in
    // between is one socket's. A UDP socket's TCP_INFO fails below.
    let cookie: u64 = get(fd, libc::SOL_SOCKET, libc::SO_COOKIE)?;
    if address_port(fd, libc::getpeername)? != port {
        return None;
    }
    let mut info = [0u8; 512];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let tcp = TcpStats::parse(&info[..len as usize]);
    let mut queued: libc::c_int = 0;
    // SAFETY: SIOCOUTQ writes one int: bytes not yet acknowledged or not yet sent, the
    // dump's `idiag_wqueue`.
    if unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut queued) } != 0 {
        return None;
    }
    // The same socket throughout: a descriptor closed and reused meanwhile is skipped.
    if get::<u64>(fd, libc::SOL_SOCKET, libc::SO_COOKIE)? != cookie {
        return None;
    }
    Some(SocketInfo {
        cookie,
        local_port: address_port(fd, libc::getsockname)?,
        inode: inode(fd)?,
        listening: false,
        bytes_acked: tcp.and_then(|t| t.bytes_acked),
        tcp,
        send_queue_bytes: queued.max(0) as u32,
    })
}

/// One fixed-size socket option.
fn get<T: Copy + Default>(fd: RawFd, level: libc::c_int, name: libc::c_int) -> Option<T> {
    let mut value = T::default();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes, the size of `value`.
    let rc = unsafe { libc::getsockopt(fd, level, name, (&mut value as *mut T).cast(), &mut len) };
    (rc == 0 && len as usize == std::mem::size_of::<T>()).then_some(value)
}

/// The port of the socket's peer (`getpeername`) or its own (`getsockname`); `None` when
/// not connected, not a socket, or not IPv4 or IPv6.
fn address_port(
    fd: RawFd,
    call: unsafe extern "C" fn(
        libc::c_int,
        *mut libc::sockaddr,
        *mut libc::socklen_t,
    ) -> libc::c_int,
) -> Option<u16> {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut at: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: the call writes at most `len` bytes into `at`.
    if unsafe {
        call(
            fd,
            (&mut at as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    } != 0
    {
        return None;
    }
    let port = match at.ss_family as libc::c_int {
        // SAFETY: the family says which address the storage holds.
        libc::AF_INET => unsafe { (*(&at as *const _ as *const libc::sockaddr_in)).sin_port },
        // SAFETY: as above.
        libc::AF_INET6 => unsafe { (*(&at as *const _ as *const libc::sockaddr_in6)).sin6_port },
        _ => return None,
    };
    Some(u16::from_be(port))
}

/// The socket's inode (what a dump and `/proc/PID/fd` name it by).
fn inode(fd: RawFd) -> Option<u32> {
    // SAFETY: an all-zero stat is valid; fstat fills it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    (unsafe { libc::fstat(fd, &mut st) } == 0).then_some(st.st_ino as u32)
}

#[cfg(test)]
mod tests;
