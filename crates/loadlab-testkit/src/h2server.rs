//! An HTTP/2 server (h2c, prior knowledge, or h2 over TLS) that counts connections, requests
//! and the most streams any one connection had open at once, and can misbehave: GOAWAY after
//! some requests on each connection, or RST_STREAM on every n-th stream.

use crate::background::Background;
use crate::TestCa;
use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Copy, Default)]
pub struct H2Behavior {
    /// After this many requests on a connection, send GOAWAY (graceful) and close it.
    pub goaway_after: Option<u64>,
    /// Reset every n-th stream (counted across the server) with INTERNAL_ERROR.
    pub reset_every: Option<u64>,
    /// Advertise this SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_concurrent_streams: Option<u32>,
    /// Send this `Alt-Svc` header with every response (`h3=":443"`: an HTTP/3 offer).
    pub alt_svc: Option<&'static str>,
    /// Go away on every connection before any request (GOAWAY with NO_ERROR and last stream
    /// id 0: nothing processed, every request may be sent again elsewhere).
    pub go_away_at_once: bool,
}

#[derive(Debug, Default)]
pub struct H2Counters {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub answered: AtomicU64,
    pub max_streams_on_one_connection: AtomicU64,
}

pub struct H2Server {
    counters: Arc<H2Counters>,
    /// Stops the server when dropped.
    background: Background,
}

impl H2Server {
    /// h2c: HTTP/2 over plain TCP, prior knowledge.
    pub fn start(behavior: H2Behavior) -> H2Server {
        Self::start_with(behavior, None)
    }

    /// h2 over TLS, agreed by ALPN, with a certificate from `ca`.
    pub fn start_tls(behavior: H2Behavior, ca: &TestCa) -> H2Server {
        let mut config = (*ca.server_config()).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Self::start_with(behavior, Some(Arc::new(config)))
    }

    fn start_with(behavior: H2Behavior, tls: Option<Arc<rustls::ServerConfig>>) -> H2Server {
        let counters = Arc::new(H2Counters::default());
        let c = counters.clone();
        let counted = counters.clone();
        let background = Background::serve_each_tls(
            tls,
            move || {
                counted.connections.fetch_add(1, Ordering::SeqCst);
            },
            move |io| serve(io, behavior, c.clone()),
        );
        H2Server {
            counters,
            background,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.background.addr
    }

    pub fn counters(&self) -> &H2Counters {
        &self.counters
    }
}

async fn serve<T>(io: T, behavior: H2Behavior, c: Arc<H2Counters>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    if let Some(n) = behavior.max_concurrent_streams {
        builder.max_concurrent_streams(n);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    if behavior.go_away_at_once {
        conn.abrupt_shutdown(h2::Reason::NO_ERROR);
        // Driven to its end (the GOAWAY written, the connection closed); nothing accepted.
        while let Some(Ok(_)) = conn.accept().await {}
        return;
    }
    let open = Arc::new(AtomicU64::new(0));
    let mut on_this_connection = 0u64;
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let n = c.requests.fetch_add(1, Ordering::SeqCst) + 1;
        on_this_connection += 1;
        let now_open = open.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_streams_on_one_connection
            .fetch_max(now_open, Ordering::SeqCst);
        let (c2, open2) = (c.clone(), open.clone());
        tokio::spawn(async move {
            // Drain the request body first, as a real server would.
            let mut body = request.into_body();
            while let Some(Ok(chunk)) = body.data().await {
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            // Hold the stream a moment so concurrent streams overlap.
            tokio::task::yield_now().await;
            if behavior.reset_every.is_some_and(|k| n.is_multiple_of(k)) {
                respond.send_reset(h2::Reason::INTERNAL_ERROR);
            } else {
                let mut response = http::Response::builder().status(200);
                if let Some(alt_svc) = behavior.alt_svc {
                    response = response.header(http::header::ALT_SVC, alt_svc);
                }
                let response = response.body(()).unwrap();
                if let Ok(mut send) = respond.send_response(response, false) {
                    let _ = send.send_data(Bytes::from_static(b"Hello, HTTP/2!"), true);
                    c2.answered.fetch_add(1, Ordering::SeqCst);
                }
            }
            open2.fetch_sub(1, Ordering::SeqCst);
        });
        if behavior
            .goaway_after
            .is_some_and(|k| on_this_connection >= k)
        {
            conn.graceful_shutdown();
        }
    }
}
