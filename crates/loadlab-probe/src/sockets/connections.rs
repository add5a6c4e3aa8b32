//! One port's TCP connections, dumped again and again at little cost: what a path sampler
//! (`loadlab_machine::path`) asks ten times a second through a run, from the generator's side
//! and the server's.
//!
//! Where a dump's cost goes: the kernel answers one by walking its whole established hash
//! table (`net.ipv4.tcp_ehash_entries`, 262,144 buckets on the 2-core VM), empty buckets
//! included, whatever the filter; the bytecode only picks what it reports. Profiled (`perf`,
//! a `--pipeline 16` run against nginx) 97% of the sampler thread's time was that walk, in
//! `tcp_diag_dump`, and nothing in user space. So:
//! - one walk per dump, not one per address family: the older request (`TCPDIAG_GETSOCK`,
//!   which every kernel keeps for old `ss`) asks for both families at once; when a kernel
//!   refuses it, one `inet_diag_req_v2` request per family as before;
//! - the kernel leaves out what the figures cannot use before it runs the bytecode or fills
//!   a message: listeners, TIME_WAIT and request sockets (the last two carry no `tcp_info`),
//!   so thousands in TIME_WAIT on the run's port cost no message and no parse;
//! - the netlink socket, its read buffer and the parsed list are kept from dump to dump.

use super::{
    diag_socket, exchange, message, query, request, Filter, Parsed, SocketInfo, INET_DIAG_INFO,
    TCP_LISTEN, TCP_TIME_WAIT,
};
use std::os::fd::OwnedFd;

/// The request that asks for both address families in one walk (`inet_diag_req`, the
/// compatibility form; the kernel reads its family as "any").
const TCPDIAG_GETSOCK: u16 = 18;
/// A connection being accepted (a request socket, no `tcp_info`).
const TCP_NEW_SYN_RECV: u32 = 12;
/// The states of a connection: every one but a listener's, TIME_WAIT and a request socket's.
const CONNECTION_STATES: u32 =
    !((1 << TCP_LISTEN) | (1 << TCP_TIME_WAIT) | (1 << TCP_NEW_SYN_RECV));

/// Whose connections, by port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connections {
    /// Those whose remote port is this: a client's to a server on it.
    To(u16),
    /// Those whose local port is this: a server's on its listening port.
    On(u16),
}

impl Connections {
    fn filter(self) -> Filter {
        match self {
            Connections::To(port) => Filter::Remote(port),
            Connections::On(port) => Filter::Local(port),
        }
    }
}

/// Dumps one port's connections, keeping its socket and buffers between dumps.
pub struct ConnectionDump {
    fd: Option<OwnedFd>,
    buf: Box<[u8]>,
    parsed: Vec<Parsed>,
    found: Vec<SocketInfo>,
    /// The one-walk request and whom it was made for.
    request: Option<(Connections, Vec<u8>)>,
    /// False once the kernel refused the one-walk request: one request per family then.
    one_walk: bool,
}

impl Default for ConnectionDump {
    fn default() -> Self {
        ConnectionDump {
            fd: None,
            buf: vec![0u8; 64 * 1024].into_boxed_slice(),
            parsed: Vec::new(),
            found: Vec::new(),
            request: None,
            one_walk: true,
        }
    }
}

impl std::fmt::Debug for ConnectionDump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionDump")
            .field("one_walk", &self.one_walk)
            .finish_non_exhaustive()
    }
}

impl ConnectionDump {
    /// The connections of `which` now (IPv4 and IPv6, this network namespace): neither
    /// listeners nor sockets in TIME_WAIT or being accepted.
    pub fn dump(&mut self, which: Connections) -> std::io::Result<&[SocketInfo]> {
        self.parsed.clear();
        if self.one_walk {
            if let Err(e) = self.one_walk(which) {
                // Refused (EINVAL, ENOENT), or broken midway: the socket may still hold the
                // rest of the answer, so a fresh one next time.
                self.fd = None;
                self.parsed.clear();
                if e.kind() == std::io::ErrorKind::InvalidData {
                    return Err(e);
                }
                self.one_walk = false;
            }
        }
        if !self.one_walk {
            self.per_family(which)?;
        }
        self.found.clear();
        let connections = self.parsed.iter().filter(|p| !p.raw.info.listening);
        self.found.extend(connections.map(|p| p.raw.info));
        Ok(&self.found)
    }

    fn one_walk(&mut self, which: Connections) -> std::io::Result<()> {
        if self.request.as_ref().is_none_or(|(w, _)| *w != which) {
            let mut body = Vec::with_capacity(80);
            // Family (read as any), source and destination prefix lengths, extensions.
            body.extend_from_slice(&[libc::AF_INET as u8, 0, 0, 1 << (INET_DIAG_INFO - 1)]);
            body.extend_from_slice(&[0u8; 48]); // socket id: any
            body.extend_from_slice(&CONNECTION_STATES.to_ne_bytes());
            body.extend_from_slice(&0u32.to_ne_bytes()); // dbs
            self.request = Some((which, message(TCPDIAG_GETSOCK, body, which.filter())));
        }
        let fd = match self.fd.take() {
            Some(fd) => fd,
            None => diag_socket()?,
        };
        let (_, request) = self.request.as_ref().expect("made above");
        exchange(&fd, request, &mut self.buf, &mut self.parsed)?;
        self.fd = Some(fd);
        Ok(())
    }

    /// One `inet_diag_req_v2` dump per family, as [`super::tcp_sockets`] asks.
    fn per_family(&mut self, which: Connections) -> std::io::Result<()> {
        for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            let fd = match self.fd.take() {
                Some(fd) => fd,
                None => diag_socket()?,
            };
            let asked = request(family, CONNECTION_STATES, which.filter());
            if exchange(&fd, &asked, &mut self.buf, &mut self.parsed).is_err() {
                // A kernel without port filters (before 4.16): the whole dump, filtered here.
                self.parsed = query_parsed(which)?;
                return Ok(());
            }
            self.fd = Some(fd);
        }
        Ok(())
    }
}

/// [`query`]'s answer as parsed entries, for the fallback above.
fn query_parsed(which: Connections) -> std::io::Result<Vec<Parsed>> {
    Ok(query(CONNECTION_STATES, which.filter())?
        .into_iter()
        .map(|raw| Parsed {
            raw,
            remote_port: 0,
        })
        .collect())
}

#[cfg(test)]
mod tests;
