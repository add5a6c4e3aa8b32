//! The server's process: spawned from one long-lived thread, set up between fork and exec
//! (cgroup, process group, parent-death signal, CPU pinning, network namespace), its stdout
//! and stderr drained so a full pipe never blocks it. No readiness or health logic here.

use super::{lock, Readiness, OUTPUT_LINES_KEPT};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command};
use std::sync::{mpsc, Arc, Mutex};

/// Spawns `command` from one long-lived thread. A launched server gets `PR_SET_PDEATHSIG`,
/// which fires when the *thread* that forked it ends, not the process: spawned from a
/// short-lived thread (a runtime's blocking pool, a test's helper), the server would be
/// killed when that thread exits. This thread lives as long as loadlab does.
pub(super) fn spawn_from_spawner(command: Command) -> std::io::Result<Child> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: std::sync::OnceLock<Mutex<mpsc::Sender<Job>>> = std::sync::OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("loadlab-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread can be started at launch time");
        Mutex::new(tx)
    });
    let (reply, answer) = mpsc::channel();
    lock(spawner)
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

pub(super) fn cpu_set(cpus: &[usize]) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it for CPUs parse_cpu_list
    // bounded by the machine's count.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

/// Between fork and exec: join the cgroup (so every thread the server ever starts is inside),
/// leave loadlab's process group (a terminal's Ctrl-C must reach loadlab only), die with
/// loadlab (a `kill -9` of loadlab must not leave a server behind), and pin if asked.
pub(super) fn prepare_child(
    command: &mut Command,
    join: Vec<std::ffi::CString>,
    affinity: Option<libc::cpu_set_t>,
    netns: Option<std::os::fd::RawFd>,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and makes only async-signal-safe system
    // calls (open, write, close, setpgid, prctl, sched_setaffinity, setns) on data prepared
    // before the fork; it allocates nothing. The namespace's descriptor stays open in the
    // parent until the spawn returns.
    unsafe {
        command.pre_exec(move || {
            for file in &join {
                let fd = libc::open(file.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let wrote = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if wrote != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::setpgid(0, 0);
            // The signal follows the death of the thread that forked: loadlab launches from
            // its main thread.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let Some(set) = &affinity {
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // After the cgroup is joined (its files are named in loadlab's mounts, which a
            // network namespace does not change).
            if let Some(fd) = netns {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Keeps the last lines of the server's stdout and stderr (for error messages) and never
/// lets a full pipe block it. With [`Readiness::AddressLine`], the first stdout line is
/// handed over on the returned channel.
/// Returns the first stdout line's channel (with [`Readiness::AddressLine`]) and a channel
/// that closes when stderr has been read to its end.
#[allow(clippy::type_complexity)]
pub(super) fn drain_output(
    child: &mut Child,
    tail: &Arc<Mutex<VecDeque<String>>>,
    readiness: &Readiness,
) -> (Option<mpsc::Receiver<String>>, Option<mpsc::Receiver<()>>) {
    let keep = |tail: &Arc<Mutex<VecDeque<String>>>, line: String| {
        let mut tail = lock(tail);
        if tail.len() == OUTPUT_LINES_KEPT {
            tail.pop_front();
        }
        tail.push_back(line);
    };
    let mut stderr_done = None;
    if let Some(stderr) = child.stderr.take() {
        let tail = tail.clone();
        let (done, done_rx) = mpsc::channel::<()>();
        stderr_done = Some(done_rx);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                keep(&tail, line);
            }
            // Dropping `done` tells a waiter the tail is complete.
            drop(done);
        });
    }
    let Some(stdout) = child.stdout.take() else {
        return (None, stderr_done);
    };
    let (tx, rx) = mpsc::channel();
    let wants_line = matches!(readiness, Readiness::AddressLine);
    let tail = tail.clone();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut first = true;
        let mut line = String::new();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            if first && wants_line {
                let _ = tx.send(line.clone());
            } else {
                keep(&tail, line.trim_end().to_string());
            }
            first = false;
            line.clear();
        }
        // Anything unreadable as text: drain it anyway.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    (wants_line.then_some(rx), stderr_done)
}
