//! The agent against a hostile token holder (issue 40): no command through a launch's
//! environment, nothing killed that it did not launch, no lock-out by connections that never
//! authenticate, no body that takes forever.

use crate::support;

use loadlab_agent::protocol::{
    Hello, LaunchOptions, OpenSession, Opened, SampleBatch, ServerRequest, StartSampling,
    HEADER_PROTOCOL, PROTOCOL,
};
use std::path::PathBuf;
use std::time::Duration;
use support::{eventually, start, Req};

fn open(server: ServerRequest) -> OpenSession {
    OpenSession {
        server,
        client: "hostile".into(),
        run: None,
        lease_ms: None,
    }
}

fn targets_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../targets")
}

fn target_with(name: &str, env: &[(&str, &str)]) -> ServerRequest {
    ServerRequest::Target {
        name: name.into(),
        launch: LaunchOptions {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..LaunchOptions::default()
        },
    }
}

/// Each runtime hook of a kind the lab's targets obey, sent to a target of that runtime:
/// refused with 403 naming the variable, before anything is launched. Before the fix, each
/// went to the target's process verbatim (`ERL_AFLAGS=-eval 'os:cmd(...)'` ran a shell
/// command as root).
#[test]
fn a_launchs_environment_sets_knobs_only() {
    let agent = start(|c| c.targets_dir = Some(targets_dir()));
    let marker = std::env::temp_dir().join(format!("loadlab-pwned-{}", std::process::id()));
    let touch = format!("os:cmd(\"touch {}\")", marker.display());
    for (target, name, value) in [
        ("erlang-cowboy", "ERL_AFLAGS", format!("-eval '{touch}'")),
        ("erlang-cowboy", "ERL_ZFLAGS", format!("-eval '{touch}'")),
        ("java-webflux", "JAVA_TOOL_OPTIONS", "-XX:OnError=sh".into()),
        (
            "java-webflux",
            "JDK_JAVA_OPTIONS",
            "-javaagent:/tmp/x.jar".into(),
        ),
        ("kotlin-ktor", "JAVA_OPTS", "-javaagent:/tmp/x.jar".into()),
        ("node-express", "NODE_OPTIONS", "--require /tmp/x.js".into()),
        (
            "python-flask",
            "GUNICORN_CMD_ARGS",
            "--config python:x".into(),
        ),
        ("python-flask", "PYTHONSTARTUP", "/tmp/x.py".into()),
        ("python-starlette", "PYTHONPATH", "/tmp".into()),
        ("rust-axum", "LD_PRELOAD", "/tmp/x.so".into()),
        ("go-nethttp", "PATH", "/tmp".into()),
        ("go-nethttp", "GODEBUG", "x=1".into()),
        ("rust-axum", "HOST", "0.0.0.0".into()),
        ("rust-axum", "PORT", "1".into()),
        ("rust-axum", "TLS_KEY", "/etc/shadow".into()),
        ("rust-axum", "UPSTREAM_CA", "/etc/shadow".into()),
        ("rust-axum", "CONTENT_DIR", "/".into()),
        ("rust-axum", "WORKERS", "2; touch /tmp/x".into()),
        ("rust-axum", "BACKLOG", "0".into()),
        ("rust-axum", "A=B", "1".into()),
    ] {
        let answer = agent.post(
            "/v1/sessions",
            &open(target_with(target, &[("WORKERS", "2"), (name, &value)])),
        );
        assert_eq!(answer.status, 403, "{target} {name}");
        let error = answer.error();
        assert_eq!(
            error.field.as_deref(),
            Some(format!("server.env.{name}").as_str()),
            "{target} {name}: {}",
            error.error
        );
        assert!(
            error.error.contains(name.split('=').next().unwrap()),
            "{}",
            error.error
        );
        assert!(agent.get("/v1/hello").json::<Hello>().busy.is_none());
    }
    assert!(!marker.exists());
    // The contract's knobs pass the check (the target is then refused for another reason
    // on a lab that has not built it, never as a forbidden variable).
    let answer = agent.post(
        "/v1/sessions",
        &open(target_with(
            "rust-axum",
            &[("WORKERS", "2"), ("BACKLOG", "4096")],
        )),
    );
    assert_ne!(
        answer.status,
        403,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// `--allow-exec` runs any command, but where it listens is still the agent's to say: the
/// agent reports that address.
#[test]
fn an_allowed_command_still_cannot_move_its_address() {
    let agent = start(|c| c.allow_exec = true);
    for name in ["HOST", "PORT", "TLS_CERT", "TLS_KEY"] {
        let exec = ServerRequest::Exec {
            command: "true".into(),
            launch: LaunchOptions {
                env: vec![(name.into(), "0.0.0.0".into())],
                ..LaunchOptions::default()
            },
        };
        let answer = agent.post("/v1/sessions", &open(exec));
        assert_eq!(answer.status, 403, "{name}");
        assert!(answer.error().error.contains("set by the agent alone"));
    }
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok()
}

/// Tries to start a process that gets `pid` (through `ns_last_pid`, as CRIU does) and leads
/// a process group of its own, as a job of an interactive shell does. `None` when the PID
/// could not be had: it is still held.
fn take_pid(pid: u32) -> Option<support::Child> {
    use std::os::unix::process::CommandExt;
    for _ in 0..200 {
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .ok()?;
        if child.id() == pid {
            return Some(support::Child(child));
        }
        let mut other = support::Child(child);
        let _ = other.0.kill();
    }
    None
}

/// The launched server dies and its PID is taken by an unrelated process that leads its own
/// process group: closing the session must not signal that process (before the fix, the
/// sampler reaped the server, the PID was free, and the close sent SIGTERM to the new
/// holder's group).
#[test]
fn a_reused_pid_is_never_signalled() {
    if !python3() || unsafe { libc::geteuid() } != 0 {
        println!("SKIPPED: needs python3 and root (ns_last_pid)");
        return;
    }
    let agent = start(|c| c.allow_exec = true);
    let exec = ServerRequest::Exec {
        command: "python3 -m http.server --bind $HOST $PORT".into(),
        launch: LaunchOptions {
            limits_mode: "best-effort".into(),
            healthz: "/".into(),
            ..LaunchOptions::default()
        },
    };
    let answer = agent.post("/v1/sessions", &open(exec));
    assert_eq!(
        answer.status,
        201,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    let opened: Opened = answer.json();
    let pid = opened.pid.unwrap();
    let sampling = agent.post(
        &format!("/v1/sessions/{}/sampling", opened.session),
        &StartSampling {
            every_ms: 20,
            port: None,
        },
    );
    assert_eq!(sampling.status, 200);
    // SAFETY: the test's own launched server, by its PID while the agent holds it.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let exited = eventually(Duration::from_secs(10), || {
        agent
            .get(&format!(
                "/v1/sessions/{}/samples?after=0&wait_ms=200",
                opened.session
            ))
            .json::<SampleBatch>()
            .exit
            .is_some()
    });
    assert!(exited, "the agent never saw its server exit");
    let impostor = take_pid(pid);
    let closed = agent.call(Req::new(
        "DELETE",
        &format!("/v1/sessions/{}", opened.session),
    ));
    assert_eq!(closed.status, 200);
    let text = String::from_utf8_lossy(&closed.body).to_string();
    assert!(text.contains("had already exited"), "{text}");
    if let Some(mut impostor) = impostor {
        assert!(
            impostor.0.try_wait().unwrap().is_none(),
            "the close killed process {pid}, which the agent never launched"
        );
    }
}

/// Connections that never authenticate, as many as the bound and more from one address,
/// cannot keep a client with the token out.
#[test]
fn idle_unauthenticated_connections_cannot_lock_out_a_client() {
    let agent = start(|c| c.max_connections = 16);
    let mut idle = Vec::new();
    for _ in 0..40 {
        idle.push(std::net::TcpStream::connect(agent.addr).unwrap());
    }
    // The agent has taken them all (and dropped the oldest): the token still gets in.
    let answer = agent.get("/v1/hello");
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.headers[HEADER_PROTOCOL],
        PROTOCOL.to_string().as_str()
    );
    drop(idle);
}

