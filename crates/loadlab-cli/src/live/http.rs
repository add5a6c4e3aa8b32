//! The live page's HTTP side (hyper, HTTP/1.1): `GET /` the page, `GET /events` the
//! server-sent events, `POST /stop` the stop button; nothing else changes anything.
//!
//! Every request's Host must be the address the page was given (a DNS-rebinding page on
//! another site cannot read it); with a token (required off loopback) every request carries
//! it (`?token=` or `Authorization: Bearer`); a stop also needs this page's origin and its
//! per-run CSRF token. A slow browser only slows its own stream: events go to it through a
//! broadcast that skips ahead (a fresh snapshot) rather than wait. It must not block the run.

use super::hub::{Event, Hub};
use super::page;
use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use loadlab_agent::Token;
use loadlab_engine::RunControl;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{broadcast, mpsc};

pub type Body = BoxBody<Bytes, Infallible>;

/// What every connection shares.
pub struct Shared {
    pub hub: Mutex<Hub>,
    pub events: broadcast::Sender<Event>,
    pub csrf: Token,
    pub csrf_text: String,
    pub access: Option<Token>,
    /// The Host values accepted (the bound address, and `localhost:PORT` on loopback).
    pub hosts: Vec<String>,
    pub control: Mutex<Option<RunControl>>,
    /// A command of many runs: its own first Ctrl-C (ends the run going on, starts no other).
    pub command_stop: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Event streams open, for the end of the run to wait on (bounded) before leaving.
    pub open_streams: Arc<AtomicUsize>,
}

impl Shared {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Hub> {
        self.hub.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let host = match admitted(&shared.hosts, shared.access.as_ref(), &req) {
        Ok(host) => host,
        Err(refused) => return Ok(hardened(*refused)),
    };
    let response = match (req.method().as_str(), req.uri().path()) {
        ("GET", "/") => {
            let nonce = Token::generate_hex().unwrap_or_default();
            let html = page::render(&shared.lock(), &shared.csrf_text, &nonce);
            let mut r = Response::new(full(html));
            set(&mut r, "content-type", "text/html; charset=utf-8");
            set(&mut r, "content-security-policy", &page::policy(&nonce));
            r
        }
        ("GET", "/events") => events(&shared, &req),
        ("POST", "/stop") => stop(&shared, &req, &host),
        (_, "/" | "/events" | "/stop") => plain(StatusCode::METHOD_NOT_ALLOWED, "not allowed\n"),
        _ => plain(StatusCode::NOT_FOUND, "not found\n"),
    };
    Ok(hardened(response))
}

/// The request's Host when it is one the page answers to and the request carries the token
/// (when one is required); else the refusal to send.
pub(super) fn admitted(
    hosts: &[String],
    access: Option<&Token>,
    req: &Request<Incoming>,
) -> Result<String, Box<Response<Body>>> {
    let host = req
        .headers()
        .get(hyper::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
        return Err(Box::new(plain(
            StatusCode::MISDIRECTED_REQUEST,
            "this page answers to its own address only\n",
        )));
    }
    if let Some(token) = access {
        if !token.matches(presented_token(req).as_bytes()) {
            return Err(Box::new(plain(
                StatusCode::UNAUTHORIZED,
                "this page needs its token: add ?token=TOKEN (the --ui-token-file's) to the \
                 address\n",
            )));
        }
    }
    Ok(host)
}

/// `?token=` (an EventSource cannot set headers) or `Authorization: Bearer`.
fn presented_token(req: &Request<Incoming>) -> String {
    if let Some(bearer) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    {
        return bearer.trim().to_string();
    }
    req.uri()
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token"))
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn stop(shared: &Shared, req: &Request<Incoming>, host: &str) -> Response<Body> {
    let origin = req
        .headers()
        .get(hyper::header::ORIGIN)
        .and_then(|h| h.to_str().ok());
    if origin != Some(format!("http://{host}").as_str()) {
        return plain(
            StatusCode::FORBIDDEN,
            "a stop comes from this page only (its Origin)\n",
        );
    }
    let csrf = req
        .headers()
        .get("x-loadlab-csrf")
        .map(|h| h.as_bytes())
        .unwrap_or_default();
    if !shared.csrf.matches(csrf) {
        return plain(
            StatusCode::FORBIDDEN,
            "a stop needs this page's token (reload the page)\n",
        );
    }
    if let Some(stop) = shared
        .command_stop
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        super::stopped_from_page();
        stop();
        return plain(
            StatusCode::ACCEPTED,
            "stopping: the run going on ends and is kept, no other starts\n",
        );
    }
    match shared
        .control
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        // As a first Ctrl-C does: the run ends, what was measured is kept and written.
        Some(control) => {
            super::stopped_from_page();
            control.stop();
            plain(
                StatusCode::ACCEPTED,
                "stopping: the result is being written\n",
            )
        }
        None => plain(StatusCode::CONFLICT, "no run is going on\n"),
    }
}

