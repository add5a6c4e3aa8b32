//! The agent's second audit (issue 51): a lab others can write is never run, a client gone
//! mid-request cannot wedge the session slot, and what a token holder sends is bounded
//! before it is read.

use crate::support;

use loadlab_agent::lab::{choose, Chosen};
use loadlab_agent::protocol::{Hello, LaunchOptions, OpenSession, Opened, ServerRequest};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{eventually, start, Agent, Req};

fn open(server: ServerRequest) -> OpenSession {
    OpenSession {
        server,
        client: "audit".into(),
        run: None,
        lease_ms: None,
    }
}

fn mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A lab of one target, `evil`, built (its stamp written), whose server touches `marker`
/// and never listens: whether the agent ran it is whether `marker` exists.
fn lab_in(dir: &Path, marker: &Path) -> PathBuf {
    let root = dir.join("targets");
    let target = root.join("evil");
    std::fs::create_dir_all(&target).unwrap();
    std::fs::write(root.join("CONTRACT.md"), "# contract\n").unwrap();
    let run = target.join("run.sh");
    std::fs::write(
        &run,
        format!("#!/bin/sh\ntouch {}\nexec sleep 30\n", marker.display()),
    )
    .unwrap();
    mode(&run, 0o755);
    std::fs::write(
        target.join("target.toml"),
        "name = \"evil\"\nlanguage = \"sh\"\nframework = \"none\"\nframework_version = \"0\"\n\
         sources = [\"run.sh\"]\n[build]\ncommand = [\"true\"]\nartifacts = [\"run.sh\"]\n\
         [run]\ncommand = [\"./run.sh\"]\n",
    )
    .unwrap();
    let loaded = loadlab_lab::manifest::Target::load(&target).unwrap();
    let stamps = root.join("target/loadlab-stamps");
    std::fs::create_dir_all(&stamps).unwrap();
    std::fs::write(
        stamps.join("evil.fingerprint"),
        loadlab_lab::fingerprint::of(&loaded).unwrap(),
    )
    .unwrap();
    root
}

fn launch_evil(agent: &Agent) -> support::Answer {
    agent.post(
        "/v1/sessions",
        &open(ServerRequest::Target {
            name: "evil".into(),
            launch: LaunchOptions {
                startup_timeout_ms: 300,
                limits_mode: "best-effort".into(),
                ..LaunchOptions::default()
            },
        }),
    )
}

