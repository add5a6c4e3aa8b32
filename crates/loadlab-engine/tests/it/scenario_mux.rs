//! Scenarios over HTTP/2 (h2 over TLS, h2c) and HTTP/3, against in-process servers that
//! answer by route and count what they see: a capture from a JSON body used in the next
//! step's path, a cookie set by one step and sent by the next, a failing check and a reset
//! stream counted on their steps, and a page whose requests go as concurrent streams on the
//! user's one connection (the server holds each page request until all of the page's are
//! open at once on a connection, so a page sent one request after another is seen). Closed
//! loops end by request count and open loops by the end of their schedule (a stage at rate 0
//! follows, and the run ends when the last iteration does), so that every count is exact
//! and held against the server's own, whatever the machine's speed.

use bytes::{Buf, Bytes};
use loadlab_engine::result::scenario::{ScenarioSummary, StepSummary};
use loadlab_engine::scenario::Scenario;
use loadlab_engine::tls::TlsSpec;
use loadlab_engine::{RunResult, RunSpec};
use loadlab_testkit::{Seen, TestCa};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common;

/// What the server answers a request.
#[derive(Default)]
struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    /// Answer once this many streams are open at once on the request's connection (or after
    /// `TOGETHER_WAIT`, which only makes a failing test slow, never a passing one fail).
    together: Option<u64>,
    /// Reset the stream instead of answering.
    reset: bool,
}

const TOGETHER_WAIT: Duration = Duration::from_secs(3);

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// What the server saw, across its connections.
#[derive(Default)]
struct Counts {
    connections: AtomicU64,
    /// The most streams open at once on one connection.
    most_streams: AtomicU64,
    seen: Mutex<Vec<Seen>>,
}

impl Counts {
    fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }

    fn requests(&self) -> u64 {
        self.seen.lock().unwrap().len() as u64
    }

    fn requests_to(&self, prefix: &str) -> u64 {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|s| s.route().starts_with(prefix))
            .count() as u64
    }
}

/// One connection's streams, for `Reply::together`.
#[derive(Default)]
struct Streams {
    open: AtomicU64,
    most: AtomicU64,
    changed: tokio::sync::Notify,
}

impl Streams {
    fn opened(&self, counts: &Counts) {
        let open = self.open.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(open, Ordering::SeqCst);
        counts.most_streams.fetch_max(open, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    fn closed(&self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }

    /// Waits until `k` streams have been open at once (or `TOGETHER_WAIT` has passed).
    async fn together(&self, k: u64) {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                if self.most.load(Ordering::SeqCst) >= k {
                    return;
                }
                changed.await;
            }
        };
        let _ = tokio::time::timeout(TOGETHER_WAIT, wait).await;
    }
}

/// A request as the server read it; its `:authority` is listed among its headers.
fn seen(head: &http::request::Parts, body: Vec<u8>, connection: u64) -> Seen {
    let mut headers = vec![(
        ":authority".to_string(),
        head.uri
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default(),
    )];
    headers.extend(head.headers.iter().map(|(n, v)| {
        (
            n.as_str().to_string(),
            String::from_utf8_lossy(v.as_bytes()).into_owned(),
        )
    }));
    Seen {
        method: head.method.to_string(),
        path: head
            .uri
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        headers,
        body,
        connection,
    }
}

fn response(reply: &Reply) -> http::Response<()> {
    let mut r = http::Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        r = r.header(*name, value);
    }
    r.body(()).unwrap()
}

