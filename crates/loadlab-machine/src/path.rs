//! The path as one end's TCP stack sees it, sampled through `sock_diag`
//! ([`loadlab_probe::sockets`]): a generator's own connections to the server's port, or the
//! server's connections on its listening port; over HTTP/3, the engine's QUIC connections as
//! quinn sees them (`quic`: the kernel keeps no per-connection figures for UDP). Each sample
//! becomes a
//! [`PathWindow`] (the deltas since the last one); [`PathWatch`] samples on a thread of its
//! own through a run, on absolute deadlines, and hands the windows back placed on the run's
//! clock. What they mean is `loadlab_result::path`'s rule; this module only reads.

use crate::netns::Scope;
use loadlab_engine::RunControl;
use loadlab_probe::sockets;
use loadlab_probe::tcp_info::TcpStats;
use loadlab_result::path::PathWindow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod quic;
mod spool;

/// Whose sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// This process's connections whose remote port is this (the generator's own, to the
    /// server), read from its descriptors: a kernel dump walks every socket of the machine,
    /// and one with tens of thousands in TIME_WAIT made the sampler cost more than the run
    /// (`sockets::own_connections_to`).
    Generator { port: u16 },
    /// Connections on this local port (the server's), listeners left out.
    Server { port: u16 },
}

/// The counters a window is the delta of, per connection.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counters {
    received: u64,
    acked: u64,
    busy: u64,
    rwnd: u64,
    sndbuf: u64,
}

impl Counters {
    fn of(t: &TcpStats) -> Counters {
        Counters {
            received: t.bytes_received.unwrap_or(0),
            acked: t.bytes_acked.unwrap_or(0),
            busy: t.busy_us.unwrap_or(0),
            rwnd: t.rwnd_limited_us.unwrap_or(0),
            sndbuf: t.sndbuf_limited_us.unwrap_or(0),
        }
    }
}

/// Where a sampler reads: one side's TCP sockets, or the engine's QUIC connections.
#[derive(Debug)]
enum Source {
    Tcp(Side, sockets::ConnectionDump),
    Quic(Arc<loadlab_engine::engine::QuicPaths>),
}

/// Samples one side's sockets; each call gives the window since the previous one.
#[derive(Debug)]
pub struct PathSampler {
    source: Source,
    last: HashMap<u64, Counters>,
    last_at: Option<Instant>,
    /// The generator's connections as last read (kept for its buffer).
    own: Vec<sockets::SocketInfo>,
}

impl PathSampler {
    pub fn new(side: Side) -> PathSampler {
        PathSampler::of(Source::Tcp(side, sockets::ConnectionDump::default()))
    }

    /// The generator's QUIC connections of an HTTP/3 run (the run's
    /// [`RunControl::quic_paths`]).
    pub fn quic(paths: Arc<loadlab_engine::engine::QuicPaths>) -> PathSampler {
        PathSampler::of(Source::Quic(paths))
    }

    fn of(source: Source) -> PathSampler {
        PathSampler {
            source,
            last: HashMap::new(),
            last_at: None,
            own: Vec::new(),
        }
    }

    /// The window since the last call (`t_s` left 0 for the caller to place); `None` on the
    /// first call (the baseline), or when the kernel's socket diagnostics are unavailable.
    pub fn sample(&mut self) -> Option<PathWindow> {
        let now = Instant::now();
        let (side, dump) = match &mut self.source {
            Source::Tcp(side, dump) => (*side, dump),
            Source::Quic(paths) => {
                let window = quic::window(paths.take());
                let before = self.last_at.replace(now)?;
                return Some(PathWindow {
                    dt_s: (now - before).as_secs_f64(),
                    ..window
                });
            }
        };
        let found = match side {
            Side::Generator { port } => {
                sockets::own_connections_to(port, &mut self.own).ok()?;
                &self.own[..]
            }
            Side::Server { port } => dump.dump(sockets::Connections::On(port)).ok()?,
        };
        let seen: Vec<(u64, TcpStats, u32)> = found
            .iter()
            .filter_map(|s| Some((s.cookie, s.tcp?, s.send_queue_bytes)))
            .collect();
        let first = self.last_at.is_none();
        let window = window(&self.last, &seen, first);
        self.last = seen.iter().map(|(c, t, _)| (*c, Counters::of(t))).collect();
        let before = self.last_at.replace(now)?;
        Some(PathWindow {
            dt_s: (now - before).as_secs_f64(),
            ..window
        })
    }
}

