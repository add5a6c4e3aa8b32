//! The mock upstream reads a request's body before it answers (issue 29): a client sending a
//! 1 MiB POST, with `Expect: 100-continue` and without, gets its answer and can send the next
//! request on the same connection (answered before the body was read, the client's upload
//! was cut by a reset).

use loadlab_upstream::{Upstream, UpstreamConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const BODY_BYTES: usize = 1 << 20;

/// Reads one response with a Content-Length body; returns its head.
async fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> String {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse().ok())?
                })
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                buf.drain(..end + 4 + length);
                return head;
            }
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.expect("read the answer");
        assert!(n > 0, "the upstream closed the connection; so far: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test]
async fn a_large_post_is_read_before_the_answer_and_the_connection_goes_on() {
    let upstream = Upstream::start(UpstreamConfig::default()).await.unwrap();
    let addr = upstream
        .url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let mut buf = Vec::new();
    let body = vec![b'x'; BODY_BYTES];

    // Expect: 100-continue: the upstream says 100 Continue, takes the body, then answers.
    let head = format!(
        "POST /upload HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {BODY_BYTES}\r\nExpect: 100-continue\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let interim = read_response(&mut stream, &mut buf).await;
    assert!(interim.starts_with("HTTP/1.1 100"), "{interim}");
    stream
        .write_all(&body)
        .await
        .expect("the upstream takes the whole body");
    let answer = read_response(&mut stream, &mut buf).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // Without Expect: the body follows the head at once.
    let head =
        format!("POST /upload HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {BODY_BYTES}\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream
        .write_all(&body)
        .await
        .expect("the upstream takes the whole body");
    let answer = read_response(&mut stream, &mut buf).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // The same connection answers the next request.
    let get = format!("GET /next HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(get.as_bytes()).await.unwrap();
    let answer = read_response(&mut stream, &mut buf).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let stats = upstream.stats();
    assert_eq!((stats.requests, stats.connections), (3, 1), "{stats:?}");
}