/// An HTTP/2 or HTTP/3 server on 127.0.0.1:0 on its own thread; it stops when dropped.
struct MuxServer {
    addr: SocketAddr,
    counts: Arc<Counts>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl MuxServer {
    /// h2c (prior knowledge), or h2 over TLS by ALPN with `ca`'s certificate.
    fn h2(handler: Arc<Handler>, ca: Option<&TestCa>) -> MuxServer {
        let tls = ca.map(|ca| {
            let mut config = (*ca.server_config()).clone();
            config.alpn_protocols = vec![b"h2".to_vec()];
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let stop = on_own_thread(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            while let Ok((tcp, _)) = listener.accept().await {
                let number = c.connections.fetch_add(1, Ordering::SeqCst);
                let (c, handler, tls) = (c.clone(), handler.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            if let Ok(io) = tls.accept(tcp).await {
                                serve_h2(io, handler, c, number).await;
                            }
                        }
                        None => serve_h2(tcp, handler, c, number).await,
                    }
                });
            }
        });
        MuxServer {
            addr,
            counts,
            _stop: stop,
        }
    }

    /// HTTP/3 over QUIC with `ca`'s certificate, ALPN h3.
    fn h3(handler: Arc<Handler>, ca: &TestCa) -> MuxServer {
        let mut tls = (*ca.server_config()).clone();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = socket.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let stop = on_own_thread(async move {
            let endpoint = quinn::Endpoint::new(
                quinn::EndpointConfig::default(),
                Some(config),
                socket,
                Arc::new(quinn::TokioRuntime),
            )
            .unwrap();
            while let Some(incoming) = endpoint.accept().await {
                tokio::spawn(serve_h3(incoming, handler.clone(), c.clone()));
            }
        });
        MuxServer {
            addr,
            counts,
            _stop: stop,
        }
    }

    fn url(&self, https: bool) -> String {
        let scheme = if https { "https" } else { "http" };
        format!("{scheme}://localhost:{}", self.addr.port())
    }
}

/// Runs `serve` on a thread of its own with its own runtime, until the sender is dropped.
fn on_own_thread(
    serve: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::sync::oneshot::Sender<()> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            tokio::select! {
                _ = stopped => {}
                _ = serve => {}
            }
        });
    });
    stop
}

async fn serve_h2<T>(io: T, handler: Arc<Handler>, counts: Arc<Counts>, number: u64)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    let streams = Arc::new(Streams::default());
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let (handler, counts, streams) = (handler.clone(), counts.clone(), streams.clone());
        tokio::spawn(async move {
            streams.opened(&counts);
            let (head, mut body) = request.into_parts();
            let mut bytes = Vec::new();
            while let Some(Ok(chunk)) = body.data().await {
                bytes.extend_from_slice(&chunk);
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            let seen = seen(&head, bytes, number);
            counts.seen.lock().unwrap().push(seen.clone());
            let reply = handler(&seen);
            if let Some(k) = reply.together {
                streams.together(k).await;
            }
            if reply.reset {
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
            } else if let Ok(mut send) = respond.send_response(response(&reply), false) {
                let _ = send.send_data(Bytes::from(reply.body), true);
            }
            streams.closed();
        });
    }
}

