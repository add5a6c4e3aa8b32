//! One measured run as a library, many times in one process, leaves nothing behind; and the
//! one launcher's servers never outlive loadlab, even a `kill -9` of it.

mod common;

use loadlab_engine::{RunControl, RunSpec};
use loadlab_probe::{Limits, LimitsMode};
use loadlab_session::{BusyPoll, ServerKind, ServerSpec, Session, SessionSpec};
use loadlab_testkit::ScratchDir;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = env!("CARGO_BIN_EXE_loadlab-fixture");

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// What a process holds that a session could leak.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Held {
    fds: usize,
    threads: usize,
    children: usize,
    cgroups: usize,
}

fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).map_or(0, |d| d.count())
}

/// Live processes whose parent is this one.
fn children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...: the command may hold spaces, so split after ')'.
            let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("");
            fields.next() == Some(me.as_str()) && state != "Z"
        })
        .count()
}

/// Directories named `loadlab-PID-*` (this process's cgroups) under the cgroup mounts.
fn cgroups() -> usize {
    fn walk(dir: &Path, prefix: &str, depth: usize) -> usize {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        entries
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| {
                if e.file_name().to_string_lossy().starts_with(prefix) {
                    1
                } else if depth > 0 {
                    walk(&e.path(), prefix, depth - 1)
                } else {
                    0
                }
            })
            .sum()
    }
    walk(
        Path::new("/sys/fs/cgroup"),
        &format!("loadlab-{}-", std::process::id()),
        4,
    )
}

fn held() -> Held {
    Held {
        fds: count_dir("/proc/self/fd"),
        threads: count_dir("/proc/self/task"),
        children: children(),
        cgroups: cgroups(),
    }
}

