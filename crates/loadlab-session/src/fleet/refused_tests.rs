//! A generator whose replies never end (issue 51, bad case 8: the coordinator buffered the
//! whole body and aborted at 3.6 GB). A fake agent on 127.0.0.1:0 speaks TLS and answers
//! hello, host, clock and a load's start as the protocol says, but one reply is an endless
//! body. The coordinator reads no more of a reply than that endpoint's bound, names the
//! generator and the bound, and (for a load's intervals) goes on with the other generators.
//! How much the fake could write before the coordinator hung up is what the coordinator
//! held at most: the bound plus the sockets' buffers.

use super::run_tests::{generator, token_file};
use super::{Fleet, Generator};
use crate::AgentEndpoint;
use loadlab_agent::protocol::{HEADER_PROTOCOL, PROTOCOL};
use loadlab_certs::rustls;
use loadlab_engine::{RunControl, RunSpec};
use loadlab_testkit::{response, Behavior, ScratchDir, TestServer};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The reply that never ends.
#[derive(Clone, Copy, PartialEq)]
enum Endless {
    Hello,
    Intervals,
}

/// An endless body stops here whatever the client does: a client that reads on (no bound)
/// then fails the test on what it says, instead of holding the test for ever.
const GIVE_UP_BYTES: u64 = 256 << 20;

/// The fake's host name, with a terminal's screen clear and a forged line in it.
const HOSTNAME: &str = "fake\u{1b}[2J\r\nFAKE: all requests succeeded";

/// What the coordinator may hold beyond a reply's bound: what the loopback sockets' buffers
/// and TLS records in flight hold when it hangs up.
const SLACK_BYTES: u64 = 16 << 20;

/// The fake agent, stopped when dropped.
struct FakeAgent {
    addr: std::net::SocketAddr,
    fingerprint: String,
    /// Bytes of the endless bodies written (and so taken by the client's socket).
    written: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl FakeAgent {
    fn start(endless: Endless) -> FakeAgent {
        let ca = loadlab_certs::Authority::new("fake-agent").unwrap();
        let issued = ca.issue_loopback(&[]).unwrap();
        let fingerprint = loadlab_agent::protocol::fingerprint(issued.cert_der.as_ref());
        let tls = loadlab_certs::server_config_for(&issued, &[b"http/1.1"]).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let written = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (w, s) = (written.clone(), stop.clone());
        let epoch = Instant::now();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (tls, w) = (tls.clone(), w.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, tls, endless, &w, epoch);
                });
            }
        });
        FakeAgent {
            addr,
            fingerprint,
            written,
            stop,
        }
    }

    fn generator(&self, dir: &ScratchDir) -> Generator {
        Generator {
            name: "fake".into(),
            endpoint: AgentEndpoint {
                url: format!("https://{}", self.addr),
                token_file: token_file(dir, "fake"),
                fingerprint: Some(self.fingerprint.clone()),
                cacert: None,
            },
        }
    }
}