/// The window between `last` (each connection's counters at the previous sample) and
/// `now`. A connection new since then counts from 0 (it opened in the window), unless this
/// is the `first` sample, which only sets the baseline.
fn window(last: &HashMap<u64, Counters>, now: &[(u64, TcpStats, u32)], first: bool) -> PathWindow {
    let mut w = PathWindow {
        sockets: now.len() as u32,
        ..PathWindow::default()
    };
    let (mut busy, mut rwnd, mut sndbuf) = (0u64, 0u64, 0u64);
    let mut chrono = false;
    let (mut notsent, mut rate) = (None::<u64>, None::<u64>);
    for (cookie, t, queue) in now {
        let c = Counters::of(t);
        let before =
            last.get(cookie)
                .copied()
                .unwrap_or(if first { c } else { Counters::default() });
        w.received_bytes += c.received.saturating_sub(before.received);
        w.acked_bytes += c.acked.saturating_sub(before.acked);
        if t.busy_us.is_some() {
            chrono = true;
            busy += c.busy.saturating_sub(before.busy);
            rwnd += c.rwnd.saturating_sub(before.rwnd);
            sndbuf += c.sndbuf.saturating_sub(before.sndbuf);
        }
        if let Some(n) = t.notsent_bytes {
            notsent = Some(notsent.unwrap_or(0) + n as u64);
        }
        if let Some(r) = t.delivery_rate {
            rate = Some(rate.unwrap_or(0) + r);
        }
        w.send_queue_bytes += *queue as u64;
    }
    if chrono {
        (w.busy_us, w.rwnd_limited_us, w.sndbuf_limited_us) =
            (Some(busy), Some(rwnd), Some(sndbuf));
    }
    (w.notsent_bytes, w.delivery_rate) = (notsent, rate);
    // Round trips of the connections that carried bytes in the window only: an idle one
    // (an open loop's spare connections) keeps the estimate of its last exchange, which
    // says nothing of the path now. One that has not yet sent data has none (0): left out.
    let active: Vec<&TcpStats> = now
        .iter()
        .filter(|(cookie, t, _)| {
            let c = Counters::of(t);
            let before = last.get(cookie).copied().unwrap_or_default();
            first || c.received > before.received || c.acked > before.acked
        })
        .map(|(_, t, _)| t)
        .collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    w.rtt_us = median(
        active
            .iter()
            .map(|t| t.rtt_us as f64)
            .filter(|&r| r > 0.0)
            .collect(),
    );
    w.rcv_rtt_us = median(
        active
            .iter()
            .map(|t| t.rcv_rtt_us as f64)
            .filter(|&r| r > 0.0)
            .collect(),
    );
    // The kernel reports "no sample yet" as ~0U.
    w.min_rtt_us = now
        .iter()
        .filter_map(|(_, t, _)| t.min_rtt_us)
        .filter(|&m| m > 0 && m != u32::MAX)
        .min()
        .map(f64::from);
    w
}

/// The transport a run of `config` is read over, as a path report names it: "quic" for
/// HTTP/3 (quinn's figures), "tcp" otherwise (the kernel's).
pub fn transport(config: &loadlab_engine::RunConfig) -> &'static str {
    if config.http3 {
        "quic"
    } else {
        "tcp"
    }
}

/// How often [`PathWatch`] samples: two windows in a capacity probe's 200 ms intervals (at
/// 200 ms, some intervals had none and others two, and a probe's seconds came up short).
pub const PERIOD: Duration = Duration::from_millis(100);

