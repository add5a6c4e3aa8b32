//! Plain HTTP (no TLS) for the targets that serve a hyper service from an accept loop of
//! their own: each connection served by hyper-util's `auto` builder, HTTP/1.1, or HTTP/2 by
//! prior knowledge (h2c: a connection that opens with HTTP/2's preface), which is how a gRPC
//! client reaches the contract's gRPC service without TLS. The same builder `axum::serve`
//! and `warp::serve` use; it reads the first bytes to choose and then serves HTTP/1.1 as
//! hyper's `http1` builder does. Nothing here knows about a framework.

use crate::startup::Error;
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// Serves plain HTTP on `listener` forever, each connection in its own task, answered by
/// `make_service()` over HTTP/1.1 or h2c.
pub async fn serve<M, S, B>(listener: TcpListener, make_service: M) -> Result<(), Error>
where
    M: Fn() -> S,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let stream = accept(&listener).await;
        let service = make_service();
        tokio::spawn(async move {
            // Errors here are a client going away mid-request; nothing to do about them.
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The next connection, with `TCP_NODELAY` set. An accept that fails (out of file
/// descriptors and the like) is reported and retried shortly: the connections already open
/// keep being served.
pub(crate) async fn accept(listener: &TcpListener) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                return stream;
            }
            Err(err) => {
                eprintln!("accept failed: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}
