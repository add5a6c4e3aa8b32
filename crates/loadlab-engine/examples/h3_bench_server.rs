//! The server of `bench/vs-h3.sh`: HTTPS on one port number, HTTP/2 over TCP (ALPN h2) and
//! HTTP/3 over UDP, answering every request 200 with a short body, on one thread (the bench
//! pins it to a core), so that loadlab's HTTP/3 and HTTP/2 meet the same server. It counts
//! the requests it answered; `GET /__count` answers that count (and is not counted), so the
//! bench checks each generator's count against the server's.
//!
//! It is a bench fixture, not a server to measure: no logging, no routing, no limits.
//!
//! ```text
//! cargo run --release -p loadlab-engine --example h3_bench_server -- PORT CERT.pem KEY.pem
//! ```

use bytes::Bytes;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const BODY: &[u8] = b"hello from the h3 bench server\n";

static ANSWERED: AtomicU64 = AtomicU64::new(0);

/// The response to `path`: the count for `/__count`, else the fixed body (counted).
fn answer(path: &str) -> Bytes {
    if path == "/__count" {
        Bytes::from(format!("{}\n", ANSWERED.load(Ordering::Relaxed)))
    } else {
        ANSWERED.fetch_add(1, Ordering::Relaxed);
        Bytes::from_static(BODY)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, port, cert, key] = args.as_slice() else {
        eprintln!("usage: h3_bench_server PORT CERT.pem KEY.pem");
        std::process::exit(2);
    };
    let port: u16 = port.parse().expect("PORT is a number");
    let chain = CertificateDer::pem_file_iter(cert)
        .expect("CERT.pem readable")
        .collect::<Result<Vec<_>, _>>()
        .expect("CERT.pem holds certificates");
    let key = PrivateKeyDer::from_pem_file(key).expect("KEY.pem holds a private key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("certificate and key fit");
    let mut h2_tls = tls.clone();
    h2_tls.alpn_protocols = vec![b"h2".to_vec()];
    let mut h3_tls = tls;
    h3_tls.alpn_protocols = vec![b"h3".to_vec()];
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let tcp = tokio::net::TcpListener::bind(addr).await.expect("TCP port");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(h2_tls));
        tokio::spawn(async move {
            while let Ok((socket, _)) = tcp.accept().await {
                let _ = socket.set_nodelay(true);
                tokio::spawn(serve_h2(acceptor.clone(), socket));
            }
        });
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(h3_tls).expect("QUIC TLS");
        let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport.max_concurrent_bidi_streams(1_000u32.into());
        config.transport_config(Arc::new(transport));
        let endpoint = quinn::Endpoint::server(config, addr).expect("UDP port");
        eprintln!("h3_bench_server: https://localhost:{port}/ over HTTP/2 (TCP) and HTTP/3 (UDP)");
        while let Some(incoming) = endpoint.accept().await {
            tokio::spawn(serve_h3(incoming));
        }
    });
}

async fn serve_h2(acceptor: tokio_rustls::TlsAcceptor, socket: tokio::net::TcpStream) {
    let Ok(tls) = acceptor.accept(socket).await else {
        return;
    };
    let Ok(mut connection) = h2::server::handshake(tls).await else {
        return;
    };
    while let Some(Ok((request, mut respond))) = connection.accept().await {
        let body = answer(request.uri().path());
        let response = http::Response::builder().status(200).body(()).unwrap();
        if let Ok(mut send) = respond.send_response(response, false) {
            let _ = send.send_data(body, true);
        }
    }
}

async fn serve_h3(incoming: quinn::Incoming) {
    let Ok(connection) = incoming.await else {
        return;
    };
    let Ok(mut h3) = ::h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(connection))
        .await
    else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        tokio::spawn(async move {
            let Ok((request, mut stream)) = resolver.resolve_request().await else {
                return;
            };
            let body = answer(request.uri().path());
            let response = http::Response::builder().status(200).body(()).unwrap();
            if stream.send_response(response).await.is_ok() {
                let _ = stream.send_data(body).await;
                let _ = stream.finish().await;
            }
        });
    }
}