/// Samples one side's sockets on a thread of its own from the run's start until
/// [`PathWatch::finish`].
pub struct PathWatch {
    done: Arc<AtomicBool>,
    /// The finished intervals' folded windows (spooled out of memory), then the windows of
    /// the interval the run ended in.
    thread: Option<std::thread::JoinHandle<(spool::Spool, Vec<PathWindow>)>>,
    /// The run's interval, when the windows are folded by it.
    fold: Option<Duration>,
}

impl PathWatch {
    /// Starts watching: the baseline is taken when `control` says the run started.
    pub fn start(side: Side, control: &RunControl, period: Duration) -> PathWatch {
        PathWatch::start_in(Scope::Own, side, control, period)
    }

    /// [`PathWatch::start`] with the sockets read in `scope`'s network namespace (a server
    /// behind a shaped link has one of its own): the thread enters it first.
    pub fn start_in(scope: Scope, side: Side, control: &RunControl, period: Duration) -> PathWatch {
        PathWatch::watch(
            scope,
            Source::Tcp(side, Default::default()),
            control,
            period,
            None,
        )
    }

    /// `fold`: the run's interval, when known: each interval's windows are folded into one
    /// once the next interval's first arrives ([`fold_slots`]) and that one goes to a spool
    /// out of memory, so a day's run keeps in memory only its current interval's windows.
    fn watch(
        scope: Scope,
        source: Source,
        control: &RunControl,
        period: Duration,
        fold: Option<Duration>,
    ) -> PathWatch {
        let done = Arc::new(AtomicBool::new(false));
        let (flag, control) = (done.clone(), control.clone());
        let thread = std::thread::Builder::new()
            .name("loadlab-path".into())
            .spawn(move || {
                if let Scope::Netns(path) = &scope {
                    let entered = std::fs::File::open(path).is_ok_and(|f| {
                        let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
                        // SAFETY: setns(2) on a descriptor this thread owns; it moves this
                        // thread only, which ends with the watch.
                        let rc = unsafe { libc::setns(fd, libc::CLONE_NEWNET) };
                        rc == 0
                    });
                    if !entered {
                        return (spool::Spool::new(), Vec::new());
                    }
                }
                let quit = || flag.load(Ordering::Acquire);
                let origin = loop {
                    if let Some(s) = control.started_at() {
                        break s;
                    }
                    if quit() || control.is_stopped() {
                        return (spool::Spool::new(), Vec::new());
                    }
                    std::thread::sleep(Duration::from_millis(1));
                };
                let mut sampler = PathSampler::of(source);
                let mut windows = Vec::new();
                let mut spool = spool::Spool::new();
                let mut next = origin;
                loop {
                    if let Some(mut w) = sampler.sample() {
                        w.t_s = origin.elapsed().as_secs_f64();
                        windows.push(w);
                        if let Some(len) = fold {
                            let folded = fold_slots(&mut windows, 0, len.as_secs_f64());
                            windows.drain(..folded).for_each(|w| spool.push(&w));
                        }
                    }
                    if quit() {
                        return (spool, windows);
                    }
                    next += period;
                    while Instant::now() < next {
                        if quit() {
                            break;
                        }
                        std::thread::sleep((next - Instant::now()).min(Duration::from_millis(20)));
                    }
                }
            })
            .ok();
        PathWatch { done, thread, fold }
    }

    /// The generator's own connections through a run of `config`: over TCP (HTTP/1.1 and
    /// HTTP/2) the kernel's figures; over QUIC (HTTP/3) quinn's, from the engine's
    /// connections (`transport` says which the report is).
    pub fn for_run(config: &loadlab_engine::RunConfig, control: &RunControl) -> Option<PathWatch> {
        let source = if config.http3 {
            Source::Quic(control.quic_paths().clone())
        } else {
            Source::Tcp(
                Side::Generator {
                    port: config.url.port,
                },
                Default::default(),
            )
        };
        Some(PathWatch::watch(
            Scope::Own,
            source,
            control,
            PERIOD,
            Some(config.interval),
        ))
    }

