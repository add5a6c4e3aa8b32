//! Test hosts on this machine: network namespaces joined by a bridge (itself in a namespace of
//! its own), each with its own address in 198.18.0.0/24, the range set aside for benchmarking
//! network devices (RFC 2544), so that it can never be anyone's real network. Nothing is
//! added to the machine's own namespace; dropping the [`Lab`] deletes every namespace, and the
//! veth pairs go with them, also when a test fails.

use std::net::{Ipv4Addr, SocketAddr};
use std::os::fd::AsRawFd as _;
use std::process::Command;

pub struct Lab {
    /// Every namespace made, the bridge's first.
    namespaces: Vec<String>,
    /// The server's namespace and the hosts', with their addresses.
    pub server: (String, Ipv4Addr),
    pub hosts: Vec<(String, Ipv4Addr)>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Lab {
    /// A server namespace and `hosts` host namespaces on one bridge; `Err` says why not
    /// (not root, no `ip`, no namespaces here).
    pub fn new(hosts: usize) -> Result<Lab, String> {
        let tag = format!("ll{}", std::process::id() % 100_000);
        let mut lab = Lab {
            namespaces: Vec::new(),
            server: (format!("{tag}sv"), Ipv4Addr::new(198, 18, 0, 1)),
            hosts: (0..hosts)
                .map(|i| {
                    (
                        format!("{tag}h{}", i + 1),
                        Ipv4Addr::new(198, 18, 0, 11 + i as u8),
                    )
                })
                .collect(),
        };
        let bridge = format!("{tag}br");
        ip(&["netns", "add", &bridge])?;
        lab.namespaces.push(bridge.clone());
        ip(&["-n", &bridge, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &bridge, "link", "set", "br0", "up"])?;
        let members: Vec<(String, Ipv4Addr)> = std::iter::once(lab.server.clone())
            .chain(lab.hosts.clone())
            .collect();
        for (i, (ns, addr)) in members.iter().enumerate() {
            ip(&["netns", "add", ns])?;
            lab.namespaces.push(ns.clone());
            let port = format!("p{i}");
            // Both ends made inside namespaces: the machine's own namespace is never touched.
            ip(&[
                "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", &port, "netns",
                &bridge,
            ])?;
            ip(&["-n", &bridge, "link", "set", &port, "master", "br0", "up"])?;
            ip(&[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/24"),
                "dev",
                "eth0",
            ])?;
            ip(&["-n", ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    /// A listening socket at `addr` inside namespace `ns`, bound from a thread that entered
    /// it (a socket stays in the namespace it was made in).
    pub fn bind_in(ns: &str, addr: SocketAddr) -> std::net::TcpListener {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("the namespace exists");
            // SAFETY: setns on this thread only, with a namespace file descriptor we hold.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            std::net::TcpListener::bind(addr).expect("bind inside the namespace")
        })
        .join()
        .expect("the binding thread")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.namespaces.iter().rev() {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("cleanup: {e}");
            }
        }
    }
}
