//! Running the mock upstream in-process: what tests and `lab verify` use. The handle owns the
//! shutdown signal; dropping it stops the server.

use crate::{run, Counters, Stats, UpstreamConfig, UpstreamError};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Entry point: `Upstream::start(config).await?`.
#[derive(Debug)]
pub struct Upstream;

impl Upstream {
    /// Binds `config.addr` and serves on the current tokio runtime until the handle is shut
    /// down or dropped.
    pub async fn start(config: UpstreamConfig) -> Result<UpstreamHandle, UpstreamError> {
        let listener =
            TcpListener::bind(config.addr)
                .await
                .map_err(|source| UpstreamError::Bind {
                    addr: config.addr,
                    source,
                })?;
        let addr = listener.local_addr()?;
        let scheme = config.scheme();
        let counters = Counters::default();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run(listener, config, counters.clone(), async move {
            // A dropped sender stops the server just like a sent signal.
            let _ = stopped.await;
        }));
        Ok(UpstreamHandle {
            addr,
            scheme,
            counters,
            stop: Some(stop),
            task: Some(task),
        })
    }
}

/// A running mock upstream.
#[derive(Debug)]
pub struct UpstreamHandle {
    addr: SocketAddr,
    /// `http` or `https`, for [`UpstreamHandle::url`].
    scheme: &'static str,
    counters: Counters,
    /// Sending (or dropping) stops the accept loop.
    stop: Option<oneshot::Sender<()>>,
    /// The server task, awaited by [`UpstreamHandle::shutdown`].
    task: Option<JoinHandle<Result<(), UpstreamError>>>,
}

impl UpstreamHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give a target as `UPSTREAM_URL`, e.g. `http://127.0.0.1:43121/` (or
    /// `https://` when it serves TLS).
    pub fn url(&self) -> String {
        format!("{}://{}/", self.scheme, self.addr)
    }

    /// The URL to give a target as `UPSTREAM_GRPC_URL`, e.g. `http://127.0.0.1:43121`: the
    /// same port, where gRPC clients speak HTTP/2 with prior knowledge.
    pub fn grpc_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The counters right now (reading them is not traffic).
    pub fn stats(&self) -> Stats {
        self.counters.snapshot()
    }

    /// Stops accepting, drops open connections, and reports how the server ended.
    pub async fn shutdown(mut self) -> Result<(), UpstreamError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.unwrap_or(Ok(())),
            None => Ok(()),
        }
    }
}

impl Drop for UpstreamHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The mock upstream on a thread of its own (a current-thread runtime), for a caller that
/// blocks while the server must go on answering (a test running the engine, or the `loadlab`
/// binary, against it): its addresses now, its counts once stopped.
#[derive(Debug)]
pub struct UpstreamThread {
    url: String,
    grpc_url: String,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Stats>>,
}

impl Upstream {
    /// Starts the upstream on a thread of its own; it serves until [`UpstreamThread::stop`]
    /// or until the handle is dropped.
    pub fn start_on_thread(config: UpstreamConfig) -> Result<UpstreamThread, UpstreamError> {
        let (started_tx, started) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = started_tx.send(Err(UpstreamError::Runtime(e)));
                    return Stats::default();
                }
            };
            runtime.block_on(async move {
                let up = match Upstream::start(config).await {
                    Ok(up) => up,
                    Err(e) => {
                        let _ = started_tx.send(Err(e));
                        return Stats::default();
                    }
                };
                let _ = started_tx.send(Ok((up.url(), up.grpc_url())));
                let _ = stopped.await;
                up.stats()
            })
        });
        let (url, grpc_url) = started.recv().unwrap_or_else(|_| {
            Err(UpstreamError::Runtime(std::io::Error::other(
                "the mock upstream's thread ended before it started",
            )))
        })?;
        Ok(UpstreamThread {
            url,
            grpc_url,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl UpstreamThread {
    /// `http://ADDR/` (or `https://`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `http://ADDR`, the gRPC method's origin.
    pub fn grpc_url(&self) -> &str {
        &self.grpc_url
    }

    /// Stops the server and returns what it counted.
    pub fn stop(mut self) -> Stats {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.thread
            .take()
            .map(|t| t.join().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl Drop for UpstreamThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
