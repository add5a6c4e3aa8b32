//! The layer alone, over an in-memory pipe: frame headers both ways, the answer's
//! parameters, a compressed message sent in the same write as the 101 (it must not reach
//! tungstenite as the handshake's leftover), messages deflated and inflated with and without
//! context takeover, and a decompression bomb stopped at the limit with the memory bounded.

use super::negotiate::{agreed, offer, Agreed};
use super::read::{Inflating, TAIL};
use super::*;
use flate2::{Compress, Compression, FlushCompress};
use futures_util::{SinkExt as _, StreamExt as _};
use http::HeaderMap;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, DuplexStream};
use tokio_tungstenite::tungstenite::Message;

#[test]
fn headers_round_trip() {
    for len in [0u64, 125, 126, 65_535, 65_536, 1 << 40] {
        for mask in [None, Some([1, 2, 3, 4])] {
            let mut out = [0u8; frame::MAX_HEADER];
            let size = frame::encode(true, true, 2, mask, len, &mut out);
            let h = frame::parse(&out[..size]).unwrap();
            assert_eq!(
                (h.fin, h.rsv1, h.opcode, h.mask, h.len, h.size),
                (true, true, 2, mask, len, size)
            );
            assert!(frame::parse(&out[..size - 1]).is_none());
        }
    }
}

fn answer(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("sec-websocket-extensions", value.parse().unwrap());
    h
}

#[test]
fn the_answer_is_read_against_the_offer() {
    let mut request = HeaderMap::new();
    let ours = offer(&mut request, true).unwrap();
    assert_eq!(ours, "permessage-deflate");
    let ok = |v: &str| agreed(Some(&ours), &answer(v)).unwrap().unwrap();
    assert_eq!(
        ok("permessage-deflate"),
        Agreed {
            server_max_window_bits: 15,
            ..Agreed::default()
        }
    );
    let a = ok("Permessage-Deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=\"10\"");
    assert!(a.server_no_context_takeover && a.client_no_context_takeover);
    assert_eq!(a.server_max_window_bits, 10);
    assert_eq!(agreed(Some(&ours), &HeaderMap::new()).unwrap(), None);
    for (bad, names) in [
        (
            "permessage-deflate; client_max_window_bits=10",
            "client_max_window_bits=10",
        ),
        (
            "permessage-deflate; server_max_window_bits=7",
            "server_max_window_bits",
        ),
        ("permessage-deflate; server_max_window_bits=010", "010"),
        (
            "permessage-deflate; server_max_window_bits",
            "server_max_window_bits",
        ),
        (
            "permessage-deflate; server_no_context_takeover=1",
            "server_no_context_takeover",
        ),
        (
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "twice",
        ),
        ("permessage-deflate; mystery=1", "mystery"),
        ("permessage-deflate, permessage-deflate", "twice"),
        ("x-webkit-deflate-frame", "x-webkit-deflate-frame"),
    ] {
        let why = agreed(Some(&ours), &answer(bad)).unwrap_err();
        assert!(why.contains(names), "{bad}: {why}");
    }
    // Not offered (--ws-no-deflate): an answer naming it fails the connection.
    let mut plain = HeaderMap::new();
    assert_eq!(offer(&mut plain, false), None);
    let why = agreed(None, &answer("permessage-deflate")).unwrap_err();
    assert!(why.contains("did not offer"), "{why}");
    // The caller's own offer stands, and a 15-bit client window it offered may be agreed.
    let mut own = HeaderMap::new();
    own.insert(
        "sec-websocket-extensions",
        "permessage-deflate; client_max_window_bits"
            .parse()
            .unwrap(),
    );
    let theirs = offer(&mut own, true).unwrap();
    assert_eq!(own.get_all("sec-websocket-extensions").iter().count(), 1);
    assert!(agreed(
        Some(&theirs),
        &answer("permessage-deflate; client_max_window_bits=15")
    )
    .unwrap()
    .is_some());
    let why = agreed(
        Some(&theirs),
        &answer("permessage-deflate; client_max_window_bits=9"),
    )
    .unwrap_err();
    assert!(why.contains("15-bit window only"), "{why}");
}

/// A server's deflating, as RFC 7692 says: sync flush, tail stripped.
fn deflate(c: &mut Compress, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 64);
    c.compress_vec(data, &mut out, FlushCompress::Sync).unwrap();
    assert!(out.ends_with(&TAIL));
    out.truncate(out.len() - 4);
    out
}

fn server_frame(fin: bool, rsv1: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut head = [0u8; frame::MAX_HEADER];
    let size = frame::encode(fin, rsv1, opcode, None, payload.len() as u64, &mut head);
    [&head[..size], payload].concat()
}

/// The server's end reads the client's upgrade request, then answers with `reply`.
async fn upgraded(
    server: &mut DuplexStream,
    client: DuplexStream,
    answer_value: &str,
    reply: Vec<u8>,
) -> WebSocketStream<Deflated<DuplexStream>> {
    let mut request = http::Request::get("ws://127.0.0.1/x")
        .header("host", "127.0.0.1")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .body(())
        .unwrap();
    let offered = offer(request.headers_mut(), true);
    let handshake = tokio_tungstenite::client_async(request, Deflated::new(client));
    let serve = async {
        let mut seen = Vec::new();
        while !seen.ends_with(b"\r\n\r\n") {
            let mut b = [0u8; 1];
            server.read_exact(&mut b).await.unwrap();
            seen.push(b[0]);
        }
        assert!(String::from_utf8_lossy(&seen).contains("permessage-deflate"));
        let head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: \
             {answer_value}\r\n\r\n"
        );
        // The 101 and the first frames in one write: tungstenite must not read past the 101.
        server
            .write_all(&[head.as_bytes(), &reply].concat())
            .await
            .unwrap();
    };
    let (done, ()) = tokio::join!(handshake, serve);
    let (mut ws, response) = done.unwrap();
    let a = agreed(offered.as_deref(), response.headers()).unwrap();
    ws.get_mut().agreed(a, 1 << 20, None);
    ws
}

