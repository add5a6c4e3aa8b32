//! A shaped link for one run: a network namespace for the server, a veth pair joining it to
//! loadlab's namespace with addresses that exist only for the run, and qdiscs shaping each
//! direction (`tbf` for a bandwidth cap, `netem` for delay and loss). Calibrated by a bulk
//! transfer before the run; removed when the [`Link`] is dropped, by [`cleanup_all`] on exit
//! paths that skip destructors (a second Ctrl-C), and, for a loadlab killed outright, by the
//! next run ([`sweep_stale`], by name: each name carries its owner's PID, so a live run's
//! link is never touched).
//!
//! Made with iproute2's `ip` and `tc`, run as commands: a handful of configuration calls per
//! run, where netlink crates would add several dependencies to do the same with more code;
//! `tc` also does the rate tables and the JSON statistics for us. Needs root.
//!
//! Up is toward the server (loadlab's requests: the qdisc on loadlab's end of the pair), down
//! toward loadlab (the server's responses: the qdisc on the server's end, in its namespace).

mod calibrate;
pub mod names;
pub mod tc;

pub use calibrate::Calibration;

use crate::rate::Rate;
use loadlab_result::machine::{LinkDirection, LinkReport, QdiscStats};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tc::Shape;

/// What the link should do. Rates are on the wire (headers included), each direction apart.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkSpec {
    /// Toward the server.
    pub up: Option<Rate>,
    /// Toward loadlab.
    pub down: Option<Rate>,
    /// Added to every packet, each direction (the round trip grows by twice this).
    pub delay: Option<Duration>,
    /// Packets dropped at random, each direction, in percent.
    pub loss_percent: Option<f64>,
}

impl LinkSpec {
    pub fn is_empty(&self) -> bool {
        self.up.is_none()
            && self.down.is_none()
            && self.delay.is_none()
            && self.loss_percent.is_none()
    }

    fn shape(&self, rate: Option<Rate>) -> Shape {
        Shape {
            rate,
            delay: self.delay,
            loss_percent: self.loss_percent,
        }
    }

    /// In words: `2 MB/s each way`, `2 MB/s up, 10 MB/s down, 20 ms delay`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        match (self.up, self.down) {
            (Some(u), Some(d)) if u == d => parts.push(format!("{u} each way")),
            (u, d) => {
                if let Some(u) = u {
                    parts.push(format!("{u} up (toward the server)"));
                }
                if let Some(d) = d {
                    parts.push(format!("{d} down (toward loadlab)"));
                }
            }
        }
        if let Some(d) = self.delay {
            parts.push(format!("{} ms delay each way", d.as_secs_f64() * 1e3));
        }
        if let Some(l) = self.loss_percent {
            parts.push(format!("{l}% loss each way"));
        }
        parts.join(", ")
    }
}

/// Why a link could not be made. The message names the fix.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct LinkError(pub String);

/// A live link. Dropping it removes the namespace, the veth pair and the qdiscs.
#[derive(Debug)]
pub struct Link {
    netns: String,
    host_dev: String,
    client: Ipv4Addr,
    server: Ipv4Addr,
    spec: LinkSpec,
    calibration: [Option<Calibration>; 2],
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);
/// Links alive now: `(namespace, host device)`, for [`cleanup_all`].
static LIVE: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(String, String)>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where `ip netns` keeps its namespaces.
const NETNS_DIR: &str = "/run/netns";

fn tool(name: &str) -> Result<PathBuf, LinkError> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            LinkError(format!(
                "--bandwidth, --delay and --loss shape the link with iproute2's `ip` and `tc`, \
                 and `{name}` is not installed: apt-get install iproute2 (or your system's \
                 iproute2 package)"
            ))
        })
}

/// Whether `ip` and `tc` are installed.
pub fn has_iproute2() -> bool {
    tool("ip").is_ok() && tool("tc").is_ok()
}