/// The stream: first what the page missed (the events after its `Last-Event-ID`, or the
/// whole run as a snapshot), then each event as it is made.
fn events(shared: &Arc<Shared>, req: &Request<Incoming>) -> Response<Body> {
    let last_id = req
        .headers()
        .get("last-event-id")
        .and_then(|h| h.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    // Subscribed under the hub's lock, which the hub holds while it makes and sends an
    // event: nothing falls between the backlog and the live events.
    let (backlog, live, ended) = {
        let hub = shared.lock();
        let live = shared.events.subscribe();
        let backlog = last_id
            .and_then(|id| hub.since(id))
            .unwrap_or_else(|| vec![hub.snapshot()]);
        (backlog, live, hub.ended)
    };
    // A few events of room: a browser that reads slower than that is skipped ahead.
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let open = Arc::clone(&shared.open_streams);
    open.fetch_add(1, Ordering::AcqRel);
    let body = EventBody {
        rx,
        _open: OpenGuard(open),
    };
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let _ = tx.send(Bytes::from_static(b"retry: 1000\n\n")).await;
        for e in backlog {
            if tx.send(Bytes::from(e.text.to_string())).await.is_err() {
                return;
            }
        }
        if ended {
            return;
        }
        let mut live = live;
        loop {
            let event = match live.recv().await {
                Ok(e) => e,
                Err(broadcast::error::RecvError::Lagged(_)) => shared.lock().snapshot(),
                Err(broadcast::error::RecvError::Closed) => return,
            };
            let last = event.text.contains("\nevent: end\n");
            if tx.send(Bytes::from(event.text.to_string())).await.is_err() || last {
                return;
            }
        }
    });
    let mut r = Response::new(body.boxed());
    set(&mut r, "content-type", "text/event-stream");
    r
}

struct OpenGuard(Arc<AtomicUsize>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

struct EventBody {
    rx: mpsc::Receiver<Bytes>,
    _open: OpenGuard,
}

impl hyper::body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

pub(super) fn full(text: impl Into<Bytes>) -> Body {
    Full::new(text.into()).boxed()
}

pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = status;
    set(&mut r, "content-type", "text/plain; charset=utf-8");
    r
}

pub(super) fn set(r: &mut Response<Body>, name: &'static str, value: &str) {
    if let Ok(v) = hyper::header::HeaderValue::from_str(value) {
        r.headers_mut().insert(name, v);
    }
}

/// Headers every answer carries: nothing cached, framed, sniffed or referred.
pub(super) fn hardened(mut r: Response<Body>) -> Response<Body> {
    set(&mut r, "cache-control", "no-store");
    set(&mut r, "x-content-type-options", "nosniff");
    set(&mut r, "x-frame-options", "DENY");
    set(&mut r, "referrer-policy", "no-referrer");
    if !r.headers().contains_key("content-security-policy") {
        set(
            &mut r,
            "content-security-policy",
            "default-src 'none'; frame-ancestors 'none'",
        );
    }
    r
}
