//! One request: admission (token, protocol, nonce), routing, the body read within its
//! bound, and the protocol's endpoints.
//!
//! It must not block the runtime: launches, stops and sampler joins run on blocking
//! threads. It never runs a command unless the agent was started with `--allow-exec`.

use crate::protocol::{
    ClockStamps, Closed, Hello, Lease, OpenSession, SampleBatch, StartSampling, Stopped,
    MAX_BODY_BYTES, MAX_WAIT_MS, PROTOCOL,
};
use crate::reply::{json, Refusal, Reply};
use crate::session::lock;
use crate::state::{Slot, State};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde::de::DeserializeOwned;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most samples one `/samples` answer holds; the client asks again for the rest.
const BATCH_SAMPLES: usize = 10_000;

pub(crate) async fn handle(
    state: Arc<State>,
    local: SocketAddr,
    req: Request<Incoming>,
    authenticated: Arc<AtomicBool>,
) -> Result<Reply, Infallible> {
    // t2 first: a clock exchange measures from here.
    let t2_ns = state.config.clock.now_ns();
    let reply = match answer(&state, local, req, t2_ns, &authenticated).await {
        Ok(reply) => reply,
        Err(refusal) => refusal.reply(),
    };
    Ok(reply)
}

async fn answer(
    state: &Arc<State>,
    local: SocketAddr,
    req: Request<Incoming>,
    t2_ns: i64,
    authenticated: &AtomicBool,
) -> Result<Reply, Refusal> {
    state.admit(req.method(), req.headers())?;
    // Past the token: this connection no longer counts against the unauthenticated bound.
    authenticated.store(true, Ordering::Relaxed);
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let method = req.method().clone();
    let allow = |methods: &[Method]| -> Result<(), Refusal> {
        if methods.contains(&method) {
            Ok(())
        } else {
            let names: Vec<&str> = methods.iter().map(Method::as_str).collect();
            Err(Refusal::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{path} answers {} only, not {method}", names.join(", ")),
            ))
        }
    };
    match segments.as_slice() {
        ["v1", "hello"] => {
            allow(&[Method::GET])?;
            Ok(json(StatusCode::OK, &hello(state)))
        }
        ["v1", "clock"] => {
            allow(&[Method::POST])?;
            let t3_ns = state.config.clock.now_ns();
            Ok(json(StatusCode::OK, &ClockStamps { t2_ns, t3_ns }))
        }
        ["v1", "host"] => {
            allow(&[Method::GET])?;
            let port = match query_number(&query, "port")? {
                None => None,
                Some(p) => Some(u16::try_from(p).ok().filter(|p| *p > 0).ok_or_else(|| {
                    Refusal::field("port", format!("port={p} is not a port (1 to 65535)"))
                })?),
            };
            let pid = match &*lock(&state.slot) {
                Slot::Open(s) => s.server_pid(),
                _ => None,
            };
            Ok(json(StatusCode::OK, &crate::host::info(port, pid)))
        }
        ["v1", "sessions"] => {
            allow(&[Method::POST])?;
            let open: OpenSession = read_json(state, req).await?;
            crate::open::open(state, local, open).await
        }
        ["v1", "loads"] => {
            allow(&[Method::POST])?;
            // Role and slot first: a refused load is refused before its body is read.
            let _receiving = crate::load::admit(state)?;
            let start: crate::protocol::load::StartLoad =
                read_json_up_to(state, req, crate::protocol::load::MAX_LOAD_BYTES).await?;
            crate::load::start(state, start, state.config.lease)
        }
        ["v1", "loads", id, "intervals"] => {
            allow(&[Method::GET])?;
            let run = crate::load::find(state, id)?;
            let after = query_number(&query, "after")?.unwrap_or(0);
            let wait_ms = query_number(&query, "wait_ms")?
                .unwrap_or(0)
                .min(MAX_WAIT_MS);
            let batch = crate::load::batch(run, after, Duration::from_millis(wait_ms)).await?;
            Ok(json(StatusCode::OK, &batch))
        }
        ["v1", "loads", id, "stop"] => {
            allow(&[Method::POST])?;
            let run = crate::load::find(state, id)?;
            run.renew();
            run.stop();
            Ok(json(
                StatusCode::OK,
                &serde_json::json!({ "stopped": true }),
            ))
        }
        ["v1", "loads", id] => {
            allow(&[Method::DELETE])?;
            let run = crate::load::find(state, id)?;
            let r = run.clone();
            blocking(move || r.close()).await?;
            let mut slot = lock(&state.load);
            if slot.as_ref().is_some_and(|l| l.id == run.id) {
                *slot = None;
            }
            Ok(json(StatusCode::OK, &serde_json::json!({ "closed": true })))
        }
        ["v1", "sessions", id] => {
            allow(&[Method::DELETE])?;
            close(state, id).await
        }
        ["v1", "sessions", id, "lease"] => {
            allow(&[Method::POST])?;
            let session = state.session(id)?;
            session.renew(Instant::now());
            Ok(json(StatusCode::OK, &lease(&session)))
        }
        ["v1", "sessions", id, "sampling"] => {
            allow(&[Method::POST])?;
            let session = state.session(id)?;
            session.renew(Instant::now());
            let start: StartSampling = read_json(state, req).await?;
            if start.every_ms == 0 || start.every_ms > 60_000 {
                return Err(Refusal::field(
                    "every_ms",
                    format!("every_ms {} must be between 1 and 60000", start.every_ms),
                ));
            }
            let s = session.clone();
            blocking(move || s.start_sampling(Duration::from_millis(start.every_ms), start.port))
                .await?;
            Ok(json(StatusCode::OK, &lease(&session)))
        }
        ["v1", "sessions", id, "sampling", "stop"] => {
            allow(&[Method::POST])?;
            let session = state.session(id)?;
            session.renew(Instant::now());
            let s = session.clone();
            let kernel = blocking(move || s.stop_sampling()).await?;
            let exit = lock(&session.ring).exit.clone();
            Ok(json(StatusCode::OK, &Stopped { kernel, exit }))
        }
        ["v1", "sessions", id, "samples"] => {
            allow(&[Method::GET])?;
            let session = state.session(id)?;
            let after = query_number(&query, "after")?.unwrap_or(0);
            let wait_ms = query_number(&query, "wait_ms")?
                .unwrap_or(0)
                .min(MAX_WAIT_MS);
            session.renew(Instant::now());
            let deadline = tokio::time::Instant::now() + Duration::from_millis(wait_ms);
            let batch = loop {
                let notified = session.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let ring = lock(&session.ring);
                    let samples = ring.after(after, BATCH_SAMPLES);
                    if !samples.is_empty() || !ring.sampling || ring.exit.is_some() {
                        break SampleBatch {
                            samples,
                            exit: ring.exit.clone(),
                            sampling: ring.sampling,
                        };
                    }
                }
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    let ring = lock(&session.ring);
                    break SampleBatch {
                        samples: ring.after(after, BATCH_SAMPLES),
                        exit: ring.exit.clone(),
                        sampling: ring.sampling,
                    };
                }
            };
            session.renew(Instant::now());
            Ok(json(StatusCode::OK, &batch))
        }
        ["v1", "path", "listen"] => {
            allow(&[Method::POST])?;
            crate::path::listen(local, read_json(state, req).await?).await
        }
        ["v1", "path", "check"] => {
            allow(&[Method::POST])?;
            crate::path::check(read_json(state, req).await?).await
        }
        _ => Err(Refusal::new(
            StatusCode::NOT_FOUND,
            format!(
                "no endpoint {path} in protocol {PROTOCOL}; see docs/agent-protocol.md for the \
                 endpoints"
            ),
        )),
    }
}