/// A body sent a byte at a time is cut off (408) instead of holding its connection.
#[test]
fn a_slow_body_is_timed_out() {
    // The agent's 10 s body deadline, 1 s here: the same deadline, not waited out in CI.
    let agent = start(|c| c.read_timeout = Duration::from_secs(1));
    let head = format!(
        "POST /v1/sessions HTTP/1.1\r\nhost: agent\r\nauthorization: Bearer {}\r\n\
         {HEADER_PROTOCOL}: {PROTOCOL}\r\nx-loadlab-nonce: {}\r\ncontent-length: 100\r\n\r\n{{",
        support::TOKEN,
        support::fresh_nonce(),
    );
    // `raw` sends the head and one byte of the body, then waits for the answer and the close.
    let began = std::time::Instant::now();
    let answer = agent.raw_with_wait(&head, Duration::from_secs(30));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains("did not arrive within 1 s"),
        "the deadline is named: {answer}"
    );
    assert!(began.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_port_out_of_range_is_refused_not_truncated() {
    let agent = start(|_| {});
    for port in ["99999999", "65536", "0"] {
        let answer = agent.get(&format!("/v1/host?port={port}"));
        assert_eq!(answer.status, 400, "{port}");
        assert_eq!(answer.error().field.as_deref(), Some("port"));
    }
    assert_eq!(agent.get("/v1/host?port=65535").status, 200);
}

/// Sending load is a role the agent must be started with (`--generator`): without it a
/// token holder cannot make the host send requests anywhere.
#[test]
fn an_agent_without_the_generator_role_sends_no_load() {
    use loadlab_agent::protocol::load::{StartLoad, WireLoad};
    let agent = start(|_| {});
    let spec = loadlab_engine::RunSpec {
        url: "http://127.0.0.1:9/".into(),
        requests: Some(10),
        ..loadlab_engine::RunSpec::default()
    };
    let shard = loadlab_engine::shard::Shard { index: 0, count: 1 };
    let start_load = StartLoad {
        load: WireLoad::from_spec(&spec, shard).unwrap(),
        start_at_ns: 0,
        agreed_start_ns: 0,
        client: "hostile".into(),
        run: None,
        lease_ms: None,
    };
    let answer = agent.post("/v1/loads", &start_load);
    assert_eq!(
        answer.status,
        403,
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
    assert!(answer.error().error.contains("--generator"));
    assert!(!agent.get("/v1/hello").json::<Hello>().generator);
}
