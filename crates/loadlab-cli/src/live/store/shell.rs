//! The frame of `loadlab ui`'s own pages (the lists: runs, experiments, histories, capacity
//! probes): one head, one navigation bar, one style, one Content-Security-Policy; the query's
//! parameters read once; links that carry the page's token. Pages the report crate renders
//! (a run, an experiment, two runs, a history) are served as they are, under the report's
//! own policy ([`report_page`]). Every string put into a page goes through the report's
//! `escape_html`.

use super::super::http::{full, set, Body};
use hyper::{Response, StatusCode};
use loadlab_report::html::escape_html;

/// No script at all, styles inline, forms only to this page (the filters are GET forms).
const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
                      base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:1.5rem 2rem;color:#1d2330}\
    nav a{margin-right:1rem}table{border-collapse:collapse;margin:.6rem 0}\
    td,th{padding:.2rem .6rem;border-bottom:1px solid #dde;text-align:left}\
    td.n{text-align:right;font-variant-numeric:tabular-nums}\
    form{margin:.6rem 0}input{margin-right:.6rem}.hint{color:#5a6275}\
    .live{background:#eef8ee}.err{color:#a3261b}code{font-size:13px}";

/// What a request asked: its parameters, and the token to carry on in links.
pub struct Query {
    pairs: Vec<(String, String)>,
    token: Option<String>,
}

impl Query {
    pub fn parse(query: Option<&str>) -> Query {
        let pairs: Vec<(String, String)> = query
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let token = pairs
            .iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v.clone());
        Query { pairs, token }
    }

    /// The parameter's value, trimmed; `None` when absent or empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// A link to `path` with `params` (and the token, when the page has one), escaped for
    /// an attribute.
    pub fn href(&self, path: &str, params: &[(&str, &str)]) -> String {
        escape_html(&self.url(path, params))
    }

    /// [`Query::href`]'s link unescaped, for a renderer that escapes what it is given (the
    /// report's).
    pub fn url(&self, path: &str, params: &[(&str, &str)]) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in params {
            q.append_pair(k, v);
        }
        if let Some(t) = &self.token {
            q.append_pair("token", t);
        }
        let q = q.finish();
        if q.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{q}")
        }
    }

    /// The token as a form's hidden field, so a GET form keeps it.
    pub fn hidden_token(&self) -> String {
        self.token.as_ref().map_or(String::new(), |t| {
            format!(
                "<input type=\"hidden\" name=\"token\" value=\"{}\">",
                escape_html(t)
            )
        })
    }
}

/// A page of ours: the head, the navigation, `body`, under [`POLICY`].
pub fn page(q: &Query, title: &str, body: &str) -> Response<Body> {
    let nav = [
        ("/", "Runs"),
        ("/experiments", "Experiments"),
        ("/histories", "Histories"),
        ("/capacity", "Capacity searches"),
    ]
    .iter()
    .map(|(path, name)| format!("<a href=\"{}\">{name}</a>", q.href(path, &[])))
    .collect::<String>();
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n<title>loadlab: {title}</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <nav>{nav}</nav>\n<h1>{title}</h1>\n{body}</body>\n</html>\n",
        title = escape_html(title),
    );
    let mut r = Response::new(full(html));
    set(&mut r, "content-type", "text/html; charset=utf-8");
    set(&mut r, "content-security-policy", POLICY);
    r
}

/// A page the report crate rendered, under its own policy (its scripts by their hashes).
pub fn report_page(html: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(full(html));
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

/// Something asked for that is not there, said in plain text (with `nosniff`: nothing in it
/// is read as markup), naming what and where to look.
pub fn not_found(text: &str) -> Response<Body> {
    text_page(StatusCode::NOT_FOUND, text)
}

/// A parameter that cannot be read: what it was, and the form it takes.
pub fn bad_request(text: &str) -> Response<Body> {
    text_page(StatusCode::BAD_REQUEST, text)
}

fn text_page(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(full(format!("{text}\n")));
    *r.status_mut() = status;
    set(&mut r, "content-type", "text/plain; charset=utf-8");
    r
}

/// A table: its header, then rows of cells already escaped (or made of escaped parts).
pub fn table(columns: &[&str], rows: &[Vec<String>]) -> String {
    let mut html = String::from("<table><thead><tr>");
    for c in columns {
        html.push_str(&format!("<th>{}</th>", escape_html(c)));
    }
    html.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        html.push_str("<tr>");
        for cell in row {
            html.push_str(&format!("<td>{cell}</td>"));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</tbody></table>\n");
    html
}

/// A figure of a run's summary as the lists show it.
pub fn p99(us: Option<f64>) -> String {
    us.map_or("–".into(), loadlab_report::duration_us)
}
