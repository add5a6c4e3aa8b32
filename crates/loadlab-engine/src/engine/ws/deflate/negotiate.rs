//! The handshake's side of permessage-deflate (RFC 7692 section 5): the offer added to an
//! upgrade request, and the server's answer read into what both sides agreed, or refused
//! with the parameter that makes it one loadlab cannot honour.
//!
//! loadlab offers `permessage-deflate` with no parameter. It does not offer
//! `client_max_window_bits`: flate2's default backend (miniz_oxide) deflates with a 15-bit
//! window only, so a smaller one asked by the server could not be honoured; a server must
//! then not name it (section 7.1.2.2). Any window the server deflates with is inflated (a
//! 15-bit window reads them all), and either side's no_context_takeover is honoured.

use http::header::{HeaderMap, HeaderValue, SEC_WEBSOCKET_EXTENSIONS};
use loadlab_result::format::shown;

/// What the server agreed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(in crate::engine) struct Agreed {
    /// The server starts each message with an empty window: the inflater is reset.
    pub server_no_context_takeover: bool,
    /// loadlab must start each message with an empty window.
    pub client_no_context_takeover: bool,
    /// The server's window (8 to 15 bits; 15 when not said): informative, any is read.
    pub server_max_window_bits: u8,
}

/// The extension's name, and loadlab's offer.
const NAME: &str = "permessage-deflate";

/// Adds loadlab's offer to `headers` when `offer` is asked and the caller (`-H`, a
/// scenario step's headers) made no offer of its own; returns what was offered, if any,
/// which the answer is checked against.
pub(in crate::engine) fn offer(headers: &mut HeaderMap, offer: bool) -> Option<String> {
    if !headers.contains_key(SEC_WEBSOCKET_EXTENSIONS) && offer {
        headers.insert(SEC_WEBSOCKET_EXTENSIONS, HeaderValue::from_static(NAME));
    }
    let values: Vec<&str> = headers
        .get_all(SEC_WEBSOCKET_EXTENSIONS)
        .iter()
        .map(|v| v.to_str().unwrap_or(""))
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// The server's answer (its 101's header fields) against the offer: `Ok(None)` when it did
/// not take permessage-deflate, or the named reason to fail the connection.
pub(in crate::engine) fn agreed(
    offered: Option<&str>,
    answer: &HeaderMap,
) -> Result<Option<Agreed>, String> {
    let mut agreed = None;
    for value in answer.get_all(SEC_WEBSOCKET_EXTENSIONS) {
        let value = value
            .to_str()
            .map_err(|_| "its Sec-WebSocket-Extensions header is not ASCII text".to_string())?;
        for extension in value.split(',').filter(|e| !e.trim().is_empty()) {
            let mut parts = extension.split(';').map(str::trim);
            let name = parts.next().unwrap_or("");
            if !name.eq_ignore_ascii_case(NAME) {
                return Err(format!(
                    "the server accepted the extension `{}`, which loadlab does not speak \
                     (RFC 6455 section 9.1: a client fails the connection)",
                    shown(name)
                ));
            }
            let offers = offered.is_some_and(|o| {
                o.split(',').any(|e| {
                    e.split(';')
                        .next()
                        .unwrap_or("")
                        .trim()
                        .eq_ignore_ascii_case(NAME)
                })
            });
            if !offers {
                return Err(
                    "the server answered with permessage-deflate, which loadlab did not offer \
                     (--ws-no-deflate)"
                        .into(),
                );
            }
            if agreed.is_some() {
                return Err("the server named permessage-deflate twice in its answer".into());
            }
            agreed = Some(parameters(parts, offered.unwrap_or(""))?);
        }
    }
    Ok(agreed)
}

/// The answer's parameters (section 7.1): each at most once, with a valid value, and none
/// loadlab did not offer and cannot honour.
fn parameters<'a>(parts: impl Iterator<Item = &'a str>, offered: &str) -> Result<Agreed, String> {
    let mut a = Agreed {
        server_max_window_bits: 15,
        ..Agreed::default()
    };
    let mut seen: Vec<String> = Vec::new();
    for part in parts.filter(|p| !p.is_empty()) {
        let (key, value) = match part.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().trim_matches('"'))),
            None => (part, None),
        };
        let key_lower = key.to_ascii_lowercase();
        if seen.contains(&key_lower) {
            return Err(format!(
                "the server's permessage-deflate answer names `{}` twice (RFC 7692 section 7)",
                shown(key)
            ));
        }
        seen.push(key_lower.clone());
        let bits = || -> Result<u8, String> {
            value
                .filter(|v| !v.starts_with('0'))
                .and_then(|v| v.parse::<u8>().ok())
                .filter(|b| (8..=15).contains(b))
                .ok_or_else(|| {
                    format!(
                        "the server's permessage-deflate answer gives `{}` the value `{}`, not \
                         8 to 15 (RFC 7692 section 7.1.2)",
                        shown(key),
                        shown(value.unwrap_or(""))
                    )
                })
        };
        let no_value = || -> Result<(), String> {
            match value {
                None => Ok(()),
                Some(v) => Err(format!(
                    "the server's permessage-deflate answer gives `{}` a value (`{}`), which it \
                     must not have (RFC 7692 section 7.1.1)",
                    shown(key),
                    shown(v)
                )),
            }
        };
        match key_lower.as_str() {
            "server_no_context_takeover" => {
                no_value()?;
                a.server_no_context_takeover = true;
            }
            "client_no_context_takeover" => {
                no_value()?;
                a.client_no_context_takeover = true;
            }
            "server_max_window_bits" => a.server_max_window_bits = bits()?,
            "client_max_window_bits" => {
                let bits = bits()?;
                if !offered
                    .to_ascii_lowercase()
                    .contains("client_max_window_bits")
                {
                    return Err(format!(
                        "the server's permessage-deflate answer sets client_max_window_bits={bits}, \
                         which loadlab did not offer (RFC 7692 section 7.1.2.2: it deflates with \
                         a 15-bit window only)"
                    ));
                }
                if bits != 15 {
                    return Err(format!(
                        "the server asks loadlab to deflate with a {bits}-bit window \
                         (client_max_window_bits={bits}); loadlab deflates with a 15-bit window \
                         only: offer permessage-deflate without client_max_window_bits"
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "the server's permessage-deflate answer has the parameter `{}`, which RFC \
                     7692 does not define (section 7: a client fails the connection)",
                    shown(key)
                ))
            }
        }
    }
    Ok(a)
}
