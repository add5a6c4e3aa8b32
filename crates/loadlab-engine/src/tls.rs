//! TLS client settings, built once per run: trust (the built-in web roots, `--cacert`, or
//! `--insecure`: loadlab_certs's one verifier, as for every client loadlab makes), client
//! certificates for mutual TLS, protocol versions, session resumption and ALPN. rustls with
//! the ring provider does the work; this module only assembles its configuration and turns its errors into failure classes a person can act on.

use crate::config::ConfigError;
use crate::error::ErrorClass;
use loadlab_certs::{CertError, Trust};
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
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
    /// Where `ca_pem` came from, for the result's words on trust: `--cacert` when `None`;
    /// a session that made the CA itself (`--tls`, an agent's launched server) says so.
    pub ca_from: Option<String>,
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
    /// How the server is trusted: `--insecure`, `--cacert` or the built-in web roots.
    fn trust(&self) -> Result<(Trust, String), ConfigError> {
        if self.insecure {
            if self.ca_pem.is_some() {
                return Err(reject(
                    "tls.insecure",
                    "skips verification, so --cacert would be ignored; give one of them",
                ));
            }
            return Ok((
                Trust::AnyCertificate,
                "none: --insecure accepts any certificate".to_string(),
            ));
        }
        match &self.ca_pem {
            Some(pem) => {
                let certs = loadlab_certs::parse_certificates(pem, "--cacert").map_err(|e| {
                    let message = match e {
                        CertError::Pem { message, .. } => message,
                        e => e.to_string(),
                    };
                    reject("tls.ca", message)
                })?;
                let n = certs.len();
                Ok((
                    Trust::Cacert(certs),
                    format!(
                        "{n} CA certificate(s) from {}",
                        self.ca_from.as_deref().unwrap_or("--cacert")
                    ),
                ))
            }
            None => Ok((
                Trust::WebRoots,
                "the built-in web roots (Mozilla's, via webpki-roots)".to_string(),
            )),
        }
    }

    /// Builds the client configuration for `host`, offering h2 by ALPN when `http2`.
    pub fn build(&self, host: &str, http2: bool) -> Result<TlsSettings, ConfigError> {
        let versions: &[&'static rustls::SupportedProtocolVersion] = match self.version {
            None => rustls::DEFAULT_VERSIONS,
            Some(TlsVersion::V1_2) => &[&rustls::version::TLS12],
            Some(TlsVersion::V1_3) => &[&rustls::version::TLS13],
        };
        let (trust, trust_words) = self.trust()?;
        // The one verifier loadlab has (loadlab_certs::Verifier): webpki's checks, plus a
        // server presenting one of the --cacert certificates as its own (`openssl req -x509`
        // makes them CA:TRUE).
        let builder = loadlab_certs::client_builder(&trust, Some(versions)).map_err(|e| {
            if self.ca_pem.is_some() {
                reject("tls.ca", format!("holds a certificate rustls rejects: {e}"))
            } else {
                reject("tls.version", format!("not supported: {e}"))
            }
        })?;
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
            trust: trust_words,
            client_certificate: self.cert_pem.is_some(),
        })
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
