//! Test hosts on this machine: network namespaces joined by a bridge (itself in a namespace of
//! its own), each with its own address in 198.18.0.0/24, the range set aside for benchmarking
//! network devices (RFC 2544), so that it can never be anyone's real network. Nothing is
//! added to the machine's own namespace; dropping the [`Lab`] deletes every namespace, and the
//! veth pairs and qdiscs go with them, also when a test fails.
//!
//! A provider's cap (issue 52) goes where a provider puts it: on the bridge's side of a
//! host's veth ([`Lab::cap_down`]: the host's downlink; [`Lab::cap_into_server`]: the way
//! every request travels), where the host's own interface shows nothing. [`Agent`] is a
//! `loadlab agent` in a namespace (a generator, or the server's), stopped when dropped.

// Each test binary uses its part of the harness.
#![allow(dead_code)]

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
    run("ip", args)
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Lab {
    /// A server namespace and `hosts` host namespaces on one bridge; `Err` says why not
    /// (not root, no `ip`, no namespaces here).
    pub fn new(hosts: usize) -> Result<Lab, String> {
        // Unique per lab, not only per process: tests that only count share the machine and
        // may each hold a lab at once (common::shared).
        static LABS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = LABS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("ll{}x{n}", std::process::id() % 100_000);
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
        Lab::inside(ns, move || {
            std::net::TcpListener::bind(addr).expect("bind inside the namespace")
        })
    }

    /// A UDP socket at `addr` inside namespace `ns` (a QUIC server's), as [`Lab::bind_in`].
    pub fn bind_udp_in(ns: &str, addr: SocketAddr) -> std::net::UdpSocket {
        Lab::inside(ns, move || {
            std::net::UdpSocket::bind(addr).expect("bind inside the namespace")
        })
    }

    /// `make` run on a thread that entered namespace `ns`.
    fn inside<T: Send + 'static>(ns: &str, make: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).expect("the namespace exists");
            // SAFETY: setns on this thread only, with a namespace file descriptor we hold.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
            make()
        })
        .join()
        .expect("the binding thread")
    }
}

impl Lab {
    /// The bridge's namespace (the provider's side of every link).
    fn bridge(&self) -> &str {
        &self.namespaces[0]
    }

    /// Caps what reaches host `host` (0-based, as in `hosts`) at `rate` (`tc` units, such as
    /// `10mbit`): a `tbf` on the bridge's port toward it, invisible from the host.
    pub fn cap_down(&self, host: usize, rate: &str) -> Result<(), String> {
        self.tbf(&format!("p{}", host + 1), rate)
    }

    /// Caps what reaches the server from every host (the requests' way) at `rate`.
    pub fn cap_into_server(&self, rate: &str) -> Result<(), String> {
        self.tbf("p0", rate)
    }

    fn tbf(&self, port: &str, rate: &str) -> Result<(), String> {
        // A provider's buffer: 100 ms of queue before it drops, as a switch or a modem holds.
        run(
            "tc",
            &[
                "-n",
                self.bridge(),
                "qdisc",
                "replace",
                "dev",
                port,
                "root",
                "tbf",
                "rate",
                rate,
                "burst",
                "32kb",
                "latency",
                "100ms",
            ],
        )
    }
}

/// `program` run inside namespace `ns` (`nsenter --net`, as a user would).
pub fn in_ns(ns: &str, program: &str) -> Command {
    let mut c = Command::new("nsenter");
    c.arg(format!("--net=/run/netns/{ns}"))
        .arg("--")
        .arg(program);
    c
}

/// A `loadlab agent` in a namespace, stopped when dropped.
pub struct Agent {
    child: std::process::Child,
    pub url: String,
    pub token_file: std::path::PathBuf,
    pub fingerprint: String,
    /// Its `[[generator]]` table for a fleet file.
    pub entry: String,
}

impl Agent {
    /// `loadlab agent ARGS --listen ADDR:PORT` in `ns`, its state under `dir`; waits for the
    /// fingerprint it prints.
    pub fn start(
        loadlab: &str,
        name: &str,
        ns: &str,
        listen: SocketAddr,
        dir: &std::path::Path,
        args: &[&str],
    ) -> Agent {
        use std::io::BufRead as _;
        let state = dir.join(format!("state-{name}"));
        let mut child = in_ns(ns, loadlab)
            .arg("agent")
            .args(args)
            .args(["--listen", &listen.to_string()])
            .arg("--state-dir")
            .arg(&state)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the agent");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let mut fingerprint = None;
        while fingerprint.is_none() && std::time::Instant::now() < deadline {
            let Some(Ok(line)) = lines.next() else { break };
            fingerprint = line
                .split_whitespace()
                .find(|w| w.starts_with("sha256:"))
                .map(str::to_string);
        }
        std::thread::spawn(move || for _ in lines.by_ref() {});
        let fingerprint = fingerprint.expect("the agent printed its fingerprint");
        let url = format!("https://{listen}");
        let token_file = state.join("token");
        Agent {
            child,
            entry: format!(
                "[[generator]]\nname = \"{name}\"\nurl = \"{url}\"\ntoken_file = \"{}\"\n\
                 fingerprint = \"{fingerprint}\"\n",
                token_file.display()
            ),
            url,
            token_file,
            fingerprint,
        }
    }

    /// The flags that point a run at this agent as the server's (`--agent ...`).
    pub fn flags(&self) -> Vec<String> {
        vec![
            "--agent".into(),
            self.url.clone(),
            "--agent-token-file".into(),
            self.token_file.display().to_string(),
            "--agent-fingerprint".into(),
            self.fingerprint.clone(),
        ]
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.kill();
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