    /// The server's connections through a run of `config`, when the server is on this
    /// machine (`scope`: its namespace); over TCP only.
    pub fn for_server(
        config: &loadlab_engine::RunConfig,
        control: &RunControl,
        scope: Scope,
    ) -> Option<PathWatch> {
        (!config.http3).then(|| {
            PathWatch::watch(
                scope,
                Source::Tcp(
                    Side::Server {
                        port: config.url.port,
                    },
                    Default::default(),
                ),
                control,
                PERIOD,
                Some(config.interval),
            )
        })
    }

    /// Stops watching (one last sample closes the run's last interval) and returns the
    /// windows, `t_s` from the run's start.
    pub fn finish(self) -> Vec<PathWindow> {
        self.finish_grouped(1)
    }

    /// [`PathWatch::finish`] for a timeline shown with `group` consecutive intervals merged
    /// into one (a run past an hour's intervals, `loadlab_result::path::coarse_spans`): the
    /// finished intervals' windows are folded again, `group` intervals into one window, as
    /// they are read back, so that a day's run ends holding as many as an hour's. Joined
    /// into the merged intervals they give what the unmerged windows would (`fold`).
    pub fn finish_grouped(mut self, group: u64) -> Vec<PathWindow> {
        self.done.store(true, Ordering::Release);
        let Some((spool, tail)) = self.thread.take().and_then(|t| t.join().ok()) else {
            return Vec::new();
        };
        // Spooled windows are folded by interval already: a group of one changes nothing.
        let len = self.fold.filter(|_| group > 1);
        regroup(spool, tail, len.map(|f| f.as_secs_f64() * group as f64))
    }
}

/// Folds each interval of `len` seconds (the run's timeline's: the `k`-th holds the windows
/// ending in `(k·len, (k+1)·len]`, as `loadlab_result::path::intervals` joins them) into one
/// window ending at the interval's end, once a window of a later interval has come: the
/// windows from `unfolded` on are not folded yet. Returns where the unfolded ones now begin.
/// The last interval is never folded (a run's last is cut short by its end, and its windows
/// stay as they are).
fn fold_slots(windows: &mut Vec<PathWindow>, unfolded: usize, len: f64) -> usize {
    // Within intervals()'s 1e-9 s of an end is that interval's: a folded window ends at
    // its interval's end exactly, which a span of several intervals must not round past.
    let slot = |w: &PathWindow| (((w.t_s - 1e-9) / len).ceil() as i64 - 1).max(0);
    let Some(newest) = windows.last().map(slot) else {
        return unfolded;
    };
    let mut done = Vec::new();
    let mut rest = windows.split_off(unfolded);
    while let Some(first) = rest.first().map(slot).filter(|&k| k < newest) {
        let n = rest.iter().take_while(|w| slot(w) == first).count();
        let interval: Vec<PathWindow> = rest.drain(..n).collect();
        done.push(loadlab_result::path::fold(
            &interval,
            (first + 1) as f64 * len,
        ));
    }
    windows.extend(done);
    let unfolded = windows.len();
    windows.extend(rest);
    unfolded
}

/// The spooled windows then `tail`, each span of `len` seconds (when there is one) folded
/// into one window as they are read; the last span's stay as they are.
fn regroup(spool: spool::Spool, tail: Vec<PathWindow>, len: Option<f64>) -> Vec<PathWindow> {
    let mut out = Vec::new();
    let mut unfolded = 0;
    let mut push = |w: PathWindow| {
        out.push(w);
        if let Some(len) = len {
            unfolded = fold_slots(&mut out, unfolded, len);
        }
    };
    spool.drain(&mut push);
    tail.into_iter().for_each(push);
    out
}

impl Drop for PathWatch {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod regroup_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn stats(received: u64, rtt: u32, min: u32, busy: u64) -> TcpStats {
        TcpStats {
            rtt_us: rtt,
            min_rtt_us: Some(min),
            bytes_received: Some(received),
            busy_us: Some(busy),
            rwnd_limited_us: Some(0),
            sndbuf_limited_us: Some(0),
            ..TcpStats::default()
        }
    }