/// Runs `ip` or `tc` with `args`; its stderr is the error.
fn run(name: &str, args: &[String]) -> Result<(), String> {
    let out = Command::new(tool(name).map_err(|e| e.0)?)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {name}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn run_out(name: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(tool(name).ok()?).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Serialises choosing addresses between loadlab processes: the choice reads the routes, and
/// the route of a /30 appears only once its link is up.
struct AddressLock(#[allow(dead_code)] std::fs::File);

impl AddressLock {
    fn take() -> Option<AddressLock> {
        let dir = if Path::new("/run/lock").is_dir() {
            "/run/lock"
        } else {
            "/tmp"
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(format!("{dir}/loadlab-link.lock"))
            .ok()?;
        // SAFETY: flock on a descriptor we own; released when the file closes (or we die).
        let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
        (rc == 0).then_some(AddressLock(file))
    }
}

impl Link {
    /// Makes the namespace, the veth pair and the qdiscs. Sweeps stale links first.
    pub fn create(spec: LinkSpec) -> Result<Link, LinkError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LinkError(
                "--bandwidth, --delay and --loss need root: loadlab makes a network namespace \
                 and a veth pair for the server, and shapes them with tc; run it as root (sudo)"
                    .into(),
            ));
        }
        tool("ip")?;
        tool("tc")?;
        sweep_stale();
        let pid = std::process::id();
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let netns = names::netns_name(pid, seq);
        let host_dev = names::host_device(pid, seq);
        let fail = |what: &str, e: String| LinkError(format!("cannot {what}: {e}"));
        run("ip", &args(&["netns", "add", &netns]))
            .map_err(|e| fail(&format!("make the network namespace {netns}"), e))?;
        live().push((netns.clone(), host_dev.clone()));
        // From here on, dropping `link` removes whatever was made.
        let mut link = Link {
            netns,
            host_dev,
            client: Ipv4Addr::UNSPECIFIED,
            server: Ipv4Addr::UNSPECIFIED,
            spec,
            calibration: [None, None],
        };
        let (ns, dev) = (link.netns.clone(), link.host_dev.clone());
        run(
            "ip",
            &args(&[
                "link",
                "add",
                &dev,
                "type",
                "veth",
                "peer",
                "name",
                names::INSIDE,
                "netns",
                &ns,
            ]),
        )
        .map_err(|e| fail("make the veth pair", e))?;
        {
            let _lock = AddressLock::take();
            let routes = names::parse_routes(
                &std::fs::read_to_string("/proc/net/route").unwrap_or_default(),
            );
            let seed = u64::from(pid).wrapping_mul(31).wrapping_add(seq);
            let net = names::pick_subnet(seed, &routes).ok_or_else(|| {
                LinkError(
                    "no free /30 in 169.254.0.0/16: every one overlaps a route of this host".into(),
                )
            })?;
            let base = u32::from(net);
            link.client = Ipv4Addr::from(base + 1);
            link.server = Ipv4Addr::from(base + 2);
            let client = format!("{}/30", link.client);
            let server = format!("{}/30", link.server);
            run("ip", &args(&["addr", "add", &client, "dev", &dev]))
                .map_err(|e| fail("address the veth pair", e))?;
            run("ip", &args(&["link", "set", &dev, "up"]))
                .map_err(|e| fail("bring the veth pair up", e))?;
            run(
                "ip",
                &args(&["-n", &ns, "addr", "add", &server, "dev", names::INSIDE]),
            )
            .map_err(|e| fail("address the veth pair", e))?;
            run(
                "ip",
                &args(&["-n", &ns, "link", "set", names::INSIDE, "up"]),
            )
            .map_err(|e| fail("bring the veth pair up", e))?;
            run("ip", &args(&["-n", &ns, "link", "set", "lo", "up"]))
                .map_err(|e| fail("bring up the namespace's loopback", e))?;
        }
        for (shape, dev, netns) in [
            (spec.shape(spec.up), dev.as_str(), None),
            (spec.shape(spec.down), names::INSIDE, Some(ns.as_str())),
        ] {
            for command in shape.commands(dev, netns) {
                run("tc", &command).map_err(|e| {
                    if tc::is_unknown_qdisc(&e) && shape.needs_netem() {
                        LinkError(format!(
                            "--delay and --loss need the netem qdisc (sch_netem), which this \
                             kernel does not have (tc: {e}); use a kernel built with \
                             CONFIG_NET_SCH_NETEM, or load it (modprobe sch_netem); \
                             --bandwidth alone needs only tbf"
                        ))
                    } else {
                        fail(&format!("shape the link (tc {})", command.join(" ")), e)
                    }
                })?;
            }
        }
        Ok(link)
    }

    /// The file naming the server's namespace, for `setns(2)`.
    pub fn netns_path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.netns)
    }

    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// The server's address, inside its namespace.
    pub fn server_address(&self) -> Ipv4Addr {
        self.server
    }

    pub fn client_address(&self) -> Ipv4Addr {
        self.client
    }

    pub fn spec(&self) -> &LinkSpec {
        &self.spec
    }

    /// Measures each capped direction with a bulk TCP transfer through the link (about
    /// 0.3 s each); kept for the report.
    pub fn calibrate(&mut self) -> Result<[Option<Calibration>; 2], LinkError> {
        let up = match self.spec.up {
            Some(rate) => Some(calibrate::run(self, calibrate::Direction::Up, rate)?),
            None => None,
        };
        let down = match self.spec.down {
            Some(rate) => Some(calibrate::run(self, calibrate::Direction::Down, rate)?),
            None => None,
        };
        self.calibration = [up, down];
        Ok(self.calibration)
    }

    /// The qdiscs' counters now: up, down.
    pub fn stats(&self) -> [Option<QdiscStats>; 2] {
        stats_of(&self.host_dev, &self.netns)
    }

    /// A line for a person: where the server runs and what the link does, calibration
    /// included once measured.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "link: the server runs in network namespace {} at {}, behind a veth pair from {} \
             shaped to {}",
            self.netns,
            self.server,
            self.client,
            self.spec.describe()
        );
        for (name, c) in [("up", &self.calibration[0]), ("down", &self.calibration[1])] {
            if let Some(c) = c {
                line.push_str(&format!(
                    "; calibrated {name}: {} on the wire, {} of TCP payload",
                    Rate {
                        bytes_per_s: c.wire_bytes_per_s
                    },
                    Rate {
                        bytes_per_s: c.payload_bytes_per_s
                    }
                ));
            }
        }
        line
    }

    /// The link for the result; `measured` holds the qdiscs' counters over the measured time.
    pub fn report(&self, measured: [Option<QdiscStats>; 2]) -> LinkReport {
        let direction = |i: usize, rate: Option<Rate>, dev: &str| {
            let shape = self.spec.shape(rate);
            (!shape.is_empty()).then(|| LinkDirection {
                device: dev.to_string(),
                qdisc: shape.describe(),
                rate_bytes_per_s: rate.map(|r| r.bytes_per_s),
                delay_ms: self.spec.delay.map(|d| d.as_secs_f64() * 1e3),
                loss_percent: self.spec.loss_percent,
                calibrated_bytes_per_s: self.calibration[i].map(|c| c.payload_bytes_per_s),
                calibrated_wire_bytes_per_s: self.calibration[i].map(|c| c.wire_bytes_per_s),
                qdisc_stats: measured[i].unwrap_or_default(),
            })
        };
        LinkReport {
            namespace: self.netns.clone(),
            client_address: self.client.to_string(),
            server_address: self.server.to_string(),
            up: direction(0, self.spec.up, &self.host_dev),
            down: direction(
                1,
                self.spec.down,
                &format!("{} in {}", names::INSIDE, self.netns),
            ),
        }
    }

    /// loadlab's end of the veth pair.
    pub fn host_device(&self) -> &str {
        &self.host_dev
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        remove(&self.netns, &self.host_dev);
        live().retain(|(ns, _)| *ns != self.netns);
    }
}

