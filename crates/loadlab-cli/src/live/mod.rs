//! `--ui[=ADDR]`: the run seen as it happens, in a browser (docs/live.md). A small HTTP
//! server on a thread of its own serves one page and a server-sent-events stream of the
//! run's intervals as they finish; the page draws them with the offline report's own chart
//! code and data (`loadlab_report::html`), and its stop button ends the run as Ctrl-C does.
//!
//! Layout: [`hub`] keeps the run (bounded) and makes the events; `http` answers requests
//! (host, token, origin and CSRF checks); `page` writes the document; `live.js` follows the
//! stream; `store` is `loadlab ui`, the results store read-only in a browser; `follow` is
//! how `capacity`, `sweep` and `experiment` feed their page (`hub::command`, `command.js`).
//! The run only ever sends to the page's thread through an unbounded channel: it never
//! waits for a browser. This module must not change the run otherwise.

pub mod follow;
mod http;
pub mod hub;
mod page;
pub mod store;

use anyhow::Context as _;
use hub::{Hub, LiveSink, Update};
use hyper_util::rt::{TokioIo, TokioTimer};
use loadlab_agent::Token;
use loadlab_engine::RunControl;
use loadlab_result::RunResult;
use loadlab_session::Session;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, mpsc, oneshot};

/// How long the end of a run waits for attached pages to get its last event.
const DRAIN: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, clap::Args)]
pub struct LiveArgs {
    /// Show the run live in a browser while it goes: requests/s, latency percentiles, errors,
    /// the server's CPU and memory, and a stop button (docs/live.md); for capacity, sweep and
    /// experiment, the whole command: each probe or run as it ends and the answer so far,
    /// the stop ending the command as Ctrl-C does. ADDR defaults to
    /// 127.0.0.1 and a free port; the page's address is printed. Give ADDR with `=`
    /// (--ui=127.0.0.1:8089). Off loopback, --ui-token-file is required.
    #[arg(
        long,
        value_name = "ADDR",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "127.0.0.1:0",
        help_heading = "Live page"
    )]
    pub ui: Option<String>,

    /// The live page's token, read from this file (mode 0600, as the agent's token files):
    /// every request must carry it (?token=TOKEN). Required when --ui is not on loopback.
    #[arg(long, value_name = "FILE", requires = "ui", help_heading = "Live page")]
    pub ui_token_file: Option<PathBuf>,
}

/// The live page of a process's run; ends (its last event delivered, bounded) when dropped.
pub struct LiveUi {
    shared: Arc<http::Shared>,
    updates: mpsc::UnboundedSender<Update>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// This run's entry among the live runs `loadlab ui` lists; removed as the page ends.
    _registered: Option<store::registry::Registration>,
}

/// The page the run being prepared in this process reports to, if any.
static ACTIVE: Mutex<Option<(mpsc::UnboundedSender<Update>, Arc<http::Shared>)>> = Mutex::new(None);

/// Starts the page when `--ui` was given: binds at once (a taken port fails in a second) and
/// prints the address on stderr. A command that keeps its runs in the results store `store`
/// names it in its entry among the live runs, so `loadlab ui` of that store lists it as its own.
pub fn start(args: &LiveArgs, store: Option<&Path>) -> anyhow::Result<Option<LiveUi>> {
    let Some(addr) = &args.ui else {
        return Ok(None);
    };
    let bound = bind(addr, args.ui_token_file.as_deref())?;
    let (listener, local) = (bound.listener, bound.local);
    let csrf_text = Token::generate_hex().map_err(anyhow::Error::msg)?;
    let shared = Arc::new(http::Shared {
        hub: Mutex::new(Hub::default()),
        events: broadcast::channel(64).0,
        csrf: Token::new(&csrf_text),
        csrf_text,
        access: bound.access,
        hosts: bound.hosts,
        control: Mutex::new(None),
        command_stop: Mutex::new(None),
        open_streams: Arc::new(AtomicUsize::new(0)),
    });
    let (updates, rx) = mpsc::unbounded_channel();
    let (shutdown, stop_rx) = oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the live page's runtime")?;
    let served = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("loadlab-ui".into())
        .spawn(move || runtime.block_on(serve(served, listener, rx, stop_rx)))
        .context("cannot start the live page's thread")?;
    let token_hint = if shared.access.is_some() {
        "?token=TOKEN (the --ui-token-file's)"
    } else {
        ""
    };
    eprintln!("live page: http://{local}/{token_hint}");
    *ACTIVE.lock().unwrap_or_else(|p| p.into_inner()) = Some((updates.clone(), shared.clone()));
    Ok(Some(LiveUi {
        shared,
        updates,
        shutdown: Some(shutdown),
        thread: Some(thread),
        _registered: store::registry::register(local, args.ui_token_file.as_deref(), store),
    }))
}

