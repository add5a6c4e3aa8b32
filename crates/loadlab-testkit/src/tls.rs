//! A certificate authority made for one test: it signs a server certificate for 127.0.0.1
//! and localhost, and can sign client certificates for mutual TLS.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

pub struct TestCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Default for TestCa {
    fn default() -> Self {
        Self::new()
    }
}

impl TestCa {
    pub fn new() -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "loadlab test CA");
        let key = KeyPair::generate().expect("CA key");
        TestCa {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// The CA certificate, PEM: what `--cacert` takes.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate and key signed by this CA, for these names (PEM, PEM).
    pub fn issue(&self, names: &[&str]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let params = CertificateParams::new(names).expect("leaf params");
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        (cert.pem(), key.serialize_pem())
    }

    /// A rustls server configuration presenting a certificate for 127.0.0.1 and localhost.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.build_server_config(false)
    }

    /// The same, demanding a client certificate signed by this CA (mutual TLS).
    pub fn server_config_with_client_auth(&self) -> Arc<rustls::ServerConfig> {
        self.build_server_config(true)
    }

    fn build_server_config(&self, client_auth: bool) -> Arc<rustls::ServerConfig> {
        let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        let params = CertificateParams::new(names).expect("server params");
        let key = KeyPair::generate().expect("server key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        let chain = vec![cert.der().clone(), self.issuer.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("protocol versions");
        let builder = if client_auth {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(self.issuer.der().clone()).expect("CA as a root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(chain, key)
            .expect("server certificate and key");
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        // Tickets (TLS 1.3) and a session cache (TLS 1.2), so clients can resume.
        config.ticketer = rustls::crypto::ring::Ticketer::new().expect("ticketer");
        config.session_storage = rustls::server::ServerSessionMemoryCache::new(1024);
        Arc::new(config)
    }
}

/// A ticketer that never issues tickets (rustls's own is private): a server given it resumes
/// only through its session store, whose tickets are single-use, which rustls requires for
/// early data (0-RTT).
#[derive(Debug)]
pub struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}
