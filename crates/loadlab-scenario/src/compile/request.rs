//! A step's requests: one (`url`) or a page (`requests`), each with its method, its headers
//! (defaults, then the step's, then the request's) and its body, all against one origin. The
//! URL itself is compiled in `url`, the body in `body`.

use super::url::compile_url;
use super::{body, Vars};
use crate::error::{invalid, ScenarioError};
use crate::file::{OrderedMap, RequestFile, StepFile};
use crate::request::Request;
use crate::template::{Escape, Template};
use crate::Origin;

/// What every request of a step is compiled against.
pub(super) struct RequestCtx<'a> {
    pub(super) vars: &'a Vars,
    pub(super) base: Option<&'a (Origin, String)>,
    pub(super) files: &'a super::Files<'a>,
    pub(super) defaults: &'a OrderedMap<String>,
    pub(super) item: &'a str,
}

pub(super) fn compile_requests(
    step: &StepFile,
    ctx: &RequestCtx,
    origin: &mut Option<(Origin, String)>,
) -> Result<(Vec<Request>, bool), ScenarioError> {
    let item = ctx.item;
    match (&step.url, step.requests.is_empty()) {
        (Some(_), false) => Err(invalid(
            item,
            "requests",
            "given with url; a step is one request (url) or a page (requests), not both",
        )),
        (None, true) => Err(invalid(
            item,
            "url",
            "missing; give the request's URL (absolute, or a /path joined to base_url), or \
             `requests` for a page",
        )),
        (Some(url), true) => {
            let one = RequestFile {
                method: step.method.clone(),
                url: url.clone(),
                headers: OrderedMap::default(),
                body: step.body.clone(),
            };
            let r = compile_request(&one, &step.headers, ctx, "", origin)?;
            Ok((vec![r], false))
        }
        (None, false) => {
            for field in [
                ("method", step.method.is_some()),
                ("body", step.body.is_some()),
            ] {
                if field.1 {
                    return Err(invalid(
                        item,
                        field.0,
                        "set on a page step; give it on each of its `requests` instead",
                    ));
                }
            }
            let mut out = Vec::new();
            for (k, r) in step.requests.iter().enumerate() {
                let prefix = format!("requests[{k}].");
                out.push(compile_request(r, &step.headers, ctx, &prefix, origin)?);
            }
            Ok((out, true))
        }
    }
}

fn compile_request(
    r: &RequestFile,
    step_headers: &OrderedMap<String>,
    ctx: &RequestCtx,
    prefix: &str,
    origin: &mut Option<(Origin, String)>,
) -> Result<Request, ScenarioError> {
    let item = ctx.item;
    let field = |f: &str| format!("{prefix}{f}");
    let method = r
        .method
        .as_deref()
        .unwrap_or("GET")
        .trim()
        .to_ascii_uppercase();
    if !is_token(&method) {
        return Err(invalid(
            item,
            field("method"),
            format!("`{method}` is not an HTTP method; use e.g. GET, POST, PUT"),
        ));
    }
    let (this_origin, target) = compile_url(&r.url, ctx, &field("url"))?;
    same_origin(origin, &this_origin, &r.url, item, &field("url"))?;
    // Headers: the defaults, then the step's, then the request's; a later name replaces an
    // earlier one (case-insensitively).
    let mut headers: Vec<(String, Template)> = Vec::new();
    for (map, name) in [
        (ctx.defaults, "[defaults] headers"),
        (step_headers, "headers"),
        (&r.headers, "headers"),
    ] {
        let fname = if name == "headers" {
            field("headers")
        } else {
            name.to_string()
        };
        for (k, v) in &map.0 {
            if !is_token(k) {
                return Err(invalid(
                    item,
                    &fname,
                    format!("`{k}` is not a header name (letters, digits and -)"),
                ));
            }
            if v.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
                return Err(invalid(
                    item,
                    &fname,
                    format!("the value of `{k}` contains a line break or NUL; remove it"),
                ));
            }
            let t = ctx
                .vars
                .template(v, Escape::Line, item, &format!("{fname}.{k}"))?;
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            headers.push((k.clone(), t));
        }
    }
    let (body, content_type) = match &r.body {
        Some(b) => body::compile(b, ctx.vars, ctx.files, item, &field("body"))?,
        None => (Template::default(), None),
    };
    Ok(Request::new(
        method,
        target,
        headers,
        body,
        content_type,
        r.url.clone(),
        this_origin.authority.clone(),
    ))
}

/// Records the scenario's one origin (the first step's), or refuses a request (`url` as
/// written) that goes to another.
pub(super) fn same_origin(
    origin: &mut Option<(Origin, String)>,
    this: &Origin,
    url: &str,
    item: &str,
    field: &str,
) -> Result<(), ScenarioError> {
    match origin {
        None => *origin = Some((this.clone(), url.to_string())),
        Some((first, first_url)) if first != this => {
            return Err(invalid(
                item,
                field,
                format!(
                    "`{url}` goes to {}, but `{first_url}` goes to {}; a scenario runs against one \
                     host (put the other host's requests in a scenario of their own)",
                    this.url(),
                    first.url()
                ),
            ))
        }
        Some(_) => {}
    }
    Ok(())
}

pub(super) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