/// Waits (bounded) for what a session held to be given back: output readers end when their
/// pipes close, a moment after the server is killed.
fn settle_to(baseline: &Held) -> Held {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = held();
        if now == *baseline || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn session(url: String, server: Option<ServerSpec>) {
    let mut s = Session::prepare(SessionSpec {
        run: RunSpec {
            url,
            connections: Some(2),
            threads: Some(1),
            duration: Some(Duration::from_millis(150)),
            pm_qos: false,
            ..RunSpec::default()
        },
        server,
        busy_poll: BusyPoll::Off,
    })
    .expect("session prepares");
    let out = s.run(&RunControl::new()).expect("session runs");
    assert!(
        out.result.measured.requests.completed > 0,
        "{:?}",
        out.result.measured.requests
    );
    assert!(!out.server_died);
}

fn launched() -> ServerSpec {
    let mut spec = ServerSpec::new(ServerKind::Exec(FIXTURE.to_string()));
    spec.healthz = "/".into();
    if is_root() {
        spec.limits = Limits {
            cpus: Some(0.5),
            memory: Some(64 << 20),
            pin: None,
        };
        spec.mode = LimitsMode::Strict;
    }
    spec
}

#[test]
fn fifty_sessions_in_a_row_leave_nothing_behind() {
    // Counts this process's children and cgroups: no other test of it may launch meanwhile.
    let _serial = common::serial();
    let server = loadlab_testkit::TestServer::start(loadlab_testkit::Behavior::Fixed(
        loadlab_testkit::response(200, "ok"),
    ));
    // One of each first: the first launch starts loadlab's spawner thread, which stays.
    session(server.url("/"), None);
    session("/".into(), Some(launched()));
    let baseline = settle_to(&held());
    for i in 0..50 {
        if i % 5 == 0 {
            session("/".into(), Some(launched()));
        } else {
            session(server.url("/"), None);
        }
    }
    assert_eq!(settle_to(&baseline), baseline);
}

/// A launched server under a quota goes on a CPU of its own and loadlab on the others, where
/// the machine has a CPU to spare, and the notes say where each runs: the flagship's first run
/// warned `cpu_sharing` against itself on two CPUs (issue 56). Best-effort, so that without
/// root the pin still holds through the server's affinity mask.
#[test]
fn a_server_under_a_quota_is_placed_apart_from_loadlab() {
    let _serial = common::serial();
    let Some(ours) = loadlab_probe::affinity::of(0).filter(|cpus| cpus.len() >= 2) else {
        eprintln!("skipped: placing apart needs two CPUs");
        return;
    };
    let last = *ours.iter().next_back().unwrap();
    let rest: Vec<usize> = ours.iter().copied().filter(|&c| c != last).collect();
    let mut spec = ServerSpec::new(ServerKind::Exec(FIXTURE.to_string()));
    spec.healthz = "/".into();
    spec.limits.cpus = Some(0.08);
    spec.mode = LimitsMode::BestEffort;
    let mut s = Session::prepare(SessionSpec {
        run: RunSpec {
            url: "/".into(),
            connections: Some(2),
            duration: Some(Duration::from_millis(150)),
            pm_qos: false,
            ..RunSpec::default()
        },
        server: Some(spec),
        busy_poll: BusyPoll::Off,
    })
    .expect("session prepares");
    let notes = s.notes().join("\n");
    assert!(
        notes.contains(&format!(
            "placement: the server on CPU {last}, loadlab on CPU {} (apart by default",
            loadlab_probe::limits::format_cpu_list(&rest)
        )),
        "{notes}"
    );
    assert!(!notes.contains("cpu_sharing"), "{notes}");
    assert_eq!(s.config().generator_cpus.as_ref(), Some(&rest));
    let out = s.run(&RunControl::new()).expect("session runs");
    assert!(out.result.measured.requests.completed > 0);
    let server = out
        .result
        .server
        .as_ref()
        .expect("a launched server's figures");
    let pin = server.limits.as_ref().and_then(|l| l.pin.as_ref());
    assert!(pin.is_some_and(|p| p.applied), "{pin:?}");
}

/// `loadlab lab serve` killed with SIGKILL: its target dies with it.
#[test]
fn a_killed_lab_serve_leaves_no_target_running() {
    let lab = tempdir();
    std::fs::write(lab.join("CONTRACT.md"), "fake lab").unwrap();
    let dir = lab.join("fake");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.txt"), "v1").unwrap();
    std::fs::write(
        dir.join("target.toml"),
        format!(
            r#"
name = "fake"
language = "shell"
framework = "none"
framework_version = "0"
toolchain = ["sh"]
toolchain_install = "apt-get install dash"
sources = ["src"]
warmup_secs = 0
[build]
command = ["sh", "-c", "mkdir -p out && cp src/main.txt out/artifact"]
artifacts = ["out/artifact"]
[run]
command = ["sh", "-c", "exec {FIXTURE} --print-address"]
"#
        ),
    )
    .unwrap();
    let loadlab = env!("CARGO_BIN_EXE_loadlab");
    let targets = lab.to_str().unwrap();
    let built = Command::new(loadlab)
        .args(["lab", "--targets", targets, "build", "fake"])
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let mut serve = Command::new(loadlab)
        .args(["lab", "--targets", targets, "serve", "fake"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // "fake is ready (pid N)" on stderr.
    let mut stderr = std::io::BufReader::new(serve.stderr.take().unwrap());
    let mut line = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid: i32 = loop {
        line.clear();
        use std::io::BufRead;
        assert!(
            stderr.read_line(&mut line).unwrap() > 0 && Instant::now() < deadline,
            "lab serve ended before the target was ready"
        );
        if let Some(rest) = line.split("(pid ").nth(1) {
            break rest.split(')').next().unwrap().parse().unwrap();
        }
    };
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    };
    assert!(alive(pid), "the target runs while lab serve does");
    let serve_pid = serve.id();
    // SIGKILL: no handler runs; only the kernel's death signal can stop the target.
    serve.kill().unwrap();
    serve.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive(pid);
    if left {
        // SAFETY: kill(2) of the process this test started through lab serve.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = std::fs::remove_dir_all(&lab);
    // Nothing removed the cgroups lab serve made (empty now): this test does, as the next
    // run's sweep of stale groups would, so that it leaves nothing behind.
    for group in common::groups_of(serve_pid) {
        let _ = std::fs::remove_dir(group);
    }
    assert!(
        !left,
        "the target (pid {pid}) outlived a killed `loadlab lab serve`"
    );
}

fn tempdir() -> ScratchDir {
    ScratchDir::new("session-test")
}
