//! A step's URL: an absolute one, or a /path joined to the scenario's base URL, split into
//! its origin (which must be known when the run starts) and its target template.

use super::request::RequestCtx;
use crate::error::{invalid, ScenarioError};
use crate::template::{Escape, Template};
use crate::Origin;

/// A step's URL: its origin (which must be known at load) and its target template.
pub(super) fn compile_url(
    text: &str,
    ctx: &RequestCtx,
    field: &str,
) -> Result<(Origin, Template), ScenarioError> {
    let item = ctx.item;
    let t = ctx.vars.template(text.trim(), Escape::Line, item, field)?;
    if text.trim_start().starts_with('/') {
        let Some((origin, base_path)) = ctx.base else {
            return Err(invalid(
                item,
                field,
                format!("`{text}` is a path, and the scenario has no base_url; set base_url = \"http://host:port\" at the top, or write the whole URL"),
            ));
        };
        let mut target = Template::literal(base_path.as_bytes().to_vec());
        target.extend(&t);
        return Ok((origin.clone(), target));
    }
    // An absolute URL: its scheme and authority must be literal once fixed values are in.
    let (head, rest) = t.split_first_literal();
    let head = String::from_utf8_lossy(&head).into_owned();
    let Some(scheme_end) = head.find("://") else {
        return Err(invalid(
            item,
            field,
            format!(
                "`{text}` is neither an absolute URL (http://host/...) nor a /path; the host must \
                 be known when the run starts, not set by a capture or a feeder"
            ),
        ));
    };
    let after = &head[scheme_end + 3..];
    let Some(path_at) = after.find(['/', '?']) else {
        if !rest.is_constant() {
            return Err(invalid(
                item,
                field,
                format!("`{text}`: the host must be known when the run starts, not set by a capture or a feeder"),
            ));
        }
        let (origin, _) = parse_origin(&head).map_err(|m| invalid(item, field, m))?;
        return Ok((origin, Template::literal(b"/".to_vec())));
    };
    let split = scheme_end + 3 + path_at;
    let (origin, _) = parse_origin(&head[..split]).map_err(|m| invalid(item, field, m))?;
    let mut target = Template::default();
    if head[split..].starts_with('?') {
        target.push_lit(b"/");
    }
    target.push_lit(&head.as_bytes()[split..]);
    target.extend(&rest);
    Ok((origin, target))
}

/// `http://host:port/path` into its origin and its path (possibly empty).
pub(super) fn parse_origin(url: &str) -> Result<(Origin, String), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("`{url}` has no scheme; write it as http://{url}"))?;
    let https = match scheme.to_ascii_lowercase().as_str() {
        "http" => false,
        "https" => true,
        other => {
            return Err(format!(
                "`{url}`: unsupported scheme `{other}`; use http:// or https://"
            ))
        }
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err(format!(
            "`{url}` carries credentials (user:password@); send them as a header instead"
        ));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("`{url}`: an IPv6 address needs a closing ]"))?;
        (h.to_string(), tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(format!("`{url}` has no host; e.g. http://127.0.0.1:8080/"));
    }
    let default_port = if https { 443 } else { 80 };
    let port = match port {
        None => default_port,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "`{url}`: invalid port {p:?}; a port is a number from 1 to 65535"
                ))
            }
        },
    };
    let bracketed = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    let authority = if port == default_port {
        bracketed
    } else {
        format!("{bracketed}:{port}")
    };
    Ok((
        Origin {
            https,
            host,
            port,
            authority,
        },
        path.split('#').next().unwrap_or("").to_string(),
    ))
}
