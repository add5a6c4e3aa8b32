//! HTTP/2 over an open connection: ALPN checked, the server's preface checked, the h2
//! crate's handshake with loadlab's settings, and the connection's driver spawned (or given
//! back to a caller that needs it first).

use super::counted::WireBytes;
use crate::engine::exchange::{Io, Stream};
use crate::error::ErrorClass;
use bytes::Bytes;
use h2::client::SendRequest;
use std::rc::Rc;

/// The h2 crate's budget for small DATA frames buffered unread on a connection (each under
/// 256 bytes costs 256 minus its size), past which it closes the connection with
/// ENHANCE_YOUR_CALM. Its default, at least 25,600, is about a hundred tiny frames: a gRPC
/// server streaming small messages a frame each (grpcio does) outruns a busy generator
/// thread by that much at once, and bench/vs-ghz.sh saw every connection closed. 4 MiB is
/// some 16,000 such frames: still a bound on what a hostile server can make loadlab hold.
const SMALL_DATA_FRAME_BUDGET: usize = 4 << 20;

/// HTTP/2 over an open connection (`tls`: agreed by ALPN, which is checked): the handshake,
/// with the connection's driver spawned on the thread's task set. A failure comes back as its
/// class and what to tell the user; nothing is recorded here.
pub(in crate::engine) async fn handshake(
    io: Stream,
    tls: bool,
    wire: Rc<WireBytes>,
) -> Result<SendRequest<Bytes>, (ErrorClass, String)> {
    let (send, connection) = handshake_unspawned(io, tls, wire).await?;
    tokio::task::spawn_local(async move {
        let _ = connection.await;
    });
    Ok(send)
}

/// An HTTP/2 connection's driver, as [`handshake_unspawned`] gives it.
pub(in crate::engine) type Driver = h2::client::Connection<
    crate::engine::h2_preface::CheckedPreface<super::counted::Counted<Stream>>,
    Bytes,
>;

/// [`handshake`], its driver given back unspawned: a caller that needs its ping handle
/// (WebSockets over HTTP/2 wait for the server's SETTINGS by a ping) takes it first.
pub(in crate::engine) async fn handshake_unspawned(
    io: Stream,
    tls: bool,
    wire: Rc<WireBytes>,
) -> Result<(SendRequest<Bytes>, Driver), (ErrorClass, String)> {
    if let Io::Tls(tls) = &io.io {
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err((
                ErrorClass::ProtocolError,
                "the server did not agree to h2 by ALPN: it may not speak HTTP/2 over TLS".into(),
            ));
        }
    }
    let io =
        crate::engine::h2_preface::CheckedPreface::new(super::counted::Counted::new(io, wire), tls);
    // One stream until the server's first SETTINGS frame says how many it takes: the h2
    // crate otherwise assumes no limit, and streams opened before SETTINGS arrive beyond
    // the server's MAX_CONCURRENT_STREAMS are refused (REFUSED_STREAM; the interop matrix
    // saw 68-84 of 2,000 against nginx, Apache, HAProxy). SETTINGS without a limit lift it.
    let mut builder = h2::client::Builder::new();
    builder.initial_max_send_streams(1);
    builder.data_frame_budget(SMALL_DATA_FRAME_BUDGET);
    builder
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| (ErrorClass::from_h2(&e), format!("HTTP/2 handshake: {e}")))
}
