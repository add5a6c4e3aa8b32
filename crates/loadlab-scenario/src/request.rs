//! One request of a step as it goes on the wire (HTTP/1.1). A request whose templates are all
//! constant is encoded once, when the scenario loads, in two forms (keep-alive, and with
//! `Connection: close` for a new connection per request): the engine writes those bytes as
//! they are. Only a request with variables set during the run, or a virtual user holding
//! cookies, is rendered per send, into a buffer the virtual user reuses.

use crate::template::Template;
use std::io::Write as _;

/// A compiled request.
#[derive(Debug, Clone)]
pub struct Request {
    /// Upper case.
    pub method: String,
    /// The path and query (from `/`).
    pub target: Template,
    /// Header names as written (checked tokens) and templated values; defaults merged.
    pub headers: Vec<(String, Template)>,
    pub body: Template,
    /// Set by the body's kind (json, form, multipart) unless a header gives one.
    pub content_type: Option<String>,
    /// The URL as written in the file (template text, no value): what reports show.
    pub url_text: String,
    /// The `Host` header's value: host, and the port when not the scheme's default.
    pub authority: String,
    /// Pre-encoded forms, when every template is constant: `[keep-alive, close]`.
    constant: Option<[Vec<u8>; 2]>,
}

impl Request {
    pub(crate) fn new(
        method: String,
        target: Template,
        headers: Vec<(String, Template)>,
        body: Template,
        content_type: Option<String>,
        url_text: String,
        authority: String,
    ) -> Request {
        let mut r = Request {
            method,
            target,
            headers,
            body,
            content_type,
            url_text,
            authority,
            constant: None,
        };
        if r.is_constant() {
            let mut keep = Vec::new();
            let mut close = Vec::new();
            r.render_into(&[], None, false, &mut keep);
            r.render_into(&[], None, true, &mut close);
            r.constant = Some([keep, close]);
        }
        r
    }

    /// Whether this request is the same on every send (no variable set during the run).
    pub fn is_constant(&self) -> bool {
        self.target.is_constant()
            && self.body.is_constant()
            && self.headers.iter().all(|(_, v)| v.is_constant())
    }

    pub fn is_head(&self) -> bool {
        self.method == "HEAD"
    }

    /// The request encoded when the scenario loaded, for a virtual user with no cookie.
    pub fn constant_bytes(&self, close: bool) -> Option<&[u8]> {
        self.constant
            .as_ref()
            .map(|c| c[usize::from(close)].as_slice())
    }

    /// Encodes the request with the virtual user's `values` and cookies into `out` (cleared
    /// first).
    pub fn encode(&self, values: &[String], cookie: Option<&str>, close: bool, out: &mut Vec<u8>) {
        out.clear();
        self.render_into(values, cookie, close, out);
    }

    fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    fn render_into(&self, values: &[String], cookie: Option<&str>, close: bool, out: &mut Vec<u8>) {
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        self.target.render(values, out);
        out.extend_from_slice(b" HTTP/1.1\r\n");
        if !self.has("host") {
            out.extend_from_slice(b"Host: ");
            out.extend_from_slice(self.authority.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if !self.has("user-agent") {
            out.extend_from_slice(
                concat!("User-Agent: loadlab/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        if !self.has("accept") {
            out.extend_from_slice(b"Accept: */*\r\n");
        }
        if close && !self.has("connection") {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            value.render(values, out);
            out.extend_from_slice(b"\r\n");
        }
        if let Some(ct) = &self.content_type {
            if !self.has("content-type") {
                out.extend_from_slice(b"Content-Type: ");
                out.extend_from_slice(ct.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
        }
        let body_len = self.body.rendered_len(values);
        if body_len > 0 && !self.has("content-length") && !self.has("transfer-encoding") {
            // Writing to a Vec cannot fail.
            let _ = write!(out, "Content-Length: {body_len}\r\n");
        }
        if let Some(cookie) = cookie {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(cookie.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        self.body.render(values, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::{Escape, Lookup};

    fn lookup(name: &str) -> Lookup<'static> {
        match name {
            "ID" => Lookup::Static("7"),
            "TOKEN" => Lookup::Dynamic(0),
            _ => Lookup::Unknown,
        }
    }

    fn t(text: &str) -> Template {
        Template::compile(text, Escape::Line, &lookup).unwrap()
    }

    #[test]
    fn a_constant_request_is_encoded_once_in_both_forms() {
        let r = Request::new(
            "POST".into(),
            t("/items/{{ID}}"),
            vec![("X-Test".into(), t("yes"))],
            Template::literal(b"{\"a\":1}".to_vec()),
            Some("application/json".into()),
            "/items/{{ID}}".into(),
            "127.0.0.1:8080".into(),
        );
        let keep = String::from_utf8(r.constant_bytes(false).unwrap().to_vec()).unwrap();
        assert_eq!(
            keep,
            format!(
                "POST /items/7 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: loadlab/{}\r\n\
                 Accept: */*\r\nX-Test: yes\r\nContent-Type: application/json\r\n\
                 Content-Length: 7\r\n\r\n{{\"a\":1}}",
                env!("CARGO_PKG_VERSION")
            )
        );
        let close = String::from_utf8(r.constant_bytes(true).unwrap().to_vec()).unwrap();
        assert!(close.contains("Connection: close\r\n"));
        // Rendering gives the same bytes as the pre-encoded form.
        let mut out = Vec::new();
        r.encode(&[], None, false, &mut out);
        assert_eq!(out, keep.as_bytes());
    }

    #[test]
    fn variables_and_cookies_are_rendered_per_send() {
        let r = Request::new(
            "GET".into(),
            t("/me"),
            vec![("Authorization".into(), t("Bearer {{TOKEN}}"))],
            Template::default(),
            None,
            "/me".into(),
            "h:1".into(),
        );
        assert!(r.constant_bytes(false).is_none());
        let mut out = Vec::new();
        r.encode(&["abc".into()], Some("s=1"), false, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("GET /me HTTP/1.1\r\nHost: h:1\r\n"),
            "{text}"
        );
        assert!(text.contains("Authorization: Bearer abc\r\n"));
        assert!(text.ends_with("Cookie: s=1\r\n\r\n"));
        assert!(!text.contains("Content-Length"));
    }
}