/// A target whose directory others may write is refused (409 naming the path and the
/// `chmod`) before anything of it runs; made private again, the same target is run. Before
/// the fix, the agent ran whatever such a lab held, as its own user.
#[test]
fn a_lab_others_can_write_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let root = lab_in(dir.path(), &marker);
    let agent = start(|c| c.targets_dir = Some(root.clone()));
    mode(&root.join("evil"), 0o777);
    let answer = launch_evil(&agent);
    assert_eq!(
        answer.status,
        409,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let error = answer.error().error;
    assert!(
        error.contains(&root.join("evil").display().to_string()) && error.contains("chmod go-w"),
        "{error}"
    );
    assert!(!marker.exists(), "the agent ran a target others can write");
    // A file of it writable by others, the same.
    mode(&root.join("evil"), 0o755);
    mode(&root.join("evil/run.sh"), 0o757);
    assert_eq!(launch_evil(&agent).status, 409);
    assert!(!marker.exists());
    // Owned by another user (root can make one): refused, naming the owner.
    if unsafe { libc::geteuid() } == 0 {
        mode(&root.join("evil/run.sh"), 0o755);
        std::os::unix::fs::chown(root.join("evil/run.sh"), Some(65534), None).unwrap();
        let answer = launch_evil(&agent);
        assert_eq!(answer.status, 409);
        assert!(
            answer.error().error.contains("uid 65534"),
            "{}",
            answer.error().error
        );
        assert!(!marker.exists());
        std::os::unix::fs::chown(root.join("evil/run.sh"), Some(0), None).unwrap();
    }
    // Private again: run (and, never listening, refused as not ready).
    mode(&root.join("evil/run.sh"), 0o755);
    let answer = launch_evil(&agent);
    assert_eq!(
        answer.status,
        502,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(marker.exists());
}

/// Without `--targets` the lab is found once, at start, and only if nobody else can write
/// it; an agent without one never looks for one at a launch. Before the fix, an agent
/// started under /tmp ran the `targets/` anyone created above its working directory.
#[test]
fn a_lab_is_chosen_once_at_start_and_only_when_safe() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let root = lab_in(dir.path(), &marker);
    let cwd = dir.path().join("a/b");
    std::fs::create_dir_all(&cwd).unwrap();
    assert_eq!(
        choose(None, &cwd).unwrap(),
        Chosen::Taken(root.canonicalize().unwrap())
    );
    // Planted where others can write: not taken, and why names the path and the fix.
    mode(&root, 0o777);
    let Chosen::None(why) = choose(None, &cwd).unwrap() else {
        panic!("a lab others can write was taken");
    };
    assert!(
        why.contains(&root.display().to_string()) && why.contains("--targets"),
        "{why}"
    );
    // Given explicitly, the agent does not start.
    let err = choose(Some(&root), &cwd).unwrap_err().to_string();
    assert!(
        err.contains("--targets") && err.contains("chmod go-w"),
        "{err}"
    );
    mode(&root, 0o755);
    let empty = tempfile::tempdir().unwrap();
    let Chosen::None(why) = choose(None, empty.path()).unwrap() else {
        panic!("a lab where there is none");
    };
    assert!(why.contains("--targets DIR"), "{why}");
    // An agent with no lab refuses a target by name: it does not look above its working
    // directory (this test's has the repository's targets/ above it).
    let agent = start(|_| {});
    let answer = agent.post(
        "/v1/sessions",
        &open(ServerRequest::Target {
            name: "rust-axum".into(),
            launch: LaunchOptions::default(),
        }),
    );
    assert_eq!(
        answer.status,
        409,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(
        answer.error().error.contains("--targets"),
        "{}",
        answer.error().error
    );
}

fn busy(agent: &Agent) -> bool {
    agent.get("/v1/hello").json::<Hello>().busy.is_some()
}

/// A client that goes away in the middle of a launch leaves the agent free once the launch
/// ends (here: it fails its readiness after 1.5 s), and the next session opens. Before the
/// fix the slot stayed "opening" for ever and every later session got 409.
#[test]
fn a_client_gone_mid_launch_does_not_wedge_the_agent() {
    let agent = start(|c| c.allow_exec = true);
    let exec = open(ServerRequest::Exec {
        command: "sleep 30".into(),
        launch: LaunchOptions {
            startup_timeout_ms: 1500,
            limits_mode: "best-effort".into(),
            ..LaunchOptions::default()
        },
    });
    let body = serde_json::to_vec(&exec).unwrap();
    let hold = agent.send_and_hold(&Agent::raw_request("POST", "/v1/sessions", &body));
    assert!(eventually(Duration::from_secs(10), || busy(&agent)));
    drop(hold);
    assert!(
        eventually(Duration::from_secs(10), || !busy(&agent)),
        "the agent stayed busy after its client went away mid-launch"
    );
    let attach = agent.post(
        "/v1/sessions",
        &open(ServerRequest::Pid {
            pid: std::process::id(),
        }),
    );
    assert_eq!(
        attach.status,
        201,
        "{}",
        String::from_utf8_lossy(&attach.body)
    );
    let opened: Opened = attach.json();
    let closed = agent.call(Req::new(
        "DELETE",
        &format!("/v1/sessions/{}", opened.session),
    ));
    assert_eq!(closed.status, 200);
}

/// The same for a stop: a server that ignores SIGTERM takes the stop grace (2 s) to stop;
/// its client goes away meanwhile; the agent is free once the stop ends.
#[test]
fn a_client_gone_mid_stop_does_not_wedge_the_agent() {
    let agent = start(|c| c.allow_exec = true);
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED: needs python3");
        return;
    }
    let exec = open(ServerRequest::Exec {
        command: "trap '' TERM; exec python3 -m http.server --bind $HOST $PORT".into(),
        launch: LaunchOptions {
            healthz: "/".into(),
            limits_mode: "best-effort".into(),
            ..LaunchOptions::default()
        },
    });
    let answer = agent.post("/v1/sessions", &exec);
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let opened: Opened = answer.json();
    let path = format!("/v1/sessions/{}", opened.session);
    let hold = agent.send_and_hold(&Agent::raw_request("DELETE", &path, b""));
    // Closing: the session no longer answers, the slot is still taken.
    assert!(eventually(Duration::from_secs(10), || {
        agent
            .call(Req::new("POST", &format!("{path}/lease")))
            .status
            == 404
    }));
    drop(hold);
    assert!(
        eventually(Duration::from_secs(10), || !busy(&agent)),
        "the agent stayed busy after its client went away mid-stop"
    );
    let attach = agent.post(
        "/v1/sessions",
        &open(ServerRequest::Pid {
            pid: std::process::id(),
        }),
    );
    assert_eq!(attach.status, 201);
}