/// A page's listening socket, bound at once (a taken port fails in a second), with who may
/// ask: the Host values it answers to, and the token every request needs (required off
/// loopback).
pub struct Bound {
    pub listener: std::net::TcpListener,
    pub local: SocketAddr,
    pub hosts: Vec<String>,
    pub access: Option<Token>,
}

pub fn bind(addr: &str, token_file: Option<&Path>) -> anyhow::Result<Bound> {
    let addr: SocketAddr = addr.parse().map_err(|e| {
        anyhow::anyhow!(
            "--ui={addr}: {e}; give an address and port, such as --ui=127.0.0.1:8089 (port \
             0: a free one)"
        )
    })?;
    let loopback = addr.ip().is_loopback();
    let access = match token_file {
        Some(path) => Some(Token::new(&read_token(path)?)),
        None if loopback => None,
        None => anyhow::bail!(
            "--ui={addr} is not a loopback address: anyone who can reach it could see the \
             runs (and stop one); give --ui-token-file FILE (a token made with `openssl rand \
             -hex 32`, mode 0600), or leave ADDR out for 127.0.0.1"
        ),
    };
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--ui={addr}: cannot listen there"))?;
    listener.set_nonblocking(true)?;
    let local = listener.local_addr()?;
    let mut hosts = vec![local.to_string()];
    if loopback {
        hosts.push(format!("localhost:{}", local.port()));
    }
    Ok(Bound {
        listener,
        local,
        hosts,
        access,
    })
}

/// Called as a run starts (after its timeline's sink is set): the page follows it, with the
/// server's figures laid on each interval as the spill file has them, and may stop it.
pub fn attach(control: &RunControl, session: &Session) {
    let active = ACTIVE.lock().unwrap_or_else(|p| p.into_inner());
    let Some((updates, shared)) = active.as_ref() else {
        return;
    };
    *shared.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(control.clone());
    let sink = Box::new(LiveSink(vec![updates.clone()]));
    control.observe_intervals(session.with_server_samples(sink, control));
}

/// The run's result, once made: the page's last event (errors by class, interrupted).
pub fn result(result: &RunResult) {
    if let Some((updates, _)) = ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        let _ = updates.send(Update::Result(Some(Box::new(result.clone()))));
    }
}

fn stopped_from_page() {
    eprintln!("stopped from the live page: writing the result");
}

impl Drop for LiveUi {
    fn drop(&mut self) {
        ACTIVE.lock().unwrap_or_else(|p| p.into_inner()).take();
        // No result sent (the run failed to start or end): the stream ends all the same.
        let _ = self.updates.send(Update::Result(None));
        let deadline = Instant::now() + DRAIN;
        while Instant::now() < deadline {
            let ended = self.shared.lock().ended;
            if ended && self.shared.open_streams.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The page's thread: takes the run's updates into the hub (each event broadcast under the
/// hub's lock) and serves connections, until shut down.
async fn serve(
    shared: Arc<http::Shared>,
    listener: std::net::TcpListener,
    mut updates: mpsc::UnboundedReceiver<Update>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    loop {
        tokio::select! {
            Some(update) = updates.recv() => {
                let mut hub = shared.lock();
                if let Some(event) = hub.apply(update) {
                    let _ = shared.events.send(event);
                }
            }
            Ok((tcp, _)) = listener.accept() => {
                let shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        http::handle(Arc::clone(&shared), req)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(Duration::from_secs(10))
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
            _ = &mut shutdown => return,
        }
    }
}

/// The token in `path`, held as the agent holds its own: a small regular file, this user's,
/// private (`check_owner_and_mode`), one token by the agent's rule (`parse_token`).
fn read_token(path: &Path) -> anyhow::Result<String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        // A FIFO named here must be refused, not waited on for a writer.
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("--ui-token-file {shown}"))?;
    if !file.metadata()?.is_file() {
        anyhow::bail!("--ui-token-file {shown}: not a regular file");
    }
    loadlab_agent::state_dir::check_owner_and_mode(path, "--ui-token-file", true)?;
    let mut text = String::new();
    file.take(4097)
        .read_to_string(&mut text)
        .with_context(|| format!("--ui-token-file {shown}: not text"))?;
    if text.len() > 4096 {
        anyhow::bail!("--ui-token-file {shown}: longer than 4096 bytes, which no token is");
    }
    loadlab_agent::protocol::parse_token(&text)
        .map(str::to_string)
        .map_err(|why| anyhow::anyhow!("--ui-token-file {shown}: {why}"))
}
