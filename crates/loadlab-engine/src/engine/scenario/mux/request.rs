//! A step's request as HTTP/2 and HTTP/3 carry it: the scenario's request (method, target,
//! headers, body; variables substituted, the user's cookies added) as pseudo-headers and
//! header fields. What HTTP/1.1 writes in its head goes where these protocols want it: the
//! `Host` header's value becomes `:authority`, and the headers that are HTTP/1.1's alone
//! (`Connection`, `Keep-Alive`, `Transfer-Encoding`, `Upgrade`, `Proxy-Connection`) are left
//! out, since a request carrying one is malformed (RFC 9113 8.2.2, RFC 9114 4.2). The
//! defaults HTTP/1.1's encoding adds (`User-Agent`, `Accept`, the body's `Content-Type` and
//! `Content-Length`) are added alike, so that a server sees the same request whatever the
//! protocol. It does no I/O.

use super::super::super::h2::is_connection_specific;
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use loadlab_scenario::Request;

/// Builds `request` for one send: its head and its body. `Err`: why the request cannot be
/// written as an HTTP/2 or HTTP/3 request (a value captured during the run holding a control
/// character, say), for the failure's detail. `buf` is scratch space, kept by the caller.
pub(in crate::engine) fn build(
    request: &Request,
    values: &[String],
    cookie: Option<&str>,
    https: bool,
    buf: &mut Vec<u8>,
) -> Result<(http::Request<()>, Bytes), String> {
    let method = http::Method::from_bytes(request.method.as_bytes())
        .map_err(|_| format!("the method {:?} is not a valid token", request.method))?;
    let mut headers = http::HeaderMap::with_capacity(request.headers.len() + 4);
    let mut authority = None;
    for (name, value) in &request.headers {
        buf.clear();
        value.render(values, buf);
        if name.eq_ignore_ascii_case("host") {
            authority = Some(String::from_utf8_lossy(buf).into_owned());
            continue;
        }
        if is_connection_specific(name) {
            continue;
        }
        let field = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("the header name {name:?} is not a valid field name"))?;
        let value = HeaderValue::from_bytes(buf).map_err(|_| {
            format!(
                "the value of header {name} ({:?}) is not a valid field value (it holds a \
                 control character)",
                String::from_utf8_lossy(buf)
            )
        })?;
        headers.append(field, value);
    }
    add_default(
        &mut headers,
        http::header::USER_AGENT,
        concat!("loadlab/", env!("CARGO_PKG_VERSION")),
    );
    add_default(&mut headers, http::header::ACCEPT, "*/*");
    if let Some(ct) = &request.content_type {
        if let Ok(value) = HeaderValue::from_str(ct) {
            headers.entry(http::header::CONTENT_TYPE).or_insert(value);
        }
    }
    let mut body = Vec::new();
    request.body.render(values, &mut body);
    if !body.is_empty() {
        headers
            .entry(http::header::CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(body.len()));
    }
    if let Some(cookie) = cookie {
        let value = HeaderValue::from_str(cookie)
            .map_err(|_| format!("the cookie {cookie:?} is not a valid field value"))?;
        headers.append(http::header::COOKIE, value);
    }
    buf.clear();
    request.target.render(values, buf);
    let target = String::from_utf8_lossy(buf);
    let authority = authority.as_deref().unwrap_or(&request.authority);
    let uri = http::Uri::builder()
        .scheme(if https { "https" } else { "http" })
        .authority(authority)
        .path_and_query(target.as_ref())
        .build()
        .map_err(|e| format!("the URL {target:?} on {authority:?} is not valid ({e})"))?;
    let mut head = http::Request::new(());
    *head.method_mut() = method;
    *head.uri_mut() = uri;
    *head.headers_mut() = headers;
    Ok((head, Bytes::from(body)))
}

/// A copy of a request's head, for a send again (the protocols' libraries take it by value,
/// and `http::Request` is not `Clone`).
pub(in crate::engine) fn copy(head: &http::Request<()>) -> http::Request<()> {
    let mut again = http::Request::new(());
    *again.method_mut() = head.method().clone();
    *again.uri_mut() = head.uri().clone();
    *again.headers_mut() = head.headers().clone();
    again
}

fn add_default(headers: &mut http::HeaderMap, name: HeaderName, value: &'static str) {
    headers
        .entry(name)
        .or_insert(HeaderValue::from_static(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadlab_scenario::Scenario;
    use std::path::Path;

    fn step_request(step: &str) -> Request {
        let text = format!("name = \"s\"\nbase_url = \"https://example.test:8443\"\n{step}");
        let s = Scenario::from_toml_str(&text, Path::new(".")).expect("valid scenario");
        s.steps[0].requests[0].clone()
    }

    #[test]
    fn the_host_becomes_the_authority_and_http1_headers_are_left_out() {
        let r = step_request(
            "[[steps]]\nname = \"a\"\nmethod = \"POST\"\nurl = \"/items?x=1\"\n\
             headers = { Host = \"api.test\", Connection = \"close\", \
             Transfer-Encoding = \"chunked\", X-Test = \"yes\" }\nbody.json = { a = 1 }",
        );
        let (head, body) = build(&r, &[], Some("s=1; t=2"), true, &mut Vec::new()).unwrap();
        assert_eq!(head.method(), "POST");
        assert_eq!(head.uri().to_string(), "https://api.test/items?x=1");
        let h = head.headers();
        assert!(h.get("host").is_none() && h.get("connection").is_none());
        assert!(h.get("transfer-encoding").is_none());
        assert_eq!(h["x-test"], "yes");
        assert_eq!(h["cookie"], "s=1; t=2");
        assert_eq!(h["content-type"], "application/json");
        assert_eq!(h["content-length"], body.len().to_string().as_str());
        assert_eq!(h["accept"], "*/*");
        assert!(h["user-agent"].to_str().unwrap().starts_with("loadlab/"));
        assert_eq!(&body[..], br#"{"a":1}"#);
    }

    #[test]
    fn the_scenarios_authority_and_no_body_without_one() {
        let r = step_request("[[steps]]\nname = \"a\"\nurl = \"/\"");
        let (head, body) = build(&r, &[], None, false, &mut Vec::new()).unwrap();
        assert_eq!(head.uri().to_string(), "http://example.test:8443/");
        assert!(body.is_empty());
        assert!(head.headers().get("content-length").is_none());
        assert!(head.headers().get("cookie").is_none());
        let again = copy(&head);
        assert_eq!(again.uri(), head.uri());
        assert_eq!(again.headers(), head.headers());
    }

    #[test]
    fn a_value_that_is_no_field_value_is_refused_with_why() {
        let text =
            "name = \"s\"\nbase_url = \"http://h:1\"\n[[steps]]\nname = \"a\"\nurl = \"/\"\n\
                    [[steps.captures]]\nvar = \"V\"\nheader = \"x-v\"\n\
                    [[steps]]\nname = \"b\"\nurl = \"/\"\nheaders = { X-V = \"{{V}}\" }";
        let s = Scenario::from_toml_str(text, Path::new(".")).expect("valid scenario");
        let mut values = s.new_values();
        // Line breaks are taken out of a header's value when it is rendered; other control
        // characters stay, and HTTP/2 and HTTP/3 field values cannot hold them.
        values[0] = "a\x01b".into();
        let why = build(
            &s.steps[1].requests[0],
            &values,
            None,
            false,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            why.contains("X-V") && why.contains("not a valid field value"),
            "{why}"
        );
    }
}