/// `WORKERS` through the agent is at most 1024 (each may be a process of a forking
/// target): more is refused with 403 naming the bound. Before the fix, up to 1,000,000.
#[test]
fn workers_through_the_agent_are_bounded() {
    let lab = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets");
    let agent = start(|c| c.targets_dir = Some(lab));
    let answer = agent.post(
        "/v1/sessions",
        &open(ServerRequest::Target {
            name: "python-flask".into(),
            launch: LaunchOptions {
                env: vec![("WORKERS".into(), "5000".into())],
                ..LaunchOptions::default()
            },
        }),
    );
    assert_eq!(
        answer.status,
        403,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let error = answer.error();
    assert_eq!(error.field.as_deref(), Some("server.env.WORKERS"));
    assert!(error.error.contains("1024"), "{}", error.error);
}

/// Whether this process ignores SIGCHLD (`SigIgn` in /proc/self/status).
fn sigchld_ignored() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
        .unwrap();
    mask & (1 << (libc::SIGCHLD - 1)) != 0
}

/// Run by [`an_inherited_ignored_sigchld_is_reset`] in a process of its own (this test
/// binary again), started with SIGCHLD ignored: the agent must reset it.
#[test]
fn sigchld_helper() {
    if std::env::var_os("LOADLAB_SIGCHLD_HELPER").is_none() {
        return;
    }
    assert!(
        sigchld_ignored(),
        "the helper was not started with SIGCHLD ignored"
    );
    let ca = loadlab_certs::Authority::new("sigchld").unwrap();
    let tls =
        loadlab_certs::server_config_for(&ca.issue_loopback(&[]).unwrap(), &[b"http/1.1"]).unwrap();
    let config = loadlab_agent::AgentConfig::new(loadlab_agent::Token::new(support::TOKEN), tls);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    loadlab_agent::serve(listener, config, async {}).unwrap();
    assert!(!sigchld_ignored(), "SIGCHLD is still ignored");
}

/// An agent started with SIGCHLD ignored (inherited) resets it to the default, so that its
/// launched servers' PIDs stay theirs until it reaps them. Before the fix it kept it ignored.
#[test]
fn an_inherited_ignored_sigchld_is_reset() {
    use std::os::unix::process::CommandExt as _;
    let mut helper = std::process::Command::new(std::env::current_exe().unwrap());
    helper
        .args([
            "--exact",
            "audit::sigchld_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LOADLAB_SIGCHLD_HELPER", "1");
    // SAFETY: signal(2) between fork and exec is async-signal-safe.
    unsafe {
        helper.pre_exec(|| {
            libc::signal(libc::SIGCHLD, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = helper.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// A flood of connections that never send a byte, from 40 addresses (so that the agent's
/// bound, not one address's share, is what they press on), does not evict a client that
/// takes 200 ms between its handshake and its request: a connection that has sent
/// something is dropped only after every one that has not. Before the fix, the oldest
/// unauthenticated connection went first, and the client's was soon the oldest.
#[test]
fn a_flood_of_silent_connections_does_not_evict_a_slow_client() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let agent = start(|c| c.max_connections = 32);
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    let flood = {
        let (stop, opened, addr) = (stop.clone(), opened.clone(), agent.addr);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let mut held = std::collections::VecDeque::new();
                let mut n = 0u8;
                while !stop.load(Ordering::Relaxed) {
                    n = n % 40 + 1;
                    let socket = tokio::net::TcpSocket::new_v4().unwrap();
                    if socket.bind(([127, 0, 0, 1 + n], 0).into()).is_err() {
                        continue;
                    }
                    // A SYN dropped for a full accept queue would stall a connect for a
                    // second or more (backoff): give up on it and send another.
                    let connect = socket.connect(addr);
                    if let Ok(Ok(s)) =
                        tokio::time::timeout(Duration::from_millis(50), connect).await
                    {
                        held.push_back(s);
                        opened.fetch_add(1, Ordering::Relaxed);
                    }
                    if held.len() > 400 {
                        held.pop_front();
                    }
                }
            })
        })
    };
    assert!(eventually(Duration::from_secs(10), || opened
        .load(Ordering::Relaxed)
        > 100));
    let before = opened.load(Ordering::Relaxed);
    let answers: Vec<_> = (0..3)
        .map(|_| agent.slow_hello(Duration::from_millis(200)))
        .collect();
    let during = opened.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    // The flood went on all along: each client's connection would have been the oldest
    // unauthenticated one many times over.
    assert!(during > 3 * 32, "only {during} flood connections meanwhile");
    for answer in answers {
        let answer = answer.unwrap_or_else(|e| panic!("the slow client was cut off: {e}"));
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}