fn hello(state: &State) -> Hello {
    Hello {
        protocol: PROTOCOL,
        agent_version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: crate::host::hostname(),
        cpus: crate::host::cpus(),
        kernel: crate::host::kernel(),
        cgroup: crate::host::cgroup_version(),
        allow_exec: state.config.allow_exec,
        lease_ms: state.config.lease.as_millis() as u64,
        busy: state.busy().map(crate::protocol::Busy::without_id),
        default_server: state
            .config
            .default_server
            .as_ref()
            .map(crate::protocol::ServerRequest::describe),
        generator: state.config.generator,
        load_busy: lock(&state.load)
            .as_ref()
            .map(|l| l.busy.clone().without_id()),
        features: crate::protocol::FEATURES
            .iter()
            .map(|f| f.to_string())
            .collect(),
    }
}

fn lease(session: &crate::session::Session) -> Lease {
    Lease {
        lease_ms: session.lease.as_millis() as u64,
    }
}

async fn close(state: &Arc<State>, id: &str) -> Result<Reply, Refusal> {
    let session = {
        let mut slot = lock(&state.slot);
        let session = match &*slot {
            Slot::Open(s) if s.id == id => s.clone(),
            _ => {
                drop(slot);
                return Err(state.session(id).err().unwrap_or_else(|| {
                    Refusal::new(StatusCode::NOT_FOUND, format!("no session {id}"))
                }));
            }
        };
        *slot = Slot::Closing(session.busy.clone());
        session
    };
    // In a task of its own, which frees the slot: a client gone mid-stop (its request
    // dropped) must not leave the slot closing for ever.
    let guard = crate::open::FreeOnDrop(Some(state.clone()));
    let stopped = tokio::spawn(async move {
        let stopped = blocking(move || session.close()).await;
        drop(guard);
        stopped
    })
    .await
    .map_err(|e| Refusal::internal(format!("the agent failed inside: {e}")))??;
    Ok(json(StatusCode::OK, &Closed { stopped }))
}

