//! Trusting the certificates of `--cacert FILE`, including the self-signed certificate most
//! people make for a local HTTPS service (issue 27, item 3):
//!
//! ```text
//! openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost \
//!     -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout key.pem -out cert.pem
//! ```
//!
//! OpenSSL marks that certificate `CA:TRUE`, and webpki refuses a CA certificate as the
//! server's own ("CaUsedAsEndEntity"), although curl, wrk and h2load accept it with the same
//! file. [`CacertVerifier`] wraps rustls's webpki verifier and, on that error alone, accepts
//! the presented certificate when it is byte for byte one of the trusted `--cacert`
//! certificates and webpki's own name check passes. Its validity period was already checked
//! by webpki: webpki checks a certificate's validity before its basic constraints, so an
//! expired or not-yet-valid certificate fails with that error first and never reaches the
//! exception (the tests pin this with an expired `req -x509` certificate).
//!
//! It must not accept anything else: another error, a certificate that is not one of the
//! trusted ones (a chain that merely ends at one), or a wrong name stays rejected.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The webpki verifier over the `--cacert` certificates, plus the one exception above.
#[derive(Debug)]
pub struct CacertVerifier {
    inner: Arc<WebPkiServerVerifier>,
    /// The `--cacert` certificates as given (DER), to recognise a server presenting one of
    /// them as its own.
    trusted_der: Vec<CertificateDer<'static>>,
}

impl CacertVerifier {
    /// A verifier trusting `certs` (each one also as a trust anchor), with `provider`'s
    /// signature algorithms. Fails when rustls refuses a certificate as a trust anchor.
    pub fn new(
        certs: Vec<CertificateDer<'static>>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, rustls::Error> {
        let mut roots = RootCertStore::empty();
        for cert in &certs {
            roots.add(cert.clone())?;
        }
        let inner = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| rustls::Error::General(format!("cannot build the verifier: {e}")))?;
        Ok(Self {
            inner,
            trusted_der: certs,
        })
    }

    fn is_trusted_as_given(&self, end_entity: &CertificateDer<'_>) -> bool {
        self.trusted_der
            .iter()
            .any(|t| t.as_ref() == end_entity.as_ref())
    }
}

/// Whether `err` is webpki's "a CA certificate was presented as the server's own": with
/// [`CacertVerifier`], a `CA:TRUE` certificate that is not one of the trusted ones (webpki
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

impl ServerCertVerifier for CacertVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let err = match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(err) => err,
        };
        if !is_ca_used_as_end_entity(&err) || !self.is_trusted_as_given(end_entity) {
            return Err(err);
        }
        // Validity was checked before the basic constraints (see the module comment); the
        // name is webpki's check, as for any other certificate.
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}
