//! HTTP/3 for actix-web (capability `http3`, `../../CONTRACT.md`): actix-web has no HTTP/3
//! of its own, and its `App` is not a hyper `Service` (nor `Send`), so `lab_common::h3::serve`
//! cannot take it. Here the QUIC endpoint is `lab_common::h3::endpoint`'s (the HTTPS
//! certificate, the TCP port's number over UDP) and each connection is handed, in turn, to
//! one of `workers` arbiters (single-threaded runtimes, as actix-web's own workers are),
//! where the same `App` the TCP workers build answers its requests: each request becomes an
//! `actix_http::Request` (its body the h3 stream's DATA frames) and the response goes back
//! with `Date` and `Content-Length`, as actix-web adds them over HTTP/1.1 and HTTP/2.
//!
//! actix-web speaks `http` 0.2 and h3 `http` 1: method, URI, headers and status cross by
//! their text. It must not answer anything itself.

use actix_http::body::MessageBody;
use actix_http::{Payload, Request};
use actix_rt::{Arbiter, ArbiterHandle};
use actix_service::{IntoServiceFactory, Service, ServiceFactory};
use actix_web::dev::AppConfig;
use actix_web::error::PayloadError;
use bytes::{Buf, Bytes};
use futures_core::Stream;
use lab_common::startup::Error;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

type H3Stream<S> = h3::server::RequestStream<S, Bytes>;

/// What `HttpServer::new`'s factory makes (an `App`'s), as this module needs it: one name for
/// the bounds both functions share.
pub trait AppFactory:
    ServiceFactory<
        Request,
        Config = AppConfig,
        Response = actix_web::dev::ServiceResponse<Self::Body>,
        Error = actix_web::Error,
        InitError = (),
    > + 'static
{
    type Body: MessageBody + 'static;
}

impl<S, B> AppFactory for S
where
    S: ServiceFactory<
            Request,
            Config = AppConfig,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
            InitError = (),
        > + 'static,
    B: MessageBody + 'static,
{
    type Body = B;
}

/// Serves HTTP/3 on `addr` (the HTTPS listener's) over UDP with `tls`, each connection by an
/// `App` from `make_app` on one of `workers` arbiters. Call it inside actix's `System`; it
/// returns once the endpoint is bound (the accept loop runs on the calling arbiter).
pub fn spawn<F, I, S>(
    addr: SocketAddr,
    tls: &rustls::ServerConfig,
    workers: usize,
    make_app: F,
) -> Result<(), Error>
where
    F: Fn() -> I + Send + Clone + 'static,
    I: IntoServiceFactory<S, Request> + 'static,
    S: AppFactory,
{
    let endpoint = lab_common::h3::endpoint(addr, tls)?;
    let arbiters: Vec<Arbiter> = (0..workers.max(1)).map(|_| Arbiter::new()).collect();
    let handles: Vec<ArbiterHandle> = arbiters.iter().map(Arbiter::handle).collect();
    actix_web::rt::spawn(async move {
        // The arbiters live as long as the accept loop.
        let _arbiters = arbiters;
        let mut next = 0;
        while let Some(incoming) = endpoint.accept().await {
            let make_app = make_app.clone();
            handles[next].spawn_fn(move || {
                actix_web::rt::spawn(connection(incoming, make_app));
            });
            next = (next + 1) % handles.len();
        }
    });
    Ok(())
}

/// One QUIC connection on this arbiter: its own `App` (as each TCP worker has one), each
/// request in a task of its own.
async fn connection<F, I, S>(incoming: quinn::Incoming, make_app: F)
where
    F: Fn() -> I,
    I: IntoServiceFactory<S, Request>,
    S: AppFactory,
{
    // A handshake that fails, or a client that leaves, is the client's business.
    let Ok(quic) = incoming.await else {
        return;
    };
    let service = match make_app()
        .into_factory()
        .new_service(AppConfig::default())
        .await
    {
        Ok(service) => Rc::new(service),
        Err(e) => {
            eprintln!("rust-actix-web: HTTP/3: the App did not start: {e:?}");
            return;
        }
    };
    let Ok(mut h3) = h3::server::Connection::<_, Bytes>::new(h3_quinn::Connection::new(quic)).await
    else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        let service = service.clone();
        actix_web::rt::spawn(async move {
            let Ok((head, stream)) = resolver.resolve_request().await else {
                return;
            };
            let (send, recv) = stream.split();
            let Some(request) = to_actix(head, recv) else {
                let mut send = send;
                send.stop_stream(h3::error::Code::H3_MESSAGE_ERROR);
                return;
            };
            let _ = answer(send, service.call(request)).await;
        });
    }
}

