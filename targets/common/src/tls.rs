//! HTTPS for the Rust targets (`TLS_CERT`, `TLS_KEY`): rustls, the TLS stack the Rust web
//! frameworks document for production, with the ring provider. The server configuration is
//! rustls's defaults (TLS 1.2 and 1.3, its in-memory session cache, which resumes TLS 1.2
//! session ids and TLS 1.3 tickets) plus ALPN `h2` and `http/1.1`. The accept loop serves each
//! connection with hyper-util's `auto` builder, HTTP/1.1 or HTTP/2 as ALPN chose, the way the
//! axum and hyper examples serve TLS (`low-level-rustls`): frameworks with a TLS server of
//! their own (actix-web) use it instead, with [`server_config`].
//!
//! It also loads the roots an `https://` upstream client trusts (`UPSTREAM_CA`, or the
//! system's when unset). It must not cache anything per request.

use crate::config::TlsFiles;
use crate::startup::Error;
use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The crypto provider every configuration here is built with.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The server configuration for `files`, offering `alpn` (`h2` and `http/1.1` for servers that
/// speak both). Errors name the file and the variable.
pub fn server_config(files: &TlsFiles, alpn: &[&[u8]]) -> Result<rustls::ServerConfig, Error> {
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            format!(
                "TLS_CERT={}: not a readable PEM certificate chain ({e})",
                files.cert.display()
            )
        })?;
    if chain.is_empty() {
        return Err(format!(
            "TLS_CERT={}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            files.cert.display()
        )
        .into());
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        format!(
            "TLS_KEY={}: not a readable PEM private key ({e})",
            files.key.display()
        )
    })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            format!(
                "TLS_CERT and TLS_KEY do not make a usable pair ({e}): give the certificate and its own key"
            )
        })?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// Serves HTTPS on `listener` forever: each accepted connection's handshake runs in its own
/// task (a slow client never holds up the accept loop), then `make_service()` answers it over
/// HTTP/1.1 or HTTP/2.
pub async fn serve<M, S, B>(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    make_service: M,
) -> Result<(), Error>
where
    M: Fn() -> S,
    S: Service<Request<Incoming>, Response = Response<B>> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    loop {
        let stream = crate::plain::accept(&listener).await;
        let acceptor = acceptor.clone();
        let service = make_service();
        tokio::spawn(async move {
            // A failed handshake or a client leaving mid-request is the client's business.
            let Ok(stream) = acceptor.accept(stream).await else {
                return;
            };
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The roots an `https://` upstream client trusts: the CA certificates in `UPSTREAM_CA`, or
/// the system's (`rustls-native-certs`) when it is unset.
pub fn upstream_roots(ca: Option<&Path>) -> Result<Arc<rustls::RootCertStore>, Error> {
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    format!(
                        "UPSTREAM_CA={}: not a readable PEM file of CA certificates ({e})",
                        path.display()
                    )
                })?;
            for cert in certs {
                roots.add(cert).map_err(|e| {
                    format!(
                        "UPSTREAM_CA={}: a certificate rustls refuses ({e})",
                        path.display()
                    )
                })?;
            }
            if roots.is_empty() {
                return Err(format!(
                    "UPSTREAM_CA={}: holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                    path.display()
                )
                .into());
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(native.certs);
        }
    }
    Ok(Arc::new(roots))
}

/// A new upstream client configuration trusting `roots`, with a session store of its own: the
/// pooled client makes one at start-up, the per-call client one per call (so a full
/// handshake every call, as a client built per call really pays).
pub fn upstream_client_config(roots: Arc<rustls::RootCertStore>) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}