impl Drop for FakeAgent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop, which then sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// One connection: requests read one after another, each answered as an agent would, but
/// the endless one.
fn serve(
    stream: TcpStream,
    tls: Arc<rustls::ServerConfig>,
    endless: Endless,
    written: &AtomicU64,
    epoch: Instant,
) -> std::io::Result<()> {
    let conn = rustls::ServerConnection::new(tls).map_err(std::io::Error::other)?;
    let mut tls = BufReader::new(rustls::StreamOwned::new(conn, stream));
    loop {
        let mut head = Vec::new();
        loop {
            let mut line = String::new();
            if tls.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" {
                break;
            }
            head.push(line);
        }
        let mut first = head[0].split(' ');
        let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
        let length = head
            .iter()
            .find_map(|h| {
                let (name, value) = h.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        tls.read_exact(&mut body)?;
        let out = tls.get_mut();
        let route = path.split('?').next().unwrap_or("");
        let is_endless = match endless {
            Endless::Hello => route == "/v1/hello",
            Endless::Intervals => route.ends_with("/intervals"),
        };
        if is_endless {
            write!(
                out,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{HEADER_PROTOCOL}: \
                 {PROTOCOL}\r\ntransfer-encoding: chunked\r\n\r\n"
            )?;
            // JSON's own whitespace, 1 MiB a chunk, until the client hangs up.
            let chunk = vec![b' '; 1 << 20];
            while written.load(Ordering::Relaxed) < GIVE_UP_BYTES {
                write!(out, "{:x}\r\n", chunk.len())?;
                out.write_all(&chunk)?;
                out.write_all(b"\r\n")?;
                written.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
            return Ok(());
        }
        let now = || epoch.elapsed().as_nanos() as i64;
        let (status, json) = match (method, route) {
            ("GET", "/v1/hello") => (
                "200 OK",
                serde_json::json!({
                    "protocol": PROTOCOL, "agent_version": "fake", "hostname": HOSTNAME,
                    "cpus": 1, "kernel": "fake", "cgroup": null, "allow_exec": false,
                    "lease_ms": 10_000, "busy": null, "default_server": null,
                    "generator": true, "load_busy": null,
                }),
            ),
            ("GET", "/v1/host") => (
                "200 OK",
                serde_json::json!({
                    "hostname": "fake", "cpus": 1, "memory_bytes": null, "somaxconn": null,
                    "tcp_max_syn_backlog": null, "syncookies": null, "nofile_soft": null,
                    "nofile_hard": null, "port_range": null, "listen_backlog": null,
                }),
            ),
            ("POST", "/v1/clock") => {
                let t2 = now();
                ("200 OK", serde_json::json!({ "t2_ns": t2, "t3_ns": now() }))
            }
            ("POST", "/v1/loads") => (
                "201 Created",
                serde_json::json!({ "load": "fake-load", "lease_ms": 10_000 }),
            ),
            _ => ("200 OK", serde_json::json!({ "closed": true })),
        };
        let json = json.to_string();
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{HEADER_PROTOCOL}: \
             {PROTOCOL}\r\ncontent-length: {}\r\n\r\n{json}",
            json.len()
        )?;
        out.flush()?;
    }
}

/// A load's intervals that never end: the generator is given up at once with the bound
/// named, the coordinator held at most that bound, and the real generator's shard is the
/// run's result, marked partial.
#[test]
fn an_endless_batch_of_intervals_fails_that_generator_and_the_run_goes_on() {
    let dir = ScratchDir::new("fleet-endless-intervals");
    let server = TestServer::start(Behavior::Fixed(response(200, "ok")));
    let (real, g_real) = generator(&dir, "gen0");
    let fake = FakeAgent::start(Endless::Intervals);
    let fleet = Fleet::of(vec![g_real, fake.generator(&dir)]);
    let spec = RunSpec {
        url: server.url("/"),
        connections: Some(2),
        requests: Some(100),
        interval: Duration::from_millis(100),
        ..RunSpec::default()
    };
    let started = Instant::now();
    let result = fleet.run(&spec, &RunControl::new()).unwrap();
    let took = started.elapsed();
    let written = fake.written.load(Ordering::Relaxed);
    let said = result.warnings.join("\n");
    assert!(
        said.contains("generator fake") && said.contains(&fake.addr.to_string()),
        "{said}"
    );
    assert!(said.contains("longer than 64 MiB"), "{said}");
    assert!(said.contains("/intervals"), "{said}");
    assert!(result.partial().is_some(), "{said}");
    assert!(
        written <= (64 << 20) + SLACK_BYTES,
        "the coordinator took {written} bytes of one reply"
    );
    assert_eq!(
        result.measured.requests.completed + result.warmup.map_or(0, |w| w.requests.completed),
        server.counters().requests()
    );
    eprintln!(
        "an endless reply cut after {:.1} MiB; the run took {:.1} s",
        written as f64 / 1_048_576.0,
        took.as_secs_f64()
    );
    drop(real);
}

/// An endless hello: the fleet's check fails naming the generator, the endpoint and the
/// bound of an ordinary reply.
#[test]
fn an_endless_hello_is_refused_at_its_bound() {
    let dir = ScratchDir::new("fleet-endless-hello");
    let fake = FakeAgent::start(Endless::Hello);
    let fleet = Fleet::of(vec![fake.generator(&dir)]);
    let err = fleet.check(1, None).unwrap_err().to_string();
    assert!(err.starts_with("generator fake"), "{err}");
    assert!(err.contains(&fake.addr.to_string()), "{err}");
    assert!(
        err.contains("GET /v1/hello") && err.contains("longer than 4 MiB"),
        "{err}"
    );
    let written = fake.written.load(Ordering::Relaxed);
    assert!(
        written <= (4 << 20) + SLACK_BYTES,
        "the coordinator took {written} bytes of one reply"
    );
}

/// What an agent says of itself reaches the fleet's notes escaped, as every peer's text is.
#[test]
fn a_generators_words_come_back_escaped() {
    let dir = ScratchDir::new("fleet-escaped-hello");
    let fake = FakeAgent::start(Endless::Intervals);
    let fleet = Fleet::of(vec![fake.generator(&dir)]);
    let check = fleet.check(1, None).unwrap();
    let note = &check.notes[0];
    assert!(
        note.contains("fake\\u{1b}[2J\\r\\nFAKE: all requests succeeded"),
        "{note}"
    );
    assert!(!note.contains('\u{1b}') && !note.contains('\n'), "{note}");
}

/// A generator whose hello names no `websocket` feature (an older agent, which would read a
/// WebSocket load without its `--ws-*` settings and run it as echo) is refused a WebSocket
/// load before any shard starts, naming it, its version and host (escaped) and the fix.
#[test]
fn an_older_generator_is_refused_a_websocket_load() {
    let dir = ScratchDir::new("fleet-old-ws");
    let fake = FakeAgent::start(Endless::Intervals);
    let fleet = Fleet::of(vec![fake.generator(&dir)]);
    let spec = RunSpec {
        url: "ws://127.0.0.1:9/live".into(),
        connections: Some(2),
        duration: Some(Duration::from_secs(1)),
        ws: loadlab_engine::ws::WsSpec {
            mode: loadlab_engine::ws::WsMode::Hold,
            ..Default::default()
        },
        ..RunSpec::default()
    };
    let err = fleet
        .run(&spec, &RunControl::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("generator fake"), "{err}");
    assert!(err.contains(&fake.addr.to_string()), "{err}");
    assert!(
        err.contains("loadlab agent fake on fake\\u{1b}[2J\\r\\nFAKE")
            && err.contains("too old for a WebSocket load")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}') && !err.contains('\n'), "{err}");
}

#[test]
fn an_older_generator_is_refused_a_pipelined_load() {
    let dir = ScratchDir::new("fleet-old-pipeline");
    let fake = FakeAgent::start(Endless::Intervals);
    let fleet = Fleet::of(vec![fake.generator(&dir)]);
    let spec = RunSpec {
        url: "http://127.0.0.1:9/".into(),
        connections: Some(2),
        duration: Some(Duration::from_secs(1)),
        pipeline: 16,
        ..RunSpec::default()
    };
    let err = fleet
        .run(&spec, &RunControl::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("generator fake"), "{err}");
    assert!(
        err.contains("too old for a pipelined load (it would send one request at a time)")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
}

/// A generator whose hello names no `grpc` feature (an older agent, which would read a gRPC
/// load without its call and send plain HTTP requests) is refused one before any shard starts.
#[test]
fn an_older_generator_is_refused_a_grpc_load() {
    let dir = ScratchDir::new("fleet-old-grpc");
    let proto = dir.join("s.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage t;\nmessage M {}\nservice S { rpc Go(M) returns (M); }\n",
    )
    .unwrap();
    let call = loadlab_engine::grpc::GrpcSpec {
        method: "t.S/Go".into(),
        protos: vec![proto],
        includes: Vec::new(),
        reflect: None,
        data: loadlab_engine::grpc::Data::Json("{}".into()),
        deadline: None,
        gzip: false,
        max_message_bytes: 1024,
        messages: None,
        message_rate: None,
    }
    .prepare()
    .unwrap();
    let fake = FakeAgent::start(Endless::Intervals);
    let fleet = Fleet::of(vec![fake.generator(&dir)]);
    let spec = RunSpec {
        url: "http://127.0.0.1:9".into(),
        connections: Some(2),
        duration: Some(Duration::from_secs(1)),
        grpc: Some(Arc::new(call)),
        ..RunSpec::default()
    };
    let err = fleet
        .run(&spec, &RunControl::new())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("generator fake"), "{err}");
    assert!(
        err.contains("loadlab agent fake on fake\\u{1b}[2J\\r\\nFAKE")
            && err.contains("too old for a gRPC load (it would send plain HTTP requests")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
}

/// A generator whose agent reads WebSocket loads but not `--ws-held` (its hello names
/// `websocket` and no `ws-held`) would run the echo load alone, holding nothing: it is
/// refused such a load, naming its version and the fix; a load without `--ws-held` still goes.
#[test]
fn a_generator_without_ws_held_is_refused_a_load_that_holds() {
    let dir = ScratchDir::new("fleet-old-ws-held");
    let generator = FakeAgent::start(Endless::Intervals).generator(&dir);
    let hello: loadlab_agent::protocol::Hello = serde_json::from_value(serde_json::json!({
        "protocol": PROTOCOL, "agent_version": "0.9.1", "hostname": "gen1",
        "cpus": 1, "kernel": "fake", "cgroup": null, "allow_exec": false,
        "lease_ms": 10_000, "busy": null, "default_server": null,
        "generator": true, "load_busy": null, "features": ["websocket"],
    }))
    .unwrap();
    let spec = RunSpec {
        url: "ws://127.0.0.1:9/echo".into(),
        connections: Some(2),
        duration: Some(Duration::from_secs(1)),
        ws: loadlab_engine::ws::WsSpec {
            held: Some(100),
            ..Default::default()
        },
        ..RunSpec::default()
    };
    let err = generator.can_send(&hello, &spec).unwrap_err().to_string();
    assert!(
        err.contains("runs loadlab agent 0.9.1 on gen1, too old for --ws-held")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
    let echo_only = RunSpec {
        ws: loadlab_engine::ws::WsSpec::default(),
        ..spec
    };
    assert!(generator.can_send(&hello, &echo_only).is_ok());
}

/// A generator whose agent holds connections but knows no `--ws-connect-rate` (its hello
/// names `ws-held`, not `ws-connect-rate`) would open them all at once, not the ramp asked:
/// it is refused such a load, naming its version and the fix.
#[test]
fn a_generator_without_ws_connect_rate_is_refused_a_paced_load() {
    let dir = ScratchDir::new("fleet-old-ws-connect-rate");
    let generator = FakeAgent::start(Endless::Intervals).generator(&dir);
    let hello: loadlab_agent::protocol::Hello = serde_json::from_value(serde_json::json!({
        "protocol": PROTOCOL, "agent_version": "0.9.2", "hostname": "gen1",
        "cpus": 1, "kernel": "fake", "cgroup": null, "allow_exec": false,
        "lease_ms": 10_000, "busy": null, "default_server": null,
        "generator": true, "load_busy": null, "features": ["websocket", "ws-held"],
    }))
    .unwrap();
    let spec = RunSpec {
        url: "ws://127.0.0.1:9/".into(),
        connections: Some(100),
        duration: Some(Duration::from_secs(1)),
        ws: loadlab_engine::ws::WsSpec {
            mode: loadlab_engine::ws::WsMode::Hold,
            connect_rate: Some(50.0),
            ..Default::default()
        },
        ..RunSpec::default()
    };
    let err = generator.can_send(&hello, &spec).unwrap_err().to_string();
    assert!(
        err.contains("runs loadlab agent 0.9.2 on gen1, too old for --ws-connect-rate")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
    let at_once = RunSpec {
        ws: loadlab_engine::ws::WsSpec {
            connect_rate: None,
            ..spec.ws.clone()
        },
        ..spec
    };
    assert!(generator.can_send(&hello, &at_once).is_ok());
}

/// A generator whose agent reads WebSocket loads but knows no WebSockets over HTTP/2 (its
/// hello names `websocket`, not `ws-h2`) would refuse a `--http2` WebSocket load at its start
/// ("a WebSocket runs over HTTP/1.1"): it is refused up front, naming its version and the fix;
/// the same load over HTTP/1.1 still goes.
#[test]
fn a_generator_without_ws_h2_is_refused_a_websocket_load_over_http2() {
    let dir = ScratchDir::new("fleet-old-ws-h2");
    let generator = FakeAgent::start(Endless::Intervals).generator(&dir);
    let hello: loadlab_agent::protocol::Hello = serde_json::from_value(serde_json::json!({
        "protocol": PROTOCOL, "agent_version": "0.9.3", "hostname": "gen1",
        "cpus": 1, "kernel": "fake", "cgroup": null, "allow_exec": false,
        "lease_ms": 10_000, "busy": null, "default_server": null,
        "generator": true, "load_busy": null,
        "features": ["websocket", "ws-held", "ws-connect-rate"],
    }))
    .unwrap();
    let spec = RunSpec {
        url: "ws://127.0.0.1:9/echo".into(),
        connections: Some(2),
        duration: Some(Duration::from_secs(1)),
        http2: true,
        ..RunSpec::default()
    };
    let err = generator.can_send(&hello, &spec).unwrap_err().to_string();
    assert!(
        err.contains("runs loadlab agent 0.9.3 on gen1, too old for a WebSocket load over --http2")
            && err.contains("run the same loadlab version"),
        "{err}"
    );
    let over_h1 = RunSpec {
        http2: false,
        ..spec
    };
    assert!(generator.can_send(&hello, &over_h1).is_ok());
    let http = RunSpec {
        url: "http://127.0.0.1:9/".into(),
        http2: true,
        ..over_h1
    };
    assert!(generator.can_send(&hello, &http).is_ok());
    // A scenario's WebSocket steps over --http2 alike.
    let text = "name = \"c\"\nbase_url = \"http://127.0.0.1:9\"\n[[steps]]\nname = \"a\"\n\
                ws = \"/\"\nmessages = [\"x\"]";
    let scenario = loadlab_engine::scenario::Scenario::from_toml_str(text, dir.path()).unwrap();
    let steps = RunSpec {
        scenario: Some(std::sync::Arc::new(scenario)),
        ..http
    };
    let err = generator.can_send(&hello, &steps).unwrap_err().to_string();
    assert!(
        err.contains("too old for a WebSocket load over --http2"),
        "{err}"
    );
}
