//! WebSockets over HTTP/2 (RFC 8441), with `--http2` and a `ws://` (h2c, prior knowledge) or
//! `wss://` URL (h2 agreed by ALPN): each WebSocket is a stream of one of the thread's
//! HTTP/2 connections ([`Conns`]), opened by an extended CONNECT (`:protocol websocket`,
//! `sec-websocket-version: 13`, no key: RFC 8441 section 4); a 2xx answer opens it, any
//! other status is a refused upgrade, counted by its status as an HTTP/1.1 upgrade's, and the
//! 2xx is the status its exchanges are counted under (not HTTP/1.1's 101). The
//! stream then carries the WebSocket's frames ([`H2Io`]), so every load above it (echo,
//! hold, connect, the open loop) runs unchanged. permessage-deflate is offered as over
//! HTTP/1.1 (`sec-websocket-extensions` on the CONNECT, the answer's on the 2xx: RFC 8441
//! section 4), and its layer (`super::deflate`) wraps the stream as it does a connection.
//!
//! It records nothing but a new connection's connect figures; the caller records each
//! WebSocket's outcome, as for an HTTP/1.1 upgrade.

mod conns;
mod stream;

pub(crate) use conns::Conns;
pub(in crate::engine) use stream::H2Io;

use super::{OpenFailed, WsIo};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use loadlab_result::format::shown;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

/// Opens a WebSocket to `uri` (`ws://` or `wss://`) as a stream of one of the thread's
/// HTTP/2 connections, its CONNECT answered within `--connect-timeout` from when the stream
/// was granted (a wait for one, under the server's stream limit, is not the server's delay);
/// with the 2xx status it was answered.
pub(in crate::engine) async fn open(
    ctx: &ThreadCtx,
    phase: Phase,
    uri: &str,
    headers: &[(http::HeaderName, http::HeaderValue)],
    config: WebSocketConfig,
) -> Result<(WebSocketStream<WsIo>, u16), OpenFailed> {
    let mut request = connect_request(uri, headers).ok_or_else(|| OpenFailed {
        class: ErrorClass::WsBadHandshake,
        detail: Some(format!("`{}` is not a WebSocket URL", shown(uri))),
        status: None,
    })?;
    let offered = super::deflate::offer(ctx, request.headers_mut());
    let limit = config
        .max_message_size
        .unwrap_or(crate::ws::MAX_MESSAGE_BYTES);
    let (send, held) = ctx.ws_h2.stream(ctx, phase).await?;
    let connect = async {
        let mut send = send.ready().await.map_err(h2_failed)?;
        let (response, send_stream) = send.send_request(request, false).map_err(h2_failed)?;
        let response = response.await.map_err(h2_failed)?;
        let status = response.status();
        if !status.is_success() {
            return Err(OpenFailed {
                class: ErrorClass::WsRefused,
                detail: Some(format!(
                    "the server answered the WebSocket's CONNECT (RFC 8441) with HTTP {} {}, \
                     not 2xx",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )),
                status: Some(status.as_u16()),
            });
        }
        let (answer, recv) = response.into_parts();
        Ok((send_stream, recv, answer.headers, status.as_u16()))
    };
    let (send_stream, recv, answer, status) =
        match tokio::time::timeout(ctx.connect_timeout, connect).await {
            Ok(opened) => opened?,
            Err(_) => return Err(OpenFailed {
                class: ErrorClass::ConnectTimeout,
                detail: Some(
                    "the server did not answer the WebSocket's CONNECT within --connect-timeout"
                        .into(),
                ),
                status: None,
            }),
        };
    let io = H2Io::new(send_stream, recv, held);
    let io = WsIo::H2(Box::new(super::deflate::Deflated::new(io)));
    let mut ws = WebSocketStream::from_raw_socket(io, Role::Client, Some(config)).await;
    super::deflate::settle(ctx, &mut ws, offered.as_deref(), &answer, limit)?;
    Ok((ws, status))
}

fn h2_failed(e: h2::Error) -> OpenFailed {
    OpenFailed {
        class: ErrorClass::from_h2(&e),
        detail: Some(format!("the WebSocket's CONNECT (RFC 8441): {e}")),
        status: None,
    }
}

/// The extended CONNECT for `uri`: `:scheme` http or https, `:authority` the URL's (or a
/// `-H host:` field's, as HTTP/2 runs do), `:path` its path and query; the `-H` fields but
/// HTTP/1.1's connection-specific ones, which HTTP/2 forbids. `None`: not a ws(s) URL.
fn connect_request(
    uri: &str,
    headers: &[(http::HeaderName, http::HeaderValue)],
) -> Option<http::Request<()>> {
    let uri: http::Uri = uri.parse().ok()?;
    let scheme = match uri.scheme_str()? {
        s if s.eq_ignore_ascii_case("wss") => "https",
        s if s.eq_ignore_ascii_case("ws") => "http",
        _ => return None,
    };
    let mut authority = uri.authority()?.as_str().to_string();
    let mut request = http::Request::new(());
    for (name, value) in headers {
        if name == http::header::HOST {
            authority = value.to_str().ok()?.to_string();
        } else if name != http::header::SEC_WEBSOCKET_KEY
            && !crate::engine::h2::is_connection_specific(name.as_str())
        {
            // No key over HTTP/2 (RFC 8441 section 5): an HTTP/1.1 upgrade request's
            // (a scenario step's) leaves it behind.
            request.headers_mut().append(name.clone(), value.clone());
        }
    }
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *request.uri_mut() = format!("{scheme}://{authority}{path}").parse().ok()?;
    *request.method_mut() = http::Method::CONNECT;
    request.headers_mut().insert(
        http::header::SEC_WEBSOCKET_VERSION,
        http::HeaderValue::from_static("13"),
    );
    request
        .extensions_mut()
        .insert(h2::ext::Protocol::from_static("websocket"));
    Some(request)
}

#[cfg(test)]
mod tests {
    use super::connect_request;

    #[test]
    fn the_connect_carries_scheme_authority_path_and_protocol() {
        let host = (
            http::header::HOST,
            http::HeaderValue::from_static("example.test"),
        );
        let upgrade = (
            http::header::UPGRADE,
            http::HeaderValue::from_static("websocket"),
        );
        let kept = (
            http::HeaderName::from_static("x-token"),
            http::HeaderValue::from_static("1"),
        );
        let r = connect_request("WSS://127.0.0.1:8443/chat?room=1", &[host, upgrade, kept])
            .expect("a request");
        assert_eq!(r.method(), http::Method::CONNECT);
        assert_eq!(r.uri().to_string(), "https://example.test/chat?room=1");
        assert_eq!(r.headers()["sec-websocket-version"], "13");
        assert_eq!(r.headers()["x-token"], "1");
        assert!(r.headers().get("upgrade").is_none(), "HTTP/2 forbids it");
        let protocol = r
            .extensions()
            .get::<h2::ext::Protocol>()
            .expect(":protocol");
        assert_eq!(protocol.as_str(), "websocket");
        let plain = connect_request("ws://127.0.0.1:80", &[]).expect("a request");
        assert_eq!(plain.uri().to_string(), "http://127.0.0.1:80/");
        assert!(connect_request("http://127.0.0.1/", &[]).is_none());
    }
}
