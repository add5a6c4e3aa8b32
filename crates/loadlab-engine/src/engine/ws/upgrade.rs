//! A WebSocket opened for a caller that brings its own upgrade request (a scenario's
//! WebSocket step: its URL, its header fields): dialled as every connection of the run is
//! (`exchange::dial`: TCP, then the run's TLS), upgraded by tungstenite within
//! `--connect-timeout`, each failure classed as a `--ws-mode` run's (`crate::ws::classify`);
//! and its goodbye. It records nothing but the connect's figures.

use super::{deflate, OpenFailed, WsIo};
use crate::engine::exchange::{dial, Dialer};
use crate::engine::ThreadCtx;
use crate::error::ErrorClass;
use crate::stats::Phase;
use crate::ws::classify;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

/// Dials the run's target and upgrades the connection with `request`.
pub(in crate::engine) async fn upgrade(
    ctx: &ThreadCtx,
    phase: Phase,
    mut request: http::Request<()>,
    config: WebSocketConfig,
) -> Result<WebSocketStream<WsIo>, OpenFailed> {
    let offered = deflate::offer(ctx, request.headers_mut());
    let limit = config
        .max_message_size
        .unwrap_or(crate::ws::MAX_MESSAGE_BYTES);
    let started = Instant::now();
    let (dialed, stream) = dial(&Dialer::of(ctx)).await;
    if let Some(d) = dialed {
        d.record(ctx, phase);
    }
    let stream = stream.map_err(|(class, detail)| OpenFailed {
        class,
        detail,
        status: None,
    })?;
    let budget = ctx.connect_timeout.saturating_sub(started.elapsed());
    let stream = WsIo::Dialled(deflate::Deflated::new(stream));
    let upgrade = tokio_tungstenite::client_async_with_config(request, stream, Some(config));
    match tokio::time::timeout(budget, upgrade).await {
        Ok(Ok((mut ws, response))) => {
            deflate::settle(ctx, &mut ws, offered.as_deref(), response.headers(), limit)?;
            Ok(ws)
        }
        Ok(Err(e)) => {
            let (class, detail, status) = classify(&e);
            Err(OpenFailed {
                class,
                detail,
                status,
            })
        }
        Err(_) => Err(OpenFailed {
            class: ErrorClass::ConnectTimeout,
            detail: Some("the server did not answer the upgrade within --connect-timeout".into()),
            status: None,
        }),
    }
}

/// Says goodbye (close code 1000) and waits a little for the server's close in answer, so
/// that neither side resets the connection.
pub(in crate::engine) async fn goodbye(ws: &mut WebSocketStream<WsIo>) {
    use futures_util::StreamExt as _;
    let _ = tokio::time::timeout(Duration::from_millis(200), async {
        ws.close(None).await?;
        while ws.next().await.transpose()?.is_some() {}
        Ok::<(), tokio_tungstenite::tungstenite::Error>(())
    })
    .await;
}