/// The qdisc counters of a link by its names (for a thread that does not hold the [`Link`]):
/// up (loadlab's end), down (the namespace's end).
pub fn stats_of(host_dev: &str, netns: &str) -> [Option<QdiscStats>; 2] {
    let up = run_out("tc", &["-s", "-j", "qdisc", "show", "dev", host_dev]);
    let down = run_out(
        "tc",
        &[
            "-n",
            netns,
            "-s",
            "-j",
            "qdisc",
            "show",
            "dev",
            names::INSIDE,
        ],
    );
    [up, down].map(|json| json.and_then(|j| tc::parse_stats(&j)))
}

/// Deleting loadlab's end of the pair deletes both ends and their qdiscs, even while
/// something still holds the namespace; then the namespace's name goes.
fn remove(netns: &str, host_dev: &str) {
    if Path::new("/sys/class/net").join(host_dev).exists() {
        let _ = run("ip", &args(&["link", "del", host_dev]));
    }
    if Path::new(NETNS_DIR).join(netns).exists() {
        let _ = run("ip", &args(&["netns", "del", netns]));
    }
}

/// Removes every live link now. For exit paths that skip destructors (a second Ctrl-C).
pub fn cleanup_all() {
    let links = std::mem::take(&mut *live());
    for (ns, dev) in links {
        remove(&ns, &dev);
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Namespaces (`netns NAME`) and host devices (`veth NAME`) of loadlab runs whose process is
/// gone.
pub fn stale() -> Vec<String> {
    let mut out = Vec::new();
    let list = |dir: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(String::from))
            .collect()
    };
    for ns in list(NETNS_DIR) {
        if names::owner(&ns).is_some_and(|pid| !alive(pid)) {
            out.push(format!("netns {ns}"));
        }
    }
    for dev in list("/sys/class/net") {
        if names::owner(&dev).is_some_and(|pid| !alive(pid)) {
            out.push(format!("veth {dev}"));
        }
    }
    out
}

/// Removes what [`stale`] finds, and stops the processes left inside a stale namespace;
/// returns what was removed and stopped. Needs root (else does nothing).
pub fn sweep_stale() -> Vec<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Vec::new();
    }
    let mut removed = Vec::new();
    for item in stale() {
        if let Some(dev) = item.strip_prefix("veth ") {
            let _ = run("ip", &args(&["link", "del", dev]));
        } else if let Some(ns) = item.strip_prefix("netns ") {
            // The killed run's server may still be running inside, reparented to init: a
            // process its death signal did not reach (a child of `sh -c`). Deleting the
            // name alone would leave it serving in a namespace nobody can name.
            for pid in pids_in(ns) {
                // SAFETY: kill(2) of a process inside a namespace named for a loadlab run
                // whose process is gone: only that run's server and its children are there.
                if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                    removed.push(format!("process {pid} in netns {ns}"));
                }
            }
            let _ = run("ip", &args(&["netns", "del", ns]));
        }
        removed.push(item);
    }
    removed
}

/// The processes inside the network namespace `ns` (`ip netns pids`).
fn pids_in(ns: &str) -> Vec<i32> {
    run_out("ip", &["netns", "pids", ns])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .filter(|&pid: &i32| pid > 1)
        .collect()
}
