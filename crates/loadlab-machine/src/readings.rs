//! What the machine is, as the checks read it: limits, kernel settings, CPU power
//! management, what else is running. Plain data, filled by [`crate::reader`] from `/proc` and
//! `/sys` (or by a test's table); `None` means "could not be read here", which the checks
//! treat as unknown rather than as a failure.

use std::collections::BTreeSet;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Readings {
    /// This process's `RLIMIT_NOFILE`: soft and hard. loadlab raises the soft one to the hard
    /// one when a run starts, so the hard one is what counts.
    pub nofile: Option<(u64, u64)>,
    /// `net.ipv4.ip_local_port_range`, both ends inclusive.
    pub port_range: Option<(u32, u32)>,
    /// `net.ipv4.tcp_tw_reuse`: 0 off, 1 on, 2 on for loopback only (the default since 4.19).
    pub tcp_tw_reuse: Option<u32>,
    /// `net.core.somaxconn`: the most any listen backlog gets.
    pub somaxconn: Option<u32>,
    /// `net.ipv4.tcp_max_syn_backlog`: half-open connections per listener.
    pub tcp_max_syn_backlog: Option<u32>,
    /// `net.ipv4.tcp_syncookies`: 1 answers a full SYN queue with cookies instead of dropping.
    pub tcp_syncookies: Option<u32>,
    /// Connection tracking, when its module is loaded.
    pub conntrack: Option<Conntrack>,
    pub cgroup: CgroupReading,
    /// Running as root (`euid 0`).
    pub root: bool,
    /// `scaling_governor` of each CPU that has one, by CPU number; empty without cpufreq.
    pub governors: Vec<(usize, String)>,
    /// CPU 0's idle states (`cpuidle/state*`), shallowest first; empty without cpuidle.
    pub idle_states: Vec<IdleState>,
    /// `/dev/cpu_dma_latency` exists (the PM QoS interface loadlab holds at 0).
    pub pm_qos_device: bool,
    /// Share of all CPU time the hypervisor stole while sampling; `None` when not reported.
    pub steal: Option<f64>,
    /// How long processes and steal were sampled, seconds.
    pub sampled_s: f64,
    /// Processes that used CPU while sampling, busiest first (loadlab's own, and a watched
    /// server's, excluded; the target's listener is told apart by the check).
    pub busy: Vec<BusyProcess>,
    /// A server already listening on the target's port on this machine: its queue and CPUs.
    pub listener: Option<Listener>,
    /// Network namespaces and veths left by loadlab runs that were killed.
    pub stale_links: Vec<String>,
    /// iproute2's `ip` and `tc` are installed (a shaped link needs them).
    pub iproute2: bool,
    /// `net.core.rmem_max`: the largest receive buffer a socket may ask for (SO_RCVBUF),
    /// bytes; root passes over it (SO_RCVBUFFORCE).
    pub rmem_max: Option<u64>,
    /// `net.core.wmem_max`: the same for send buffers.
    pub wmem_max: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conntrack {
    /// `nf_conntrack_max`.
    pub max: u64,
    /// `nf_conntrack_count`: entries now.
    pub count: u64,
    /// `nf_conntrack_tcp_timeout_time_wait`, seconds (120 by default).
    pub time_wait_s: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupReading {
    /// Controllers enabled at the root of the v2 hierarchy; `None` when v2 is not mounted.
    pub v2: Option<Vec<String>>,
    /// Controllers with a v1 hierarchy of their own.
    pub v1: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleState {
    pub name: String,
    /// Exit latency, microseconds.
    pub latency_us: u64,
    pub disabled: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BusyProcess {
    pub pid: u32,
    pub name: String,
    /// CPU used while sampling, in cores (1.0: one CPU all the time).
    pub cores: f64,
    /// A kernel thread (`PF_KTHREAD` in `/proc/PID/stat`'s flags, e.g. `kworker/0:0`): it
    /// works for the kernel, and killing it is neither possible nor advice to give.
    pub kernel_thread: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    /// The backlog its socket holds (what it asked for, capped at somaxconn).
    pub backlog: u32,
    /// The processes holding it.
    pub pids: Vec<u32>,
    /// CPUs they may run on.
    pub cpus: BTreeSet<usize>,
}