async fn serve_h3(incoming: quinn::Incoming, handler: Arc<Handler>, counts: Arc<Counts>) {
    let Ok(connection) = incoming.await else {
        return;
    };
    let number = counts.connections.fetch_add(1, Ordering::SeqCst);
    let Ok(mut h3) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(connection))
        .await
    else {
        return;
    };
    let streams = Arc::new(Streams::default());
    while let Ok(Some(resolver)) = h3.accept().await {
        let (handler, counts, streams) = (handler.clone(), counts.clone(), streams.clone());
        tokio::spawn(async move {
            let Ok((request, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            streams.opened(&counts);
            let mut bytes = Vec::new();
            while let Ok(Some(mut chunk)) = stream.recv_data().await {
                while chunk.has_remaining() {
                    let piece = chunk.chunk();
                    bytes.extend_from_slice(piece);
                    let n = piece.len();
                    chunk.advance(n);
                }
            }
            let (head, ()) = request.into_parts();
            let seen = seen(&head, bytes, number);
            counts.seen.lock().unwrap().push(seen.clone());
            let reply = handler(&seen);
            if let Some(k) = reply.together {
                streams.together(k).await;
            }
            if reply.reset {
                stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            } else if stream.send_response(response(&reply)).await.is_ok() {
                let _ = stream.send_data(Bytes::from(reply.body)).await;
                let _ = stream.finish().await;
            }
            streams.closed();
        });
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The requests of one iteration of `SCENARIO`: login, item, profile, broken, and a page of
/// `PAGE` assets.
const PAGE: u64 = 4;
const PER_ITERATION: u64 = 4 + PAGE;

/// A login that issues a numbered id in its JSON body and a session cookie for it; an item
/// page that answers only the id's own session (403 otherwise, counted in `refused`); a
/// profile; a route whose streams are reset; and assets answered once the page's four are
/// open at once (the first gzip-compressed).
fn app(refused: Arc<AtomicU64>) -> Arc<Handler> {
    let issued = AtomicU64::new(0);
    let css = "asset: body { color: black; } ".repeat(50);
    let compressed = gzip(css.as_bytes());
    Arc::new(move |req: &Seen| {
        let json = |status: u16, body: String| Reply {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: body.into_bytes(),
            ..Reply::default()
        };
        let route = req.route();
        if route == "/login" {
            let id = issued.fetch_add(1, Ordering::SeqCst);
            let mut reply = json(200, format!(r#"{{"id":{id},"user":"ann"}}"#));
            reply
                .headers
                .push(("set-cookie", format!("session=s-{id}; Path=/; HttpOnly")));
            reply
        } else if let Some(id) = route.strip_prefix("/items/") {
            let cookie = req.header("cookie").unwrap_or("");
            if !id.is_empty() && cookie == format!("session=s-{id}") {
                json(200, format!(r#"{{"id":{id}}}"#))
            } else {
                refused.fetch_add(1, Ordering::SeqCst);
                json(403, r#"{"error":"not your session"}"#.into())
            }
        } else if route == "/profile" {
            json(200, r#"{"user":"ann"}"#.into())
        } else if route == "/broken" {
            Reply {
                reset: true,
                ..Reply::default()
            }
        } else if route == "/asset0.css" {
            Reply {
                status: 200,
                headers: vec![("content-encoding", "gzip".into())],
                body: compressed.clone(),
                together: Some(PAGE),
                reset: false,
            }
        } else {
            Reply {
                status: 200,
                body: format!("<p>asset {route}</p>").into_bytes(),
                together: Some(PAGE),
                ..Reply::default()
            }
        }
    })
}

fn scenario(base: &str) -> Arc<Scenario> {
    let mut text = format!(
        r#"
name = "mux"
base_url = "{base}"

[[steps]]
name = "login"
method = "POST"
url = "/login"
body.json = {{ user = "ann" }}
[[steps.captures]]
var = "ID"
json = "$.id"

[[steps]]
name = "item"
url = "/items/{{{{ID}}}}"

[[steps]]
name = "profile"
url = "/profile"
[[steps.checks]]
json = "$.user"
equals = "bob"

[[steps]]
name = "broken"
url = "/broken"

[[steps]]
name = "home"
[[steps.checks]]
body_contains = "asset"
"#
    );
    for k in 0..PAGE {
        let ext = if k == 0 { "css" } else { "js" };
        text.push_str(&format!("[[steps.requests]]\nurl = \"/asset{k}.{ext}\"\n"));
    }
    Arc::new(Scenario::from_toml_str(&text, Path::new(".")).expect("valid scenario"))
}

fn steps(r: &RunResult) -> &ScenarioSummary {
    r.scenario.as_ref().expect("a scenario section")
}

fn step<'a>(r: &'a RunResult, name: &str) -> &'a StepSummary {
    steps(r)
        .steps
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

fn trusting(ca: &TestCa) -> TlsSpec {
    TlsSpec {
        ca_pem: Some(ca.pem().into_bytes()),
        ..TlsSpec::default()
    }
}

#[derive(Clone, Copy, Debug)]
enum Protocol {
    H2c,
    H2,
    H3,
}

/// A server of `app` for `protocol`, and the spec of a scenario run against it.
fn against(protocol: Protocol, ca: &TestCa, refused: Arc<AtomicU64>) -> (MuxServer, RunSpec) {
    let handler = app(refused);
    let server = match protocol {
        Protocol::H2c => MuxServer::h2(handler, None),
        Protocol::H2 => MuxServer::h2(handler, Some(ca)),
        Protocol::H3 => MuxServer::h3(handler, ca),
    };
    let https = !matches!(protocol, Protocol::H2c);
    let spec = RunSpec {
        scenario: Some(scenario(&server.url(https))),
        http2: !matches!(protocol, Protocol::H3),
        http3: matches!(protocol, Protocol::H3),
        tls: if https {
            trusting(ca)
        } else {
            TlsSpec::default()
        },
        threads: Some(1),
        timeout: Duration::from_secs(10),
        pm_qos: false,
        ..RunSpec::default()
    };
    (server, spec)
}

/// What every run of `SCENARIO` must show, whatever the protocol and the loop: each count
/// equal to the server's, the capture and the cookie carried (no 403), the failing check and
/// the reset counted on their own steps, the page's requests concurrent on one connection.
fn assert_counts(r: &RunResult, server: &MuxServer, refused: &AtomicU64, label: &str) {
    let c = &server.counts;
    let (login, item, profile, broken, home) = (
        step(r, "login"),
        step(r, "item"),
        step(r, "profile"),
        step(r, "broken"),
        step(r, "home"),
    );
    assert_eq!(
        refused.load(Ordering::SeqCst),
        0,
        "{label}: every item carried its id and cookie"
    );
    assert_eq!(
        (login.issued, login.completed),
        (c.requests_to("/login"), login.issued),
        "{label}"
    );
    assert_eq!(
        (item.issued, item.completed),
        (c.requests_to("/items/"), item.issued),
        "{label}"
    );
    // The server answered every profile; the check failed on each.
    assert_eq!(profile.issued, c.requests_to("/profile"), "{label}");
    assert_eq!(profile.failed, profile.issued, "{label}");
    assert_eq!(
        profile.errors.get("check_failed"),
        Some(&profile.issued),
        "{label}"
    );
    assert_eq!(profile.checks[0].failed, profile.issued, "{label}");
    assert_eq!(
        profile.checks[0].first_failure.as_deref(),
        Some(r#"$.user is ann, expected "bob""#),
        "{label}"
    );
    // Every stream the server reset is a stream_reset of its step.
    assert_eq!(broken.issued, c.requests_to("/broken"), "{label}");
    assert_eq!(
        broken.errors.get("stream_reset"),
        Some(&broken.issued),
        "{label}: {:?}",
        broken.errors
    );
    // The page: every request answered and its check passed (the gzip body decompressed:
    // its compressed bytes do not hold the word the check looks for).
    assert_eq!(home.request, format!("page of {PAGE} requests"));
    assert_eq!(
        (home.issued, home.completed, home.failed),
        (c.requests_to("/asset"), home.issued, 0),
        "{label}: {:?}",
        home.errors
    );
    assert_eq!(
        home.content_encodings.get("gzip"),
        Some(&c.requests_to("/asset0")),
        "{label}"
    );
    assert!(
        home.bytes.decoded > home.bytes.received,
        "{label}: {:?}",
        home.bytes
    );
    assert_eq!(
        home.request_latency_us.as_ref().map(|l| l.count),
        Some(home.issued),
        "{label}"
    );
    assert_eq!(
        home.latency_us.as_ref().map(|l| l.count),
        Some(home.issued / PAGE),
        "{label}"
    );
    // The run's own figures hold the same requests.
    let m = &r.measured;
    assert_eq!(m.requests.issued, c.requests(), "{label}");
    assert_eq!(
        m.requests.completed + m.requests.failed,
        c.requests(),
        "{label}: {:?}",
        m.requests
    );
    assert_eq!(
        m.requests.completed,
        login.completed + item.completed + home.completed,
        "{label}"
    );
    let mut errors = m.errors.clone();
    errors.retain(|_, n| *n > 0);
    assert_eq!(errors.len(), 2, "{label}: {errors:?} {:?}", m.error_details);
    assert_eq!(m.connections_opened, c.connections(), "{label}");
    // A page's requests went at once, as streams of one connection.
    assert_eq!(c.most_streams.load(Ordering::SeqCst), PAGE, "{label}");
    // The requests carried :authority, not the headers HTTP/1.1 alone has.
    let seen = c.seen.lock().unwrap();
    let login_seen = seen
        .iter()
        .find(|s| s.route() == "/login")
        .expect("a login");
    let authority = format!("localhost:{}", server.addr.port());
    assert_eq!(
        login_seen.header(":authority"),
        Some(authority.as_str()),
        "{label}"
    );
    assert_eq!(login_seen.header("host"), None, "{label}");
    assert_eq!(
        login_seen.header("content-type"),
        Some("application/json"),
        "{label}"
    );
    assert_eq!(login_seen.body, br#"{"user":"ann"}"#, "{label}");
}

/// A closed loop: 2 users, 3 iterations' worth of requests, each user on one connection.
fn closed_loop(protocol: Protocol) {
    let ca = TestCa::new();
    let refused = Arc::new(AtomicU64::new(0));
    let (server, spec) = against(protocol, &ca, refused.clone());
    let requests = 3 * PER_ITERATION;
    let r = common::run_within(
        RunSpec {
            connections: Some(2),
            requests: Some(requests),
            ..spec
        },
        Duration::from_secs(60),
    );
    let label = format!("{protocol:?} closed loop");
    assert_counts(&r, &server, &refused, &label);
    assert_eq!(server.counts.requests(), requests, "{label}");
    assert_eq!(
        server.counts.connections(),
        2,
        "{label}: a connection per user"
    );
    assert_eq!(steps(&r).virtual_users, Some(2), "{label}");
}

/// An open loop: 8 iterations in the first second, then none; the run ends with the last
/// iteration, every one of them whole.
fn open_loop(protocol: Protocol) {
    let ca = TestCa::new();
    let refused = Arc::new(AtomicU64::new(0));
    let (server, spec) = against(protocol, &ca, refused.clone());
    let r = common::run_within(
        RunSpec {
            stages: Some("1s:8, 60s:0".into()),
            max_connections: Some(8),
            warmup: Duration::ZERO,
            ..spec
        },
        Duration::from_secs(60),
    );
    let label = format!("{protocol:?} open loop");
    assert_counts(&r, &server, &refused, &label);
    assert_eq!(r.measured.requests.not_sent, 0, "{label}");
    assert_eq!(step(&r, "login").issued, 8, "{label}");
    assert_eq!(server.counts.requests(), 8 * PER_ITERATION, "{label}");
    assert_eq!(steps(&r).iterations, 8, "{label}");
    // Iterations are new users on the thread's kept connections: at most one each.
    assert!(server.counts.connections() <= 8, "{label}");
}

#[test]
fn a_scenario_over_h2_with_tls_in_a_closed_loop() {
    closed_loop(Protocol::H2);
}

#[test]
fn a_scenario_over_h2c_in_an_open_loop() {
    open_loop(Protocol::H2c);
}

#[test]
fn a_scenario_over_http3_in_a_closed_loop() {
    closed_loop(Protocol::H3);
}

#[test]
fn a_scenario_over_http3_in_an_open_loop() {
    open_loop(Protocol::H3);
}

/// `--new-connection-share 1`: every request ends its connection once its step is over (a
/// page's streams share one), so each step of each iteration opens one.
#[test]
fn every_step_on_a_new_connection_over_h2_and_http3() {
    for protocol in [Protocol::H2c, Protocol::H3] {
        let ca = TestCa::new();
        let refused = Arc::new(AtomicU64::new(0));
        let (server, spec) = against(protocol, &ca, refused.clone());
        let r = common::run_within(
            RunSpec {
                connections: Some(1),
                requests: Some(2 * PER_ITERATION),
                new_connection_share: Some(1.0),
                ..spec
            },
            Duration::from_secs(60),
        );
        let label = format!("{protocol:?}, a new connection per step");
        assert_counts(&r, &server, &refused, &label);
        // Five steps an iteration: four requests and a page.
        assert_eq!(server.counts.connections(), 2 * 5, "{label}");
    }
}
