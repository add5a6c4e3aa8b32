//! A WebSocket step (`ws = "/path"` or a `ws://`/`wss://` URL): its URL on the scenario's
//! host (a `ws://` URL is the `http://` origin's, `wss://` the `https://` one's), the
//! upgrade's header fields, its messages as templates, binary or text, and what answers each.
//! The fields an HTTP step has that a WebSocket step cannot take are refused, naming them.

use super::request::{is_token, same_origin, RequestCtx};
use super::url::compile_url;
use crate::error::{invalid, ScenarioError};
use crate::file::StepFile;
use crate::request::Request;
use crate::template::{Escape, Template};
use crate::ws::{WsAnswer, WsStep};
use crate::Origin;

/// The most messages one WebSocket step sends.
pub const MAX_MESSAGES: usize = 10_000;

/// Header fields tungstenite writes for the upgrade itself; given twice, the upgrade breaks.
const HANDSHAKE_HEADERS: [&str; 5] = [
    "host",
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
];

/// A WebSocket step: its upgrade once per message (what counts read) and what it does.
pub(super) fn compile_step(
    step: &StepFile,
    url: &str,
    ctx: &RequestCtx,
    origin: &mut Option<(Origin, String)>,
) -> Result<(Vec<Request>, WsStep), ScenarioError> {
    let item = ctx.item;
    for (field, given, instead) in [
        (
            "requests",
            !step.requests.is_empty(),
            "a step is one WebSocket",
        ),
        ("url", step.url.is_some(), "its URL is `ws`"),
        ("method", step.method.is_some(), "the upgrade is a GET"),
        ("body", step.body.is_some(), "it sends `messages`"),
    ] {
        if given {
            return Err(invalid(
                item,
                field,
                format!("set on a WebSocket step ({instead}); remove it"),
            ));
        }
    }
    let trimmed = url.trim();
    let lower = trimmed.to_ascii_lowercase();
    let as_http = if let Some(rest) = lower.strip_prefix("ws://") {
        format!("http://{}", &trimmed[trimmed.len() - rest.len()..])
    } else if let Some(rest) = lower.strip_prefix("wss://") {
        format!("https://{}", &trimmed[trimmed.len() - rest.len()..])
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        return Err(invalid(
            item,
            "ws",
            format!(
                "`{url}` is not a WebSocket URL: give a /path on base_url's host, or a ws:// or \
                 wss:// URL (an http:// URL is an HTTP step's `url`)"
            ),
        ));
    };
    let (this, target) = compile_url(&as_http, ctx, "ws")?;
    same_origin(origin, &this, url, item, "ws")?;
    let mut headers: Vec<(String, Template)> = Vec::new();
    for (map, field) in [
        (ctx.defaults, "[defaults] headers"),
        (&step.headers, "headers"),
    ] {
        for (k, v) in &map.0 {
            let f = format!("{field}.{k}");
            if !is_token(k) {
                return Err(invalid(
                    item,
                    &f,
                    format!("`{k}` is not a header name (letters, digits and -)"),
                ));
            }
            if HANDSHAKE_HEADERS.iter().any(|h| h.eq_ignore_ascii_case(k)) {
                return Err(invalid(
                    item,
                    &f,
                    format!("`{k}` is written by the WebSocket upgrade itself; remove it"),
                ));
            }
            let t = ctx.vars.template(v, Escape::Line, item, &f)?;
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            headers.push((k.clone(), t));
        }
    }
    if step.messages.is_empty() || step.messages.len() > MAX_MESSAGES {
        return Err(invalid(
            item,
            "messages",
            format!(
                "{} messages; give 1 to {MAX_MESSAGES}, e.g. messages = [\"hello {{{{USER}}}}\"]",
                step.messages.len()
            ),
        ));
    }
    let messages = step
        .messages
        .iter()
        .enumerate()
        .map(|(k, m)| {
            ctx.vars
                .template(m, Escape::None, item, &format!("messages[{k}]"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let answer = match step.answer.as_deref() {
        None | Some("echo") => WsAnswer::Echo,
        Some("next") => WsAnswer::Next,
        Some(other) => {
            return Err(invalid(
                item,
                "answer",
                format!(
                    "`{other}` is not an answer; use \"echo\" (the message sent back) or \"next\" \
                     (the server's next message, whatever it holds)"
                ),
            ))
        }
    };
    let upgrade = Request::new(
        "GET".into(),
        target.clone(),
        headers.clone(),
        Template::default(),
        None,
        url.to_string(),
        this.authority.clone(),
    );
    let ws = WsStep {
        secure: this.https,
        target,
        headers,
        messages,
        binary: step.binary.unwrap_or(false),
        answer,
    };
    Ok((vec![upgrade; ws.messages.len()], ws))
}

/// An HTTP or gRPC step given a field only a WebSocket step takes.
pub(super) fn refuse_ws_fields(step: &StepFile, item: &str) -> Result<(), ScenarioError> {
    for (field, given) in [
        ("messages", !step.messages.is_empty()),
        ("binary", step.binary.is_some()),
        ("answer", step.answer.is_some()),
    ] {
        if given {
            return Err(invalid(
                item,
                field,
                "only a WebSocket step takes it (ws = \"/path\" or a ws:// URL)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
