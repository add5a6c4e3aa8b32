//! A server's accept loop on a thread of its own, with its own current-thread runtime, so it
//! never shares an event loop with the engine under test. Dropping the handle stops the loop
//! and the runtime, which closes every connection still open.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

/// A served connection: TCP, or TLS over it.
pub(crate) trait Conn: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Conn for T {}

pub(crate) struct Background {
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Binds 127.0.0.1:0 and runs `accept_loop(listener)` until dropped.
    pub fn start<F, Fut>(accept_loop: F) -> Background
    where
        F: FnOnce(TcpListener) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        Background::start_on(0, accept_loop)
    }

    /// [`Background::start`] on 127.0.0.1:`port` (0: any free one), for a server standing in
    /// for one that was told its port.
    pub fn start_on<F, Fut>(port: u16, accept_loop: F) -> Background
    where
        F: FnOnce(TcpListener) -> Fut + Send + 'static,
        Fut: Future<Output = ()>,
    {
        let std_listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"));
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local addr");
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).expect("listener");
                tokio::select! {
                    _ = accept_loop(listener) => {}
                    _ = rx => {}
                }
            });
        });
        Background {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Background {
    /// Binds 127.0.0.1:0 and hands every accepted connection (with Nagle off) to
    /// `on_connection`, which returns the task that serves it; until dropped.
    pub fn serve_each<F, Fut>(mut on_connection: F) -> Background
    where
        F: FnMut(tokio::net::TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Background::start(move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(on_connection(stream));
            }
        })
    }

    /// Binds 127.0.0.1:0 and serves every accepted connection with `serve`, over TLS with
    /// `tls` when given (a handshake the client aborts is the client's test: dropped), plain
    /// TCP otherwise; `accepted` is told of each connection as it is accepted, before TLS.
    pub fn serve_each_tls<A, F, Fut>(
        tls: Option<Arc<rustls::ServerConfig>>,
        accepted: A,
        serve: F,
    ) -> Background
    where
        A: Fn() + Send + 'static,
        F: Fn(Box<dyn Conn>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let serve = Arc::new(serve);
        Background::start(move |listener| async move {
            let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                accepted();
                let (serve, acceptor) = (serve.clone(), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        Some(a) => {
                            if let Ok(tls) = a.accept(tcp).await {
                                serve(Box::new(tls)).await;
                            }
                        }
                        None => serve(Box::new(tcp)).await,
                    }
                });
            }
        })
    }

    /// An `http://` URL for `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
