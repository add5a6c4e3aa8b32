//! How the client trusts the agent and proves itself to it: the token read from its file,
//! and the TLS configuration that trusts the agent's certificate by its SHA-256 fingerprint
//! (or by a CA file), never by nothing.

use super::{AgentEndpoint, ClientError, Result};
use crate::protocol;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

pub(super) fn read_token(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ClientError::Invalid(format!(
            "--agent-token-file {}: {e}; copy the token file the agent printed at start to this \
             host (mode 0600)",
            path.display()
        ))
    })?;
    protocol::parse_token(&text)
        .map(str::to_string)
        .map_err(|why| {
            ClientError::Invalid(format!(
                "--agent-token-file {}: {why} (copy the agent's token file)",
                path.display()
            ))
        })
}

pub(super) fn tls_config(endpoint: &AgentEndpoint) -> Result<Arc<rustls::ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::Invalid(format!("TLS: {e}")))?;
    let config =
        match (&endpoint.fingerprint, &endpoint.cacert) {
            (Some(fp), None) => {
                let pinned = protocol::parse_fingerprint(fp).map_err(|e| {
                    ClientError::Invalid(format!(
                        "--agent-fingerprint {fp}: {e}; give the sha256:... line the agent printed"
                    ))
                })?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(Pinned {
                        sha256: pinned,
                        algorithms: provider.signature_verification_algorithms,
                    }))
                    .with_no_client_auth()
            }
            (None, Some(path)) => {
                let pem = std::fs::read(path).map_err(|e| {
                    ClientError::Invalid(format!("--agent-cacert {}: {e}", path.display()))
                })?;
                let mut roots = rustls::RootCertStore::empty();
                for cert in rustls_pemfile_certs(&pem, path)? {
                    roots.add(cert).map_err(|e| {
                        ClientError::Invalid(format!("--agent-cacert {}: {e}", path.display()))
                    })?;
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            (Some(_), Some(_)) => return Err(ClientError::Invalid(
                "--agent-fingerprint and --agent-cacert both say how to trust the agent: give one"
                    .into(),
            )),
            (None, None) => {
                return Err(ClientError::Invalid(format!(
                    "--agent {}: say how to trust the agent's certificate: --agent-fingerprint \
                 sha256:... (the agent printed it at start) or --agent-cacert FILE",
                    endpoint.url
                )))
            }
        };
    Ok(Arc::new(config))
}

fn rustls_pemfile_certs(
    pem: &[u8],
    path: &std::path::Path,
) -> Result<Vec<CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    let certs: std::result::Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem).collect();
    match certs {
        Ok(c) if !c.is_empty() => Ok(c),
        Ok(_) => Err(ClientError::Invalid(format!(
            "--agent-cacert {}: no certificate in it (PEM expected)",
            path.display()
        ))),
        Err(e) => Err(ClientError::Invalid(format!(
            "--agent-cacert {}: {e}",
            path.display()
        ))),
    }
}

/// Trusts exactly one certificate, by its SHA-256 fingerprint, whatever its name or issuer
/// (the agent's self-signed pair names no one); the handshake's signatures are still
/// checked against that certificate's key.
#[derive(Debug)]
struct Pinned {
    sha256: [u8; 32],
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let got = ring::digest::digest(&ring::digest::SHA256, end_entity.as_ref());
        if got.as_ref() == self.sha256 {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the agent's certificate is {}, not the one given with --agent-fingerprint: \
                 another agent, or the agent made a new certificate (check its start-up lines)",
                protocol::fingerprint(end_entity.as_ref())
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
