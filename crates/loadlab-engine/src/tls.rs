//! TLS client settings, built once per run: trust (the built-in web roots, `--cacert`, or
//! `--insecure`), client certificates for mutual TLS, protocol versions, session resumption
//! and ALPN. rustls with the ring provider does the work; this module only assembles its
//! configuration and turns its errors into failure classes a person can act on.

use crate::config::ConfigError;
use crate::error::ErrorClass;
use loadlab_certs::CacertVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

mod advice;

/// Which TLS versions may be negotiated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    V1_2,
    V1_3,
}

/// What the user asked for (PEM contents already read by the caller).
#[derive(Debug, Clone, Default)]
pub struct TlsSpec {
    /// Accept any server certificate (`--insecure`).
    pub insecure: bool,
    /// Trust these CA certificates instead of the built-in web roots (`--cacert`).
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain and key for mutual TLS (`--cert`, `--key`).
    pub cert_pem: Option<Vec<u8>>,
    pub key_pem: Option<Vec<u8>>,
    /// Resume sessions on new connections (`--tls-resume on`, the default).
    pub resume: Option<bool>,
    /// Only this version (`--tls-version`); both 1.2 and 1.3 by default.
    pub version: Option<TlsVersion>,
}

/// A checked TLS client configuration for one target.
#[derive(Clone)]
pub struct TlsSettings {
    pub connector: tokio_rustls::TlsConnector,
    pub server_name: ServerName<'static>,
    pub insecure: bool,
    pub resume: bool,
    pub version: Option<TlsVersion>,
    /// How the server is trusted, in words, for the result.
    pub trust: String,
    pub client_certificate: bool,
}

impl std::fmt::Debug for TlsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSettings")
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .field("resume", &self.resume)
            .field("version", &self.version)
            .field("trust", &self.trust)
            .finish()
    }
}

fn reject(setting: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        setting,
        message: message.into(),
    }
}

impl TlsSpec {
    /// Builds the client configuration for `host`, offering h2 by ALPN when `http2`.
    pub fn build(&self, host: &str, http2: bool) -> Result<TlsSettings, ConfigError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let versions: &[&'static rustls::SupportedProtocolVersion] = match self.version {
            None => rustls::DEFAULT_VERSIONS,
            Some(TlsVersion::V1_2) => &[&rustls::version::TLS12],
            Some(TlsVersion::V1_3) => &[&rustls::version::TLS13],
        };
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(versions)
            .map_err(|e| reject("tls.version", format!("not supported: {e}")))?;
        let (builder, trust) = if self.insecure {
            if self.ca_pem.is_some() {
                return Err(reject(
                    "tls.insecure",
                    "skips verification, so --cacert would be ignored; give one of them",
                ));
            }
            (
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider))),
                "none: --insecure accepts any certificate".to_string(),
            )
        } else {
            match &self.ca_pem {
                Some(pem) => {
                    let certs = CertificateDer::pem_slice_iter(pem)
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|e| {
                            reject("tls.ca", format!("is not a PEM certificate file ({e})"))
                        })?;
                    if certs.is_empty() {
                        return Err(reject(
                            "tls.ca",
                            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                        ));
                    }
                    let n = certs.len();
                    // webpki's checks, plus a server presenting one of these very
                    // certificates as its own (`openssl req -x509` makes them CA:TRUE).
                    let verifier = CacertVerifier::new(certs, provider.clone()).map_err(|e| {
                        reject("tls.ca", format!("holds a certificate rustls rejects: {e}"))
                    })?;
                    (
                        builder
                            .dangerous()
                            .with_custom_certificate_verifier(Arc::new(verifier)),
                        format!("{n} CA certificate(s) from --cacert"),
                    )
                }
                None => {
                    let mut roots = RootCertStore::empty();
                    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
                    (
                        builder.with_root_certificates(roots),
                        "the built-in web roots (Mozilla's, via webpki-roots)".to_string(),
                    )
                }
            }
        };
        let mut config = match (&self.cert_pem, &self.key_pem) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| {
                        reject("tls.cert", format!("is not a PEM certificate file ({e})"))
                    })?;
                if chain.is_empty() {
                    return Err(reject("tls.cert", "holds no PEM certificate"));
                }
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| reject("tls.key", format!("holds no PEM private key ({e})")))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| reject("tls.key", format!("does not fit --cert: {e}")))?
            }
            (None, None) => builder.with_no_client_auth(),
            (Some(_), None) => return Err(reject("tls.cert", "needs --key with its private key")),
            (None, Some(_)) => return Err(reject("tls.key", "needs --cert with its certificate")),
        };
        config.alpn_protocols = if http2 {
            vec![b"h2".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        let resume = self.resume.unwrap_or(true);
        config.resumption = if resume {
            Resumption::default()
        } else {
            Resumption::disabled()
        };
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|_| reject("url", format!("`{host}` is not a valid TLS server name")))?;
        Ok(TlsSettings {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
            insecure: self.insecure,
            resume,
            version: self.version,
            trust,
            client_certificate: self.cert_pem.is_some(),
        })
    }
}

/// `--insecure`: every certificate passes; signatures are still checked, so the handshake
/// itself stays a real one.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A TLS error that came after the handshake, on a read or a write, in words with the fix:
/// a TLS 1.3 server refuses a missing or untrusted client certificate only then, with an
/// alert (`certificate_required`, `bad_certificate`, `unknown_ca`). `None` when the I/O error
/// wraps no TLS error.
pub fn describe_after_handshake(err: &std::io::Error) -> Option<(ErrorClass, String)> {
    let tls = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())?;
    Some(advice::describe(tls))
}

/// Classifies a failed handshake, with the reason in words and the fix (see [`advice`]).
pub fn classify_handshake_error(err: &std::io::Error) -> (ErrorClass, String) {
    if let Some(tls) = err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        return advice::describe(tls);
    }
    (ErrorClass::from_io(err), err.to_string())
}
