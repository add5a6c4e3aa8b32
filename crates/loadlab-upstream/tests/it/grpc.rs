//! The mock upstream's gRPC side over real loopback sockets, driven by tonic's own client: a
//! channel shared by every call is one connection however many calls it carries; a channel per
//! call is a connection per call; HTTP/1.1 and gRPC share the port and are counted apart;
//! each streaming method answers as its comment in the .proto says, every message counted.

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use loadlab_upstream::grpc::CALL_PATH;
use loadlab_upstream::{Stats, Upstream, UpstreamConfig, UpstreamHandle};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::{Channel, Endpoint};
use tonic_prost::ProstCodec;

async fn channel(upstream: &UpstreamHandle) -> Channel {
    Endpoint::from_shared(upstream.grpc_url())
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// One unary call to `path` (Empty in, BytesValue out), as generated client code makes it.
async fn call_path(channel: &Channel, path: &'static str) -> Result<Bytes, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready()
        .await
        .map_err(|e| tonic::Status::unavailable(e.to_string()))?;
    let codec = ProstCodec::<(), Bytes>::default();
    let reply = grpc
        .unary(
            tonic::Request::new(()),
            PathAndQuery::from_static(path),
            codec,
        )
        .await?;
    Ok(reply.into_inner())
}

async fn call(channel: &Channel) -> Bytes {
    call_path(channel, CALL_PATH).await.unwrap()
}

#[tokio::test]
async fn one_channel_is_one_connection_however_many_calls() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let pooled = channel(&upstream).await;
    for calls in [1u64, 8, 32] {
        let before = upstream.stats();
        for _ in 0..calls {
            assert_eq!(call(&pooled).await, Bytes::from_static(b"ok"));
        }
        let delta = upstream.stats().since(&before);
        assert_eq!(delta.grpc_requests, calls, "{delta:?}");
        assert_eq!(
            delta.grpc_streams, calls,
            "one stream per unary call: {delta:?}"
        );
        // The first batch opens the channel's connection; later ones only reuse it.
        let expected_connections = u64::from(calls == 1);
        assert_eq!(delta.grpc_connections, expected_connections, "{delta:?}");
    }
    let total = upstream.stats();
    assert_eq!(total.grpc_connections, 1);
    assert_eq!(total.grpc_reuse_ratio(), Some(41.0));
    assert_eq!(
        (total.requests, total.connections),
        (0, 0),
        "no HTTP/1.1 traffic"
    );
}

#[tokio::test]
async fn a_channel_per_call_opens_a_connection_per_call() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    for _ in 0..8 {
        let per_call = channel(&upstream).await;
        assert_eq!(call(&per_call).await, Bytes::from_static(b"ok"));
    }
    assert_eq!(
        upstream.stats(),
        Stats {
            grpc_requests: 8,
            grpc_connections: 8,
            grpc_streams: 8,
            grpc_messages_received: 8,
            grpc_messages_sent: 8,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn http_and_grpc_share_the_port_and_are_counted_apart() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let http = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let response = http.get(upstream.url().parse().unwrap()).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"ok");
    let grpc = channel(&upstream).await;
    call(&grpc).await;
    call(&grpc).await;
    assert_eq!(
        upstream.stats(),
        Stats {
            requests: 1,
            connections: 1,
            grpc_requests: 2,
            grpc_connections: 1,
            grpc_streams: 2,
            grpc_messages_received: 2,
            grpc_messages_sent: 2,
            ..Stats::default()
        }
    );
}

#[tokio::test]
async fn another_method_is_unimplemented_and_only_a_stream() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let grpc = channel(&upstream).await;
    let status = call_path(&grpc, "/loadlab.upstream.v1.Upstream/Other")
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status:?}");
    assert!(status.message().contains(CALL_PATH), "{status:?}");
    let stats = upstream.stats();
    assert_eq!(
        (
            stats.grpc_requests,
            stats.grpc_connections,
            stats.grpc_streams
        ),
        (0, 0, 1)
    );
}

#[tokio::test]
async fn a_preface_split_over_two_writes_is_still_http2() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let mut raw = tokio::net::TcpStream::connect(upstream.addr())
        .await
        .unwrap();
    raw.set_nodelay(true).unwrap();
    raw.write_all(b"PR").await.unwrap();
    tokio::task::yield_now().await;
    raw.write_all(b"I * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .unwrap();
    // An empty SETTINGS frame completes the client preface.
    raw.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
    // The server's preface is a SETTINGS frame (type 4 on stream 0), not an HTTP/1.1 answer.
    let mut header = [0u8; 9];
    raw.read_exact(&mut header).await.unwrap();
    assert_eq!(header[3], 4, "frame type SETTINGS: {header:?}");
    assert_eq!(&header[5..9], &[0, 0, 0, 0], "stream 0: {header:?}");
}

#[tokio::test]
async fn every_call_waits_at_least_the_configured_delay() {
    let delay = Duration::from_millis(60);
    let upstream = Upstream::start(UpstreamConfig::with_delay(delay))
        .await
        .unwrap();
    let grpc = channel(&upstream).await;
    let started = Instant::now();
    for _ in 0..3 {
        call(&grpc).await;
    }
    // A lower bound only: a timer never fires early, so this cannot flake.
    assert!(started.elapsed() >= delay * 3, "{:?}", started.elapsed());
}

#[tokio::test]
async fn streaming_methods_count_every_message() {
    use loadlab_upstream::grpc_streams::{CHAT_PATH, COLLECT_PATH, STREAM_PATH};
    use tonic::codegen::tokio_stream::{self, StreamExt as _};
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let ch = channel(&upstream).await;
    let mut grpc = tonic::client::Grpc::new(ch);
    grpc.ready().await.unwrap();
    // Stream(5): five answers, then OK.
    let answers = grpc
        .server_streaming(
            tonic::Request::new(5u32),
            PathAndQuery::from_static(STREAM_PATH),
            ProstCodec::<u32, Bytes>::default(),
        )
        .await
        .unwrap()
        .into_inner();
    let answers: Vec<Bytes> = answers.map(Result::unwrap).collect().await;
    assert_eq!(answers, vec![Bytes::from_static(b"ok"); 5]);
    // Collect: the count of the client's messages.
    grpc.ready().await.unwrap();
    let count = grpc
        .client_streaming(
            tonic::Request::new(tokio_stream::iter(vec![(); 7])),
            PathAndQuery::from_static(COLLECT_PATH),
            ProstCodec::<(), u32>::default(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(count, 7);
    // Chat: one answer per message.
    grpc.ready().await.unwrap();
    let echoed = grpc
        .streaming(
            tonic::Request::new(tokio_stream::iter(vec![(); 3])),
            PathAndQuery::from_static(CHAT_PATH),
            ProstCodec::<(), Bytes>::default(),
        )
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        echoed.map(Result::unwrap).collect::<Vec<_>>().await.len(),
        3
    );
    let stats = upstream.stats();
    assert_eq!(
        (
            stats.grpc_requests,
            stats.grpc_connections,
            stats.grpc_streams
        ),
        (3, 1, 3)
    );
    // In: 1 + 7 + 3; out: 5 + 1 + 3.
    assert_eq!(
        (stats.grpc_messages_received, stats.grpc_messages_sent),
        (11, 9)
    );
}