/// Runs `f` on a blocking thread.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Refusal> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Refusal::internal(format!("the agent failed inside: {e}")))
}

/// A number in the query string (`?after=12`); absent is `None`, malformed a 400.
pub(crate) fn query_number(query: &str, name: &str) -> Result<Option<u64>, Refusal> {
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == name {
            return value.parse::<u64>().map(Some).map_err(|_| {
                Refusal::field(name, format!("{name}={value:?} is not a whole number"))
            });
        }
    }
    Ok(None)
}

/// The body as JSON: 413 beyond [`MAX_BODY_BYTES`] (by Content-Length up front, and by the
/// bytes actually read), 400 naming the field for malformed JSON or a wrong type.
async fn read_json<T: DeserializeOwned>(
    state: &State,
    req: Request<Incoming>,
) -> Result<T, Refusal> {
    read_json_up_to(state, req, MAX_BODY_BYTES).await
}

/// [`read_json`] with another bound (a load carries its request body). A body slower than
/// the config's `read_timeout` is refused (408) and its connection closed: a body sent a
/// byte a second would otherwise hold a connection for as long as it likes.
async fn read_json_up_to<T: DeserializeOwned>(
    state: &State,
    req: Request<Incoming>,
    max: usize,
) -> Result<T, Refusal> {
    let too_big = || {
        Refusal::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the request body is over {max} bytes, the most this agent reads"),
        )
    };
    let declared = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_big());
    }
    let body = http_body_util::Limited::new(req.into_body(), max);
    let wait = state.config.read_timeout;
    let Ok(collected) = tokio::time::timeout(wait, body.collect()).await else {
        return Err(Refusal::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s",
                wait.as_secs_f64()
            ),
        ));
    };
    let bytes = match collected {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => return Err(too_big()),
        Err(e) => {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                format!("cannot read the request body: {e}"),
            ))
        }
    };
    parse_json(&bytes)
}

/// A body's bytes as JSON: 400 naming the field for malformed JSON or a wrong type.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Refusal> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "body".to_string()
        } else {
            path
        };
        Refusal::field(
            field.clone(),
            format!("malformed request at {field}: {}", e.inner()),
        )
    })
}