    #[test]
    fn each_finished_interval_is_folded_into_one_window_and_the_last_is_left() {
        let mut windows = Vec::new();
        let mut unfolded = 0;
        // Ten windows a second for 2.45 s, intervals of 1 s.
        for i in 1..=24u32 {
            windows.push(PathWindow {
                t_s: f64::from(i) * 0.1 + 0.001,
                dt_s: 0.1,
                sockets: 1,
                received_bytes: 100,
                ..PathWindow::default()
            });
            unfolded = fold_slots(&mut windows, unfolded, 1.0);
        }
        // Two intervals folded (ten windows each: the first ends at 1.001 s, in the second),
        // four windows of the third as they came.
        assert_eq!(windows.len(), 2 + 5, "{windows:?}");
        assert_eq!(unfolded, 2);
        let folded: Vec<u32> = windows[..2]
            .iter()
            .map(|w| w.folded.unwrap().windows)
            .collect();
        assert_eq!(folded, [9, 10]);
        assert_eq!((windows[0].t_s, windows[1].t_s), (1.0, 2.0));
        assert_eq!(windows.iter().map(|w| w.received_bytes).sum::<u64>(), 2_400);
        assert!(windows[2..].iter().all(|w| w.folded.is_none()));
    }

    #[test]
    fn a_window_is_the_delta_and_new_connections_count_from_zero() {
        let last: HashMap<u64, Counters> = [(1, Counters::of(&stats(1_000, 0, 0, 10)))].into();
        let idle = Counters::of(&stats(9_000, 0, 0, 0));
        let last: HashMap<u64, Counters> = last.into_iter().chain([(4, idle)]).collect();
        let now = [
            (1, stats(4_000, 900, 50, 30), 100),
            (2, stats(500, 100, 40, 5), 0),
            (3, stats(0, 0, u32::MAX, 0), 0),
            // Idle through the window: its old round trip is not the path's now.
            (4, stats(9_000, 5, 60, 0), 0),
        ];
        let w = window(&last, &now, false);
        assert_eq!(w.received_bytes, 3_000 + 500);
        assert_eq!(w.busy_us, Some(20 + 5));
        assert_eq!(
            w.rtt_us,
            Some(900.0),
            "the median of those with a round trip"
        );
        assert_eq!(w.min_rtt_us, Some(40.0));
        assert_eq!(w.send_queue_bytes, 100);
        // The first sample is a baseline: nothing before it counts.
        assert_eq!(window(&HashMap::new(), &now, true).received_bytes, 0);
    }

    /// A real connection: the generator's side sees what it received, and a round trip.
    #[test]
    fn a_generators_connection_is_seen_from_its_side() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut sampler = PathSampler::new(Side::Generator { port });
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        assert_eq!(sampler.sample(), None, "the first sample is the baseline");
        client.write_all(b"GET").unwrap();
        server.read_exact(&mut [0u8; 3]).unwrap();
        server.write_all(&[7u8; 50_000]).unwrap();
        client.read_exact(&mut vec![0u8; 50_000]).unwrap();
        let w = sampler.sample().expect("sock_diag answers");
        // Other tests' connections to other ports are not this port's.
        assert!(w.sockets >= 1);
        assert!(w.received_bytes >= 50_000, "{w:?}");
        assert!(w.rtt_us.is_some_and(|r| r > 0.0), "{w:?}");
        let mut server_side = PathSampler::new(Side::Server { port });
        server_side.sample();
        server.write_all(&[7u8; 10_000]).unwrap();
        client.read_exact(&mut vec![0u8; 10_000]).unwrap();
        let w = server_side.sample().unwrap();
        assert_eq!(w.sockets, 1, "the listener is not a connection");
        assert!(w.busy_us.is_some(), "the sender's chrono stats: {w:?}");
    }
}
