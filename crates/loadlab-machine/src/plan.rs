//! The run the machine is checked against, as the checks need it: how many connections at
//! once, how many new ones per second, where the server is, what it listens with, which CPUs
//! each side may use. Built by the session from its validated config; plain data, so that
//! the checks stay pure and are tested with tables.

use std::collections::BTreeSet;

/// What the planned run will ask of the kernel.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlannedRun {
    /// Connections open at once: a closed loop's (its most, with stages).
    pub connections: u64,
    /// Open loop: the highest rate of the schedule, requests/s, and the connection cap.
    pub open_loop: Option<OpenLoop>,
    /// `false`: a new connection per request (`--no-keepalive`).
    pub keepalive: bool,
    /// The target: its port, and whether it is on this machine's loopback.
    pub target: Option<Target>,
    /// The listen backlog the server asks for, when known.
    pub backlog: Option<Backlog>,
    /// CPUs the server may run on, when known (pinned with `--pin`, or read from the
    /// processes listening on the target's port).
    pub server_cpus: Option<BTreeSet<usize>>,
    /// CPUs loadlab's worker threads may run on.
    pub generator_cpus: BTreeSet<usize>,
    /// Limits asked for a launched server, by the cgroup controller each needs.
    pub limits: WantedControllers,
    /// loadlab will try to hold the PM QoS CPU latency at 0 (not `--no-pm-qos`).
    pub pm_qos: bool,
    /// The server will sit behind a shaped link (`--bandwidth`); `Some(true)` when it needs
    /// netem too (`--delay`, `--loss`).
    pub link: Option<bool>,
    /// An HTTP/3 run: the receive buffer loadlab asks for each worker thread's UDP socket,
    /// bytes. `None` over TCP.
    pub udp_receive_buffer_bytes: Option<u64>,
    /// How new connections arrive, for the listen backlog's check.
    pub arrivals: Arrivals,
}

/// How a run's connections arrive at the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Arrivals {
    /// HTTP's: a closed loop's all at the start, an open loop's opened before it starts.
    #[default]
    AtStart,
    /// At most this many handshakes in flight at once (a WebSocket run's closed loop).
    AtMostAtOnce(u64),
    /// Opened as the schedule needs them, one per exchange due while none is free (a
    /// WebSocket open loop), up to `--max-connections`.
    AsNeeded,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoop {
    /// The highest rate any stage asks for, requests/s.
    pub peak_rate: f64,
    /// `--max-connections`.
    pub max_connections: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub port: u16,
    /// On this machine, through loopback (`tcp_tw_reuse=2` applies only there).
    pub loopback: bool,
}

/// A listen backlog and where the figure comes from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backlog {
    pub value: u32,
    /// `BACKLOG=16`, `the lab's default`, `its listening socket`.
    pub source: String,
}

/// The cgroup controllers the requested limits need.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WantedControllers {
    /// `--cpus`.
    pub cpu: bool,
    /// `--memory`.
    pub memory: bool,
    /// `--pin`.
    pub cpuset: bool,
}

impl WantedControllers {
    pub fn any(self) -> bool {
        self.cpu || self.memory || self.cpuset
    }
}

impl PlannedRun {
    /// The most connections the run may hold open at once.
    pub fn peak_connections(&self) -> u64 {
        match self.open_loop {
            Some(open) => open.max_connections,
            None => self.connections,
        }
    }

    /// New connections per second once the run is going, when known: none beyond the first
    /// with keep-alive; one per request without, which an open loop's rate gives and a
    /// closed loop's does not (it depends on how fast the server answers).
    pub fn new_connections_per_s(&self) -> Option<f64> {
        if self.keepalive {
            return Some(0.0);
        }
        self.open_loop.map(|o| o.peak_rate)
    }
}
