//! A WebSocket run: a `ws://` or `wss://` URL selects it. Here its URL is read (as the http
//! or https URL of its handshake), what makes no sense with it is refused with the fix, and
//! the message each send carries is settled. What a WebSocket run is: see [`crate::ws`].

use super::{reject, ConfigError, Model, RunSpec, Stop, TargetUrl};
use crate::ws::{WsConfig, WsMode, DEFAULT_PING, DEFAULT_SIZE, MAX_MESSAGE_BYTES};
use std::sync::Arc;

/// The largest message loadlab sends (as `--body-file`'s limit).
const MAX_SEND_BYTES: usize = 64 << 20;

/// `ws://...` as `http://...` (and `wss://` as `https://`), with whether it was one: the
/// handshake is an HTTP/1.1 request to that URL. Schemes are case-insensitive.
pub(super) fn as_http(raw: &str) -> (String, bool) {
    let lower = |n: usize| raw.get(..n).map(str::to_ascii_lowercase);
    if lower(6).as_deref() == Some("wss://") {
        (format!("https://{}", &raw[6..]), true)
    } else if lower(5).as_deref() == Some("ws://") {
        (format!("http://{}", &raw[5..]), true)
    } else {
        (raw.to_string(), false)
    }
}

impl RunSpec {
    /// The WebSocket run this spec asks for (`None` for HTTP), or why it cannot be one.
    pub(super) fn check_ws(
        &self,
        url: &TargetUrl,
        websocket: bool,
        model: &Model,
        stop: Stop,
    ) -> Result<Option<Arc<WsConfig>>, ConfigError> {
        let ws = &self.ws;
        if !websocket {
            if *ws != crate::ws::WsSpec::default() {
                return Err(reject(
                    "ws",
                    format!(
                        "the --ws-* flags need a ws:// or wss:// URL; `{}` is HTTP",
                        url.original
                    ),
                ));
            }
            return Ok(None);
        }
        let conflicts = [
            (
                self.http3,
                "http3",
                "WebSockets run over HTTP/1.1 (RFC 6455) or HTTP/2 (RFC 8441, --http2); drop \
                 --http3",
            ),
            (
                self.grpc.is_some(),
                "grpc",
                "gRPC is not a WebSocket load; drop --grpc, or give an http:// URL",
            ),
            (
                self.scenario.is_some(),
                "scenario",
                "a scenario's steps are HTTP requests; drop --scenario",
            ),
            (
                self.streams > 1 && !self.http2,
                "streams",
                "puts that many WebSockets on one HTTP/2 connection (RFC 8441); add --http2, or \
                 drop --streams (more connections: -c)",
            ),
            (
                !self.paths.is_empty(),
                "paths",
                "a WebSocket has one path, the URL's; drop --path",
            ),
            (
                self.method != "GET",
                "method",
                "the upgrade is always a GET; drop -m",
            ),
            (
                !self.keepalive,
                "keepalive",
                "a WebSocket is one long connection; for a new connection each time use \
                 --ws-mode connect",
            ),
            (
                self.pace.is_some() || self.new_connection_share.is_some(),
                "pace",
                "--pace and --new-connection-share are for HTTP; drop them",
            ),
            (
                self.closed_stages,
                "closed_stages",
                "WebSocket connections cannot be staged yet; drop --stages --closed",
            ),
            (
                !self.tick.is_zero(),
                "tick",
                "a WebSocket's messages go at their due times; drop --tick",
            ),
            (
                self.busy_poll,
                "busy_poll",
                "a WebSocket run does not busy-poll; drop --busy-poll",
            ),
        ];
        for (conflict, setting, why) in conflicts {
            if conflict {
                return Err(reject(setting, why));
            }
        }
        let open = matches!(model, Model::Open { .. });
        if ws.mode != WsMode::Echo && (!self.body.is_empty() || ws.size.is_some()) {
            return Err(reject(
                "body",
                format!(
                    "--ws-mode {} sends no messages; drop --body/--body-file/--ws-size, or \
                     use --ws-mode echo",
                    ws.mode.name()
                ),
            ));
        }
        if ws.ping.is_some() && ws.mode != WsMode::Hold {
            return Err(reject(
                "ws_ping",
                "pings a held connection; add --ws-mode hold, or drop --ws-ping",
            ));
        }
        if ws.mode == WsMode::Hold {
            if open {
                return Err(reject(
                    "rate",
                    "--ws-mode hold opens -c connections and holds them for -d; drop --rate \
                     (for connections per second use --ws-mode connect --rate N)",
                ));
            }
            if matches!(stop, Stop::Requests(_)) {
                return Err(reject(
                    "requests",
                    "--ws-mode hold runs for a time; give -d instead of -n",
                ));
            }
        }
        let held = ws.held.unwrap_or(0);
        if held > 0 {
            if ws.mode != WsMode::Echo {
                return Err(reject(
                    "ws_held",
                    "holds connections beside an echo load; with --ws-mode hold give them \
                     with -c, or drop --ws-held",
                ));
            }
            if matches!(stop, Stop::Requests(_)) {
                return Err(reject(
                    "requests",
                    "--ws-held holds its connections for a time; give -d instead of -n",
                ));
            }
        }
        if let Some(rate) = ws.connect_rate {
            if ws.mode != WsMode::Hold && held == 0 {
                return Err(reject(
                    "ws_connect_rate",
                    "paces the opening of held connections; add --ws-mode hold (-c of them) or \
                     --ws-held N, or drop it (a connection storm's rate is --ws-mode connect \
                     --rate N)",
                ));
            }
            if !(rate.is_finite() && rate > 0.0) {
                return Err(reject(
                    "ws_connect_rate",
                    format!("{rate} connections a second: give more than 0, e.g. 500/s"),
                ));
            }
        }
        let ping = ws.ping.unwrap_or(DEFAULT_PING);
        if ping.is_zero() {
            return Err(reject(
                "ws_ping",
                "must be longer than 0; try --ws-ping 10s",
            ));
        }
        if !self.body.is_empty() && ws.size.is_some() {
            return Err(reject(
                "ws_size",
                "sets the message's size when no body is given; drop --ws-size or the body",
            ));
        }
        let payload = if self.body.is_empty() {
            let size = ws.size.unwrap_or(DEFAULT_SIZE);
            if size == 0 || size > MAX_SEND_BYTES {
                return Err(reject(
                    "ws_size",
                    format!("{size} bytes: give 1 to {MAX_SEND_BYTES}, e.g. --ws-size 1024"),
                ));
            }
            vec![b'x'; size]
        } else {
            self.body.clone()
        };
        if !ws.binary && std::str::from_utf8(&payload).is_err() {
            return Err(reject(
                "ws_binary",
                "the body is not UTF-8, which a text message must be; add --ws-binary",
            ));
        }
        let scheme = if url.https { "wss" } else { "ws" };
        Ok(Some(Arc::new(WsConfig {
            mode: ws.mode,
            binary: ws.binary,
            max_message_bytes: MAX_MESSAGE_BYTES.max(payload.len().saturating_mul(2)),
            payload: payload.into(),
            ping,
            held,
            connect_rate: ws.connect_rate,
            uri: format!("{scheme}://{}{}", url.authority, url.path_and_query),
            http2: self.http2,
            deflate: !ws.no_deflate,
        })))
    }
}
