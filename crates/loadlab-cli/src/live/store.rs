//! `loadlab ui [--db FILE]`: the results store in a browser, read-only. `GET /` lists the
//! runs (newest first; `?tag=` filters), `GET /run/ID` is the run's page as the offline HTML
//! report renders it (`loadlab_report::HtmlExporter`: the same page, charts and escaping), under
//! the report's own Content-Security-Policy. Same Host and token rules as the live page.
//! It must not write to the store, and must not put a stored string into a page unescaped.

use super::http::{admitted, full, hardened, plain, set, Body};
use crate::cmd::store_args::DbArgs;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use loadlab_report::html::escape_html;
use loadlab_report::Exporter as _;
use loadlab_store::{Filter, RunId, Store};
use std::convert::Infallible;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The newest runs the list shows.
const LISTED: usize = 500;

#[derive(Debug, clap::Args)]
#[command(
    about = "The results store in a browser, read-only: the runs, and each run's page",
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
    let store = args.db.open()?;
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
    let token = req
        .uri()
        .query()
        .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "token"))
        .map(|(_, v)| v.into_owned());
    let store = shared.store.lock().unwrap_or_else(|p| p.into_inner());
    let path = req.uri().path();
    let response = if path == "/" {
        let tag = req
            .uri()
            .query()
            .and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "tag"))
            .map(|(_, v)| v.into_owned())
            .filter(|t| !t.is_empty());
        list(&store, tag, token.as_deref())
    } else if let Some(id) = path
        .strip_prefix("/run/")
        .and_then(|i| i.parse::<i64>().ok())
    {
        run_page(&store, RunId(id))
    } else {
        plain(StatusCode::NOT_FOUND, "not found\n")
    };
    Ok(hardened(response))
}

fn list(store: &Store, tag: Option<String>, token: Option<&str>) -> Response<Body> {
    let filter = Filter {
        tag: tag.clone(),
        limit: Some(LISTED),
        ..Filter::default()
    };
    let rows = match store.list_runs(&filter) {
        Ok(rows) => rows,
        Err(e) => return error_page(&format!("the store could not be read: {e}")),
    };
    let keep = token.map_or(String::new(), |t| {
        format!(
            "?token={}",
            url::form_urlencoded::byte_serialize(t.as_bytes()).collect::<String>()
        )
    });
    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>loadlab: runs</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n<style>body{font:14px system-ui,sans-serif;\
         margin:2rem}table{border-collapse:collapse}td,th{padding:.2rem .6rem;\
         border-bottom:1px solid #dde;text-align:left}</style>\n</head>\n<body>\n<h1>Runs</h1>\n",
    );
    if let Some(t) = &tag {
        html.push_str(&format!("<p>Tagged {}.</p>\n", escape_html(t)));
    }
    html.push_str(
        "<table><thead><tr><th>run</th><th>started</th><th>tag</th><th>target</th>\
         <th>requests/s</th><th>p99</th><th>status</th></tr></thead>\n<tbody>\n",
    );
    for r in &rows {
        let s = &r.summary;
        html.push_str(&format!(
            "<tr><td><a href=\"/run/{id}{keep}\">{id}</a></td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape_html(&r.started_at),
            escape_html(r.tag.as_deref().unwrap_or("")),
            escape_html(&s.target_url),
            loadlab_report::rate(s.rps),
            s.latency_p99_us
                .map_or("–".into(), loadlab_report::duration_us),
            if r.interrupted {
                "interrupted"
            } else {
                "complete"
            },
            id = r.id.0,
            keep = escape_html(&keep),
        ));
    }
    html.push_str("</tbody></table>\n</body>\n</html>\n");
    let mut r = Response::new(full(html));
    set(&mut r, "content-type", "text/html; charset=utf-8");
    set(
        &mut r,
        "content-security-policy",
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; \
         form-action 'none'; frame-ancestors 'none'",
    );
    r
}

/// The run's page: the offline HTML report of its stored result.
fn run_page(store: &Store, id: RunId) -> Response<Body> {
    let stored = match store.run(id) {
        Ok(s) => s,
        Err(e) => return error_page(&format!("{e}")),
    };
    let mut page = Vec::new();
    if let Err(e) = loadlab_report::HtmlExporter.export(&stored.result, &mut page) {
        return error_page(&format!("run {} could not be rendered: {e}", id.0));
    }
    let mut r = Response::new(full(page));
    set(&mut r, "content-type", "text/html; charset=utf-8");
    set(
        &mut r,
        "content-security-policy",
        &format!(
            "{}; frame-ancestors 'none'",
            loadlab_report::html::content_security_policy()
        ),
    );
    r
}

/// Plain text (with `nosniff`): nothing in it is read as markup.
fn error_page(text: &str) -> Response<Body> {
    let mut r = Response::new(full(format!("{text}\n")));
    *r.status_mut() = StatusCode::NOT_FOUND;
    set(&mut r, "content-type", "text/plain; charset=utf-8");
    r
}