#[tokio::test]
async fn messages_deflate_and_inflate_both_ways() {
    for (answer_value, takeover) in [
        ("permessage-deflate", true),
        (
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
            false,
        ),
    ] {
        let (client, mut server) = tokio::io::duplex(1 << 20);
        let text = "hello hello hello hello, compressed";
        let mut c = Compress::new(Compression::default(), false);
        let first = deflate(&mut c, text.as_bytes());
        if !takeover {
            c.reset();
        }
        let second = deflate(&mut c, text.as_bytes());
        // The first sent with the 101; the second in two fragments with a ping between.
        let (a, b) = second.split_at(second.len() / 2);
        let reply = [
            server_frame(true, true, frame::TEXT, &first),
            server_frame(false, true, frame::TEXT, a),
            server_frame(true, false, 9, b"ping"),
            server_frame(true, false, frame::CONTINUATION, b),
        ]
        .concat();
        let mut ws = upgraded(&mut server, client, answer_value, reply).await;
        assert_eq!(ws.next().await.unwrap().unwrap(), Message::text(text));
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            Message::Ping("ping".into())
        );
        assert_eq!(ws.next().await.unwrap().unwrap(), Message::text(text));

        // Two identical binary messages from the client: RSV1 set, inflating to them; with
        // context takeover the second is shorter (it refers to the first).
        let payload = vec![7u8; 3000];
        let mut d = flate2::Decompress::new(false);
        let mut sizes = Vec::new();
        for _ in 0..2 {
            ws.send(Message::binary(payload.clone())).await.unwrap();
            let mut head = [0u8; 2];
            loop {
                server.read_exact(&mut head).await.unwrap();
                if head[0] & 0x0f == 10 {
                    // The pong to the server's ping.
                    let mut rest = vec![0u8; 4 + (head[1] & 0x7f) as usize];
                    server.read_exact(&mut rest).await.unwrap();
                    continue;
                }
                break;
            }
            assert_eq!(head[0], 0x80 | 0x40 | frame::BINARY, "FIN, RSV1, binary");
            assert!(head[1] & 0x80 != 0, "masked");
            let len = (head[1] & 0x7f) as usize;
            assert!(len < 126);
            let mut rest = vec![0u8; 4 + len];
            server.read_exact(&mut rest).await.unwrap();
            let (key, body) = rest.split_at_mut(4);
            frame::apply_mask(body, key.try_into().unwrap(), 0);
            let mut out = Vec::with_capacity(4096);
            d.decompress_vec(
                &[&body[..], &TAIL].concat(),
                &mut out,
                flate2::FlushDecompress::None,
            )
            .unwrap();
            assert_eq!(out, payload);
            if !takeover {
                d.reset(false);
            }
            sizes.push(len);
        }
        assert_eq!(sizes[1] < sizes[0], takeover, "{answer_value}: {sizes:?}");
    }
}

#[tokio::test]
async fn rsv1_on_a_control_frame_is_a_breach() {
    let (client, mut server) = tokio::io::duplex(1 << 16);
    let reply = server_frame(true, true, 9, b"x");
    let mut ws = upgraded(&mut server, client, "permessage-deflate", reply).await;
    let e = ws.next().await.unwrap().unwrap_err();
    let (class, detail, _) = crate::ws::classify(&e);
    assert_eq!(class, ErrorClass::WsProtocolError);
    assert!(detail.unwrap().contains("RSV1 on a control frame"));
}

#[tokio::test]
async fn a_compressed_frame_over_the_limit_fails_unread() {
    let (client, mut server) = tokio::io::duplex(1 << 16);
    let mut head = [0u8; frame::MAX_HEADER];
    let size = frame::encode(true, true, frame::BINARY, None, 1 << 40, &mut head);
    let mut ws = upgraded(
        &mut server,
        client,
        "permessage-deflate",
        head[..size].to_vec(),
    )
    .await;
    // The server goes: without the bound the layer would wait for the frame's payload.
    drop(server);
    let e = ws.next().await.unwrap().unwrap_err();
    let (class, detail, _) = crate::ws::classify(&e);
    assert_eq!(class, ErrorClass::WsProtocolError);
    let detail = detail.unwrap();
    assert!(
        detail.contains("compressed frame of 1099511627776 bytes, over the 1048576"),
        "{detail}"
    );
}

/// A bomb: 64 MiB of zeros in about 64 KiB, against a 1 MiB limit. Inflating stops there,
/// having held no more than the limit.
#[test]
fn a_bomb_stops_at_the_limit_with_its_memory() {
    let limit = 1 << 20;
    let mut inflating = Inflating::new(limit, false);
    let mut c = Compress::new(Compression::best(), false);
    let zeros = vec![0u8; 1 << 20];
    let mut bomb = Vec::new();
    for _ in 0..64 {
        bomb.reserve(64 << 10);
        c.compress_vec(&zeros, &mut bomb, FlushCompress::None)
            .unwrap();
    }
    let e = inflating.inflate_for_test(&bomb).unwrap_err();
    assert!(
        e.to_string()
            .contains("inflates to more than the 1048576 bytes"),
        "{e}"
    );
    assert!(
        inflating.held_bytes() <= limit + 16 + 64,
        "{}",
        inflating.held_bytes()
    );
}
