//! `loadlab ui [--db FILE]`: the results store in a browser, read-only (docs/live.md). The
//! pages: the runs (filtered) with the runs live on this machine, a run's page, the
//! experiments and each one's report, two runs side by side, the histories and each one's
//! page, and the capacity searches and each one's report. Pages of runs, experiments,
//! histories and capacity searches are the report crate's, under its own policy: a run looks
//! the same here, on its live page and in its offline report. Same Host and token rules as
//! the live page.
//!
//! Layout: `shell` the frame of the lists and the query; `runs` the run list and a run's
//! page; `experiments` experiments and two runs side by side; `history` the histories;
//! `capacity` the capacity searches; `registry` the live runs' entries (written by `--ui`,
//! read here).
//! It must not write to the store (it opens it read-only), and must not put a stored string
//! into a page unescaped.

mod capacity;
mod experiments;
mod history;
pub mod registry;
mod runs;
mod shell;

use super::http::{admitted, hardened, plain, Body};
use crate::cmd::store_args::DbArgs;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use loadlab_store::{CapacityId, ExperimentId, RunId, Store};
use shell::Query;
use std::convert::Infallible;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, clap::Args)]
#[command(
    about = "The results store in a browser, read-only: runs, experiments, histories, capacity searches, live runs",
    after_help = "Example:\n  loadlab ui --db loadlab.db   (then open the printed address)"
)]
pub struct UiArgs {
    #[command(flatten)]
    pub db: DbArgs,

    /// Where to listen [default: 127.0.0.1 and a free port]. Off loopback, --ui-token-file is
    /// required.
    #[arg(long = "ui", value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub addr: String,

    /// The page's token, read from this file (mode 0600): every request must carry it
    /// (?token=TOKEN). Required when --ui is not on loopback.
    #[arg(long, value_name = "FILE")]
    pub ui_token_file: Option<PathBuf>,
}

struct Shared {
    store: Mutex<Store>,
    hosts: Vec<String>,
    access: Option<loadlab_agent::Token>,
}

pub fn run(args: UiArgs) -> anyhow::Result<ExitCode> {
    // Read-only, as SQLite opens it: no migration and no sealing of killed runs (what the
    // other commands do as they open the store) from a page that only shows it.
    let store = Store::open_read_only(args.db.path())?;
    let bound = super::bind(&args.addr, args.ui_token_file.as_deref())?;
    let shared = Arc::new(Shared {
        store: Mutex::new(store),
        hosts: bound.hosts,
        access: bound.access,
    });
    let hint = if shared.access.is_some() {
        "?token=TOKEN (the --ui-token-file's)"
    } else {
        ""
    };
    eprintln!(
        "results store page: http://{}/{hint} (Ctrl-C ends it)",
        bound.local
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(bound.listener)?;
        loop {
            let (tcp, _) = listener.accept().await?;
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |req| handle(Arc::clone(&shared), req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10))
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    if let Err(refused) = admitted(&shared.hosts, shared.access.as_ref(), &req) {
        return Ok(hardened(*refused));
    }
    if req.method() != hyper::Method::GET {
        return Ok(hardened(plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "read-only\n",
        )));
    }
    let path = req.uri().path().to_string();
    let q = Query::parse(req.uri().query());
    // Pages take the store's lock and may take a while (a history's change points): on the
    // blocking pool, so one slow page does not hold the others' connections.
    let response = tokio::task::spawn_blocking(move || {
        let store = shared.store.lock().unwrap_or_else(|p| p.into_inner());
        route(&store, &path, &q)
    })
    .await
    .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "the page failed\n"));
    Ok(hardened(response))
}

fn route(store: &Store, path: &str, q: &Query) -> Response<Body> {
    let id = |prefix: &str| path.strip_prefix(prefix).map(str::parse::<i64>);
    match path {
        "/" => runs::index(store, q),
        "/experiments" => experiments::list(store, q),
        "/compare" => experiments::compare(store, q),
        "/histories" => history::list(store, q),
        "/history" => history::page(store, q),
        "/capacity" => capacity::list(store, q),
        _ => match (id("/run/"), id("/experiment/"), id("/capacity/")) {
            (Some(Ok(id)), _, _) => runs::run_page(store, RunId(id)),
            (_, Some(Ok(id)), _) => experiments::page(store, ExperimentId(id)),
            (_, _, Some(Ok(id))) => capacity::page(store, CapacityId(id), q),
            (Some(Err(_)), _, _) | (_, Some(Err(_)), _) | (_, _, Some(Err(_))) => {
                shell::bad_request(
                    "a run's, experiment's or capacity search's id is a number: /run/42",
                )
            }
            _ => plain(
                StatusCode::NOT_FOUND,
                "not found: / lists the runs, /experiments, /histories and /capacity the rest\n",
            ),
        },
    }
}
