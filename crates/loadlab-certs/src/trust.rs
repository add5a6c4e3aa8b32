//! The one trust path of every certificate loadlab checks (issue 45 item 3): the load engine
//! (`--cacert`, `--insecure`, the built-in web roots), the metrics client (`--metrics-cacert`,
//! the system's roots), the agent's client (`--agent-fingerprint`, `--agent-cacert`) and the
//! tests' clients all build their rustls verifier here, as a [`Verifier`] over a [`Trust`].
//! One crypto provider ([`provider`]: ring), one signature check (the provider's
//! algorithms, whatever the rule), one set of rules:
//!
//! - [`Trust::Cacert`]: webpki over the given certificates, plus one exception for the
//!   self-signed certificate most people make for a local HTTPS service (issue 27, item 3):
//!
//!   ```text
//!   openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost \
//!       -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem
//!   ```
//!
//!   OpenSSL marks that certificate `CA:TRUE`, and webpki refuses a CA certificate as the
//!   server's own ("CaUsedAsEndEntity"), although curl, wrk and h2load accept it with the same
//!   file. On that error alone the presented certificate is accepted when it is byte for byte
//!   one of the trusted certificates and webpki's own name check passes. Its validity period
//!   was already checked by webpki: webpki checks a certificate's validity before its basic
//!   constraints, so an expired or not-yet-valid certificate fails with that error first and
//!   never reaches the exception (the tests pin this with an expired `req -x509` certificate).
//! - [`Trust::WebRoots`] and [`Trust::SystemRoots`]: webpki over Mozilla's roots built in, or
//!   the system's store (`rustls-platform-verifier`); no exception.
//! - [`Trust::Fingerprint`]: exactly one certificate by its SHA-256, whatever its name or
//!   issuer (the agent's self-signed pair names no one).
//! - [`Trust::AnyCertificate`]: `--insecure`; signatures are still checked, so the handshake
//!   stays a real one.
//!
//! It must not accept anything else: another error, a certificate that is not one of the
//! trusted ones (a chain that merely ends at one), or a wrong name stays rejected.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The crypto provider of every configuration loadlab builds: ring (aws-lc-rs needs cmake
/// and doubles the cold build).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// How a client decides a server's certificate is the right one.
#[derive(Clone, Debug)]
pub enum Trust {
    /// Mozilla's roots, built in (webpki-roots): the load engine's default.
    WebRoots,
    /// The system's store (`rustls-platform-verifier`; on Linux the distribution's CA
    /// bundle): the metrics client's default.
    SystemRoots,
    /// These certificates only (`--cacert`, `--metrics-cacert`, `--agent-cacert`), and a
    /// server presenting one of them as its own.
    Cacert(Vec<CertificateDer<'static>>),
    /// Exactly the certificate with this SHA-256; `flag` names where the user gave it, for
    /// the error when another one is presented.
    Fingerprint {
        sha256: [u8; 32],
        flag: &'static str,
    },
    /// Any certificate (`--insecure`).
    AnyCertificate,
}

/// The rules of [`Trust`] as a rustls verifier.
#[derive(Debug)]
pub struct Verifier {
    rule: Rule,
    /// The provider's signature algorithms: every rule checks the handshake's signatures the
    /// same way.
    algorithms: WebPkiSupportedAlgorithms,
}

#[derive(Debug)]
enum Rule {
    WebPki {
        inner: Arc<WebPkiServerVerifier>,
        /// The `--cacert` certificates as given (DER), to recognise a server presenting one
        /// of them as its own; empty for built-in roots.
        trusted_der: Vec<CertificateDer<'static>>,
    },
    System(Arc<rustls_platform_verifier::Verifier>),
    Fingerprint {
        sha256: [u8; 32],
        flag: &'static str,
    },
    Any,
}

impl Verifier {
    /// The verifier for `trust`. Fails when rustls refuses a certificate as a trust anchor
    /// or the system's store cannot be read.
    pub fn new(trust: &Trust) -> Result<Verifier, rustls::Error> {
        let provider = provider();
        let webpki = |roots: RootCertStore| {
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| rustls::Error::General(format!("cannot build the verifier: {e}")))
        };
        let rule = match trust {
            Trust::WebRoots => Rule::WebPki {
                inner: webpki(RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                })?,
                trusted_der: Vec::new(),
            },
            Trust::SystemRoots => Rule::System(Arc::new(rustls_platform_verifier::Verifier::new(
                provider.clone(),
            )?)),
            Trust::Cacert(certs) => {
                let mut roots = RootCertStore::empty();
                for cert in certs {
                    roots.add(cert.clone())?;
                }
                Rule::WebPki {
                    inner: webpki(roots)?,
                    trusted_der: certs.clone(),
                }
            }
            Trust::Fingerprint { sha256, flag } => Rule::Fingerprint {
                sha256: *sha256,
                flag,
            },
            Trust::AnyCertificate => Rule::Any,
        };
        Ok(Verifier {
            rule,
            algorithms: provider.signature_verification_algorithms,
        })
    }
}

/// A certificate's SHA-256 fingerprint as loadlab prints it: `sha256:AB:CD:...`.
pub fn fingerprint(cert_der: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, cert_der);
    let pairs: Vec<String> = digest.as_ref().iter().map(|b| format!("{b:02X}")).collect();
    format!("sha256:{}", pairs.join(":"))
}

/// Whether `err` is webpki's "a CA certificate was presented as the server's own": with
/// [`Trust::Cacert`], a `CA:TRUE` certificate that is not one of the trusted ones (webpki
/// checks that flag before the issuer, so another `req -x509` certificate ends here rather
/// than on "unknown issuer").
pub fn is_ca_used_as_end_entity(err: &rustls::Error) -> bool {
    match err {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(other))) => {
            matches!(
                other.downcast_ref::<webpki::Error>(),
                Some(webpki::Error::CaUsedAsEndEntity)
            )
        }
        _ => false,
    }
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.rule {
            Rule::WebPki { inner, trusted_der } => {
                let err = match inner.verify_server_cert(
                    end_entity,
                    intermediates,
                    server_name,
                    ocsp_response,
                    now,
                ) {
                    Ok(verified) => return Ok(verified),
                    Err(err) => err,
                };
                let trusted_as_given = trusted_der
                    .iter()
                    .any(|t| t.as_ref() == end_entity.as_ref());
                if !is_ca_used_as_end_entity(&err) || !trusted_as_given {
                    return Err(err);
                }
                // Validity was checked before the basic constraints (see the module
                // comment); the name is webpki's check, as for any other certificate.
                let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            Rule::System(inner) => {
                inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            Rule::Fingerprint { sha256, flag } => {
                let got = ring::digest::digest(&ring::digest::SHA256, end_entity.as_ref());
                if got.as_ref() == sha256 {
                    Ok(ServerCertVerified::assertion())
                } else {
                    Err(rustls::Error::General(format!(
                        "the certificate presented is {}, not the one given with {flag}: \
                         another server, or it made a new certificate (check its start-up lines)",
                        fingerprint(end_entity.as_ref())
                    )))
                }
            }
            Rule::Any => Ok(ServerCertVerified::assertion()),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