/// The request as actix-web reads it; `None` for a method, URI or header `http` 0.2 refuses.
fn to_actix(head: http::Request<()>, recv: H3Stream<h3_quinn::RecvStream>) -> Option<Request> {
    use actix_web::http::header::{HeaderName, HeaderValue};
    let body: actix_http::BoxedPayloadStream = Box::pin(H3Payload { recv, done: false });
    let mut request = Request::with_payload(Payload::Stream { payload: body });
    let (parts, ()) = head.into_parts();
    let actix = request.head_mut();
    actix.method = actix_web::http::Method::from_bytes(parts.method.as_str().as_bytes()).ok()?;
    actix.uri = parts.uri.to_string().parse().ok()?;
    actix.version = actix_web::http::Version::HTTP_3;
    for (name, value) in &parts.headers {
        actix.headers.append(
            HeaderName::from_bytes(name.as_str().as_bytes()).ok()?,
            HeaderValue::from_bytes(value.as_bytes()).ok()?,
        );
    }
    Some(request)
}

/// Sends actix-web's response: its status and headers (with `Date` and `Content-Length`),
/// then its body as one DATA frame (the contract's bodies are built whole).
async fn answer<Fut, B, E>(
    mut send: H3Stream<h3_quinn::SendStream<Bytes>>,
    response: Fut,
) -> Result<(), h3::error::StreamError>
where
    Fut: std::future::Future<Output = Result<actix_web::dev::ServiceResponse<B>, E>>,
    B: MessageBody,
    E: std::fmt::Debug,
{
    let response = match response.await {
        Ok(response) => response.into_parts().1,
        Err(e) => {
            eprintln!("rust-actix-web: HTTP/3: the App failed: {e:?}");
            send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            return Ok(());
        }
    };
    let mut head = http::Response::builder().status(response.status().as_u16());
    for (name, value) in response.headers() {
        head = head.header(name.as_str(), value.as_bytes());
    }
    let body = match actix_web::body::to_bytes(response.into_body()).await {
        Ok(body) => body,
        Err(_) => {
            send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            return Ok(());
        }
    };
    let Ok(mut head) = head.body(()) else {
        send.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
        return Ok(());
    };
    lab_common::h3::add_date(head.headers_mut());
    head.headers_mut()
        .insert(http::header::CONTENT_LENGTH, body.len().into());
    send.send_response(head).await?;
    if !body.is_empty() {
        send.send_data(body).await?;
    }
    send.finish().await
}

/// A request's body as actix-web reads it: the h3 stream's DATA frames.
struct H3Payload {
    recv: H3Stream<h3_quinn::RecvStream>,
    done: bool,
}

/// A body the `App` did not read to its end: the client is asked to stop sending with
/// H3_NO_ERROR (RFC 9114 4.1), as `lab_common::h3::H3Body` does.
impl Drop for H3Payload {
    fn drop(&mut self) {
        if !self.done {
            self.recv.stop_sending(h3::error::Code::H3_NO_ERROR);
        }
    }
}

impl Stream for H3Payload {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.recv.poll_recv_data(cx) {
            Poll::Ready(Ok(Some(mut data))) => {
                let n = data.remaining();
                Poll::Ready(Some(Ok(data.copy_to_bytes(n))))
            }
            Poll::Ready(Ok(None)) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => {
                self.done = true;
                Poll::Ready(Some(Err(PayloadError::Io(std::io::Error::other(e)))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
